/* The kernels of the fused q8/q4 decode forms (n = 1), one body for the portable tier (kernels/portable/matmul_q.cl)
 * and the tuned tier (kernels/tuned/gemv_q_sg.cl), which differ only in how a row is summed (ROW: xpi_qrow_q8/q4,
 * or the block-read xpi_qrow_sg_q8/q4, both the same terms in the same order) and in the sub-group size the
 * tuned kernels require (ATTR): up to three projections of one input row (q|k|v; with accumulate, o[r] += as the
 * residual add of o_proj/down) and gate|up with the activation. Every work-group (XPI_QWG work-items) first
 * quantizes the (normalised) input row into local memory (xpi_q_stage), then sums XPI_QROWS rows from it.
 * Needs xpi_cl.h, xpi_quant.h and xpi_quant_stage.h first. */
#ifndef XPI_QUANT_FUSED_H
#define XPI_QUANT_FUSED_H

/* Grid: ceil((r0 + r1 + r2) / XPI_QROWS) groups of XPI_QWG; rows g = 8 k .. 8 k + 7 of the concatenation: row g
 * of W0, or row g - r0 of W1, or row g - r0 - r1 of W2. The staged quants are 16-byte aligned: the tuned rows
 * read them as dwords. */
#define XPI_GEMV3_Q_KERNEL(NAME, ROW, ATTR)                                                                  \
  ATTR __attribute__((reqd_work_group_size(XPI_QWG, 1, 1)))                                                 \
  kernel void NAME(global float *o0, global float *o1, global float *o2, const global float *in,            \
                   const global void *w0, const global void *w1, const global void *w2,                     \
                   const global ushort *d0, const global ushort *d1, const global ushort *d2,               \
                   const global void *b0, const global void *b1, const global void *b2, int bdt,            \
                   int has_bias, int r0, int r1, int r2, int cols, const global void *nw,                   \
                   int nwdt, int has_norm, float eps, int accumulate) {                                     \
    local char xq[XPI_QMAXC] __attribute__((aligned(16)));                                                  \
    local float dxs[XPI_QMAXC / XPI_QK];                                                                    \
    local float red[XPI_QWG];                                                                               \
    xpi_q_stage(xq, dxs, red, in, cols, nw, nwdt, has_norm, eps);                                           \
    const int g0 = get_group_id(0) * XPI_QROWS, g1 = min(g0 + XPI_QROWS, r0 + r1 + r2);                    \
    for (int g = g0; g < g1; g++) { /* uniform over the group */                                            \
      int r = g;                                                                                            \
      global float *o = o0;                                                                                 \
      const global void *w = w0, *b = b0;                                                                   \
      const global ushort *d = d0;                                                                          \
      if (r >= r0 + r1) { r -= r0 + r1; o = o2; w = w2; b = b2; d = d2; }                                   \
      else if (r >= r0) { r -= r0; o = o1; w = w1; b = b1; d = d1; }                                        \
      float s = ROW(red, xq, dxs, w, d, r, (cols + XPI_QK - 1) / XPI_QK);                                   \
      if (get_local_id(0) == 0) {                                                                           \
        float v = s + (has_bias ? xpi_load(b, bdt, r) : 0.0f);                                              \
        o[r] = accumulate ? o[r] + v : v;                                                                   \
      }                                                                                                     \
    }                                                                                                       \
  }

/* out[r] = act(h . G[r]) * (h . U[r]) (act as xpi_glu). Grid: ceil(rows / XPI_QROWS) groups of XPI_QWG. */
#define XPI_GEMV_GLU_Q_KERNEL(NAME, ROW, ATTR)                                                               \
  ATTR __attribute__((reqd_work_group_size(XPI_QWG, 1, 1)))                                                 \
  kernel void NAME(global float *out, const global float *in, const global void *wg, const global void *wu, \
                   const global ushort *dg, const global ushort *du, int rows, int cols, int act,           \
                   const global void *nw, int nwdt, int has_norm, float eps) {                              \
    local char xq[XPI_QMAXC] __attribute__((aligned(16)));                                                  \
    local float dxs[XPI_QMAXC / XPI_QK];                                                                    \
    local float red[XPI_QWG];                                                                               \
    const int nb = (cols + XPI_QK - 1) / XPI_QK, r0 = get_group_id(0) * XPI_QROWS;                         \
    xpi_q_stage(xq, dxs, red, in, cols, nw, nwdt, has_norm, eps);                                           \
    for (int r = r0; r < min(r0 + XPI_QROWS, rows); r++) { /* uniform over the group */                     \
      float g = ROW(red, xq, dxs, wg, dg, r, nb);                                                           \
      float u = ROW(red, xq, dxs, wu, du, r, nb);                                                           \
      if (get_local_id(0) == 0) out[r] = xpi_glu(g, u, act);                                                \
    }                                                                                                       \
  }

#endif
