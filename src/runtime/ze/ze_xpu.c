/* The XPU seam's discovery part (runtime/xpu.h) over Level Zero discovery (ze_devices.c). */
#include <stdio.h>
#include <stdlib.h>

#include "core/status.h"
#include "runtime/xpu.h"
#include "runtime/ze/ze_devices.h"
#include "runtime/ze/ze_discovery.h"
#include "runtime/ze/ze_env.h"

xpi_status xpi_xpu_count(size_t *n) {
  if (!n) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_xpu_count: NULL output");
  const xpi_ze_device *devs;
  return xpi_ze_devices(&devs, n);
}

xpi_status xpi_xpu_info(size_t i, xpi_device_info *out) {
  const xpi_ze_device *devs;
  size_t n;
  XPI_TRY(xpi_ze_devices(&devs, &n));
  if (i >= n) return xpi_err(XPI_ERR_DEVICE, "xpu:%zu does not exist (%zu XPU device(s) visible)", i, n);
  *out = devs[i].info;
  return XPI_OK;
}

void xpi_xpu_summary(char *buf, size_t cap) {
  if (!cap) return;
  int len = snprintf(buf, cap, "%s", xpi_ze_devices_summary());
  for (int i = 0; xpi_ze_env_names[i] && len >= 0 && (size_t)len < cap; i++) {
    const char *v = getenv(xpi_ze_env_names[i]);
    if (v) len += snprintf(buf + len, cap - (size_t)len, "; %s=%s", xpi_ze_env_names[i], v);
  }
}
