/* Mixture of experts (ops.h: moe_route, moe_matmul, moe_combine). The experts' weights are reached through a
 * table of device addresses (one per expert), so the kernels choose each token's experts from device memory and
 * a recorded decode step replays with whatever the router picked (the backend sets indirect access). */
#include "xpi_cl.h"
#include "xpi_quant.h" /* the q8/q4 block dots of the dense quantized matmuls */

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
    for (int c = lid; c < cols; c += XPI_MOE_WG) acc = fma(xr[c], xpi_load(w, wdt, wb + c), acc);
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

/* q8/q4 experts (the dense formats, kernels/common/xpi_quant.h): the table holds the n experts' quants, then
 * their half scales (table[ne + x]). The activations come quantized by xpi_quant_act: xq/dx row i is in[i], so a
 * slot reads row s / k (in_k 1) or s (in_k k). Each output is the dense kernels' sum of d * dx * (exact int32
 * block dot): the CPU's integer semantics, only the f32 order of the block sums differs. */

/* Decode (a few tokens): group (r, s) writes out[s, r] from row r of the slot's expert, so a step reads exactly
 * its chosen experts' rows, each by as many groups as slots chose it. An out-of-range id gets a zero row.
 * Grid: (rows, slots) groups of 64. */
#define XPI_MOE_GEMV_Q(SUFFIX, BS, WT)                                                                        \
  __attribute__((reqd_work_group_size(XPI_MOE_WG, 1, 1)))                                                   \
  kernel void xpi_moe_gemv_##SUFFIX(global float *out, const global char *xq, const global float *dx,         \
                                    const global ulong *table, int ne, int rows, int cols, const global int *ids, \
                                    int in_k, int k) {                                                        \
    local float red[XPI_MOE_WG];                                                                             \
    const int r = get_group_id(0), s = get_group_id(1), lid = get_local_id(0);                               \
    const int e = ids[s]; /* uniform over the group */                                                       \
    if (e < 0 || e >= ne) {                                                                                  \
      if (lid == 0) out[(ulong)s * rows + r] = 0.0f;                                                         \
      return;                                                                                                \
    }                                                                                                        \
    const int nb = (cols + XPI_QK - 1) / XPI_QK, xr = in_k == 1 ? s / k : s;                                 \
    const global WT *w = (const global WT *)table[e] + (ulong)r * nb * (BS);                                 \
    const global half *d = (const global half *)table[ne + e] + (ulong)r * nb;                               \
    const float acc = xpi_qrow_part_##SUFFIX(w, d, xq + (ulong)xr * nb * XPI_QK, dx + (ulong)xr * nb, nb, lid, \
                                             XPI_MOE_WG);                                                    \
    const float sum = xpi_wg_sum(red, acc, lid, XPI_MOE_WG);                                                 \
    if (lid == 0) out[(ulong)s * rows + r] = sum;                                                            \
  }
XPI_MOE_GEMV_Q(q8, XPI_QK, char)
XPI_MOE_GEMV_Q(q4, XPI_QK / 2, uchar)

/* Prefill, grouped by expert: group (rt, x) computes rows [16 rt, 16 rt + 16) of expert x for the slots that
 * chose x, 16 slots at a time, as 16 x 16 tiles of the dense GEMM's block step: each weight block is read once
 * per 16 of the expert's slots, an expert nobody chose is never read. The slots are gathered by all 256
 * work-items scanning 256 ids at a time (in any order: each slot's row is computed alone, so the result does not
 * depend on it) until 16 are waiting or the ids end; fewer than 16 wait for the next scan. Groups (rt, 0) also
 * zero their rows of slots whose id is out of range. Grid: local (16, 16), groups (ceil(rows/16), ne). */
#define XPI_MOE_QT 16
#define XPI_MOE_SCAN (XPI_MOE_QT * XPI_MOE_QT)
#define XPI_MOE_GEMM_Q(SUFFIX, BS, WT)                                                                        \
  __attribute__((reqd_work_group_size(XPI_MOE_QT, XPI_MOE_QT, 1)))                                          \
  kernel void xpi_moe_gemm_##SUFFIX(global float *out, const global char *xq, const global float *dx,         \
                                    const global ulong *table, int ne, int rows, int cols, const global int *ids, \
                                    int slots, int in_k, int k) {                                             \
    local char xs[XPI_MOE_QT][XPI_QTILE_LD], ws[XPI_MOE_QT][XPI_QTILE_LD];                                   \
    local float xd[XPI_MOE_QT], wd[XPI_MOE_QT];                                                              \
    local int sl[XPI_MOE_QT + XPI_MOE_SCAN], have; /* gathered slots: up to 15 waiting + one scan */         \
    const int lx = get_local_id(0), ly = get_local_id(1), lid = ly * XPI_MOE_QT + lx, x = get_group_id(1);   \
    const int r0 = get_group_id(0) * XPI_MOE_QT, rl = r0 + ly, r = r0 + lx;                                  \
    const int nb = (cols + XPI_QK - 1) / XPI_QK;                                                             \
    if (x == 0)                                                                                              \
      for (int s = ly; s < slots; s += XPI_MOE_QT)                                                           \
        if ((ids[s] < 0 || ids[s] >= ne) && r < rows) out[(ulong)s * rows + r] = 0.0f;                      \
    if (lid == 0) have = 0;                                                                                  \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                            \
    int base = 0, h = 0; /* uniform: the next id to scan, the slots gathered */                              \
    for (;;) {                                                                                               \
      while (h < XPI_MOE_QT && base < slots) {                                                               \
        const int s = base + lid;                                                                            \
        if (s < slots && ids[s] == x) sl[atomic_inc(&have)] = s;                                             \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                        \
        h = have;                                                                                            \
        base += XPI_MOE_SCAN;                                                                                \
        barrier(CLK_LOCAL_MEM_FENCE); /* every work-item has read have before the next scan changes it */     \
      }                                                                                                      \
      if (h == 0) break;                                                                                     \
      const int end = base >= slots ? h : h - h % XPI_MOE_QT; /* whole tiles, or all once the ids end */      \
      const global WT *w = (const global WT *)table[x];                                                      \
      const global half *d = (const global half *)table[ne + x];                                             \
      for (int j0 = 0; j0 < end; j0 += XPI_MOE_QT) {                                                         \
        const int c = min(XPI_MOE_QT, end - j0), ts = ly < c ? sl[j0 + ly] : 0, xr = in_k == 1 ? ts / k : ts; \
        float acc = 0.0f;                                                                                    \
        for (int b = 0; b < nb; b++)                                                                         \
          acc += xpi_qtile_block_##SUFFIX(xs, ws, xd, wd, lx, ly, ly < c, xq + ((ulong)xr * nb + b) * XPI_QK, \
                                          dx + (ulong)xr * nb + b, rl < rows, w + ((ulong)rl * nb + b) * (BS), \
                                          d + (ulong)rl * nb + b);                                           \
        if (ly < c && r < rows) out[(ulong)ts * rows + r] = acc;                                             \
      }                                                                                                      \
      const int left = h - end; /* fewer than 16: to the front, for the next scan */                         \
      const int keep = lid < left ? sl[end + lid] : 0;                                                       \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                          \
      if (lid < left) sl[lid] = keep;                                                                        \
      if (lid == 0) have = left;                                                                             \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                          \
      h = left;                                                                                              \
    }                                                                                                        \
  }
XPI_MOE_GEMM_Q(q8, XPI_QK, char)
XPI_MOE_GEMM_Q(q4, XPI_QK / 2, uchar)

/* out[t, c] = sum_j wts[t, j] y[r(t*k + j), c] (+ sigmoid(gate[t]) shared[t, c] when has_shared), r(s) = pos[s]
 * when has_pos (the rows as moe_mlp left them), else s; one work-item per element of out[n, d].
 * Grid: ceil(n*d/256) groups of 256. */
kernel void xpi_moe_combine(global float *out, const global float *y, const global int *pos, int has_pos,
                            const global float *wts, const global float *shared, const global float *gate,
                            int has_shared, int k, int d, ulong count) {
  ulong i = get_global_id(0);
  if (i >= count) return;
  ulong t = i / (ulong)d, c = i % (ulong)d;
  float o = 0.0f;
  for (int j = 0; j < k; j++) {
    ulong s = t * k + j, r = has_pos ? (ulong)pos[s] : s;
    o += wts[s] * y[r * d + c];
  }
  if (has_shared) o += 1.0f / (1.0f + exp(-gate[t])) * shared[t * d + c];
  out[i] = o;
}
