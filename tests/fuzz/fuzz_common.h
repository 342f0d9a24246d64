/* Helpers for the libFuzzer harnesses: a private scratch folder for parsers that read files, and splitting one
 * input into parts at NUL bytes (the parsers' inputs are text, so NUL is a natural separator). */
#ifndef XPI_FUZZ_COMMON_H
#define XPI_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A folder of its own for this process, removed at exit (what is left after a crash is in $TMPDIR). */
static char g_fuzz_dir[256];

static inline void fuzz_rmdir(void) {
  if (!g_fuzz_dir[0]) return;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_fuzz_dir);
  if (system(cmd) != 0) fprintf(stderr, "fuzz: could not remove %s\n", g_fuzz_dir);
}

static inline const char *fuzz_dir(void) {
  if (!g_fuzz_dir[0]) {
    const char *tmp = getenv("TMPDIR");
    snprintf(g_fuzz_dir, sizeof g_fuzz_dir, "%s/xpi-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_fuzz_dir)) {
      perror("fuzz: mkdtemp");
      abort();
    }
    atexit(fuzz_rmdir);
  }
  return g_fuzz_dir;
}

/* Writes data to <fuzz_dir>/<sub>/<name> (sub may be ""), or removes it when data is NULL. */
static inline void fuzz_file(const char *sub, const char *name, const uint8_t *data, size_t size) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s%s%s", fuzz_dir(), sub, *sub ? "/" : "", name);
  if (!data) {
    unlink(path);
    return;
  }
  FILE *f = fopen(path, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
    perror(path);
    abort();
  }
}

/* Splits data at NUL bytes into at most max parts (the last part keeps any further NULs). */
typedef struct fuzz_part {
  const uint8_t *p;
  size_t n;
} fuzz_part;
static inline int fuzz_split(const uint8_t *data, size_t size, fuzz_part *parts, int max) {
  int k = 0;
  while (k < max - 1) {
    const uint8_t *z = memchr(data, 0, size);
    if (!z) break;
    parts[k++] = (fuzz_part){data, (size_t)(z - data)};
    size -= (size_t)(z - data) + 1;
    data = z + 1;
  }
  parts[k++] = (fuzz_part){data, size};
  return k;
}

/* A property of the code under test does not hold: crash, so that libFuzzer saves the input. */
#define FUZZ_ASSERT(cond, ...)                                                                                   \
  do {                                                                                                         \
    if (!(cond)) {                                                                                             \
      fprintf(stderr, "fuzz: %s:%d: property failed: %s: ", __FILE__, __LINE__, #cond);                        \
      fprintf(stderr, __VA_ARGS__);                                                                            \
      fprintf(stderr, "\n");                                                                                   \
      abort();                                                                                                 \
    }                                                                                                          \
  } while (0)

#endif
