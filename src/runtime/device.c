/* Device name resolution ("cpu", "xpu", "xpu:N", "auto"). */
#include "runtime/device.h"

#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "runtime/xpu.h"

xpi_status xpi_device_parse_xpu(const char *name, int *index) {
  if (!name || !index) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "device name: NULL");
  size_t n;
  XPI_TRY(xpi_xpu_count(&n));
  long v = 0;
  if (!strcmp(name, "xpu")) {
    v = 0;
  } else if (!strncmp(name, "xpu:", 4)) {
    char *end;
    const char *s = name + 4;
    if (*s < '0' || *s > '9') return xpi_err(XPI_ERR_INVALID_ARGUMENT, "device '%s': expected xpu:N with N a number", name);
    v = strtol(s, &end, 10);
    if (*end || v > 1000000) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "device '%s': expected xpu:N with N a number", name);
  } else {
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "device '%s': expected xpu or xpu:N", name);
  }
  if ((size_t)v >= n) {
    if (n == 0) {
      char why[1024];
      xpi_xpu_summary(why, sizeof why);
      return xpi_err(XPI_ERR_DEVICE, "device '%s': no XPU is visible (%s)", name, why);
    }
    return xpi_err(XPI_ERR_DEVICE, "device '%s': only %zu XPU%s visible (xpu:0..xpu:%zu)", name, n, n == 1 ? " is" : "s are",
                   n - 1);
  }
  *index = (int)v;
  return XPI_OK;
}

xpi_status xpi_device_resolve(const char *name, int *xpu_index) {
  if (!xpu_index) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_device_resolve: NULL output");
  if (!name || !*name || !strcmp(name, "auto")) {
    size_t n;
    XPI_TRY(xpi_xpu_count(&n));
    *xpu_index = n > 0 ? 0 : -1;
    return XPI_OK;
  }
  if (!strcmp(name, "cpu")) {
    *xpu_index = -1;
    return XPI_OK;
  }
  if (!strcmp(name, "xpu") || !strncmp(name, "xpu:", 4)) return xpi_device_parse_xpu(name, xpu_index);
  return xpi_err(XPI_ERR_INVALID_ARGUMENT, "device '%s': expected auto, cpu, xpu or xpu:N", name);
}
