/* The ops of ops.h as kernel launches (shapes as in ops.h). Arguments are checked on the host; values that
 * live in device memory (ids, positions) are bounds-checked by the kernels themselves. */
#include "core/status.h"
#include "ops/xpu/xpu_backend.h"
#include "ops/xpu/xpu_internal.h"

#define XPU_WG 64        /* work-group of the portable row kernels */
#define XPU_MAX_HD 256   /* attention kernels keep a head in local memory / registers */
#define XPU_GEMV_SG_RPS 2 /* rows per sub-group of xpi_gemv_sg_* / xpi_gemv3_sg_* (XPI_GEMV_RPS) */
#define XPU_SDPA_GC 8      /* query heads of a KV head one xpi_sdpa work-group serves (XPI_GC) */
#define XPU_SDPA_SPLITS 16 /* most key splits of a decode step's xpi_sdpa */

static uint32_t ceil_div(uint64_t a, uint64_t b) { return (uint32_t)((a + b - 1) / b); }

static int tuned_ok(xpi_backend *be, xpu_kid kid) {
  const xpu_device *d = ((xpu_impl *)be->impl)->d;
  return be->use_kernels && d->k[kid] != NULL;
}

static xpi_status check_float_weight(xpi_backend *be, const xpi_weight *w, const char *op) {
  if (!w || !w->data) return xpi_err(XPI_ERR_INTERNAL, "%s: %s: missing weight", be->device, op);
  if (w->dtype != XPI_DT_F32 && w->dtype != XPI_DT_F16 && w->dtype != XPI_DT_BF16)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: %s: %s weights are not supported on XPU", be->device, op,
                   xpi_dtype_name(w->dtype));
  return XPI_OK;
}

/* One-dimensional launch over count elements in groups of 256 (count < 2^32 * 256). */
static xpi_status launch_1d(xpi_backend *be, xpu_kid kid, uint64_t count, const xpu_arg *args, int nargs) {
  if (count == 0) return XPI_OK;
  if (count / 256 >= UINT32_MAX) return xpi_err(XPI_ERR_UNSUPPORTED, "%s: %llu elements in one op", be->device,
                                                  (unsigned long long)count);
  return xpu_launch(be, kid, ceil_div(count, 256), 1, 1, 256, 1, 1, args, nargs);
}

xpi_status xpu_embed(xpi_backend *be, float *out, const xpi_weight *table, const int32_t *ids, int32_t n) {
  XPI_TRY(check_float_weight(be, table, "embed"));
  if (n <= 0) return XPI_OK;
  if (table->rows > INT32_MAX || table->cols > INT32_MAX)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: embedding table too large", be->device);
  int dt = (int)table->dtype, rows = (int)table->rows, d = (int)table->cols;
  const void *tab = table->data;
  xpu_arg a[] = {XA(out), XA(tab), XA(dt), XA(ids), XA(rows), XA(d)};
  return xpu_launch(be, XK_EMBED, ceil_div((uint64_t)d, XPU_WG), (uint32_t)n, 1, XPU_WG, 1, 1, a, 6);
}

xpi_status xpu_rmsnorm(xpi_backend *be, float *out, float *x, const float *residual, const xpi_weight *w, int32_t n,
                       int32_t d, float eps) {
  XPI_TRY(check_float_weight(be, w, "rmsnorm"));
  if (w->cols != d)
    return xpi_err(XPI_ERR_INTERNAL, "%s: rmsnorm: weight has %lld elements, rows have %d", be->device,
                   (long long)w->cols, d);
  if (n <= 0) return XPI_OK;
  int has_res = residual != NULL, wdt = (int)w->dtype;
  const float *res = residual ? residual : x; /* never a NULL kernel argument */
  const void *wd = w->data;
  xpu_arg a[] = {XA(out), XA(x), XA(res), XA(has_res), XA(wd), XA(wdt), XA(d), XA(eps)};
  if (tuned_ok(be, XK_RMSNORM_SG)) return xpu_launch(be, XK_RMSNORM_SG, (uint32_t)n, 1, 1, 16, 1, 1, a, 8);
  return xpu_launch(be, XK_RMSNORM, (uint32_t)n, 1, 1, XPU_WG, 1, 1, a, 8);
}

xpi_status xpu_matmul(xpi_backend *be, float *out, const float *in, const xpi_weight *w, const xpi_weight *bias,
                      int32_t n) {
  const int quant = w && w->data && (w->dtype == XPI_DT_Q8 || w->dtype == XPI_DT_Q4);
  if (!quant) XPI_TRY(check_float_weight(be, w, "matmul"));
  if (bias) {
    XPI_TRY(check_float_weight(be, bias, "matmul bias"));
    if (bias->cols * bias->rows != w->rows)
      return xpi_err(XPI_ERR_INTERNAL, "%s: matmul: bias has %lld elements, weight %lld rows", be->device,
                     (long long)(bias->cols * bias->rows), (long long)w->rows);
  }
  if (w->rows > INT32_MAX || w->cols > INT32_MAX)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: matmul: weight [%lld, %lld] too large", be->device, (long long)w->rows,
                   (long long)w->cols);
  if (n <= 0) return XPI_OK;
  if (quant) return xpu_matmul_q(be, out, in, w, bias, n);
  int rows = (int)w->rows, cols = (int)w->cols, has_bias = bias != NULL;
  int bdt = bias ? (int)bias->dtype : 0;
  const void *wd = w->data, *bd = bias ? bias->data : w->data;
  xpu_arg a[] = {XA(out), XA(in), XA(wd), XA(bd), XA(bdt), XA(has_bias), XA(rows), XA(cols), XA(n)};
  int di = w->dtype == XPI_DT_F32 ? 0 : w->dtype == XPI_DT_F16 ? 1 : 2;
  if (n == 1) { /* decode: GEMV (split-K where the rows are too few to fill the device: xpu_splitk.c) */
    int splits = xpu_splitk_splits(be, w->dtype, rows, cols);
    if (splits > 1) return xpu_gemv_splitk(be, out, in, w, bias, splits, 0);
    static const xpu_kid sg[3] = {XK_GEMV_SG_F32, XK_GEMV_SG_F16, XK_GEMV_SG_BF16};
    static const xpu_kid pk[3] = {XK_GEMV_F32, XK_GEMV_F16, XK_GEMV_BF16};
    if (cols % 128 == 0 && tuned_ok(be, sg[di])) /* block reads: 128-element, 16-byte aligned steps */
      return xpu_launch(be, sg[di], ceil_div((uint64_t)rows, 4 * XPU_GEMV_SG_RPS), 1, 1, 64, 1, 1, a, 8);
    return xpu_launch(be, pk[di], (uint32_t)rows, 1, 1, XPU_WG, 1, 1, a, 8);
  }
  if (w->dtype == XPI_DT_BF16 && cols % 16 == 0 && tuned_ok(be, XK_GEMM_DPAS_BF16)) {
    uint32_t sg = (uint32_t)im_of(be)->d->dpas; /* one sub-group per group, one weight row per lane, 8 tokens */
    return xpu_launch(be, XK_GEMM_DPAS_BF16, ceil_div((uint64_t)rows, sg), ceil_div((uint64_t)n, 8), 1, sg, 1, 1, a, 9);
  }
  static const xpu_kid gk[3] = {XK_GEMM_F32, XK_GEMM_F16, XK_GEMM_BF16};
  return xpu_launch(be, gk[di], ceil_div((uint64_t)rows, 16), ceil_div((uint64_t)n, 16), 1, 16, 16, 1, a, 9);
}

xpi_status xpu_rope(xpi_backend *be, float *q, float *k, const int32_t *pos, int32_t n, int32_t hq, int32_t hk,
                    const xpi_rope_params *rp, const float *inv_freq, const xpi_weight *q_norm,
                    const xpi_weight *k_norm, float eps) {
  int hd = rp->head_dim;
  if (hd <= 0 || hd % 2) return xpi_err(XPI_ERR_UNSUPPORTED, "%s: rope: head_dim %d must be even", be->device, hd);
  if (q_norm) XPI_TRY(check_float_weight(be, q_norm, "q_norm"));
  if (k_norm) XPI_TRY(check_float_weight(be, k_norm, "k_norm"));
  if ((q_norm && q_norm->cols != hd) || (k_norm && k_norm->cols != hd))
    return xpi_err(XPI_ERR_INTERNAL, "%s: rope: q/k norm weight size differs from head_dim %d", be->device, hd);
  if (n <= 0) return XPI_OK;
  if ((int64_t)n * (hq + hk) > UINT32_MAX) return xpi_err(XPI_ERR_UNSUPPORTED, "%s: rope: too many heads", be->device);
  int has_qn = q_norm != NULL, has_kn = k_norm != NULL;
  int qdt = q_norm ? (int)q_norm->dtype : 0, kdt = k_norm ? (int)k_norm->dtype : 0;
  const void *qn = q_norm ? q_norm->data : (const void *)inv_freq, *kn = k_norm ? k_norm->data : (const void *)inv_freq;
  /* long_sel: longrope's per-token choice of the second inv_freq half (pos stands in when there is none) */
  const int32_t *sel = rp->long_sel ? rp->long_sel : pos;
  int has_sel = rp->long_sel != NULL;
  xpu_arg a[] = {XA(q), XA(k), XA(pos), XA(hq), XA(hk), XA(hd), XA(inv_freq), XA(qn), XA(qdt), XA(has_qn),
                 XA(kn), XA(kdt), XA(has_kn), XA(eps), XA(sel), XA(has_sel)};
  return xpu_launch(be, XK_ROPE, (uint32_t)(n * (hq + hk)), 1, 1, XPU_WG, 1, 1, a, 16);
}

xpi_status xpu_attention(xpi_backend *be, float *out, const float *q, const float *k, const float *v, xpi_kv *kv,
                         int32_t layer, const xpi_kv_map *map, int32_t n, int32_t hq, int32_t hk, int32_t hd,
                         const xpi_attn_params *ap) {
  if (!kv || layer < 0 || layer >= kv->n_layers || hk != kv->hk || hd != kv->hd)
    return xpi_err(XPI_ERR_INTERNAL, "%s: attention: layer %d / shape (hk %d, hd %d) does not match the KV cache",
                   be->device, layer, hk, hd);
  if (hk <= 0 || hq % hk)
    return xpi_err(XPI_ERR_INTERNAL, "%s: attention: %d query heads are not a multiple of %d KV heads", be->device,
                   hq, hk);
  if (hd > XPU_MAX_HD)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: attention: head_dim %d exceeds the XPU kernels' %d", be->device, hd,
                   XPU_MAX_HD);
  if (map->max_blocks <= 0 || (int64_t)map->max_blocks << kv->block_shift > INT32_MAX)
    return xpi_err(XPI_ERR_INTERNAL, "%s: attention: %d blocks a sequence", be->device, map->max_blocks);
  if (ap->window < 0 || !(ap->softcap >= 0))
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "%s: attention: window %d / softcap %g must be >= 0", be->device,
                   ap->window, (double)ap->softcap);
  if (n <= 0) return XPI_OK;
  const float scale = ap->scale, softcap = ap->softcap;
  const int window = ap->window;
  const xpi_attn_impl impl = ap->impl;
  size_t esz = xpi_dtype_size(kv->dtype);
  size_t layer_off = (size_t)layer * (size_t)kv->n_blocks * (size_t)kv->block_size * (size_t)hk * (size_t)hd * esz;
  void *kc = (unsigned char *)kv->k + layer_off, *vc = (unsigned char *)kv->v + layer_off;
  int kdt = (int)kv->dtype, mb = map->max_blocks, bshift = kv->block_shift, nb = kv->n_blocks;
  const int32_t *pos = map->pos, *seq = map->seq, *tables = map->tables;
  xpu_arg st[] = {XA(kc), XA(vc), XA(kdt), XA(k), XA(v), XA(pos), XA(seq), XA(tables), XA(mb), XA(bshift), XA(nb),
                  XA(hk), XA(hd)};
  /* a decode step's sdpa stores its token's K/V itself (one launch less; see xpi_sdpa) */
  int fused_store = n == 1 && impl != XPI_ATTN_EAGER && impl != XPI_ATTN_FLASH;
  if (!fused_store)
    XPI_TRY(xpu_launch(be, XK_KV_STORE, ceil_div((uint64_t)hd, 64), (uint32_t)hk, (uint32_t)n, 64, 1, 1, st, 13));
  uint32_t rows = (uint32_t)n * (uint32_t)hq;
  if (impl == XPI_ATTN_EAGER) {
    void *scores = NULL;
    XPI_TRY(xpu_scratch(be, (size_t)rows * ((size_t)mb << bshift) * sizeof(float), &scores));
    xpu_arg a[] = {XA(out), XA(q), XA(kc), XA(vc), XA(kdt), XA(pos), XA(seq), XA(tables), XA(mb), XA(bshift), XA(hq),
                   XA(hk), XA(hd), XA(scale), XA(window), XA(softcap), XA(scores)};
    return xpu_launch(be, XK_EAGER, rows, 1, 1, 64, 1, 1, a, 17);
  }
  if (impl == XPI_ATTN_FLASH) {
    xpu_arg a[] = {XA(out), XA(q), XA(kc), XA(vc), XA(kdt), XA(pos), XA(seq), XA(tables), XA(mb), XA(bshift), XA(n),
                   XA(hq), XA(hk), XA(hd), XA(scale), XA(window), XA(softcap)};
    return xpu_launch(be, XK_FLASH, ceil_div(rows / (uint32_t)hk, 4), (uint32_t)hk, 1, 64, 1, 1, a, 17);
  }
  /* split-K (xpi_sdpa): a work-group per (token, KV head, chunk of 8 query heads, key split). A decode step
   * splits the keys so that a few KV heads still fill the device: one split per 256 positions the sequences can
   * hold (the grid is fixed when a step is recorded, so by capacity, not by the current length), at most 16. */
  uint32_t hc = (uint32_t)ceil_div((uint64_t)(hq / hk), XPU_SDPA_GC);
  int splits = 1;
  if (n == 1 && (uint64_t)hk * hc <= XPU_SDPA_COUNTERS) {
    int64_t cap = (int64_t)mb << bshift;
    splits = cap / 256 < 1 ? 1 : cap / 256 > XPU_SDPA_SPLITS ? XPU_SDPA_SPLITS : (int)(cap / 256);
  }
  void *part = im_of(be)->counters; /* unused when splits = 1 */
  if (splits > 1) XPI_TRY(xpu_partials(be, (size_t)hq * (size_t)splits * (size_t)(hd + 2) * sizeof(float), &part));
  int32_t *cnt = im_of(be)->counters;
  uint64_t groups = (uint64_t)n * (uint64_t)hk * hc * (uint64_t)splits;
  if (groups > UINT32_MAX) return xpi_err(XPI_ERR_UNSUPPORTED, "%s: attention: %d tokens in one launch", be->device, n);
  xpu_arg a[] = {XA(out), XA(q), XA(kc), XA(vc), XA(kdt), XA(pos), XA(seq), XA(tables), XA(mb), XA(bshift), XA(hq),
                 XA(hk), XA(hd), XA(scale), XA(window), XA(softcap), XA(fused_store), XA(k), XA(v), XA(nb),
                 XA(splits), XA(part), XA(cnt)};
  return xpu_launch(be, XK_SDPA, (uint32_t)groups, 1, 1, 64, 1, 1, a, 23);
}

xpi_status xpu_swiglu(xpi_backend *be, float *out, const float *gate, const float *up, int32_t n, int32_t f) {
  if (n <= 0 || f <= 0) return XPI_OK;
  uint64_t count = (uint64_t)n * (uint64_t)f;
  xpu_arg a[] = {XA(out), XA(gate), XA(up), XA(count)};
  return launch_1d(be, XK_SWIGLU, count, a, 4);
}

xpi_status xpu_geglu(xpi_backend *be, float *out, const float *gate, const float *up, int32_t n, int32_t f) {
  if (n <= 0 || f <= 0) return XPI_OK;
  uint64_t count = (uint64_t)n * (uint64_t)f;
  xpu_arg a[] = {XA(out), XA(gate), XA(up), XA(count)};
  return launch_1d(be, XK_GEGLU, count, a, 4);
}

xpi_status xpu_softcap(xpi_backend *be, float *x, int64_t count, float cap) {
  if (!(cap > 0)) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "%s: softcap %g must be > 0", be->device, (double)cap);
  if (count <= 0) return XPI_OK;
  uint64_t c = (uint64_t)count;
  xpu_arg a[] = {XA(x), XA(c), XA(cap)};
  return launch_1d(be, XK_SOFTCAP, c, a, 3);
}

xpi_status xpu_scale(xpi_backend *be, float *x, int64_t count, float s) {
  if (count <= 0) return XPI_OK;
  uint64_t c = (uint64_t)count;
  xpu_arg a[] = {XA(x), XA(c), XA(s)};
  return launch_1d(be, XK_SCALE, c, a, 3);
}

xpi_status xpu_add(xpi_backend *be, float *x, const float *y, int64_t count) {
  if (count <= 0) return XPI_OK;
  uint64_t c = (uint64_t)count;
  xpu_arg a[] = {XA(x), XA(y), XA(c)};
  return launch_1d(be, XK_ADD, c, a, 3);
}

xpi_status xpu_argmax(xpi_backend *be, int32_t *out, const float *x, int32_t rows, int32_t cols) {
  if (rows <= 0) return XPI_OK;
  if (cols <= 0) return xpi_err(XPI_ERR_INTERNAL, "%s: argmax over %d columns", be->device, cols);
  /* a work-group per 4096 columns of a row (at most 64; xpi_argmax), while the rows have counters */
  int blocks = rows > XPU_ARGMAX_COUNTERS ? 1 : cols / 4096 < 1 ? 1 : cols / 4096 > 64 ? 64 : cols / 4096;
  void *part = im_of(be)->counters; /* unused when blocks = 1 */
  if (blocks > 1) XPI_TRY(xpu_partials(be, (size_t)rows * (size_t)blocks * 3 * sizeof(float), &part));
  int32_t *cnt = im_of(be)->counters + XPU_SDPA_COUNTERS;
  if ((uint64_t)rows * (uint64_t)blocks > UINT32_MAX)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: argmax over %d rows", be->device, rows);
  xpu_arg a[] = {XA(out), XA(x), XA(cols), XA(blocks), XA(part), XA(cnt)};
  return xpu_launch(be, XK_ARGMAX, (uint32_t)rows * (uint32_t)blocks, 1, 1, 64, 1, 1, a, 6);
}

xpi_status xpu_convert(xpi_backend *be, void *dst, xpi_dtype ddt, const void *src, xpi_dtype sdt, size_t count) {
  int dd = (int)ddt, sd = (int)sdt;
  uint64_t c = count;
  xpu_arg a[] = {XA(dst), XA(dd), XA(src), XA(sd), XA(c)};
  return launch_1d(be, XK_CONVERT, c, a, 5);
}

xpi_status xpu_topk(xpi_backend *be, int32_t *ids, float *vals, float *norm, const float *x, int32_t rows,
                    int32_t cols, int32_t k) {
  if (rows <= 0) return XPI_OK;
  if (k <= 0 || k > cols) return xpi_err(XPI_ERR_INTERNAL, "%s: top-%d of %d values", be->device, k, cols);
  xpu_arg a[] = {XA(ids), XA(vals), XA(norm), XA(x), XA(cols), XA(k)};
  return xpu_launch(be, XK_TOPK, (uint32_t)rows, 1, 1, 64, 1, 1, a, 6);
}

/* ---- fused decode forms: one launch where n = 1 (the decode step), the separate ops otherwise. Each picks the
 * tier xpu_matmul would pick for the same weight (same cols rule), so the fused launch sums as the separate
 * GEMVs do and gives their bits; a float GEMV takes the norm into the launch only where its tier matches the
 * rmsnorm kernel xpu_rmsnorm would use (the sub-group forms with xpi_rmsnorm_sg, the portable ones with
 * xpi_rmsnorm), and has a separate rmsnorm launch elsewhere. The q8/q4 forms always take it (one launch less per
 * norm on the tuned tier): both tiers stage the input row with the same code (kernels/common/xpi_quant_stage.h),
 * whose sum of squares is xpi_rmsnorm's and xpi_rmsnorm_sg's order and whose scale is xpi_rms_inv's correctly
 * rounded one, so the int8 activations are the same bits on either tier and with either norm kernel (
 * tests/xpu_intel/test_xpu_intel_q_bits.c). */

static int gemv_di(const xpi_weight *w) { return w->dtype == XPI_DT_F32 ? 0 : w->dtype == XPI_DT_F16 ? 1 : 2; }

/* 1: the sub-group GEMV forms serve weights like w (as xpu_matmul decides for n = 1). */
static int fused_sg(xpi_backend *be, const xpi_weight *w, xpu_kid fused_sg_kid) {
  static const xpu_kid single_sg[3] = {XK_GEMV_SG_F32, XK_GEMV_SG_F16, XK_GEMV_SG_BF16};
  return w->cols % 128 == 0 && tuned_ok(be, single_sg[gemv_di(w)]) && tuned_ok(be, fused_sg_kid);
}

/* The norm arguments of a fused launch: the norm goes in when its kernel matches (see above), else *in becomes
 * hbuf after a separate rmsnorm. */
typedef struct fused_norm {
  const void *nw;
  int nwdt, has;
  float eps;
} fused_norm;

static xpi_status fused_norm_of(xpi_backend *be, int sg, const xpi_weight *norm, float eps, float *hbuf, int cols,
                                const float **in, fused_norm *fn) { /* sg < 0: always in the launch (q8/q4) */
  fn->nw = *in, fn->nwdt = 0, fn->has = 0, fn->eps = eps; /* never a NULL kernel argument */
  if (!norm) return XPI_OK;
  XPI_TRY(check_float_weight(be, norm, "fused rmsnorm"));
  if (norm->cols != cols)
    return xpi_err(XPI_ERR_INTERNAL, "%s: fused rmsnorm: weight has %lld elements, rows have %d", be->device,
                   (long long)norm->cols, cols);
  if (sg >= 0 && sg != tuned_ok(be, XK_RMSNORM_SG)) { /* the rmsnorm kernel sums differently from this GEMV form */
    XPI_TRY(xpu_rmsnorm(be, hbuf, (float *)*in, NULL, norm, 1, cols, eps)); /* no residual: in is not written */
    *in = hbuf;
    return XPI_OK;
  }
  fn->nw = norm->data, fn->nwdt = (int)norm->dtype, fn->has = 1;
  return XPI_OK;
}

/* The GEMV3 launch over count (1..3) weights of one dtype and cols, biases all or none; accumulate: outs[0] +=. */
static xpi_status gemv3(xpi_backend *be, int count, float *const *outs, const float *in, const xpi_weight *norm,
                        float eps, float *hbuf, const xpi_weight *const *ws, const xpi_weight *const *biases,
                        int accumulate) {
  static const xpu_kid sgk[3] = {XK_GEMV3_SG_F32, XK_GEMV3_SG_F16, XK_GEMV3_SG_BF16};
  static const xpu_kid pk[3] = {XK_GEMV3_F32, XK_GEMV3_F16, XK_GEMV3_BF16};
  int di = gemv_di(ws[0]), sg = fused_sg(be, ws[0], sgk[di]), has_bias = biases && biases[0];
  int cols = (int)ws[0]->cols, bdt = has_bias ? (int)biases[0]->dtype : 0;
  fused_norm fn;
  XPI_TRY(fused_norm_of(be, sg, norm, eps, hbuf, cols, &in, &fn));
  float *o[3];
  const void *w[3], *b[3];
  int r[3] = {0, 0, 0};
  int64_t total = 0;
  for (int j = 0; j < 3; j++) { /* unused slots: no rows, any valid pointer */
    int s = j < count ? j : 0;
    o[j] = outs[s];
    w[j] = ws[s]->data;
    b[j] = has_bias ? biases[s]->data : ws[s]->data;
    r[j] = j < count ? (int)ws[j]->rows : 0;
    total += r[j];
  }
  xpu_arg a[] = {XA(o[0]), XA(o[1]), XA(o[2]), XA(in),     XA(w[0]),   XA(w[1]),   XA(w[2]),
                 XA(b[0]), XA(b[1]), XA(b[2]), XA(bdt),    XA(has_bias), XA(r[0]), XA(r[1]),
                 XA(r[2]), XA(cols), XA(fn.nw), XA(fn.nwdt), XA(fn.has), XA(fn.eps), XA(accumulate)};
  if (sg) return xpu_launch(be, sgk[di], ceil_div((uint64_t)total, 4 * XPU_GEMV_SG_RPS), 1, 1, 64, 1, 1, a, 21);
  return xpu_launch(be, pk[di], (uint32_t)total, 1, 1, XPU_WG, 1, 1, a, 21);
}

/* 1: a weight the fused kernels read (f32/f16/bf16); others (quantized) take the separate xpu_matmul, which
 * checks them. */
static int float_weight(const xpi_weight *w) {
  return w->dtype == XPI_DT_F32 || w->dtype == XPI_DT_F16 || w->dtype == XPI_DT_BF16;
}

/* ---- the fused forms for q8/q4 weights (kernels/portable/matmul_q.cl): the input row is quantized inside
 * every work-group, in local memory of XPU_QMAXC columns at most. The norm goes in where the separate path would
 * use the portable rmsnorm (whose arithmetic the kernels repeat), as fused_norm_of decides for sg = 0. */
#define XPU_QMAXC 16384
#define XPU_QROWS 8 /* rows a work-group computes from one staging of the input (XPI_QROWS) */

/* 1: the quantized fused kernels serve w at n = 1. */
static int q_fusable(const xpi_weight *w) {
  return (w->dtype == XPI_DT_Q8 || w->dtype == XPI_DT_Q4) && w->aux && w->cols <= XPU_QMAXC;
}

static xpi_status gemv3_q(xpi_backend *be, int count, float *const *outs, const float *in, const xpi_weight *norm,
                          float eps, float *hbuf, const xpi_weight *const *ws, const xpi_weight *const *biases,
                          int accumulate) {
  int has_bias = biases && biases[0], cols = (int)ws[0]->cols, bdt = has_bias ? (int)biases[0]->dtype : 0;
  fused_norm fn;
  XPI_TRY(fused_norm_of(be, -1, norm, eps, hbuf, cols, &in, &fn));
  float *o[3];
  const void *w[3], *d[3], *b[3];
  int r[3] = {0, 0, 0};
  int64_t total = 0;
  for (int j = 0; j < 3; j++) { /* unused slots: no rows, any valid pointer */
    int s = j < count ? j : 0;
    o[j] = outs[s], w[j] = ws[s]->data, d[j] = ws[s]->aux;
    b[j] = has_bias ? biases[s]->data : ws[s]->data;
    r[j] = j < count ? (int)ws[j]->rows : 0;
    total += r[j];
  }
  xpu_arg a[] = {XA(o[0]), XA(o[1]), XA(o[2]), XA(in), XA(w[0]), XA(w[1]), XA(w[2]), XA(d[0]), XA(d[1]), XA(d[2]),
                 XA(b[0]), XA(b[1]), XA(b[2]), XA(bdt), XA(has_bias), XA(r[0]), XA(r[1]), XA(r[2]), XA(cols),
                 XA(fn.nw), XA(fn.nwdt), XA(fn.has), XA(fn.eps), XA(accumulate)};
  const int q4 = ws[0]->dtype == XPI_DT_Q4;
  xpu_kid kid = q4 ? XK_GEMV3_Q4 : XK_GEMV3_Q8, sgk = q4 ? XK_GEMV3_SG_Q4 : XK_GEMV3_SG_Q8;
  if (tuned_ok(be, sgk)) kid = sgk; /* block reads, the same grid, arguments and bits */
  return xpu_launch(be, kid, ceil_div((uint64_t)total, XPU_QROWS), 1, 1, XPU_WG, 1, 1, a, 24);
}

/* Checks a fused matmul's weight (and bias) shapes; *fusable = 0 where the weight is not a float one. */
static xpi_status check_fused(xpi_backend *be, const xpi_weight *w, const xpi_weight *b, const char *op, int *fusable) {
  if (!w || !w->data) return xpi_err(XPI_ERR_INTERNAL, "%s: %s: missing weight", be->device, op);
  if (!float_weight(w)) *fusable = 0;
  if (w->rows > INT32_MAX || w->cols > INT32_MAX)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: %s: weight [%lld, %lld] too large", be->device, op, (long long)w->rows,
                   (long long)w->cols);
  if (b) {
    XPI_TRY(check_float_weight(be, b, op));
    if (b->rows * b->cols != w->rows)
      return xpi_err(XPI_ERR_INTERNAL, "%s: %s: bias has %lld elements, weight %lld rows", be->device, op,
                     (long long)(b->rows * b->cols), (long long)w->rows);
  }
  return XPI_OK;
}

/* The composition's input: in, or rmsnorm(in) in hbuf. */
static xpi_status sep_in(xpi_backend *be, const float *in, const xpi_weight *norm, float eps, float *hbuf, int64_t cols,
                         int32_t n, const float **h) {
  *h = in;
  if (!norm) return XPI_OK;
  XPI_TRY(xpu_rmsnorm(be, hbuf, (float *)in, NULL, norm, n, (int32_t)cols, eps)); /* no residual: in not written */
  *h = hbuf;
  return XPI_OK;
}

xpi_status xpu_matmul_multi(xpi_backend *be, int count, float *const *outs, const float *in, const xpi_weight *norm,
                            float eps, float *hbuf, const xpi_weight *const *ws, const xpi_weight *const *biases,
                            int32_t n) {
  if (count < 1 || count > 3)
    return xpi_err(XPI_ERR_INTERNAL, "%s: matmul_multi over %d weights (1..3)", be->device, count);
  int fusable = n == 1, has_bias = biases && biases[0], qfus = n == 1 && q_fusable(ws[0]);
  int64_t total = 0;
  for (int j = 0; j < count; j++) {
    const xpi_weight *b = biases ? biases[j] : NULL;
    XPI_TRY(check_fused(be, ws[j], b, "matmul_multi", &fusable));
    total += ws[j]->rows;
    if (ws[j]->dtype != ws[0]->dtype || ws[j]->cols != ws[0]->cols || (b != NULL) != has_bias ||
        (b && b->dtype != biases[0]->dtype))
      fusable = qfus = 0; /* mixed shapes or dtypes: the separate launches */
    if (!q_fusable(ws[j])) qfus = 0;
  }
  if (n <= 0) return XPI_OK;
  if (total > INT32_MAX) fusable = qfus = 0;
  if (fusable) return gemv3(be, count, outs, in, norm, eps, hbuf, ws, biases, 0);
  if (qfus) return gemv3_q(be, count, outs, in, norm, eps, hbuf, ws, biases, 0);
  const float *h;
  XPI_TRY(sep_in(be, in, norm, eps, hbuf, ws[0]->cols, n, &h));
  for (int j = 0; j < count; j++) XPI_TRY(xpu_matmul(be, outs[j], h, ws[j], biases ? biases[j] : NULL, n));
  return XPI_OK;
}

xpi_status xpu_matmul_add(xpi_backend *be, float *x, float *tmp, const float *in, const xpi_weight *w,
                          const xpi_weight *bias, int32_t n) {
  int fusable = n == 1;
  XPI_TRY(check_fused(be, w, bias, "matmul_add", &fusable));
  if (n <= 0) return XPI_OK;
  const int fq = n == 1 && (fusable || ((w->dtype == XPI_DT_Q8 || w->dtype == XPI_DT_Q4) && w->aux));
  const int splits = fq ? xpu_splitk_splits(be, w->dtype, w->rows, w->cols) : 1;
  if (splits > 1) return xpu_gemv_splitk(be, x, in, w, bias, splits, 1); /* the residual add as the merge's epilogue */
  if (fusable || (n == 1 && q_fusable(w))) {
    const xpi_weight *bs[1] = {bias};
    if (!fusable) return gemv3_q(be, 1, &x, in, NULL, 0.0f, NULL, &w, bias ? bs : NULL, 1);
    return gemv3(be, 1, &x, in, NULL, 0.0f, NULL, &w, bias ? bs : NULL, 1);
  }
  XPI_TRY(xpu_matmul(be, tmp, in, w, bias, n));
  return xpu_add(be, x, tmp, (int64_t)n * w->rows);
}

xpi_status xpu_matmul_glu(xpi_backend *be, float *out, float *tmp, const float *in, const xpi_weight *norm, float eps,
                          float *hbuf, const xpi_weight *gate, const xpi_weight *up, xpi_glu_act act, int32_t n) {
  int fusable = n == 1 && gate->dtype == up->dtype;
  XPI_TRY(check_fused(be, gate, NULL, "matmul_glu gate", &fusable));
  XPI_TRY(check_fused(be, up, NULL, "matmul_glu up", &fusable));
  if (gate->rows != up->rows || gate->cols != up->cols)
    return xpi_err(XPI_ERR_INTERNAL, "%s: matmul_glu: gate [%lld, %lld] and up [%lld, %lld] differ", be->device,
                   (long long)gate->rows, (long long)gate->cols, (long long)up->rows, (long long)up->cols);
  if (n <= 0) return XPI_OK;
  int rows = (int)gate->rows, cols = (int)gate->cols, ac = act == XPI_GLU_GELU_TANH ? 1 : 0;
  if (n == 1 && q_fusable(gate) && q_fusable(up) && gate->dtype == up->dtype) { /* quantized gate|up */
    fused_norm fn;
    XPI_TRY(fused_norm_of(be, -1, norm, eps, hbuf, cols, &in, &fn));
    const void *wg = gate->data, *wu = up->data, *dg = gate->aux, *du = up->aux;
    xpu_arg a[] = {XA(out), XA(in), XA(wg), XA(wu), XA(dg), XA(du), XA(rows), XA(cols), XA(ac), XA(fn.nw),
                   XA(fn.nwdt), XA(fn.has), XA(fn.eps)};
    const int q4 = gate->dtype == XPI_DT_Q4;
    xpu_kid kid = q4 ? XK_GEMV_GLU_Q4 : XK_GEMV_GLU_Q8, sgk = q4 ? XK_GEMV_GLU_SG_Q4 : XK_GEMV_GLU_SG_Q8;
    if (tuned_ok(be, sgk)) kid = sgk; /* block reads, the same grid, arguments and bits */
    return xpu_launch(be, kid, ceil_div((uint64_t)rows, XPU_QROWS), 1, 1, XPU_WG, 1, 1, a, 13);
  }
  if (!fusable) {
    const float *h;
    XPI_TRY(sep_in(be, in, norm, eps, hbuf, cols, n, &h));
    XPI_TRY(xpu_matmul(be, out, h, gate, NULL, n));
    XPI_TRY(xpu_matmul(be, tmp, h, up, NULL, n));
    return ac ? xpu_geglu(be, out, out, tmp, n, rows) : xpu_swiglu(be, out, out, tmp, n, rows);
  }
  static const xpu_kid sgk[3] = {XK_GEMV_GLU_SG_F32, XK_GEMV_GLU_SG_F16, XK_GEMV_GLU_SG_BF16};
  static const xpu_kid pk[3] = {XK_GEMV_GLU_F32, XK_GEMV_GLU_F16, XK_GEMV_GLU_BF16};
  int di = gemv_di(gate), sg = fused_sg(be, gate, sgk[di]);
  fused_norm fn;
  XPI_TRY(fused_norm_of(be, sg, norm, eps, hbuf, cols, &in, &fn));
  const void *wg = gate->data, *wu = up->data;
  if (sg) {
    xpu_arg a[] = {XA(out), XA(in), XA(wg), XA(wu), XA(rows), XA(cols), XA(ac), XA(fn.nw), XA(fn.nwdt), XA(fn.has),
                   XA(fn.eps)};
    return xpu_launch(be, sgk[di], ceil_div((uint64_t)rows, 4), 1, 1, 64, 1, 1, a, 11);
  }
  xpu_arg a[] = {XA(out), XA(in), XA(wg), XA(wu), XA(cols), XA(ac), XA(fn.nw), XA(fn.nwdt), XA(fn.has), XA(fn.eps)};
  return xpu_launch(be, pk[di], (uint32_t)rows, 1, 1, XPU_WG, 1, 1, a, 10);
}

/* What the XPU runs (ops.h: supports), as the ops check it: embeddings and norms of f32/f16/bf16 weights, matmuls and
 * experts of those or q8/q4, weights of fewer than 2^31 rows and columns, rope of an even head_dim, attention up to
 * XPU_MAX_HD. */
int xpu_supports(const xpi_backend *be, const xpi_op_desc *d) {
  (void)be;
  const int flt = d->wdtype == XPI_DT_F32 || d->wdtype == XPI_DT_F16 || d->wdtype == XPI_DT_BF16;
  const int q = d->wdtype == XPI_DT_Q8 || d->wdtype == XPI_DT_Q4;
  if (d->rows > INT32_MAX || d->cols > INT32_MAX) return 0;
  switch (d->op) {
    case XPI_OP_EMBED: case XPI_OP_RMSNORM: return flt;
    case XPI_OP_MATMUL: case XPI_OP_MATMUL_MULTI: case XPI_OP_MATMUL_GLU: case XPI_OP_MATMUL_ADD:
    case XPI_OP_MOE_MATMUL: case XPI_OP_MOE_MLP:
      return flt || q;
    case XPI_OP_ROPE: return d->head_dim >= 0 && d->head_dim % 2 == 0;
    case XPI_OP_ATTENTION: return d->head_dim >= 0 && d->head_dim <= XPU_MAX_HD;
    default: return 1;
  }
}
