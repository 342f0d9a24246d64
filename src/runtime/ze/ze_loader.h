/* Level Zero entry points, loaded from libze_loader.so.1 with dlopen at first use so that libxpuinfer has
 * no link-time dependency on Level Zero: where the loader is absent, XPU is simply unavailable. */
#ifndef XPI_ZE_LOADER_H
#define XPI_ZE_LOADER_H

#include <level_zero/ze_api.h>
#include "xpuinfer.h"

/* X(name) for every entry point the library calls. Entries added here are resolved by xpi_ze_load(). */
#define XPI_ZE_FUNCS(X)                                                                                      \
  X(zeInit) X(zeDriverGet) X(zeDriverGetApiVersion) X(zeDriverGetProperties)                                 \
  X(zeDriverGetExtensionProperties) X(zeDriverGetExtensionFunctionAddress)                                   \
  X(zeDeviceGet) X(zeDeviceGetSubDevices) X(zeDeviceGetProperties) X(zeDeviceGetComputeProperties)           \
  X(zeDeviceGetModuleProperties) X(zeDeviceGetMemoryProperties) X(zeDeviceGetCommandQueueGroupProperties)    \
  X(zeDevicePciGetPropertiesExt)                                                                             \
  X(zeContextCreate) X(zeContextDestroy)                                                                     \
  X(zeMemAllocDevice) X(zeMemAllocHost) X(zeMemAllocShared) X(zeMemFree) X(zeMemGetAllocProperties)          \
  X(zeModuleCreate) X(zeModuleDestroy) X(zeModuleBuildLogGetString) X(zeModuleBuildLogDestroy)               \
  X(zeKernelCreate) X(zeKernelDestroy) X(zeKernelSetArgumentValue) X(zeKernelSetGroupSize)                   \
  X(zeKernelSuggestGroupSize) X(zeKernelGetProperties) X(zeKernelSetIndirectAccess)                                                       \
  X(zeCommandQueueCreate) X(zeCommandQueueDestroy) X(zeCommandQueueExecuteCommandLists)                      \
  X(zeCommandQueueSynchronize)                                                                               \
  X(zeCommandListCreate) X(zeCommandListCreateImmediate) X(zeCommandListDestroy) X(zeCommandListClose)       \
  X(zeCommandListReset) X(zeCommandListAppendLaunchKernel) X(zeCommandListAppendMemoryCopy)                  \
  X(zeCommandListAppendMemoryFill) X(zeCommandListAppendBarrier) X(zeCommandListAppendSignalEvent)           \
  X(zeEventPoolCreate) X(zeEventPoolDestroy) X(zeEventCreate) X(zeEventDestroy) X(zeEventHostSynchronize)    \
  X(zeEventHostReset) X(zeEventQueryStatus)                                                                  \
  X(zeFenceCreate) X(zeFenceDestroy) X(zeFenceHostSynchronize) X(zeFenceReset)

typedef struct xpi_ze_api {
#define XPI_ZE_FIELD(name) __typeof__(&name) name;
  XPI_ZE_FUNCS(XPI_ZE_FIELD)
#undef XPI_ZE_FIELD
} xpi_ze_api;

/* Loads the loader and calls zeInit(ZE_INIT_FLAG_GPU_ONLY) once per process (thread safe).
 * Returns NULL when Level Zero is unavailable; *why (optional) then says why (no loader, zeInit failed...). */
const xpi_ze_api *xpi_ze_load(const char **why);

#endif
