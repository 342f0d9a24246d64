/* The int8 prefill GEMM of q8/q4 weights: its packed layouts and the microkernel contract that each ISA's
 * variant meets (gemm_q_avx2.c holds the driver and the AVX2 microkernels, kernels_avx512.c the VNNI ones).
 * Include only from files compiled with AVX2 (the *_avx2.c, *_avxvnni.c, *_avx512.c files).
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

#include "ops/cpu/cpu_kernels.h"
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

/* The GEMM in cpu_kernels.h's phases (xpi_cpu_gemm), with the given microkernels (gemm_q_avx2.c):
 * P = the packed activations of all n tokens (a, dx, c8 of every token panel), scratch = one weight panel. */
size_t xpi_gemm_q_pack_bytes(int32_t n, int64_t cols);
void xpi_gemm_q_pack(xpi_dtype dt, void *P, const float *X, int32_t n, int64_t cols, int32_t t0, int32_t t1);
size_t xpi_gemm_q_scratch_bytes(int64_t cols);
void xpi_gemm_q_run(xpi_gq_ukr ukr, xpi_dtype dt, float *Y, int64_t ldy, const void *P, int32_t n, const void *W,
                    const uint16_t *d, int64_t cols, int64_t r0, int64_t r1, int32_t t0, int32_t t1, void *scratch);

/* Defines the xpi_cpu_gemm descriptors NAME##_q8 and NAME##_q4 (named STR "-q8"/"-q4") over microkernels
 * UKR8 and UKR4. */
#define XPI_GQ_GEMM(NAME, STR, UKR8, UKR4)                                                                       \
  static void NAME##_pack8(void *P, const float *X, int32_t n, int64_t cols, int32_t t0, int32_t t1) {          \
    xpi_gemm_q_pack(XPI_DT_Q8, P, X, n, cols, t0, t1);                                                          \
  }                                                                                                             \
  static void NAME##_pack4(void *P, const float *X, int32_t n, int64_t cols, int32_t t0, int32_t t1) {          \
    xpi_gemm_q_pack(XPI_DT_Q4, P, X, n, cols, t0, t1);                                                          \
  }                                                                                                             \
  static void NAME##_run8(float *Y, int64_t ldy, const void *P, int32_t n, const void *W, const void *aux,       \
                          int64_t cols, int64_t r0, int64_t r1, int32_t t0, int32_t t1, void *S) {              \
    xpi_gemm_q_run(UKR8, XPI_DT_Q8, Y, ldy, P, n, W, aux, cols, r0, r1, t0, t1, S);                             \
  }                                                                                                             \
  static void NAME##_run4(float *Y, int64_t ldy, const void *P, int32_t n, const void *W, const void *aux,       \
                          int64_t cols, int64_t r0, int64_t r1, int32_t t0, int32_t t1, void *S) {              \
    xpi_gemm_q_run(UKR4, XPI_DT_Q4, Y, ldy, P, n, W, aux, cols, r0, r1, t0, t1, S);                             \
  }                                                                                                             \
  static const xpi_cpu_gemm NAME##_q8 = {STR "-q8", XPI_GQ_MR, 2 * XPI_GQ_NR, xpi_gemm_q_pack_bytes,           \
                                         NAME##_pack8, xpi_gemm_q_scratch_bytes, NAME##_run8, 0, NULL, NULL};  \
  static const xpi_cpu_gemm NAME##_q4 = {STR "-q4", XPI_GQ_MR, 2 * XPI_GQ_NR, xpi_gemm_q_pack_bytes,           \
                                         NAME##_pack4, xpi_gemm_q_scratch_bytes, NAME##_run4, 0, NULL, NULL};

/* The AVX2 microkernels (gemm_q_avx2.c), for the AVX2 table. */
void xpi_gq_ukr_avx2_q8(const int8_t *a, const float *dx, const float *c8, const int8_t *P, const float *D,
                        int64_t kb, float *Y, int64_t ldy, int nt, int nr);
void xpi_gq_ukr_avx2_q4(const int8_t *a, const float *dx, const float *c8, const int8_t *P, const float *D,
                        int64_t kb, float *Y, int64_t ldy, int nt, int nr);

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
