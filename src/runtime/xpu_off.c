/* The XPU seam (runtime/xpu.h) of a CPU-only build (XPUINFER_XPU=OFF): no Level Zero, no SPIR-V, no XPU is
 * ever visible, and every question about one says why. */
#include <stdio.h>

#include "core/status.h"
#include "runtime/xpu.h"

xpi_status xpi_xpu_count(size_t *n) {
  if (!n) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_xpu_count: NULL output");
  *n = 0;
  return XPI_OK;
}

xpi_status xpi_xpu_info(size_t i, xpi_device_info *out) {
  (void)out;
  return xpi_err(XPI_ERR_DEVICE, "xpu:%zu: %s", i, XPI_XPU_OFF);
}

void xpi_xpu_summary(char *buf, size_t cap) {
  if (cap) snprintf(buf, cap, "%s", XPI_XPU_OFF);
}

xpi_status xpi_xpu_free_memory(int index, uint64_t *bytes) {
  if (bytes) *bytes = 0;
  return xpi_err(XPI_ERR_DEVICE, "xpu:%d: %s", index, XPI_XPU_OFF);
}

xpi_status xpi_xpu_check_fit(int index, uint64_t need, const char *what) {
  (void)need, (void)what;
  return xpi_err(XPI_ERR_DEVICE, "xpu:%d: %s", index, XPI_XPU_OFF);
}
