/* Level Zero device discovery: every driver's devices, in the order the drivers give them (they already
 * applied ZE_AFFINITY_MASK and ZE_FLAT_DEVICE_HIERARCHY: the library must not apply the mask again), then
 * sorted by PCI address across drivers when ZE_ENABLE_PCI_ID_DEVICE_ORDER=1, even if a driver did not. */
#include "runtime/ze/ze_devices.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "runtime/ze/ze_env.h"
#include "runtime/ze/ze_loader.h"
#include "runtime/ze/ze_discovery.h"

#define XPI_ZE_MAX_DEVICES 64

static xpi_ze_device g_devs[XPI_ZE_MAX_DEVICES];
static size_t g_n;
static char g_summary[1024];
static int g_wrapped;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* Intel's dot-product module properties (compute-runtime's ze_intel_gpu.h, driver 24.05+; not in the spec
 * 1.4 headers): chained to zeDeviceGetModuleProperties, bit 1 reports DPAS (the XMX matrix engine). */
#define XPI_ZE_STYPE_INTEL_MODULE_DP ((ze_structure_type_t)0x00030013)
typedef struct {
  ze_structure_type_t stype;
  void *pNext;
  uint32_t flags;
} xpi_ze_intel_module_dp_props;
#define XPI_ZE_INTEL_FLAG_DPAS 2u

/* The Level Zero name of cl_intel_bfloat16_conversions (spec 1.5). */
#define XPI_ZE_BF16_CONVERSIONS_EXT "ZE_extension_bfloat16_conversions"

static int driver_has_ext(const xpi_ze_api *ze, ze_driver_handle_t drv, const char *name) {
  uint32_t n = 0;
  if (!ze->zeDriverGetExtensionProperties || ze->zeDriverGetExtensionProperties(drv, &n, NULL) != ZE_RESULT_SUCCESS ||
      n == 0)
    return 0;
  ze_driver_extension_properties_t *props = calloc(n, sizeof *props);
  if (!props) return 0;
  int found = 0;
  if (ze->zeDriverGetExtensionProperties(drv, &n, props) == ZE_RESULT_SUCCESS)
    for (uint32_t i = 0; i < n && !found; i++) found = strcmp(props[i].name, name) == 0;
  free(props);
  return found;
}

void xpi_ze_fill_info(const xpi_ze_api *ze, ze_driver_handle_t drv, ze_device_handle_t dev, xpi_device_info *info,
                      int *pci_known, uint32_t pci[4]) {
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
  if (ze->zeDeviceGetProperties(dev, &p) == ZE_RESULT_SUCCESS) {
    snprintf(info->name, sizeof info->name, "%.*s", (int)sizeof p.name, p.name);
    info->max_alloc_size = p.maxMemAllocSize;
    info->eu_count = p.numSlices * p.numSubslicesPerSlice * p.numEUsPerSubslice;
    info->threads_per_eu = p.numThreadsPerEU;
  }
  *pci_known = 0;
  ze_pci_ext_properties_t pp = {.stype = ZE_STRUCTURE_TYPE_PCI_EXT_PROPERTIES};
  if (ze->zeDevicePciGetPropertiesExt && ze->zeDevicePciGetPropertiesExt(dev, &pp) == ZE_RESULT_SUCCESS) {
    snprintf(info->pci_bdf, sizeof info->pci_bdf, "%04x:%02x:%02x.%x", pp.address.domain, pp.address.bus,
             pp.address.device, pp.address.function);
    pci[0] = pp.address.domain;
    pci[1] = pp.address.bus;
    pci[2] = pp.address.device;
    pci[3] = pp.address.function;
    *pci_known = 1;
  }
  uint32_t nm = 0;
  if (ze->zeDeviceGetMemoryProperties(dev, &nm, NULL) == ZE_RESULT_SUCCESS && nm > 0) {
    ze_device_memory_properties_t *mp = calloc(nm, sizeof *mp);
    if (mp) {
      for (uint32_t i = 0; i < nm; i++) mp[i].stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES;
      if (ze->zeDeviceGetMemoryProperties(dev, &nm, mp) == ZE_RESULT_SUCCESS)
        for (uint32_t i = 0; i < nm; i++) info->total_memory += mp[i].totalSize;
      free(mp);
    }
  }
  ze_device_compute_properties_t cp = {.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES};
  if (ze->zeDeviceGetComputeProperties(dev, &cp) == ZE_RESULT_SUCCESS) {
    uint32_t n = cp.numSubGroupSizes < 8 ? cp.numSubGroupSizes : 8;
    for (uint32_t i = 0; i < n; i++) info->subgroup_sizes[i] = cp.subGroupSizes[i];
    info->n_subgroup_sizes = n;
  }
  /* fp16/fp64 from the module properties, as PyTorch does. */
  xpi_ze_intel_module_dp_props dp = {.stype = XPI_ZE_STYPE_INTEL_MODULE_DP};
  ze_device_module_properties_t mo = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES, .pNext = &dp};
  ze_result_t r = ze->zeDeviceGetModuleProperties(dev, &mo);
  if (r != ZE_RESULT_SUCCESS) { /* a driver that rejects the unknown chained struct */
    dp.flags = 0;
    mo.pNext = NULL;
    r = ze->zeDeviceGetModuleProperties(dev, &mo);
  }
  if (r == ZE_RESULT_SUCCESS) {
    info->has_fp16 = (mo.flags & ZE_DEVICE_MODULE_FLAG_FP16) != 0;
    info->has_fp64 = (mo.flags & ZE_DEVICE_MODULE_FLAG_FP64) != 0;
    info->has_dpas = (dp.flags & XPI_ZE_INTEL_FLAG_DPAS) != 0;
  }
  /* bf16 as torch.xpu.is_bf16_supported(including_emulation=False): the device has
   * cl_intel_bfloat16_conversions, which Level Zero drivers advertise as ZE_extension_bfloat16_conversions.
   * (With the default including_emulation=True PyTorch answers True for every XPU.) */
  info->has_bf16 = driver_has_ext(ze, drv, XPI_ZE_BF16_CONVERSIONS_EXT);
}

typedef struct {
  xpi_ze_device d;
  int pci_known;
  uint32_t pci[4];
  size_t order; /* enumeration position, for a stable sort */
} entry;

static int pci_cmp(const void *a, const void *b) {
  const entry *x = a, *y = b;
  if (x->pci_known != y->pci_known) return x->pci_known ? -1 : 1; /* unknown addresses last */
  if (x->pci_known)
    for (int i = 0; i < 4; i++)
      if (x->pci[i] != y->pci[i]) return x->pci[i] < y->pci[i] ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

static void discover(void) {
  char mask_why[512] = "";
  if (xpi_ze_mask_check(getenv("ZE_AFFINITY_MASK"), mask_why, sizeof mask_why))
    xpi_log(2, "%s", mask_why); /* before zeInit: the driver may die or drop every device on it */
  const char *why = NULL;
  const xpi_ze_api *ze = xpi_ze_load(&why);
  if (!ze) {
    snprintf(g_summary, sizeof g_summary, "%s%s%s", why ? why : "Level Zero unavailable", *mask_why ? "; " : "",
             mask_why);
    return;
  }
  uint32_t nd = 0;
  if (ze->zeDriverGet(&nd, NULL) != ZE_RESULT_SUCCESS || nd == 0) {
    snprintf(g_summary, sizeof g_summary, "Level Zero loader initialized but no driver reported devices");
    return;
  }
  ze_driver_handle_t *drivers = calloc(nd, sizeof *drivers);
  entry *all = calloc(XPI_ZE_MAX_DEVICES, sizeof *all);
  if (!drivers || !all || ze->zeDriverGet(&nd, drivers) != ZE_RESULT_SUCCESS) {
    free(drivers);
    free(all);
    snprintf(g_summary, sizeof g_summary, "Level Zero driver enumeration failed (out of memory or zeDriverGet)");
    return;
  }
  const char *icpt = getenv("ZE_ENABLE_LOADER_INTERCEPT");
  g_wrapped = nd > 1 || (icpt && atoi(icpt) != 0);
  size_t n = 0;
  for (uint32_t di = 0; di < nd; di++) {
    ze_api_version_t ver = ZE_API_VERSION_1_0;
    if (ze->zeDriverGetApiVersion) ze->zeDriverGetApiVersion(drivers[di], &ver);
    uint32_t nv = 0;
    if (ze->zeDeviceGet(drivers[di], &nv, NULL) != ZE_RESULT_SUCCESS || nv == 0) continue;
    ze_device_handle_t *devs = calloc(nv, sizeof *devs);
    if (!devs) continue;
    if (ze->zeDeviceGet(drivers[di], &nv, devs) == ZE_RESULT_SUCCESS) {
      for (uint32_t i = 0; i < nv && n < XPI_ZE_MAX_DEVICES; i++) {
        ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
        if (ze->zeDeviceGetProperties(devs[i], &p) != ZE_RESULT_SUCCESS || p.type != ZE_DEVICE_TYPE_GPU) continue;
        entry *e = &all[n];
        e->d.driver = drivers[di];
        e->d.device = devs[i];
        e->d.api_version = ver;
        e->order = n;
        xpi_ze_fill_info(ze, drivers[di], devs[i], &e->d.info, &e->pci_known, e->pci);
        e->d.relaxed_alloc = driver_has_ext(ze, drivers[di], ZE_RELAXED_ALLOCATION_LIMITS_EXP_NAME);
        e->d.in_order_lists = ver >= ZE_MAKE_VERSION(1, 7);
        n++;
      }
    }
    free(devs);
  }
  int sorted = xpi_ze_pci_order_enabled();
  if (sorted) qsort(all, n, sizeof *all, pci_cmp);
  for (size_t i = 0; i < n; i++) {
    g_devs[i] = all[i].d;
    g_devs[i].info.index = (int)i;
    snprintf(g_devs[i].info.id, sizeof g_devs[i].info.id, "xpu:%u", (unsigned)i);
  }
  g_n = n;
  snprintf(g_summary, sizeof g_summary, "Level Zero: %u driver%s, %zu GPU device%s%s%s%s", nd, nd == 1 ? "" : "s", n,
           n == 1 ? "" : "s", sorted ? ", ordered by PCI bus id" : "", *mask_why ? "; " : "", mask_why);
  free(drivers);
  free(all);
}

xpi_status xpi_ze_devices(const xpi_ze_device **devs, size_t *n) {
  if (!devs || !n) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_ze_devices: NULL output");
  pthread_once(&g_once, discover);
  *devs = g_devs;
  *n = g_n;
  return XPI_OK;
}

const char *xpi_ze_devices_summary(void) {
  pthread_once(&g_once, discover);
  return g_summary;
}

int xpi_ze_handles_wrapped(void) {
  pthread_once(&g_once, discover);
  return g_wrapped;
}
