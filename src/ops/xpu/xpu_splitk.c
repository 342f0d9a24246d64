/* Split-K decode GEMV (kernels/portable/gemv_splitk.cl): when a matrix has too few rows to keep the device's
 * hardware threads busy (k/v projections of 128-1024 rows, a small model's o_proj/down), its columns are split
 * over separate work-groups and merged in a fixed order by the last one to finish (an atomic count), in the same
 * single launch.
 *
 * When: the device has eu_count x threads_per_eu hardware threads (numSlices x numSubslicesPerSlice x
 * numEUsPerSubslice x numThreadsPerEU). The unsplit GEMV keeps ceil(rows / 2) of them busy (the tuned GEMV's one
 * 16-wide sub-group per 2 rows; the split kernels' 64 work-items per 8 rows). splits = threads / ceil(rows / 2),
 * at most XPU_SPLITK_MAX and at most one per 256 columns; split-K is used where that is 2 or more and rows <=
 * XPU_SPLITK_MAXROWS.
 *  - f32/f16/bf16: contiguous chunks of whole 256-column steps (the last one may be short); the partials are
 *    added in split order 0, 1, ...: another order than the unsplit GEMV's, the same from run to run.
 *  - q8/q4 (cols <= XPU_SPLITK_QMAXC): splits rounded down to a power of two, each a set of the unsplit GEMV's
 *    lanes (blocks b = lane mod 64), finished by the rest of its tree: the unsplit GEMV's bits, so the fused q8/q4
 *    forms stay the separate ops' bits and quantized models decode exactly as without split-K.
 *
 * Used by xpu_matmul / xpu_matmul_q at n = 1 and by xpu_matmul_add (o_proj/down with the residual add as the
 * merge's epilogue); the fused forms with a norm prologue (q|k|v, gate|up) keep their unsplit kernels (their
 * concatenated rows fill the device on the shapes split-K is for). So with float weights a fused form with a norm
 * is the separate ops' bits only where neither splits; XPI_XPU_SPLITK=0 turns split-K off (the tests of the fused
 * kernels' arithmetic against the separate ones use it). */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "ops/quant_format.h"
#include "ops/xpu/xpu_internal.h"

#define XPU_SPLITK_MINCHUNK 256
#define XPU_SPLITK_QMAXC 16384 /* XPI_QMAXC: the q8/q4 kernels stage their half of the input in local memory */

int xpu_splitk_splits(const xpi_backend *be, xpi_dtype dt, int64_t rows, int64_t cols) {
  const char *env = getenv("XPI_XPU_SPLITK");
  if (env && !strcmp(env, "0")) return 1;
  const xpi_device_info *di = &im_of(be)->d->dev->info;
  const uint64_t threads = (uint64_t)di->eu_count * (di->threads_per_eu ? di->threads_per_eu : 1);
  if (rows <= 0 || rows > XPU_SPLITK_MAXROWS || cols < 2 * XPU_SPLITK_MINCHUNK) return 1;
  uint64_t s = threads / (((uint64_t)rows + 1) / 2);
  if (s > XPU_SPLITK_MAX) s = XPU_SPLITK_MAX;
  if (s > (uint64_t)cols / XPU_SPLITK_MINCHUNK) s = (uint64_t)cols / XPU_SPLITK_MINCHUNK;
  if (dt == XPI_DT_Q8 || dt == XPI_DT_Q4) { /* split by lanes: a power of two, the input staged in local memory */
    if (cols > XPU_SPLITK_QMAXC) return 1;
    uint64_t p = 1;
    while (p * 2 <= s) p *= 2;
    return p >= 2 ? (int)p : 1;
  }
  /* chunks of whole 256-column steps, none over the kernel's local staging */
  uint64_t chunk = ((uint64_t)cols + s - 1) / (s ? s : 1);
  chunk = (chunk + XPU_SPLITK_MINCHUNK - 1) / XPU_SPLITK_MINCHUNK * XPU_SPLITK_MINCHUNK;
  s = ((uint64_t)cols + chunk - 1) / chunk;
  return s >= 2 && s <= XPU_SPLITK_MAX ? (int)s : 1;
}

xpi_status xpu_gemv_splitk(xpi_backend *be, float *out, const float *in, const xpi_weight *w, const xpi_weight *bias,
                           int splits, int accumulate) {
  const int rows = (int)w->rows, cols = (int)w->cols, q = w->dtype == XPI_DT_Q8 || w->dtype == XPI_DT_Q4;
  if (splits < 2 || splits > XPU_SPLITK_MAX || rows > XPU_SPLITK_MAXROWS ||
      (q && (splits & (splits - 1) || cols > XPU_SPLITK_QMAXC)))
    return xpi_err(XPI_ERR_INTERNAL, "%s: split-K GEMV of [%d, %d] in %d splits", be->device, rows, cols, splits);
  /* float: the chunk xpu_splitk_splits chose, the smallest multiple of 256 that covers cols in `splits` */
  int chunk = (cols + splits - 1) / splits;
  chunk = (chunk + XPU_SPLITK_MINCHUNK - 1) / XPU_SPLITK_MINCHUNK * XPU_SPLITK_MINCHUNK;
  if (!q && (cols + chunk - 1) / chunk != splits)
    return xpi_err(XPI_ERR_INTERNAL, "%s: split-K GEMV of [%d, %d]: %d splits do not cut it in chunks of %d",
                   be->device, rows, cols, splits, chunk);
  const int has_bias = bias != NULL, bdt = bias ? (int)bias->dtype : 0;
  const void *wd = w->data, *bd = bias ? bias->data : w->data; /* never a NULL kernel argument */
  float *part = im_of(be)->splitk_part;
  int32_t *cnt = im_of(be)->counters + XPU_SDPA_COUNTERS + XPU_ARGMAX_COUNTERS;
  if (q) { /* split by lanes: ceil(rows / splits) row blocks of `splits` rows */
    if (!w->aux)
      return xpi_err(XPI_ERR_INTERNAL, "%s: matmul: %s weight without scales", be->device, xpi_dtype_name(w->dtype));
    const void *d = w->aux;
    const uint32_t qgroups = (uint32_t)((rows + splits - 1) / splits) * (uint32_t)splits;
    xpu_arg a[] = {XA(out),  XA(in),     XA(wd),         XA(d),    XA(bd),  XA(bdt), XA(has_bias),
                   XA(rows), XA(cols),   XA(splits), XA(accumulate), XA(part), XA(cnt)};
    return xpu_launch(be, w->dtype == XPI_DT_Q4 ? XK_GEMV_SPLITK_Q4 : XK_GEMV_SPLITK_Q8, qgroups, 1, 1, 64, 1, 1, a,
                      13);
  }
  const uint32_t groups = (uint32_t)((rows + XPU_SPLITK_ROWS - 1) / XPU_SPLITK_ROWS) * (uint32_t)splits;
  static const xpu_kid k[3] = {XK_GEMV_SPLITK_F32, XK_GEMV_SPLITK_F16, XK_GEMV_SPLITK_BF16};
  const int di = w->dtype == XPI_DT_F32 ? 0 : w->dtype == XPI_DT_F16 ? 1 : 2;
  xpu_arg a[] = {XA(out),  XA(in),    XA(wd),     XA(bd),         XA(bdt),  XA(has_bias), XA(rows),
                 XA(cols), XA(chunk), XA(splits), XA(accumulate), XA(part), XA(cnt)};
  return xpu_launch(be, k[di], groups, 1, 1, 64, 1, 1, a, 13);
}
