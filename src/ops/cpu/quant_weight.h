/* XPI_DT_Q8/Q4 weight placement for the CPU backend's weight_create (formats in ops/quant_format.h). */
#ifndef XPI_CPU_QUANT_WEIGHT_H
#define XPI_CPU_QUANT_WEIGHT_H

#include "core/threadpool.h"
#include "ops/ops.h"

/* w->data = quants, w->aux = half scales, w->owned = the one allocation (release with free()). */
xpi_status xpi_cpu_quantize_weight(xpi_pool *pool, xpi_weight *w, const void *src, xpi_dtype src_dtype,
                                   int64_t rows, int64_t cols, xpi_dtype want);

#endif
