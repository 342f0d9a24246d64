/* Sampling helpers on logits: argmax (work-groups of 64 over blocks of a row, reduced by the last) and top-k (one
 * work-group of 64 per row). */
#include "xpi_cl.h"

#define XPI_SWG 64

/* Is (va, ia) ranked before (vb, ib)? Larger value first, lower index on ties; NaN ranks last. */
static inline int xpi_before(float va, int ia, float vb, int ib) {
  if (isnan(vb)) return !isnan(va) || ia < ib;
  if (isnan(va)) return 0;
  return va > vb || (va == vb && ia < ib);
}

/* Reduces (val, idx) over the work-group; every work-item gets the winner. */
static inline void xpi_wg_best(local float *lv, local int *li, float *v, int *i) {
  int lid = get_local_id(0);
  lv[lid] = *v;
  li[lid] = *i;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = XPI_SWG / 2; s > 0; s >>= 1) {
    if (lid < s && xpi_before(lv[lid + s], li[lid + s], lv[lid], li[lid])) {
      lv[lid] = lv[lid + s];
      li[lid] = li[lid + s];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  *v = lv[0];
  *i = li[0];
  barrier(CLK_LOCAL_MEM_FENCE);
}

/* out[r] = argmax(x[r, 0..cols)), lowest index on ties; -1 when the row holds a NaN or an infinity (the greedy
 * path's only sign of broken logits). Two stages in one launch: grid rows * blocks groups of 64, group = r * blocks
 * + b; group b scans columns [b * per, (b + 1) * per) (per a multiple of 64) so that a vocabulary row is read by
 * many work-groups at once, not one. blocks > 1: each writes (value, index, bad) to part[(r * blocks + b) * 3] (as
 * floats; index and bad bit-cast), and the last of the row's groups to finish (counted in cnt[r], set back to zero
 * for the next launch) reduces them in block order, which keeps the lowest index on ties. */
__attribute__((reqd_work_group_size(XPI_SWG, 1, 1)))
kernel void xpi_argmax(global int *out, const global float *x, int cols, int blocks, global float *part,
                       global int *cnt) {
  local float lv[XPI_SWG];
  local int li[XPI_SWG];
  local int last;
  int r = get_group_id(0) / blocks, b = get_group_id(0) % blocks, lid = get_local_id(0);
  int per = ((cols + blocks - 1) / blocks + XPI_SWG - 1) / XPI_SWG * XPI_SWG;
  int c0 = b * per, c1 = min(cols, c0 + per);
  const global float *row = x + (ulong)r * cols;
  float bv = NAN;
  int bi = 0x7fffffff, bad = 0;
  for (int c = c0 + lid; c < c1; c += XPI_SWG) {
    float v = row[c];
    bad |= !isfinite(v);
    if (xpi_before(v, c, bv, bi)) { bv = v; bi = c; }
  }
  xpi_wg_best(lv, li, &bv, &bi); /* ends with a barrier: li is free again */
  li[lid] = bad;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = XPI_SWG / 2; s > 0; s >>= 1) {
    if (lid < s) li[lid] |= li[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  bad = li[0];
  if (blocks == 1) {
    if (lid == 0) out[r] = bad ? -1 : bi;
    return;
  }
  global float *pb = part + ((ulong)r * blocks + b) * 3;
  if (lid == 0) pb[0] = bv, pb[1] = as_float(bi), pb[2] = as_float(bad);
  /* as xpi_sdpa: the barrier gathers the write, the device-scope acq_rel count publishes it / orders the reads */
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  global atomic_int *ctr = (global atomic_int *)cnt + r;
  if (lid == 0) last = atomic_fetch_add_explicit(ctr, 1, memory_order_acq_rel, memory_scope_device) == blocks - 1;
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  if (!last || lid != 0) return;
  const global float *pr = part + (ulong)r * blocks * 3;
  bv = NAN, bi = 0x7fffffff, bad = 0;
  for (int k = 0; k < blocks; k++) {
    float v = pr[k * 3];
    int i = as_int(pr[k * 3 + 1]);
    bad |= as_int(pr[k * 3 + 2]);
    if (xpi_before(v, i, bv, bi)) { bv = v; bi = i; }
  }
  out[r] = bad ? -1 : bi;
  atomic_store_explicit(ctr, 0, memory_order_relaxed, memory_scope_device); /* for the next launch */
}

/* The k best logits of each row, best first: ids[r, k], vals[r, k] (ties: lower index first), and the row's
 * softmax normaliser norm[r, 2] = (max, sum of exp(x - max)). k passes, each the argmax of what ranks after the
 * previous winner: O(k * cols), meant for small k (sampling). A row holding a NaN or an infinity gets ids all
 * -1, as xpi_argmax reports it. The sum is compensated (Kahan) per work-item and pairwise over the group, so it
 * stays within a few ulps of the exact sum whatever cols is (logprobs are logits minus log-sum-exp). */
__attribute__((reqd_work_group_size(XPI_SWG, 1, 1)))
kernel void xpi_topk(global int *ids, global float *vals, global float *norm, const global float *x, int cols,
                     int k) {
  local float lv[XPI_SWG];
  local int li[XPI_SWG];
  int r = get_group_id(0), lid = get_local_id(0);
  const global float *row = x + (ulong)r * cols;
  float bv = NAN;
  int bi = 0x7fffffff, bad = 0;
  for (int c = lid; c < cols; c += XPI_SWG) { /* pass 0: the best, and whether the row is finite */
    float v = row[c];
    bad |= !isfinite(v);
    if (xpi_before(v, c, bv, bi)) { bv = v; bi = c; }
  }
  xpi_wg_best(lv, li, &bv, &bi);
  li[lid] = bad;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = XPI_SWG / 2; s > 0; s >>= 1) {
    if (lid < s) li[lid] |= li[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  bad = li[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (bad) { /* the same for every work-item of the group */
    for (int j = lid; j < k; j += XPI_SWG) ids[(ulong)r * k + j] = -1;
    return;
  }
  float sum = 0.0f, comp = 0.0f;
  for (int c = lid; c < cols; c += XPI_SWG) {
    float y = exp(row[c] - bv) - comp, t = sum + y;
    comp = (t - sum) - y;
    sum = t;
  }
  lv[lid] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = XPI_SWG / 2; s > 0; s >>= 1) {
    if (lid < s) lv[lid] += lv[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    norm[2 * (ulong)r] = bv;
    norm[2 * (ulong)r + 1] = lv[0];
    ids[(ulong)r * k] = bi;
    vals[(ulong)r * k] = bv;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  float pv = bv;
  int pi = bi; /* previous winner */
  for (int j = 1; j < k; j++) {
    bv = NAN;
    bi = 0x7fffffff;
    for (int c = lid; c < cols; c += XPI_SWG) {
      float v = row[c];
      if (xpi_before(pv, pi, v, c) && xpi_before(v, c, bv, bi)) { bv = v; bi = c; }
    }
    xpi_wg_best(lv, li, &bv, &bi);
    if (lid == 0) {
      ids[(ulong)r * k + j] = bi;
      vals[(ulong)r * k + j] = bv;
    }
    pv = bv;
    pi = bi;
  }
}
