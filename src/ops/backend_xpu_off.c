/* The XPU backend (ops/backend_xpu.h) of a CPU-only build (XPUINFER_XPU=OFF): asking for one says that XPU
 * support was not built. */
#include "core/status.h"
#include "ops/backend_xpu.h"

xpi_status xpi_backend_xpu_create(const xpi_backend_config *cfg, xpi_backend **out) {
  if (out) *out = NULL;
  return xpi_err(XPI_ERR_DEVICE, "device '%s': %s", cfg && cfg->device ? cfg->device : "xpu", XPI_XPU_OFF);
}

xpi_status xpi_xpu_perf_begin(xpi_backend *be, xpi_perf_report *acc) {
  (void)be, (void)acc;
  return xpi_err(XPI_ERR_DEVICE, "%s", XPI_XPU_OFF);
}

void xpi_xpu_perf_end(xpi_backend *be) { (void)be; }
