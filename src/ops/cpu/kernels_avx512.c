/* AVX-512 (F/BW/VL/DQ + BF16 + VNNI) kernels. Only where the wider ISA pays off is there new code:
 *  - q8/q4 decode GEMV with VNNI vpdpbusd (one instruction per 32-byte block instead of maddubs + madd),
 *  - the q8/q4 prefill GEMM's microkernels with vpdpbusd (gemm_q.h),
 *  - f32/f16/bf16 weights times 4..64 tokens (batched decode): the small-n kernel (mm_smalln_avx512.c).
 * Everything else (the bf16/f32/f16 GEMM and GEMV, the int8 GEMM's driver, vector kernels) is the AVX2 table's,
 * which every AVX-512 CPU also runs: its packed f32 GEMM reaches ~84% of the FMA peak, and on Zen 4 (512-bit ops split
 * in two 256-bit halves) 512-bit FMAs would not raise that peak. A vdpbf16ps GEMM (twice the multiply rate,
 * activations rounded to bf16) is the step left for AVX512_BF16 CPUs.
 * bf16 decode is memory-bound, and the AVX2 GEMV's four-stream reading is what sets its speed (kernels_avx2.c). */
#include <immintrin.h>
#include <pthread.h>
#include <string.h>

#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/gemm_q.h"
#include "ops/cpu/mm_smalln.h"
#include "ops/cpu/quant.h"

#define CC 4096 /* decode: activation columns quantized per chunk (stack buffers) */

/* ------------------------------------------------------------------ q8/q4 decode GEMV with VNNI */
static inline __m256i q4_unpack(const uint8_t *p) {
  __m128i v = _mm_loadu_si128((const __m128i *)p);
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), _mm256_set1_epi8(0x0f));
}

static float q_dot(xpi_dtype dt, const uint8_t *q, const uint16_t *d, const int8_t *xq, const uint8_t *xa,
                   const float *dx, const float *sx, int64_t nb) {
  __m256 acc = _mm256_setzero_ps();
  float corr = 0;
  const int bs = dt == XPI_DT_Q8 ? XPI_QK : XPI_QK / 2;
  for (int64_t b8 = 0; b8 < nb; b8 += 8) {
    const int64_t cnt = nb - b8 < 8 ? nb - b8 : 8;
    float sc[8];
    for (int64_t k = 0; k < cnt; k++) sc[k] = xpi_f16_to_f32(d[b8 + k]) * dx[b8 + k];
    for (int64_t k = 0; k < cnt; k++) {
      const int64_t b = b8 + k;
      const __m256i x = _mm256_loadu_si256((const __m256i *)(xq + b * XPI_QK));
      __m256i p;
      if (dt == XPI_DT_Q8) /* |x| (unsigned) times w with x's sign: x*w without saturation */
        p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_loadu_si256((const __m256i *)(xa + b * XPI_QK)),
                                _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(q + b * bs)), x));
      else
        p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), q4_unpack(q + b * bs), x);
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(sc[k]), acc);
      if (dt == XPI_DT_Q4) corr += xpi_f16_to_f32(d[b]) * sx[b];
    }
  }
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s) - 8.0f * corr;
}

static void gemv_q(xpi_dtype dt, float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux,
                   int64_t r0, int64_t r1, int64_t cols) {
  int8_t xq[XPI_CPU_GEMM_MIN_N][CC];
  uint8_t xa[XPI_CPU_GEMM_MIN_N][CC];
  float dx[XPI_CPU_GEMM_MIN_N][CC / XPI_QK], sx[XPI_CPU_GEMM_MIN_N][CC / XPI_QK];
  const int64_t nb = xpi_q_nblocks(cols), rb = xpi_q_row_bytes(dt, cols);
  const int bs = dt == XPI_DT_Q8 ? XPI_QK : XPI_QK / 2;
  for (int64_t c0 = 0; c0 < cols; c0 += CC) {
    const int64_t cw = cols - c0 < CC ? cols - c0 : CC, cb = c0 / XPI_QK;
    for (int32_t t = 0; t < n; t++) xpi_quant_act_avx2(xq[t], xa[t], dx[t], sx[t], X + (int64_t)t * cols + c0, cw);
    for (int64_t r = r0; r < r1; r++) {
      const uint8_t *q = (const uint8_t *)W + r * rb + cb * bs;
      const uint16_t *d = (const uint16_t *)aux + r * nb + cb;
      for (int32_t t = 0; t < n; t++) {
        float s = q_dot(dt, q, d, xq[t], xa[t], dx[t], sx[t], xpi_q_nblocks(cw));
        float *y = Y + (int64_t)t * ldy + r;
        *y = c0 == 0 ? s : *y + s;
      }
    }
  }
}

/* ------------------------------------------------------------------ q8/q4 prefill GEMM microkernels with VNNI */
/* The AVX2 GEMM's driver and layouts (gemm_q.h), with vpdpbusd: one instruction multiplies 8 rows x 4 columns
 * by a token and adds into int32, where AVX2 needs maddubs then an add (Q4: int16 sums widened per block;
 * Q8: madd, then add). Q8 keeps the sign trick (|w| times x with w's sign). */
static inline __attribute__((always_inline)) void gq_ukr_vnni(xpi_dtype dt, const int8_t *a, const float *dx,
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
        c[t] = _mm256_dpbusd_epi32(c[t], pa, dt == XPI_DT_Q4 ? x : _mm256_sign_epi8(x, p));
      }
    }
    const __m256 dw = _mm256_load_ps(D + b * XPI_GQ_NR);
#pragma GCC unroll 8
    for (int t = 0; t < XPI_GQ_MR; t++) f[t] = xpi_gq_scale(f[t], dw, c[t], dx, c8, b, t);
  }
  xpi_gq_store(Y, ldy, f, nt, nr);
}
XPI_GQ_UKR(gq_q4, gq_ukr_vnni, XPI_DT_Q4)
XPI_GQ_UKR(gq_q8, gq_ukr_vnni, XPI_DT_Q8)

/* ------------------------------------------------------------------ table */
/* Prefill runs the int8 GEMM with the VNNI microkernels; decode, or a GEMM whose buffer cannot be allocated,
 * the VNNI GEMV (a few tokens at a time). */
static void mm_q(xpi_dtype dt, float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux,
                 int64_t r0, int64_t r1, int64_t cols) {
  if (n >= XPI_CPU_GEMM_MIN_N && xpi_gemm_q(gq_q8, gq_q4, dt, Y, ldy, X, n, W, aux, r0, r1, cols)) return;
  xpi_cpu_gemv_chunks(gemv_q, dt, Y, ldy, X, n, W, aux, r0, r1, cols);
}
static void mm_q8(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux, int64_t r0,
                  int64_t r1, int64_t cols) {
  mm_q(XPI_DT_Q8, Y, ldy, X, n, W, aux, r0, r1, cols);
}
static void mm_q4(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux, int64_t r0,
                  int64_t r1, int64_t cols) {
  mm_q(XPI_DT_Q4, Y, ldy, X, n, W, aux, r0, r1, cols);
}

/* Float weights: 4..XPI_CPU_SMALLN_MAX tokens (a batched decode step) through the small-n kernel
 * (mm_smalln_avx512.c), everything else as the AVX2 table does it. */
static xpi_cpu_mm_fn g_avx2_mm[3];
#define MM_FLOAT(name, DT)                                                                                      \
  static void name(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux, int64_t r0, \
                   int64_t r1, int64_t cols) {                                                                  \
    if (n >= XPI_CPU_GEMM_MIN_N && n <= XPI_CPU_SMALLN_MAX) xpi_cpu_mm_smalln_avx512(DT, Y, ldy, X, n, W, r0, r1, cols); \
    else g_avx2_mm[DT](Y, ldy, X, n, W, aux, r0, r1, cols);                                                   \
  }
MM_FLOAT(mm_f32, XPI_DT_F32)
MM_FLOAT(mm_f16, XPI_DT_F16)
MM_FLOAT(mm_bf16, XPI_DT_BF16)

static xpi_cpu_kernels k_avx512;
static pthread_once_t k_avx512_once = PTHREAD_ONCE_INIT;

/* Built once from the AVX2 table (a constant initializer cannot copy another table's pointers). Only called
 * on CPUs with AVX-512 (the copy may use ZMM registers). */
static void build_table(void) {
  xpi_cpu_kernels k = *xpi_cpu_kernels_avx2();
  k.isa = "avx512";
  k.mm[XPI_DT_Q8] = mm_q8;
  k.mm[XPI_DT_Q4] = mm_q4;
  for (int dt = XPI_DT_F32; dt <= XPI_DT_BF16; dt++) g_avx2_mm[dt] = k.mm[dt];
  k.mm[XPI_DT_F32] = mm_f32;
  k.mm[XPI_DT_F16] = mm_f16;
  k.mm[XPI_DT_BF16] = mm_bf16;
  k_avx512 = k;
}

const xpi_cpu_kernels *xpi_cpu_kernels_avx512(void) {
  pthread_once(&k_avx512_once, build_table);
  return &k_avx512;
}
