/* AVX2 + FMA + F16C kernels for the CPU backend's table (cpu_kernels.h).
 *
 * Matmul has two paths:
 *  - decode (n < XPI_CPU_GEMM_MIN_N): streaming GEMV. Each weight row is read once from memory and used for
 *    all n tokens while it sits in L1; four rows are walked together so loads of x are shared and enough
 *    independent FMA chains hide latency. Q8/Q4 quantize the activations to int8 once per call and use
 *    exact int32 block dot products (maddubs; q256.h), as quant_format.h documents.
 *  - prefill (n >= XPI_CPU_GEMM_MIN_N): blocked GEMM (see "prefill GEMM" below), in the phases of
 *    cpu_kernels.h's xpi_cpu_gemm. The activations are packed once per matmul, shared by all threads; each panel of 16 weight rows x KC columns is converted (bf16/f16 -> f32, once per
 *    matmul) into a column-major panel while a 6x16 register-blocked microkernel sweeps all tokens over it,
 *    and the next panel is prefetched meanwhile. About 80% of the FMA peak of one Zen 3
 *    core on the Qwen3-0.6B shapes with bf16 weights (~70 of 85-93 GFLOP/s; the microkernel alone 97%).
 *    Q8/Q4 weights run the same blocking in int8 instead (gemm_q_avx2.c).
 */
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/gemm_q.h"
#include "ops/cpu/mm_smalln.h"
#include "ops/cpu/quant.h"
#include "ops/cpu/simd_avx2.h"

#define KC 1024  /* columns per packed panel (16 x 1024 f32 = 64 KiB, in L2): see "prefill GEMM" */
#define NR 16    /* weight rows per panel = two ymm */
#define MR 6     /* tokens per microkernel call: 12 accumulators */
#define RG 128   /* weight rows whose outputs stay in L2 while K is walked in KC chunks */


/* 8 weights -> f32 */
static inline __m256 ld8_f32(const void *p) { return _mm256_loadu_ps((const float *)p); }
static inline __m256 ld8_bf16(const void *p) {
  __m128i h = _mm_loadu_si128((const __m128i *)p);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
static inline __m256 ld8_f16(const void *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

static inline float ld1_f32(const void *p, int64_t i) { float f; memcpy(&f, (const char *)p + 4 * i, 4); return f; }
static inline float ld1_bf16(const void *p, int64_t i) {
  uint16_t h; memcpy(&h, (const char *)p + 2 * i, 2); return xpi_bf16_to_f32(h);
}
static inline float ld1_f16(const void *p, int64_t i) {
  uint16_t h; memcpy(&h, (const char *)p + 2 * i, 2); return _cvtsh_ss(h);
}

/* ------------------------------------------------------------------ decode GEMV for f32/f16/bf16 weights */
/* Y[t*ldy + r] = dot(W[r, :], X[t, :]) for r0 <= r < r1, t < n. ES = element size. One row at a time: one
 * sequential stream (interleaving adjacent rows, which share a page, halved the bandwidth). The bf16 GEMV
 * below reads four far-apart rows instead, which is faster still; f32/f16 weights and the bf16 fallback keep
 * this simpler loop. */
#define DEF_GEMV(NAME, ES, LD8, LD1)                                                                           \
  static void NAME(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, int64_t r0, int64_t r1,     \
                   int64_t cols) {                                                                             \
    const char *base = (const char *)W;                                                                        \
    for (int64_t r = r0; r < r1; r++) {                                                                        \
      const char *w0 = base + r * cols * ES;                                                                   \
      for (int32_t t = 0; t < n; t++) {                                                                        \
        const float *x = X + (int64_t)t * cols;                                                                \
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                                            \
        int64_t c = 0;                                                                                         \
        for (; c + 32 <= cols; c += 32) {                                                                      \
          a0 = _mm256_fmadd_ps(LD8(w0 + c * ES), _mm256_loadu_ps(x + c), a0);                                  \
          a1 = _mm256_fmadd_ps(LD8(w0 + (c + 8) * ES), _mm256_loadu_ps(x + c + 8), a1);                        \
          a2 = _mm256_fmadd_ps(LD8(w0 + (c + 16) * ES), _mm256_loadu_ps(x + c + 16), a2);                      \
          a3 = _mm256_fmadd_ps(LD8(w0 + (c + 24) * ES), _mm256_loadu_ps(x + c + 24), a3);                      \
        }                                                                                                      \
        for (; c + 8 <= cols; c += 8) a0 = _mm256_fmadd_ps(LD8(w0 + c * ES), _mm256_loadu_ps(x + c), a0);      \
        float s0 = xpi_hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));                         \
        for (; c < cols; c++) s0 += LD1(w0, c) * x[c];                                                         \
        Y[(int64_t)t * ldy + r] = s0;                                                                          \
      }                                                                                                        \
    }                                                                                                          \
  }

DEF_GEMV(gemv_f32, 4, ld8_f32, ld1_f32)
DEF_GEMV(gemv_bf16_plain, 2, ld8_bf16, ld1_bf16)
DEF_GEMV(gemv_f16, 2, ld8_f16, ld1_f16)

/* bf16 decode without any lane-crossing conversion: a 32-byte load holds 16 bf16, and in 32-bit lane j the
 * elements 2j (low half) and 2j+1 (high half). (v << 16) is then exactly element 2j as f32 and
 * (v & 0xffff0000) element 2j+1, so x is permuted once per call into [8 even | 8 odd] per 16 columns and
 * each 16 weights cost one load, a shift, an and and two FMAs.
 *
 * Four streams: the slice [r0, r1) is cut into four equal parts and rows r, r+h, r+2h, r+3h are read in lock
 * step. A core's read bandwidth here is bounded by the misses it keeps in flight, and the hardware prefetcher
 * follows one stream per page: four far-apart streams keep more lines coming than one. Measured on a
 * 384 MB bf16 stream, 2 threads (Zen 3 VM): one row at a time 15.9-17.0 GB/s, four streams 19.1-26.7 GB/s,
 * a plain sum of the same bytes 17.9-18.7. (Rows next to each other do not count: both streams then share a
 * page and read as one irregular pattern, 10-12 GB/s.) Each stream also prefetches GEMV_PF bytes ahead. */
#define EO_MAXC 4096 /* columns whose permuted x fits the stack buffer */
#define GEMV_PF 256 /* bytes ahead per stream (farther measured no better) */

/* One 16-column step of row w: even columns into ae, odd ones into ao (x0/x1: x permuted as above). */
#define BF16_STEP(w, c, x0, x1, ae, ao)                                                                    \
  do {                                                                                                     \
    const __m256i v_ = _mm256_loadu_si256((const __m256i *)((w) + (c)));                                  \
    ae = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(v_, 16)), x0, ae);                        \
    ao = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(v_, hi)), x1, ao);                          \
  } while (0)

/* Y[t*ldy + rows[i]] for the 4 rows w[i] (nr = 4) or one row (nr = 1), every token. */
static inline void bf16_rows(float *Y, int64_t ldy, const float *X, int32_t n, const float *xp, int64_t xs,
                             const uint16_t *const *w, const int64_t *rows, int nr, int64_t cols) {
  const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
  const int64_t c16 = cols & ~(int64_t)15;
  for (int32_t t = 0; t < n; t++) {
    const float *x = xp + t * xs;
    float s[4];
    if (nr == 4) {
      __m256 e0 = _mm256_setzero_ps(), o0 = e0, e1 = e0, o1 = e0, e2 = e0, o2 = e0, e3 = e0, o3 = e0;
      int64_t c = 0;
      for (; c + 32 <= c16; c += 32) {
        if (t == 0)
          for (int i = 0; i < 4; i++) _mm_prefetch((const char *)(w[i] + c) + GEMV_PF, _MM_HINT_T0);
        for (int64_t u = c; u < c + 32; u += 16) {
          const __m256 x0 = _mm256_load_ps(x + u), x1 = _mm256_load_ps(x + u + 8);
          BF16_STEP(w[0], u, x0, x1, e0, o0);
          BF16_STEP(w[1], u, x0, x1, e1, o1);
          BF16_STEP(w[2], u, x0, x1, e2, o2);
          BF16_STEP(w[3], u, x0, x1, e3, o3);
        }
      }
      for (; c < c16; c += 16) {
        const __m256 x0 = _mm256_load_ps(x + c), x1 = _mm256_load_ps(x + c + 8);
        BF16_STEP(w[0], c, x0, x1, e0, o0);
        BF16_STEP(w[1], c, x0, x1, e1, o1);
        BF16_STEP(w[2], c, x0, x1, e2, o2);
        BF16_STEP(w[3], c, x0, x1, e3, o3);
      }
      s[0] = xpi_hsum8(_mm256_add_ps(e0, o0)), s[1] = xpi_hsum8(_mm256_add_ps(e1, o1));
      s[2] = xpi_hsum8(_mm256_add_ps(e2, o2)), s[3] = xpi_hsum8(_mm256_add_ps(e3, o3));
    } else {
      __m256 e0 = _mm256_setzero_ps(), o0 = e0, e1 = e0, o1 = e0;
      int64_t c = 0;
      for (; c + 32 <= c16; c += 32) {
        if (t == 0) _mm_prefetch((const char *)(w[0] + c) + GEMV_PF, _MM_HINT_T0);
        const __m256 x0 = _mm256_load_ps(x + c), x1 = _mm256_load_ps(x + c + 8);
        const __m256 x2 = _mm256_load_ps(x + c + 16), x3 = _mm256_load_ps(x + c + 24);
        BF16_STEP(w[0], c, x0, x1, e0, o0);
        BF16_STEP(w[0], c + 16, x2, x3, e1, o1);
      }
      for (; c < c16; c += 16) {
        const __m256 x0 = _mm256_load_ps(x + c), x1 = _mm256_load_ps(x + c + 8);
        BF16_STEP(w[0], c, x0, x1, e0, o0);
      }
      s[0] = xpi_hsum8(_mm256_add_ps(_mm256_add_ps(e0, o0), _mm256_add_ps(e1, o1)));
    }
    const float *xo = X + (int64_t)t * cols;
    for (int i = 0; i < nr; i++) {
      for (int64_t c = c16; c < cols; c++) s[i] += ld1_bf16(w[i], c) * xo[c]; /* rows may be unaligned */
      Y[(int64_t)t * ldy + rows[i]] = s[i];
    }
  }
}
#undef BF16_STEP

static void gemv_bf16(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, int64_t r0, int64_t r1,
                      int64_t cols) {
  _Alignas(32) float xbuf[XPI_CPU_GEMM_MIN_N * EO_MAXC];
  const int64_t c16 = cols & ~(int64_t)15;
  float *xp = xbuf, *heap = NULL; /* wider rows (large models' down_proj) take the permuted x from the heap */
  if (n > XPI_CPU_GEMM_MIN_N ||
      (cols > EO_MAXC && !(xp = heap = aligned_alloc(32, (size_t)n * (size_t)c16 * sizeof(float) + 32)))) {
    gemv_bf16_plain(Y, ldy, X, n, W, r0, r1, cols);
    return;
  }
  for (int32_t t = 0; t < n; t++) {
    const float *x = X + (int64_t)t * cols;
    for (int64_t c = 0; c < c16; c += 16) {
      __m256 a = _mm256_loadu_ps(x + c), b = _mm256_loadu_ps(x + c + 8);
      __m256 e = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xd8));
      __m256 o = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xdd)), 0xd8));
      _mm256_store_ps(xp + t * c16 + c, e);
      _mm256_store_ps(xp + t * c16 + c + 8, o);
    }
  }
  const uint16_t *base = (const uint16_t *)W;
  const int64_t h = (r1 - r0) / 4; /* rows per stream; the last (r1 - r0) % 4 rows go one at a time */
  for (int64_t i = 0; i < h; i++) {
    const int64_t rows[4] = {r0 + i, r0 + h + i, r0 + 2 * h + i, r0 + 3 * h + i};
    const uint16_t *w[4] = {base + rows[0] * cols, base + rows[1] * cols, base + rows[2] * cols, base + rows[3] * cols};
    bf16_rows(Y, ldy, X, n, xp, c16, w, rows, 4, cols);
  }
  for (int64_t r = r0 + 4 * h; r < r1; r++) {
    const uint16_t *w[1] = {base + r * cols};
    bf16_rows(Y, ldy, X, n, xp, c16, w, &r, 1, cols);
  }
  free(heap);
}

/* ------------------------------------------------------------------ decode GEMV for q8/q4 weights */
/* Activation blocks of 32 floats -> int8 (xpi_quantize_act_scalar's codes: x * s * (127 / (amax * s)), s from
 * xpi_quant_act_prescale, rounded to nearest even by cvtps under the default MXCSR). xq gets |q| in xa for the
 * q8 sign trick. Every table's int8 paths quantize here, so their codes are the scalar table's. */
void xpi_quant_act_avx2(int8_t *xq, uint8_t *xa, float *dx, float *sx, const float *x, int64_t cols) {
  const __m256 signbit = _mm256_set1_ps(-0.0f);
  const int64_t nb = xpi_q_nblocks(cols);
  for (int64_t b = 0; b < nb; b++) {
    float tmp[XPI_QK];
    const float *p = x + b * XPI_QK;
    if ((b + 1) * XPI_QK > cols) {
      int64_t k = cols - b * XPI_QK;
      memset(tmp, 0, sizeof tmp);
      memcpy(tmp, p, (size_t)k * sizeof(float));
      p = tmp;
    }
    __m256 v0 = _mm256_loadu_ps(p), v1 = _mm256_loadu_ps(p + 8), v2 = _mm256_loadu_ps(p + 16),
           v3 = _mm256_loadu_ps(p + 24);
    __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(signbit, v0), _mm256_andnot_ps(signbit, v1)),
                             _mm256_max_ps(_mm256_andnot_ps(signbit, v2), _mm256_andnot_ps(signbit, v3)));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4), ps = xpi_quant_act_prescale(amax);
    float as = amax; /* amax * ps, without a multiply ahead of the division on the common path */
    if (ps != 1.0f) { /* a tiny block: scaled exactly, so that 127 / amax stays finite */
      const __m256 vs = _mm256_set1_ps(ps);
      v0 = _mm256_mul_ps(v0, vs), v1 = _mm256_mul_ps(v1, vs), v2 = _mm256_mul_ps(v2, vs), v3 = _mm256_mul_ps(v3, vs);
      as = amax * ps;
    }
    const float id = as > 0 ? 127.0f / as : 0.0f;
    const __m256 vid = _mm256_set1_ps(id);
    __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(v0, vid)), i1 = _mm256_cvtps_epi32(_mm256_mul_ps(v1, vid));
    __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(v2, vid)), i3 = _mm256_cvtps_epi32(_mm256_mul_ps(v3, vid));
    __m256i s = _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
    /* packs interleave 128-bit lanes; the permute restores element order */
    __m256i q = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
    q = _mm256_permutevar8x32_epi32(q, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)(xq + b * XPI_QK), q);
    _mm256_storeu_si256((__m256i *)(xa + b * XPI_QK), _mm256_sign_epi8(q, q));
    dx[b] = amax / 127.0f;
    sx[b] = dx[b] * (float)_mm_cvtsi128_si32(s4);
  }
}

/* The q8/q4 decode GEMV (maddubs flavour of q256.h). */
#include "ops/cpu/q256.h"

/* ------------------------------------------------------------------ prefill GEMM */
/* Goto/BLIS-style blocking. The n activation rows are packed once per call into MR-token panels
 * A[k*MR + t] (the microkernel's broadcasts then walk one sequential stream), and each panel of NR weight
 * rows x KC columns is converted to f32 once (8x8 register transposes) into P[k*NR + i] while the 6x16
 * microkernel sweeps all tokens over it. KC is long (whole rows up to 1024) although the panel then sits in
 * L2 rather than L1 and the activation chunk spills L2: each further chunk adds its partial sums into Y,
 * and those passes cost more. Measured at 512 tokens against KC = 256: 1.07-1.12x with 512 and
 * 1.11-1.12x with 1024 (1.06x over 512), as gemm_q_avx2.c found for the int8 GEMM. */

/* Converts rows [r, r+nr) x cols [c0, c0+kc) of W to f32 rows R[i*KC + k]. */
typedef void (*rows_fn)(float *R, const void *W, const void *aux, int64_t r, int nr, int64_t c0, int64_t kc,
                        int64_t cols);

#define DEF_ROWS(NAME, ES, LD8, LD1)                                                                   \
  static void NAME(float *R, const void *W, const void *aux, int64_t r, int nr, int64_t c0, int64_t kc, \
                   int64_t cols) {                                                                     \
    (void)aux;                                                                                         \
    for (int i = 0; i < nr; i++) {                                                                     \
      const char *w = (const char *)W + ((r + i) * cols + c0) * ES;                                    \
      float *o = R + i * KC;                                                                           \
      int64_t k = 0;                                                                                   \
      for (; k + 8 <= kc; k += 8) _mm256_store_ps(o + k, LD8(w + k * ES));                             \
      for (; k < kc; k++) o[k] = LD1(w, k);                                                            \
    }                                                                                                  \
  }
DEF_ROWS(rows_f32, 4, ld8_f32, ld1_f32)
DEF_ROWS(rows_bf16, 2, ld8_bf16, ld1_bf16)
DEF_ROWS(rows_f16, 2, ld8_f16, ld1_f16)

/* P[k*NR + i] = R[i*KC + k] for k < kc rounded up to 8; rows i >= nr and columns k >= kc are zero. */
static void pack_b(float *P, float *R, int nr, int64_t kc) {
  const int64_t k8 = (kc + 7) & ~(int64_t)7;
  for (int i = 0; i < NR; i++) {
    if (i >= nr) memset(R + i * KC, 0, (size_t)k8 * sizeof(float));
    else if (kc < k8) memset(R + i * KC + kc, 0, (size_t)(k8 - kc) * sizeof(float));
  }
  for (int64_t k = 0; k < k8; k += 8)
    for (int h = 0; h < NR; h += 8) {
      __m256 v[8];
      for (int j = 0; j < 8; j++) v[j] = _mm256_load_ps(R + (h + j) * KC + k);
      xpi_tr8(v);
      for (int j = 0; j < 8; j++) _mm256_store_ps(P + (k + j) * NR + h, v[j]);
    }
}

/* Dense weights of a full panel (NR rows, kc a multiple of 8) straight into P: 8 elements of 8 rows are
 * loaded, converted and transposed in registers, skipping the row buffer. */
typedef void (*direct_fn)(float *P, const void *W, int64_t r, int64_t c0, int64_t kc, int64_t cols);
#define DEF_DIRECT(NAME, ES, LD8)                                                                      \
  static void NAME(float *P, const void *W, int64_t r, int64_t c0, int64_t kc, int64_t cols) {         \
    const char *w = (const char *)W + (r * cols + c0) * ES;                                            \
    for (int64_t k = 0; k < kc; k += 8)                                                                \
      for (int h = 0; h < NR; h += 8) {                                                                \
        __m256 v[8];                                                                                   \
        for (int j = 0; j < 8; j++) v[j] = LD8(w + ((h + j) * cols + k) * ES);                        \
        xpi_tr8(v);                                                                                    \
        for (int j = 0; j < 8; j++) _mm256_store_ps(P + (k + j) * NR + h, v[j]);                       \
      }                                                                                                \
  }
DEF_DIRECT(direct_f32, 4, ld8_f32)
DEF_DIRECT(direct_bf16, 2, ld8_bf16)
DEF_DIRECT(direct_f16, 2, ld8_f16)

/* A[(t/MR)*kc*MR + k*MR + t%MR] = X[t, k] for k < kc and tokens [t0, t1) (t0 a multiple of MR); when t1 == n
 * the padding tokens of the last panel are zeroed too. */
static void pack_a(float *A, const float *X, int64_t ldx, int32_t n, int64_t kc, int32_t t0, int32_t t1) {
  const int32_t te = t1 == n ? (n + MR - 1) / MR * MR : t1;
  for (int32_t t = t0; t < te; t++) {
    float *a = A + (int64_t)(t / MR) * kc * MR + t % MR;
    if (t >= n) {
      for (int64_t k = 0; k < kc; k++) a[k * MR] = 0;
      continue;
    }
    const float *x = X + (int64_t)t * ldx;
    for (int64_t k = 0; k < kc; k++) a[k * MR] = x[k];
  }
}

/* Y[t, 0..nr) (+)= A-panel (MR tokens x kc) @ P (kc x NR) for t < nt. */
static void ukr(const float *A, const float *P, int64_t kc, float *Y, int64_t ldy, int nt, int nr, int accumulate) {
  if (accumulate) /* the partial sums are read back after the k loop: fetch them meanwhile (they are in L2) */
    for (int t = 0; t < nt; t++) {
      _mm_prefetch((const char *)(Y + t * ldy), _MM_HINT_T0);
      _mm_prefetch((const char *)(Y + t * ldy + NR - 1), _MM_HINT_T0);
    }
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
         c40 = c00, c41 = c00, c50 = c00, c51 = c00;
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; k++) {
    const __m256 p0 = _mm256_load_ps(P + k * NR), p1 = _mm256_load_ps(P + k * NR + 8);
    const float *a = A + k * MR;
    __m256 x;
    x = _mm256_broadcast_ss(a + 0); c00 = _mm256_fmadd_ps(x, p0, c00); c01 = _mm256_fmadd_ps(x, p1, c01);
    x = _mm256_broadcast_ss(a + 1); c10 = _mm256_fmadd_ps(x, p0, c10); c11 = _mm256_fmadd_ps(x, p1, c11);
    x = _mm256_broadcast_ss(a + 2); c20 = _mm256_fmadd_ps(x, p0, c20); c21 = _mm256_fmadd_ps(x, p1, c21);
    x = _mm256_broadcast_ss(a + 3); c30 = _mm256_fmadd_ps(x, p0, c30); c31 = _mm256_fmadd_ps(x, p1, c31);
    x = _mm256_broadcast_ss(a + 4); c40 = _mm256_fmadd_ps(x, p0, c40); c41 = _mm256_fmadd_ps(x, p1, c41);
    x = _mm256_broadcast_ss(a + 5); c50 = _mm256_fmadd_ps(x, p0, c50); c51 = _mm256_fmadd_ps(x, p1, c51);
  }
  __m256 cs[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  for (int t = 0; t < nt; t++) {
    float *y = Y + t * ldy;
    if (nr == NR) {
      if (accumulate) {
        cs[t][0] = _mm256_add_ps(cs[t][0], _mm256_loadu_ps(y));
        cs[t][1] = _mm256_add_ps(cs[t][1], _mm256_loadu_ps(y + 8));
      }
      _mm256_storeu_ps(y, cs[t][0]);
      _mm256_storeu_ps(y + 8, cs[t][1]);
    } else {
      float tmp[NR];
      _mm256_storeu_ps(tmp, cs[t][0]);
      _mm256_storeu_ps(tmp + 8, cs[t][1]);
      for (int i = 0; i < nr; i++) y[i] = accumulate ? y[i] + tmp[i] : tmp[i];
    }
  }
}

/* Where row segments of W live, so the next panel can be prefetched while the current one is swept: a panel
 * is NR short row segments a page or more apart, which the hardware prefetcher does not fetch ahead. */
typedef struct {
  const char *q;  /* data */
  int64_t stride; /* bytes per row */
  int es;         /* bytes per element */
} wlayout;

typedef struct {
  const wlayout *L;
  int64_t r, c0, kc; /* the panel to fetch */
  int nr, i;         /* next row of it */
  int64_t off;       /* next byte offset in that row */
} pf_cursor;

/* Issues up to `lines` prefetches of the cursor's panel. */
static void pf_step(pf_cursor *c, int lines) {
  const wlayout *L = c->L;
  while (lines > 0 && c->i < c->nr) {
    const int64_t row = c->r + c->i;
    const char *p = L->q + row * L->stride + c->c0 * L->es;
    const int64_t len = c->kc * L->es;
    for (; c->off < len && lines > 0; c->off += 64, lines--) _mm_prefetch(p + c->off, _MM_HINT_T0);
    if (c->off >= len) c->i++, c->off = 0;
  }
}

/* Tokens [t0, t1) (t0 a multiple of MR) of the product from the packed activations A (all tokens, whole rows),
 * with panel buffers R and P (NR x KC each). Loop order: groups of RG weight rows, then KC-column chunks, then
 * NR-row panels, then MR-token panels, so that the group's outputs stay in L2 while its chunks are walked. */
static void gemm_block(rows_fn rows, direct_fn direct, const wlayout *L, const float *A, float *R, float *P,
                       float *Y, int64_t ldy, int32_t t0, int32_t t1, const void *W, const void *aux, int64_t r0,
                       int64_t r1, int64_t cols) {
  const int sweeps = (t1 - t0 + MR - 1) / MR;
  for (int64_t g = r0; g < r1; g += RG) {
    const int64_t g1 = r1 - g < RG ? r1 : g + RG;
    for (int64_t c0 = 0; c0 < cols; c0 += KC) {
      const int64_t kc = cols - c0 < KC ? cols - c0 : KC;
      for (int64_t r = g; r < g1; r += NR) {
        const int nr = g1 - r < NR ? (int)(g1 - r) : NR;
        if (direct && nr == NR && (kc & 7) == 0) direct(P, W, r, c0, kc, cols);
        else {
          rows(R, W, aux, r, nr, c0, kc, cols);
          pack_b(P, R, nr, kc);
        }
        /* the panel after this one: next rows of the group, else the group's first rows at the next chunk,
         * else the next group's first rows at chunk 0 */
        pf_cursor pc = {L, r + NR, c0, kc, 0, 0, 0};
        if (pc.r >= g1) {
          pc.r = g, pc.c0 = c0 + KC;
          if (pc.c0 >= cols) pc.r = g1, pc.c0 = 0;
          pc.kc = cols - pc.c0 < KC ? cols - pc.c0 : KC;
        }
        const int64_t pe = pc.r >= g1 && pc.c0 == 0 ? r1 : g1;
        pc.nr = pc.r < pe ? (pe - pc.r < NR ? (int)(pe - pc.r) : NR) : 0;
        const int per = (int)((pc.nr * (pc.kc * L->es / 64 + 2)) / sweeps + 1);
        for (int32_t t = t0; t < t1; t += MR) {
          const int nt = t1 - t < MR ? t1 - t : MR;
          pf_step(&pc, per);
          ukr(A + (int64_t)t * cols + c0 * MR, P, kc, Y + (int64_t)t * ldy + r, ldy, nt, nr, c0 > 0);
        }
      }
    }
  }
}

/* ------------------------------------------------------------------ table entries */

/* The f32 GEMM in cpu_kernels.h's phases: P = the activations packed in MR-token panels (whole rows), the
 * scratch = the R and P panel buffers. */
static size_t f32_pack_bytes(int32_t n, int64_t cols) {
  const size_t np = ((size_t)n + MR - 1) / MR * MR;
  if ((size_t)cols > SIZE_MAX / 8 / np) return SIZE_MAX;
  return np * (size_t)cols * sizeof(float);
}
static void f32_pack(void *P, const float *X, int32_t n, int64_t cols, int32_t t0, int32_t t1) {
  pack_a(P, X, cols, n, cols, t0, t1);
}
static size_t f32_scratch_bytes(int64_t cols) {
  (void)cols;
  return 2 * NR * KC * sizeof(float);
}
#define DEF_GEMM(NAME, DT, ROWS, DIRECT)                                                                        \
  static void NAME##_run(float *Y, int64_t ldy, const void *P, int32_t n, const void *W, const void *aux,        \
                         int64_t cols, int64_t r0, int64_t r1, int32_t t0, int32_t t1, void *S) {               \
    (void)n;                                                                                                    \
    const int es = DT == XPI_DT_F32 ? 4 : 2;                                                                    \
    const wlayout L = {W, cols * es, es};                                                                       \
    gemm_block(ROWS, DIRECT, &L, P, S, (float *)S + NR * KC, Y, ldy, t0, t1, W, aux, r0, r1, cols);            \
  }                                                                                                             \
  static const xpi_cpu_gemm NAME = {"avx2-f32", MR, NR, f32_pack_bytes, f32_pack, f32_scratch_bytes,            \
                                    NAME##_run, 0, NULL, NULL};
DEF_GEMM(gemm_f32, XPI_DT_F32, rows_f32, direct_f32)
DEF_GEMM(gemm_bf16, XPI_DT_BF16, rows_bf16, direct_bf16)
DEF_GEMM(gemm_f16, XPI_DT_F16, rows_f16, direct_f16)
XPI_GQ_GEMM(gemm_i8, "avx2-int8", xpi_gq_ukr_avx2_q8, xpi_gq_ukr_avx2_q4)

static void gemv_f32_t(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux, int64_t r0,
                       int64_t r1, int64_t cols) {
  (void)aux;
  gemv_f32(Y, ldy, X, n, W, r0, r1, cols);
}
static void gemv_f16_t(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux, int64_t r0,
                       int64_t r1, int64_t cols) {
  (void)aux;
  gemv_f16(Y, ldy, X, n, W, r0, r1, cols);
}
static void gemv_bf16_t(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux,
                        int64_t r0, int64_t r1, int64_t cols) {
  (void)aux;
  gemv_bf16(Y, ldy, X, n, W, r0, r1, cols);
}
Q256_GEMV(gemv, q256_prep, q256_row, q256_rows)

/* ------------------------------------------------------------------ vector kernels */
static float dot_avx2(const float *a, const float *b, int64_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  float s = xpi_hsum8(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  for (; i < n; i++) s += a[i] * b[i];
  return s;
}

static void axpy_avx2(float *y, float a, const float *x, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; i++) y[i] += a * x[i];
}

static void scale_avx2(float *y, float a, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(va, _mm256_loadu_ps(y + i)));
  for (; i < n; i++) y[i] *= a;
}

static void rmsnorm_row_avx2(float *out, const float *x, const void *w, xpi_dtype wdt, int64_t d, float eps) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0;
  int64_t i = 0;
  for (; i + 16 <= d; i += 16) {
    __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
    s0 = _mm256_fmadd_ps(a, a, s0);
    s1 = _mm256_fmadd_ps(b, b, s1);
  }
  for (; i + 8 <= d; i += 8) { __m256 a = _mm256_loadu_ps(x + i); s0 = _mm256_fmadd_ps(a, a, s0); }
  float ss = xpi_hsum8(_mm256_add_ps(s0, s1));
  for (; i < d; i++) ss += x[i] * x[i];
  const float r = 1.0f / sqrtf(ss / (float)d + eps);
  const __m256 vr = _mm256_set1_ps(r);
  for (i = 0; i + 8 <= d; i += 8) {
    __m256 wv = wdt == XPI_DT_BF16 ? ld8_bf16((const uint16_t *)w + i)
              : wdt == XPI_DT_F16  ? ld8_f16((const uint16_t *)w + i)
                                   : ld8_f32((const float *)w + i);
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vr), wv));
  }
  for (; i < d; i++) {
    float wv = wdt == XPI_DT_BF16 ? ld1_bf16(w, i) : wdt == XPI_DT_F16 ? ld1_f16(w, i) : ld1_f32(w, i);
    out[i] = x[i] * r * wv;
  }
}

static void swiglu_avx2(float *out, const float *gate, const float *up, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f), neg = _mm256_set1_ps(-0.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 g = _mm256_loadu_ps(gate + i);
    __m256 s = _mm256_div_ps(g, _mm256_add_ps(one, xpi_exp8(_mm256_xor_ps(g, neg))));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(s, _mm256_loadu_ps(up + i)));
  }
  for (; i < n; i++) out[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

/* As the scalar geglu with the vector tanh (within ~4 u absolutely, simd_avx2.h). */
static void geglu_avx2(float *out, const float *gate, const float *up, int64_t n) {
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f), c0 = _mm256_set1_ps(0.7978845608028654f),
               c1 = _mm256_set1_ps(0.044715f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 inner = _mm256_mul_ps(c0, _mm256_add_ps(g, _mm256_mul_ps(c1, _mm256_mul_ps(_mm256_mul_ps(g, g), g))));
    const __m256 y = _mm256_mul_ps(_mm256_mul_ps(half, g), _mm256_add_ps(one, xpi_tanh8(inner)));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(y, _mm256_loadu_ps(up + i)));
  }
  for (; i < n; i++) {
    const float g = gate[i], inner = 0.7978845608028654f * (g + 0.044715f * g * g * g);
    out[i] = 0.5f * g * (1.0f + tanhf(inner)) * up[i];
  }
}

static void softcap_avx2(float *x, int64_t n, float cap) {
  const __m256 vc = _mm256_set1_ps(cap);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_mul_ps(vc, xpi_tanh8(_mm256_div_ps(_mm256_loadu_ps(x + i), vc))));
  for (; i < n; i++) x[i] = cap * tanhf(x[i] / cap);
}

/* f16 by F16C with round to nearest even (subnormals and overflow to inf as the scalar); bf16 by the scalar's
 * integer rounding, 8 at a time, NaN kept quiet the same way ((u | 0x400000) >> 16 == (u >> 16) | 0x40). */
static void to_half_avx2(uint16_t *dst, const float *src, int64_t n, xpi_dtype dt) {
  int64_t i = 0;
  if (dt == XPI_DT_F16) {
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  } else {
    const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1), abs = _mm256_set1_epi32(0x7fffffff),
                  inf = _mm256_set1_epi32(0x7f800000), quiet = _mm256_set1_epi32(0x400000);
    for (; i + 8 <= n; i += 8) {
      const __m256i u = _mm256_loadu_si256((const __m256i *)(src + i));
      const __m256i rnd = _mm256_add_epi32(u, _mm256_add_epi32(bias, _mm256_and_si256(_mm256_srli_epi32(u, 16), one)));
      const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
      const __m256i v = _mm256_srli_epi32(_mm256_blendv_epi8(rnd, _mm256_or_si256(u, quiet), nan), 16);
      const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(v, v), 0x08); /* 16-bit halves in order */
      _mm_storeu_si128((__m128i *)(dst + i), _mm256_castsi256_si128(p));
    }
  }
  for (; i < n; i++) dst[i] = dt == XPI_DT_F16 ? xpi_f32_to_f16(src[i]) : xpi_f32_to_bf16(src[i]);
}

#define SMALLN(NAME, DT)                                                                                        \
  static void NAME(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux, int64_t r0,    \
                   int64_t r1, int64_t cols) {                                                                     \
    (void)aux;                                                                                                     \
    xpi_cpu_mm_smalln_avx2(DT, Y, ldy, X, n, W, r0, r1, cols);                                                     \
  }
SMALLN(smalln_f32, XPI_DT_F32)
SMALLN(smalln_f16, XPI_DT_F16)
SMALLN(smalln_bf16, XPI_DT_BF16)

static const xpi_cpu_kernels k_avx2 = {
  .isa = "avx2",
  .gemv = {[XPI_DT_F32] = gemv_f32_t, [XPI_DT_F16] = gemv_f16_t, [XPI_DT_BF16] = gemv_bf16_t, [XPI_DT_Q8] = gemv_q8,
           [XPI_DT_Q4] = gemv_q4},
  .gemm = {[XPI_DT_F32] = &gemm_f32, [XPI_DT_F16] = &gemm_f16, [XPI_DT_BF16] = &gemm_bf16, [XPI_DT_Q8] = &gemm_i8_q8,
           [XPI_DT_Q4] = &gemm_i8_q4},
  .gemv_isa = {[XPI_DT_F32] = "avx2", [XPI_DT_F16] = "avx2", [XPI_DT_BF16] = "avx2", [XPI_DT_Q8] = "avx2",
               [XPI_DT_Q4] = "avx2"},
  .smalln = {[XPI_DT_F32] = smalln_f32, [XPI_DT_F16] = smalln_f16, [XPI_DT_BF16] = smalln_bf16},
  .smalln_max = {[XPI_DT_F32] = XPI_CPU_SMALLN_MAX_AVX2, [XPI_DT_F16] = XPI_CPU_SMALLN_MAX_AVX2,
                 [XPI_DT_BF16] = XPI_CPU_SMALLN_MAX_AVX2},
  .smalln_isa = "avx2",
  .dot = dot_avx2,
  .axpy = axpy_avx2,
  .scale = scale_avx2,
  .rmsnorm_row = rmsnorm_row_avx2,
  .swiglu = swiglu_avx2,
  .geglu = geglu_avx2,
  .softcap = softcap_avx2,
  .attn_tile = xpi_cpu_attn_tile_avx2,
  .to_half = to_half_avx2,
};

const xpi_cpu_kernels *xpi_cpu_kernels_avx2(void) { return &k_avx2; }
