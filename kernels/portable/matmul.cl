/* Matrix products out[n, rows] = in[n, cols] @ W^T (+ bias), W [rows, cols] row-major in f32/f16/bf16,
 * f32 accumulation. GEMV (decode, n = 1): one work-group of 64 per output, local-memory reduction.
 * GEMM (prefill): 16x16 output tiles with the shared K slices of in and W staged in local memory.
 * Products are added with explicit fma and nothing is contracted (FP_CONTRACT OFF; gemv_sg.cl says why). */
#pragma OPENCL FP_CONTRACT OFF
#include "xpi_cl.h"

#define XPI_MWG 64
#define XPI_T 16

static inline float xpi_ld_f32(const global void *w, ulong i) { return ((const global float *)w)[i]; }
static inline float xpi_ld_f16(const global void *w, ulong i) { return vload_half(i, (const global half *)w); }
static inline float xpi_ld_bf16(const global void *w, ulong i) { return xpi_bf16_to_f32(((const global ushort *)w)[i]); }

/* Grid: (rows, n) groups of 64; group (r, t) writes out[t, r]. */
#define XPI_GEMV(SUFFIX)                                                                                  \
  __attribute__((reqd_work_group_size(XPI_MWG, 1, 1)))                                                    \
  kernel void xpi_gemv_##SUFFIX(global float *out, const global float *in, const global void *w,           \
                                const global void *bias, int bdt, int has_bias, int rows, int cols) {      \
    local float red[XPI_MWG];                                                                             \
    int r = get_group_id(0), t = get_group_id(1), lid = get_local_id(0);                                  \
    ulong wb = (ulong)r * cols;                                                                           \
    const global float *xr = in + (ulong)t * cols;                                                        \
    float acc = 0.0f;                                                                                     \
    for (int c = lid; c < cols; c += XPI_MWG) acc = fma(xr[c], xpi_ld_##SUFFIX(w, wb + c), acc);          \
    red[lid] = acc;                                                                                       \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                         \
    for (int s = XPI_MWG / 2; s > 0; s >>= 1) {                                                           \
      if (lid < s) red[lid] += red[lid + s];                                                              \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                       \
    }                                                                                                     \
    if (lid == 0) out[(ulong)t * rows + r] = red[0] + (has_bias ? xpi_load(bias, bdt, r) : 0.0f);         \
  }

/* Grid: local (16, 16), groups (ceil(rows/16), ceil(n/16)); work-item (lx, ly) writes out[t0+ly, r0+lx]. */
#define XPI_GEMM(SUFFIX)                                                                                  \
  __attribute__((reqd_work_group_size(XPI_T, XPI_T, 1)))                                                  \
  kernel void xpi_gemm_##SUFFIX(global float *out, const global float *in, const global void *w,           \
                                const global void *bias, int bdt, int has_bias, int rows, int cols,       \
                                int n) {                                                                  \
    local float xs[XPI_T][XPI_T + 1];                                                                     \
    local float ws[XPI_T][XPI_T + 1];                                                                     \
    int lx = get_local_id(0), ly = get_local_id(1);                                                       \
    int r0 = get_group_id(0) * XPI_T, t0 = get_group_id(1) * XPI_T;                                       \
    float acc = 0.0f;                                                                                     \
    for (int k0 = 0; k0 < cols; k0 += XPI_T) {                                                            \
      int kk = k0 + lx;                                                                                   \
      xs[ly][lx] = (t0 + ly < n && kk < cols) ? in[(ulong)(t0 + ly) * cols + kk] : 0.0f;                  \
      ws[ly][lx] = (r0 + ly < rows && kk < cols) ? xpi_ld_##SUFFIX(w, (ulong)(r0 + ly) * cols + kk) : 0.0f; \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                       \
      for (int k = 0; k < XPI_T; k++) acc = fma(xs[ly][k], ws[lx][k], acc);                               \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                       \
    }                                                                                                     \
    int r = r0 + lx, t = t0 + ly;                                                                         \
    if (r < rows && t < n) out[(ulong)t * rows + r] = acc + (has_bias ? xpi_load(bias, bdt, r) : 0.0f);   \
  }

XPI_GEMV(f32)
XPI_GEMV(f16)
XPI_GEMV(bf16)
XPI_GEMM(f32)
XPI_GEMM(f16)
XPI_GEMM(bf16)

/* ---- fused decode forms (n = 1), one work-group of 64 per output row as xpi_gemv_*, the same sums in the same
 * order, so a fused launch gives the bits of the separate ones. With has_norm the input row is first
 * RMS-normalised as xpi_rmsnorm (portable/norm.cl) does it, in every work-group: in * inv * nw, inv from the same
 * 64-wide sum of squares. */

/* Sum over the work-group, every work-item gets it (xpi_wg_sum of norm.cl). */
static float xpi_mm_wg_sum(local float *red, float v) {
  int lid = get_local_id(0);
  red[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = XPI_MWG / 2; s > 0; s >>= 1) {
    if (lid < s) red[lid] += red[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

/* rsqrt(mean(x^2) + eps) of the row as xpi_rmsnorm computes it, or 1 without a norm (uniform branch). */
static float xpi_mm_norm_inv(local float *red, const global float *xr, int cols, int has_norm, float eps) {
  if (!has_norm) return 1.0f;
  float ss = 0.0f;
  for (int j = get_local_id(0); j < cols; j += XPI_MWG) {
    float v = xr[j];
    ss = fma(v, v, ss);
  }
  return xpi_rms_inv(xpi_mm_wg_sum(red, ss), cols, eps);
}

/* (normalised) in . W[row] over the work-group (every work-item gets it; red is free again on return). */
#define XPI_DOT_WG(SUFFIX)                                                                                \
  static float xpi_dot_wg_##SUFFIX(local float *red, const global float *xr, const global void *w, ulong wb, \
                                   int cols, int has_norm, float inv, const global void *nw, int nwdt) {  \
    int lid = get_local_id(0);                                                                            \
    float acc = 0.0f;                                                                                     \
    for (int c = lid; c < cols; c += XPI_MWG) {                                                           \
      float h = has_norm ? xr[c] * inv * xpi_load(nw, nwdt, c) : xr[c];                                   \
      acc = fma(h, xpi_ld_##SUFFIX(w, wb + c), acc);                                                      \
    }                                                                                                     \
    return xpi_mm_wg_sum(red, acc);                                                                       \
  }

/* Up to three projections of one (normalised) input row in one launch (q/k/v; with accumulate, o[r] += as the
 * residual add of o_proj/down): rows r0 + r1 + r2 groups; group g computes row g of W0, or row g - r0 of W1, or
 * row g - r0 - r1 of W2. */
#define XPI_GEMV3(SUFFIX)                                                                                 \
  __attribute__((reqd_work_group_size(XPI_MWG, 1, 1)))                                                    \
  kernel void xpi_gemv3_##SUFFIX(global float *o0, global float *o1, global float *o2,                     \
                                 const global float *in, const global void *w0, const global void *w1,     \
                                 const global void *w2, const global void *b0, const global void *b1,      \
                                 const global void *b2, int bdt, int has_bias, int r0, int r1, int r2,     \
                                 int cols, const global void *nw, int nwdt, int has_norm, float eps,       \
                                 int accumulate) {                                                        \
    local float red[XPI_MWG];                                                                             \
    int r = get_group_id(0);                                                                              \
    global float *o = o0;                                                                                 \
    const global void *w = w0, *b = b0;                                                                   \
    if (r >= r0 + r1) { r -= r0 + r1; o = o2; w = w2; b = b2; }                                           \
    else if (r >= r0) { r -= r0; o = o1; w = w1; b = b1; }                                                \
    float inv = xpi_mm_norm_inv(red, in, cols, has_norm, eps);                                            \
    float s = xpi_dot_wg_##SUFFIX(red, in, w, (ulong)r * cols, cols, has_norm, inv, nw, nwdt);            \
    if (get_local_id(0) == 0) {                                                                           \
      float v = s + (has_bias ? xpi_load(b, bdt, r) : 0.0f);                                              \
      o[r] = accumulate ? o[r] + v : v;                                                                   \
    }                                                                                                     \
  }

/* out[r] = act(h . G[r]) * (h . U[r]) (act as xpi_glu), h the (normalised) input: gate, up and the activation in
 * one launch. */
#define XPI_GEMV_GLU(SUFFIX)                                                                              \
  __attribute__((reqd_work_group_size(XPI_MWG, 1, 1)))                                                    \
  kernel void xpi_gemv_glu_##SUFFIX(global float *out, const global float *in, const global void *wg,     \
                                    const global void *wu, int cols, int act, const global void *nw,      \
                                    int nwdt, int has_norm, float eps) {                                  \
    local float red[XPI_MWG];                                                                             \
    int r = get_group_id(0);                                                                              \
    float inv = xpi_mm_norm_inv(red, in, cols, has_norm, eps);                                            \
    float g = xpi_dot_wg_##SUFFIX(red, in, wg, (ulong)r * cols, cols, has_norm, inv, nw, nwdt);           \
    float u = xpi_dot_wg_##SUFFIX(red, in, wu, (ulong)r * cols, cols, has_norm, inv, nw, nwdt);           \
    if (get_local_id(0) == 0) out[r] = xpi_glu(g, u, act);                                                \
  }

XPI_DOT_WG(f32)
XPI_DOT_WG(f16)
XPI_DOT_WG(bf16)
XPI_GEMV3(f32)
XPI_GEMV3(f16)
XPI_GEMV3(bf16)
XPI_GEMV_GLU(f32)
XPI_GEMV_GLU(f16)
XPI_GEMV_GLU(bf16)
