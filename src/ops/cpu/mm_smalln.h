/* Matmul for a few tokens at once (batched decode: one token per sequence), f32/f16/bf16 weights: each weight
 * row is read from memory once and converted in registers, then multiplied by every token (mm_smalln_avx512.c).
 * The decode GEMV serves 1-3 tokens and the packed prefill GEMM many; between them the GEMM's per-call weight
 * panel conversion costs more than the products (measured 6x the one-token GEMV at 4 tokens, bf16), while this
 * kernel's cost grows with the tokens' products only. Each weight row is converted once per group of tokens
 * (6 at a time) while it sits in L1. */
#ifndef XPI_CPU_MM_SMALLN_H
#define XPI_CPU_MM_SMALLN_H

#include <stdint.h>
#include "ops/ops.h"

/* Tokens up to which the small-n kernel is used (from XPI_CPU_GEMM_MIN_N); more take the prefill GEMM. Measured
 * on the Xeon here (bf16, 3072 x 1024, CPU time a call): the AVX-512 kernel beats the packed GEMM up to 128
 * tokens (1.3x at 64, 3-4x at 4-8); the AVX2 one only up to 16 (45 vs 25 GFLOP/s at 8, 39 vs 49 at 32). */
#define XPI_CPU_SMALLN_MAX 64
#define XPI_CPU_SMALLN_MAX_AVX2 16
/* With AMX, its bf16 GEMM overtakes the AVX-512 kernel from 16 tokens (bench/kernel_bench.c, 2 threads, bf16
 * Qwen3-0.6B shapes, GMAC/s small-n vs AMX GEMM: 10.7 vs 5.2 at 4 tokens, 15.9 vs 10.4 at 8, 20.7 vs 21.2 at 16,
 * 30.8 vs 60.1 at 32, 33.9 vs 83.4 at 64). */
#define XPI_CPU_SMALLN_MAX_AMX_BF16 16
/* q8/q4 weights: the AMX int8 GEMM converts every weight panel it touches on each call, which a few tokens do not
 * repay; the decode GEMV (weights read once per pass of 8 tokens, kept in L1 between them; AVX-512 q4 unpacks a
 * block once for 4 tokens, q8 transposes 16 blocks once for 8) is faster up to here. 16-core Xeon host, 2 threads,
 * kernel_bench GMAC/s, GEMV vs AMX GEMM: q4 128.3 vs 32.7 at 4 tokens, 138.2 vs 65.6 at 8, 140.4 vs 89.8 at 12,
 * 145.3 vs 127.2 at 16. q8 with the transposed blocks (kernel_bench, CPU time of one thread, weights in L3, the
 * 2-core Xeon; bench/2026-12-01-q8-gemv-xeon.md): GEMV 72-91 vs AMX 44.5 at 12 tokens, 69.5 at 16, 94.9 at 24. */
#define XPI_CPU_GEMV_MAX_AMX_Q4 16
#define XPI_CPU_GEMV_MAX_AMX_Q8 16
/* Without AMX, the AVX-512 table's GEMV against its VNNI int8 GEMM (same measurement): q8 86.6 vs 43.8 at 16
 * tokens, 90.6 vs 52.3 at 32, 76.4 vs 63.3 at 64 (from memory the GEMV reads the weights once per 8 tokens: kept
 * to 32); q4 67.6 vs 61.5 at 16, 63.6 vs 79.0 at 32. */
#define XPI_CPU_GEMV_MAX_AVX512_Q4 16
#define XPI_CPU_GEMV_MAX_AVX512_Q8 32

/* Y[t*ldy + r] = sum_c X[t*cols + c] * W[r, c] for t < n, r0 <= r < r1; W in dt (f32, f16, bf16) rows of cols
 * elements, f32 accumulation. AVX-512 F/BW/VL (call only where the CPU has them). */
void xpi_cpu_mm_smalln_avx512(xpi_dtype dt, float *Y, int64_t ldy, const float *X, int32_t n, const void *W,
                              int64_t r0, int64_t r1, int64_t cols);
/* The same with AVX2 + FMA + F16C (mm_smalln_avx2.c). */
void xpi_cpu_mm_smalln_avx2(xpi_dtype dt, float *Y, int64_t ldy, const float *X, int32_t n, const void *W, int64_t r0,
                            int64_t r1, int64_t cols);

#endif
