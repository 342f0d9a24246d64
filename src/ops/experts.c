/* Expert-stacked weights (ops.h, xpi_experts): every expert is an ordinary weight of its backend, so each
 * backend's conversions and q8/q4 quantization apply per expert unchanged; the pointer table lets a kernel
 * choose the expert of each token from device memory (moe_matmul), so a recorded decode step replays with
 * whatever experts the router picks. Which dtypes a backend's moe_matmul takes is its own to say (its op
 * returns XPI_ERR_UNSUPPORTED with what to do); nothing here depends on the backend. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "ops/ops.h"

void xpi_experts_free(xpi_backend *be, xpi_experts *e) {
  if (!e) return;
  if (e->w)
    for (int32_t i = 0; i < e->n; i++)
      if (e->w[i].data || e->w[i].owned) be->ops->weight_free(be, &e->w[i]);
  if (e->table) be->ops->free(be, (void *)e->table);
  free(e->w);
  memset(e, 0, sizeof *e);
}

xpi_status xpi_experts_create(xpi_backend *be, xpi_experts *e, const void *const *src, xpi_dtype src_dtype,
                              int32_t n, int64_t rows, int64_t cols, xpi_dtype want) {
  memset(e, 0, sizeof *e);
  if (n <= 0 || rows <= 0 || cols <= 0)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "experts: %d experts of [%lld, %lld]", n, (long long)rows,
                   (long long)cols);
  e->w = calloc((size_t)n, sizeof *e->w);
  const void **host = calloc(2 * (size_t)n, sizeof *host); /* data pointers, then scales (q8/q4) */
  xpi_status s = e->w && host ? XPI_OK : xpi_err(XPI_ERR_OUT_OF_MEMORY, "experts: out of memory");
  e->n = n;
  for (int32_t i = 0; s == XPI_OK && i < n; i++) {
    s = be->ops->weight_create(be, &e->w[i], src[i], src_dtype, rows, cols, want);
    if (s != XPI_OK) s = xpi_err_prefix(s, "expert %d: ", i);
    else e->bytes += e->w[i].bytes, host[i] = e->w[i].data;
  }
  int scaled = s == XPI_OK && e->w[0].aux != NULL; /* a block format: its kernels need each expert's scales too */
  for (int32_t i = 0; s == XPI_OK && i < n; i++) {
    if ((e->w[i].aux != NULL) != scaled)
      s = xpi_err(XPI_ERR_INTERNAL, "experts: expert %d placed %s scales, expert 0 %s", i,
                  e->w[i].aux ? "with" : "without", scaled ? "with" : "without");
    host[n + i] = e->w[i].aux;
  }
  const size_t tbytes = (size_t)n * (scaled ? 2 : 1) * sizeof *host;
  if (s == XPI_OK) {
    e->table = be->ops->alloc(be, tbytes);
    s = e->table ? be->ops->write(be, (void *)e->table, host, tbytes) : XPI_ERR_OUT_OF_MEMORY;
  }
  free(host);
  if (s != XPI_OK) {
    xpi_experts_free(be, e);
    return s;
  }
  e->rows = rows, e->cols = cols, e->dtype = e->w[0].dtype;
  return XPI_OK;
}
