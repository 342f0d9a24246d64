/* zesim's Level Zero DDI: the table getters the loader requires (it refuses a driver that lacks any of
 * them). Every slot starts as "unsupported"; the entry points zesim implements are then filled in. The
 * loader may be newer than these headers: only the slots these headers know are written, the loader's
 * extra slots stay NULL, which it reports as unsupported. */
#include "zesim.h"

#include <string.h>
#include <level_zero/ze_ddi.h>
#include <level_zero/zet_ddi.h>
#include <level_zero/zes_ddi.h>

#define ZS_EXPORT __attribute__((visibility("default")))

/* Declarations of the implementations, typed from the DDI's own function-pointer types. */

extern __typeof__(*(ze_pfnInit_t)0) zs_zeInit;
extern __typeof__(*(ze_pfnDriverGet_t)0) zs_zeDriverGet;
extern __typeof__(*(ze_pfnDriverGetApiVersion_t)0) zs_zeDriverGetApiVersion;
extern __typeof__(*(ze_pfnDriverGetProperties_t)0) zs_zeDriverGetProperties;
extern __typeof__(*(ze_pfnDriverGetExtensionProperties_t)0) zs_zeDriverGetExtensionProperties;
extern __typeof__(*(ze_pfnDeviceGet_t)0) zs_zeDeviceGet;
extern __typeof__(*(ze_pfnDeviceGetSubDevices_t)0) zs_zeDeviceGetSubDevices;
extern __typeof__(*(ze_pfnDeviceGetProperties_t)0) zs_zeDeviceGetProperties;
extern __typeof__(*(ze_pfnDeviceGetComputeProperties_t)0) zs_zeDeviceGetComputeProperties;
extern __typeof__(*(ze_pfnDeviceGetModuleProperties_t)0) zs_zeDeviceGetModuleProperties;
extern __typeof__(*(ze_pfnDeviceGetCommandQueueGroupProperties_t)0) zs_zeDeviceGetCommandQueueGroupProperties;
extern __typeof__(*(ze_pfnDeviceGetMemoryProperties_t)0) zs_zeDeviceGetMemoryProperties;
extern __typeof__(*(ze_pfnDeviceGetMemoryAccessProperties_t)0) zs_zeDeviceGetMemoryAccessProperties;
extern __typeof__(*(ze_pfnDevicePciGetPropertiesExt_t)0) zs_zeDevicePciGetPropertiesExt;
extern __typeof__(*(ze_pfnDeviceCanAccessPeer_t)0) zs_zeDeviceCanAccessPeer;
extern __typeof__(*(ze_pfnDeviceGetStatus_t)0) zs_zeDeviceGetStatus;
extern __typeof__(*(ze_pfnContextCreate_t)0) zs_zeContextCreate;
extern __typeof__(*(ze_pfnContextCreateEx_t)0) zs_zeContextCreateEx;
extern __typeof__(*(ze_pfnContextDestroy_t)0) zs_zeContextDestroy;
extern __typeof__(*(ze_pfnContextGetStatus_t)0) zs_zeContextGetStatus;
extern __typeof__(*(ze_pfnCommandQueueCreate_t)0) zs_zeCommandQueueCreate;
extern __typeof__(*(ze_pfnCommandQueueDestroy_t)0) zs_zeCommandQueueDestroy;
extern __typeof__(*(ze_pfnCommandQueueExecuteCommandLists_t)0) zs_zeCommandQueueExecuteCommandLists;
extern __typeof__(*(ze_pfnCommandQueueSynchronize_t)0) zs_zeCommandQueueSynchronize;
extern __typeof__(*(ze_pfnCommandListCreate_t)0) zs_zeCommandListCreate;
extern __typeof__(*(ze_pfnCommandListCreateImmediate_t)0) zs_zeCommandListCreateImmediate;
extern __typeof__(*(ze_pfnCommandListDestroy_t)0) zs_zeCommandListDestroy;
extern __typeof__(*(ze_pfnCommandListClose_t)0) zs_zeCommandListClose;
extern __typeof__(*(ze_pfnCommandListReset_t)0) zs_zeCommandListReset;
extern __typeof__(*(ze_pfnCommandListAppendBarrier_t)0) zs_zeCommandListAppendBarrier;
extern __typeof__(*(ze_pfnCommandListAppendMemoryRangesBarrier_t)0) zs_zeCommandListAppendMemoryRangesBarrier;
extern __typeof__(*(ze_pfnCommandListAppendMemoryCopy_t)0) zs_zeCommandListAppendMemoryCopy;
extern __typeof__(*(ze_pfnCommandListAppendMemoryFill_t)0) zs_zeCommandListAppendMemoryFill;
extern __typeof__(*(ze_pfnCommandListAppendMemoryPrefetch_t)0) zs_zeCommandListAppendMemoryPrefetch;
extern __typeof__(*(ze_pfnCommandListAppendMemAdvise_t)0) zs_zeCommandListAppendMemAdvise;
extern __typeof__(*(ze_pfnCommandListAppendSignalEvent_t)0) zs_zeCommandListAppendSignalEvent;
extern __typeof__(*(ze_pfnCommandListAppendWaitOnEvents_t)0) zs_zeCommandListAppendWaitOnEvents;
extern __typeof__(*(ze_pfnCommandListAppendEventReset_t)0) zs_zeCommandListAppendEventReset;
extern __typeof__(*(ze_pfnCommandListAppendLaunchKernel_t)0) zs_zeCommandListAppendLaunchKernel;
extern __typeof__(*(ze_pfnCommandListAppendLaunchCooperativeKernel_t)0) zs_zeCommandListAppendLaunchCooperativeKernel;
extern __typeof__(*(ze_pfnFenceCreate_t)0) zs_zeFenceCreate;
extern __typeof__(*(ze_pfnFenceDestroy_t)0) zs_zeFenceDestroy;
extern __typeof__(*(ze_pfnFenceHostSynchronize_t)0) zs_zeFenceHostSynchronize;
extern __typeof__(*(ze_pfnFenceQueryStatus_t)0) zs_zeFenceQueryStatus;
extern __typeof__(*(ze_pfnFenceReset_t)0) zs_zeFenceReset;
extern __typeof__(*(ze_pfnEventPoolCreate_t)0) zs_zeEventPoolCreate;
extern __typeof__(*(ze_pfnEventPoolDestroy_t)0) zs_zeEventPoolDestroy;
extern __typeof__(*(ze_pfnEventCreate_t)0) zs_zeEventCreate;
extern __typeof__(*(ze_pfnEventDestroy_t)0) zs_zeEventDestroy;
extern __typeof__(*(ze_pfnEventHostSignal_t)0) zs_zeEventHostSignal;
extern __typeof__(*(ze_pfnEventHostSynchronize_t)0) zs_zeEventHostSynchronize;
extern __typeof__(*(ze_pfnEventQueryStatus_t)0) zs_zeEventQueryStatus;
extern __typeof__(*(ze_pfnEventHostReset_t)0) zs_zeEventHostReset;
extern __typeof__(*(ze_pfnModuleCreate_t)0) zs_zeModuleCreate;
extern __typeof__(*(ze_pfnModuleDestroy_t)0) zs_zeModuleDestroy;
extern __typeof__(*(ze_pfnModuleGetKernelNames_t)0) zs_zeModuleGetKernelNames;
extern __typeof__(*(ze_pfnModuleGetProperties_t)0) zs_zeModuleGetProperties;
extern __typeof__(*(ze_pfnModuleBuildLogDestroy_t)0) zs_zeModuleBuildLogDestroy;
extern __typeof__(*(ze_pfnModuleBuildLogGetString_t)0) zs_zeModuleBuildLogGetString;
extern __typeof__(*(ze_pfnKernelCreate_t)0) zs_zeKernelCreate;
extern __typeof__(*(ze_pfnKernelDestroy_t)0) zs_zeKernelDestroy;
extern __typeof__(*(ze_pfnKernelSetGroupSize_t)0) zs_zeKernelSetGroupSize;
extern __typeof__(*(ze_pfnKernelSuggestGroupSize_t)0) zs_zeKernelSuggestGroupSize;
extern __typeof__(*(ze_pfnKernelSetArgumentValue_t)0) zs_zeKernelSetArgumentValue;
extern __typeof__(*(ze_pfnKernelSetIndirectAccess_t)0) zs_zeKernelSetIndirectAccess;
extern __typeof__(*(ze_pfnKernelGetProperties_t)0) zs_zeKernelGetProperties;
extern __typeof__(*(ze_pfnKernelGetName_t)0) zs_zeKernelGetName;
extern __typeof__(*(ze_pfnMemAllocShared_t)0) zs_zeMemAllocShared;
extern __typeof__(*(ze_pfnMemAllocDevice_t)0) zs_zeMemAllocDevice;
extern __typeof__(*(ze_pfnMemAllocHost_t)0) zs_zeMemAllocHost;
extern __typeof__(*(ze_pfnMemFree_t)0) zs_zeMemFree;
extern __typeof__(*(ze_pfnMemGetAllocProperties_t)0) zs_zeMemGetAllocProperties;
extern __typeof__(*(ze_pfnMemGetAddressRange_t)0) zs_zeMemGetAddressRange;

/* Any entry point zesim does not implement. Called through the table's own pointer type; on the x86-64 and
 * AArch64 calling conventions a function that ignores its arguments may be called with any arguments. */
static ze_result_t zs_unsupported(void) { return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE; }

static void fill_unsupported(void *table, size_t size) {
  void (*fp)(void) = (void (*)(void))zs_unsupported;
  for (size_t off = 0; off + sizeof fp <= size; off += sizeof fp) memcpy((char *)table + off, &fp, sizeof fp);
}

#define ZS_GETTER_CHECK(version, table)                                                           \
  if (!(table)) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;                                    \
  if (ZE_MAJOR_VERSION(version) != ZE_MAJOR_VERSION(ZE_API_VERSION_CURRENT))                 \
    return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;                                                  \
  fill_unsupported(table, sizeof *(table));

ZS_EXPORT ze_result_t zeGetGlobalProcAddrTable(ze_api_version_t version, ze_global_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  t->pfnInit = zs_zeInit;
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetDriverProcAddrTable(ze_api_version_t version, ze_driver_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  t->pfnGet = zs_zeDriverGet;
  t->pfnGetApiVersion = zs_zeDriverGetApiVersion;
  t->pfnGetProperties = zs_zeDriverGetProperties;
  t->pfnGetExtensionProperties = zs_zeDriverGetExtensionProperties;
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetDeviceProcAddrTable(ze_api_version_t version, ze_device_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  t->pfnGet = zs_zeDeviceGet;
  t->pfnGetSubDevices = zs_zeDeviceGetSubDevices;
  t->pfnGetProperties = zs_zeDeviceGetProperties;
  t->pfnGetComputeProperties = zs_zeDeviceGetComputeProperties;
  t->pfnGetModuleProperties = zs_zeDeviceGetModuleProperties;
  t->pfnGetCommandQueueGroupProperties = zs_zeDeviceGetCommandQueueGroupProperties;
  t->pfnGetMemoryProperties = zs_zeDeviceGetMemoryProperties;
  t->pfnGetMemoryAccessProperties = zs_zeDeviceGetMemoryAccessProperties;
  t->pfnPciGetPropertiesExt = zs_zeDevicePciGetPropertiesExt;
  t->pfnCanAccessPeer = zs_zeDeviceCanAccessPeer;
  t->pfnGetStatus = zs_zeDeviceGetStatus;
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetDeviceExpProcAddrTable(ze_api_version_t version, ze_device_exp_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetContextProcAddrTable(ze_api_version_t version, ze_context_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  t->pfnCreate = zs_zeContextCreate;
  t->pfnCreateEx = zs_zeContextCreateEx;
  t->pfnDestroy = zs_zeContextDestroy;
  t->pfnGetStatus = zs_zeContextGetStatus;
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetCommandQueueProcAddrTable(ze_api_version_t version, ze_command_queue_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  t->pfnCreate = zs_zeCommandQueueCreate;
  t->pfnDestroy = zs_zeCommandQueueDestroy;
  t->pfnExecuteCommandLists = zs_zeCommandQueueExecuteCommandLists;
  t->pfnSynchronize = zs_zeCommandQueueSynchronize;
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetCommandListProcAddrTable(ze_api_version_t version, ze_command_list_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  t->pfnCreate = zs_zeCommandListCreate;
  t->pfnCreateImmediate = zs_zeCommandListCreateImmediate;
  t->pfnDestroy = zs_zeCommandListDestroy;
  t->pfnClose = zs_zeCommandListClose;
  t->pfnReset = zs_zeCommandListReset;
  t->pfnAppendBarrier = zs_zeCommandListAppendBarrier;
  t->pfnAppendMemoryRangesBarrier = zs_zeCommandListAppendMemoryRangesBarrier;
  t->pfnAppendMemoryCopy = zs_zeCommandListAppendMemoryCopy;
  t->pfnAppendMemoryFill = zs_zeCommandListAppendMemoryFill;
  t->pfnAppendMemoryPrefetch = zs_zeCommandListAppendMemoryPrefetch;
  t->pfnAppendMemAdvise = zs_zeCommandListAppendMemAdvise;
  t->pfnAppendSignalEvent = zs_zeCommandListAppendSignalEvent;
  t->pfnAppendWaitOnEvents = zs_zeCommandListAppendWaitOnEvents;
  t->pfnAppendEventReset = zs_zeCommandListAppendEventReset;
  t->pfnAppendLaunchKernel = zs_zeCommandListAppendLaunchKernel;
  t->pfnAppendLaunchCooperativeKernel = zs_zeCommandListAppendLaunchCooperativeKernel;
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetImageProcAddrTable(ze_api_version_t version, ze_image_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetImageExpProcAddrTable(ze_api_version_t version, ze_image_exp_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetFenceProcAddrTable(ze_api_version_t version, ze_fence_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  t->pfnCreate = zs_zeFenceCreate;
  t->pfnDestroy = zs_zeFenceDestroy;
  t->pfnHostSynchronize = zs_zeFenceHostSynchronize;
  t->pfnQueryStatus = zs_zeFenceQueryStatus;
  t->pfnReset = zs_zeFenceReset;
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetEventPoolProcAddrTable(ze_api_version_t version, ze_event_pool_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  t->pfnCreate = zs_zeEventPoolCreate;
  t->pfnDestroy = zs_zeEventPoolDestroy;
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetEventProcAddrTable(ze_api_version_t version, ze_event_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  t->pfnCreate = zs_zeEventCreate;
  t->pfnDestroy = zs_zeEventDestroy;
  t->pfnHostSignal = zs_zeEventHostSignal;
  t->pfnHostSynchronize = zs_zeEventHostSynchronize;
  t->pfnQueryStatus = zs_zeEventQueryStatus;
  t->pfnHostReset = zs_zeEventHostReset;
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetEventExpProcAddrTable(ze_api_version_t version, ze_event_exp_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetModuleProcAddrTable(ze_api_version_t version, ze_module_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  t->pfnCreate = zs_zeModuleCreate;
  t->pfnDestroy = zs_zeModuleDestroy;
  t->pfnGetKernelNames = zs_zeModuleGetKernelNames;
  t->pfnGetProperties = zs_zeModuleGetProperties;
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetModuleBuildLogProcAddrTable(ze_api_version_t version, ze_module_build_log_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  t->pfnDestroy = zs_zeModuleBuildLogDestroy;
  t->pfnGetString = zs_zeModuleBuildLogGetString;
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetKernelProcAddrTable(ze_api_version_t version, ze_kernel_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  t->pfnCreate = zs_zeKernelCreate;
  t->pfnDestroy = zs_zeKernelDestroy;
  t->pfnSetGroupSize = zs_zeKernelSetGroupSize;
  t->pfnSuggestGroupSize = zs_zeKernelSuggestGroupSize;
  t->pfnSetArgumentValue = zs_zeKernelSetArgumentValue;
  t->pfnSetIndirectAccess = zs_zeKernelSetIndirectAccess;
  t->pfnGetProperties = zs_zeKernelGetProperties;
  t->pfnGetName = zs_zeKernelGetName;
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetKernelExpProcAddrTable(ze_api_version_t version, ze_kernel_exp_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetSamplerProcAddrTable(ze_api_version_t version, ze_sampler_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetPhysicalMemProcAddrTable(ze_api_version_t version, ze_physical_mem_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetMemProcAddrTable(ze_api_version_t version, ze_mem_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  t->pfnAllocShared = zs_zeMemAllocShared;
  t->pfnAllocDevice = zs_zeMemAllocDevice;
  t->pfnAllocHost = zs_zeMemAllocHost;
  t->pfnFree = zs_zeMemFree;
  t->pfnGetAllocProperties = zs_zeMemGetAllocProperties;
  t->pfnGetAddressRange = zs_zeMemGetAddressRange;
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetVirtualMemProcAddrTable(ze_api_version_t version, ze_virtual_mem_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetFabricVertexExpProcAddrTable(ze_api_version_t version, ze_fabric_vertex_exp_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zeGetFabricEdgeExpProcAddrTable(ze_api_version_t version, ze_fabric_edge_exp_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zetGetDeviceProcAddrTable(ze_api_version_t version, zet_device_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zetGetContextProcAddrTable(ze_api_version_t version, zet_context_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zetGetCommandListProcAddrTable(ze_api_version_t version, zet_command_list_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zetGetModuleProcAddrTable(ze_api_version_t version, zet_module_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zetGetKernelProcAddrTable(ze_api_version_t version, zet_kernel_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zetGetMetricGroupProcAddrTable(ze_api_version_t version, zet_metric_group_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zetGetMetricGroupExpProcAddrTable(ze_api_version_t version, zet_metric_group_exp_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zetGetMetricProcAddrTable(ze_api_version_t version, zet_metric_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zetGetMetricStreamerProcAddrTable(ze_api_version_t version, zet_metric_streamer_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zetGetMetricQueryPoolProcAddrTable(ze_api_version_t version, zet_metric_query_pool_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zetGetMetricQueryProcAddrTable(ze_api_version_t version, zet_metric_query_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zetGetTracerExpProcAddrTable(ze_api_version_t version, zet_tracer_exp_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zetGetDebugProcAddrTable(ze_api_version_t version, zet_debug_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zesGetDriverProcAddrTable(ze_api_version_t version, zes_driver_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zesGetDeviceProcAddrTable(ze_api_version_t version, zes_device_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zesGetSchedulerProcAddrTable(ze_api_version_t version, zes_scheduler_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zesGetPerformanceFactorProcAddrTable(ze_api_version_t version, zes_performance_factor_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zesGetPowerProcAddrTable(ze_api_version_t version, zes_power_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zesGetFrequencyProcAddrTable(ze_api_version_t version, zes_frequency_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zesGetEngineProcAddrTable(ze_api_version_t version, zes_engine_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zesGetStandbyProcAddrTable(ze_api_version_t version, zes_standby_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zesGetFirmwareProcAddrTable(ze_api_version_t version, zes_firmware_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zesGetMemoryProcAddrTable(ze_api_version_t version, zes_memory_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zesGetFabricPortProcAddrTable(ze_api_version_t version, zes_fabric_port_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zesGetTemperatureProcAddrTable(ze_api_version_t version, zes_temperature_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zesGetPsuProcAddrTable(ze_api_version_t version, zes_psu_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zesGetFanProcAddrTable(ze_api_version_t version, zes_fan_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zesGetLedProcAddrTable(ze_api_version_t version, zes_led_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zesGetRasProcAddrTable(ze_api_version_t version, zes_ras_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}

ZS_EXPORT ze_result_t zesGetDiagnosticsProcAddrTable(ze_api_version_t version, zes_diagnostics_dditable_t *t) {
  ZS_GETTER_CHECK(version, t)
  return ZE_RESULT_SUCCESS;
}
