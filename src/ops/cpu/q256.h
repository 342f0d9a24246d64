/* 256-bit integer kernels of q8/q4 weights (quant_format.h), one source for two instruction sets:
 *  - AVX2 (kernels_avx2.c): int8 products with maddubs, widened with madd;
 *  - AVX-VNNI (kernels_avxvnni.c, VEX) and AVX-512 VNNI (kernels_avx512.c, EVEX on ymm): one vpdpbusd.
 * The including file defines Q256_DPBUSD(acc, u8, s8) for VNNI, or nothing for AVX2 (and may set Q256_PF_BYTES
 * and Q256_STREAMS), then includes this once.
 * It gets:
 *   Q256_GEMV(NAME, q256_prep, q256_row, q256_rows)   the decode GEMV (xpi_cpu_mm_fn NAME_q8 / NAME_q4, any n), over a
 *                       driver that kernels_avx512.c's 512-bit rows share,
 *   q256_ukr_q8/_q4     with VNNI only: the int8 prefill GEMM's microkernels (gemm_q.h's contract).
 * Include only from files compiled with AVX2 (and the VNNI flavour's flags). */
#include <immintrin.h>
#include <string.h>

#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/gemm_q.h"
#include "ops/cpu/quant.h"

#define Q256_CC 4096 /* decode: activation columns quantized per chunk (stack buffers) */
#ifndef Q256_PF_BYTES
/* decode: how far ahead the GEMV prefetches the weight rows. 4 KiB measured best on Zen 3 (AVX2); on Xeon
 * (kernels_avx512.c) 2 KiB was 10-22% faster than 4 KiB for q8 and q4 from memory, with and without huge pages
 * (bench/2026-12-01-q8-gemv-xeon.md). */
#define Q256_PF_BYTES 4096
#endif
#ifndef Q256_STREAMS
/* decode: the row slice is read as this many streams in lock step (the bf16 GEMV's idea, kernels_avx2.c: a core
 * keeps more lines coming from several far-apart streams than from one). On Xeon (kernels_avx512.c) two streams
 * were 15-22% faster than one for q8 and q4 weights in huge pages; 1 elsewhere (not measured there). */
#define Q256_STREAMS 1
#endif
#define Q256_NT 8    /* decode: tokens per pass over the rows (stack buffers): batched decode of 8 sequences
                      * reads the weights from memory once per step */

static inline float q256_hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

#ifdef Q256_DPBUSD
/* |x| (unsigned) times w carrying x's sign, summed per 4 bytes into int32 */
#define Q256_DOT(ax, ws) Q256_DPBUSD(_mm256_setzero_si256(), ax, ws)
/* the low nibbles times x0 plus the high nibbles times x1, per 4 bytes */
#define Q256_DOT2(lo, x0, hi, x1) Q256_DPBUSD(Q256_DPBUSD(_mm256_setzero_si256(), lo, x0), hi, x1)
#else
/* maddubs: at most 2 * 127 * 127 per int16 lane for q8 (no saturation); for q4 both nibble products are added
 * in int16 first (each |.| <= 2 * 15 * 127, their sum fits) and widened once */
#define Q256_DOT(ax, ws) _mm256_madd_epi16(_mm256_maddubs_epi16(ax, ws), _mm256_set1_epi16(1))
#define Q256_DOT2(lo, x0, hi, x1) \
  _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(lo, x0), _mm256_maddubs_epi16(hi, x1)), _mm256_set1_epi16(1))
#endif

/* ------------------------------------------------------------------ decode GEMV */
/* A pass's activations, quantized per Q256_CC-column chunk (quant_format.h's int8 blocks), one token after another */
typedef struct {
  _Alignas(64) int8_t xq[Q256_NT][Q256_CC];
  _Alignas(64) uint8_t xa[Q256_NT][Q256_CC]; /* q8: |xq|; q4: xq in the row kernel's order */
  uint64_t xn[Q256_NT][Q256_CC / 64];        /* q8 (512-bit rows): the sign bits of xq */
  float dx[Q256_NT][Q256_CC / XPI_QK], sx[Q256_NT][Q256_CC / XPI_QK];
  /* q8, 512-bit rows (kernels_avx512.c): per 16 blocks, 128 * the sum of each block's quants (negated) and dx,
   * in the lane order of its transposed blocks */
  _Alignas(64) int32_t xb[Q256_NT][Q256_CC / XPI_QK];
  _Alignas(64) float dxt[Q256_NT][Q256_CC / XPI_QK];
} q256_acts;

/* q8 rows over NT <= Q256_NG tokens at once (tokens t0..t0+NT-1 of A), v[t] = sum_b d[b]*dx[b]*(int dot of
 * block b): each weight block is loaded once for all the tokens (batched decode) and each token's sum runs in
 * the same order whatever NT is (even blocks into acc0, odd into acc1), so a token's result does not depend on
 * its batch. Scales are formed 8 blocks at a time (one half->f32 conversion per 8 blocks, shared by the tokens);
 * two accumulators per token hide FMA latency for one token. */
#define Q256_NG 4 /* tokens per row kernel call: 2 accumulators each stay in the 16 ymm registers */
static inline __attribute__((always_inline)) void q256_q8_rows(const int8_t *q, const uint16_t *d, const q256_acts *A,
                                                               int t0, const int NT, int64_t nb, float *v) {
  const int8_t *xq[Q256_NG];
  const uint8_t *xa[Q256_NG];
  const float *dx[Q256_NG];
#pragma GCC unroll 4
  for (int t = 0; t < NT; t++) xq[t] = A->xq[t0 + t], xa[t] = A->xa[t0 + t], dx[t] = A->dx[t0 + t];
  __m256 acc0[Q256_NG], acc1[Q256_NG];
#pragma GCC unroll 4
  for (int t = 0; t < NT; t++) acc0[t] = acc1[t] = _mm256_setzero_ps();
#define Q8_BLK(t, i, w)                                                                                   \
  Q256_DOT(_mm256_loadu_si256((const __m256i *)(xa[t] + (i) * XPI_QK)),                                   \
           _mm256_sign_epi8(w, _mm256_loadu_si256((const __m256i *)(xq[t] + (i) * XPI_QK))))
  int64_t b = 0;
  for (; b + 8 <= nb; b += 8) {
    _Alignas(32) float sc[Q256_NG][8];
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(d + b)));
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++) _mm256_store_ps(sc[t], _mm256_mul_ps(dw, _mm256_loadu_ps(dx[t] + b)));
#pragma GCC unroll 8
    for (int k = 0; k < 8; k += 2) {
      const __m256i w0 = _mm256_loadu_si256((const __m256i *)(q + (b + k) * XPI_QK));
      const __m256i w1 = _mm256_loadu_si256((const __m256i *)(q + (b + k + 1) * XPI_QK));
#pragma GCC unroll 4
      for (int t = 0; t < NT; t++) {
        acc0[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Q8_BLK(t, b + k, w0)), _mm256_broadcast_ss(&sc[t][k]), acc0[t]);
        acc1[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Q8_BLK(t, b + k + 1, w1)), _mm256_broadcast_ss(&sc[t][k + 1]), acc1[t]);
      }
    }
  }
  for (; b < nb; b++) {
    const __m256i w = _mm256_loadu_si256((const __m256i *)(q + b * XPI_QK));
    const float db = _cvtsh_ss(d[b]);
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++)
      acc0[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Q8_BLK(t, b, w)), _mm256_set1_ps(db * dx[t][b]), acc0[t]);
  }
#undef Q8_BLK
#pragma GCC unroll 4
  for (int t = 0; t < NT; t++) v[t] = q256_hsum(_mm256_add_ps(acc0[t], acc1[t]));
}

/* Activations of a q4 dot in pair order: for blocks 2p, 2p+1 the 64 bytes are [2p: 0-15 | 2p+1: 0-15 |
 * 2p: 16-31 | 2p+1: 16-31], matching one 32-byte load of two q4 blocks split into low and high nibbles. A last
 * odd block keeps block order. */
static inline void q256_pair_order(int8_t *xp, const int8_t *xq, int64_t nb) {
  int64_t p = 0;
  for (; p + 1 < nb; p += 2) {
    memcpy(xp + p * 32, xq + p * 32, 16);
    memcpy(xp + p * 32 + 16, xq + (p + 1) * 32, 16);
    memcpy(xp + p * 32 + 32, xq + p * 32 + 16, 16);
    memcpy(xp + p * 32 + 48, xq + (p + 1) * 32 + 16, 16);
  }
  if (p < nb) memcpy(xp + p * 32, xq + p * 32, 32);
}

/* One q4 row, two blocks per 32-byte load: low nibbles hold elements 0-15 and high nibbles 16-31 of both
 * blocks, so lanes 0-3 of the int32 sums belong to the first block and 4-7 to the second; one conversion and
 * one FMA with [s, s, s, s, s', s', s', s'] serve both. Minus 8 * sum_b d[b]*sx[b] (the quants' offset). */
static inline float q256_q4_row(const uint8_t *q, const uint16_t *d, const int8_t *xp, const float *dx,
                                const float *sx, int64_t nb) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i i0 = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1), i1 = _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3),
                i2 = _mm256_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5), i3 = _mm256_setr_epi32(6, 6, 6, 6, 7, 7, 7, 7);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, corr = acc0;
  int64_t b = 0;
  for (; b + 8 <= nb; b += 8) {
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(d + b)));
    const __m256 sc = _mm256_mul_ps(dw, _mm256_loadu_ps(dx + b));
    corr = _mm256_fmadd_ps(dw, _mm256_loadu_ps(sx + b), corr);
#define Q4_PAIR(k, idx, acc)                                                                               \
  do {                                                                                                     \
    const __m256i v = _mm256_loadu_si256((const __m256i *)(q + (b + (k)) * 16));                           \
    const int8_t *xx = xp + (b + (k)) * 32;                                                                \
    const __m256i s = Q256_DOT2(_mm256_and_si256(v, m4), _mm256_loadu_si256((const __m256i *)xx),          \
                                _mm256_and_si256(_mm256_srli_epi16(v, 4), m4),                             \
                                _mm256_loadu_si256((const __m256i *)(xx + 32)));                           \
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_permutevar8x32_ps(sc, idx), acc);                  \
  } while (0)
    Q4_PAIR(0, i0, acc0);
    Q4_PAIR(2, i1, acc1);
    Q4_PAIR(4, i2, acc0);
    Q4_PAIR(6, i3, acc1);
#undef Q4_PAIR
  }
  float r = q256_hsum(_mm256_add_ps(acc0, acc1)) - 8.0f * q256_hsum(corr);
  for (; b < nb; b++) { /* tail blocks: pairs as above, then a last odd block in block order */
    const __m128i v = _mm_loadu_si128((const __m128i *)(q + b * 16));
    const __m256i w = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), m4);
    __m256i x;
    if (b + 1 < nb) { /* pair order: block b's elements 0-15 at xp + b*32, 16-31 at xp + b*32 + 32 */
      x = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(xp + b * 32 + 32)),
                           _mm_loadu_si128((const __m128i *)(xp + b * 32)));
      const __m128i v1 = _mm_loadu_si128((const __m128i *)(q + (b + 1) * 16));
      const __m256i w1 = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v1, 4), v1), m4);
      const __m256i x1 = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(xp + b * 32 + 48)),
                                          _mm_loadu_si128((const __m128i *)(xp + b * 32 + 16)));
      const float d1 = _cvtsh_ss(d[b + 1]);
      r += d1 * dx[b + 1] * q256_hsum(_mm256_cvtepi32_ps(Q256_DOT(w1, x1))) - 8.0f * d1 * sx[b + 1];
    } else {
      x = _mm256_loadu_si256((const __m256i *)(xp + b * 32));
    }
    const float d0 = _cvtsh_ss(d[b]);
    r += d0 * dx[b] * q256_hsum(_mm256_cvtepi32_ps(Q256_DOT(w, x))) - 8.0f * d0 * sx[b];
    if (b + 1 < nb) b++;
  }
  return r;
}

/* The decode GEMV's driver, shared with kernels_avx512.c's 512-bit rows: per Q256_NT tokens and Q256_CC columns,
 * the tokens are quantized (xq, |xq| in xa, dx, sx), PREP lays them out for the row kernel, and ROW computes one
 * row's dot for one token. Each row is read once per pass and used for all its tokens while it sits in L1. PREP
 * and ROW are constants at every call site, so this always-inlined driver calls them directly. */
typedef void (*q256_prep_fn)(xpi_dtype dt, q256_acts *A, int t, int64_t nbc);
typedef float (*q256_row_fn)(xpi_dtype dt, const uint8_t *q, const uint16_t *d, const q256_acts *A, int t,
                             int64_t nbc);
/* Optional: one row's dots for all nt tokens at once, v[t] (a row kernel that loads and unpacks each weight
 * block once for every token); returns 0 where it does not handle dt (ROW then runs per token). */
typedef int (*q256_rows_fn)(xpi_dtype dt, const uint8_t *q, const uint16_t *d, const q256_acts *A, int nt,
                            int64_t nbc, float *v);

static inline __attribute__((always_inline)) void q256_gemv_driver(q256_prep_fn prep, q256_row_fn row,
                                                                   q256_rows_fn rows, xpi_dtype dt,
                                                                   float *Y, int64_t ldy, const float *X, int32_t n,
                                                                   const void *W, const void *aux, int64_t r0,
                                                                   int64_t r1, int64_t cols) {
  q256_acts A;
  const int64_t nb = xpi_q_nblocks(cols), rb = xpi_q_row_bytes(dt, cols);
  const int bs = dt == XPI_DT_Q8 ? XPI_QK : XPI_QK / 2;
  const uint8_t *qs = W;
  const uint16_t *d = aux;
  for (int32_t t0 = 0; t0 < n; t0 += Q256_NT) {
    const int32_t nt = n - t0 < Q256_NT ? n - t0 : Q256_NT;
    /* column chunks keep the quantized activations on the stack for any width */
    for (int64_t c0 = 0; c0 < cols; c0 += Q256_CC) {
      const int64_t cw = cols - c0 < Q256_CC ? cols - c0 : Q256_CC, cb = c0 / XPI_QK, nbc = xpi_q_nblocks(cw);
      const int64_t ahead = (Q256_PF_BYTES + nbc * bs - 1) / (nbc * bs);
      for (int32_t t = 0; t < nt; t++) {
        xpi_quant_act_avx2(A.xq[t], A.xa[t], A.dx[t], A.sx[t], X + (int64_t)(t0 + t) * cols + c0, cw);
        prep(dt, &A, t, nbc);
      }
      /* the slice as Q256_STREAMS parts read in lock step (row i of each part in turn), each its own stream */
      const int64_t h = (r1 - r0 + Q256_STREAMS - 1) / Q256_STREAMS;
      for (int64_t i = 0; i < h; i++)
        for (int64_t st = 0; st < Q256_STREAMS; st++) {
          const int64_t r = r0 + st * h + i, re = r0 + (st + 1) * h < r1 ? r0 + (st + 1) * h : r1;
          if (r >= re) continue;
          const uint8_t *q = qs + r * rb + cb * bs;
          const uint16_t *dr = d + r * nb + cb;
          if (r + ahead < re) { /* the row ~Q256_PF_BYTES ahead in this stream: quants and scales are two streams
                                 * the hardware prefetcher follows late (measured: +15-20% tokens/s for q4, ~+10%
                                 * for q8) */
            const char *qn = (const char *)(q + ahead * rb);
            for (int64_t o = 0; o < nbc * bs; o += 64) _mm_prefetch(qn + o, _MM_HINT_T0);
            _mm_prefetch((const char *)(dr + ahead * nb), _MM_HINT_T0);
          }
          float v[Q256_NT];
          if (!rows || !rows(dt, q, dr, &A, nt, nbc, v))
            for (int32_t t = 0; t < nt; t++) v[t] = row(dt, q, dr, &A, t, nbc);
          for (int32_t t = 0; t < nt; t++) {
            float *y = Y + (int64_t)(t0 + t) * ldy + r;
            *y = c0 == 0 ? v[t] : *y + v[t];
          }
        }
    }
  }
}

/* Defines the xpi_cpu_mm_fn pair NAME##_q8 / NAME##_q4 over the driver with PREP, ROW and ROWS (or NULL). */
#define Q256_GEMV(NAME, PREP, ROW, ROWS)                                                                         \
  static void NAME##_q8(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux,          \
                        int64_t r0, int64_t r1, int64_t cols) {                                                   \
    q256_gemv_driver(PREP, ROW, ROWS, XPI_DT_Q8, Y, ldy, X, n, W, aux, r0, r1, cols);                              \
  }                                                                                                               \
  static void NAME##_q4(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux,          \
                        int64_t r0, int64_t r1, int64_t cols) {                                                   \
    q256_gemv_driver(PREP, ROW, ROWS, XPI_DT_Q4, Y, ldy, X, n, W, aux, r0, r1, cols);                              \
  }

/* The 256-bit rows: q4 activations in pair order, q8 as quantized. */
static inline void q256_prep(xpi_dtype dt, q256_acts *A, int t, int64_t nbc) {
  if (dt == XPI_DT_Q4) q256_pair_order((int8_t *)A->xa[t], A->xq[t], nbc);
}
static inline float q256_row(xpi_dtype dt, const uint8_t *q, const uint16_t *d, const q256_acts *A, int t,
                             int64_t nbc) {
  float v;
  if (dt == XPI_DT_Q8) q256_q8_rows((const int8_t *)q, d, A, t, 1, nbc, &v);
  else v = q256_q4_row(q, d, (const int8_t *)A->xa[t], A->dx[t], A->sx[t], nbc);
  return v;
}
/* q8: the pass's tokens Q256_NG at a time per weight row (the row stays in L1 between groups) */
static inline int q256_rows(xpi_dtype dt, const uint8_t *q, const uint16_t *d, const q256_acts *A, int nt, int64_t nbc,
                            float *v) {
  if (dt != XPI_DT_Q8) return 0;
  const int8_t *w = (const int8_t *)q;
  for (int t0 = 0; t0 < nt; t0 += Q256_NG) {
    switch (nt - t0) {
      case 1: q256_q8_rows(w, d, A, t0, 1, nbc, v + t0); break;
      case 2: q256_q8_rows(w, d, A, t0, 2, nbc, v + t0); break;
      case 3: q256_q8_rows(w, d, A, t0, 3, nbc, v + t0); break;
      default: q256_q8_rows(w, d, A, t0, 4, nbc, v + t0); break;
    }
  }
  return 1;
}

/* Builds a table from base with the q8/q4 kernels replaced (the AVX-VNNI and AVX-512 tables). */
static inline xpi_cpu_kernels q256_table(const xpi_cpu_kernels *base, const char *isa, xpi_cpu_mm_fn gemv8,
                                         xpi_cpu_mm_fn gemv4, const xpi_cpu_gemm *gemm8, const xpi_cpu_gemm *gemm4) {
  xpi_cpu_kernels k = *base;
  k.isa = isa;
  k.gemv[XPI_DT_Q8] = gemv8, k.gemv[XPI_DT_Q4] = gemv4;
  k.gemv_isa[XPI_DT_Q8] = k.gemv_isa[XPI_DT_Q4] = isa;
  k.gemm[XPI_DT_Q8] = gemm8, k.gemm[XPI_DT_Q4] = gemm4;
  return k;
}

/* ------------------------------------------------------------------ int8 GEMM microkernels (VNNI) */
#ifdef Q256_DPBUSD
/* gemm_q.h's driver and layouts with vpdpbusd: one instruction multiplies 8 rows x 4 columns by a token and
 * adds into int32, where AVX2 needs maddubs then an add (Q4: int16 sums widened per block; Q8: madd, then
 * add). Q8 keeps the sign trick (|w| times x with w's sign). */
static inline __attribute__((always_inline)) void q256_ukr(xpi_dtype dt, const int8_t *a, const float *dx,
                                                           const float *c8, const int8_t *P, const float *D,
                                                           int64_t kb, float *Y, int64_t ldy, int nt, int nr) {
  __m256 f[XPI_GQ_MR];
  for (int t = 0; t < XPI_GQ_MR; t++) f[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < kb; b++) {
    const int8_t *pb = P + b * (XPI_QK / 4) * XPI_GQ_NR * 4, *ab = a + b * (XPI_QK / 4) * XPI_GQ_MR * 4;
    __m256i c[XPI_GQ_MR];
    for (int t = 0; t < XPI_GQ_MR; t++) c[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int j = 0; j < XPI_QK / 4; j++) {
      const __m256i p = _mm256_load_si256((const __m256i *)(pb + j * XPI_GQ_NR * 4));
      const __m256i pa = dt == XPI_DT_Q4 ? p : _mm256_abs_epi8(p);
#pragma GCC unroll 8
      for (int t = 0; t < XPI_GQ_MR; t++) {
        const __m256i x = xpi_gq_bcast4(ab + (j * XPI_GQ_MR + t) * 4);
        c[t] = Q256_DPBUSD(c[t], pa, dt == XPI_DT_Q4 ? x : _mm256_sign_epi8(x, p));
      }
    }
    const __m256 dw = _mm256_load_ps(D + b * XPI_GQ_NR);
#pragma GCC unroll 8
    for (int t = 0; t < XPI_GQ_MR; t++) f[t] = xpi_gq_scale(f[t], dw, c[t], dx, c8, b, t);
  }
  xpi_gq_store(Y, ldy, f, nt, nr);
}
XPI_GQ_UKR(q256_ukr_q4, q256_ukr, XPI_DT_Q4)
XPI_GQ_UKR(q256_ukr_q8, q256_ukr, XPI_DT_Q8)
#endif
