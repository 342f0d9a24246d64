/* Matrix products with q8/q4 weights (block formats of src/ops/quant_format.h, the CPU's row-major layout
 * unchanged): out[n, rows] = in[n, cols] @ W^T (+ bias), with the CPU backend's integer semantics:
 *   1. xpi_quant_act rounds the activations to int8 per 32-column block, dx = amax/127, xq = round(x * (127/amax))
 *      to nearest even, padding zero: bit for bit what xpi_quantize_act_scalar / the AVX2 kernels make (both
 *      divisions correctly rounded, see xpi_div_rn);
 *   2. the GEMV / GEMM dequantize the weight quants in registers and sum, per block, the exact int32 dot of the
 *      weight quants (q4: nibble - 8) with xq, scaled by d * dx in f32.
 * Only the f32 order of the per-block sums differs from the CPU. Weights: quants qs[rows][nb*32] (q8, int8) or
 * [rows][nb*16] (q4, byte j = element j low nibble, element 16+j high nibble), scales d[rows][nb] as half bits. */
#pragma OPENCL FP_CONTRACT OFF /* products added with explicit fma only (tuned/gemv_sg.cl says why) */
#include "xpi_cl.h"
#include "xpi_quant.h" /* XPI_QK, the block dots, the weight-quant unpacking */
#include "xpi_quant_stage.h" /* xpi_div_rn, the fused forms' staging of the input row (shared with the tuned tier) */
#include "xpi_quant_fused.h" /* the fused forms' kernel bodies (shared with the tuned tier) */

#define XPI_QWG 64
#define XPI_QT 16

/* One work-item per (32-column block, token). Grid: (ceil(nb/64), n) groups of 64. xq[t][nb*32], dx[t][nb]. */
__attribute__((reqd_work_group_size(XPI_QWG, 1, 1)))
kernel void xpi_quant_act(global char *xq, global float *dx, const global float *in, int cols, int nb) {
  const int b = get_global_id(0), t = get_group_id(1);
  if (b >= nb) return;
  const global float *x = in + (ulong)t * cols + (ulong)b * XPI_QK;
  const int w = min(XPI_QK, cols - b * XPI_QK);
  float amax = 0.0f;
  for (int j = 0; j < w; j++) amax = fmax(amax, fabs(x[j]));
  const float s = xpi_act_prescale(amax), id = xpi_act_inv(amax, s);
  global char *q = xq + ((ulong)t * nb + b) * XPI_QK;
  for (int j = 0; j < XPI_QK; j++) q[j] = j < w ? convert_char_sat_rte(x[j] * s * id) : (char)0;
  dx[(ulong)t * nb + b] = xpi_div_rn(amax, 127.0f);
}

/* Decode GEMV. Grid: (rows, n) groups of 64; group (r, t) writes out[t, r]; work-item i takes blocks i, i+64, ... */
#define XPI_GEMV_Q(SUFFIX, BS, WT)                                                                          \
  __attribute__((reqd_work_group_size(XPI_QWG, 1, 1)))                                                     \
  kernel void xpi_gemv_##SUFFIX(global float *out, const global char *xq, const global float *dx,           \
                                const global void *w, const global ushort *d, const global void *bias,      \
                                int bdt, int has_bias, int rows, int cols) {                               \
    local float red[XPI_QWG];                                                                              \
    const int r = get_group_id(0), t = get_group_id(1), lid = get_local_id(0);                             \
    const int nb = (cols + XPI_QK - 1) / XPI_QK;                                                           \
    const float acc = xpi_qrow_part_##SUFFIX((const global WT *)w + (ulong)r * nb * (BS),                  \
                                             (const global half *)d + (ulong)r * nb, xq + (ulong)t * nb * XPI_QK, \
                                             dx + (ulong)t * nb, nb, lid, XPI_QWG);                        \
    const float sum = xpi_wg_sum(red, acc, lid, XPI_QWG);                                                  \
    if (lid == 0) out[(ulong)t * rows + r] = sum + (has_bias ? xpi_load(bias, bdt, r) : 0.0f);             \
  }
XPI_GEMV_Q(q8, XPI_QK, char)
XPI_GEMV_Q(q4, XPI_QK / 2, uchar)

/* Prefill GEMM. Grid: local (16, 16), groups (ceil(rows/16), ceil(n/16)); work-item (lx, ly) writes
 * out[t0+ly, r0+lx]. Per 32-column block the 16 tokens' and 16 rows' quants and scales are staged in local
 * memory (q4 unpacked to signed int8 there), then each work-item sums one exact int32 block dot
 * (xpi_qtile_block, kernels/common/xpi_quant.h). */
#define XPI_GEMM_Q(SUFFIX, BS, WT)                                                                          \
  __attribute__((reqd_work_group_size(XPI_QT, XPI_QT, 1)))                                                 \
  kernel void xpi_gemm_##SUFFIX(global float *out, const global char *xq, const global float *dx,           \
                                const global void *w, const global ushort *d, const global void *bias,      \
                                int bdt, int has_bias, int rows, int cols, int n) {                        \
    local char xs[XPI_QT][XPI_QTILE_LD], ws[XPI_QT][XPI_QTILE_LD];                                          \
    local float xd[XPI_QT], wd[XPI_QT];                                                                    \
    const int lx = get_local_id(0), ly = get_local_id(1);                                                  \
    const int r0 = get_group_id(0) * XPI_QT, t0 = get_group_id(1) * XPI_QT;                                \
    const int nb = (cols + XPI_QK - 1) / XPI_QK;                                                           \
    const int tl = t0 + ly, rl = r0 + ly; /* the token and row this work-item stages */                    \
    float acc = 0.0f;                                                                                      \
    for (int b = 0; b < nb; b++)                                                                           \
      acc += xpi_qtile_block_##SUFFIX(xs, ws, xd, wd, lx, ly, tl < n, xq + ((ulong)tl * nb + b) * XPI_QK,   \
                                      dx + (ulong)tl * nb + b, rl < rows,                                  \
                                      (const global WT *)w + ((ulong)rl * nb + b) * (BS),                  \
                                      (const global half *)d + (ulong)rl * nb + b);                        \
    const int r = r0 + lx, t = t0 + ly;                                                                    \
    if (r < rows && t < n) out[(ulong)t * rows + r] = acc + (has_bias ? xpi_load(bias, bdt, r) : 0.0f);    \
  }
XPI_GEMM_Q(q8, XPI_QK, char)
XPI_GEMM_Q(q4, XPI_QK / 2, uchar)

/* ---- fused decode forms (n = 1) with q8/q4 weights, as the float ones of matmul.cl: up to three projections of
 * one input row (q|k|v; with accumulate o[r] += as the residual add of o_proj/down) and gate|up with the
 * activation, each in one launch where the separate path takes a quant_act + GEMV pair per matrix (and an
 * rmsnorm, an add or a GLU launch). Every work-group (one per output row, 64 work-items) first quantizes the
 * (normalised) input row itself into local memory, by the arithmetic of xpi_rmsnorm (norm.cl: the same 64-wide
 * sum of squares, x * inv * w) and of xpi_quant_act, then sums the row as xpi_gemv_q8/q4 do (blocks b = lid +
 * 64 k, d * dx * s, the same tree): the bits of the separate launches. cols <= XPI_QMAXC (the host checks). */
/* Row r of a quantized matrix (quants w, half scales d) . the staged activations, over the work-group. */
#define XPI_QROW(SUFFIX, BS, WT)                                                                            \
  static float xpi_qrow_##SUFFIX(local float *red, const local char *xq, const local float *dxs,            \
                                 const global void *w, const global ushort *d, int r, int nb) {            \
    const global WT *wr = (const global WT *)w + (ulong)r * nb * (BS);                                     \
    float acc = 0.0f;                                                                                      \
    for (int b = get_local_id(0); b < nb; b += XPI_QWG)                                                    \
      acc = fma(vload_half((ulong)r * nb + b, (const global half *)d) * dxs[b],                             \
                (float)xpi_qdotl_##SUFFIX(wr + b * (BS), xq + b * XPI_QK), acc);                           \
    return xpi_q_wg_sum(red, acc);                                                                         \
  }

XPI_QROW(q8, XPI_QK, char)
XPI_QROW(q4, XPI_QK / 2, uchar)
XPI_GEMV3_Q_KERNEL(xpi_gemv3_q8, xpi_qrow_q8, )
XPI_GEMV3_Q_KERNEL(xpi_gemv3_q4, xpi_qrow_q4, )
XPI_GEMV_GLU_Q_KERNEL(xpi_gemv_glu_q8, xpi_qrow_q8, )
XPI_GEMV_GLU_Q_KERNEL(xpi_gemv_glu_q4, xpi_qrow_q4, )
