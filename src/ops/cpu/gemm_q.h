/* The int8 prefill GEMM of q8/q4 weights: its packed layouts and the microkernel contract that each ISA's
 * variant meets (gemm_q_avx2.c holds the driver and the AVX2 microkernels, kernels_avx512.c the VNNI ones).
 * Include only from files compiled with AVX2 (the *_avx2.c / *_avx512.c files).
 *
 * Layouts, for one call over activations of n tokens x kp = nb*32 columns (see gemm_q_avx2.c):
 *   a  (one token panel): a[k/4][t][4] int8, t < XPI_GQ_MR: 4 consecutive columns of a token per 32-bit lane
 *   dx, c8 (its scales):  [b][XPI_GQ_MR] floats: dx = amax/127 of block b; c8 = 8 * dx * sum(xq) for Q4, else 0
 *   P  (one weight panel): P[k/4][i][4] int8, i < XPI_GQ_NR rows (Q4: unsigned 0..15, Q8: signed)
 *   D  (its scales):       D[b][XPI_GQ_NR] floats
 * A microkernel computes, for t < nt and i < nr (the others are padding and not stored):
 *   Y[t*ldy + i] = sum over b < kb of D[b][i] * (dx[b][t] * (int dot of block b of row i with token t) - c8[b][t])
 */
#ifndef XPI_CPU_GEMM_Q_H
#define XPI_CPU_GEMM_Q_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "ops/ops.h"

#define XPI_GQ_NR 8 /* weight rows per panel: one ymm, a row per 32-bit lane */
#define XPI_GQ_MR 4 /* tokens per microkernel call */

typedef void (*xpi_gq_ukr)(const int8_t *a, const float *dx, const float *c8, const int8_t *P, const float *D,
                           int64_t kb, float *Y, int64_t ldy, int nt, int nr);

/* Defines NAME, an xpi_gq_ukr, as IMPL (an always_inline microkernel taking the dtype first) for dtype DT:
 * each file keeps one microkernel body and specializes it per dtype at compile time. */
#define XPI_GQ_UKR(NAME, IMPL, DT)                                                                              \
  static __attribute__((noinline)) void NAME(const int8_t *a, const float *dx, const float *c8, const int8_t *P, \
                                             const float *D, int64_t kb, float *Y, int64_t ldy, int nt, int nr) { \
    IMPL(DT, a, dx, c8, P, D, kb, Y, ldy, nt, nr);                                                              \
  }

/* Runs the GEMM (the xpi_cpu_mm_fn contract on rows [r0, r1)) with the given Q8 and Q4 microkernels. Returns 0,
 * having written nothing, when its packing buffer cannot be allocated. */
int xpi_gemm_q(xpi_gq_ukr q8, xpi_gq_ukr q4, xpi_dtype dt, float *Y, int64_t ldy, const float *X, int32_t n,
               const void *W, const uint16_t *d, int64_t r0, int64_t r1, int64_t cols);

/* xpi_gemm_q with the AVX2 microkernels (the AVX2 table's q8/q4 prefill). */
int xpi_gemm_q_avx2(xpi_dtype dt, float *Y, int64_t ldy, const float *X, int32_t n, const void *W,
                    const uint16_t *d, int64_t r0, int64_t r1, int64_t cols);

/* 4 bytes of a packed panel as one 32-bit lane in all 8 lanes (memcpy: the buffers are int8). */
static inline __m256i xpi_gq_bcast4(const int8_t *p) {
  int32_t v;
  memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

/* f += D[b] * (dx[b][t] * isum - c8[b][t]): the block's exact sums into the f32 accumulator of token t. */
static inline __m256 xpi_gq_scale(__m256 f, __m256 dw, __m256i isum, const float *dx, const float *c8, int64_t b,
                                  int t) {
  const __m256 v = _mm256_fmsub_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(dx[b * XPI_GQ_MR + t]),
                                   _mm256_set1_ps(c8[b * XPI_GQ_MR + t]));
  return _mm256_fmadd_ps(dw, v, f);
}

/* Y[t, 0..nr) = f[t] for t < nt. */
static inline void xpi_gq_store(float *Y, int64_t ldy, const __m256 f[XPI_GQ_MR], int nt, int nr) {
  for (int t = 0; t < nt; t++) {
    float *y = Y + t * ldy;
    if (nr == XPI_GQ_NR) {
      _mm256_storeu_ps(y, f[t]);
    } else {
      float tmp[XPI_GQ_NR];
      _mm256_storeu_ps(tmp, f[t]);
      memcpy(y, tmp, (size_t)nr * sizeof(float));
    }
  }
}

#endif
