/* Level Zero device memory and SPIR-V modules with the checks every caller needs: allocations above the
 * device's maxMemAllocSize chain the relaxed-allocation-limits descriptor when the driver allows it (and fail
 * clearly when it does not); module build failures carry the driver's build log. */
#ifndef XPI_ZE_MEMORY_H
#define XPI_ZE_MEMORY_H

#include <stddef.h>
#include "runtime/ze/ze_devices.h"

/* zeMemAllocDevice of size bytes (align: 0 or a power of two) on dev. XPI_ERR_OUT_OF_MEMORY with the device,
 * the size and the limit in the message when it cannot be done. */
xpi_status xpi_ze_alloc_device(ze_context_handle_t ctx, const xpi_ze_device *dev, size_t size, size_t align, void **out);

/* The build flags every module for dev needs: "-ze-opt-greater-than-4GB-buffer-required" where
 * xpi_ze_alloc_device may create a buffer over maxMemAllocSize (relaxed limits, device memory above the limit),
 * because Intel's compiler otherwise addresses buffers statefully with 32-bit offsets (wrong past 4 GiB);
 * "" elsewhere, keeping the faster stateful addressing. */
const char *xpi_ze_module_flags(const xpi_ze_device *dev);

/* zeModuleCreate from SPIR-V; name is used in messages (e.g. the kernel file). On failure the message holds the
 * driver's build log. flags may be NULL. */
xpi_status xpi_ze_module_from_spirv(ze_context_handle_t ctx, const xpi_ze_device *dev, const char *name,
                                    const void *spirv, size_t size, const char *flags, ze_module_handle_t *out);

#endif
