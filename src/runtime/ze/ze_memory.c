/* Device allocations within Level Zero's size limits, and SPIR-V modules with their build logs. */
#include "runtime/ze/ze_memory.h"

#include <stdlib.h>

#include "core/status.h"
#include "runtime/ze/ze_discovery.h"
#include "runtime/ze/ze_loader.h"

xpi_status xpi_ze_alloc_device(ze_context_handle_t ctx, const xpi_ze_device *dev, size_t size, size_t align, void **out) {
  if (!dev || !out || !ctx) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_ze_alloc_device: NULL argument");
  *out = NULL;
  const xpi_ze_api *ze = xpi_ze_load(NULL);
  if (!ze) return xpi_err(XPI_ERR_DEVICE, "%s: Level Zero is not available", dev->info.id);
  if (align & (align - 1)) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "%s: alignment %zu is not a power of two", dev->info.id, align);
  ze_relaxed_allocation_limits_exp_desc_t relaxed = {.stype = ZE_STRUCTURE_TYPE_RELAXED_ALLOCATION_LIMITS_EXP_DESC,
                                                     .flags = ZE_RELAXED_ALLOCATION_LIMITS_EXP_FLAG_MAX_SIZE};
  ze_device_mem_alloc_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  uint64_t limit = dev->info.max_alloc_size;
  if (limit && size > limit) {
    if (!dev->relaxed_alloc)
      return xpi_err(XPI_ERR_OUT_OF_MEMORY,
                     "%s (%s): one allocation of %zu bytes exceeds the device's maxMemAllocSize of %llu bytes and its "
                     "driver does not offer relaxed allocation limits",
                     dev->info.id, dev->info.name, size, (unsigned long long)limit);
    desc.pNext = &relaxed;
  }
  ze_result_t r = ze->zeMemAllocDevice(ctx, &desc, size, align, dev->device, out);
  if (r != ZE_RESULT_SUCCESS) {
    *out = NULL;
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s (%s): zeMemAllocDevice of %zu bytes failed (0x%x; device memory %llu bytes)",
                   dev->info.id, dev->info.name, size, (unsigned)r, (unsigned long long)dev->info.total_memory);
  }
  return XPI_OK;
}

const char *xpi_ze_module_flags(const xpi_ze_device *dev) {
  uint64_t limit = dev ? dev->info.max_alloc_size : 0;
  return dev && dev->relaxed_alloc && limit && dev->info.total_memory > limit
             ? "-ze-opt-greater-than-4GB-buffer-required"
             : "";
}

xpi_status xpi_ze_module_from_spirv(ze_context_handle_t ctx, const xpi_ze_device *dev, const char *name,
                                    const void *spirv, size_t size, const char *flags, ze_module_handle_t *out) {
  if (!dev || !out || !ctx || !spirv) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_ze_module_from_spirv: NULL argument");
  *out = NULL;
  const xpi_ze_api *ze = xpi_ze_load(NULL);
  if (!ze) return xpi_err(XPI_ERR_DEVICE, "%s: Level Zero is not available", dev->info.id);
  ze_module_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                           .format = ZE_MODULE_FORMAT_IL_SPIRV,
                           .inputSize = size,
                           .pInputModule = spirv,
                           .pBuildFlags = flags ? flags : ""};
  ze_module_build_log_handle_t log = NULL;
  int wrapped = xpi_ze_handles_wrapped();
  ze_result_t r = ze->zeModuleCreate(ctx, dev->device, &desc, out, wrapped ? NULL : &log);
  if (r == ZE_RESULT_SUCCESS) {
    if (log) ze->zeModuleBuildLogDestroy(log);
    return XPI_OK;
  }
  *out = NULL;
  char *text = NULL;
  size_t n = 0;
  if (log && ze->zeModuleBuildLogGetString(log, &n, NULL) == ZE_RESULT_SUCCESS && n > 0 && (text = malloc(n)))
    if (ze->zeModuleBuildLogGetString(log, &n, text) != ZE_RESULT_SUCCESS) text[0] = 0;
  if (log) ze->zeModuleBuildLogDestroy(log);
  xpi_status s = xpi_err(XPI_ERR_DEVICE, "%s (%s): building SPIR-V module %s failed (0x%x): %s", dev->info.id,
                         dev->info.name, name ? name : "?", (unsigned)r, text && *text ? text
                         : wrapped ? "no build log (the Level Zero loader cannot return it with several drivers or "
                                     "ZE_ENABLE_LOADER_INTERCEPT=1; retry with one driver)"
                                   : "no build log");
  free(text);
  return s;
}
