/* Small-n matmul with AVX2 + FMA + F16C (mm_smalln.h): the AVX-512 kernel's scheme in 8-float vectors. Rows
 * are taken RB = 2 at a time and tokens TG = 6 at a time: 12 accumulators, 2 weight vectors and one activation
 * vector fill 15 of the 16 ymm registers; per 8 columns, 2 weight loads (bf16: zero-extend and shift; f16:
 * vcvtph2ps) and 6 activation loads feed 12 FMAs. The 2 rows stay in L1 while every group of 6 tokens passes
 * over them, so each weight is read from memory once per call. */
#include <immintrin.h>

#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/mm_smalln.h"
#include "ops/cpu/simd_avx2.h"

#define RB 2
#define TG 6
#define ALWAYS_INLINE inline __attribute__((always_inline))

static ALWAYS_INLINE __m256 load_w8(const void *row, int64_t c, xpi_dtype dt) {
  if (dt == XPI_DT_BF16)
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)row + c))), 16));
  if (dt == XPI_DT_F16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)row + c)));
  return _mm256_loadu_ps((const float *)row + c);
}

/* Rows r..r+nr of W times tokens t0..t0+nt of X (nr <= RB, nt <= TG: constants after inlining). */
static ALWAYS_INLINE void block(float *Y, int64_t ldy, const float *X, int64_t t0, int nt, const void *W, int64_t r,
                                int nr, int64_t cols, xpi_dtype dt) {
  const size_t rowb = (size_t)cols * (dt == XPI_DT_F32 ? 4 : 2);
  const unsigned char *w[RB];
  const float *x[TG];
  __m256 acc[RB][TG];
#pragma GCC unroll 8
  for (int i = 0; i < nr; i++) w[i] = (const unsigned char *)W + (size_t)(r + i) * rowb;
#pragma GCC unroll 8
  for (int t = 0; t < nt; t++) x[t] = X + (t0 + t) * cols;
#pragma GCC unroll 8
  for (int i = 0; i < nr; i++)
#pragma GCC unroll 8
    for (int t = 0; t < nt; t++) acc[i][t] = _mm256_setzero_ps();
  const int64_t c8 = cols & ~(int64_t)7;
  for (int64_t c = 0; c < c8; c += 8) {
    __m256 wv[RB];
#pragma GCC unroll 8
    for (int i = 0; i < nr; i++) wv[i] = load_w8(w[i], c, dt);
#pragma GCC unroll 8
    for (int t = 0; t < nt; t++) {
      const __m256 xv = _mm256_loadu_ps(x[t] + c);
#pragma GCC unroll 8
      for (int i = 0; i < nr; i++) acc[i][t] = _mm256_fmadd_ps(wv[i], xv, acc[i][t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < nt; t++)
#pragma GCC unroll 8
    for (int i = 0; i < nr; i++) {
      float s = xpi_hsum8(acc[i][t]);
      for (int64_t c = c8; c < cols; c++) s += xpi_cpu_load_elem(w[i], dt, c) * x[t][c]; /* the last cols % 8 */
      Y[(t0 + t) * ldy + r + i] = s;
    }
}

#define SHAPE(NR, NT)                                                                                            \
  static void b##NR##_##NT(float *Y, int64_t ldy, const float *X, int64_t t0, const void *W, int64_t r,         \
                           int64_t cols, xpi_dtype dt) {                                                        \
    if (dt == XPI_DT_BF16) block(Y, ldy, X, t0, NT, W, r, NR, cols, XPI_DT_BF16);                               \
    else if (dt == XPI_DT_F16) block(Y, ldy, X, t0, NT, W, r, NR, cols, XPI_DT_F16);                            \
    else block(Y, ldy, X, t0, NT, W, r, NR, cols, XPI_DT_F32);                                                  \
  }
#define SHAPES(NR) SHAPE(NR, 1) SHAPE(NR, 2) SHAPE(NR, 3) SHAPE(NR, 4) SHAPE(NR, 5) SHAPE(NR, 6)
SHAPES(1)
SHAPES(2)

typedef void (*block_fn)(float *Y, int64_t ldy, const float *X, int64_t t0, const void *W, int64_t r, int64_t cols,
                         xpi_dtype dt);
static const block_fn k_blocks[RB][TG] = {{b1_1, b1_2, b1_3, b1_4, b1_5, b1_6}, {b2_1, b2_2, b2_3, b2_4, b2_5, b2_6}};

void xpi_cpu_mm_smalln_avx2(xpi_dtype dt, float *Y, int64_t ldy, const float *X, int32_t n, const void *W, int64_t r0,
                            int64_t r1, int64_t cols) {
  for (int64_t r = r0; r < r1; r += RB) {
    const int nr = r1 - r < RB ? (int)(r1 - r) : RB;
    for (int32_t t0 = 0; t0 < n; t0 += TG) {
      const int nt = n - t0 < TG ? n - t0 : TG;
      k_blocks[nr - 1][nt - 1](Y, ldy, X, t0, W, r, cols, dt);
    }
  }
}
