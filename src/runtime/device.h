/* Device names of the public API: "cpu", "xpu", "xpu:N", "auto" (first XPU, else the CPU). */
#ifndef XPI_RUNTIME_DEVICE_H
#define XPI_RUNTIME_DEVICE_H

#include "xpuinfer.h"

/* *xpu_index = N for an XPU, -1 for the CPU. NULL or "" means "auto". Unknown names and XPUs that are not
 * visible are errors that say what is visible. */
xpi_status xpi_device_resolve(const char *name, int *xpu_index);

/* "xpu" -> 0, "xpu:N" -> N, range-checked against the visible XPUs. */
xpi_status xpi_device_parse_xpu(const char *name, int *index);

#endif
