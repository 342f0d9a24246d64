/* The q8/q4 prefill GEMM on the matrix engine (DPAS int8, cl_intel_subgroup_matrix_multiply_accumulate), for both
 * sub-group sizes as xpi_gemm_dpas.h (the including file defines XPI_DPAS_SG): out[n, rows] = in[n, cols] @ W^T
 * (+ bias) with the weights in the CPU's block formats (kernels/common/xpi_quant.h) and the activations quantized
 * per 32-block by xpi_quant_act (the CPU's bits). A block is K = 32, so one intel_sub_group_i8_i8_matrix_mad_k32
 * from a zero accumulator is the exact int32 dot of a weight block with an activation block, for 8 tokens x
 * XPI_DN rows; each is then scaled as the portable xpi_gemm_q8/q4 (kernels/portable/matmul_q.cl) do, v = d * dx
 * * (float)dot with the two products rounded in that order, and summed over the blocks in block order from 0.
 * Every f32 operation is the portable GEMM's, in its order: the outputs are its bits (checked exactly by
 * tests/xpu_intel/test_xpu_intel_dpas_emu.c on Intel's compiler). Only a compiler that fused acc + v into an
 * fma (OpenCL allows it only within one expression; both kernels keep them in separate statements) could
 * differ, by at most one rounding of each block's term: |dpas - portable| <= nb u sum_b |v_b|.
 * q4 nibbles are unpacked (value nibble - 8) to int8 in registers. XPI_DPAS_EMULATE replaces the builtin by a
 * sub-group-shuffle emulation with the same operand layouts, for the CPU-runtime tests, as xpi_gemm_dpas.h. */
#ifndef XPI_GEMM_DPAS_Q_H
#define XPI_GEMM_DPAS_Q_H

#include "xpi_cl.h"
#include "xpi_gemm_dpas.h" /* XPI_DM (tokens per tile), XPI_DN (rows per tile, one per lane) */
#include "xpi_quant.h"     /* XPI_QK, the block formats, xpi_qb_q8/q4 (B: a weight block's quants as int8) */

/* The A operand (M = 8 tokens x K = 32 int8 activation quants). Sub-group 16: lane l holds columns 2l, 2l+1 of
 * every row, packed low first in a short; sub-group 8: columns 4l .. 4l+3 in an int. Either way a row's 32
 * quants are one sub-group block read of the block's 32 contiguous bytes. B (K = 32 x N = XPI_DN): lane l holds
 * column l, 4 consecutive K packed low first per int (b[i] = B[4i .. 4i+3][l]), which for W^T is the 32 quants
 * of weight row r0 + l's block in storage order (xpi_qb_q8/q4). C: int8, row m in .sm. */
#if XPI_DPAS_SG == 16
typedef short8 xpi_dpas_qa;
#define XPI_QA_COLS 2 /* columns of A per lane */
#define XPI_QA_ROW(p) as_short(intel_sub_group_block_read_us((const global ushort *)(p)))
#else
typedef int8 xpi_dpas_qa;
#define XPI_QA_COLS 4
#define XPI_QA_ROW(p) as_int(intel_sub_group_block_read((const global uint *)(p)))
#endif

#ifdef XPI_DPAS_EMULATE
/* C[m][l] += sum_k A[m][k] B[k][l] (exact in int32). A[m][k] is byte k % XPI_QA_COLS of lane k / XPI_QA_COLS's
 * element m; B[k][l] byte k % 4 of lane l's int k / 4. */
static int8 xpi_dpas_i8_emulate(xpi_dpas_qa a, int8 b, int8 acc) {
  int av[8], bv[8], cv[8];
  vstore8(convert_int8(a), 0, av); /* sub-group 16: sign-extended shorts; only the low 16 bits are used */
  vstore8(b, 0, bv);
  vstore8(acc, 0, cv);
  for (int k = 0; k < XPI_QK; k++) {
    const int bk = (char)(bv[k >> 2] >> (8 * (k & 3)));
    for (int m = 0; m < 8; m++) {
      const int aw = intel_sub_group_shuffle(av[m], (uint)(k / XPI_QA_COLS));
      cv[m] += (int)(char)(aw >> (8 * (k % XPI_QA_COLS))) * bk;
    }
  }
  return vload8(0, cv);
}
#define XPI_DPAS_I8(a, b, acc) xpi_dpas_i8_emulate(a, b, acc)
#else
/* Provided by the Intel driver's builtins (IGC BiF), not declared by clang-15's headers. */
int8 __attribute__((overloadable)) intel_sub_group_i8_i8_matrix_mad_k32(xpi_dpas_qa a, int8 b, int8 acc);
#define XPI_DPAS_I8(a, b, acc) intel_sub_group_i8_i8_matrix_mad_k32(a, b, acc)
#endif

/* Token t0 + m's quants of block b (A row m) and its scale; a token past n is zeros (uniform over the sub-group,
 * so the block read is not divergent). */
#define XPI_QA_TOKEN(m, S)                                                               \
  if (t0 + m < n) {                                                                      \
    const ulong i_ = (ulong)(t0 + m) * nb + b;                                           \
    a.S = XPI_QA_ROW(xq + i_ * XPI_QK);                                                  \
    xd.S = dx[i_];                                                                       \
  }

/* Grid: one sub-group of XPI_DN lanes per group, groups (ceil(rows / XPI_DN), ceil(n / 8)); the arguments of
 * xpi_gemm_q8/q4. Lane l owns weight row r0 + l; rows past the end take zero quants and store nothing. */
#define XPI_GEMM_DPAS_Q(SUFFIX, BS, WT)                                                                       \
  __attribute__((intel_reqd_sub_group_size(XPI_DPAS_SG))) __attribute__((reqd_work_group_size(XPI_DPAS_SG, 1, 1))) \
  kernel void xpi_gemm_dpas_##SUFFIX(global float *out, const global char *xq, const global float *dx,         \
                                     const global void *w, const global ushort *d, const global void *bias,    \
                                     int bdt, int has_bias, int rows, int cols, int n) {                      \
    const int lane = get_sub_group_local_id();                                                               \
    const int r0 = get_group_id(0) * XPI_DN, t0 = get_group_id(1) * XPI_DM, r = r0 + lane;                   \
    const int nb = (cols + XPI_QK - 1) / XPI_QK, row_ok = r < rows;                                          \
    const global WT *wr = (const global WT *)w + (ulong)(row_ok ? r : 0) * nb * (BS);                         \
    const global half *dr = (const global half *)d + (ulong)(row_ok ? r : 0) * nb;                            \
    float8 acc = 0.0f;                                                                                       \
    for (int b = 0; b < nb; b++) {                                                                           \
      const int8 wb = row_ok ? xpi_qb_##SUFFIX(wr + b * (BS)) : (int8)0;                                 \
      const float wd = row_ok ? vload_half(b, dr) : 0.0f;                                                    \
      xpi_dpas_qa a = 0;                                                                                     \
      float8 xd = 0.0f;                                                                                      \
      XPI_QA_TOKEN(0, s0) XPI_QA_TOKEN(1, s1) XPI_QA_TOKEN(2, s2) XPI_QA_TOKEN(3, s3)                        \
      XPI_QA_TOKEN(4, s4) XPI_QA_TOKEN(5, s5) XPI_QA_TOKEN(6, s6) XPI_QA_TOKEN(7, s7)                        \
      const int8 s = XPI_DPAS_I8(a, wb, (int8)0); /* this block's exact dots, no carry from the last */      \
      const float8 v = wd * xd * convert_float8(s); /* (d * dx) * dot, as xpi_qtile_block */                \
      acc += v; /* a separate statement: never contracted with the products */                              \
    }                                                                                                        \
    if (row_ok) xpi_qtile8_store(out, acc, bias, bdt, has_bias, r, t0, n, rows);                          \
  }
XPI_GEMM_DPAS_Q(q8, XPI_QK, char)
XPI_GEMM_DPAS_Q(q4, XPI_QK / 2, uchar)

#endif
