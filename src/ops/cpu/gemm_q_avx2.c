/* Prefill GEMM for Q8/Q4 weights in integer arithmetic (AVX2). Each panel of 8 weight rows (whole rows) is
 * packed once per call and all tokens are swept over it, 4 at a time; nothing is widened to f32:
 *  - the activations are quantized once per call to int8 per 32-column block, exactly as the decode GEMV does
 *    (xpi_quant_act_avx2: dx = amax/127, xq = round(x/dx)), and packed into QMR-token panels whose 4-byte
 *    groups the microkernel broadcasts;
 *  - a panel keeps the rows' int8 quants (Q4 unpacked to one byte, 0..15), 4 consecutive columns of a row per
 *    32-bit lane, so one maddubs multiplies 8 rows x 4 columns by a broadcast token, and after madd each
 *    32-bit lane holds one row's sum;
 *  - per 32-column block, the exact int32 dot products are scaled into f32 once: y += d_w * dx * isum
 *    (Q4: y += d_w * (dx * isum - 8 * dx * sum(xq)), the -8 offset of its quants).
 * A maddubs is 32 multiply-adds and Zen 3 issues about one per cycle, against 16 for its two 8-wide FMAs.
 * Measured on one thread, 512 tokens, 1024 x 1024 weights: Q4 65-80 GMAC/s, Q8 45-50 (it needs sign and
 * madd on every step), the f32 GEMM on bf16 weights 35-38. The result is the decode path's (quant_format.h): the
 * product of the dequantized weights with the int8-rounded activations, so prefill and decode agree.
 *
 * Q4 accumulates maddubs results in int16 over one block: each lane adds 2 products per step, |15 * 127| * 2
 * * 8 steps = 30480 < 2^15. Q8 weights are signed, and maddubs needs one unsigned operand: it multiplies
 * |w| by x carrying w's sign (sign_epi8), at most 2 * 127 * 127 = 32258 per int16 lane, then widens each
 * step to int32 with madd. */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/gemm_q.h"
#include "ops/cpu/quant.h"
#include "ops/cpu/simd_avx2.h"

/* Panels hold whole rows: cutting the columns into chunks that keep the packed activations in L2 (as the f32
 * GEMM once did) means adding each chunk's partial sums into Y, and those passes cost more than reading the
 * activations from L3. Measured at 512 tokens against chunks of 256 KiB of activations: 1.10-1.30x, and 1.08x
 * against 4096-column chunks at 8192 columns.
 * Tokens per microkernel call (XPI_GQ_MR = 4): 4 tokens x 8 rows keep both the integer and the float
 * accumulators in registers (Q8 also holds w and |w|). Measured in the GEMM at 512 tokens (Zen 3), against 4:
 * Q8 0.89x with 5 tokens and 0.97x with 6, Q4 0.88x with 5, and both 0.83-0.88x with 3. */
#define QNR XPI_GQ_NR
#define QMR XPI_GQ_MR
#define QK4 (XPI_QK / 4) /* 4-column steps per block */

/* Keeps an accumulator a serial chain in a register: integer adds are associative, and GCC otherwise
 * reorders a block's eight steps into a tree (all products first, spilled to the stack, then summed). */
#define PIN(a) __asm__("" : "+x"(a))

/* Packed activations of one call (P): for token panel p of QMR tokens, q[p][k/4][t][4] int8 (k < nb*32), and
 * per block dx[p][b][t] and c8[p][b][t] = 8 * dx * sum(xq) (Q4; 0 for Q8). Padding tokens are all zero. */
typedef struct {
  int8_t *q;
  float *dx, *c8;
  int64_t kp, nb; /* padded columns, blocks */
} qacts;

static qacts acts_of(const void *P, int32_t n, int64_t cols) {
  qacts A;
  A.nb = xpi_q_nblocks(cols);
  A.kp = A.nb * XPI_QK;
  const int64_t np = ((int64_t)n + QMR - 1) / QMR * QMR;
  A.q = (int8_t *)P;
  A.dx = (float *)((char *)P + (((size_t)np * (size_t)A.kp + 63) & ~(size_t)63));
  A.c8 = A.dx + np * A.nb;
  return A;
}

size_t xpi_gemm_q_pack_bytes(int32_t n, int64_t cols) {
  const size_t nb = (size_t)xpi_q_nblocks(cols), np = ((size_t)n + QMR - 1) / QMR * QMR;
  if (nb > SIZE_MAX / 64 / (np + 1)) return SIZE_MAX;
  return ((np * nb * XPI_QK + 63) & ~(size_t)63) + 2 * np * nb * sizeof(float);
}

/* Quantizes and packs tokens [t0, t1) of X (rows of cols floats), and the padding tokens after n if t1 == n. */
void xpi_gemm_q_pack(xpi_dtype dt, void *P, const float *X, int32_t n, int64_t cols, int32_t t0, int32_t t1) {
  const qacts A = acts_of(P, n, cols);
  const int32_t np = (n + QMR - 1) / QMR * QMR, te = t1 == n ? np : t1;
  int8_t *xq = aligned_alloc(64, ((size_t)A.kp * 2 + (size_t)A.nb * 2 * sizeof(float) + 127) & ~(size_t)63);
  if (!xq) { /* cannot happen in practice (a few KiB); quantize in place, one block at a time */
    for (int32_t t = t0; t < te; t++) {
      const int64_t p = t / QMR, i = t % QMR;
      int8_t *a = A.q + p * A.kp * QMR + i * 4;
      for (int64_t b = 0; b < A.nb; b++) {
        int8_t bq[XPI_QK];
        uint8_t ba[XPI_QK];
        float bdx = 0, bsx = 0;
        const int64_t w = cols - b * XPI_QK < XPI_QK ? cols - b * XPI_QK : XPI_QK;
        if (t < n) xpi_quant_act_avx2(bq, ba, &bdx, &bsx, X + (int64_t)t * cols + b * XPI_QK, w);
        else memset(bq, 0, sizeof bq);
        for (int k4 = 0; k4 < XPI_QK / 4; k4++) memcpy(a + (b * XPI_QK / 4 + k4) * QMR * 4, bq + k4 * 4, 4);
        A.dx[p * A.nb * QMR + b * QMR + i] = bdx;
        A.c8[p * A.nb * QMR + b * QMR + i] = dt == XPI_DT_Q4 ? 8.0f * bsx : 0.0f;
      }
    }
    return;
  }
  uint8_t *xa = (uint8_t *)xq + A.kp;
  float *dx = (float *)(xa + A.kp), *sx = dx + A.nb;
  for (int32_t t = t0; t < te; t++) {
    const int64_t p = t / QMR, i = t % QMR;
    int8_t *a = A.q + p * A.kp * QMR + i * 4;
    float *ad = A.dx + p * A.nb * QMR + i, *ac = A.c8 + p * A.nb * QMR + i;
    if (t >= n) {
      for (int64_t k4 = 0; k4 < A.kp / 4; k4++) memset(a + k4 * QMR * 4, 0, 4);
      for (int64_t b = 0; b < A.nb; b++) ad[b * QMR] = 0, ac[b * QMR] = 0;
      continue;
    }
    xpi_quant_act_avx2(xq, xa, dx, sx, X + (int64_t)t * cols, cols);
    for (int64_t k4 = 0; k4 < A.kp / 4; k4++) memcpy(a + k4 * QMR * 4, xq + k4 * 4, 4);
    for (int64_t b = 0; b < A.nb; b++) ad[b * QMR] = dx[b], ac[b * QMR] = dt == XPI_DT_Q4 ? 8.0f * sx[b] : 0.0f;
  }
  free(xq);
}

/* In-register 8x8 transpose of 32-bit lanes: v[j] becomes lane j of the rows v[0..8). */
static inline void tr8i(__m256i v[8]) {
  __m256 f[8];
  for (int j = 0; j < 8; j++) f[j] = _mm256_castsi256_ps(v[j]);
  xpi_tr8(f);
  for (int j = 0; j < 8; j++) v[j] = _mm256_castps_si256(f[j]);
}

/* 32 quants of row block b as bytes in column order (Q4: 0..15, its low nibbles are columns 0..15). */
static inline __m256i block_bytes(xpi_dtype dt, const uint8_t *row, int64_t b) {
  if (dt == XPI_DT_Q8) return _mm256_loadu_si256((const __m256i *)(row + b * XPI_QK));
  const __m128i v = _mm_loadu_si128((const __m128i *)(row + b * (XPI_QK / 2)));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), _mm256_set1_epi8(0x0f));
}

/* Panel of rows [r, r+nr): P[k/4][8][4] bytes and D[b][8] scales as f32. Rows i >= nr are zero. */
static void pack_panel(xpi_dtype dt, int8_t *P, float *D, const void *W, const uint16_t *d, int64_t r, int nr,
                       int64_t nb) {
  const int64_t rb = xpi_q_row_bytes(dt, nb * XPI_QK);
  for (int64_t b = 0; b < nb; b++) {
    __m256i v[8];
    for (int j = 0; j < 8; j++)
      v[j] = j < nr ? block_bytes(dt, (const uint8_t *)W + (r + j) * rb, b) : _mm256_setzero_si256();
    tr8i(v); /* v[j] = columns 4j..4j+3 of the 8 rows */
    for (int j = 0; j < 8; j++) _mm256_store_si256((__m256i *)(P + (b * QK4 + j) * QNR * 4), v[j]);
  }
  for (int64_t b = 0; b < nb; b++)
    for (int i = 0; i < QNR; i++) D[b * QNR + i] = i < nr ? _cvtsh_ss(d[(r + i) * nb + b]) : 0.0f;
}

/* Y[t, 0..nr) = token panel a (QMR tokens x kb blocks) times panel P, for t < nt. dx, c8: the token panel's
 * per-block activation scales ([b][QMR]). dt is a constant in each caller below. */
static inline __attribute__((always_inline)) void ukr(xpi_dtype dt, const int8_t *a, const float *dx,
                                                      const float *c8, const int8_t *P, const float *D, int64_t kb,
                                                      float *Y, int64_t ldy, int nt, int nr) {
  __m256 f[QMR];
  for (int t = 0; t < QMR; t++) f[t] = _mm256_setzero_ps();
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < kb; b++) {
    const int8_t *pb = P + b * QK4 * QNR * 4, *ab = a + b * QK4 * QMR * 4;
    __m256i c[QMR];
    for (int t = 0; t < QMR; t++) c[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int j = 0; j < QK4; j++) {
      const __m256i p = _mm256_load_si256((const __m256i *)(pb + j * QNR * 4));
      if (dt == XPI_DT_Q4) {
#pragma GCC unroll 8
        for (int t = 0; t < QMR; t++) {
          c[t] = _mm256_add_epi16(c[t], _mm256_maddubs_epi16(p, xpi_gq_bcast4(ab + (j * QMR + t) * 4)));
          PIN(c[t]);
        }
      } else {
        const __m256i pa = _mm256_abs_epi8(p);
#pragma GCC unroll 8
        for (int t = 0; t < QMR; t++) {
          const __m256i x = _mm256_sign_epi8(xpi_gq_bcast4(ab + (j * QMR + t) * 4), p);
          c[t] = _mm256_add_epi32(c[t], _mm256_madd_epi16(_mm256_maddubs_epi16(pa, x), ones));
          PIN(c[t]);
        }
      }
    }
    const __m256 dw = _mm256_load_ps(D + b * QNR);
#pragma GCC unroll 8
    for (int t = 0; t < QMR; t++)
      f[t] = xpi_gq_scale(f[t], dw, dt == XPI_DT_Q4 ? _mm256_madd_epi16(c[t], ones) : c[t], dx, c8, b, t);
  }
  xpi_gq_store(Y, ldy, f, nt, nr);
}

void xpi_gq_ukr_avx2_q4(const int8_t *a, const float *dx, const float *c8, const int8_t *P, const float *D,
                        int64_t kb, float *Y, int64_t ldy, int nt, int nr) {
  ukr(XPI_DT_Q4, a, dx, c8, P, D, kb, Y, ldy, nt, nr);
}
void xpi_gq_ukr_avx2_q8(const int8_t *a, const float *dx, const float *c8, const int8_t *P, const float *D,
                        int64_t kb, float *Y, int64_t ldy, int nt, int nr) {
  ukr(XPI_DT_Q8, a, dx, c8, P, D, kb, Y, ldy, nt, nr);
}

size_t xpi_gemm_q_scratch_bytes(int64_t cols) {
  const size_t nb = (size_t)xpi_q_nblocks(cols);
  return QNR * nb * XPI_QK + QNR * nb * sizeof(float);
}

void xpi_gemm_q_run(xpi_gq_ukr ukr_fn, xpi_dtype dt, float *Y, int64_t ldy, const void *Pk, int32_t n,
                    const void *W, const uint16_t *d, int64_t cols, int64_t r0, int64_t r1, int32_t t0, int32_t t1,
                    void *scratch) {
  const qacts A = acts_of(Pk, n, cols);
  int8_t *P = scratch; /* 32-byte aligned: the scratch is 64-byte aligned */
  float *D = (float *)(P + (size_t)QNR * (size_t)A.kp);
  const int64_t rb = xpi_q_row_bytes(dt, cols), lines = (rb + 63) / 64, sweeps = (t1 - t0 + QMR - 1) / QMR;
  const int64_t per = (QNR * lines + sweeps - 1) / sweeps; /* prefetches per microkernel call */
  for (int64_t r = r0; r < r1; r += QNR) {
    const int nr = r1 - r < QNR ? (int)(r1 - r) : QNR;
    pack_panel(dt, P, D, W, d, r, nr, A.nb);
    /* the next panel's rows are a row stride apart, which the hardware prefetcher does not run ahead across:
     * fetch them, a few lines per call, while this one is swept */
    const int64_t nn = r1 - (r + QNR) < QNR ? r1 - (r + QNR) : QNR;
    for (int64_t i = 0; i < nn; i++) /* and its scales, at once (a line or a few per row) */
      for (int64_t o = 0; o < A.nb * 2; o += 64) _mm_prefetch((const char *)(d + (r + QNR + i) * A.nb) + o, _MM_HINT_T0);
    int64_t pf = 0;
    for (int64_t t = t0; t < t1; t += QMR) {
      const int nt = t1 - t < QMR ? (int)(t1 - t) : QMR;
      const int64_t p = t / QMR;
      for (int64_t e = pf + per; pf < e && pf < nn * lines; pf++)
        _mm_prefetch((const char *)W + (r + QNR + pf / lines) * rb + pf % lines * 64, _MM_HINT_T0);
      ukr_fn(A.q + p * A.kp * QMR, A.dx + p * A.nb * QMR, A.c8 + p * A.nb * QMR, P, D, A.nb, Y + t * ldy + r, ldy,
             nt, nr);
    }
  }
}
