/* Places a weight on the CPU backend as XPI_DT_Q8/Q4 (formats in quant_format.h): one 64-byte aligned block of the
 * weight arena (weight_arena.h: free it with xpi_cpu_wfree) holding the quants then the half scales, filled by
 * all pool threads (rows split evenly). */
#include "ops/cpu/quant_weight.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "ops/cpu/quant.h"
#include "ops/cpu/weight_arena.h"

typedef struct {
  xpi_dtype dt, src_dtype;
  void *qs;
  uint16_t *d;
  const void *src;
  int64_t rows, cols, rb, nb;
  size_t esz;
  xpi_status status[64]; /* per worker; the first failure is reported */
} qjob;

static void q_run(void *ctx, int ith, int nth) {
  qjob *j = ctx;
  int64_t b, e;
  xpi_pool_range(j->rows, ith, nth, 1, &b, &e);
  if (b >= e) return;
  xpi_status s = xpi_quantize_rows(j->dt, (unsigned char *)j->qs + b * j->rb, j->d + b * j->nb,
                                   (const unsigned char *)j->src + (size_t)(b * j->cols) * j->esz, j->src_dtype,
                                   e - b, j->cols);
  if (ith < 64) j->status[ith] = s;
}

xpi_status xpi_cpu_quantize_weight(xpi_pool *pool, xpi_weight *w, const void *src, xpi_dtype src_dtype,
                                   int64_t rows, int64_t cols, xpi_dtype want) {
  memset(w, 0, sizeof *w);
  if (src_dtype != XPI_DT_F32 && src_dtype != XPI_DT_F16 && src_dtype != XPI_DT_BF16)
    return xpi_err(XPI_ERR_UNSUPPORTED, "cpu: cannot quantize %s weights to %s (only f32/f16/bf16)",
                   xpi_dtype_name(src_dtype), xpi_dtype_name(want));
  if (rows <= 0 || cols <= 0 || rows > INT64_MAX / 2 / cols)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "cpu: bad weight shape [%lld, %lld]", (long long)rows, (long long)cols);
  const int64_t rb = xpi_q_row_bytes(want, cols), nb = xpi_q_nblocks(cols);
  const xpi_q_layout l = xpi_q_layout_of(want, rows, cols);
  const uint64_t qpad = l.qpad, total = (qpad + l.dbytes + 63) & ~(uint64_t)63;
  if (total > SIZE_MAX / 2)
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "cpu: quantized weight [%lld, %lld] is too large", (long long)rows,
                   (long long)cols);
  unsigned char *buf = xpi_cpu_walloc((size_t)total); /* huge pages: decode streams it (weight_arena.h) */
  if (!buf) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "cpu: out of memory quantizing a [%lld, %lld] weight (%llu bytes)",
                           (long long)rows, (long long)cols, (unsigned long long)total);
  qjob j = {want, src_dtype, buf, (uint16_t *)(buf + qpad), src, rows, cols, rb, nb, xpi_dtype_size(src_dtype), {0}};
  xpi_pool_run(pool, q_run, &j);
  for (int i = 0; i < 64; i++) {
    if (j.status[i] != XPI_OK) {
      xpi_cpu_wfree(buf);
      /* the worker's message was recorded on its own thread: say what failed here */
      return xpi_err(j.status[i], "cpu: quantizing a [%lld, %lld] weight to %s failed (a weight is not finite "
                     "or beyond the half-precision scale range)", (long long)rows, (long long)cols,
                     xpi_dtype_name(want));
    }
  }
  xpi_q_weight_record(w, want, rows, cols, buf, &l);
  return XPI_OK;
}
