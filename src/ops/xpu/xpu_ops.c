/* The ops of ops.h as kernel launches (shapes as in ops.h). Arguments are checked on the host; values that
 * live in device memory (ids, positions) are bounds-checked by the kernels themselves. */
#include "core/status.h"
#include "ops/xpu/xpu_backend.h"
#include "ops/xpu/xpu_internal.h"

#define XPU_WG 64        /* work-group of the portable row kernels */
#define XPU_MAX_HD 256   /* attention kernels keep a head in local memory / registers */

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
  if (n == 1) { /* decode: GEMV */
    static const xpu_kid sg[3] = {XK_GEMV_SG_F32, XK_GEMV_SG_F16, XK_GEMV_SG_BF16};
    static const xpu_kid pk[3] = {XK_GEMV_F32, XK_GEMV_F16, XK_GEMV_BF16};
    if (cols % 128 == 0 && tuned_ok(be, sg[di])) /* block reads: 128-element, 16-byte aligned steps */
      return xpu_launch(be, sg[di], ceil_div((uint64_t)rows, 4), 1, 1, 64, 1, 1, a, 8);
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
  xpu_arg a[] = {XA(q), XA(k), XA(pos), XA(hq), XA(hk), XA(hd), XA(inv_freq), XA(qn), XA(qdt), XA(has_qn),
                 XA(kn), XA(kdt), XA(has_kn), XA(eps)};
  return xpu_launch(be, XK_ROPE, (uint32_t)(n * (hq + hk)), 1, 1, XPU_WG, 1, 1, a, 14);
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
  xpu_arg a[] = {XA(out), XA(q), XA(kc), XA(vc), XA(kdt), XA(pos), XA(seq), XA(tables), XA(mb), XA(bshift), XA(hq),
                 XA(hk), XA(hd), XA(scale), XA(window), XA(softcap)};
  return xpu_launch(be, XK_SDPA, rows, 1, 1, 64, 1, 1, a, 16);
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
  xpu_arg a[] = {XA(out), XA(x), XA(cols)};
  return xpu_launch(be, XK_ARGMAX, (uint32_t)rows, 1, 1, 64, 1, 1, a, 3);
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
