/* Intel-tuned prefill GEMM with q8/q4 weights (the block formats of kernels/common/xpi_quant.h), for devices of
 * the tuned tier without the matrix engine (the DPAS tier has xpi_gemm_dpas_q8/q4): out[n, rows] = in[n, cols] @
 * W^T (+ bias), activations quantized per 32-block by xpi_quant_act. The tile of the DPAS form without the matrix
 * instruction: a sub-group of 16 lanes, lane l owns weight row r0 + l, 8 tokens. Per 32-block each lane holds its
 * row's quants in registers (one 32-byte load; q4 unpacked to int8 by xpi_qb_q4), the 8 tokens' activation
 * blocks are loads every lane makes at the same address (served as one broadcast), and each lane takes the 8
 * exact int32 block dots in registers: no local-memory staging or barrier as in the portable 16x16 tile. The
 * dots are scaled (d * dx) * dot and summed in block order from 0, the portable xpi_gemm_q8/q4's f32 operations
 * in its order (kernels/common/xpi_quant.h, xpi_qtile_block): the same bits, so the tier changes no output. */
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#pragma OPENCL FP_CONTRACT OFF /* products added with explicit fma only (tuned/gemv_sg.cl says why) */
#include "xpi_cl.h"
#include "xpi_quant.h"

#define XPI_QGS 16 /* rows per tile: the sub-group */
#define XPI_QGT 8  /* tokens per tile */

/* Exact int dot of two blocks of 32 int8 quants, each packed 4 a dword (xpi_qb_q8/q4's form). */
static inline int xpi_qdot32(int8 w, int8 x) {
  const int16 p = convert_int16(as_char16(w.lo)) * convert_int16(as_char16(x.lo)) +
                  convert_int16(as_char16(w.hi)) * convert_int16(as_char16(x.hi));
  return p.s0 + p.s1 + p.s2 + p.s3 + p.s4 + p.s5 + p.s6 + p.s7 + p.s8 + p.s9 + p.sa + p.sb + p.sc + p.sd + p.se +
         p.sf;
}

/* Token t0 + m's block-b dot with this lane's weights, and its scale; a token past n adds nothing (uniform). */
#define XPI_QG_TOKEN(m, S)                                                               \
  if (t0 + m < n) {                                                                      \
    const ulong i_ = (ulong)(t0 + m) * nb + b;                                           \
    s.S = xpi_qdot32(wb, as_int8(*(const global uint8 *)(xq + i_ * XPI_QK)));            \
    xd.S = dx[i_];                                                                       \
  }

/* Grid: groups (ceil(rows / 16), ceil(n / 8)) of one sub-group of 16; the arguments of xpi_gemm_q8/q4. Rows past
 * the end take zero quants and store nothing. */
#define XPI_GEMM_SG_Q(SUFFIX, BS, WT)                                                                         \
  __attribute__((intel_reqd_sub_group_size(XPI_QGS))) __attribute__((reqd_work_group_size(XPI_QGS, 1, 1)))    \
  kernel void xpi_gemm_sg_##SUFFIX(global float *out, const global char *xq, const global float *dx,           \
                                   const global void *w, const global ushort *d, const global void *bias,      \
                                   int bdt, int has_bias, int rows, int cols, int n) {                        \
    const int r0 = get_group_id(0) * XPI_QGS, t0 = get_group_id(1) * XPI_QGT;                                \
    const int r = r0 + (int)get_sub_group_local_id(), row_ok = r < rows;                                     \
    const int nb = (cols + XPI_QK - 1) / XPI_QK;                                                             \
    const global WT *wr = (const global WT *)w + (ulong)(row_ok ? r : 0) * nb * (BS);                         \
    const global half *dr = (const global half *)d + (ulong)(row_ok ? r : 0) * nb;                            \
    float8 acc = 0.0f;                                                                                       \
    for (int b = 0; b < nb; b++) {                                                                           \
      const int8 wb = row_ok ? xpi_qb_##SUFFIX(wr + b * (BS)) : (int8)0;                                      \
      const float wd = row_ok ? vload_half(b, dr) : 0.0f;                                                    \
      int8 s = 0;                                                                                            \
      float8 xd = 0.0f;                                                                                      \
      XPI_QG_TOKEN(0, s0) XPI_QG_TOKEN(1, s1) XPI_QG_TOKEN(2, s2) XPI_QG_TOKEN(3, s3)                        \
      XPI_QG_TOKEN(4, s4) XPI_QG_TOKEN(5, s5) XPI_QG_TOKEN(6, s6) XPI_QG_TOKEN(7, s7)                        \
      const float8 v = wd * xd * convert_float8(s); /* (d * dx) * dot, as xpi_qtile_block */                \
      acc += v; /* a separate statement: never contracted with the products */                              \
    }                                                                                                        \
    if (row_ok) xpi_qtile8_store(out, acc, bias, bdt, has_bias, r, t0, n, rows);                          \
  }
XPI_GEMM_SG_Q(q8, XPI_QK, char)
XPI_GEMM_SG_Q(q4, XPI_QK / 2, uchar)
