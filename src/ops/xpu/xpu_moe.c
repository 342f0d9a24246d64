/* Mixture-of-experts ops on XPU (kernels/portable/moe.cl). Shapes are checked here; expert ids live in device
 * memory and are bounds-checked by the kernel. Experts must be f32/f16/bf16 (the XPU has no q8/q4 weights). */
#include "core/status.h"
#include "ops/xpu/xpu_internal.h"

static uint32_t ceil_div(uint64_t a, uint64_t b) { return (uint32_t)((a + b - 1) / b); }

xpi_status xpu_moe_route(xpi_backend *be, int32_t *ids, float *wts, const float *logits, int32_t n, int32_t n_experts,
                         int32_t k, int norm_topk) {
  if (k <= 0 || k > n_experts)
    return xpi_err(XPI_ERR_INTERNAL, "%s: moe_route: top-%d of %d experts", be->device, k, n_experts);
  if (n <= 0) return XPI_OK;
  int ne = n_experts, nt = norm_topk != 0;
  xpu_arg a[] = {XA(ids), XA(wts), XA(logits), XA(n), XA(ne), XA(k), XA(nt)};
  return xpu_launch(be, XK_MOE_ROUTE, ceil_div((uint64_t)n, 64), 1, 1, 64, 1, 1, a, 7);
}

xpi_status xpu_moe_matmul(xpi_backend *be, float *out, const float *in, int32_t in_k, const xpi_experts *e,
                          const int32_t *ids, int32_t n, int32_t k) {
  if (!e || !e->table || e->n <= 0)
    return xpi_err(XPI_ERR_INTERNAL, "%s: moe_matmul: missing experts", be->device);
  if (e->dtype != XPI_DT_F32 && e->dtype != XPI_DT_F16 && e->dtype != XPI_DT_BF16)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: moe_matmul: %s experts are not supported on XPU", be->device,
                   xpi_dtype_name(e->dtype));
  if (in_k != 1 && in_k != k)
    return xpi_err(XPI_ERR_INTERNAL, "%s: moe_matmul: in_k %d with k %d", be->device, in_k, k);
  if (e->rows > INT32_MAX || e->cols > INT32_MAX || (int64_t)n * k > INT32_MAX)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: moe_matmul: experts [%lld, %lld] x %d slots too large", be->device,
                   (long long)e->rows, (long long)e->cols, n * k);
  if (n <= 0) return XPI_OK;
  int wdt = (int)e->dtype, ne = e->n, rows = (int)e->rows, cols = (int)e->cols, slots = n * k;
  const void *table = e->table;
  xpu_arg a[] = {XA(out), XA(in), XA(in_k), XA(table), XA(wdt), XA(ne), XA(rows), XA(cols), XA(ids), XA(slots), XA(k)};
  return xpu_launch(be, XK_MOE_MATMUL, (uint32_t)rows, (uint32_t)ne, 1, 64, 1, 1, a, 11);
}

xpi_status xpu_moe_combine(xpi_backend *be, float *out, const float *y, const float *wts, const float *shared,
                           const float *shared_gate, int32_t n, int32_t k, int32_t d) {
  if (n <= 0 || d <= 0) return XPI_OK;
  uint64_t count = (uint64_t)n * (uint64_t)d;
  if (count / 256 >= UINT32_MAX) return xpi_err(XPI_ERR_UNSUPPORTED, "%s: moe_combine: too many elements", be->device);
  int has = shared != NULL;
  const float *sh = shared ? shared : y, *g = shared ? shared_gate : wts; /* never a NULL kernel argument */
  xpu_arg a[] = {XA(out), XA(y), XA(wts), XA(sh), XA(g), XA(has), XA(k), XA(d), XA(count)};
  return xpu_launch(be, XK_MOE_COMBINE, ceil_div(count, 256), 1, 1, 256, 1, 1, a, 9);
}
