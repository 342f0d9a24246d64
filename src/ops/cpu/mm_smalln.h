/* Matmul for a few tokens at once (batched decode: one token per sequence), f32/f16/bf16 weights: each weight
 * row is read from memory once and converted in registers, then multiplied by every token (mm_smalln_avx512.c).
 * The decode GEMV serves 1-3 tokens and the packed prefill GEMM many; between them the GEMM's per-call weight
 * panel conversion costs more than the products (measured 6x the one-token GEMV at 4 tokens, bf16), while this
 * kernel's cost grows with the tokens' products only. */
#ifndef XPI_CPU_MM_SMALLN_H
#define XPI_CPU_MM_SMALLN_H

#include <stdint.h>
#include "ops/ops.h"

/* Tokens up to which the small-n kernel is used (from XPI_CPU_GEMM_MIN_N); more take the prefill GEMM. */
#define XPI_CPU_SMALLN_MAX 64

/* Y[t*ldy + r] = sum_c X[t*cols + c] * W[r, c] for t < n, r0 <= r < r1; W in dt (f32, f16, bf16) rows of cols
 * elements, f32 accumulation. AVX-512 F/BW/VL (call only where the CPU has them). */
void xpi_cpu_mm_smalln_avx512(xpi_dtype dt, float *Y, int64_t ldy, const float *X, int32_t n, const void *W,
                              int64_t r0, int64_t r1, int64_t cols);

#endif
