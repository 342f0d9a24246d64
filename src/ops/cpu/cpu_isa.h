/* The ISA-specific kernel tables and the CPU feature checks that choose between them (dispatch.c).
 * Call a table's getter and its kernels only where xpi_cpu_has(isa); xpi_cpu_kernels_for() checks. */
#ifndef XPI_CPU_ISA_H
#define XPI_CPU_ISA_H

#include "ops/cpu/cpu_kernels.h"

typedef enum xpi_cpu_isa { XPI_ISA_SCALAR = 0, XPI_ISA_AVX2 = 1, XPI_ISA_AVX512 = 2 } xpi_cpu_isa;

const xpi_cpu_kernels *xpi_cpu_kernels_avx2(void);   /* AVX2 + FMA + F16C */
const xpi_cpu_kernels *xpi_cpu_kernels_avx512(void); /* AVX-512 F/BW/VL/DQ + BF16 + VNNI */

/* 1 when the CPU and the OS (XSAVE state enabled, checked with xgetbv) support the ISA. */
int xpi_cpu_has(xpi_cpu_isa isa);
/* The table for an ISA, or NULL when this CPU cannot run it. */
const xpi_cpu_kernels *xpi_cpu_kernels_for(xpi_cpu_isa isa);

/* Decode activations -> int8 blocks of 32 (as xpi_quantize_act_scalar) plus |xq| in xa (AVX2; shared with
 * the AVX-512 table). */
void xpi_quant_act_avx2(int8_t *xq, uint8_t *xa, float *dx, float *sx, const float *x, int64_t cols);

/* Prefill (n >= this) uses the blocked GEMM; smaller n the streaming GEMV. */
#define XPI_CPU_GEMM_MIN_N 4

/* A decode GEMV (n < XPI_CPU_GEMM_MIN_N tokens), with the dtype first. */
typedef void (*xpi_cpu_gemv_fn)(xpi_dtype dt, float *Y, int64_t ldy, const float *X, int32_t n, const void *W,
                                const void *aux, int64_t r0, int64_t r1, int64_t cols);

/* Any n through a decode GEMV, XPI_CPU_GEMM_MIN_N - 1 tokens at a time: the fallback of a GEMM whose packing
 * buffer cannot be allocated. */
static inline void xpi_cpu_gemv_chunks(xpi_cpu_gemv_fn gemv, xpi_dtype dt, float *Y, int64_t ldy, const float *X,
                                       int32_t n, const void *W, const void *aux, int64_t r0, int64_t r1,
                                       int64_t cols) {
  for (int32_t t = 0; t < n; t += XPI_CPU_GEMM_MIN_N - 1) {
    const int32_t m = n - t < XPI_CPU_GEMM_MIN_N - 1 ? n - t : XPI_CPU_GEMM_MIN_N - 1;
    gemv(dt, Y + (int64_t)t * ldy, ldy, X + (int64_t)t * cols, m, W, aux, r0, r1, cols);
  }
}

#endif
