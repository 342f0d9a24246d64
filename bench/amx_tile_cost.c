/* What one AMX tile product (tdpbf16ps) costs by tile shape, without the library: A tiles of 16, 8, 4 and 1 rows,
 * B tiles of 64, 32, 16 and 8 bytes a row (16, 8, 4 and 2 tokens in the prefill GEMM's layout), four independent
 * products in flight (bench/2026-12-02-amx-expert-gemm.md).
 *   cc -O2 -mamx-tile -mamx-bf16 bench/amx_tile_cost.c -o build/amx_tile_cost && build/amx_tile_cost
 * Linux only: asks the kernel for the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM). */
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} __attribute__((packed, aligned(64))) tilecfg;

static void config(int arows, int bcolsb) {
  tilecfg c;
  memset(&c, 0, sizeof c);
  c.palette = 1;
  for (int t = 0; t < 4; t++) c.rows[t] = (uint8_t)arows, c.colsb[t] = (uint16_t)bcolsb; /* C */
  for (int t = 4; t < 6; t++) c.rows[t] = (uint8_t)arows, c.colsb[t] = 64;             /* A */
  for (int t = 6; t < 8; t++) c.rows[t] = 16, c.colsb[t] = (uint16_t)bcolsb;           /* B */
  __asm__ volatile("ldtilecfg %0" : : "m"(c));
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static _Alignas(64) uint16_t A[2][16 * 32], B[2][16 * 32];

int main(void) {
  if (syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */)) {
    fprintf(stderr, "no AMX tile state from the kernel\n");
    return 1;
  }
  const int s[][2] = {{16, 64}, {16, 32}, {16, 16}, {16, 8}, {8, 64}, {4, 64}, {1, 64}};
  for (int round = 0; round < 3; round++)
    for (unsigned q = 0; q < sizeof s / sizeof *s; q++) {
      config(s[q][0], s[q][1]);
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      _tile_loadd(4, A[0], 64);
      _tile_loadd(5, A[1], 64);
      _tile_loadd(6, B[0], s[q][1]);
      _tile_loadd(7, B[1], s[q][1]);
      const long n = 5000000;
      const double t0 = now();
      for (long i = 0; i < n; i++) {
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
      printf("round %d: A rows %2d, B row bytes %2d: %.2f ns per tdpbf16ps\n", round, s[q][0], s[q][1],
             (now() - t0) / (double)n / 4 * 1e9);
    }
  _tile_release();
  return 0;
}
