/* Hot loops of the CPU backend behind one table, so the backend's op code is written once and the ISA
 * (scalar reference, AVX2+FMA, AVX-512/BF16/VNNI) is chosen at run time. The scalar table is the oracle
 * every faster table is tested against. */
#ifndef XPI_CPU_KERNELS_H
#define XPI_CPU_KERNELS_H

#include <stdint.h>
#include <string.h>
#include "ops/half.h"
#include "ops/ops.h"

/* Matrix product over a slice of weight rows:
 *   Y[t*ldy + r] = sum_c X[t*cols + c] * W[r, c]     for t < n, r0 <= r < r1
 * W is the weight's data in its dtype (rows of cols elements; block types per their layout), aux its
 * scales or NULL. X is f32 and may be unaligned. Accumulation in f32 (or exact int32 for quantized dots). */
typedef void (*xpi_cpu_mm_fn)(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux,
                              int64_t r0, int64_t r1, int64_t cols);

typedef struct xpi_cpu_kernels {
  const char *isa;             /* "scalar", "avx2", "avx512" */
  xpi_cpu_mm_fn mm[8];         /* indexed by xpi_dtype of the weight; NULL where unsupported */
  float (*dot)(const float *a, const float *b, int64_t n);
  void (*axpy)(float *y, float a, const float *x, int64_t n);           /* y += a*x */
  void (*scale)(float *y, float a, int64_t n);                          /* y *= a */
  /* out = x * rsqrt(mean(x^2)+eps) * w, w in wdt (f32/bf16/f16) */
  void (*rmsnorm_row)(float *out, const float *x, const void *w, xpi_dtype wdt, int64_t d, float eps);
  void (*swiglu)(float *out, const float *gate, const float *up, int64_t n);
} xpi_cpu_kernels;

/* Element i of an f32/bf16/f16 array as f32; the pointer may be unaligned (weights live in the file mapping). */
static inline float xpi_cpu_load_elem(const void *p, xpi_dtype dt, int64_t i) {
  const unsigned char *b = (const unsigned char *)p;
  if (dt == XPI_DT_F32) {
    float f;
    memcpy(&f, b + 4 * i, 4);
    return f;
  }
  uint16_t h;
  memcpy(&h, b + 2 * i, 2);
  return dt == XPI_DT_BF16 ? xpi_bf16_to_f32(h) : xpi_f16_to_f32(h);
}

const xpi_cpu_kernels *xpi_cpu_kernels_scalar(void);
/* The fastest table this CPU supports (XPI_CPU_ISA=scalar|avx2|avx512 overrides, for tests and benchmarks). */
const xpi_cpu_kernels *xpi_cpu_kernels_best(void);

#endif
