/* The bf16 GEMM on the matrix engine (DPAS, cl_intel_subgroup_matrix_multiply_accumulate), one body for both
 * sub-group sizes the extension defines: out[n, rows] = in[n, cols] @ W^T (+ bias) with bf16 W, cols % 16 == 0.
 * The including file defines XPI_DPAS_SG: 16 (kernels/dpas: Xe-HPC, PVC, whose smallest sub-group size is 16)
 * or 8 (kernels/dpas8: Xe-HPG, DG2 / Arc A-series, smallest 8, where the sub-group-16 form is undefined).
 * Activations are split into bf16 hi + lo parts (x ~= hi + lo to ~16 mantissa bits), two DPAS per K step, so
 * the result stays close to the f32-activation reference; accumulation is f32 in the engine.
 * With XPI_DPAS_EMULATE defined the builtin is replaced by xpi_dpas_emulate (sub-group shuffles, same operand
 * layouts): the tests build that variant and run it on a CPU OpenCL runtime, which has no matrix builtins, to
 * check this file's indexing and edge tiles (tests/xpu_intel/test_xpu_intel_dpas_emu.c). */
#ifndef XPI_GEMM_DPAS_H
#define XPI_GEMM_DPAS_H

#include "xpi_cl.h"

#if XPI_DPAS_SG != 8 && XPI_DPAS_SG != 16
#error "XPI_DPAS_SG must be 8 or 16"
#endif

#define XPI_DM 8           /* tokens per tile: the builtin's M */
#define XPI_DN XPI_DPAS_SG /* weight rows per tile: the builtin's N, one per lane */

/* The A operand (M = 8 tokens x K = 16 columns of bf16). Sub-group 16: lane l holds column l of every row,
 * one short per row. Sub-group 8: lane l holds columns 2l and 2l+1 of every row, packed low first in an int.
 * B (K = 16 x N = XPI_DN) is the same in both: lane l holds column l as VNNI pairs, b[k2] = B[2k2][l] |
 * B[2k2+1][l] << 16, which for W^T is 16 consecutive bf16 of weight row r0 + l. C: float8, row m in .sm. */
#if XPI_DPAS_SG == 16
typedef short8 xpi_dpas_a;
#define XPI_A_COLS 1 /* columns of A per lane */
#else
typedef int8 xpi_dpas_a;
#define XPI_A_COLS 2
#endif

#ifdef XPI_DPAS_EMULATE
/* C[m][l] += sum_k A[m][k] B[k][l] in k order, products of bf16 exact in f32 as in the engine. A[m][k] lives
 * on lane k / XPI_A_COLS (half k % 2 of the int for sub-group 8); B[k][l] on lane l. */
static float8 xpi_dpas_emulate(xpi_dpas_a a, int8 b, float8 acc) {
  int av[8], bv[8];
  float cv[8];
  vstore8(convert_int8(a), 0, av); /* sub-group 16: sign-extended shorts; only the low 16 bits are used */
  vstore8(b, 0, bv);
  vstore8(acc, 0, cv);
  for (int k = 0; k < 16; k++) {
    uint bw = (uint)bv[k >> 1];
    float bk = xpi_bf16_to_f32((ushort)((k & 1) ? bw >> 16 : bw & 0xffffu));
    for (int m = 0; m < 8; m++) {
      uint aw = (uint)intel_sub_group_shuffle(av[m], (uint)(k / XPI_A_COLS));
      float ak = xpi_bf16_to_f32((ushort)(XPI_A_COLS == 2 && (k & 1) ? aw >> 16 : aw & 0xffffu));
      cv[m] = fma(ak, bk, cv[m]);
    }
  }
  return vload8(0, cv);
}
#define XPI_DPAS(a, b, acc) xpi_dpas_emulate(a, b, acc)
#else
/* Provided by the Intel driver's builtins (IGC BiF), not declared by clang-15's headers. */
float8 __attribute__((overloadable)) intel_sub_group_bf16_bf16_matrix_mad_k16(xpi_dpas_a a, int8 b, float8 acc);
#define XPI_DPAS(a, b, acc) intel_sub_group_bf16_bf16_matrix_mad_k16(a, b, acc)
#endif

/* Token t0 + m's activation at column k, split into bf16 hi + lo. */
static inline void xpi_dpas_split(const global float *in, int t0, int m, int n, int cols, int k, ushort *hi,
                                  ushort *lo) {
  float x = t0 + m < n ? in[(ulong)(t0 + m) * cols + k] : 0.0f;
  ushort h = xpi_f32_to_bf16(x);
  *hi = h;
  *lo = xpi_f32_to_bf16(x - xpi_bf16_to_f32(h));
}

#if XPI_DPAS_SG == 16
/* Row m of A: this lane's column k0 + lane. */
#define XPI_A_ROW(m, S)                                                                  \
  {                                                                                      \
    ushort h_, l_;                                                                       \
    xpi_dpas_split(in, t0, m, n, cols, k0 + lane, &h_, &l_);                             \
    hi.S = (short)h_;                                                                    \
    lo.S = (short)l_;                                                                    \
  }
#else
/* Row m of A: this lane's columns k0 + 2 lane and k0 + 2 lane + 1, low first. */
#define XPI_A_ROW(m, S)                                                                  \
  {                                                                                      \
    ushort h0_, l0_, h1_, l1_;                                                           \
    xpi_dpas_split(in, t0, m, n, cols, k0 + 2 * lane, &h0_, &l0_);                       \
    xpi_dpas_split(in, t0, m, n, cols, k0 + 2 * lane + 1, &h1_, &l1_);                   \
    hi.S = (int)((uint)h0_ | (uint)h1_ << 16);                                           \
    lo.S = (int)((uint)l0_ | (uint)l1_ << 16);                                           \
  }
#endif

/* Grid: one sub-group of XPI_DN lanes per group, groups (ceil(rows / XPI_DN), ceil(n / 8)). Lane l owns weight
 * row r0 + l; rows past the end load zeros and store nothing. */
__attribute__((intel_reqd_sub_group_size(XPI_DPAS_SG)))
__attribute__((reqd_work_group_size(XPI_DPAS_SG, 1, 1)))
kernel void xpi_gemm_dpas_bf16(global float *out, const global float *in, const global ushort *w,
                               const global void *bias, int bdt, int has_bias, int rows, int cols, int n) {
  int lane = get_sub_group_local_id();
  int r0 = get_group_id(0) * XPI_DN, t0 = get_group_id(1) * XPI_DM;
  int r = r0 + lane;
  float8 acc = 0.0f;
  for (int k0 = 0; k0 < cols; k0 += 16) {
    /* 16 consecutive bf16 of row r; rows are 32-byte aligned (cols % 16 == 0), so one uint8 load. */
    int8 b = r < rows ? as_int8(*(const global uint8 *)(w + (ulong)r * cols + k0)) : (int8)0;
    xpi_dpas_a hi, lo;
    XPI_A_ROW(0, s0) XPI_A_ROW(1, s1) XPI_A_ROW(2, s2) XPI_A_ROW(3, s3)
    XPI_A_ROW(4, s4) XPI_A_ROW(5, s5) XPI_A_ROW(6, s6) XPI_A_ROW(7, s7)
    acc = XPI_DPAS(hi, b, acc);
    acc = XPI_DPAS(lo, b, acc);
  }
  if (r >= rows) return;
  float bv = has_bias ? xpi_load(bias, bdt, r) : 0.0f;
  float res[XPI_DM];
  vstore8(acc, 0, res);
  for (int m = 0; m < XPI_DM; m++)
    if (t0 + m < n) out[(ulong)(t0 + m) * rows + r] = res[m] + bv;
}

#endif
