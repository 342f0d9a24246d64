/* Mixture-of-experts ops on XPU (kernels/portable/moe.cl). Shapes are checked here; expert ids live in device
 * memory and are bounds-checked by the kernel. f32/f16/bf16 experts: one kernel for decode and prefill. q8/q4
 * experts (the dense block formats, xpu_quant.c): the activations are quantized on the device by the dense
 * path's kernel, then a per-slot GEMV (decode, a few tokens) or a GEMM grouped by expert (prefill). */
#include "core/status.h"
#include "ops/quant_format.h" /* XPI_QK, xpi_q_nblocks: the block formats every backend shares */
#include "ops/xpu/xpu_internal.h"

/* Up to this many tokens (batched decode) the q8/q4 experts run as per-slot GEMVs: every chosen expert row is
 * read by each of its slots' groups, from the cache after the first. Beyond it, the grouped GEMM's 16-slot tiles
 * read each weight block once per 16 slots of its expert. */
#define XPU_MOE_Q_GEMV_MAX_N 4

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

static uint64_t align64(uint64_t v) { return (v + 63) & ~(uint64_t)63; }

static xpi_status moe_matmul_q(xpi_backend *be, float *out, const float *in, int32_t in_k, const xpi_experts *e,
                               const int32_t *ids, int32_t n, int32_t k) {
  const int rows = (int)e->rows, cols = (int)e->cols, nb = (int)xpi_q_nblocks(cols), ne = e->n, slots = n * k;
  const int nin = in_k == 1 ? n : slots; /* rows of in: the tokens (gate/up) or the slots (down) */
  const uint64_t xq_bytes = align64((uint64_t)nin * (uint64_t)nb * XPI_QK), dx_bytes = (uint64_t)nin * nb * 4;
  void *scr = NULL;
  XPI_TRY(xpu_scratch(be, (size_t)(xq_bytes + dx_bytes), &scr));
  void *xq = scr, *dx = (unsigned char *)scr + xq_bytes;
  xpu_arg qa[] = {XA(xq), XA(dx), XA(in), XA(cols), XA(nb)};
  XPI_TRY(xpu_launch(be, XK_QUANT_ACT, ceil_div((uint64_t)nb, 64), (uint32_t)nin, 1, 64, 1, 1, qa, 5));
  const int q4 = e->dtype == XPI_DT_Q4;
  const void *table = e->table;
  if (n <= XPU_MOE_Q_GEMV_MAX_N) {
    xpu_arg a[] = {XA(out), XA(xq), XA(dx), XA(table), XA(ne), XA(rows), XA(cols), XA(ids), XA(in_k), XA(k)};
    return xpu_launch(be, q4 ? XK_MOE_GEMV_Q4 : XK_MOE_GEMV_Q8, (uint32_t)rows, (uint32_t)slots, 1, 64, 1, 1, a, 10);
  }
  xpu_arg a[] = {XA(out), XA(xq), XA(dx), XA(table), XA(ne), XA(rows), XA(cols), XA(ids), XA(slots), XA(in_k), XA(k)};
  return xpu_launch(be, q4 ? XK_MOE_GEMM_Q4 : XK_MOE_GEMM_Q8, ceil_div((uint64_t)rows, 16), (uint32_t)ne, 1, 16, 16, 1,
                    a, 11);
}

xpi_status xpu_moe_matmul(xpi_backend *be, float *out, const float *in, int32_t in_k, const xpi_experts *e,
                          const int32_t *ids, int32_t n, int32_t k) {
  if (!e || !e->table || e->n <= 0)
    return xpi_err(XPI_ERR_INTERNAL, "%s: moe_matmul: missing experts", be->device);
  const int quant = e->dtype == XPI_DT_Q8 || e->dtype == XPI_DT_Q4;
  if (!quant && e->dtype != XPI_DT_F32 && e->dtype != XPI_DT_F16 && e->dtype != XPI_DT_BF16)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: moe_matmul: %s experts are not supported on XPU (it takes f32, f16, "
                   "bf16, q8 and q4): load the model with --quant q8, q4 or none", be->device,
                   xpi_dtype_name(e->dtype));
  if (in_k != 1 && in_k != k)
    return xpi_err(XPI_ERR_INTERNAL, "%s: moe_matmul: in_k %d with k %d", be->device, in_k, k);
  if (e->rows > INT32_MAX || e->cols > INT32_MAX || (int64_t)n * k > INT32_MAX)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: moe_matmul: experts [%lld, %lld] x %d slots too large", be->device,
                   (long long)e->rows, (long long)e->cols, n * k);
  if (n <= 0) return XPI_OK;
  if (quant) return moe_matmul_q(be, out, in, in_k, e, ids, n, k);
  int wdt = (int)e->dtype, ne = e->n, rows = (int)e->rows, cols = (int)e->cols, slots = n * k;
  const void *table = e->table;
  xpu_arg a[] = {XA(out), XA(in), XA(in_k), XA(table), XA(wdt), XA(ne), XA(rows), XA(cols), XA(ids), XA(slots), XA(k)};
  return xpu_launch(be, XK_MOE_MATMUL, (uint32_t)rows, (uint32_t)ne, 1, 64, 1, 1, a, 11);
}

xpi_status xpu_moe_combine(xpi_backend *be, float *out, const float *y, const int32_t *pos, const float *wts,
                           const float *shared, const float *shared_gate, int32_t n, int32_t k, int32_t d) {
  if (n <= 0 || d <= 0) return XPI_OK;
  uint64_t count = (uint64_t)n * (uint64_t)d;
  if (count / 256 >= UINT32_MAX) return xpi_err(XPI_ERR_UNSUPPORTED, "%s: moe_combine: too many elements", be->device);
  int has = shared != NULL, has_pos = pos != NULL;
  const float *sh = shared ? shared : y, *g = shared ? shared_gate : wts; /* never a NULL kernel argument */
  const void *ps = pos ? (const void *)pos : (const void *)wts;
  xpu_arg a[] = {XA(out), XA(y), XA(ps), XA(has_pos), XA(wts), XA(sh), XA(g), XA(has), XA(k), XA(d), XA(count)};
  return xpu_launch(be, XK_MOE_COMBINE, ceil_div(count, 256), 1, 1, 256, 1, 1, a, 11);
}
