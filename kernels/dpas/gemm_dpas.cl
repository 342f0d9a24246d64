/* Intel-tuned GEMM on the matrix engine (DPAS, cl_intel_subgroup_matrix_multiply_accumulate, sub-group 16
 * as on Xe-HPC): out[n, rows] = in[n, cols] @ W^T (+ bias) with bf16 W. Selected at run time only where the
 * device reports DPAS (xpi_device_info.has_dpas) and cols % 16 == 0.
 * Activations are split into bf16 hi + lo parts (x ~= hi + lo to ~16 mantissa bits), two DPAS per K step,
 * so the result stays close to the f32-activation reference; accumulation is f32 in the engine. */
#include "xpi_cl.h"

/* Provided by the Intel driver's builtins (IGC BiF), not declared by clang-15's headers.
 * Sub-group 16: a = A[8 x 16] (work-item l holds column l of the 8 rows), b = B[16 x 16] in VNNI pairs
 * (work-item l holds column l: b[k2] = B[2k2][l] | B[2k2+1][l] << 16), acc/result C[8 x 16] (row m in .sm). */
float8 __attribute__((overloadable)) intel_sub_group_bf16_bf16_matrix_mad_k16(short8 a, int8 b, float8 acc);

#define XPI_DM 8  /* tokens per tile */
#define XPI_DN 16 /* weight rows per tile (the sub-group) */

/* Token t0 + m's activation at column k0 + lane, split into bf16 hi + lo (components S of hi and lo). */
#define XPI_SPLIT(m, S)                                                                   \
  {                                                                                      \
    float x_ = t0 + (m) < n ? in[(ulong)(t0 + (m)) * cols + k0 + lane] : 0.0f;            \
    ushort h_ = xpi_f32_to_bf16(x_);                                                     \
    hi.S = (short)h_;                                                                    \
    lo.S = (short)xpi_f32_to_bf16(x_ - xpi_bf16_to_f32(h_));                             \
  }

/* Grid: one sub-group of 16 per group, groups (ceil(rows/16), ceil(n/8)). Lane l owns weight row r0 + l. */
__attribute__((intel_reqd_sub_group_size(16)))
__attribute__((reqd_work_group_size(16, 1, 1)))
kernel void xpi_gemm_dpas_bf16(global float *out, const global float *in, const global ushort *w,
                               const global void *bias, int bdt, int has_bias, int rows, int cols, int n) {
  int lane = get_sub_group_local_id();
  int r0 = get_group_id(0) * XPI_DN, t0 = get_group_id(1) * XPI_DM;
  int r = r0 + lane;
  float8 acc = 0.0f;
  for (int k0 = 0; k0 < cols; k0 += 16) {
    /* B column `lane` = 16 consecutive bf16 of weight row r: exactly the VNNI pairs, low element first.
     * Rows are 32-byte aligned (cols % 16 == 0), so one uint8 load. */
    int8 b = r < rows ? as_int8(*(const global uint8 *)(w + (ulong)r * cols + k0)) : (int8)0;
    short8 hi, lo;
    XPI_SPLIT(0, s0) XPI_SPLIT(1, s1) XPI_SPLIT(2, s2) XPI_SPLIT(3, s3)
    XPI_SPLIT(4, s4) XPI_SPLIT(5, s5) XPI_SPLIT(6, s6) XPI_SPLIT(7, s7)
    acc = intel_sub_group_bf16_bf16_matrix_mad_k16(hi, b, acc);
    acc = intel_sub_group_bf16_bf16_matrix_mad_k16(lo, b, acc);
  }
  if (r >= rows) return;
  float bv = has_bias ? xpi_load(bias, bdt, r) : 0.0f;
  float res[XPI_DM] = {acc.s0, acc.s1, acc.s2, acc.s3, acc.s4, acc.s5, acc.s6, acc.s7};
  for (int m = 0; m < XPI_DM; m++)
    if (t0 + m < n) out[(ulong)(t0 + m) * rows + r] = res[m] + bv;
}
