/* Every fast CPU kernel table (AVX2, AVX-512 where the CPU has it) against the scalar oracle at awkward
 * sizes: tails, unaligned weights and activations, row slices, ldy > rows, cols not a multiple of the
 * quantization block, n = 1, 3 (decode GEMV) and 17 (prefill GEMM); the q8/q4 decode GEMVs at 1..16 tokens
 * (batched decode). Also the Q8/Q4 formats' error bounds.
 *
 * Tolerances (why they are what they are):
 *  - Two f32 sums of the same m products in different orders each differ from the exact sum by at most
 *    gamma_m * sum|w x| with gamma_m = m*2^-24/(1-m*2^-24) (Higham, 3.1); the test allows 2*gamma_m*sum|wx|.
 *    The scalar q8/q4 oracle sums in double, which only tightens this.
 *  - q8/q4 matmuls (decode and prefill, and the scalar reference) round activations to int8 per 32-block:
 *    against the exact dequantized product they may differ by sum_b (dx_b/2) * sum_i |w_i| more (quant.h);
 *    against the scalar reference, which does the same integer sums, only by f32 rounding.
 *  - swiglu's vector exp has ~2 ulp error, silu a few more: 8 * 2^-23 relative.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/matmul_cpu.h"
#include "ops/cpu/quant.h"
#include "ops/half.h"

static uint64_t rng = 88172645463325252ull;
static float frand(void) { /* uniform in [-1, 1) */
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (float)((rng >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}

/* The pool and workspace mm_case runs the fast tables on (NULL: the calling thread, buffers per call). */
static xpi_pool *g_pool;
static xpi_cpu_mm_ws *g_ws;

static double gamma_m(int64_t m) { double u = m * ldexp(1.0, -24); return u / (1 - u); }

static void fill_weights(unsigned char *dst, xpi_dtype dt, const float *v, int64_t count) {
  for (int64_t i = 0; i < count; i++) {
    if (dt == XPI_DT_F32) memcpy(dst + 4 * i, &v[i], 4);
    else {
      uint16_t h = dt == XPI_DT_BF16 ? xpi_f32_to_bf16(v[i]) : xpi_f32_to_f16(v[i]);
      memcpy(dst + 2 * i, &h, 2);
    }
  }
}
static float weight_at(const unsigned char *w, xpi_dtype dt, int64_t i) {
  if (dt == XPI_DT_F32) { float f; memcpy(&f, w + 4 * i, 4); return f; }
  uint16_t h; memcpy(&h, w + 2 * i, 2);
  return dt == XPI_DT_BF16 ? xpi_bf16_to_f32(h) : xpi_f16_to_f32(h);
}

static const char *dt_name(xpi_dtype dt) {
  return dt == XPI_DT_F32 ? "f32" : dt == XPI_DT_F16 ? "f16" : dt == XPI_DT_BF16 ? "bf16" : dt == XPI_DT_Q8 ? "q8" : "q4";
}

/* One mm case: kernel k vs scalar on rows [r0, r1) of a rows x cols weight, n tokens. */
static void mm_case(const xpi_cpu_kernels *k, xpi_dtype dt, int64_t rows, int64_t cols, int32_t n) {
  const xpi_cpu_kernels *ref = xpi_cpu_kernels_scalar();
  const int64_t ldy = rows + 3, r0 = rows > 2 ? 1 : 0, r1 = rows;
  float *wv = malloc(sizeof(float) * (size_t)(rows * cols));
  for (int64_t i = 0; i < rows * cols; i++) wv[i] = frand() * 0.1f;
  /* weights at an address that is not 32-byte aligned, as mmapped tensors can be */
  const int is_q = dt == XPI_DT_Q8 || dt == XPI_DT_Q4;
  const size_t esz = dt == XPI_DT_F32 ? 4 : 2, off = esz;
  size_t wbytes = is_q ? (size_t)(rows * xpi_q_row_bytes(dt, cols)) : (size_t)(rows * cols) * esz;
  unsigned char *wbuf = malloc(wbytes + off), *W = wbuf + off;
  uint16_t *dq = NULL;
  if (is_q) {
    dq = malloc(sizeof(uint16_t) * (size_t)(rows * xpi_q_nblocks(cols)));
    CHECK_OK(xpi_quantize_rows(dt, W, dq, wv, XPI_DT_F32, rows, cols));
  } else {
    fill_weights(W, dt, wv, rows * cols);
  }
  float *xbuf = malloc(sizeof(float) * (size_t)(n * cols + 1)), *X = xbuf + 1; /* unaligned activations */
  for (int64_t i = 0; i < n * cols; i++) X[i] = frand();
  float *Y = malloc(sizeof(float) * (size_t)(n * ldy)), *Yr = malloc(sizeof(float) * (size_t)(n * ldy));
  for (int64_t i = 0; i < n * ldy; i++) Y[i] = Yr[i] = 12345.0f; /* sentinel outside the slice */
  xpi_cpu_matmul(g_pool, g_ws, k, dt, Y, ldy, X, n, W, dq, r0, r1, cols);
  xpi_cpu_matmul(NULL, NULL, ref, dt, Yr, ldy, X, n, W, dq, r0, r1, cols);

  float *deq = malloc(sizeof(float) * (size_t)cols);
  int8_t *xq = malloc((size_t)xpi_q_nblocks(cols) * XPI_QK);
  float *dx = malloc(sizeof(float) * (size_t)xpi_q_nblocks(cols)), *sx = malloc(sizeof(float) * (size_t)xpi_q_nblocks(cols));
  int bad = 0;
  for (int32_t t = 0; t < n && !bad; t++) {
    const float *x = X + (int64_t)t * cols;
    if (is_q) xpi_quantize_act_scalar(xq, dx, sx, x, cols);
    for (int64_t r = 0; r < rows && !bad; r++) {
      const float y = Y[t * ldy + r], yr = Yr[t * ldy + r];
      if (r < r0) { bad = y != 12345.0f; CHECK(!bad, "%s %s: row %lld outside the slice was written", k->isa, dt_name(dt), (long long)r); continue; }
      double sabs = 0, qerr = 0, exact = 0;
      if (is_q) xpi_dequantize_row(dt, deq, W, dq, r, cols);
      for (int64_t c = 0; c < cols; c++) {
        const double w = is_q ? deq[c] : weight_at(W, dt, r * cols + c);
        sabs += fabs(w * x[c]);
        exact += w * x[c];
      }
      double tol = 2 * gamma_m(cols) * sabs + 1e-30;
      if (is_q) {
        /* quant.h: y is the int8-activation product; against the exact dequantized product the activation
         * rounding adds at most sum_b (dx_b/2) * sum_i |w_i|. The scalar reference must meet that bound too. */
        for (int64_t c = 0; c < cols; c++) qerr += dx[c / XPI_QK] / 2 * fabs(deq[c]);
        const double qtol = 2 * gamma_m(cols) * (sabs + qerr) + qerr + 1e-30;
        CHECK(fabs(y - exact) <= qtol && fabs(yr - exact) <= qtol,
              "%s %s rows=%lld cols=%lld n=%d r=%lld t=%d: %g (scalar %g) vs exact %g beyond the activation bound %g",
              k->isa, dt_name(dt), (long long)rows, (long long)cols, n, (long long)r, t, y, yr, exact, qtol);
        /* against the scalar reference, the same integer sums: only f32 rounding of the scaled block sums, and
         * q4 sums unsigned quants and subtracts 8 * sum(x) per block, so its rounding scales with those terms */
        double q4terms = 0;
        if (dt == XPI_DT_Q4)
          for (int64_t c = 0; c < cols; c++)
            q4terms += 16 * fabs(xpi_f16_to_f32(dq[r * xpi_q_nblocks(cols) + c / XPI_QK])) * (fabs(x[c]) + dx[c / XPI_QK]);
        tol = 2 * gamma_m(cols + 8) * (sabs + qerr + q4terms) + 1e-30;
        /* and the integer-path helper the decode kernels are built on agrees with the reference */
        const float yi = xpi_q_dot_int_scalar(dt, W, dq, r, xq, dx, cols);
        CHECK(fabs(yi - yr) <= tol, "%s q-dot reference %g vs scalar mm %g", dt_name(dt), yi, yr);
      }
      /* a GEMM that rounds activations to fewer bits (bf16 terms) may move y by 2^-bits sum|w x| more */
      const xpi_cpu_gemm *g = k->gemm[dt];
      if (g && g->act_bits && n >= XPI_CPU_GEMM_MIN_N) tol += ldexp(sabs, -g->act_bits);
      bad = !(fabs((double)y - yr) <= tol);
      CHECK(!bad, "%s %s rows=%lld cols=%lld n=%d r=%lld t=%d: %.9g vs scalar %.9g (tol %g)", k->isa, dt_name(dt),
            (long long)rows, (long long)cols, n, (long long)r, t, y, yr, tol);
    }
    for (int64_t r = rows; r < ldy; r++) CHECK(Y[t * ldy + r] == 12345.0f, "%s: padding column written", k->isa);
  }
  free(deq); free(xq); free(dx); free(sx);
  free(wv); free(wbuf); free(dq); free(xbuf); free(Y); free(Yr);
}

/* The q8/q4 decode GEMV of table k called directly (as batched decode runs it, row slices over threads) over
 * n = 1..16 tokens: passes of several tokens load each weight block once for all of them, so every pass size and
 * its tail is checked against the scalar oracle (the tolerance of mm_case: the same integer block sums, f32
 * rounding of the scaled sums, q4's offset terms), on odd row counts, a row slice and block tails (columns not a
 * multiple of 8 blocks or of 32). And each token's result equals, bit for bit, the same token computed alone: the
 * kernels sum every token in one order whatever its batch, so batched decode gives each sequence the results it
 * would get on its own. */
static void gemv_batch_case(const xpi_cpu_kernels *k, xpi_dtype dt, int64_t rows, int64_t cols, int32_t n) {
  const int64_t ldy = rows + 1, r0 = rows > 2 ? 1 : 0, nb = xpi_q_nblocks(cols);
  float *wv = malloc(sizeof(float) * (size_t)(rows * cols)), *X = malloc(sizeof(float) * (size_t)(n * cols));
  for (int64_t i = 0; i < rows * cols; i++) wv[i] = frand() * 0.1f;
  for (int64_t i = 0; i < n * cols; i++) X[i] = frand();
  unsigned char *W = malloc((size_t)(rows * xpi_q_row_bytes(dt, cols)) + 1);
  uint16_t *dq = malloc(sizeof(uint16_t) * (size_t)(rows * nb));
  CHECK_OK(xpi_quantize_rows(dt, W, dq, wv, XPI_DT_F32, rows, cols));
  float *Y = malloc(sizeof(float) * (size_t)(n * ldy)), *Yr = malloc(sizeof(float) * (size_t)(n * ldy));
  float *Y1 = malloc(sizeof(float) * (size_t)ldy), *deq = malloc(sizeof(float) * (size_t)cols);
  int8_t *xq = malloc((size_t)nb * XPI_QK);
  float *dx = malloc(sizeof(float) * (size_t)nb), *sx = malloc(sizeof(float) * (size_t)nb);
  for (int64_t i = 0; i < n * ldy; i++) Y[i] = Yr[i] = 12345.0f;
  k->gemv[dt](Y, ldy, X, n, W, dq, r0, rows, cols);
  xpi_cpu_kernels_scalar()->gemv[dt](Yr, ldy, X, n, W, dq, r0, rows, cols);
  int bad = 0;
  for (int32_t t = 0; t < n && !bad; t++) {
    const float *x = X + (int64_t)t * cols;
    k->gemv[dt](Y1, ldy, x, 1, W, dq, r0, rows, cols);
    xpi_quantize_act_scalar(xq, dx, sx, x, cols);
    for (int64_t r = 0; r < rows && !bad; r++) {
      const float y = Y[t * ldy + r], yr = Yr[t * ldy + r];
      if (r < r0) {
        bad = y != 12345.0f;
        CHECK(!bad, "%s %s gemv n=%d: row %lld outside the slice was written", k->isa, dt_name(dt), n, (long long)r);
        continue;
      }
      xpi_dequantize_row(dt, deq, W, dq, r, cols);
      double sabs = 0, qerr = 0, q4terms = 0;
      for (int64_t c = 0; c < cols; c++) {
        sabs += fabs((double)deq[c] * x[c]);
        qerr += dx[c / XPI_QK] / 2 * fabs(deq[c]);
        if (dt == XPI_DT_Q4) q4terms += 16 * fabs(xpi_f16_to_f32(dq[r * nb + c / XPI_QK])) * (fabs(x[c]) + dx[c / XPI_QK]);
      }
      const double tol = 2 * gamma_m(cols + 8) * (sabs + qerr + q4terms) + 1e-30;
      bad = !(fabs((double)y - yr) <= tol);
      CHECK(!bad, "%s %s gemv rows=%lld cols=%lld n=%d r=%lld t=%d: %.9g vs scalar %.9g (tol %g)", k->isa,
            dt_name(dt), (long long)rows, (long long)cols, n, (long long)r, t, y, yr, tol);
      if (!bad) {
        bad = memcmp(&y, &Y1[r], sizeof y) != 0;
        CHECK(!bad, "%s %s gemv rows=%lld cols=%lld n=%d r=%lld t=%d: %.9g in the batch, %.9g alone", k->isa,
              dt_name(dt), (long long)rows, (long long)cols, n, (long long)r, t, y, Y1[r]);
      }
    }
    for (int64_t r = rows; r < ldy; r++) CHECK(Y[t * ldy + r] == 12345.0f, "%s: padding column written", k->isa);
  }
  free(wv); free(X); free(W); free(dq); free(Y); free(Yr); free(Y1); free(deq); free(xq); free(dx); free(sx);
}

static void gemv_batch_cases(const xpi_cpu_kernels *k) {
  /* 7 and 9 rows (odd); 31 / 33 columns (a ragged block), 96 (3 blocks: no group of 8), 264 (8 blocks + 8
   * columns), 480 (15 blocks: a group of 8, then pairs and quads, an odd last block), 1056 (33 blocks) */
  static const int64_t cols_s[] = {31, 33, 96, 264, 480, 1056};
  for (int dt = XPI_DT_Q8; dt <= XPI_DT_Q4; dt++)
    for (int32_t n = 1; n <= 16; n++)
      for (size_t ci = 0; ci < sizeof cols_s / sizeof cols_s[0]; ci++)
        gemv_batch_case(k, (xpi_dtype)dt, n & 1 ? 7 : 9, cols_s[ci], n);
  gemv_batch_case(k, XPI_DT_Q8, 5, 4200, 11); /* two column chunks (4096) with a pass of 8 and its tail */
  gemv_batch_case(k, XPI_DT_Q4, 5, 4200, 11);
}

/* Weight shapes for the format bounds: uniform; heavy-tailed (a ratio of uniforms, like trained weights' tails,
 * where Q4's scale search moves furthest from the max-based scale); a block-wide outlier over small values. */
enum { W_UNIFORM, W_HEAVY, W_OUTLIER };
static float wsample(int shape, int64_t i) {
  if (shape == W_HEAVY) {
    const float u = frand(), v = fabsf(frand()) + 0.05f;
    return u / v * 0.05f;
  }
  if (shape == W_OUTLIER) return i % 32 == 7 ? (i & 64 ? -1.0f : 1.0f) : frand() * 0.03f;
  return frand();
}

/* Q8/Q4 element error bounds of quant.h, and the SIMD activation quantization equals the scalar one. Returns
 * how many Q4 blocks got a scale other than the max-based d0 (the search's: the bound must hold for it too). */
static int64_t quant_format_case(xpi_dtype dt, int64_t rows, int64_t cols, float scale, int shape) {
  float *wv = malloc(sizeof(float) * (size_t)(rows * cols)), *deq = malloc(sizeof(float) * (size_t)cols);
  int64_t searched = 0;
  for (int64_t i = 0; i < rows * cols; i++) wv[i] = wsample(shape, i) * scale;
  if (rows * cols > 5) wv[5] = 0.0f;
  unsigned char *qs = malloc((size_t)(rows * xpi_q_row_bytes(dt, cols)));
  uint16_t *d = malloc(sizeof(uint16_t) * (size_t)(rows * xpi_q_nblocks(cols)));
  CHECK_OK(xpi_quantize_rows(dt, qs, d, wv, XPI_DT_F32, rows, cols));
  int bad = 0;
  for (int64_t r = 0; r < rows && !bad; r++) {
    xpi_dequantize_row(dt, deq, qs, d, r, cols);
    for (int64_t b = 0; b * XPI_QK < cols && !bad; b++) {
      float amax = 0;
      for (int64_t c = b * XPI_QK; c < cols && c < (b + 1) * XPI_QK; c++) amax = fmaxf(amax, fabsf(wv[r * cols + c]));
      const double h = ldexp(1.0, -24);
      const double dmax = dt == XPI_DT_Q8 ? amax / 127.0 * (1 + ldexp(1.0, -10)) + h : amax / 8.0 * (1 + ldexp(1.0, -10)) + h;
      const double dd = fabs(xpi_f16_to_f32(d[r * xpi_q_nblocks(cols) + b]));
      double sse = 0;
      if (dt == XPI_DT_Q8) { /* per element: |e| <= d/2, d <= dmax */
        bad = dd > dmax;
        CHECK(!bad, "%s scale %g above bound %g", dt_name(dt), dd, dmax);
      }
      for (int64_t c = b * XPI_QK; c < cols && c < (b + 1) * XPI_QK && !bad; c++) {
        const double e = fabs((double)deq[c] - wv[r * cols + c]);
        sse += e * e;
        if (dt == XPI_DT_Q8) {
          bad = e > dd / 2 * (1 + 1e-6);
          CHECK(!bad, "q8 [%lld,%lld]: %g -> %g, error %g > d/2 = %g", (long long)r, (long long)c, wv[r * cols + c],
                deq[c], e, dd / 2);
        }
      }
      if (dt == XPI_DT_Q4) { /* block RMS error (over all 32 slots; padding is exact) <= dmax */
        float m = 0; /* d0 = -m/8 rounded away from zero, m the first element of largest magnitude */
        for (int64_t c = b * XPI_QK; c < cols && c < (b + 1) * XPI_QK; c++)
          if (fabsf(wv[r * cols + c]) == amax) { m = wv[r * cols + c]; break; }
        uint16_t h0 = xpi_f32_to_f16(-m / 8.0f);
        if (fabsf(xpi_f16_to_f32(h0)) < fabsf(-m / 8.0f)) h0++;
        searched += amax > 0 && d[r * xpi_q_nblocks(cols) + b] != h0;
        bad = sqrt(sse / XPI_QK) > dmax * (1 + 1e-6);
        CHECK(!bad, "q4 row %lld block %lld: RMS error %g > bound %g", (long long)r, (long long)b, sqrt(sse / XPI_QK), dmax);
      }
    }
  }
  if (xpi_cpu_has(XPI_ISA_AVX2)) {
    const int64_t nb = xpi_q_nblocks(cols);
    int8_t *a = malloc((size_t)nb * XPI_QK), *b = malloc((size_t)nb * XPI_QK);
    uint8_t *xa = malloc((size_t)nb * XPI_QK);
    float *dxa = malloc(sizeof(float) * (size_t)nb), *dxb = malloc(sizeof(float) * (size_t)nb),
          *sxa = malloc(sizeof(float) * (size_t)nb), *sxb = malloc(sizeof(float) * (size_t)nb);
    xpi_quantize_act_scalar(a, dxa, sxa, wv, cols);
    xpi_quant_act_avx2(b, xa, dxb, sxb, wv, cols);
    CHECK(memcmp(a, b, (size_t)nb * XPI_QK) == 0 && memcmp(dxa, dxb, sizeof(float) * (size_t)nb) == 0 &&
              memcmp(sxa, sxb, sizeof(float) * (size_t)nb) == 0,
          "avx2 activation quantization differs from scalar at cols=%lld", (long long)cols);
    free(a); free(b); free(xa); free(dxa); free(dxb); free(sxa); free(sxb);
  }
  free(wv); free(deq); free(qs); free(d);
  return searched;
}

/* One activation rounding rule (quant.h, xpi_quant_act_prescale) for every table: the int8 paths of the AVX2,
 * AVX-VNNI, AVX-512 and AMX tables all quantize with xpi_quant_act_avx2, whose codes, scales and code sums must be
 * the scalar table's bit for bit, on blocks made to hit the rule's edges: exact halves (ties to even), a negative
 * largest element, -0, a ragged last block, an all-zero block, and tiny blocks down to denormals, where 127 / amax
 * overflows unless the block is first scaled by 2^64. Scaling a block by a power of two must not move its codes. */
static void quant_act_rule_cases(void) {
  enum { C = 9 * XPI_QK + 13 };
  static const float tiny[] = {1e-30f, 1e-36f, 3e-37f, 1e-38f, 1e-40f, 1e-44f};
  float x[C], y[C];
  int8_t qa[10 * XPI_QK], qb[10 * XPI_QK], qy[10 * XPI_QK];
  uint8_t xa[10 * XPI_QK];
  float dxa[10], dxb[10], sxa[10], sxb[10], dxy[10], sxy[10];
  for (int rep = 0; rep < 64; rep++) {
    for (int i = 0; i < C; i++) x[i] = frand();
    for (int j = 0; j < XPI_QK; j++) x[j] = (float)(j - 16) + 0.5f; /* block 0: amax 16.5, codes x * 127/16.5 */
    x[40] = -127.0f;                                                  /* block 1: id 1, so the halves below tie */
    for (int j = 41; j < 64; j++) x[j] = (float)((j % 9) - 4) + 0.5f;
    x[64] = -0.0f;
    for (int j = 3 * XPI_QK; j < 4 * XPI_QK; j++) x[j] = 0.0f; /* block 3: all zero */
    for (int b = 4; b < 10; b++)                                /* blocks 4..9: tiny, the largest last seen */
      for (int j = b * XPI_QK; j < (b + 1) * XPI_QK && j < C; j++) x[j] *= tiny[b - 4];
    xpi_quantize_act_scalar(qa, dxa, sxa, x, C);
    xpi_quant_act_avx2(qb, xa, dxb, sxb, x, C);
    CHECK(!memcmp(qa, qb, sizeof qa) && !memcmp(dxa, dxb, sizeof dxa) && !memcmp(sxa, sxb, sizeof sxa),
          "rep %d: avx2 activation codes/scales differ from the scalar table's", rep);
    for (int b = 0; b < 10; b++)
      for (int j = 0; j < XPI_QK && b * XPI_QK + j < C; j++) {
        const int q = qa[b * XPI_QK + j];
        CHECK(q >= -127 && q <= 127, "block %d: code %d out of range", b, q);
        CHECK(b != 3 || q == 0, "block 3 (zeros): code %d", q);
      }
    for (int j = 41; j < 64; j++) CHECK(qa[j] == (int8_t)nearbyint((double)x[j]), "tie at %d: %d", j, qa[j]);
    for (int b = 4; b < 10; b++) { /* tiny blocks: the largest element still maps to +-127 */
      int jm = b * XPI_QK;
      for (int j = jm; j < (b + 1) * XPI_QK && j < C; j++) jm = fabsf(x[j]) > fabsf(x[jm]) ? j : jm;
      CHECK(abs(qa[jm]) == 127, "tiny block %d (amax %g): code %d for its largest element", b, fabsf(x[jm]), qa[jm]);
    }
    const float p2[] = {0x1p-70f, 0x1p-20f, 0x1p20f, 0x1p70f};
    for (int k = 0; k < 4; k++) { /* blocks 0..2 (not tiny): the same codes at every power-of-two scale */
      for (int i = 0; i < 3 * XPI_QK; i++) y[i] = x[i] * p2[k];
      xpi_quantize_act_scalar(qy, dxy, sxy, y, 3 * XPI_QK);
      CHECK(!memcmp(qy, qa, 3 * XPI_QK), "rep %d: codes move when the input is scaled by %g", rep, p2[k]);
    }
  }
}

static void vec_cases(const xpi_cpu_kernels *k) {
  const xpi_cpu_kernels *ref = xpi_cpu_kernels_scalar();
  static const int64_t sizes[] = {1, 7, 8, 9, 15, 17, 31, 33, 100, 1000, 1027};
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    const int64_t m = sizes[si];
    float *a = malloc(sizeof(float) * (size_t)(m + 1)), *b = malloc(sizeof(float) * (size_t)(m + 1));
    float *y1 = malloc(sizeof(float) * (size_t)(m + 1)), *y2 = malloc(sizeof(float) * (size_t)(m + 1));
    float *ua = a + 1, *ub = b + 1; /* unaligned */
    double sabs = 0;
    for (int64_t i = 0; i <= m; i++) { a[i] = frand() * 4; b[i] = frand() * 4; }
    for (int64_t i = 0; i < m; i++) sabs += fabs((double)ua[i] * ub[i]);
    float d1 = k->dot(ua, ub, m), d2 = ref->dot(ua, ub, m);
    CHECK(fabs((double)d1 - d2) <= 2 * gamma_m(m) * sabs + 1e-30, "%s dot m=%lld: %g vs %g", k->isa, (long long)m, d1, d2);

    memcpy(y1, ub, sizeof(float) * (size_t)m); memcpy(y2, ub, sizeof(float) * (size_t)m);
    k->axpy(y1, 0.37f, ua, m); ref->axpy(y2, 0.37f, ua, m);
    int bad = 0;
    for (int64_t i = 0; i < m && !bad; i++) /* fma vs mul+add: one extra rounding of a*x */
      bad = fabs((double)y1[i] - y2[i]) > ldexp(fabs(0.37 * ua[i]) + fabs(y2[i]), -23);
    CHECK(!bad, "%s axpy m=%lld", k->isa, (long long)m);

    memcpy(y1, ua, sizeof(float) * (size_t)m); memcpy(y2, ua, sizeof(float) * (size_t)m);
    k->scale(y1, -1.7f, m); ref->scale(y2, -1.7f, m);
    CHECK(memcmp(y1, y2, sizeof(float) * (size_t)m) == 0, "%s scale m=%lld not bit-exact", k->isa, (long long)m);

    for (int wdi = 0; wdi < 3; wdi++) {
      const xpi_dtype wdt = wdi == 0 ? XPI_DT_F32 : wdi == 1 ? XPI_DT_BF16 : XPI_DT_F16;
      unsigned char *w = malloc((size_t)m * 4 + 2);
      fill_weights(w + 2, wdt, ub, m);
      k->rmsnorm_row(y1, ua, w + 2, wdt, m, 1e-6f);
      ref->rmsnorm_row(y2, ua, w + 2, wdt, m, 1e-6f);
      bad = 0;
      /* sum of squares: 2*gamma_m relative (all terms positive), through rsqrt and two products */
      for (int64_t i = 0; i < m && !bad; i++) bad = fabs((double)y1[i] - y2[i]) > (gamma_m(m) + 8 * ldexp(1.0, -24)) * fabs(y2[i]) + 1e-30;
      CHECK(!bad, "%s rmsnorm %s m=%lld", k->isa, dt_name(wdt), (long long)m);
      free(w);
    }

    for (int64_t i = 0; i < m; i++) ua[i] *= 5; /* gate values over [-20, 20] */
    k->swiglu(y1, ua, ub, m);
    ref->swiglu(y2, ua, ub, m);
    bad = 0;
    for (int64_t i = 0; i < m && !bad; i++) bad = fabs((double)y1[i] - y2[i]) > 8 * ldexp(fabs(y2[i]), -23) + 1e-37;
    CHECK(!bad, "%s swiglu m=%lld", k->isa, (long long)m);
    /* geglu over [-20, 20] (both tails saturated): inner carries a few u relative, tanh's slope (1 - t^2) times
     * |inner| is <= 0.45, tanhf ~2 ulp, the vector tanh ~4 u absolutely, and 1 + t passes that absolute error
     * on, times 0.5 |g| |u|: 16 u (1 + |g|) |u| between any two tables */
    k->geglu(y1, ua, ub, m);
    ref->geglu(y2, ua, ub, m);
    bad = 0;
    for (int64_t i = 0; i < m && !bad; i++)
      bad = !(fabs((double)y1[i] - y2[i]) <= 16 * ldexp(1.0, -24) * (1 + fabs(ua[i])) * fabs(ub[i]) + 1e-37);
    CHECK(!bad, "%s geglu m=%lld", k->isa, (long long)m);
    /* softcap 7 over [-20, 20] with a NaN: tanhf ~2 ulp, the vector tanh ~4 u absolutely, the division u, times
     * the cap: 8 u cap between any two tables; the NaN stays NaN (argmax's check of broken logits) */
    memcpy(y1, ua, sizeof(float) * (size_t)m); memcpy(y2, ua, sizeof(float) * (size_t)m);
    y1[m / 2] = y2[m / 2] = NAN;
    k->softcap(y1, m, 7.0f);
    ref->softcap(y2, m, 7.0f);
    bad = !isnan(y1[m / 2]);
    for (int64_t i = 0; i < m && !bad; i++)
      bad = i != m / 2 && !(fabs((double)y1[i] - y2[i]) <= 8 * ldexp(1.0, -24) * 7.0);
    CHECK(!bad, "%s softcap m=%lld", k->isa, (long long)m);
    free(a); free(b); free(y1); free(y2);
  }
}

/* The KV cache store against the scalar conversions, bit for bit: random values over many binades plus the
 * cases where rounding is delicate (ties to even, the largest finite values, overflow to inf, half subnormals
 * and underflow to zero, signed zeros, inf, NaN), at lengths with vector tails and an unaligned source. */
static void to_half_cases(const xpi_cpu_kernels *k) {
  static const uint32_t special[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u,
                                     0x7f800001u, 0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x7f7fffffu, 0x477fe000u,
                                     0x477ff000u, 0x477fefffu, 0x38800000u, 0x387fffffu, 0x33800000u, 0x33000000u,
                                     0x33000001u, 0x32ffffffu, 0x3a801000u, 0x3a803000u, 0xc7800000u, 0x00000001u};
  const int ns = (int)(sizeof special / sizeof *special);
  static const int64_t sizes[] = {1, 7, 8, 9, 38, 75};
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    const int64_t m = sizes[si];
    float *src = malloc(sizeof(float) * (size_t)(m + 1));
    uint16_t *h1 = malloc(2 * (size_t)m), *h2 = malloc(2 * (size_t)m);
    for (int64_t i = 0; i <= m; i++) {
      uint32_t u = i % 3 == 0 ? special[(i / 3) % ns] : (uint32_t)(rng >> 32);
      frand();
      if (i % 3 == 1) u = (u & 0x807fffffu) | ((uint32_t)(96 + (rng >> 58)) << 23); /* exponents around half's range */
      memcpy(&src[i], &u, 4);
    }
    for (int d = 0; d < 2; d++) {
      const xpi_dtype dt = d ? XPI_DT_BF16 : XPI_DT_F16;
      k->to_half(h1, src + 1, m, dt);
      for (int64_t i = 0; i < m; i++) h2[i] = dt == XPI_DT_BF16 ? xpi_f32_to_bf16(src[1 + i]) : xpi_f32_to_f16(src[1 + i]);
      int64_t bad = -1;
      for (int64_t i = 0; i < m && bad < 0; i++) {
        const float f1 = dt == XPI_DT_BF16 ? xpi_bf16_to_f32(h1[i]) : xpi_f16_to_f32(h1[i]);
        const float f2 = dt == XPI_DT_BF16 ? xpi_bf16_to_f32(h2[i]) : xpi_f16_to_f32(h2[i]);
        if (!(h1[i] == h2[i] || (isnan(f1) && isnan(f2)))) bad = i;
      }
      CHECK(bad < 0, "%s to_half %s m=%lld: element %lld is 0x%04x, expected 0x%04x", k->isa, dt_name(dt), (long long)m,
            (long long)bad, bad < 0 ? 0 : h1[bad], bad < 0 ? 0 : h2[bad]);
    }
    free(src); free(h1); free(h2);
  }
}

/* The "auto" table whatever XPI_CPU_ISA says (the tests run under forced tables too). */
static const xpi_cpu_kernels *auto_table(void) {
  const char *env = getenv("XPI_CPU_ISA");
  char *saved = env ? strdup(env) : NULL;
  unsetenv("XPI_CPU_ISA");
  const xpi_cpu_kernels *k = xpi_cpu_kernels_best();
  if (saved) setenv("XPI_CPU_ISA", saved, 1);
  free(saved);
  return k;
}

/* Makespan of a tile grid as matmul_cpu.c models it: rounds of tiles per thread times the largest tile, whose
 * cost is its row units times (its token units + 1 for preparing its weight panels). */
static int64_t grid_cost(int64_t ur, int64_t ut, int nth, int64_t pr, int64_t pt) {
  return (pr * pt + nth - 1) / nth * ((ur + pr - 1) / pr) * ((ut + pt - 1) / pt + 1);
}

/* The tile grid: in range, and its makespan within 20% of the best grid's (found by trying them all). */
static void grid_cases(void) {
  for (int nth = 1; nth <= 20; nth++)
    for (int64_t ur = 1; ur <= 70; ur += 3)
      for (int64_t ut = 1; ut <= 90; ut += 7) {
        int64_t pr, pt, best = INT64_MAX;
        xpi_cpu_mm_grid(ur, ut, nth, &pr, &pt);
        CHECK(pr >= 1 && pr <= ur && pt >= 1 && pt <= ut, "grid(%lld, %lld, %d) = %lld x %lld out of range",
              (long long)ur, (long long)ut, nth, (long long)pr, (long long)pt);
        for (int64_t r = 1; r <= ur; r++)
          for (int64_t t = 1; t <= ut; t++) {
            const int64_t c = grid_cost(ur, ut, nth, r, t);
            if (c < best) best = c;
          }
        const int64_t got = grid_cost(ur, ut, nth, pr, pt);
        CHECK(got * 5 <= best * 6, "grid(%lld, %lld, %d) = %lld x %lld: makespan %lld, best %lld", (long long)ur,
              (long long)ut, nth, (long long)pr, (long long)pt, (long long)got, (long long)best);
      }
  int64_t pr, pt; /* the 0.6B shape's smallest matrix (64 row panels) at 16 threads: rows alone */
  xpi_cpu_mm_grid(64, 43, 16, &pr, &pt);
  CHECK(pr == 16 && pt == 1, "grid(64, 43, 16) = %lld x %lld, expected 16 x 1", (long long)pr, (long long)pt);
  xpi_cpu_mm_grid(4, 43, 16, &pr, &pt); /* a matrix of 4 panels: tokens cut too */
  CHECK(pr * pt >= 16, "grid(4, 43, 16) = %lld x %lld", (long long)pr, (long long)pt);
}

/* A prefill matmul gives the same bits on any number of threads (each output is one sum in a fixed order,
 * whatever the tile grid), with matrices small enough that tokens get cut too. */
static void split_cases(const xpi_cpu_kernels *k) {
  static const xpi_dtype dts[] = {XPI_DT_F32, XPI_DT_BF16, XPI_DT_Q8, XPI_DT_Q4};
  for (size_t di = 0; di < 4; di++) {
    const xpi_dtype dt = dts[di];
    const int64_t rows = 40, cols = 96;
    const int32_t n = 53;
    const int is_q = dt == XPI_DT_Q8 || dt == XPI_DT_Q4;
    float *wv = malloc(sizeof(float) * rows * cols), *X = malloc(sizeof(float) * n * cols);
    for (int64_t i = 0; i < rows * cols; i++) wv[i] = frand();
    for (int64_t i = 0; i < n * cols; i++) X[i] = frand();
    unsigned char *W = malloc((size_t)(rows * cols * 4));
    uint16_t *dq = malloc(sizeof(uint16_t) * rows * 4);
    if (is_q) CHECK_OK(xpi_quantize_rows(dt, W, dq, wv, XPI_DT_F32, rows, cols));
    else fill_weights(W, dt, wv, rows * cols);
    float *Y1 = malloc(sizeof(float) * n * rows), *Yp = malloc(sizeof(float) * n * rows);
    xpi_cpu_matmul(NULL, NULL, k, dt, Y1, rows, X, n, W, dq, 0, rows, cols);
    for (int nth = 2; nth <= 9; nth += 7) {
      xpi_pool *p = NULL;
      CHECK_OK(xpi_pool_create(nth, &p));
      memset(Yp, 0, sizeof(float) * n * rows);
      xpi_cpu_matmul(p, g_ws, k, dt, Yp, rows, X, n, W, dq, 0, rows, cols);
      CHECK(memcmp(Y1, Yp, sizeof(float) * n * rows) == 0, "%s %s: %d threads differ from one", k->isa,
            dt_name(dt), nth);
      xpi_pool_free(p);
    }
    free(wv); free(X); free(W); free(dq); free(Y1); free(Yp);
  }
}

int main(void) {
  static const int64_t rows_s[] = {1, 5, 17, 35};
  static const int64_t cols_s[] = {1, 7, 31, 32, 33, 100, 257};
  static const int32_t n_s[] = {1, 3, 17};
  for (int dt = XPI_DT_Q8; dt <= XPI_DT_Q4; dt++) {
    int64_t searched = 0, blocks = 0;
    for (int shape = W_UNIFORM; shape <= W_OUTLIER; shape++) {
      searched += quant_format_case((xpi_dtype)dt, 9, 100, 1.0f, shape);
      searched += quant_format_case((xpi_dtype)dt, 3, 4097, 0.02f, shape);
      searched += quant_format_case((xpi_dtype)dt, 4, 64, 1e-6f, shape); /* scales in the half subnormal range */
      searched += quant_format_case((xpi_dtype)dt, 64, 1024, 0.05f, shape);
      blocks += 9 * 4 + 3 * 129 + 4 * 2 + 64 * 32;
    }
    /* the search must be exercised: measured: 78% of these blocks take a searched scale */
    if (dt == XPI_DT_Q4) {
      printf("q4: %lld of %lld blocks with a searched scale\n", (long long)searched, (long long)blocks);
      CHECK(searched >= blocks / 3, "q4: only %lld of %lld blocks took a searched scale", (long long)searched,
            (long long)blocks);
    }
  }
  if (xpi_cpu_has(XPI_ISA_AVX2)) quant_act_rule_cases();
  CHECK_OK(xpi_pool_create(3, &g_pool));
  g_ws = xpi_cpu_mm_ws_create();
  CHECK(g_ws != NULL, "no matmul workspace");
  grid_cases();
  /* every table this CPU runs, and the per-kernel "auto" table (it mixes them) */
  for (int isa = XPI_ISA_AVX2; isa <= XPI_ISA_COUNT; isa++) {
    const xpi_cpu_kernels *k = isa == XPI_ISA_COUNT ? auto_table() : xpi_cpu_kernels_for((xpi_cpu_isa)isa);
    if (!k) {
      printf("note: this CPU lacks %s; its kernel cases are skipped\n", xpi_cpu_isa_name((xpi_cpu_isa)isa));
      continue;
    }
    printf("testing the %s table (decode:", k->isa);
    for (int dt = 0; dt < 8; dt++)
      if (k->gemv[dt]) printf(" %s %s", dt_name((xpi_dtype)dt), k->gemv_isa[dt]);
    printf("; prefill:");
    for (int dt = 0; dt < 8; dt++)
      if (k->gemm[dt]) printf(" %s %s", dt_name((xpi_dtype)dt), k->gemm[dt]->name);
    printf(")\n");
    vec_cases(k);
    to_half_cases(k);
    static const xpi_dtype dts[] = {XPI_DT_F32, XPI_DT_F16, XPI_DT_BF16, XPI_DT_Q8, XPI_DT_Q4};
    for (size_t di = 0; di < 5; di++)
      for (size_t ri = 0; ri < 4; ri++)
        for (size_t ci = 0; ci < 7; ci++)
          for (size_t ni = 0; ni < 3; ni++) mm_case(k, dts[di], rows_s[ri], cols_s[ci], n_s[ni]);
    /* wide rows: the decode path's column chunks (4096) and a long GEMM k loop */
    mm_case(k, XPI_DT_Q8, 3, 5000, 1);
    mm_case(k, XPI_DT_Q4, 3, 5000, 3);
    mm_case(k, XPI_DT_Q8, 5, 4200, 9); /* decode GEMV past 4 tokens (its fallback for any n) */
    mm_case(k, XPI_DT_Q4, 5, 4200, 9);
    mm_case(k, XPI_DT_BF16, 19, 1100, 7);
    mm_case(k, XPI_DT_BF16, 9, 5003, 1); /* bf16 decode rows wider than its stack buffer (4096 columns) */
    mm_case(k, XPI_DT_BF16, 6, 4100, 3);
    /* q8/q4 decode tails: 9-15 blocks (a ragged group of 8, pairs and quads, an odd last block) */
    for (int64_t c = 257; c <= 480; c += 37) {
      mm_case(k, XPI_DT_Q8, 4, c, 2);
      mm_case(k, XPI_DT_Q4, 4, c, 2);
    }
    /* prefill blocking: several 128-row groups with a ragged last panel, several 1024-column chunks with a
     * ragged last one, token counts that leave a partial 6-token panel */
    mm_case(k, XPI_DT_BF16, 300, 2100, 13);
    mm_case(k, XPI_DT_BF16, 70, 130, 40); /* full 16 x 16 tiles of tokens and rows, ragged around them */
    mm_case(k, XPI_DT_F16, 129, 1537, 6);
    mm_case(k, XPI_DT_F32, 161, 260, 5);
    mm_case(k, XPI_DT_Q8, 200, 544, 25);
    mm_case(k, XPI_DT_Q4, 150, 520, 8);
    /* the int8 GEMM: 137-140 rows give a partial 8-row panel; 299 and 301 tokens partial token panels */
    mm_case(k, XPI_DT_Q8, 140, 1000, 301);
    mm_case(k, XPI_DT_Q4, 137, 1030, 299);
    split_cases(k);
    gemv_batch_cases(k);
  }
  const xpi_cpu_kernels *best = xpi_cpu_kernels_best();
  CHECK(best != NULL && best->gemv[XPI_DT_Q8] && best->gemv[XPI_DT_Q4], "best table lacks quantized matmul");
  printf("best table: %s\n", best ? best->isa : "none");
  xpi_cpu_mm_ws_free(g_ws);
  xpi_pool_free(g_pool);
  return xpi_test_done();
}
