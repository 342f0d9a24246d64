/* The CPU's scalar reference matmuls over the q8/q4 block formats (ops/quant_format.h: the formats, their
 * rounding rules and error bounds, shared with the XPU). */
#ifndef XPI_CPU_QUANT_H
#define XPI_CPU_QUANT_H

#include <stdint.h>
#include "ops/quant_format.h"

/* Scalar reference matmul (the oracle of the semantics above), cpu_kernels.h xpi_cpu_mm_fn signature. */
void xpi_mm_q8_scalar(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux,
                      int64_t r0, int64_t r1, int64_t cols);
void xpi_mm_q4_scalar(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux,
                      int64_t r0, int64_t r1, int64_t cols);

#endif
