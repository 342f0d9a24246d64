/* Intel-tuned GEMV and RMSNorm: sub-groups of 16 (cl_intel_subgroups, cl_intel_required_subgroup_size),
 * weights and activations fetched with sub-group block reads, sums with sub_group_reduce_add.
 * Selected at run time when the device reports sub-group size 16 and this module builds. */
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#include "xpi_cl.h"

#define XPI_SG 16
#define XPI_ROWS_PER_WG 4 /* one sub-group per output row */

/* x[c0 + lane + 16k], k < 8, for the whole sub-group in one block read (c0 a multiple of 128). */
static inline float8 xpi_block_x8(const global float *x) {
  return as_float8(intel_sub_group_block_read8((const global uint *)x));
}

static inline float8 xpi_block_w8_bf16(const global void *w) {
  ushort8 u = intel_sub_group_block_read_us8((const global ushort *)w);
  return (float8)(xpi_bf16_to_f32(u.s0), xpi_bf16_to_f32(u.s1), xpi_bf16_to_f32(u.s2), xpi_bf16_to_f32(u.s3),
                  xpi_bf16_to_f32(u.s4), xpi_bf16_to_f32(u.s5), xpi_bf16_to_f32(u.s6), xpi_bf16_to_f32(u.s7));
}
static inline float8 xpi_block_w8_f16(const global void *w) {
  return convert_float8(as_half8(intel_sub_group_block_read_us8((const global ushort *)w)));
}
static inline float8 xpi_block_w8_f32(const global void *w) {
  return as_float8(intel_sub_group_block_read8((const global uint *)w));
}

static inline float xpi_w_bf16(const global void *w, ulong i) { return xpi_bf16_to_f32(((const global ushort *)w)[i]); }
static inline float xpi_w_f16(const global void *w, ulong i) { return vload_half(i, (const global half *)w); }
static inline float xpi_w_f32(const global void *w, ulong i) { return ((const global float *)w)[i]; }

/* out[t, r] = in[t, :] . W[r, :] (+ bias). XPI_GEMV_RPS rows per sub-group: each x block is read once per
 * 128-column step and multiplied into every row's accumulator, so x traffic and block-read count per row halve.
 * Each row keeps its own float8 accumulator summed in the single-row order (same column steps, same lanes,
 * same final reduce), so the output is bit for bit the one-row-per-sub-group result; the k loop is unrolled by
 * 2 (same order: one accumulator per row). The last sub-group's missing row (odd rows) recomputes its first row
 * and does not store it, which keeps control flow uniform. Grid: local 64 (4 sub-groups), groups
 * (ceil(rows / (4 * XPI_GEMV_RPS)), n). Block reads need 16-byte aligned rows: the host picks this kernel only
 * when cols % 128 == 0. */
#define XPI_GEMV_RPS 2
#define XPI_GEMV_SG(T, ESZ)                                                                                 \
  __attribute__((intel_reqd_sub_group_size(XPI_SG)))                                                      \
  __attribute__((reqd_work_group_size(XPI_SG * XPI_ROWS_PER_WG, 1, 1)))                                   \
  kernel void xpi_gemv_sg_##T(global float *out, const global float *in, const global void *w,             \
                              const global void *bias, int bdt, int has_bias, int rows, int cols) {        \
    int r0 = (get_group_id(0) * XPI_ROWS_PER_WG + get_sub_group_id()) * XPI_GEMV_RPS, t = get_group_id(1);  \
    if (r0 >= rows) return; /* uniform over the sub-group; no work-group barrier follows */               \
    int r1 = r0 + 1 < rows ? r0 + 1 : r0;                                                                  \
    const global float *x = in + (ulong)t * cols;                                                          \
    const global uchar *w0 = (const global uchar *)w + (ulong)r0 * cols * ESZ;                             \
    const global uchar *w1 = (const global uchar *)w + (ulong)r1 * cols * ESZ;                             \
    float8 a0 = 0.0f, a1 = 0.0f;                                                                           \
    __attribute__((opencl_unroll_hint(2)))                                                                 \
    for (int c0 = 0; c0 < cols; c0 += 8 * XPI_SG) {                                                        \
      float8 xv = xpi_block_x8(x + c0);                                                                    \
      a0 += xv * xpi_block_w8_##T(w0 + (ulong)c0 * ESZ);                                                   \
      a1 += xv * xpi_block_w8_##T(w1 + (ulong)c0 * ESZ);                                                   \
    }                                                                                                      \
    float s0 = sub_group_reduce_add(a0.s0 + a0.s1 + a0.s2 + a0.s3 + a0.s4 + a0.s5 + a0.s6 + a0.s7);        \
    float s1 = sub_group_reduce_add(a1.s0 + a1.s1 + a1.s2 + a1.s3 + a1.s4 + a1.s5 + a1.s6 + a1.s7);        \
    if (get_sub_group_local_id() == 0) {                                                                   \
      global float *o = out + (ulong)t * rows;                                                             \
      o[r0] = s0 + (has_bias ? xpi_load(bias, bdt, r0) : 0.0f);                                            \
      if (r1 != r0) o[r1] = s1 + (has_bias ? xpi_load(bias, bdt, r1) : 0.0f);                              \
    }                                                                                                      \
  }

XPI_GEMV_SG(bf16, 2)
XPI_GEMV_SG(f16, 2)
XPI_GEMV_SG(f32, 4)

/* rsqrt(mean(x^2) + eps) of the row as xpi_rmsnorm_sg computes it (lane-strided squares, one sub-group sum),
 * or 1 without a norm (uniform branch). */
static inline float xpi_norm_inv_sg(const global float *x, int cols, int has_norm, float eps) {
  if (!has_norm) return 1.0f;
  float ss = 0.0f;
  for (int j = get_sub_group_local_id(); j < cols; j += XPI_SG) {
    float v = x[j];
    ss += v * v;
  }
  return rsqrt(sub_group_reduce_add(ss) / (float)cols + eps);
}

/* x[c0 + lane + 16k], k < 8, normalised as xpi_rmsnorm_sg writes it: x * inv * nw. */
static inline float8 xpi_block_h8(const global float *x, int c0, int has_norm, float inv, const global void *nw,
                                  int nwdt) {
  float8 v = xpi_block_x8(x + c0);
  if (!has_norm) return v;
  int j = c0 + get_sub_group_local_id();
  float8 w = (float8)(xpi_load(nw, nwdt, j), xpi_load(nw, nwdt, j + 16), xpi_load(nw, nwdt, j + 32),
                      xpi_load(nw, nwdt, j + 48), xpi_load(nw, nwdt, j + 64), xpi_load(nw, nwdt, j + 80),
                      xpi_load(nw, nwdt, j + 96), xpi_load(nw, nwdt, j + 112));
  return v * inv * w;
}

/* (normalised) in . W[row] for the sub-group, summed as xpi_gemv_sg_* sums (the fused forms give its bits). */
#define XPI_DOT_SG(T, ESZ)                                                                                \
  static inline float xpi_dot_sg_##T(const global float *x, const global void *w, int r, int cols,         \
                                     int has_norm, float inv, const global void *nw, int nwdt) {          \
    const global uchar *wr = (const global uchar *)w + (ulong)r * cols * ESZ;                              \
    float8 acc = 0.0f;                                                                                     \
    for (int c0 = 0; c0 < cols; c0 += 8 * XPI_SG)                                                          \
      acc += xpi_block_h8(x, c0, has_norm, inv, nw, nwdt) * xpi_block_w8_##T(wr + (ulong)c0 * ESZ);        \
    return sub_group_reduce_add(acc.s0 + acc.s1 + acc.s2 + acc.s3 + acc.s4 + acc.s5 + acc.s6 + acc.s7);    \
  }

/* Up to three projections of one (normalised) input row in one launch (q/k/v; with accumulate, o[r] += as the
 * residual add of o_proj/down), n = 1: sub-group g of the grid computes row g of W0, or row g - r0 of W1, or
 * row g - r0 - r1 of W2. Grid: ceil((r0 + r1 + r2) / 4) groups of 64. */
#define XPI_GEMV3_SG(T)                                                                                   \
  __attribute__((intel_reqd_sub_group_size(XPI_SG)))                                                      \
  __attribute__((reqd_work_group_size(XPI_SG * XPI_ROWS_PER_WG, 1, 1)))                                   \
  kernel void xpi_gemv3_sg_##T(global float *o0, global float *o1, global float *o2,                       \
                               const global float *in, const global void *w0, const global void *w1,       \
                               const global void *w2, const global void *b0, const global void *b1,        \
                               const global void *b2, int bdt, int has_bias, int r0, int r1, int r2,       \
                               int cols, const global void *nw, int nwdt, int has_norm, float eps,         \
                               int accumulate) {                                                          \
    int r = get_group_id(0) * XPI_ROWS_PER_WG + get_sub_group_id();                                       \
    if (r >= r0 + r1 + r2) return; /* uniform over the sub-group; no barrier follows */                   \
    global float *o = o0;                                                                                 \
    const global void *w = w0, *b = b0;                                                                   \
    if (r >= r0 + r1) { r -= r0 + r1; o = o2; w = w2; b = b2; }                                           \
    else if (r >= r0) { r -= r0; o = o1; w = w1; b = b1; }                                                \
    float inv = xpi_norm_inv_sg(in, cols, has_norm, eps);                                                 \
    float s = xpi_dot_sg_##T(in, w, r, cols, has_norm, inv, nw, nwdt);                                    \
    if (get_sub_group_local_id() == 0) {                                                                  \
      float v = s + (has_bias ? xpi_load(b, bdt, r) : 0.0f);                                              \
      o[r] = accumulate ? o[r] + v : v;                                                                   \
    }                                                                                                     \
  }

/* out[r] = act(h . G[r]) * (h . U[r]) (act as xpi_glu), h the (normalised) input, n = 1: gate, up and the
 * activation in one launch. Grid: ceil(rows / 4) groups of 64. */
#define XPI_GEMV_GLU_SG(T)                                                                                \
  __attribute__((intel_reqd_sub_group_size(XPI_SG)))                                                      \
  __attribute__((reqd_work_group_size(XPI_SG * XPI_ROWS_PER_WG, 1, 1)))                                   \
  kernel void xpi_gemv_glu_sg_##T(global float *out, const global float *in, const global void *wg,       \
                                  const global void *wu, int rows, int cols, int act,                     \
                                  const global void *nw, int nwdt, int has_norm, float eps) {             \
    int r = get_group_id(0) * XPI_ROWS_PER_WG + get_sub_group_id();                                       \
    if (r >= rows) return;                                                                                \
    float inv = xpi_norm_inv_sg(in, cols, has_norm, eps);                                                 \
    float g = xpi_dot_sg_##T(in, wg, r, cols, has_norm, inv, nw, nwdt);                                   \
    float u = xpi_dot_sg_##T(in, wu, r, cols, has_norm, inv, nw, nwdt);                                   \
    if (get_sub_group_local_id() == 0) out[r] = xpi_glu(g, u, act);                                       \
  }

XPI_DOT_SG(bf16, 2)
XPI_DOT_SG(f16, 2)
XPI_DOT_SG(f32, 4)
XPI_GEMV3_SG(bf16)
XPI_GEMV3_SG(f16)
XPI_GEMV3_SG(f32)
XPI_GEMV_GLU_SG(bf16)
XPI_GEMV_GLU_SG(f16)
XPI_GEMV_GLU_SG(f32)

/* rmsnorm_forward as in portable/norm.cl, one sub-group per row: no local memory, no barriers.
 * Grid: n groups of 16. */
__attribute__((intel_reqd_sub_group_size(XPI_SG)))
__attribute__((reqd_work_group_size(XPI_SG, 1, 1)))
kernel void xpi_rmsnorm_sg(global float *out, global float *x, const global float *residual, int has_res,
                           const global void *w, int wdt, int d, float eps) {
  int lane = get_sub_group_local_id();
  ulong base = (ulong)get_group_id(0) * d;
  float ss = 0.0f;
  for (int j = lane; j < d; j += XPI_SG) {
    float v = x[base + j];
    if (has_res) {
      v += residual[base + j];
      x[base + j] = v;
    }
    ss += v * v;
  }
  float inv = rsqrt(sub_group_reduce_add(ss) / (float)d + eps);
  for (int j = lane; j < d; j += XPI_SG) out[base + j] = x[base + j] * inv * xpi_load(w, wdt, j);
}
