/* Small-n matmul with AVX-512 (mm_smalln.h). Rows are taken RB = 4 at a time and tokens TG = 6 at a time: 24
 * accumulators of 16 columns each, 4 weight vectors and one activation vector fill 29 of the 32 zmm registers.
 * Per 16 columns, 4 weight loads (bf16: a zero-extend and a shift; f16: vcvtph2ps) and 6 activation loads feed
 * 24 FMAs, so the loop is bound by the FMA ports, not by loads or conversions. The 4 rows (8-24 KiB of bf16
 * at the 0.6B shape) stay in L1 while every group of 6 tokens passes over them: each weight is read from memory
 * once per call. Each accumulator's 16 lanes are summed at the end of the row.
 * Measured on the Xeon here (AVX512_BF16): bf16 products with vdpbf16ps, the activations split into two bf16
 * terms (hi + lo, as precise as this), ran at 40% of this kernel's speed - vdpbf16ps issues on one port where
 * FMAs issue on two. */
#include <immintrin.h>

#include "ops/cpu/mm_smalln.h"

#define RB 4
#define TG 6
#define ALWAYS_INLINE inline __attribute__((always_inline))

static ALWAYS_INLINE __m512 load_w(const void *row, int64_t c, xpi_dtype dt, __mmask16 m) {
  if (dt == XPI_DT_BF16)
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, (const uint16_t *)row + c)), 16));
  if (dt == XPI_DT_F16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)row + c));
  return _mm512_maskz_loadu_ps(m, (const float *)row + c);
}

/* Rows r..r+nr of W times tokens t0..t0+nt of X (nr <= RB, nt <= TG: constants after inlining). The first token
 * group (t0 == 0) also prefetches the next RB rows at the same columns: the rows come from memory, and four
 * streams alone leave the core waiting on them (the decode GEMV prefetches for the same reason). */
static ALWAYS_INLINE void block(float *Y, int64_t ldy, const float *X, int64_t t0, int nt, const void *W, int64_t r,
                                int nr, int64_t cols, xpi_dtype dt) {
  const int es = dt == XPI_DT_F32 ? 4 : 2;
  const size_t rowb = (size_t)cols * (size_t)es, ahead = RB * rowb;
  const int pf = t0 == 0;
  const unsigned char *w[RB];
  const float *x[TG];
  __m512 acc[RB][TG];
  #pragma GCC unroll 8
  for (int i = 0; i < nr; i++) w[i] = (const unsigned char *)W + (size_t)(r + i) * rowb;
  #pragma GCC unroll 8
  for (int t = 0; t < nt; t++) x[t] = X + (t0 + t) * cols;
  #pragma GCC unroll 8
  for (int i = 0; i < nr; i++)
    #pragma GCC unroll 8
    for (int t = 0; t < nt; t++) acc[i][t] = _mm512_setzero_ps();
  int64_t c = 0;
  for (; c + 16 <= cols; c += 16) {
    __m512 wv[RB];
    if (pf && !(c * es & 63)) /* once per 64-byte line (prefetches never fault, past the matrix too) */
      #pragma GCC unroll 8
      for (int i = 0; i < nr; i++) _mm_prefetch((const char *)w[i] + ahead + c * es, _MM_HINT_T0);
    #pragma GCC unroll 8
    for (int i = 0; i < nr; i++) wv[i] = load_w(w[i], c, dt, 0xffff);
    #pragma GCC unroll 8
    for (int t = 0; t < nt; t++) {
      const __m512 xv = _mm512_loadu_ps(x[t] + c);
      #pragma GCC unroll 8
      for (int i = 0; i < nr; i++) acc[i][t] = _mm512_fmadd_ps(wv[i], xv, acc[i][t]);
    }
  }
  if (c < cols) { /* the last cols % 16 columns, masked (zeros elsewhere) */
    const __mmask16 m = (__mmask16)((1u << (cols - c)) - 1);
    __m512 wv[RB];
    #pragma GCC unroll 8
    for (int i = 0; i < nr; i++) wv[i] = load_w(w[i], c, dt, m);
    #pragma GCC unroll 8
    for (int t = 0; t < nt; t++) {
      const __m512 xv = _mm512_maskz_loadu_ps(m, x[t] + c);
      #pragma GCC unroll 8
      for (int i = 0; i < nr; i++) acc[i][t] = _mm512_fmadd_ps(wv[i], xv, acc[i][t]);
    }
  }
  #pragma GCC unroll 8
  for (int t = 0; t < nt; t++)
    #pragma GCC unroll 8
    for (int i = 0; i < nr; i++) Y[(t0 + t) * ldy + r + i] = _mm512_reduce_add_ps(acc[i][t]);
}

/* One instantiation per (rows, tokens) shape so every loop above unrolls over constants. */
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
SHAPES(3)
SHAPES(4)

typedef void (*block_fn)(float *Y, int64_t ldy, const float *X, int64_t t0, const void *W, int64_t r, int64_t cols,
                         xpi_dtype dt);
static const block_fn k_blocks[RB][TG] = {{b1_1, b1_2, b1_3, b1_4, b1_5, b1_6}, {b2_1, b2_2, b2_3, b2_4, b2_5, b2_6},
                                          {b3_1, b3_2, b3_3, b3_4, b3_5, b3_6}, {b4_1, b4_2, b4_3, b4_4, b4_5, b4_6}};

void xpi_cpu_mm_smalln_avx512(xpi_dtype dt, float *Y, int64_t ldy, const float *X, int32_t n, const void *W,
                              int64_t r0, int64_t r1, int64_t cols) {
  for (int64_t r = r0; r < r1; r += RB) {
    const int nr = r1 - r < RB ? (int)(r1 - r) : RB;
    for (int32_t t0 = 0; t0 < n; t0 += TG) {
      const int nt = n - t0 < TG ? n - t0 : TG;
      k_blocks[nr - 1][nt - 1](Y, ldy, X, t0, W, r, cols, dt);
    }
  }
}
