/* Intel-tuned GEMV and RMSNorm: sub-groups of 16 (cl_intel_subgroups, cl_intel_required_subgroup_size),
 * weights and activations fetched with sub-group block reads, lane sums added in a fixed shuffle-xor tree.
 * Selected at run time when the device reports sub-group size 16 and this module builds.
 * Every product added into a sum is an explicit fma and nothing else may be contracted (FP_CONTRACT OFF): a
 * contracted a * b + c reaches the driver as SPIR-V `mad`, fused or not as each compilation chooses, so the
 * plain and fused forms would give the same bits only where the driver happened to choose alike. */
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#pragma OPENCL FP_CONTRACT OFF
#include "xpi_cl.h"

#define XPI_SG 16
#define XPI_ROWS_PER_WG 4 /* sub-groups per work-group */
#define XPI_GEMV_RPS 2    /* rows per sub-group of xpi_gemv_sg_* and xpi_gemv3_sg_* (XPU_GEMV_SG_RPS) */

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


/* The sum of squares of a row in the order of portable/norm.cl's xpi_rmsnorm (and the q8/q4 staging,
 * xpi_q_stage), which is the CPU's: work-item i of 64 sums x[i + 64 k] in k order, then the 64 partials go
 * through the halving tree (i += i + 32, then i + 16, 8, 4, 2, 1). One sub-group of 16 plays the 64 work-items:
 * lane l keeps the partials of i = l, l + 16, l + 32, l + 48 (s0..s3, in registers), the tree's first two levels
 * are lane-local (s0 + s2, s1 + s3, their sum), and the last four are xor shuffles (xpi_sg_sum: lanes l and l ^ m
 * add the same two values, so every lane ends with the tree's result; the GEMVs sum their lanes with it too). Why the order matters: the q8/q4 path quantizes the
 * normalised row to int8, and one ulp of it can move a quant (tests/xpu_intel/test_xpu_intel_q_bits.c). */
static inline float xpi_sg_sum(float b) {
  b += intel_sub_group_shuffle_xor(b, 8);
  b += intel_sub_group_shuffle_xor(b, 4);
  b += intel_sub_group_shuffle_xor(b, 2);
  b += intel_sub_group_shuffle_xor(b, 1);
  return b;
}
static inline float xpi_sumsq_tree_sg(float s0, float s1, float s2, float s3) {
  return xpi_sg_sum((s0 + s2) + (s1 + s3));
}

/* rsqrt(mean(x^2) + eps) of the row as xpi_rmsnorm_sg computes it (the portable order, above), or 1 without a
 * norm (uniform branch). */
static inline float xpi_norm_inv_sg(const global float *x, int cols, int has_norm, float eps) {
  if (!has_norm) return 1.0f;
  float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  for (int j = get_sub_group_local_id(); j < cols; j += 4 * XPI_SG) {
    float v = x[j];
    s0 = fma(v, v, s0);
    if (j + XPI_SG < cols) v = x[j + XPI_SG], s1 = fma(v, v, s1);
    if (j + 2 * XPI_SG < cols) v = x[j + 2 * XPI_SG], s2 = fma(v, v, s2);
    if (j + 3 * XPI_SG < cols) v = x[j + 3 * XPI_SG], s3 = fma(v, v, s3);
  }
  return xpi_rms_inv(xpi_sumsq_tree_sg(s0, s1, s2, s3), cols, eps);
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

/* (normalised) in . A and in . B for two weight rows A, B (byte pointers) in one pass over x: each x block (and
 * norm weight block) is read once for both rows; each row keeps its own float8 accumulator, summed in one
 * order for every GEMV of this file (same 128-column steps, lanes and final reduce), so the plain, fused and
 * paired forms give the same bits for a row (fma per term, then the lane's 8 partials in order, then xpi_sg_sum).
 * The k loop is unrolled by 2 (the order is unchanged). */
#define XPI_DOT2_SG(T, ESZ)                                                                               \
  static inline float2 xpi_dot2_sg_##T(const global float *x, const global uchar *wa,                     \
                                       const global uchar *wb, int cols, int has_norm, float inv,         \
                                       const global void *nw, int nwdt) {                                 \
    float8 a = 0.0f, b = 0.0f;                                                                            \
    __attribute__((opencl_unroll_hint(2)))                                                                \
    for (int c0 = 0; c0 < cols; c0 += 8 * XPI_SG) {                                                       \
      float8 h = xpi_block_h8(x, c0, has_norm, inv, nw, nwdt);                                            \
      a = fma(h, xpi_block_w8_##T(wa + (ulong)c0 * ESZ), a);                                              \
      b = fma(h, xpi_block_w8_##T(wb + (ulong)c0 * ESZ), b);                                              \
    }                                                                                                     \
    return (float2)(xpi_sg_sum(a.s0 + a.s1 + a.s2 + a.s3 + a.s4 + a.s5 + a.s6 + a.s7),                    \
                    xpi_sg_sum(b.s0 + b.s1 + b.s2 + b.s3 + b.s4 + b.s5 + b.s6 + b.s7));                   \
  }

XPI_DOT2_SG(bf16, 2)
XPI_DOT2_SG(f16, 2)
XPI_DOT2_SG(f32, 4)

/* out[t, r] = in[t, :] . W[r, :] (+ bias). XPI_GEMV_RPS rows per sub-group: each x block is read once per
 * 128-column step and multiplied into every row's accumulator, so x traffic and block-read count per row halve.
 * Each row keeps its own float8 accumulator summed in the single-row order (same column steps, same lanes,
 * same final reduce), so the output is bit for bit the one-row-per-sub-group result; the k loop is unrolled by
 * 2 (same order: one accumulator per row). The last sub-group's missing row (odd rows) recomputes its first row
 * and does not store it, which keeps control flow uniform. Grid: local 64 (4 sub-groups), groups
 * (ceil(rows / (4 * XPI_GEMV_RPS)), n). Block reads need 16-byte aligned rows: the host picks this kernel only
 * when cols % 128 == 0. */
#define XPI_GEMV_SG(T, ESZ)                                                                                 \
  __attribute__((intel_reqd_sub_group_size(XPI_SG)))                                                      \
  __attribute__((reqd_work_group_size(XPI_SG * XPI_ROWS_PER_WG, 1, 1)))                                   \
  kernel void xpi_gemv_sg_##T(global float *out, const global float *in, const global void *w,             \
                              const global void *bias, int bdt, int has_bias, int rows, int cols) {        \
    int r0 = (get_group_id(0) * XPI_ROWS_PER_WG + get_sub_group_id()) * XPI_GEMV_RPS, t = get_group_id(1);  \
    if (r0 >= rows) return; /* uniform over the sub-group; no work-group barrier follows */               \
    int r1 = r0 + 1 < rows ? r0 + 1 : r0;                                                                  \
    const global uchar *wb = (const global uchar *)w;                                                      \
    float2 s = xpi_dot2_sg_##T(in + (ulong)t * cols, wb + (ulong)r0 * cols * ESZ,                          \
                               wb + (ulong)r1 * cols * ESZ, cols, 0, 1.0f, bias, 0);                       \
    if (get_sub_group_local_id() == 0) {                                                                   \
      global float *o = out + (ulong)t * rows;                                                             \
      o[r0] = s.x + (has_bias ? xpi_load(bias, bdt, r0) : 0.0f);                                           \
      if (r1 != r0) o[r1] = s.y + (has_bias ? xpi_load(bias, bdt, r1) : 0.0f);                             \
    }                                                                                                      \
  }

XPI_GEMV_SG(bf16, 2)
XPI_GEMV_SG(f16, 2)
XPI_GEMV_SG(f32, 4)

/* Row g of the concatenation W0 | W1 | W2 (r0, r1, r2 rows): its matrix m and its row there. */
static inline int xpi_gemv3_row(int g, int r0, int r1, int *m) {
  *m = g >= r0 + r1 ? 2 : g >= r0 ? 1 : 0;
  return *m == 2 ? g - r0 - r1 : *m == 1 ? g - r0 : g;
}

/* Up to three projections of one (normalised) input row in one launch (q/k/v; with accumulate, o[r] += as the
 * residual add of o_proj/down), n = 1: sub-group s of the grid computes rows 2s and 2s + 1 of W0 | W1 | W2 (a
 * pair may straddle two matrices; an odd last row is recomputed, not stored, as in xpi_gemv_sg). Grid:
 * ceil((r0 + r1 + r2) / 8) groups of 64. */
#define XPI_GEMV3_SG(T, ESZ)                                                                              \
  __attribute__((intel_reqd_sub_group_size(XPI_SG)))                                                      \
  __attribute__((reqd_work_group_size(XPI_SG * XPI_ROWS_PER_WG, 1, 1)))                                   \
  kernel void xpi_gemv3_sg_##T(global float *o0, global float *o1, global float *o2,                       \
                               const global float *in, const global void *w0, const global void *w1,       \
                               const global void *w2, const global void *b0, const global void *b1,        \
                               const global void *b2, int bdt, int has_bias, int r0, int r1, int r2,       \
                               int cols, const global void *nw, int nwdt, int has_norm, float eps,         \
                               int accumulate) {                                                          \
    int total = r0 + r1 + r2, g = (get_group_id(0) * XPI_ROWS_PER_WG + get_sub_group_id()) * XPI_GEMV_RPS; \
    if (g >= total) return; /* uniform over the sub-group; no barrier follows */                          \
    int g2 = g + 1 < total ? g + 1 : g, ma, mb; /* scalars, not arrays: nothing for private memory */      \
    int ra = xpi_gemv3_row(g, r0, r1, &ma), rb = xpi_gemv3_row(g2, r0, r1, &mb);                          \
    const global uchar *wa = (const global uchar *)(ma == 2 ? w2 : ma == 1 ? w1 : w0) + (ulong)ra * cols * ESZ; \
    const global uchar *wb = (const global uchar *)(mb == 2 ? w2 : mb == 1 ? w1 : w0) + (ulong)rb * cols * ESZ; \
    float inv = xpi_norm_inv_sg(in, cols, has_norm, eps);                                                 \
    float2 s = xpi_dot2_sg_##T(in, wa, wb, cols, has_norm, inv, nw, nwdt);                                \
    if (get_sub_group_local_id() == 0) {                                                                  \
      global float *o = ma == 2 ? o2 : ma == 1 ? o1 : o0;                                                 \
      const global void *b = ma == 2 ? b2 : ma == 1 ? b1 : b0;                                            \
      float v = s.x + (has_bias ? xpi_load(b, bdt, ra) : 0.0f);                                           \
      o[ra] = accumulate ? o[ra] + v : v;                                                                 \
      if (g2 != g) {                                                                                      \
        o = mb == 2 ? o2 : mb == 1 ? o1 : o0;                                                             \
        b = mb == 2 ? b2 : mb == 1 ? b1 : b0;                                                             \
        v = s.y + (has_bias ? xpi_load(b, bdt, rb) : 0.0f);                                               \
        o[rb] = accumulate ? o[rb] + v : v;                                                               \
      }                                                                                                   \
    }                                                                                                     \
  }

/* out[r] = act(h . G[r]) * (h . U[r]) (act as xpi_glu), h the (normalised) input, n = 1: gate, up and the
 * activation in one launch, G[r] and U[r] in one pass over h. Grid: ceil(rows / 4) groups of 64. */
#define XPI_GEMV_GLU_SG(T, ESZ)                                                                           \
  __attribute__((intel_reqd_sub_group_size(XPI_SG)))                                                      \
  __attribute__((reqd_work_group_size(XPI_SG * XPI_ROWS_PER_WG, 1, 1)))                                   \
  kernel void xpi_gemv_glu_sg_##T(global float *out, const global float *in, const global void *wg,       \
                                  const global void *wu, int rows, int cols, int act,                     \
                                  const global void *nw, int nwdt, int has_norm, float eps) {             \
    int r = get_group_id(0) * XPI_ROWS_PER_WG + get_sub_group_id();                                       \
    if (r >= rows) return;                                                                                \
    float inv = xpi_norm_inv_sg(in, cols, has_norm, eps);                                                 \
    ulong off = (ulong)r * cols * ESZ;                                                                    \
    float2 gu = xpi_dot2_sg_##T(in, (const global uchar *)wg + off, (const global uchar *)wu + off, cols, \
                                has_norm, inv, nw, nwdt);                                                 \
    if (get_sub_group_local_id() == 0) out[r] = xpi_glu(gu.x, gu.y, act);                                \
  }

XPI_GEMV3_SG(bf16, 2)
XPI_GEMV3_SG(f16, 2)
XPI_GEMV3_SG(f32, 4)
XPI_GEMV_GLU_SG(bf16, 2)
XPI_GEMV_GLU_SG(f16, 2)
XPI_GEMV_GLU_SG(f32, 4)

/* x[j] (+= residual[j], written back), squared into *ss. */
static inline void xpi_rms_term_sg(global float *x, const global float *residual, int has_res, int j, float *ss) {
  float v = x[j];
  if (has_res) {
    v += residual[j];
    x[j] = v;
  }
  *ss = fma(v, v, *ss);
}

/* rmsnorm_forward as in portable/norm.cl, one sub-group per row: no local memory, no barriers; the sum of squares
 * in the portable kernel's order (xpi_sumsq_tree_sg), so both tiers give the same bits. Grid: n groups of 16. */
__attribute__((intel_reqd_sub_group_size(XPI_SG)))
__attribute__((reqd_work_group_size(XPI_SG, 1, 1)))
kernel void xpi_rmsnorm_sg(global float *out, global float *x, const global float *residual, int has_res,
                           const global void *w, int wdt, int d, float eps) {
  int lane = get_sub_group_local_id();
  ulong base = (ulong)get_group_id(0) * d;
  x += base;
  residual += base;
  float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  for (int j = lane; j < d; j += 4 * XPI_SG) {
    xpi_rms_term_sg(x, residual, has_res, j, &s0);
    if (j + XPI_SG < d) xpi_rms_term_sg(x, residual, has_res, j + XPI_SG, &s1);
    if (j + 2 * XPI_SG < d) xpi_rms_term_sg(x, residual, has_res, j + 2 * XPI_SG, &s2);
    if (j + 3 * XPI_SG < d) xpi_rms_term_sg(x, residual, has_res, j + 3 * XPI_SG, &s3);
  }
  float inv = xpi_rms_inv(xpi_sumsq_tree_sg(s0, s1, s2, s3), d, eps);
  for (int j = lane; j < d; j += XPI_SG) out[base + j] = x[j] * inv * xpi_load(w, wdt, j);
}
