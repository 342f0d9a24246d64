/* The XPU devices as the rest of the library sees them: discovery and memory (the backend built on them is
 * ops/backend_xpu.h). One seam, two implementations chosen by the build (XPUINFER_XPU): src/runtime/ze
 * (Level Zero), or src/runtime/xpu_off.c (a CPU-only library: no XPU is ever visible, and asking for one says
 * that XPU support was not built). Only those files include Level Zero headers. */
#ifndef XPI_RUNTIME_XPU_H
#define XPI_RUNTIME_XPU_H

#include <stddef.h>
#include <stdint.h>

#include "xpuinfer.h"

/* What a CPU-only build answers when asked for an XPU. */
#define XPI_XPU_OFF "XPU support was not built into this libxpuinfer (configured with -DXPUINFER_XPU=OFF): CPU only"

/* Visible XPUs in library order (xpu:0, xpu:1, ...): 0 when there is no loader, no driver, or no XPU support
 * in this build. Enumerated once; thread safe. */
xpi_status xpi_xpu_count(size_t *n);
/* Properties of xpu:i for i < count (id and index filled in). */
xpi_status xpi_xpu_info(size_t i, xpi_device_info *out);
/* Why XPUs are or are not available, for xpi_device_list_summary(): loader, drivers, device count and the
 * Level Zero variables that chose them. */
void xpi_xpu_summary(char *buf, size_t cap);
/* Memory of xpu:index this process can still use: the device's total minus what XPU backends of this
 * process hold there (Level Zero 1.4 reports no usage without sysman). */
xpi_status xpi_xpu_free_memory(int index, uint64_t *bytes);
/* XPI_ERR_OUT_OF_MEMORY ("the model does not fit on xpu:N: <what> need ...") naming the need and the free
 * memory, when need bytes do not fit on xpu:index: for checks before anything is uploaded. */
xpi_status xpi_xpu_check_fit(int index, uint64_t need, const char *what);

#endif
