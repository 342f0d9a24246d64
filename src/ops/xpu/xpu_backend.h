/* XPU-only entry points beyond ops.h (sampling helpers, introspection for tests and device maps). */
#ifndef XPI_XPU_BACKEND_H
#define XPI_XPU_BACKEND_H

#include <stdint.h>
#include "ops/ops.h"

/* ids[r, k], vals[r, k]: the k largest logits of each row, best first (ties: lower index first).
 * All pointers are backend memory of an XPU backend. */
xpi_status xpi_xpu_topk(xpi_backend *be, int32_t *ids, float *vals, const float *x, int32_t rows, int32_t cols,
                        int32_t k);

/* Which kernel tier the backend's device uses: "portable", "tuned" or "tuned+dpas". */
const char *xpi_xpu_tier(const xpi_backend *be);

/* Memory of xpu:index this process can still use: the device's total minus what XPU backends of this
 * process hold there (Level Zero 1.4 reports no usage without sysman). */
xpi_status xpi_xpu_free_memory(int index, uint64_t *bytes);
/* XPI_ERR_OUT_OF_MEMORY ("the model does not fit on xpu:N: <what> need ...") naming the need and the free memory, when need bytes do not fit on xpu:index:
 * for checks before anything is uploaded. */
xpi_status xpi_xpu_check_fit(int index, uint64_t need, const char *what);

/* Bytes copied device-to-host through read() since the backend was created (tests: the greedy decode step
 * reads back only the token id). */
uint64_t xpi_xpu_bytes_read(xpi_backend *be);

#endif
