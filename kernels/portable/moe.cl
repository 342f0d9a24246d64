/* Mixture of experts (ops.h: moe_route, moe_matmul, moe_combine). The experts' weights are reached through a
 * table of device addresses (one per expert), so the kernels choose each token's experts from device memory and
 * a recorded decode step replays with whatever the router picked (the backend sets indirect access). */
#include "xpi_cl.h"

#define XPI_MOE_WG 64

/* One work-item per token t < n: softmax over the experts, the k best (lower id on ties), renormalized when
 * norm_topk. The same sequence of f32 operations as the CPU op. Grid: ceil(n/64) groups of 64. */
__attribute__((reqd_work_group_size(XPI_MOE_WG, 1, 1)))
kernel void xpi_moe_route(global int *ids, global float *wts, const global float *logits, int n, int ne, int k,
                          int norm_topk) {
  int t = get_global_id(0);
  if (t >= n) return;
  const global float *x = logits + (ulong)t * ne;
  global int *id = ids + (ulong)t * k;
  global float *w = wts + (ulong)t * k;
  float mx = x[0];
  int finite = 1;
  for (int e = 0; e < ne; e++) {
    finite &= isfinite(x[e]);
    mx = x[e] > mx ? x[e] : mx;
  }
  if (!finite) {
    for (int j = 0; j < k; j++) id[j] = -1, w[j] = 0.0f;
    return;
  }
  float sum = 0.0f;
  for (int e = 0; e < ne; e++) sum += exp(x[e] - mx);
  int have = 0;
  for (int e = 0; e < ne; e++) {
    if (have == k && !(x[e] > x[id[k - 1]])) continue;
    int i = have < k ? have++ : k - 1;
    for (; i > 0 && x[e] > x[id[i - 1]]; i--) id[i] = id[i - 1];
    id[i] = e;
  }
  float top = 0.0f;
  for (int j = 0; j < k; j++) {
    w[j] = exp(x[id[j]] - mx) / sum;
    top += w[j];
  }
  if (norm_topk)
    for (int j = 0; j < k; j++) w[j] /= top;
}

/* Group (r, x) computes row r of expert x for every slot s < n*k that chose x: out[s, r] = x_s . W_x[r, :],
 * x_s = in[s / k] (in_k 1) or in[s] (in_k k). The weight row is read from memory once and stays in cache for
 * the expert's other slots: prefill groups tokens by expert, decode reads only the chosen experts (the other
 * groups only scan the ids). Groups (r, 0) also zero the rows of slots whose id is out of range.
 * Grid: (rows, n_experts) groups of 64. */
__attribute__((reqd_work_group_size(XPI_MOE_WG, 1, 1)))
kernel void xpi_moe_matmul(global float *out, const global float *in, int in_k, const global ulong *table, int wdt,
                           int ne, int rows, int cols, const global int *ids, int slots, int k) {
  local float red[XPI_MOE_WG];
  int r = get_group_id(0), x = get_group_id(1), lid = get_local_id(0);
  const global void *w = (const global void *)table[x];
  ulong wb = (ulong)r * cols;
  for (int s = 0; s < slots; s++) {
    int e = ids[s]; /* uniform over the group: the barriers below are reached by all or none */
    if (x == 0 && (e < 0 || e >= ne)) {
      if (lid == 0) out[(ulong)s * rows + r] = 0.0f;
      continue;
    }
    if (e != x) continue;
    const global float *xr = in + (ulong)(in_k == 1 ? s / k : s) * cols;
    float acc = 0.0f;
    for (int c = lid; c < cols; c += XPI_MOE_WG) acc += xr[c] * xpi_load(w, wdt, wb + c);
    red[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = XPI_MOE_WG / 2; h > 0; h >>= 1) {
      if (lid < h) red[lid] += red[lid + h];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) out[(ulong)s * rows + r] = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

/* out[t, c] = sum_j wts[t, j] y[t*k + j, c] (+ sigmoid(gate[t]) shared[t, c] when has_shared), one work-item per
 * element of out[n, d]. Grid: ceil(n*d/256) groups of 256. */
kernel void xpi_moe_combine(global float *out, const global float *y, const global float *wts,
                            const global float *shared, const global float *gate, int has_shared, int k, int d,
                            ulong count) {
  ulong i = get_global_id(0);
  if (i >= count) return;
  ulong t = i / (ulong)d, c = i % (ulong)d;
  float o = 0.0f;
  for (int j = 0; j < k; j++) o += wts[t * k + j] * y[(t * k + j) * d + c];
  if (has_shared) o += 1.0f / (1.0f + exp(-gate[t])) * shared[t * d + c];
  out[i] = o;
}
