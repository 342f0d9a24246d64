/* Matrix products with q8/q4 weights (block formats of src/ops/cpu/quant.h, the CPU's row-major layout
 * unchanged): out[n, rows] = in[n, cols] @ W^T (+ bias), with the CPU backend's integer semantics:
 *   1. xpi_quant_act rounds the activations to int8 per 32-column block, dx = amax/127, xq = round(x * (127/amax))
 *      to nearest even, padding zero: bit for bit what xpi_quantize_act_scalar / the AVX2 kernels make (both
 *      divisions correctly rounded, see xpi_div_rn);
 *   2. the GEMV / GEMM dequantize the weight quants in registers and sum, per block, the exact int32 dot of the
 *      weight quants (q4: nibble - 8) with xq, scaled by d * dx in f32.
 * Only the f32 order of the per-block sums differs from the CPU. Weights: quants qs[rows][nb*32] (q8, int8) or
 * [rows][nb*16] (q4, byte j = element j low nibble, element 16+j high nibble), scales d[rows][nb] as half bits. */
#include "xpi_cl.h"
#include "xpi_quant.h" /* XPI_QK, the block dots, the weight-quant unpacking */

#define XPI_QWG 64
#define XPI_QT 16

/* a / b correctly rounded. OpenCL allows 2.5 ulp for f32 division unless the module is built with
 * -cl-fp32-correctly-rounded-divide-sqrt; the CPU's quotients are IEEE, and one ulp of 127/amax can move an
 * activation quant. The correctly rounded quotient is the candidate within a few ulps of the approximate one
 * whose residual a - q*b (fma: one rounding of a near-exact value) is smallest; ties cannot occur (a quotient of
 * two 24-bit significands is never a 25-bit midpoint unless b is a power of two, where division is exact). */
static inline float xpi_div_rn(float a, float b) {
  const float q0 = a / b;
  float best = q0, be = fabs(fma(-q0, b, a)), up = q0, dn = q0;
  for (int k = 0; k < 3; k++) {
    up = nextafter(up, INFINITY);
    dn = nextafter(dn, -INFINITY);
    const float eu = fabs(fma(-up, b, a)), ed = fabs(fma(-dn, b, a));
    if (eu < be) best = up, be = eu;
    if (ed < be) best = dn, be = ed;
  }
  return best;
}

/* One work-item per (32-column block, token). Grid: (ceil(nb/64), n) groups of 64. xq[t][nb*32], dx[t][nb]. */
__attribute__((reqd_work_group_size(XPI_QWG, 1, 1)))
kernel void xpi_quant_act(global char *xq, global float *dx, const global float *in, int cols, int nb) {
  const int b = get_global_id(0), t = get_group_id(1);
  if (b >= nb) return;
  const global float *x = in + (ulong)t * cols + (ulong)b * XPI_QK;
  const int w = min(XPI_QK, cols - b * XPI_QK);
  float amax = 0.0f;
  for (int j = 0; j < w; j++) amax = fmax(amax, fabs(x[j]));
  const float id = amax > 0.0f ? xpi_div_rn(127.0f, amax) : 0.0f;
  global char *q = xq + ((ulong)t * nb + b) * XPI_QK;
  for (int j = 0; j < XPI_QK; j++) q[j] = j < w ? convert_char_sat_rte(x[j] * id) : (char)0;
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
