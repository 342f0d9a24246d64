/* AVX-512 (F/BW/VL/DQ + BF16 + VNNI) kernels. Only where the wider ISA pays off is there new code:
 *  - the q8/q4 decode GEMV on 512-bit vectors with vpdpbusd (below),
 *  - the q8/q4 prefill GEMM's microkernels with vpdpbusd (q256.h, EVEX-encoded on ymm),
 *  - the bf16 prefill GEMM with vdpbf16ps (below: this table's; "auto" prefers the AVX2 f32 GEMM, measured 1.9x
 *    faster on a Xeon, dispatch.c), and the AVX-512 packers of its and the AMX GEMMs' activations,
 *  - f32/f16/bf16 weights times 4..64 tokens (batched decode): the small-n kernel (mm_smalln_avx512.c); q8/q4
 *    weights: the decode GEMV (mm_smalln.h says up to how many tokens).
 * Everything else (the f32/f16 GEMM and GEMV, the bf16 GEMV, vector kernels) is the AVX2 table's, which every
 * AVX-512 CPU also runs: bf16 decode is bound by memory, and the AVX2 GEMV's four-stream reading is what sets
 * its speed (kernels_avx2.c).
 *
 * Why the decode GEMV here was once 1.6-3.8x slower than the AVX2 one (measured on an Emerald Rapids Xeon, one
 * thread, q4 1.96 vs 7.44 GB/s, q8 6.06 vs 10.66): per 32-weight block it converted the block's half scale with
 * the portable bit-twiddling xpi_f16_to_f32 (branches, ~20 scalar instructions; twice per block for q4, for the
 * offset correction too), summed q4's correction in one scalar add chain, kept one vector accumulator (one FMA
 * latency per block), and did not prefetch. perf (cpu-clock samples) put most of its time on those scalar
 * instructions. It never used a zmm register, so the AVX-512 frequency licence was not the cause. The kernel
 * below converts 8 scales with one vcvtph2ps, keeps two accumulators, prefetches as the AVX2 GEMV, and reads
 * 64 bytes per vpdpbusd. */
#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define Q256_DPBUSD(acc, u8, s8) _mm256_dpbusd_epi32(acc, u8, s8)
#define Q256_PF_BYTES 2048 /* measured on Xeon (q256.h) */
#define Q256_STREAMS 2      /* measured on Xeon (q256.h) */
#include "ops/cpu/q256.h"
#include "ops/cpu/mm_smalln.h"
#include "ops/cpu/amx_layout.h"
#include "ops/cpu/simd_avx512.h"


/* ------------------------------------------------------------------ q8/q4 decode GEMV, 512-bit */
/* Tokens per row kernel call (q4_rows, q8_rows): their accumulators and scales stay in registers; a pass of
 * Q256_NT tokens runs the row kernel per group while the weight row sits in L1. */
#define ROWS_NG 4
#define Q8_NG 8 /* q8_rows: 8 tokens share each transposed weight group (8 zmm) */
/* Activations of a q4 dot in quad order: for blocks 4p..4p+3 the 128 bytes are [elements 0-15 of each of the
 * four blocks | elements 16-31 of each], matching one 64-byte load of four q4 blocks split into low and high
 * nibbles (each 128-bit lane one block). Blocks after the last full quad keep block order. */
static void q4_quad_order(int8_t *xp, const int8_t *xq, int64_t nb) {
  for (int64_t p = 0; p + 4 <= nb; p += 4)
    for (int j = 0; j < 4; j++) {
      memcpy(xp + p * 32 + j * 16, xq + (p + j) * 32, 16);
      memcpy(xp + p * 32 + 64 + j * 16, xq + (p + j) * 32 + 16, 16);
    }
  for (int64_t b = nb & ~(int64_t)3; b < nb; b++) memcpy(xp + b * 32, xq + b * 32, 32);
}

static inline int32_t hsum_epi32(__m256i c) {
  __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
  return _mm_cvtsi128_si32(s4);
}

/* One q4 row over nb blocks for NT tokens at once (tokens t0..t0+NT-1 of A): per token, sum_b d[b]*dx[b]*(int
 * dot of block b) - 8*sum_b d[b]*sx[b]. Each quad of blocks is loaded and split into nibbles once for all the
 * tokens (batched decode; measured on the 16-core host, 2 threads: 128-145 GMAC/s at 4-16 tokens, where a call
 * per token reached 61-69; one token 22.5 GB/s, was 18.8). Scales of 8 blocks are spread over the 16 int32 lanes (4 per block)
 * by a permute. Per token the sums run in the same order whatever NT is, so a token's result does not depend on
 * its batch. */
static inline __attribute__((always_inline)) void q4_rows(const uint8_t *q, const uint16_t *d, const q256_acts *A,
                                                          int t0, const int NT, int64_t nb, float *v) {
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  const __m512i i0 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  const __m512i i1 = _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7);
  __m512 acc0[ROWS_NG], acc1[ROWS_NG];
  __m256 corr[ROWS_NG];
#pragma GCC unroll 4
  for (int t = 0; t < NT; t++) acc0[t] = acc1[t] = _mm512_setzero_ps(), corr[t] = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 8 <= nb; b += 8) {
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(d + b)));
    __m512 sc[ROWS_NG];
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++) {
      sc[t] = _mm512_castps256_ps512(_mm256_mul_ps(dw, _mm256_loadu_ps(A->dx[t0 + t] + b)));
      corr[t] = _mm256_fmadd_ps(dw, _mm256_loadu_ps(A->sx[t0 + t] + b), corr[t]);
    }
#define Q4_QUAD(k, idx, acc)                                                                                    \
  do {                                                                                                          \
    const __m512i w = _mm512_loadu_si512((const void *)(q + (b + (k)) * 16));                                    \
    const __m512i lo = _mm512_and_si512(w, m4), hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), m4);              \
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {                                                       \
      const int8_t *xx = (const int8_t *)A->xa[t0 + t] + (b + (k)) * 32;                                        \
      __m512i c = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, _mm512_loadu_si512(xx));                       \
      c = _mm512_dpbusd_epi32(c, hi, _mm512_loadu_si512(xx + 64));                                               \
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c), _mm512_permutexvar_ps(idx, sc[t]), acc[t]);                 \
    }                                                                                                           \
  } while (0)
    Q4_QUAD(0, i0, acc0);
    Q4_QUAD(4, i1, acc1);
#undef Q4_QUAD
  }
  for (int t = 0; t < NT; t++) {
    const int8_t *xp = (const int8_t *)A->xa[t0 + t];
    const float *dx = A->dx[t0 + t], *sx = A->sx[t0 + t];
    float r = _mm512_reduce_add_ps(_mm512_add_ps(acc0[t], acc1[t])), cs = q256_hsum(corr[t]);
    for (int64_t k = b; k < nb; k++) { /* tail blocks: block order from the last full quad on, else quad order */
      const __m128i w = _mm_loadu_si128((const __m128i *)(q + k * 16));
      const __m256i wl = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(w, 4), w), _mm256_set1_epi8(0x0f));
      const int64_t p = k & ~(int64_t)3;
      const __m256i x = p + 4 <= nb ? _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(xp + p * 32 + 64 + (k - p) * 16)),
                                                       _mm_loadu_si128((const __m128i *)(xp + p * 32 + (k - p) * 16)))
                                    : _mm256_loadu_si256((const __m256i *)(xp + k * 32));
      const float dd = _cvtsh_ss(d[k]);
      r += dd * dx[k] * (float)hsum_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), wl, x));
      cs += dd * sx[k];
    }
    v[t] = r - 8.0f * cs;
  }
}

/* q8 blocks, 16 at a time, transposed: 16 blocks of 8 dwords (512 bytes, 8 zmm in block order) become 8 zmm
 * where lane L holds dword j of one block in all of them, so that 8 vpdpbusd sum each block in one int32 lane and
 * one conversion and one FMA scale 16 blocks, where block order needs a conversion, a scale permute and an FMA
 * per 2 blocks, per token. The weights are transposed per row (24 permutes shared by the pass's tokens), the
 * activations once per call (prep). Three stages, each swapping bit s of the vector index with bit s of the
 * lane: a dword at (vector b3 b2 b1, lane b0 j2 j1 j0) ends at (vector j2 j1 j0, lane b0 b3 b2 b1). */
#define TR_E(L, c, x) ((((L) >> (c)) & 1) << 4 | ((L) & ~(1 << (c))) | ((x) << (c)))
#define TR_IDX(c, x)                                                                                           \
  _mm512_setr_epi32(TR_E(0, c, x), TR_E(1, c, x), TR_E(2, c, x), TR_E(3, c, x), TR_E(4, c, x), TR_E(5, c, x),    \
                    TR_E(6, c, x), TR_E(7, c, x), TR_E(8, c, x), TR_E(9, c, x), TR_E(10, c, x), TR_E(11, c, x),  \
                    TR_E(12, c, x), TR_E(13, c, x), TR_E(14, c, x), TR_E(15, c, x))
static inline __attribute__((always_inline)) void tr_stage(__m512i v[8], const int s, __m512i i0, __m512i i1) {
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++)
    if (!((i >> s) & 1)) {
      const __m512i a = v[i], b = v[i | 1 << s];
      v[i] = _mm512_permutex2var_epi32(a, i0, b);
      v[i | 1 << s] = _mm512_permutex2var_epi32(a, i1, b);
    }
}
static inline __attribute__((always_inline)) void tr16x8(__m512i v[8]) {
  tr_stage(v, 2, TR_IDX(2, 0), TR_IDX(2, 1));
  tr_stage(v, 1, TR_IDX(1, 0), TR_IDX(1, 1));
  tr_stage(v, 0, TR_IDX(0, 0), TR_IDX(0, 1));
}
/* lane L of a transposed group holds block (L2 L1 L0 L3): the per-block vectors (scales, sums) are permuted so */
#define TR_B(L) ((((L) >> 2) & 1) << 3 | (((L) >> 1) & 1) << 2 | ((L) & 1) << 1 | (((L) >> 3) & 1))
#define TR_BIDX                                                                                                \
  _mm512_setr_epi32(TR_B(0), TR_B(1), TR_B(2), TR_B(3), TR_B(4), TR_B(5), TR_B(6), TR_B(7), TR_B(8), TR_B(9),   \
                    TR_B(10), TR_B(11), TR_B(12), TR_B(13), TR_B(14), TR_B(15))

/* q8 rows for NT <= ROWS_NG tokens at once (tokens t0..t0+NT-1 of A). Groups of 16 blocks, transposed (above):
 * the weights offset to unsigned (w + 128, vpdpbusd's unsigned operand) times the signed quants of x, from a sum
 * that starts at -128 * sum(x) of the block (prep), so each block's int32 sum is exactly sum(w x). The blocks
 * after the last group: |x| (unsigned) times w carrying x's sign (AVX-512 has no vpsignb, so w is negated under a
 * mask of x's sign bits, xn, made once per call), two blocks per vpdpbusd. Exact, as |x|, |w| <= 127. Each
 * weight vector is loaded once for all the tokens (batched decode), and each token's sum runs in the same order
 * whatever NT is, so a token's result does not depend on its batch. */
static inline __attribute__((always_inline)) void q8_rows(const int8_t *q, const uint16_t *d, const q256_acts *A,
                                                          int t0, const int NT, int64_t nb, float *v) {
  const __m512i i0 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const __m512i i1 = _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m512i i2 = _mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5);
  const __m512i i3 = _mm512_setr_epi32(6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7);
  const __m512i zero = _mm512_setzero_si512();
  __m512 acc0[Q8_NG], acc1[Q8_NG], accg[Q8_NG];
#pragma GCC unroll 8
  for (int t = 0; t < NT; t++) acc0[t] = acc1[t] = accg[t] = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 16 <= nb; b += 16) {
    const __m512i off = _mm512_set1_epi8((char)0x80);
    __m512i u[8];
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) u[k] = _mm512_xor_si512(_mm512_loadu_si512((const void *)(q + b * 32 + 64 * k)), off);
    tr16x8(u);
    const __m512 dws = _mm512_permutexvar_ps(TR_BIDX, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(d + b))));
#pragma GCC unroll 8
    for (int t = 0; t < NT; t++) {
      const int8_t *x = (const int8_t *)A->xa[t0 + t] + b * 32;
      __m512i c0 = _mm512_load_si512((const void *)(A->xb[t0 + t] + b)), c1 = zero;
#pragma GCC unroll 8
      for (int j = 0; j < 8; j += 2) {
        c0 = _mm512_dpbusd_epi32(c0, u[j], _mm512_load_si512((const void *)(x + 64 * j)));
        c1 = _mm512_dpbusd_epi32(c1, u[j + 1], _mm512_load_si512((const void *)(x + 64 * j + 64)));
      }
      accg[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(c0, c1)),
                                _mm512_mul_ps(dws, _mm512_load_ps(A->dxt[t0 + t] + b)), accg[t]);
    }
  }
  for (; b + 8 <= nb; b += 8) {
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(d + b)));
    __m512 sc[Q8_NG];
#pragma GCC unroll 8
    for (int t = 0; t < NT; t++) sc[t] = _mm512_castps256_ps512(_mm256_mul_ps(dw, _mm256_loadu_ps(A->dx[t0 + t] + b)));
#define Q8_PAIR(k, idx, acc)                                                                                  \
  do {                                                                                                        \
    const __m512i w = _mm512_loadu_si512((const void *)(q + (b + (k)) * 32));                                  \
    _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++) {                                                     \
      const __m512i ws = _mm512_mask_sub_epi8(w, _cvtu64_mask64(A->xn[t0 + t][(b + (k)) / 2]), zero, w);        \
      const __m512i c = _mm512_dpbusd_epi32(zero, _mm512_loadu_si512((const void *)(A->xa[t0 + t] + (b + (k)) * 32)), ws); \
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c), _mm512_permutexvar_ps(idx, sc[t]), acc[t]);               \
    }                                                                                                         \
  } while (0)
    Q8_PAIR(0, i0, acc0);
    Q8_PAIR(2, i1, acc1);
    Q8_PAIR(4, i2, acc0);
    Q8_PAIR(6, i3, acc1);
#undef Q8_PAIR
  }
#pragma GCC unroll 8
  for (int t = 0; t < NT; t++) {
    const uint8_t *xa = A->xa[t0 + t];
    const uint64_t *xn = A->xn[t0 + t];
    const float *dx = A->dx[t0 + t];
    float r = _mm512_reduce_add_ps(_mm512_add_ps(accg[t], _mm512_add_ps(acc0[t], acc1[t])));
    for (int64_t k = b; k < nb; k++) {
      const __m256i w = _mm256_loadu_si256((const __m256i *)(q + k * 32));
      const __m256i ws = _mm256_mask_sub_epi8(w, (__mmask32)(xn[k / 2] >> (32 * (k & 1))), _mm256_setzero_si256(), w);
      const __m256i c = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_loadu_si256((const __m256i *)(xa + k * 32)), ws);
      r += _cvtsh_ss(d[k]) * dx[k] * (float)hsum_epi32(c);
    }
    v[t] = r;
  }
}

/* q4 activations in quad order. q8: the sign bits, one per byte of xq (nbc * 32 bytes: the last group may be 32);
 * then per group of 16 blocks the quants transposed (over |x| in xa, which only the blocks after the last group
 * read), -128 * each block's sum and the block scales in the transposed lane order (q8_rows). */
static inline void prep(xpi_dtype dt, q256_acts *A, int t, int64_t nbc) {
  if (dt == XPI_DT_Q4) {
    q4_quad_order((int8_t *)A->xa[t], A->xq[t], nbc);
    return;
  }
  const __m512i off = _mm512_set1_epi8((char)0x80);
  for (int64_t b = 0; b + 16 <= nbc; b += 16) {
    __m512i x[8];
    __m512i s = _mm512_setzero_si512();
    for (int k = 0; k < 8; k++) x[k] = _mm512_load_si512((const void *)(A->xq[t] + b * 32 + 64 * k));
    tr16x8(x);
    for (int k = 0; k < 8; k++) {
      _mm512_store_si512((void *)(A->xa[t] + b * 32 + 64 * k), x[k]);
      s = _mm512_dpbusd_epi32(s, off, x[k]); /* 128 * sum of the lane's quants */
    }
    _mm512_store_si512((void *)(A->xb[t] + b), _mm512_sub_epi32(_mm512_setzero_si512(), s));
    _mm512_store_ps(A->dxt[t] + b, _mm512_permutexvar_ps(TR_BIDX, _mm512_loadu_ps(A->dx[t] + b)));
  }
  for (int64_t o = 0; o < nbc * XPI_QK; o += 64)
    A->xn[t][o / 64] = o + 64 <= nbc * XPI_QK
                           ? _cvtmask64_u64(_mm512_movepi8_mask(_mm512_load_si512((const void *)(A->xq[t] + o))))
                           : (uint64_t)_cvtmask32_u32(_mm256_movepi8_mask(_mm256_load_si256((const __m256i *)(A->xq[t] + o))));
}
static inline float row(xpi_dtype dt, const uint8_t *q, const uint16_t *d, const q256_acts *A, int t, int64_t nbc) {
  float v;
  if (dt == XPI_DT_Q8) q8_rows((const int8_t *)q, d, A, t, 1, nbc, &v);
  else q4_rows(q, d, A, t, 1, nbc, &v);
  return v;
}
/* All the pass's tokens per weight row, Q8_NG (q8) or ROWS_NG (q4) at a time (the row stays in L1 between). */
_Static_assert(ROWS_NG == 4 && Q8_NG == 8 && Q256_NT == 8, "rows() instantiates q4_rows for 1..4, q8_rows for 1..8 tokens");
static inline int rows(xpi_dtype dt, const uint8_t *q, const uint16_t *d, const q256_acts *A, int nt, int64_t nbc,
                       float *v) {
  if (dt == XPI_DT_Q8) {
    const int8_t *w = (const int8_t *)q;
    switch (nt) {
      case 1: q8_rows(w, d, A, 0, 1, nbc, v); break;
      case 2: q8_rows(w, d, A, 0, 2, nbc, v); break;
      case 3: q8_rows(w, d, A, 0, 3, nbc, v); break;
      case 4: q8_rows(w, d, A, 0, 4, nbc, v); break;
      case 5: q8_rows(w, d, A, 0, 5, nbc, v); break;
      case 6: q8_rows(w, d, A, 0, 6, nbc, v); break;
      case 7: q8_rows(w, d, A, 0, 7, nbc, v); break;
      default: q8_rows(w, d, A, 0, 8, nbc, v); break;
    }
    return 1;
  }
  for (int t0 = 0; t0 < nt; t0 += ROWS_NG) {
    switch (nt - t0 < ROWS_NG ? nt - t0 : ROWS_NG) {
      case 1: q4_rows(q, d, A, t0, 1, nbc, v + t0); break;
      case 2: q4_rows(q, d, A, t0, 2, nbc, v + t0); break;
      case 3: q4_rows(q, d, A, t0, 3, nbc, v + t0); break;
      default: q4_rows(q, d, A, t0, 4, nbc, v + t0); break;
    }
  }
  return 1;
}
Q256_GEMV(gemv, prep, row, rows)

/* ------------------------------------------------------------------ bf16-term and int8 packers (amx_layout.h) */

/* amx_layout.h's bf16 layout: per token, 32 columns at a time are rounded to bf16 (vcvtne2ps2bf16: round to
 * nearest even, as xpi_f32_to_bf16 for finite values), the remainder rounded again for the next term, and each
 * column pair stored to its row of the B tile (64 bytes apart). */
static inline void bf16_pack(void *P, const float *X, const int32_t *rows, int32_t n, int64_t cols, int32_t t0,
                             int32_t t1) {
  const int64_t kp = xpi_amx_kp(cols), te = t1 == n ? xpi_amx_np(n) : t1, tail = n / XPI_AMX_TT;
  const int cs = xpi_amx_bf16_tail_slots(n) > 0; /* the last panel is compact (amx_layout.h) */
  int64_t t = t0;
  /* Whole panels of 16 tokens: each 32-column chunk's terms go to a 16 x 16 tile in L1, transposed in registers
   * and stored a B-tile row (64 bytes) at a time. Storing each token's column pairs straight to the panel, 64
   * bytes apart (the loop below, for ragged ends), is 16 scalar stores per token and chunk that touch every cache
   * line of the panel (too big for L1 at thousands of columns) once per token. Same values, same places. */
  for (; t % XPI_AMX_TT == 0 && t + XPI_AMX_TT <= te; t += XPI_AMX_TT) {
    uint32_t *panel = (uint32_t *)xpi_amx_bf16_panel(P, cols, t / XPI_AMX_TT);
    const int compact = cs && t / XPI_AMX_TT == tail;
    for (int64_t c = 0; c < kp; c += 32) {
      _Alignas(64) uint32_t tile[XPI_AMX_BF16_TERMS][XPI_AMX_TT][16];
      if (compact) memset(tile, 0, sizeof tile); /* unused columns, slot 2 */
      for (int i = 0; i < XPI_AMX_TT; i++) {
        if (compact && t + i >= n) break;
        __m512 lo = _mm512_setzero_ps(), hi = lo;
        if (t + i < n) {
          const int64_t m = cols - c;
          const __mmask16 k0 = m >= 16 ? 0xffff : m > 0 ? (__mmask16)((1u << m) - 1) : 0;
          const __mmask16 k1 = m >= 32 ? 0xffff : m > 16 ? (__mmask16)((1u << (m - 16)) - 1) : 0;
          const float *x = X + (rows ? rows[t + i] : t + i) * cols + c;
          lo = _mm512_maskz_loadu_ps(k0, x);
          hi = _mm512_maskz_loadu_ps(k1, x + 16);
        }
        for (int s = 0; s < XPI_AMX_BF16_TERMS; s++) {
          const __m512bh h = _mm512_cvtne2ps_pbh(hi, lo);
          const int q = compact ? xpi_amx_bf16_tail_slot(i) : s, col = compact ? xpi_amx_bf16_tail_col(i, s) : i;
          _mm512_store_si512((void *)tile[q][col], (__m512i)h);
          if (s + 1 < XPI_AMX_BF16_TERMS) {
            const __m512i hv = (__m512i)h;
            lo = _mm512_sub_ps(lo, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(hv)), 16)));
            hi = _mm512_sub_ps(hi, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(hv, 1)), 16)));
          }
        }
      }
      for (int s = 0; s < XPI_AMX_BF16_TERMS; s++) { /* tokens x pairs -> pairs x tokens */
        __m512 v[16];
        for (int i = 0; i < 16; i++) v[i] = _mm512_load_ps((const float *)tile[s][i]);
        xpi_tr16(v);
        for (int j = 0; j < 16; j++) _mm512_store_ps((float *)(panel + (s * kp / 2 + c / 2 + j) * XPI_AMX_TT), v[j]);
      }
    }
  }
  for (; t < te; t++) { /* ragged ends (t1 not a multiple of 16): each token's pairs to their places */
    if (cs && t / XPI_AMX_TT == tail) {
      if (t % XPI_AMX_TT == 0)
        memset((uint32_t *)xpi_amx_bf16_panel(P, cols, tail), 0, 2 * (size_t)(XPI_AMX_BF16_TERMS * kp * XPI_AMX_TT));
      if (t >= n) continue;
    }
    for (int64_t c = 0; c < kp; c += 32) {
      __m512 lo = _mm512_setzero_ps(), hi = lo;
      if (t < n) {
        const int64_t m = cols - c;
        const __mmask16 k0 = m >= 16 ? 0xffff : m > 0 ? (__mmask16)((1u << m) - 1) : 0;
        const __mmask16 k1 = m >= 32 ? 0xffff : m > 16 ? (__mmask16)((1u << (m - 16)) - 1) : 0;
        const float *x = X + (rows ? rows[t] : t) * cols + c;
        lo = _mm512_maskz_loadu_ps(k0, x);
        hi = _mm512_maskz_loadu_ps(k1, x + 16);
      }
      for (int s = 0; s < XPI_AMX_BF16_TERMS; s++) {
        const __m512bh h = _mm512_cvtne2ps_pbh(hi, lo); /* columns c..c+31 in order */
        _Alignas(64) uint32_t pairs[16];
        _mm512_store_si512((void *)pairs, (__m512i)h);
        uint32_t *o = (uint32_t *)P + xpi_amx_bf16_at(n, cols, t, s, c / 2);
        for (int j = 0; j < 16; j++) o[j * XPI_AMX_TT] = pairs[j];
        if (s + 1 < XPI_AMX_BF16_TERMS) { /* the remainders (exact), for the next term */
          const __m512i hv = (__m512i)h;
          lo = _mm512_sub_ps(lo, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(hv)), 16)));
          hi = _mm512_sub_ps(hi, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(hv, 1)), 16)));
        }
      }
    }
  }
}

void xpi_amx_bf16_pack(void *P, const float *X, int32_t n, int64_t cols, int32_t t0, int32_t t1) {
  bf16_pack(P, X, NULL, n, cols, t0, t1);
}

void xpi_amx_bf16_pack_rows(void *P, const float *X, const int32_t *rows, int32_t n, int64_t cols, int32_t t0,
                            int32_t t1) {
  bf16_pack(P, X, rows, n, cols, t0, t1);
}

/* amx_layout.h's int8 layout: each token quantized as the other int8 GEMMs (xpi_quant_act_avx2, equal to the
 * scalar reference bit for bit), then 4-byte column groups stored to their rows of the B tile. Token t is row
 * rows[t] of X (NULL: row t), or of the form F (below: quantized already). The columns go in chunks of
 * I8_PACK_CHUNK through buffers on the stack (~5 KiB for 16 tokens: callers' threads may have small stacks): blocks
 * are quantized independently, so the chunks change no byte. */
#define I8_PACK_CHUNK 256

/* The form (cpu_kernels.h): a row's int8 quants (kp bytes) then its block scales (nb floats), 64-byte multiples. */
static size_t i8_form_bytes(int64_t cols) {
  return ((size_t)xpi_amx_kp(cols) + (size_t)xpi_q_nblocks(cols) * sizeof(float) + 63) & ~(size_t)63;
}

static void i8_quant_row(int8_t *xq, float *dx, const float *x, int64_t cols) {
  _Alignas(64) uint8_t xa[I8_PACK_CHUNK];
  float sx[I8_PACK_CHUNK / XPI_QK];
  for (int64_t c0 = 0; c0 < cols; c0 += I8_PACK_CHUNK)
    xpi_quant_act_avx2(xq + c0, xa, dx + c0 / XPI_QK, sx, x + c0,
                       cols - c0 < I8_PACK_CHUNK ? cols - c0 : I8_PACK_CHUNK);
}

static void i8_form(void *F, const float *X, int32_t n, int64_t cols) {
  const size_t fb = i8_form_bytes(cols);
  for (int32_t t = 0; t < n; t++) {
    int8_t *xq = (int8_t *)F + (size_t)t * fb; /* whole blocks: quant_act zero-pads the last one */
    i8_quant_row(xq, (float *)(xq + xpi_amx_kp(cols)), X + (int64_t)t * cols, cols);
  }
}

/* Whole panels of 16 tokens: each column chunk's 16 rows of quants (the form's, or quantized into L1 here) are
 * transposed in registers, 16 x 16 groups of 4 bytes, and stored a B-tile row (64 bytes) at a time; storing each
 * group alone, 64 bytes apart (the loop after it, for ragged ends), took 2.3% of a q8 MoE prefill. Same bytes. */
static void i8_pack(void *P, const float *X, const void *F, const int32_t *rows, int32_t n, int64_t cols, int32_t t0,
                    int32_t t1) {
  const int64_t te = t1 == n ? xpi_amx_np(n) : t1, nb = xpi_q_nblocks(cols), kp = xpi_amx_kp(cols);
  const size_t fb = i8_form_bytes(cols);
  _Alignas(64) int8_t xq[XPI_AMX_TT][I8_PACK_CHUNK];
  float dxt[XPI_AMX_TT][I8_PACK_CHUNK / XPI_QK];
  int64_t t = t0;
  for (; t % XPI_AMX_TT == 0 && t + XPI_AMX_TT <= te; t += XPI_AMX_TT) {
    uint32_t *panel = (uint32_t *)xpi_amx_i8_panel(P, cols, t / XPI_AMX_TT);
    float *dx = (float *)xpi_amx_i8_dx(P, n, cols, t / XPI_AMX_TT);
    for (int64_t c0 = 0; c0 < kp; c0 += I8_PACK_CHUNK) {
      const int64_t cw = kp - c0 < I8_PACK_CHUNK ? kp - c0 : I8_PACK_CHUNK, b0 = c0 / XPI_QK, nbc = cw / XPI_QK;
      const int8_t *q[XPI_AMX_TT];
      const float *d[XPI_AMX_TT];
      for (int i = 0; i < XPI_AMX_TT; i++) {
        const int64_t row = t + i < n ? (rows ? rows[t + i] : t + i) : -1; /* past n: zero padding */
        q[i] = xq[i], d[i] = dxt[i];
        if (row < 0) memset(xq[i], 0, (size_t)cw), memset(dxt[i], 0, (size_t)nbc * sizeof(float));
        else if (F) {
          const char *f = (const char *)F + (size_t)row * fb;
          q[i] = (const int8_t *)f + c0, d[i] = (const float *)(f + kp) + b0;
        } else
          i8_quant_row(xq[i], dxt[i], X + row * cols + c0, cols - c0 < cw ? cols - c0 : cw);
      }
      for (int64_t c = 0; c < cw; c += 64) { /* 16 groups (8 past a 32-column end) of the 16 tokens */
        const int full = cw - c >= 64;
        __m512 v[16];
        for (int i = 0; i < 16; i++) v[i] = _mm512_maskz_loadu_ps(full ? 0xffff : 0x00ff, q[i] + c);
        xpi_tr16(v); /* v[j] = group j of the 16 tokens */
        for (int j = 0; j < (full ? 16 : 8); j++)
          _mm512_storeu_ps((float *)(panel + ((c0 + c) / 4 + j) * XPI_AMX_TT), v[j]);
      }
      for (int64_t b = 0; b < nbc; b++)
        for (int i = 0; i < XPI_AMX_TT; i++) dx[(b0 + b) * XPI_AMX_TT + i] = d[i][b];
    }
  }
  for (; t < te; t++) { /* ragged ends: each token's groups to their places */
    uint32_t *panel = (uint32_t *)xpi_amx_i8_panel(P, cols, t / XPI_AMX_TT) + t % XPI_AMX_TT;
    float *dx = (float *)xpi_amx_i8_dx(P, n, cols, t / XPI_AMX_TT) + t % XPI_AMX_TT;
    const int64_t row = t < n ? (rows ? rows[t] : t) : -1;
    if (F && row >= 0) {
      const uint32_t *g = (const uint32_t *)((const char *)F + (size_t)row * fb);
      const float *db = (const float *)((const char *)g + kp);
      for (int64_t i = 0; i < nb * 8; i++) panel[i * XPI_AMX_TT] = g[i];
      for (int64_t b = 0; b < nb; b++) dx[b * XPI_AMX_TT] = db[b];
      continue;
    }
    for (int64_t c0 = 0; c0 < cols; c0 += I8_PACK_CHUNK) {
      const int64_t cw = cols - c0 < I8_PACK_CHUNK ? cols - c0 : I8_PACK_CHUNK, b0 = c0 / XPI_QK;
      const int64_t nbc = xpi_q_nblocks(cw);
      if (row >= 0) i8_quant_row(xq[0], dxt[0], X + row * cols + c0, cw);
      else memset(xq[0], 0, (size_t)nbc * XPI_QK), memset(dxt[0], 0, (size_t)nbc * sizeof(float));
      const uint32_t *g = (const uint32_t *)xq[0];
      for (int64_t i = 0; i < nbc * 8; i++) panel[(b0 * 8 + i) * XPI_AMX_TT] = g[i];
      for (int64_t b = 0; b < nbc; b++) dx[(b0 + b) * XPI_AMX_TT] = dxt[0][b];
    }
  }
}

void xpi_amx_i8_pack(void *P, const float *X, int32_t n, int64_t cols, int32_t t0, int32_t t1) {
  i8_pack(P, X, NULL, NULL, n, cols, t0, t1);
}

void xpi_amx_i8_pack_rows(void *P, const float *X, const int32_t *rows, int32_t n, int64_t cols, int32_t t0,
                          int32_t t1) {
  i8_pack(P, X, NULL, rows, n, cols, t0, t1);
}

static void i8_pack_form(void *P, const void *F, const int32_t *rows, int32_t n, int64_t cols, int32_t t0, int32_t t1) {
  i8_pack(P, NULL, F, rows, n, cols, t0, t1);
}

const xpi_cpu_form xpi_amx_i8_form = {i8_form_bytes, i8_form, i8_pack_form};

/* ------------------------------------------------------------------ bf16 prefill GEMM with vdpbf16ps */
/* vdpbf16ps multiplies pairs of bf16 and adds both products into f32 lanes: 32 multiply-adds an instruction, twice
 * an f32 FMA's. The activations are amx_layout.h's bf16 terms (panels of 16 tokens, column pairs, packed by
 * xpi_amx_bf16_pack above) for the same numerics as the AMX GEMM: XPI_AMX_BF16_TERMS terms, the activations
 * exact (one term, bf16 activations, moves the goldens' logits beyond their tolerance; amx_layout.h). Each term
 * is one more vdpbf16ps per pair: with two terms the multiply rate is an f32 FMA's, and it measured half the
 * AVX2 f32 GEMM's speed on a Xeon; so this is the forced avx512 table's kernel only (dispatch.c).
 * Weights: per panel of 16 rows, P[kk][16][2] bf16 (a zmm per column pair, lane i = row i: vdpbf16ps's first
 * operand), made with 16 x 16 transposes of 32-bit pairs. Microkernel: 16 rows x 16 tokens, one accumulator per
 * token, a broadcast of the token's pair per term. */
static void bf16_panel(uint32_t *P, const uint16_t *W, int64_t r, int nr, int64_t cols) {
  const int64_t kp = xpi_amx_kp(cols);
  for (int64_t c = 0; c < kp; c += 32) {
    const int64_t m = cols - c; /* columns left: a ragged last chunk is zero padded (never read past a row) */
    const __mmask32 k = m >= 32 ? 0xffffffffu : (__mmask32)((1u << m) - 1);
    __m512 v[16];
    for (int i = 0; i < 16; i++)
      v[i] = i < nr ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(k, W + (r + i) * cols + c)) : _mm512_setzero_ps();
    xpi_tr16(v); /* v[j] = column pair j of the 16 rows */
    for (int j = 0; j < 16; j++) _mm512_store_ps((float *)(P + (c / 2 + j) * 16), v[j]);
  }
}

/* A: a token panel, padded (compact = 0) or a compact tail (amx_layout.h; nt <= 10): the same sums either way. */
static inline __attribute__((always_inline)) void bf16_ukr(const uint32_t *P, const uint32_t *A, int64_t kp2, float *Y,
                                                           int64_t ldy, int nt, int nr, const int compact) {
  __m512 c[16];
  const int ntt = compact ? 2 * XPI_AMX_BF16_TAIL_PER : 16;
#pragma GCC unroll 16
  for (int t = 0; t < 16; t++) c[t] = _mm512_setzero_ps();
  for (int64_t kk = 0; kk < kp2; kk++) {
    const __m512bh w = (__m512bh)_mm512_load_si512((const void *)(P + kk * 16));
    for (int s = 0; s < XPI_AMX_BF16_TERMS; s++) {
#pragma GCC unroll 16
      for (int t = 0; t < ntt; t++) {
        const int64_t at = compact ? (xpi_amx_bf16_tail_slot(t) * kp2 + kk) * 16 + xpi_amx_bf16_tail_col(t, s)
                                   : (s * kp2 + kk) * 16 + t;
        c[t] = _mm512_dpbf16_ps(c[t], w, (__m512bh)_mm512_set1_epi32((int)A[at]));
      }
    }
  }
  const __mmask16 rm = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
  for (int t = 0; t < nt; t++) _mm512_mask_storeu_ps(Y + t * ldy, rm, c[t]);
}

static size_t bf16_scratch_bytes(int64_t cols) { return (size_t)xpi_amx_kp(cols) * 16 * sizeof(uint16_t); }

static void bf16_run(float *Y, int64_t ldy, const void *Pa, int32_t n, const void *W, const void *aux, int64_t cols,
                     int64_t r0, int64_t r1, int32_t t0, int32_t t1, void *scratch) {
  (void)aux;
  const int64_t kp2 = xpi_amx_kp(cols) / 2, tail = xpi_amx_bf16_tail_slots(n) ? n / 16 : -1;
  uint32_t *P = scratch;
  for (int64_t r = r0; r < r1; r += 16) {
    const int nr = r1 - r < 16 ? (int)(r1 - r) : 16;
    bf16_panel(P, W, r, nr, cols);
    for (int32_t t = t0; t < t1; t += 16) {
      const uint32_t *A = (const uint32_t *)xpi_amx_bf16_panel(Pa, cols, t / 16);
      const int nt = t1 - t < 16 ? t1 - t : 16;
      if (t / 16 == tail) bf16_ukr(P, A, kp2, Y + (int64_t)t * ldy + r, ldy, nt, nr, 1);
      else bf16_ukr(P, A, kp2, Y + (int64_t)t * ldy + r, ldy, nt, nr, 0);
    }
  }
}

static const xpi_cpu_gemm gemm_bf16 = {"avx512-bf16x" XPI_AMX_TERMS_STR, 16, 16, xpi_amx_bf16_pack_bytes,
                                       xpi_amx_bf16_pack, bf16_scratch_bytes, bf16_run, 8 * XPI_AMX_BF16_TERMS,
                                       xpi_amx_bf16_pack_rows, NULL};

/* ------------------------------------------------------------------ batched decode, float weights */
#define SMALLN(NAME, DT)                                                                                        \
  static void NAME(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux, int64_t r0,    \
                   int64_t r1, int64_t cols) {                                                                     \
    (void)aux;                                                                                                     \
    xpi_cpu_mm_smalln_avx512(DT, Y, ldy, X, n, W, r0, r1, cols);                                                   \
  }
SMALLN(smalln_f32, XPI_DT_F32)
SMALLN(smalln_f16, XPI_DT_F16)
SMALLN(smalln_bf16, XPI_DT_BF16)

/* ------------------------------------------------------------------ table */
XPI_GQ_GEMM(gemm_vnni, "avx512-int8", q256_ukr_q8, q256_ukr_q4)

static xpi_cpu_kernels k_avx512;
static pthread_once_t k_avx512_once = PTHREAD_ONCE_INIT;

/* Built once from the AVX2 table (a constant initializer cannot copy another table's pointers). Only called
 * on CPUs with AVX-512 (the copy may use ZMM registers). */
static void build_table(void) {
  k_avx512 = q256_table(xpi_cpu_kernels_avx2(), "avx512", gemv_q8, gemv_q4, &gemm_vnni_q8, &gemm_vnni_q4);
  k_avx512.gemm[XPI_DT_BF16] = &gemm_bf16;
  k_avx512.smalln[XPI_DT_F32] = smalln_f32;
  k_avx512.smalln[XPI_DT_F16] = smalln_f16;
  k_avx512.smalln[XPI_DT_BF16] = smalln_bf16;
  for (int dt = XPI_DT_F32; dt <= XPI_DT_BF16; dt++) k_avx512.smalln_max[dt] = XPI_CPU_SMALLN_MAX;
  /* q8/q4 batched decode: the GEMV, up to where the VNNI GEMM wins (mm_smalln.h) */
  k_avx512.smalln[XPI_DT_Q8] = gemv_q8, k_avx512.smalln_max[XPI_DT_Q8] = XPI_CPU_GEMV_MAX_AVX512_Q8;
  k_avx512.smalln[XPI_DT_Q4] = gemv_q4, k_avx512.smalln_max[XPI_DT_Q4] = XPI_CPU_GEMV_MAX_AVX512_Q4;
  k_avx512.smalln_isa = "avx512";
}

const xpi_cpu_kernels *xpi_cpu_kernels_avx512(void) {
  pthread_once(&k_avx512_once, build_table);
  return &k_avx512;
}
