/* RMSNorm (with the residual add fused) and RoPE (with qwen3's per-head q/k RMSNorm fused).
 * One work-group of 64 per row (token, or token x head); sums reduced in local memory. Squares are added with
 * explicit fma and nothing is contracted (FP_CONTRACT OFF; tuned/gemv_sg.cl says why). */
#pragma OPENCL FP_CONTRACT OFF
#include "xpi_cl.h"

#define XPI_NWG 64

/* Sum of v over the work-group; every work-item gets it. */
static inline float xpi_wg_sum(local float *red, float v) {
  int lid = get_local_id(0);
  red[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = XPI_NWG / 2; s > 0; s >>= 1) {
    if (lid < s) red[lid] += red[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

/* rmsnorm_forward(out[n,d], x[n,d], residual[n,d]): if has_res, x += residual (x is the residual stream);
 * out = x * rsqrt(mean(x^2) + eps) * w. Grid: n groups of 64. */
__attribute__((reqd_work_group_size(XPI_NWG, 1, 1)))
kernel void xpi_rmsnorm(global float *out, global float *x, const global float *residual, int has_res,
                        const global void *w, int wdt, int d, float eps) {
  local float red[XPI_NWG];
  int lid = get_local_id(0);
  ulong base = (ulong)get_group_id(0) * d;
  float ss = 0.0f;
  for (int j = lid; j < d; j += XPI_NWG) {
    float v = x[base + j];
    if (has_res) {
      v += residual[base + j];
      x[base + j] = v;
    }
    ss = fma(v, v, ss);
  }
  float inv = xpi_rms_inv(xpi_wg_sum(red, ss), d, eps);
  for (int j = lid; j < d; j += XPI_NWG) out[base + j] = x[base + j] * inv * xpi_load(w, wdt, j);
}

/* rope_forward(q[n,hq,hd], k[n,hk,hd]) in place: optional per-head RMSNorm (q_norm / k_norm weights [hd]),
 * then rotate_half RoPE at position pos[i] with angle pos * inv_freq[j] (f32, as transformers; with has_sel,
 * inv_freq[hd/2 + j] where long_sel[i] is nonzero: longrope's long factors). Positions are
 * read from device memory so a recorded step replays at new positions. Grid: n*(hq+hk) groups of 64; group
 * index = token * (hq+hk) + head, heads >= hq being k heads. */
__attribute__((reqd_work_group_size(XPI_NWG, 1, 1)))
kernel void xpi_rope(global float *q, global float *k, const global int *pos, int hq, int hk, int hd,
                     const global float *inv_freq, const global void *qn, int qndt, int has_qn,
                     const global void *kn, int kndt, int has_kn, float eps, const global int *long_sel,
                     int has_sel) {
  local float red[XPI_NWG];
  int lid = get_local_id(0);
  int g = get_group_id(0);
  int i = g / (hq + hk), h = g % (hq + hk);
  int is_q = h < hq;
  global float *x = is_q ? q + ((ulong)i * hq + h) * hd : k + ((ulong)i * hk + (h - hq)) * hd;
  const global void *nw = is_q ? qn : kn;
  int ndt = is_q ? qndt : kndt;
  int has_norm = is_q ? has_qn : has_kn; /* uniform over the work-group (one head) */
  float inv = 1.0f;
  if (has_norm) {
    float ss = 0.0f;
    for (int j = lid; j < hd; j += XPI_NWG) ss = fma(x[j], x[j], ss);
    inv = rsqrt(xpi_wg_sum(red, ss) / (float)hd + eps);
  }
  float p = (float)pos[i];
  int half_d = hd / 2;
  if (has_sel && long_sel[i]) inv_freq += half_d; /* longrope's long factors for this token */
  for (int j = lid; j < half_d; j += XPI_NWG) {
    float x1 = x[j], x2 = x[j + half_d];
    if (has_norm) {
      x1 = x1 * inv * xpi_load(nw, ndt, j);
      x2 = x2 * inv * xpi_load(nw, ndt, j + half_d);
    }
    float a = p * inv_freq[j];
    float c = cos(a), s = sin(a);
    x[j] = x1 * c - x2 * s;
    x[j + half_d] = x2 * c + x1 * s;
  }
}
