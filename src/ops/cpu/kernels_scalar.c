/* The scalar kernel table: plain C, the oracle every faster table is tested against. Loops use four
 * independent accumulators so the compiler can keep the FPU busy without -ffast-math reassociation. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/quant.h" /* q8/q4 reference matmuls (perf) */
#include "ops/half.h"

static float dot_f32(const float *a, const float *b, int64_t n) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; i++) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

static void axpy_f32(float *y, float a, const float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

static void scale_f32(float *y, float a, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] *= a;
}

/* Converts row r of a half-precision matrix to f32 (the weight pointer may be unaligned). */
static void row_to_f32(float *dst, const unsigned char *src, xpi_dtype dt, int64_t cols) {
  for (int64_t c = 0; c < cols; c++) {
    uint16_t h;
    memcpy(&h, src + 2 * c, 2);
    dst[c] = dt == XPI_DT_BF16 ? xpi_bf16_to_f32(h) : xpi_f16_to_f32(h);
  }
}

/* Y[t, r] for the row range. Each weight row is converted to f32 once and reused for all n tokens.
 * Unaligned inputs are copied first; if a scratch allocation fails (the kernel cannot report it) the
 * element-by-element path computes the same sums in the same order. */
static void mm_generic(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, int64_t r0, int64_t r1,
                       int64_t cols, xpi_dtype dt) {
  size_t esz = xpi_dtype_size(dt);
  int w_direct = dt == XPI_DT_F32 && ((uintptr_t)W % sizeof(float)) == 0;
  float *row = w_direct ? NULL : malloc((size_t)cols * sizeof *row);
  float *xcopy = NULL;
  if (((uintptr_t)X % sizeof(float)) != 0) {
    xcopy = malloc((size_t)n * (size_t)cols * sizeof *xcopy);
    if (xcopy) memcpy(xcopy, X, (size_t)n * (size_t)cols * sizeof *xcopy);
  }
  if ((!w_direct && !row) || (((uintptr_t)X % sizeof(float)) != 0 && !xcopy)) {
    for (int64_t r = r0; r < r1; r++)
      for (int32_t t = 0; t < n; t++) {
        float acc[4] = {0, 0, 0, 0};
        for (int64_t c = 0; c < cols; c++) {
          float xv;
          memcpy(&xv, (const unsigned char *)X + ((size_t)t * (size_t)cols + (size_t)c) * 4, 4);
          acc[(c < (cols & ~(int64_t)3)) ? (c & 3) : 0] += xv * xpi_cpu_load_elem(W, dt, r * cols + c);
        }
        Y[t * ldy + r] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
      }
  } else {
    if (xcopy) X = xcopy;
    for (int64_t r = r0; r < r1; r++) {
      const float *wr;
      if (w_direct) {
        wr = (const float *)W + r * cols;
      } else {
        const unsigned char *src = (const unsigned char *)W + (size_t)(r * cols) * esz;
        if (dt == XPI_DT_F32) memcpy(row, src, (size_t)cols * 4);
        else row_to_f32(row, src, dt, cols);
        wr = row;
      }
      for (int32_t t = 0; t < n; t++) Y[t * ldy + r] = dot_f32(X + (size_t)t * (size_t)cols, wr, cols);
    }
  }
  free(row);
  free(xcopy);
}

static void mm_f32(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux, int64_t r0,
                   int64_t r1, int64_t cols) {
  (void)aux;
  mm_generic(Y, ldy, X, n, W, r0, r1, cols, XPI_DT_F32);
}
static void mm_f16(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux, int64_t r0,
                   int64_t r1, int64_t cols) {
  (void)aux;
  mm_generic(Y, ldy, X, n, W, r0, r1, cols, XPI_DT_F16);
}
static void mm_bf16(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux, int64_t r0,
                    int64_t r1, int64_t cols) {
  (void)aux;
  mm_generic(Y, ldy, X, n, W, r0, r1, cols, XPI_DT_BF16);
}

/* As transformers' RMSNorm in f32: x * rsqrt(mean(x^2) + eps), then times the weight. */
static void rmsnorm_row(float *out, const float *x, const void *w, xpi_dtype wdt, int64_t d, float eps) {
  float ss = dot_f32(x, x, d);
  float r = 1.0f / sqrtf(ss / (float)d + eps);
  for (int64_t i = 0; i < d; i++) out[i] = xpi_cpu_load_elem(w, wdt, i) * (x[i] * r);
}

static void swiglu(float *out, const float *gate, const float *up, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float g = gate[i];
    out[i] = (g / (1.0f + expf(-g))) * up[i];
  }
}

static void geglu(float *out, const float *gate, const float *up, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    const float g = gate[i], inner = 0.7978845608028654f * (g + 0.044715f * g * g * g);
    out[i] = 0.5f * g * (1.0f + tanhf(inner)) * up[i];
  }
}

static void softcap(float *x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; i++) x[i] = cap * tanhf(x[i] / cap);
}

static void to_half(uint16_t *dst, const float *src, int64_t n, xpi_dtype dt) {
  for (int64_t i = 0; i < n; i++) dst[i] = dt == XPI_DT_BF16 ? xpi_f32_to_bf16(src[i]) : xpi_f32_to_f16(src[i]);
}

static const xpi_cpu_kernels k_scalar = {
  .isa = "scalar",
  /* one loop for every n: no prefill GEMM */
  .gemv = {[XPI_DT_F32] = mm_f32, [XPI_DT_F16] = mm_f16, [XPI_DT_BF16] = mm_bf16,
           [XPI_DT_Q8] = xpi_mm_q8_scalar, [XPI_DT_Q4] = xpi_mm_q4_scalar},
  .gemv_isa = {[XPI_DT_F32] = "scalar", [XPI_DT_F16] = "scalar", [XPI_DT_BF16] = "scalar", [XPI_DT_Q8] = "scalar",
               [XPI_DT_Q4] = "scalar"},
  .dot = dot_f32,
  .axpy = axpy_f32,
  .scale = scale_f32,
  .rmsnorm_row = rmsnorm_row,
  .swiglu = swiglu,
  .geglu = geglu,
  .softcap = softcap,
  .attn_tile = xpi_cpu_attn_tile_scalar,
  .to_half = to_half,
};

const xpi_cpu_kernels *xpi_cpu_kernels_scalar(void) { return &k_scalar; }
