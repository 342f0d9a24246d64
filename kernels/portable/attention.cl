/* Causal attention over the KV cache, GQA by indexing: query head h reads KV head h / (hq / hk) in place.
 * Cache layout (one layer): K[n_ctx][hk][hd], V likewise, in kdt (f32/f16/bf16). Positions come from
 * device memory: token i attends to slots 0..pos[i], so a recorded step replays at any position.
 * Three implementations that agree within rounding:
 *   xpi_attn_eager  reference: full score rows materialized in a scratch buffer, then softmax, then P @ V;
 *   xpi_sdpa        one work-group per (token, head), online softmax over blocks of 64 keys read in place;
 *   xpi_flash_attention_2  FlashAttention-2 tiling: a work-group takes 4 query rows of one KV head (the
 *                   heads of a GQA group share the K/V tiles staged in local memory), online softmax per row. */
#include "xpi_cl.h"

#define XPI_AWG 64
#define XPI_MAX_HD 256

static inline float xpi_wg_reduce(local float *red, float v, int is_max) {
  int lid = get_local_id(0);
  red[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = XPI_AWG / 2; s > 0; s >>= 1) {
    if (lid < s) red[lid] = is_max ? fmax(red[lid], red[lid + s]) : red[lid] + red[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

/* kv_store(kc[pos[i], h, :] = k[i, h, :], vc likewise). Grid (hd, hk, n). Slots outside [0, n_ctx) skipped
 * (the host checks positions it writes). */
kernel void xpi_kv_store(global void *kc, global void *vc, int kdt, const global float *k, const global float *v,
                         const global int *pos, int hk, int hd, int n_ctx) {
  int j = get_global_id(0), h = get_global_id(1), i = get_global_id(2);
  int slot = pos[i];
  if (j >= hd || slot < 0 || slot >= n_ctx) return;
  ulong src = ((ulong)i * hk + h) * hd + j, dst = ((ulong)slot * hk + h) * hd + j;
  xpi_store(kc, kdt, dst, k[src]);
  xpi_store(vc, kdt, dst, v[src]);
}

/* sdpa_forward(out[n,hq,hd], q[n,hq,hd], cache). Grid: n*hq groups of 64, group = token * hq + head. */
__attribute__((reqd_work_group_size(XPI_AWG, 1, 1)))
kernel void xpi_sdpa(global float *out, const global float *q, const global void *kc, const global void *vc,
                     int kdt, const global int *pos, int hq, int hk, int hd, float scale) {
  local float qs[XPI_MAX_HD];
  local float p[XPI_AWG];
  local float red[XPI_AWG];
  int lid = get_local_id(0), g = get_group_id(0);
  int i = g / hq, h = g % hq, kh = h / (hq / hk);
  ulong qo = ((ulong)i * hq + h) * hd;
  for (int j = lid; j < hd; j += XPI_AWG) qs[j] = q[qo + j];
  barrier(CLK_LOCAL_MEM_FENCE);
  int L = pos[i] + 1;
  float m = -INFINITY, l = 0.0f;
  float acc[XPI_MAX_HD / XPI_AWG];
  for (int c = 0; c < XPI_MAX_HD / XPI_AWG; c++) acc[c] = 0.0f;
  for (int t0 = 0; t0 < L; t0 += XPI_AWG) {
    int t = t0 + lid;
    float s = -INFINITY;
    if (t < L) {
      ulong kb = ((ulong)t * hk + kh) * hd;
      float d = 0.0f;
      for (int j = 0; j < hd; j++) d += qs[j] * xpi_load(kc, kdt, kb + j);
      s = d * scale;
    }
    float mn = fmax(m, xpi_wg_reduce(red, s, 1)); /* finite: key t0 < L is in the block */
    float pt = t < L ? exp(s - mn) : 0.0f;
    float corr = exp(m - mn);
    p[lid] = pt;
    l = l * corr + xpi_wg_reduce(red, pt, 0); /* its barriers also publish p[] */
    int nt = min(XPI_AWG, L - t0);
    for (int c = 0, j = lid; j < hd; c++, j += XPI_AWG) {
      float a = acc[c] * corr;
      for (int tt = 0; tt < nt; tt++) a += p[tt] * xpi_load(vc, kdt, ((ulong)(t0 + tt) * hk + kh) * hd + j);
      acc[c] = a;
    }
    m = mn;
    barrier(CLK_LOCAL_MEM_FENCE); /* p[] is rewritten next block */
  }
  for (int c = 0, j = lid; j < hd; c++, j += XPI_AWG) out[qo + j] = acc[c] / l;
}

/* eager_forward(out, q, cache, scores[n*hq, n_ctx] scratch). Grid: n*hq groups of 64. */
__attribute__((reqd_work_group_size(XPI_AWG, 1, 1)))
kernel void xpi_attn_eager(global float *out, const global float *q, const global void *kc, const global void *vc,
                           int kdt, const global int *pos, int hq, int hk, int hd, float scale,
                           global float *scores, int n_ctx) {
  local float red[XPI_AWG];
  int lid = get_local_id(0), g = get_group_id(0);
  int i = g / hq, h = g % hq, kh = h / (hq / hk);
  ulong qo = ((ulong)i * hq + h) * hd;
  global float *S = scores + (ulong)g * n_ctx;
  int L = pos[i] + 1;
  float mx = -INFINITY;
  for (int t = lid; t < L; t += XPI_AWG) {
    ulong kb = ((ulong)t * hk + kh) * hd;
    float d = 0.0f;
    for (int j = 0; j < hd; j++) d += q[qo + j] * xpi_load(kc, kdt, kb + j);
    S[t] = d * scale;
    mx = fmax(mx, S[t]);
  }
  mx = xpi_wg_reduce(red, mx, 1);
  float sum = 0.0f;
  for (int t = lid; t < L; t += XPI_AWG) {
    float e = exp(S[t] - mx);
    S[t] = e;
    sum += e;
  }
  sum = xpi_wg_reduce(red, sum, 0);
  barrier(CLK_GLOBAL_MEM_FENCE); /* S[] written by other work-items */
  for (int j = lid; j < hd; j += XPI_AWG) {
    float a = 0.0f;
    for (int t = 0; t < L; t++) a += S[t] * xpi_load(vc, kdt, ((ulong)t * hk + kh) * hd + j);
    out[qo + j] = a / sum;
  }
}

#define XPI_FR 4  /* query rows per work-group */
#define XPI_FL 16 /* lanes per row == keys per tile */

/* flash_attention_2_forward(out, q, cache). Rows of KV head kh: r = i * g + hg (g = hq / hk, query head
 * kh * g + hg). Grid: groups (ceil(n*g / 4), hk) of 64 = 4 rows x 16 lanes. */
__attribute__((reqd_work_group_size(XPI_FR * XPI_FL, 1, 1)))
kernel void xpi_flash_attention_2(global float *out, const global float *q, const global void *kc,
                                  const global void *vc, int kdt, const global int *pos, int n, int hq, int hk,
                                  int hd, float scale) {
  local float ks[XPI_FL * XPI_MAX_HD];
  local float vs[XPI_FL * XPI_MAX_HD];
  local float qs[XPI_FR * XPI_MAX_HD];
  local float ps[XPI_FR * XPI_FL];
  local float red[XPI_FR * XPI_FL];
  int lid = get_local_id(0), rho = lid / XPI_FL, lane = lid % XPI_FL;
  int g = hq / hk, kh = get_group_id(1);
  int r = get_group_id(0) * XPI_FR + rho;
  int valid = r < n * g;
  int i = valid ? r / g : 0, h = kh * g + (valid ? r % g : 0);
  ulong qo = ((ulong)i * hq + h) * hd;
  int L = valid ? pos[i] + 1 : 0;
  /* longest row of the group bounds the tile loop */
  int lmax = 0;
  for (int rr = 0; rr < XPI_FR; rr++) {
    int r2 = get_group_id(0) * XPI_FR + rr;
    if (r2 < n * g) lmax = max(lmax, pos[r2 / g] + 1);
  }
  for (int j = lane; j < hd; j += XPI_FL) qs[rho * XPI_MAX_HD + j] = valid ? q[qo + j] * scale : 0.0f;
  float m = -INFINITY, l = 0.0f;
  float acc[XPI_MAX_HD / XPI_FL];
  for (int c = 0; c < XPI_MAX_HD / XPI_FL; c++) acc[c] = 0.0f;
  for (int t0 = 0; t0 < lmax; t0 += XPI_FL) {
    for (int e = lid; e < XPI_FL * hd; e += XPI_FR * XPI_FL) {
      int tt = e / hd, j = e % hd, t = t0 + tt;
      ulong o = ((ulong)t * hk + kh) * hd + j;
      ks[tt * XPI_MAX_HD + j] = t < lmax ? xpi_load(kc, kdt, o) : 0.0f;
      vs[tt * XPI_MAX_HD + j] = t < lmax ? xpi_load(vc, kdt, o) : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int t = t0 + lane;
    float s = -INFINITY;
    if (t < L) {
      float d = 0.0f;
      for (int j = 0; j < hd; j++) d += qs[rho * XPI_MAX_HD + j] * ks[lane * XPI_MAX_HD + j];
      s = d;
    }
    /* row max over the 16 lanes of this row */
    red[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int st = XPI_FL / 2; st > 0; st >>= 1) {
      if (lane < st) red[lid] = fmax(red[lid], red[lid + st]);
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    float mn = fmax(m, red[rho * XPI_FL]);
    barrier(CLK_LOCAL_MEM_FENCE);
    float pt = 0.0f, corr = 1.0f;
    if (mn != -INFINITY) { /* else the row has no key in this tile yet (cannot happen: key 0 is in tile 0) */
      pt = s == -INFINITY ? 0.0f : exp(s - mn);
      corr = exp(m - mn);
    }
    ps[lid] = pt;
    red[lid] = pt;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int st = XPI_FL / 2; st > 0; st >>= 1) {
      if (lane < st) red[lid] += red[lid + st];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    l = l * corr + red[rho * XPI_FL];
    for (int c = 0, j = lane; j < hd; c++, j += XPI_FL) {
      float a = acc[c] * corr;
      for (int tt = 0; tt < XPI_FL; tt++) a += ps[rho * XPI_FL + tt] * vs[tt * XPI_MAX_HD + j];
      acc[c] = a;
    }
    m = mn;
    barrier(CLK_LOCAL_MEM_FENCE); /* tiles, ps and red are rewritten next round */
  }
  if (valid)
    for (int c = 0, j = lane; j < hd; c++, j += XPI_FL) out[qo + j] = acc[c] / l;
}
