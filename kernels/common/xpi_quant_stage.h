/* The activation side of the q8/q4 kernels, shared by the portable kernels (kernels/portable/matmul_q.cl) and the
 * tuned tier's (kernels/tuned/gemv_q_sg.cl) so that both quantize bit for bit alike (with xpi_cl.h's correctly
 * rounded division, xpi_div_rn): the fused decode forms' staging of one (normalised) input row in local memory
 * with their work-group sum. Needs xpi_cl.h (xpi_load) and xpi_quant.h (XPI_QK) first. */
#ifndef XPI_QUANT_STAGE_H
#define XPI_QUANT_STAGE_H

#define XPI_QWG 64

/* Fused decode forms (n = 1): the input row is quantized into local memory by every work-group; cols <= XPI_QMAXC
 * (the host checks). */
#define XPI_QMAXC 16384

/* Sum over the work-group, every work-item gets it (xpi_wg_sum of norm.cl; the tree of xpi_gemv_q8/q4). */
static float xpi_q_wg_sum(local float *red, float v) {
  int lid = get_local_id(0);
  red[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = XPI_QWG / 2; s > 0; s >>= 1) {
    if (lid < s) red[lid] += red[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

/* xq / dxs <- quant_act(has_norm ? rmsnorm(x) * nw : x) of one row of cols, in local memory. */
static void xpi_q_stage(local char *xq, local float *dxs, local float *red, const global float *x, int cols,
                        const global void *nw, int nwdt, int has_norm, float eps) {
  const int lid = get_local_id(0), nb = (cols + XPI_QK - 1) / XPI_QK;
  float inv = 1.0f;
  if (has_norm) {
    float ss = 0.0f;
    for (int j = lid; j < cols; j += XPI_QWG) {
      float v = x[j];
      ss = fma(v, v, ss); /* explicit: the same bits under any contraction rule */
    }
    inv = xpi_rms_inv(xpi_q_wg_sum(red, ss), cols, eps);
  }
  for (int b = lid; b < nb; b += XPI_QWG) {
    const int c0 = b * XPI_QK, w = min(XPI_QK, cols - c0);
    float amax = 0.0f;
    for (int j = 0; j < w; j++) amax = fmax(amax, fabs(has_norm ? x[c0 + j] * inv * xpi_load(nw, nwdt, c0 + j) : x[c0 + j]));
    const float s = xpi_act_prescale(amax), id = xpi_act_inv(amax, s);
    for (int j = 0; j < XPI_QK; j++) {
      float h = j < w ? (has_norm ? x[c0 + j] * inv * xpi_load(nw, nwdt, c0 + j) : x[c0 + j]) : 0.0f;
      xq[c0 + j] = j < w ? convert_char_sat_rte(h * s * id) : (char)0;
    }
    dxs[b] = xpi_div_rn(amax, 127.0f);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}

/* A work-group computes XPI_QROWS rows from one staging of the input (the quantization, cols work, amortized over
 * them); each row's sum is the separate GEMV's, so the rows per group do not change the bits. */
#define XPI_QROWS 8

#endif
