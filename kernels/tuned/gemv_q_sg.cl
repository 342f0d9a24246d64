/* Intel-tuned decode GEMV with q8/q4 weights (the block formats of kernels/common/xpi_quant.h): weight quants
 * fetched with sub-group block reads (cl_intel_subgroups, sub-groups of 16), bit for bit the sums of the portable
 * xpi_gemv_q8/q4 (kernels/portable/matmul_q.cl), so the tier changes no output.
 *
 * Why the bits are kept: the portable GEMV gives work-item i (of 64) the blocks b = i, i + 64, ..., each adding
 * d_b * dx_b * s_b (s_b the exact int32 block dot) in that order, then sums the 64 partials by the xpi_wg_sum
 * tree. Here sub-group g (work-items 16 g .. 16 g + 15) owns the same blocks: per step the 16 consecutive blocks
 * 16 g + 64 k + lane, i.e. one contiguous run of quants (512 bytes q8, 256 q4) that one block read fetches.
 * A block read hands lane l the dwords l, l + 16, ...; each lane takes int dots of its dwords, and a reduce-
 * scatter over the lanes that hold one block (shuffle-xor, integer: exact in any order) followed by one shuffle
 * delivers s_b to the block's owner lane, which then adds d_b * dx_b * s_b exactly as the portable kernel does
 * (same expression, same order), and the 64 partials go through the same xpi_wg_sum tree. A run that would pass
 * the row end (nb % 16 != 0) is summed lane by lane with the portable block dots. */
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#pragma OPENCL FP_CONTRACT OFF /* products added with explicit fma only (tuned/gemv_sg.cl says why) */
#include "xpi_cl.h"
#include "xpi_quant.h"
#include "xpi_quant_stage.h"
#include "xpi_quant_fused.h"

#define XPI_QSG 16
#define XPI_QSG_WG 64 /* = XPI_QWG of the portable GEMV: the same partials and tree */

/* Exact int dot of 4 int8 weights with 4 int8 activations, each packed in a dword. */
static inline int xpi_dot4_q8(uint w, uint x) {
  const int4 p = convert_int4(as_char4(w)) * convert_int4(as_char4(x));
  return p.s0 + p.s1 + p.s2 + p.s3;
}
/* 4 q4 bytes (elements e..e+3 in the low nibbles, 16+e..16+e+3 in the high ones) with their activations. */
static inline int xpi_dot4_q4(uint w, uint xlo, uint xhi) {
  const int4 v = convert_int4(as_uchar4(w));
  const int4 p = ((v & 15) - 8) * convert_int4(as_char4(xlo)) + ((v >> 4) - 8) * convert_int4(as_char4(xhi));
  return p.s0 + p.s1 + p.s2 + p.s3;
}

/* Lanes l and l ^ m trade halves: the lane with bit m set keeps a sum of its `hi` values, the other of `lo`. */
static inline int xpi_rs_step(int lo, int hi, uint lane, uint m) {
  const int up = (lane & m) != 0;
  return (up ? hi : lo) + intel_sub_group_shuffle_xor(up ? lo : hi, m);
}

/* s_b of block c + lane for a run of 16 q8 blocks, given the run's weight and activation dwords as a block read
 * hands them out (lane l: dwords l + 16 j). Dword l + 16 j of the run belongs to block 2 j + l / 8 (its dword
 * l % 8): 8 lanes share a block; after the xor 4, 2, 1 steps lane l holds the block of register l % 8, i.e. block
 * 2 (l % 8) + l / 8, and block l is at lane 8 (l % 2) + l / 2. */
static inline int xpi_run_dots_q8(uint8 w, uint8 x, uint lane) {
  const int p0 = xpi_dot4_q8(w.s0, x.s0), p1 = xpi_dot4_q8(w.s1, x.s1), p2 = xpi_dot4_q8(w.s2, x.s2),
            p3 = xpi_dot4_q8(w.s3, x.s3), p4 = xpi_dot4_q8(w.s4, x.s4), p5 = xpi_dot4_q8(w.s5, x.s5),
            p6 = xpi_dot4_q8(w.s6, x.s6), p7 = xpi_dot4_q8(w.s7, x.s7);
  const int q0 = xpi_rs_step(p0, p4, lane, 4), q1 = xpi_rs_step(p1, p5, lane, 4), q2 = xpi_rs_step(p2, p6, lane, 4),
            q3 = xpi_rs_step(p3, p7, lane, 4);
  const int r0 = xpi_rs_step(q0, q2, lane, 2), r1 = xpi_rs_step(q1, q3, lane, 2);
  const int s = xpi_rs_step(r0, r1, lane, 1);
  return intel_sub_group_shuffle(s, 8 * (lane & 1) + (lane >> 1));
}

/* The same for 16 q4 blocks (16 bytes each): weight dword l + 16 j (w.s<j>) is dword e = l % 4 of block 4 j + l / 4,
 * which pairs with activation dwords e and e + 4 of that block (xlo.s<j>, xhi.s<j>: plain loads, the activation
 * row being shared by every row's work-group). After the xor 2, 1 steps lane l holds block 4 (l % 4) + l / 4;
 * block l is at lane 4 (l % 4) + l / 4. */
static inline int xpi_run_dots_q4(uint4 w, uint4 xlo, uint4 xhi, uint lane) {
  const int p0 = xpi_dot4_q4(w.s0, xlo.s0, xhi.s0), p1 = xpi_dot4_q4(w.s1, xlo.s1, xhi.s1),
            p2 = xpi_dot4_q4(w.s2, xlo.s2, xhi.s2), p3 = xpi_dot4_q4(w.s3, xlo.s3, xhi.s3);
  const int r0 = xpi_rs_step(p0, p2, lane, 2), r1 = xpi_rs_step(p1, p3, lane, 2);
  const int s = xpi_rs_step(r0, r1, lane, 1);
  return intel_sub_group_shuffle(s, 4 * (lane & 3) + (lane >> 2));
}

/* A run's block dots with the activations in global memory (xt: the run's first block) or local memory (the fused
 * forms' staged row). */
static inline int xpi_run_q8_g(const global char *wr, const global char *xt, uint lane) {
  return xpi_run_dots_q8(intel_sub_group_block_read8((const global uint *)wr),
                         intel_sub_group_block_read8((const global uint *)xt), lane);
}
static inline int xpi_run_q8_l(const global char *wr, const local char *xt, uint lane) {
  const local uint *x = (const local uint *)xt + lane;
  return xpi_run_dots_q8(intel_sub_group_block_read8((const global uint *)wr),
                         (uint8)(x[0], x[16], x[32], x[48], x[64], x[80], x[96], x[112]), lane);
}
static inline int xpi_run_q4_g(const global uchar *wr, const global char *xt, uint lane) {
  const global uint *x = (const global uint *)(xt + (lane >> 2) * XPI_QK) + (lane & 3);
  return xpi_run_dots_q4(intel_sub_group_block_read4((const global uint *)wr), (uint4)(x[0], x[32], x[64], x[96]),
                         (uint4)(x[4], x[36], x[68], x[100]), lane);
}
static inline int xpi_run_q4_l(const global uchar *wr, const local char *xt, uint lane) {
  const local uint *x = (const local uint *)(xt + (lane >> 2) * XPI_QK) + (lane & 3);
  return xpi_run_dots_q4(intel_sub_group_block_read4((const global uint *)wr), (uint4)(x[0], x[32], x[64], x[96]),
                         (uint4)(x[4], x[36], x[68], x[100]), lane);
}

/* Grid and arguments of xpi_gemv_q8/q4: (rows, n) groups of 64; group (r, t) writes out[t, r]. Rows are 4-byte
 * aligned for the block reads (32 or 16 bytes per block; the host allocates quants at 64-byte alignment). */
#define XPI_GEMV_Q_SG(SUFFIX, BS, WT)                                                                        \
  __attribute__((intel_reqd_sub_group_size(XPI_QSG)))                                                      \
  __attribute__((reqd_work_group_size(XPI_QSG_WG, 1, 1)))                                                  \
  kernel void xpi_gemv_sg_##SUFFIX(global float *out, const global char *xq, const global float *dx,         \
                                   const global void *w, const global ushort *d, const global void *bias,    \
                                   int bdt, int has_bias, int rows, int cols) {                             \
    local float red[XPI_QSG_WG];                                                                           \
    const int r = get_group_id(0), t = get_group_id(1), lid = get_local_id(0);                             \
    const uint lane = get_sub_group_local_id();                                                            \
    const int nb = (cols + XPI_QK - 1) / XPI_QK;                                                           \
    const global WT *wr = (const global WT *)w + (ulong)r * nb * (BS);                                     \
    const global half *dr = (const global half *)d + (ulong)r * nb;                                        \
    const global char *xt = xq + (ulong)t * nb * XPI_QK;                                                   \
    const global float *dxt = dx + (ulong)t * nb;                                                          \
    float acc = 0.0f;                                                                                      \
    for (int c = lid - (int)lane; c < nb; c += XPI_QSG_WG) { /* c: the sub-group's run, uniform */         \
      const int b = c + (int)lane;                                                                         \
      if (c + XPI_QSG <= nb) {                                                                             \
        const int s = xpi_run_##SUFFIX##_g(wr + c * (BS), xt + c * XPI_QK, lane);                         \
        acc = fma(vload_half(b, dr) * dxt[b], (float)s, acc);                                              \
      } else if (b < nb) {                                                                                 \
        acc = fma(vload_half(b, dr) * dxt[b], (float)xpi_qdot_##SUFFIX(wr + b * (BS), xt + b * XPI_QK), acc); \
      }                                                                                                    \
    }                                                                                                      \
    const float sum = xpi_wg_sum(red, acc, lid, XPI_QSG_WG);                                               \
    if (lid == 0) out[(ulong)t * rows + r] = sum + (has_bias ? xpi_load(bias, bdt, r) : 0.0f);             \
  }
XPI_GEMV_Q_SG(q8, XPI_QK, char)
XPI_GEMV_Q_SG(q4, XPI_QK / 2, uchar)

/* ---- the fused decode forms (xpi_gemv3_q8/q4, xpi_gemv_glu_q8/q4 of matmul_q.cl) with the same block reads: the
 * same staging of the input row (xpi_q_stage, shared), and each row summed as xpi_qrow of matmul_q.cl does
 * (owner lanes, the same terms and order, the xpi_q_wg_sum tree): the portable forms' bits. The staged
 * activation dwords are read lane by lane from local memory (consecutive lanes, consecutive dwords). */
static inline int xpi_qdotl_sg_q8(const global char *w, const local char *x) {
  int s = 0;
  for (int j = 0; j < XPI_QK; j++) s += (int)w[j] * (int)x[j];
  return s;
}
static inline int xpi_qdotl_sg_q4(const global uchar *w, const local char *x) {
  int s = 0;
  for (int j = 0; j < 16; j++) s += ((int)(w[j] & 15) - 8) * (int)x[j] + ((int)(w[j] >> 4) - 8) * (int)x[16 + j];
  return s;
}

#define XPI_QROW_SG(SUFFIX, BS, WT)                                                                          \
  static float xpi_qrow_sg_##SUFFIX(local float *red, const local char *xq, const local float *dxs,         \
                                    const global void *w, const global ushort *d, int r, int nb) {         \
    const global WT *wr = (const global WT *)w + (ulong)r * nb * (BS);                                     \
    const uint lane = get_sub_group_local_id();                                                            \
    float acc = 0.0f;                                                                                      \
    for (int c = (int)get_local_id(0) - (int)lane; c < nb; c += XPI_QSG_WG) {                              \
      const int b = c + (int)lane;                                                                         \
      if (c + XPI_QSG <= nb) {                                                                             \
        const int s = xpi_run_##SUFFIX##_l(wr + c * (BS), xq + c * XPI_QK, lane);                          \
        acc = fma(vload_half((ulong)r * nb + b, (const global half *)d) * dxs[b], (float)s, acc);          \
      } else if (b < nb) {                                                                                 \
        acc = fma(vload_half((ulong)r * nb + b, (const global half *)d) * dxs[b],                          \
                  (float)xpi_qdotl_sg_##SUFFIX(wr + b * (BS), xq + b * XPI_QK), acc);                      \
      }                                                                                                    \
    }                                                                                                      \
    return xpi_q_wg_sum(red, acc);                                                                         \
  }
XPI_QROW_SG(q8, XPI_QK, char)
XPI_QROW_SG(q4, XPI_QK / 2, uchar)

/* The kernels: the portable forms' bodies (kernels/common/xpi_quant_fused.h) with these rows, at sub-group 16. */
#define XPI_QSG_ATTR __attribute__((intel_reqd_sub_group_size(XPI_QSG)))
XPI_GEMV3_Q_KERNEL(xpi_gemv3_sg_q8, xpi_qrow_sg_q8, XPI_QSG_ATTR)
XPI_GEMV3_Q_KERNEL(xpi_gemv3_sg_q4, xpi_qrow_sg_q4, XPI_QSG_ATTR)
XPI_GEMV_GLU_Q_KERNEL(xpi_gemv_glu_sg_q8, xpi_qrow_sg_q8, XPI_QSG_ATTR)
XPI_GEMV_GLU_Q_KERNEL(xpi_gemv_glu_sg_q4, xpi_qrow_sg_q4, XPI_QSG_ATTR)
