/* Device name resolution ("cpu", "xpu", "xpu:N", "auto"). */
#include "runtime/device.h"

#include <string.h>

#include "core/status.h"
#include "runtime/ze/ze_devices.h"

xpi_status xpi_device_resolve(const char *name, int *xpu_index) {
  if (!xpu_index) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_device_resolve: NULL output");
  if (!name || !*name || !strcmp(name, "auto")) {
    const xpi_ze_device *devs;
    size_t n;
    XPI_TRY(xpi_ze_devices(&devs, &n));
    *xpu_index = n > 0 ? 0 : -1;
    return XPI_OK;
  }
  if (!strcmp(name, "cpu")) {
    *xpu_index = -1;
    return XPI_OK;
  }
  if (!strcmp(name, "xpu") || !strncmp(name, "xpu:", 4)) return xpi_ze_parse_device(name, xpu_index);
  return xpi_err(XPI_ERR_INVALID_ARGUMENT, "device '%s': expected auto, cpu, xpu or xpu:N", name);
}
