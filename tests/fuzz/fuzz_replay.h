/* main() for the builds without libFuzzer: replays every file named on the command line (or every file of a
 * folder named there) through LLVMFuzzerTestOneInput once, so that each build's ctest (and its sanitizer run)
 * checks a harness's committed corpus. Include it once, after the harness, under #ifdef FUZZ_REPLAY_MAIN.
 * Fails (exit 1) when nothing was replayed. */
#ifndef XPI_FUZZ_REPLAY_H
#define XPI_FUZZ_REPLAY_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fuzz_replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  uint8_t *buf = NULL;
  size_t n = 0, cap = 0;
  int c;
  while ((c = fgetc(f)) != EOF) {
    if (n == cap) {
      cap = cap ? cap * 2 : 4096;
      uint8_t *nb = realloc(buf, cap);
      if (!nb) abort();
      buf = nb;
    }
    buf[n++] = (uint8_t)c;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf ? buf : (const uint8_t *)"", n);
  free(buf);
  return 1;
}

int main(int argc, char **argv) {
  int count = 0;
  for (int i = 1; i < argc; i++) {
    DIR *d = opendir(argv[i]);
    if (!d) {
      count += fuzz_replay_file(argv[i]);
      continue;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
      if (e->d_name[0] == '.') continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
      count += fuzz_replay_file(path);
    }
    closedir(d);
  }
  printf("replayed %d inputs\n", count);
  return count ? 0 : 1;
}

#endif
