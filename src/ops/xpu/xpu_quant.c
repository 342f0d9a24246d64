/* q8/q4 weights on the XPU: the shared block formats and layout (src/ops/quant_format.h), quantized on the host at
 * load by the CPU's own quantizer, so the quants and scales are the CPU backend's bit for bit, then uploaded
 * once as one allocation (quants, then the half scales at a 64-byte aligned offset). The CPU keeps exactly this
 * row-major layout in w->data / w->aux (its GEMM panels and AMX tiles are repacked per call), so nothing here is
 * CPU-specific. Matmuls quantize the activations per 32-block on the device as the CPU's int8 path does, then
 * run the integer GEMV (decode) or GEMM (prefill) of kernels/portable/matmul_q.cl; on the tuned tier the decode
 * GEMV is kernels/tuned/gemv_q_sg.cl (sub-group block reads) and the prefill GEMM kernels/tuned/gemm_q_sg.cl
 * (register tiles), and on the DPAS tier the prefill GEMM is kernels/common/xpi_gemm_dpas_q.h (int8 DPAS, one
 * matrix instruction per 32-block), all summing the same bits. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "ops/quant_format.h"
#include "ops/xpu/xpu_backend.h"
#include "ops/xpu/xpu_internal.h"

static uint64_t align64(uint64_t v) { return (v + 63) & ~(uint64_t)63; }

xpi_status xpu_quant_weight_create(xpi_backend *be, xpi_weight *w, const void *src, xpi_dtype src_dtype,
                                   int64_t rows, int64_t cols, xpi_dtype want) {
  memset(w, 0, sizeof *w);
  if (src_dtype != XPI_DT_F32 && src_dtype != XPI_DT_F16 && src_dtype != XPI_DT_BF16)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: cannot quantize %s weights to %s (only f32/f16/bf16)", be->device,
                   xpi_dtype_name(src_dtype), xpi_dtype_name(want));
  if (rows <= 0 || cols <= 0 || rows > INT32_MAX || cols > INT32_MAX)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "%s: bad quantized weight shape [%lld, %lld]", be->device,
                   (long long)rows, (long long)cols);
  const xpi_q_layout l = xpi_q_layout_of(want, rows, cols);
  const uint64_t qbytes = l.qbytes, qpad = l.qpad, total = qpad + l.dbytes;
  if (total > SIZE_MAX / 2)
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: quantized weight [%lld, %lld] is too large", be->device,
                   (long long)rows, (long long)cols);
  unsigned char *host = malloc((size_t)total);
  if (!host)
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: out of host memory quantizing a [%lld, %lld] weight (%llu bytes)",
                   be->device, (long long)rows, (long long)cols, (unsigned long long)total);
  memset(host + qbytes, 0, (size_t)(qpad - qbytes));
  xpi_status s = xpi_quantize_rows(want, host, (uint16_t *)(host + qpad), src, src_dtype, rows, cols);
  if (s != XPI_OK) {
    free(host);
    return xpi_err_prefix(s, "%s: ", be->device);
  }
  unsigned char *buf = NULL;
  s = xpu_weight_alloc(be, (size_t)total, rows, cols, want, (void **)&buf);
  if (s == XPI_OK) s = xpu_upload(be, buf, host, (size_t)total);
  free(host);
  XPI_TRY(xpu_weight_placed(be, s, buf));
  xpi_q_weight_record(w, want, rows, cols, buf, &l); /* bytes as the CPU counts them: quants + scales */
  return XPI_OK;
}

xpi_status xpu_matmul_q(xpi_backend *be, float *out, const float *in, const xpi_weight *w, const xpi_weight *bias,
                        int32_t n) {
  if (!w->aux) return xpi_err(XPI_ERR_INTERNAL, "%s: matmul: %s weight without scales", be->device,
                              xpi_dtype_name(w->dtype));
  const int rows = (int)w->rows, cols = (int)w->cols, nb = (int)xpi_q_nblocks(cols);
  if (n == 1) { /* few rows: split-K, which quantizes the input blocks it reads itself (one launch) */
    const int splits = xpu_splitk_splits(be, w->dtype, rows, cols);
    if (splits > 1) return xpu_gemv_splitk(be, out, in, w, bias, splits, 0);
  }
  const uint64_t xq_bytes = align64((uint64_t)n * (uint64_t)nb * XPI_QK), dx_bytes = (uint64_t)n * nb * 4;
  void *scr = NULL;
  XPI_TRY(xpu_scratch(be, (size_t)(xq_bytes + dx_bytes), &scr));
  void *xq = scr, *dx = (unsigned char *)scr + xq_bytes;
  xpu_arg qa[] = {XA(xq), XA(dx), XA(in), XA(cols), XA(nb)};
  XPI_TRY(xpu_launch(be, XK_QUANT_ACT, (uint32_t)((nb + 63) / 64), (uint32_t)n, 1, 64, 1, 1, qa, 5));
  const int q4 = w->dtype == XPI_DT_Q4, has_bias = bias != NULL, bdt = bias ? (int)bias->dtype : 0;
  const void *wd = w->data, *d = w->aux, *bd = bias ? bias->data : w->data; /* never a NULL argument */
  xpu_arg a[] = {XA(out), XA(xq), XA(dx), XA(wd), XA(d), XA(bd), XA(bdt), XA(has_bias), XA(rows), XA(cols), XA(n)};
  if (n == 1) { /* the tuned tier's block-read GEMV where it was built: the same grid, arguments and bits */
    const xpu_kid sg = q4 ? XK_GEMV_SG_Q4 : XK_GEMV_SG_Q8;
    const xpu_kid kid = be->use_kernels && im_of(be)->d->k[sg] ? sg : q4 ? XK_GEMV_Q4 : XK_GEMV_Q8;
    return xpu_launch(be, kid, (uint32_t)rows, 1, 1, 64, 1, 1, a, 10);
  }
  /* prefill: the int8 DPAS GEMM where the DPAS tier was built, else the tuned tier's register GEMM (both one
   * sub-group per group, one weight row per lane, 8 tokens; the same arguments and bits), else the portable
   * tiled GEMM */
  const xpu_device *dev = im_of(be)->d;
  const xpu_kid dk = q4 ? XK_GEMM_DPAS_Q4 : XK_GEMM_DPAS_Q8, tk = q4 ? XK_GEMM_SG_Q4 : XK_GEMM_SG_Q8;
  const uint32_t sg = (uint32_t)dev->dpas;
  if (be->use_kernels && sg && dev->k[dk])
    return xpu_launch(be, dk, (uint32_t)((rows + sg - 1) / sg), (uint32_t)((n + 7) / 8), 1, sg, 1, 1, a, 11);
  if (be->use_kernels && dev->k[tk])
    return xpu_launch(be, tk, (uint32_t)((rows + 15) / 16), (uint32_t)((n + 7) / 8), 1, 16, 1, 1, a, 11);
  return xpu_launch(be, q4 ? XK_GEMM_Q4 : XK_GEMM_Q8, (uint32_t)((rows + 15) / 16), (uint32_t)((n + 15) / 16), 1, 16,
                    16, 1, a, 11);
}
