/* Split-K decode GEMV (n = 1) for matrices with too few rows to fill the device (k/v projections, a small model's
 * o_proj/down): the columns are cut into `splits` chunks of `chunk` columns and a work-group computes 8 rows over
 * one chunk, writing their partial sums to part[row * splits + split]. The work-groups of a row block count
 * themselves on an atomic counter (cnt[row block]); the last to arrive adds the block's partials in split order
 * 0, 1, ... (a fixed order: the result does not depend on which group finishes last), adds the bias and writes
 * (or with accumulate adds to: o_proj/down's residual epilogue) out[r], then sets its counter back to zero for
 * the next launch. One launch, so a decode step keeps its launch count.
 *
 * Float weights (f32/f16/bf16): work-item i reads x[c] for c = chunk start + i + 64 k once and multiplies it into
 * all 8 rows' accumulators (several rows sharing x), then one local tree per row. Grid: ceil(rows / 8) * splits
 * groups of 64; group g: row block g / splits, split g % splits. chunk is a multiple of 256; the last split may be
 * short (cols need not be a multiple of anything). q8/q4 weights split by lanes instead (below). */
#pragma OPENCL FP_CONTRACT OFF /* products added with explicit fma only (tuned/gemv_sg.cl says why) */
#include "xpi_cl.h"
#include "xpi_quant.h"
#include "xpi_quant_stage.h" /* xpi_div_rn: the quantization of xpi_quant_act */

#define XPI_SKWG 64
#define XPI_SKR 8               /* rows a work-group computes (XPU_SPLITK_ROWS) */

static inline float xpi_sk_f32(const global void *w, ulong i) { return ((const global float *)w)[i]; }
static inline float xpi_sk_f16(const global void *w, ulong i) { return vload_half(i, (const global half *)w); }
static inline float xpi_sk_bf16(const global void *w, ulong i) {
  return xpi_bf16_to_f32(((const global ushort *)w)[i]);
}

/* The partials of rows [r0, r0 + nr) for this split are in part[]: counts the group in and, in the last group of
 * the row block, merges them in split order into out (+ bias; + out with accumulate). */
static void xpi_sk_merge(global float *out, const global void *bias, int bdt, int has_bias, int r0, int nr,
                         int splits, int accumulate, global float *part, global int *cnt, local int *last) {
  const int lid = get_local_id(0);
  /* the group's partial writes, then one device-scope acq_rel count (as xpi_sdpa: its release side publishes
   * them, its acquire side in the last group orders the reads after the barrier below) */
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  global atomic_int *ctr = (global atomic_int *)cnt + r0 / XPI_SKR;
  if (lid == 0) *last = atomic_fetch_add_explicit(ctr, 1, memory_order_acq_rel, memory_scope_device) == splits - 1;
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  if (!*last) return;
  if (lid < nr) {
    const int r = r0 + lid;
    float s = 0.0f;
    for (int sp = 0; sp < splits; sp++) s += part[(ulong)r * splits + sp];
    const float v = s + (has_bias ? xpi_load(bias, bdt, r) : 0.0f);
    out[r] = accumulate ? out[r] + v : v;
  }
  if (lid == 0) atomic_store_explicit(ctr, 0, memory_order_relaxed, memory_scope_device); /* for the next launch */
}

#define XPI_GEMV_SPLITK(T)                                                                                   \
  __attribute__((reqd_work_group_size(XPI_SKWG, 1, 1)))                                                    \
  kernel void xpi_gemv_splitk_##T(global float *out, const global float *in, const global void *w,          \
                                  const global void *bias, int bdt, int has_bias, int rows, int cols,       \
                                  int chunk, int splits, int accumulate, global float *part,                \
                                  global int *cnt) {                                                        \
    local float red[XPI_SKR][XPI_SKWG];                                                                     \
    local int last; /* at kernel scope, as OpenCL C 1.2 wants local variables */                           \
    const int lid = get_local_id(0), g = get_group_id(0), sp = g % splits, r0 = g / splits * XPI_SKR;       \
    const int nr = min(XPI_SKR, rows - r0), c0 = sp * chunk, c1 = min(cols, c0 + chunk);                   \
    float acc[XPI_SKR];                                                                                     \
    for (int j = 0; j < XPI_SKR; j++) acc[j] = 0.0f;                                                        \
    for (int c = c0 + lid; c < c1; c += XPI_SKWG) {                                                         \
      const float x = in[c];                                                                                \
      for (int j = 0; j < XPI_SKR; j++) /* rows past the matrix re-read its last row, never stored */       \
        acc[j] = fma(x, xpi_sk_##T(w, (ulong)(r0 + min(j, nr - 1)) * cols + c), acc[j]);                    \
    }                                                                                                       \
    for (int j = 0; j < XPI_SKR; j++) red[j][lid] = acc[j];                                                 \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                           \
    for (int s = XPI_SKWG / 2; s > 0; s >>= 1) {                                                            \
      if (lid < s)                                                                                          \
        for (int j = 0; j < XPI_SKR; j++) red[j][lid] += red[j][lid + s];                                   \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                         \
    }                                                                                                       \
    if (lid < nr) part[(ulong)(r0 + lid) * splits + sp] = red[lid][0];                                      \
    xpi_sk_merge(out, bias, bdt, has_bias, r0, nr, splits, accumulate, part, cnt, &last);                          \
  }

XPI_GEMV_SPLITK(f32)
XPI_GEMV_SPLITK(f16)
XPI_GEMV_SPLITK(bf16)

/* q8/q4: the split is by lanes, not by contiguous chunks, so that the sum is the unsplit GEMV's bit for bit
 * (xpi_gemv_q8/q4 and the tuned xpi_gemv_sg_q8/q4, which give the same bits, and the fused forms): there,
 * work-item l of 64 sums blocks l, l + 64, ... in order and a 64-wide tree (xpi_wg_sum: red[l] += red[l + s],
 * s = 32 .. 1) adds the lanes. After its steps s = 32 .. S, red[g] (g < S) holds the lanes l = g (mod S) combined
 * in the tree's own order; so split g of S (a power of two, 2 .. 16) computes lanes g, g + S, ... of S rows (64 / S
 * lanes a row, a tree of 64 / S over them is those steps), writes red[g] per row, and the merge finishes the tree
 * (steps S / 2 .. 1) over the S partials. Each group quantizes the blocks its lanes read (b = g mod S) into local
 * memory as xpi_quant_act does (the same quants and scales). Grid: ceil(rows / S) * S groups of 64; group q: row
 * block q / S (rows S (q / S) ..), split q % S; cnt[row block]. cols <= XPI_QMAXC. */
#define XPI_GEMV_SPLITK_Q(SUFFIX, BS, WT)                                                                    \
  __attribute__((reqd_work_group_size(XPI_SKWG, 1, 1)))                                                    \
  kernel void xpi_gemv_splitk_##SUFFIX(global float *out, const global float *in, const global void *w,     \
                                       const global ushort *d, const global void *bias, int bdt,            \
                                       int has_bias, int rows, int cols, int splits, int accumulate,        \
                                       global float *part, global int *cnt) {                               \
    local char xq[XPI_QMAXC / 2];                                                                           \
    local float dxs[XPI_QMAXC / 2 / XPI_QK];                                                                \
    local float red[XPI_SKWG];                                                                              \
    local int last;                                                                                         \
    const int S = splits, L = XPI_SKWG / S, lid = get_local_id(0), g = get_group_id(0) % S;                 \
    const int r0 = get_group_id(0) / S * S, nr = min(S, rows - r0);                                         \
    const int nb = (cols + XPI_QK - 1) / XPI_QK, nbg = (nb - g + S - 1) / S; /* blocks b = g + S k */       \
    for (int k = lid; k < nbg; k += XPI_SKWG) { /* xpi_quant_act of those blocks, at k */                  \
      const int b = g + S * k, wd = min(XPI_QK, cols - b * XPI_QK);                                         \
      const global float *x = in + b * XPI_QK;                                                              \
      float amax = 0.0f;                                                                                    \
      for (int j = 0; j < wd; j++) amax = fmax(amax, fabs(x[j]));                                           \
      const float s = xpi_act_prescale(amax), id = xpi_act_inv(amax, s);                                    \
      for (int j = 0; j < XPI_QK; j++) xq[k * XPI_QK + j] = j < wd ? convert_char_sat_rte(x[j] * s * id) : (char)0; \
      dxs[k] = xpi_div_rn(amax, 127.0f);                                                                    \
    }                                                                                                       \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                           \
    const int j = lid / L, i = lid % L, r = r0 + min(j, nr - 1), l = g + S * i; /* row j, lane l */        \
    const global WT *wr = (const global WT *)w + (ulong)r * nb * (BS);                                     \
    const global half *dr = (const global half *)d + (ulong)r * nb;                                        \
    float acc = 0.0f;                                                                                       \
    for (int b = l; b < nb; b += XPI_SKWG) /* the unsplit lane's blocks and order; local index b / S */     \
      acc = fma(vload_half(b, dr) * dxs[b / S], (float)xpi_qdotl_##SUFFIX(wr + b * (BS), xq + b / S * XPI_QK), acc); \
    red[lid] = acc;                                                                                         \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                           \
    for (int s = L / 2; s > 0; s >>= 1) { /* the tree's steps 32 .. S within row j's lanes */              \
      if (i < s) red[lid] += red[lid + s];                                                                  \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                         \
    }                                                                                                       \
    if (i == 0 && j < nr) part[(ulong)r * S + g] = red[lid];                                                \
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);                                                    \
    global atomic_int *ctr = (global atomic_int *)cnt + r0 / S;                                             \
    if (lid == 0) last = atomic_fetch_add_explicit(ctr, 1, memory_order_acq_rel, memory_scope_device) == S - 1; \
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);                                                    \
    if (!last) return;                                                                                      \
    if (lid < nr) { /* the tree's steps S / 2 .. 1 over the S partials of row r0 + lid */                   \
      float v[16];                                                                                          \
      for (int t = 0; t < S; t++) v[t] = part[(ulong)(r0 + lid) * S + t];                                   \
      for (int s = S / 2; s > 0; s >>= 1)                                                                   \
        for (int t = 0; t < s; t++) v[t] += v[t + s];                                                       \
      const float y = v[0] + (has_bias ? xpi_load(bias, bdt, r0 + lid) : 0.0f);                            \
      out[r0 + lid] = accumulate ? out[r0 + lid] + y : y;                                                   \
    }                                                                                                       \
    if (lid == 0) atomic_store_explicit(ctr, 0, memory_order_relaxed, memory_scope_device);                 \
  }

XPI_GEMV_SPLITK_Q(q8, XPI_QK, char)
XPI_GEMV_SPLITK_Q(q4, XPI_QK / 2, uchar)
