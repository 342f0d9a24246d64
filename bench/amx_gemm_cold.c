/* The AMX table's prefill GEMM (bf16 or q8) on one MoE expert's matrix, by token count, with the weights warm (the
 * same matrix every call: in L2/L3) and cold (each call the next matrix of a 512 MiB pool, as a MoE prefill reads
 * a new expert each call): how much of an expert's weight stream the GEMM hides behind its tile products
 * (bench/2026-12-02-amx-expert-gemm.md). One thread; times are per call, medians of 5 rounds.
 *
 * Not built by CMake (a measurement tool). From the repository root, after building:
 *   cc -O2 -Iinclude -Isrc bench/amx_gemm_cold.c build/libxpuinfer_internal.a -lcjson -lcurl -lcrypto -lpcre2-8 \
 *      -lutf8proc -lpthread -ldl -lm -o build/amx_gemm_cold
 *   build/amx_gemm_cold ROWS COLS [bf16|q8]     e.g. 384 1024 (gate/up of qwen3moe-mini), 1024 384 (its down)
 * bench/runs/2026-12-02-amx-expert-gemm/variants.sh builds it over modified copies of kernels_amx.c.
 * env: MS=34,64 the token counts (1-256; default 16 ... 256); HUGE=1 puts the pool in transparent huge pages (the
 * model's bf16 weights are read in place from the file mapping, in 4 KiB pages); POOL_MB=64 a smaller pool (default
 * 512), which the last-level cache may hold (bench/2026-12-03-expert-stream.md). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/quant.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: amx_gemm_cold ROWS COLS [bf16|q8]\n");
    return 2;
  }
  const int64_t R = atoll(argv[1]), C = atoll(argv[2]);
  const xpi_dtype dt = argc > 3 && !strcmp(argv[3], "q8") ? XPI_DT_Q8 : XPI_DT_BF16;
  if (R <= 0 || C <= 0 || R % 32 || C % 32) {
    fprintf(stderr, "ROWS and COLS: positive multiples of 32\n");
    return 2;
  }
  const xpi_cpu_kernels *kt = xpi_cpu_kernels_for(XPI_ISA_AMX); /* also asks the kernel for the tile state */
#ifdef AMX_VARIANT /* a modified kernels_amx.c compiled with -Dxpi_cpu_kernels_amx=AMX_VARIANT (variants.sh) */
  const xpi_cpu_kernels *AMX_VARIANT(void);
  if (kt) kt = AMX_VARIANT();
#endif
  if (!kt || !kt->gemm[dt]) {
    fprintf(stderr, "no AMX table on this CPU\n");
    return 1;
  }
  const xpi_cpu_gemm *gm = kt->gemm[dt];
  /* one matrix: bf16 rows, or q8 rows and their f16 scales (the scales of every matrix in one array after them) */
  const size_t wb = dt == XPI_DT_Q8 ? (size_t)R * (size_t)xpi_q_row_bytes(XPI_DT_Q8, C) : (size_t)R * (size_t)C * 2;
  const size_t sb = dt == XPI_DT_Q8 ? (size_t)R * (size_t)xpi_q_nblocks(C) * 2 : 0, mb = wb + sb;
  const size_t huge = (size_t)2 << 20, want = (size_t)(getenv("POOL_MB") ? atoi(getenv("POOL_MB")) : 512) << 20;
  const int nw = (int)(want / mb);
  const size_t pool_bytes = ((size_t)nw * mb + huge - 1) & ~(huge - 1);
  unsigned char *pool = aligned_alloc(huge, pool_bytes);
  float *X = malloc(256 * (size_t)C * sizeof *X), *Y = malloc(256 * (size_t)R * sizeof *Y);
  void *P = aligned_alloc(64, (gm->pack_bytes(256, C) + 63) & ~(size_t)63);
  void *S = aligned_alloc(64, (gm->scratch_bytes(C) + 63) & ~(size_t)63);
  if (!pool || !X || !Y || !P || !S) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  if (getenv("HUGE") && atoi(getenv("HUGE"))) madvise(pool, pool_bytes, MADV_HUGEPAGE);
  for (size_t i = 0; i < pool_bytes / 2; i++) /* small finite bf16 values, f16 scales of 1/64 */
    ((uint16_t *)pool)[i] = dt == XPI_DT_Q8 ? (uint16_t)(0x2400 + (i % 5)) : (uint16_t)(0x3c00 + (i % 7) * 0x11);
  if (dt == XPI_DT_Q8)
    for (int w = 0; w < nw; w++) memset(pool + (size_t)w * mb, 3, wb);
  for (int64_t i = 0; i < 256 * C; i++) X[i] = (float)(i % 13) * 0.01f;
  printf("AMX %s GEMM, %lld x %lld weights (%.0f KiB a matrix, pool of %d), %s pages\n",
         dt == XPI_DT_Q8 ? "q8" : "bf16",
         (long long)R, (long long)C, (double)mb / 1024, nw, getenv("HUGE") && atoi(getenv("HUGE")) ? "huge" : "4 KiB");
  int ms[16] = {16, 32, 34, 40, 48, 64, 96, 128, 256}, nm = 9;
  if (getenv("MS")) { /* token counts, comma separated */
    nm = 0;
    for (char *e, *p = getenv("MS"), *end = p + strlen(p); p < end && nm < 16; p = e + 1) {
      const long v = strtol(p, &e, 10);
      if (e == p || v < 1 || v > 256) break;
      ms[nm++] = (int)v;
    }
  }
  for (int q = 0; q < nm; q++) {
    const int m = ms[q];
    gm->pack(P, X, m, C, 0, m);
    double t[2][5];
    for (int round = 0; round < 5; round++)
      for (int cold = 0; cold < 2; cold++) {
        const int it = cold && nw > 200 ? nw : 200;
        const double t0 = now_s();
        for (int i = 0; i < it; i++) {
          const unsigned char *W = pool + (size_t)(cold ? i % nw : 0) * mb;
          gm->run(Y, R, P, m, W, dt == XPI_DT_Q8 ? W + wb : NULL, C, 0, R, 0, m, S);
        }
        t[cold][round] = (now_s() - t0) / it;
      }
    qsort(t[0], 5, sizeof(double), cmp_d);
    qsort(t[1], 5, sizeof(double), cmp_d);
    const double w = t[0][2], c = t[1][2];
    printf("m %3d: warm %7.1f us (%6.1f useful GMAC/s), cold %7.1f us (%6.1f), cold - warm %6.1f us = %.1f GB/s of "
           "weights not hidden\n",
           m, w * 1e6, (double)R * C * m / w / 1e9, c * 1e6, (double)R * C * m / c / 1e9, (c - w) * 1e6,
           (double)mb / (c - w) / 1e9);
  }
  return 0;
}
