/* The XPU backend as the rest of the library sees it: its constructor and launch counting. Implemented by
 * src/ops/xpu (Level Zero, SPIR-V kernels), or by src/ops/backend_xpu_off.c in a CPU-only build
 * (XPUINFER_XPU=OFF), where asking for one says that XPU support was not built. */
#ifndef XPI_OPS_BACKEND_XPU_H
#define XPI_OPS_BACKEND_XPU_H

#include "ops/ops.h"
#include "runtime/xpu.h"

/* Launch counting for the performance model (xpi_model_perf_decode): from begin to end, every launch of the
 * XPU backend be adds its cost (src/ops/xpu/xpu_perf.c) to *acc by kernel. be must be an XPU backend. */
xpi_status xpi_xpu_perf_begin(xpi_backend *be, xpi_perf_report *acc);
void xpi_xpu_perf_end(xpi_backend *be);
/* A backend on cfg->device ("xpu:N", already resolved against the visible devices). */
xpi_status xpi_backend_xpu_create(const xpi_backend_config *cfg, xpi_backend **out);

#endif
