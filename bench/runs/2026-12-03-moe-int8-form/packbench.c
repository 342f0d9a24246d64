/* The AMX int8 packer alone (xpi_amx_i8_pack: quantize n tokens' rows and lay them out as B tiles), for a change
 * to it measured against its base: best of 7 rounds of 50 calls. Not built by CMake. From the repository root of
 * each build (the base one a git worktree):
 *   cc -O2 -Iinclude -Isrc bench/runs/2026-12-03-moe-int8-form/packbench.c build/libxpuinfer_internal.a -lcjson -lcurl \
 *      -lcrypto -lpcre2-8 -lutf8proc -lpthread -ldl -lm -o /tmp/pb
 *   /tmp/pb TOKENS COLS          e.g. 256 1024 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ops/cpu/amx_layout.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: packbench TOKENS COLS\n");
    return 2;
  }
  const int n = atoi(argv[1]);
  const long cols = atol(argv[2]);
  if (n < 1 || cols < 1) return 2;
  float *X = malloc(sizeof(float) * (size_t)n * (size_t)cols);
  const size_t pb = (xpi_amx_i8_pack_bytes(n, cols) + 63) & ~(size_t)63;
  void *P = aligned_alloc(64, pb);
  if (!X || !P) return 1;
  for (long i = 0; i < (long)n * cols; i++) X[i] = (float)((i * 7919) % 1000 - 500) * 0.01f;
  double best = 1e9;
  for (int r = 0; r < 7; r++) {
    const double t0 = now_s();
    for (int i = 0; i < 50; i++) xpi_amx_i8_pack(P, X, n, cols, 0, n);
    const double t = (now_s() - t0) / 50;
    best = t < best ? t : best;
  }
  printf("n %d cols %ld: %.1f us (%.2f ns a token-column)\n", n, cols, best * 1e6, best * 1e9 / n / (double)cols);
  free(X), free(P);
  return 0;
}
