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
#include "xpi_cl.h"
#include "xpi_quant.h"

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

/* s_b of block c + lane for a run of 16 q8 blocks at wr / xt (block c). Dword l + 16 j of the run belongs to
 * block 2 j + l / 8 (its dword l % 8): 8 lanes share a block; after the xor 4, 2, 1 steps lane l holds the block
 * of register l % 8, i.e. block 2 (l % 8) + l / 8, and block l is at lane 8 (l % 2) + l / 2. */
static inline int xpi_run_dots_q8(const global char *wr, const global char *xt, uint lane) {
  const uint8 w = intel_sub_group_block_read8((const global uint *)wr);
  const uint8 x = intel_sub_group_block_read8((const global uint *)xt);
  const int p0 = xpi_dot4_q8(w.s0, x.s0), p1 = xpi_dot4_q8(w.s1, x.s1), p2 = xpi_dot4_q8(w.s2, x.s2),
            p3 = xpi_dot4_q8(w.s3, x.s3), p4 = xpi_dot4_q8(w.s4, x.s4), p5 = xpi_dot4_q8(w.s5, x.s5),
            p6 = xpi_dot4_q8(w.s6, x.s6), p7 = xpi_dot4_q8(w.s7, x.s7);
  const int q0 = xpi_rs_step(p0, p4, lane, 4), q1 = xpi_rs_step(p1, p5, lane, 4), q2 = xpi_rs_step(p2, p6, lane, 4),
            q3 = xpi_rs_step(p3, p7, lane, 4);
  const int r0 = xpi_rs_step(q0, q2, lane, 2), r1 = xpi_rs_step(q1, q3, lane, 2);
  const int s = xpi_rs_step(r0, r1, lane, 1);
  return intel_sub_group_shuffle(s, 8 * (lane & 1) + (lane >> 1));
}

/* The same for 16 q4 blocks (16 bytes each): dword l + 16 j is dword e = l % 4 of block 4 j + l / 4, which pairs
 * with activation dwords e and e + 4 of that block (plain loads: the activation row is shared by every row's
 * work-group, so it comes from cache). After the xor 2, 1 steps lane l holds block 4 (l % 4) + l / 4; block l is
 * at lane 4 (l % 4) + l / 4. */
static inline int xpi_run_dots_q4(const global uchar *wr, const global char *xt, uint lane) {
  const uint4 w = intel_sub_group_block_read4((const global uint *)wr);
  const global uint *xb = (const global uint *)(xt + (lane >> 2) * XPI_QK) + (lane & 3);
  const int p0 = xpi_dot4_q4(w.s0, xb[0], xb[4]), p1 = xpi_dot4_q4(w.s1, xb[32], xb[36]),
            p2 = xpi_dot4_q4(w.s2, xb[64], xb[68]), p3 = xpi_dot4_q4(w.s3, xb[96], xb[100]);
  const int r0 = xpi_rs_step(p0, p2, lane, 2), r1 = xpi_rs_step(p1, p3, lane, 2);
  const int s = xpi_rs_step(r0, r1, lane, 1);
  return intel_sub_group_shuffle(s, 4 * (lane & 3) + (lane >> 2));
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
        const int s = xpi_run_dots_##SUFFIX(wr + c * (BS), xt + c * XPI_QK, lane);                         \
        acc += vload_half(b, dr) * dxt[b] * (float)s;                                                      \
      } else if (b < nb) {                                                                                 \
        acc += vload_half(b, dr) * dxt[b] * (float)xpi_qdot_##SUFFIX(wr + b * (BS), xt + b * XPI_QK);      \
      }                                                                                                    \
    }                                                                                                      \
    const float sum = xpi_wg_sum(red, acc, lid, XPI_QSG_WG);                                               \
    if (lid == 0) out[(ulong)t * rows + r] = sum + (has_bias ? xpi_load(bias, bdt, r) : 0.0f);             \
  }
XPI_GEMV_Q_SG(q8, XPI_QK, char)
XPI_GEMV_Q_SG(q4, XPI_QK / 2, uchar)
