/* The q8/q4 block formats (quant_format.h): quantize at load, dequantize, the activations' int8 rounding and the
 * integer-path reference dot, shared by every backend. */
#include "ops/quant_format.h"

#include <math.h>
#include <string.h>
#include "core/status.h"

int64_t xpi_q_row_bytes(xpi_dtype dt, int64_t cols) {
  return xpi_q_nblocks(cols) * (dt == XPI_DT_Q4 ? XPI_QK / 2 : XPI_QK);
}

/* The half nearest to s whose magnitude is >= |s| (so quants stay in range). */
static uint16_t f16_round_up(float s) {
  uint16_t h = xpi_f32_to_f16(s);
  if (fabsf(xpi_f16_to_f32(h)) < fabsf(s)) h++;
  return h;
}

/* v rounded to nearest (ties away from zero), clamped to [lo, hi]. Inline, as nearbyintf is a libm call per
 * weight and made loading a 0.6B model at q4 take a minute of CPU; |v| stays far below 2^31 here. The clamp is
 * on the integer because the compiler makes integer min/max branch-free, while a float clamp stays a compare
 * and branch (minss differs from it on NaN) that mispredicts on random weights: q4 load 17-19% less CPU. */
static inline int32_t round_clamp(float v, int32_t lo, int32_t hi) {
  int32_t i = (int32_t)(v + copysignf(0.5f, v));
  i = i < hi ? i : hi;
  return i > lo ? i : lo;
}

/* Sums of a Q4 block's quants v_j = clamp(round(x_j * inv), -8, 7) under importance weights w: s[0] = sum w x v,
 * s[1] = sum w v^2; the weighted error of scale d with these quants is sum w x^2 - 2 d s[0] + d^2 s[1]. The
 * search runs this five times per block and is most of a q4 load, so it is written in GCC vector extensions
 * (4 floats: SSE2 on any x86-64), which plain C with its NaN-exact compares does not become: rounding by the
 * 1.5 * 2^23 trick (to nearest even: ties do not matter to a search), the clamp as bit selects, lanes summed in
 * a fixed order. */
typedef float q4_v4f __attribute__((vector_size(16)));
typedef int32_t q4_v4i __attribute__((vector_size(16)));
static void q4_grid_sums(const float *x, const float *w, float inv, float s[2]) {
  const q4_v4f magic = {12582912.0f, 12582912.0f, 12582912.0f, 12582912.0f}, lo = {-8, -8, -8, -8},
               hi = {7, 7, 7, 7};
  q4_v4f a = {0}, b = {0};
  for (int j = 0; j < XPI_QK; j += 4) {
    q4_v4f xv, wv;
    memcpy(&xv, x + j, sizeof xv);
    memcpy(&wv, w + j, sizeof wv);
    q4_v4f v = (xv * inv + magic) - magic; /* |x * inv| <= 8.8 here */
    q4_v4i m = v < lo;
    v = (q4_v4f)(((q4_v4i)v & ~m) | ((q4_v4i)lo & m));
    m = v > hi;
    v = (q4_v4f)(((q4_v4i)v & ~m) | ((q4_v4i)hi & m));
    a += wv * xv * v;
    b += wv * v * v;
  }
  s[0] = (a[0] + a[1]) + (a[2] + a[3]);
  s[1] = (b[0] + b[1]) + (b[2] + b[3]);
}

/* Squared error of a Q4 block at scale d with its best quants (x_j / d rounded, clamped to [-8, 7]), summed
 * directly (no cancellation): what the final quantization at d will give, up to f32 rounding (~1e-6). */
static float q4_sse(const float *x, float d) {
  const float inv = 1.0f / d;
  const q4_v4f magic = {12582912.0f, 12582912.0f, 12582912.0f, 12582912.0f}, lo = {-8, -8, -8, -8},
               hi = {7, 7, 7, 7};
  q4_v4f acc = {0};
  for (int j = 0; j < XPI_QK; j += 4) {
    q4_v4f xv;
    memcpy(&xv, x + j, sizeof xv);
    q4_v4f v = (xv * inv + magic) - magic; /* |x / d| < 2^22 here: d is near |d0| >= max|x| / 8 */
    q4_v4i m = v < lo;
    v = (q4_v4f)(((q4_v4i)v & ~m) | ((q4_v4i)lo & m));
    m = v > hi;
    v = (q4_v4f)(((q4_v4i)v & ~m) | ((q4_v4i)hi & m));
    const q4_v4f e = xv - d * v;
    acc += e * e;
  }
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

#define Q4_GRID_K 2 /* grids -8 + 0.4k, |k| <= Q4_GRID_K (|k| <= 1 was clearly worse: x1.36) */

/* Q4 scale (as a half value), an error-minimizing search as llama.cpp's make_qx_quants does for its k-quants:
 * the scale minimizes sum_j w_j (x_j - d q_j)^2 with importance weights w_j = rms(x) + |x_j| (those of its
 * q4_K reference quantizer), so a block's large weights, which matter most to the model, are kept more
 * exactly than a plain least-squares fit keeps them. Candidates: the max-based d0 = -m/8 (Q4_0's scale, m the
 * element of largest magnitude with its sign) and the weighted least-squares scale of the quant grids
 * round(x * (-8 + 0.4k) / m), |k| <= 2 (k = 0 is d0's grid). Measured on SmolLM2-135M-Instruct
 * (bench/2026-12-01-smollm2-quality.md): perplexity x1.26 of bf16's where the unweighted fit of d0's grid alone
 * (the previous choice) gave x1.39 and d0 alone x1.33; finer or wider grids (19 candidates) and other weights
 * (1, x^2, rms^2 + x^2) were not better on four texts. A searched scale is kept only if the block's plain RMS
 * error with it, rounded to a half and with the quants it gives, stays within |d0| (quant_format.h's bound). */
static uint16_t q4_best_scale(const float *x, float m) {
  const uint16_t h0 = f16_round_up(-m / 8.0f);
  const float d0 = xpi_f16_to_f32(h0);
  float w[XPI_QK], s[2];
  q4_v4f acc = {0};
  for (int j = 0; j < XPI_QK; j += 4) {
    q4_v4f xv;
    memcpy(&xv, x + j, sizeof xv);
    acc += xv * xv;
  }
  const float sx2 = (acc[0] + acc[1]) + (acc[2] + acc[3]), rms = sqrtf(sx2 / XPI_QK);
  const q4_v4i nosign = {0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff};
  acc = (q4_v4f){0};
  for (int j = 0; j < XPI_QK; j += 4) {
    q4_v4f xv;
    memcpy(&xv, x + j, sizeof xv);
    const q4_v4f wv = rms + (q4_v4f)((q4_v4i)xv & nosign);
    memcpy(w + j, &wv, sizeof wv);
    acc += wv * xv * xv;
  }
  const float swx2 = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  q4_grid_sums(x, w, 1.0f / d0, s); /* d0's own quants: its exact error, and its grid's fit */
  /* A grid's best error is swx2 - s0^2 / s1: the largest s0^2 / s1 wins (compared cross-multiplied). */
  const float err0 = swx2 - 2 * d0 * s[0] + d0 * d0 * s[1], im = 1.0f / m;
  float bn = 0, bd = 0, bs[2] = {0}; /* best grid's s0^2, s1 and sums */
  for (int k = -Q4_GRID_K; k <= Q4_GRID_K; k++) {
    if (k != 0) q4_grid_sums(x, w, (-8.0f + 0.4f * (float)k) * im, s);
    if (s[1] > 0 && (bd == 0 || s[0] * s[0] * bd > bn * s[1])) {
      bn = s[0] * s[0], bd = s[1];
      memcpy(bs, s, sizeof bs);
    }
  }
  if (bd <= 0 || !(swx2 - bn / bd < err0)) return h0;
  const uint16_t h = xpi_f32_to_f16(bs[0] / bs[1]);
  const float dh = xpi_f16_to_f32(h);
  /* quant_format.h's bound, on the scale as stored and the quants it will get; 0.999 covers the f32 sum's rounding */
  if (!(dh != 0 && q4_sse(x, dh) <= XPI_QK * d0 * d0 * 0.999f)) return h0;
  return h;
}

static float load_src(const void *src, xpi_dtype dt, int64_t i) {
  switch (dt) {
    case XPI_DT_F32: { float f; memcpy(&f, (const char *)src + i * 4, 4); return f; }
    case XPI_DT_F16: { uint16_t h; memcpy(&h, (const char *)src + i * 2, 2); return xpi_f16_to_f32(h); }
    default: { uint16_t h; memcpy(&h, (const char *)src + i * 2, 2); return xpi_bf16_to_f32(h); }
  }
}

xpi_status xpi_quantize_rows(xpi_dtype dt, void *qs, uint16_t *d, const void *src, xpi_dtype src_dtype,
                             int64_t rows, int64_t cols) {
  if ((dt != XPI_DT_Q8 && dt != XPI_DT_Q4) ||
      (src_dtype != XPI_DT_F32 && src_dtype != XPI_DT_F16 && src_dtype != XPI_DT_BF16))
    return xpi_err(XPI_ERR_UNSUPPORTED, "quantize: %s weights to %s is not supported (only f32/f16/bf16 to q8/q4)",
                   xpi_dtype_name(src_dtype), xpi_dtype_name(dt));
  const int64_t nb = xpi_q_nblocks(cols), rb = xpi_q_row_bytes(dt, cols);
  float blk[XPI_QK];
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t b = 0; b < nb; b++) {
      float amax = 0, m = 0;
      int finite = 1;
      for (int j = 0; j < XPI_QK; j++) {
        int64_t c = b * XPI_QK + j;
        blk[j] = c < cols ? load_src(src, src_dtype, r * cols + c) : 0.0f;
        finite &= isfinite(blk[j]) != 0;
        const float a = fabsf(blk[j]);
        amax = a > amax ? a : amax; /* maxss, no branch */
      }
      if (!finite)
        for (int j = 0; j < XPI_QK; j++)
          if (!isfinite(blk[j]))
            return xpi_err(XPI_ERR_INVALID_ARGUMENT, "quantize: weight [%lld, %lld] is not finite", (long long)r,
                           (long long)(b * XPI_QK + j));
      for (int j = 0; j < XPI_QK; j++) /* m: the first element of largest magnitude, with its sign */
        if (fabsf(blk[j]) == amax) { m = blk[j]; break; }
      const float want = dt == XPI_DT_Q8 ? amax / 127.0f : -m / 8.0f;
      if (fabsf(want) > 65504.0f)
        return xpi_err(XPI_ERR_INVALID_ARGUMENT,
                       "quantize: block %lld of row %lld has |w| = %g, beyond the half-precision scale range",
                       (long long)b, (long long)r, (double)amax);
      const uint16_t hd = dt == XPI_DT_Q4 && amax > 0 ? q4_best_scale(blk, m) : f16_round_up(want);
      const float dd = xpi_f16_to_f32(hd), id = dd != 0.0f ? 1.0f / dd : 0.0f;
      d[r * nb + b] = hd;
      if (dt == XPI_DT_Q8) {
        int8_t *q = (int8_t *)qs + r * rb + b * XPI_QK;
        for (int j = 0; j < XPI_QK; j++) {
          q[j] = (int8_t)round_clamp(blk[j] * id, -127, 127);
        }
      } else {
        uint8_t *q = (uint8_t *)qs + r * rb + b * (XPI_QK / 2);
        for (int j = 0; j < XPI_QK / 2; j++) {
          const int ql = round_clamp(blk[j] * id, -8, 7) + 8, qh = round_clamp(blk[j + 16] * id, -8, 7) + 8;
          q[j] = (uint8_t)(ql | (qh << 4));
        }
      }
    }
  }
  return XPI_OK;
}

void xpi_dequantize_row(xpi_dtype dt, float *out, const void *qs, const uint16_t *d, int64_t row, int64_t cols) {
  const int64_t nb = xpi_q_nblocks(cols), rb = xpi_q_row_bytes(dt, cols);
  for (int64_t c = 0; c < cols; c++)
    out[c] = xpi_f16_to_f32(d[row * nb + c / XPI_QK]) * (float)xpi_q_at(dt, qs, rb, row, c);
}

void xpi_quantize_act_scalar(int8_t *xq, float *dx, float *sx, const float *x, int64_t cols) {
  const int64_t nb = xpi_q_nblocks(cols);
  for (int64_t b = 0; b < nb; b++) {
    float amax = 0;
    for (int j = 0; j < XPI_QK; j++) {
      int64_t c = b * XPI_QK + j;
      if (c < cols && fabsf(x[c]) > amax) amax = fabsf(x[c]);
    }
    const float s = xpi_quant_act_prescale(amax);
    const float d = amax / 127.0f, id = amax > 0 ? 127.0f / (amax * s) : 0.0f;
    int sum = 0;
    for (int j = 0; j < XPI_QK; j++) {
      int64_t c = b * XPI_QK + j;
      int q = c < cols ? (int)nearbyintf(x[c] * s * id) : 0; /* nearest even, as the kernels' cvtps */
      xq[c] = (int8_t)q;
      sum += q;
    }
    dx[b] = d;
    sx[b] = d * (float)sum;
  }
}

float xpi_q_dot_int_scalar(xpi_dtype dt, const void *qs, const uint16_t *d, int64_t row, const int8_t *xq,
                           const float *dx, int64_t cols) {
  const int64_t nb = xpi_q_nblocks(cols), rb = xpi_q_row_bytes(dt, cols);
  float acc = 0;
  for (int64_t b = 0; b < nb; b++)
    acc += xpi_f16_to_f32(d[row * nb + b]) * dx[b] * (float)xpi_q_block_dot(dt, qs, rb, row, b, xq + b * XPI_QK);
  return acc;
}
