/* Per-device Level Zero state: context, modules from the embedded SPIR-V (built once per device) and the
 * kernels (created once). The tiers are chosen by xpu_tier_select (the tuned tier where the device reports
 * sub-group size 16, DPAS GEMM where it reports a matrix engine, in the variant of its natural sub-group size) and
 * kept where their modules build. XPI_XPU_TIER=portable forces the portable tier. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "ops/xpu/xpu_internal.h"
#include "ops/xpu/xpu_spirv.h"
#include "runtime/ze/ze_memory.h"

/* Names, modules and indirect access of the kernels, from their table (xpu_kernel_table.h). */
static const struct {
  const char *name;
  int tuned;    /* module: 0 portable, 1 tuned, 2 dpas */
  int indirect; /* reads the experts through a table of device addresses (ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE) */
} k_kernels[XK_COUNT] = {
#define XPU_KERNEL_ROW(id, name, tier, args, wbytes, indirect, cost) [XK_##id] = {name, tier, indirect},
  XPU_KERNELS(XPU_KERNEL_ROW)
#undef XPU_KERNEL_ROW
};

const char *xpu_kernel_name(xpu_kid kid) { return kid >= 0 && kid < XK_COUNT ? k_kernels[kid].name : "?"; }

#define XPU_MAX_DEVICES 64
static xpu_device *g_devs[XPU_MAX_DEVICES];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

const char *xpu_ze_result_name(ze_result_t r) {
  switch (r) {
  case ZE_RESULT_SUCCESS: return "ZE_RESULT_SUCCESS";
  case ZE_RESULT_ERROR_DEVICE_LOST: return "ZE_RESULT_ERROR_DEVICE_LOST";
  case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY: return "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY";
  case ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY: return "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY";
  case ZE_RESULT_ERROR_MODULE_BUILD_FAILURE: return "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE";
  case ZE_RESULT_ERROR_UNSUPPORTED_FEATURE: return "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE";
  case ZE_RESULT_ERROR_UNSUPPORTED_SIZE: return "ZE_RESULT_ERROR_UNSUPPORTED_SIZE";
  case ZE_RESULT_ERROR_INVALID_ARGUMENT: return "ZE_RESULT_ERROR_INVALID_ARGUMENT";
  case ZE_RESULT_ERROR_INVALID_NULL_POINTER: return "ZE_RESULT_ERROR_INVALID_NULL_POINTER";
  case ZE_RESULT_ERROR_INVALID_KERNEL_NAME: return "ZE_RESULT_ERROR_INVALID_KERNEL_NAME";
  case ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION: return "ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION";
  case ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX: return "ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX";
  case ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE: return "ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE";
  case ZE_RESULT_ERROR_UNINITIALIZED: return "ZE_RESULT_ERROR_UNINITIALIZED";
  default: return "ZE_RESULT_ERROR (other)";
  }
}

void xpu_tier_select(const xpi_device_info *info, int portable_only, xpu_tier_plan *out) {
  memset(out, 0, sizeof *out);
  uint32_t n = info->n_subgroup_sizes < 8 ? info->n_subgroup_sizes : 8, min_sg = 0;
  int sg16 = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (info->subgroup_sizes[i] == 16) sg16 = 1;
    if (info->subgroup_sizes[i] && (!min_sg || info->subgroup_sizes[i] < min_sg)) min_sg = info->subgroup_sizes[i];
  }
  out->tuned = sg16 && !portable_only;
  if (!info->has_dpas) return;
  if (!out->tuned)
    snprintf(out->why_not_dpas, sizeof out->why_not_dpas, "%s",
             portable_only ? "" : "the device has no sub-group size 16 (needed by the tuned tier)");
  else if (min_sg != 16 && min_sg != 8)
    snprintf(out->why_not_dpas, sizeof out->why_not_dpas,
             "the device's smallest sub-group size (%u) is neither 8 nor 16, the sizes of the DPAS kernel variants",
             min_sg);
  else
    out->dpas = (int)min_sg;
}

static void device_destroy(xpu_device *d) {
  const xpi_ze_api *ze = d->ze;
  for (int i = 0; i < XK_COUNT; i++)
    if (d->k[i]) ze->zeKernelDestroy(d->k[i]);
  if (d->mod_dpas) ze->zeModuleDestroy(d->mod_dpas);
  if (d->mod_tuned) ze->zeModuleDestroy(d->mod_tuned);
  if (d->mod_portable) ze->zeModuleDestroy(d->mod_portable);
  if (d->ctx) ze->zeContextDestroy(d->ctx);
  pthread_mutex_destroy(&d->lock);
  free(d);
}

static xpi_status create_kernels(xpu_device *d, ze_module_handle_t mod, int tuned) {
  for (int i = 0; i < XK_COUNT; i++) {
    if (k_kernels[i].tuned != tuned) continue;
    ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC, .pKernelName = k_kernels[i].name};
    ze_result_t r = d->ze->zeKernelCreate(mod, &kd, &d->k[i]);
    if (r != ZE_RESULT_SUCCESS) {
      d->k[i] = NULL;
      return xpi_err(XPI_ERR_DEVICE, "xpu:%d: creating kernel %s failed (%s)", d->index, k_kernels[i].name,
                     xpu_ze_result_name(r));
    }
    if (k_kernels[i].indirect) {
      r = d->ze->zeKernelSetIndirectAccess(d->k[i], ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE);
      if (r != ZE_RESULT_SUCCESS)
        return xpi_err(XPI_ERR_DEVICE, "xpu:%d: indirect access for kernel %s failed (%s)", d->index,
                       k_kernels[i].name, xpu_ze_result_name(r));
    }
  }
  return XPI_OK;
}

/* Forgets a tier that did not build: its kernels and module (the error stays recorded for the log). */
static void drop_tier(xpu_device *d, int tier, ze_module_handle_t *mod) {
  for (int i = 0; i < XK_COUNT; i++)
    if (k_kernels[i].tuned == tier && d->k[i]) {
      d->ze->zeKernelDestroy(d->k[i]);
      d->k[i] = NULL;
    }
  if (*mod) d->ze->zeModuleDestroy(*mod);
  *mod = NULL;
}

static xpi_status device_create(int index, xpu_device **out) {
  const char *why = NULL;
  const xpi_ze_api *ze = xpi_ze_load(&why);
  if (!ze) return xpi_err(XPI_ERR_DEVICE, "xpu:%d: Level Zero is unavailable: %s", index, why ? why : "?");
  const xpi_ze_device *devs = NULL;
  size_t n = 0;
  XPI_TRY(xpi_ze_devices(&devs, &n));
  if (index < 0 || (size_t)index >= n)
    return xpi_err(XPI_ERR_DEVICE, "xpu:%d does not exist: %zu XPU device(s) visible", index, n);
  xpu_device *d = calloc(1, sizeof *d);
  if (!d) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "xpu:%d: out of memory", index);
  pthread_mutex_init(&d->lock, NULL);
  d->index = index;
  d->ze = ze;
  d->dev = &devs[index];
  ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
  ze_result_t r = ze->zeContextCreate(d->dev->driver, &cd, &d->ctx);
  if (r != ZE_RESULT_SUCCESS) {
    d->ctx = NULL;
    device_destroy(d);
    return xpi_err(XPI_ERR_DEVICE, "xpu:%d: zeContextCreate failed (%s)", index, xpu_ze_result_name(r));
  }
  const char *flags = xpi_ze_module_flags(d->dev); /* stateless addressing where buffers may pass the limit */
  xpi_status s = xpi_ze_module_from_spirv(d->ctx, d->dev, "portable", xpi_spv_portable, xpi_spv_portable_size, flags,
                                          &d->mod_portable);
  if (s == XPI_OK) s = create_kernels(d, d->mod_portable, 0);
  if (s != XPI_OK) {
    device_destroy(d);
    return s;
  }
  /* The faster tiers are optimizations: where one does not build, the tier below serves. */
  const char *tier = getenv("XPI_XPU_TIER");
  xpu_tier_plan plan;
  xpu_tier_select(&d->dev->info, tier && strcmp(tier, "portable") == 0, &plan);
  if (plan.tuned) {
    if (xpi_ze_module_from_spirv(d->ctx, d->dev, "tuned", xpi_spv_tuned, xpi_spv_tuned_size, flags, &d->mod_tuned) ==
            XPI_OK &&
        create_kernels(d, d->mod_tuned, 1) == XPI_OK)
      d->tuned = 1;
    else {
      xpi_log(2, "xpu:%d: Intel-tuned kernels unavailable (%s); using the portable tier", index, xpi_last_error());
      drop_tier(d, 1, &d->mod_tuned);
    }
  }
  if (plan.dpas && d->tuned) {
    int sg8 = plan.dpas == 8;
    if (xpi_ze_module_from_spirv(d->ctx, d->dev, sg8 ? "dpas8" : "dpas", sg8 ? xpi_spv_dpas8 : xpi_spv_dpas,
                                 sg8 ? xpi_spv_dpas8_size : xpi_spv_dpas_size, flags, &d->mod_dpas) == XPI_OK &&
        create_kernels(d, d->mod_dpas, 2) == XPI_OK)
      d->dpas = plan.dpas;
    else {
      xpi_log(2, "xpu:%d: DPAS GEMM (sub-group %d) unavailable (%s)", index, plan.dpas, xpi_last_error());
      drop_tier(d, 2, &d->mod_dpas);
    }
  } else if (plan.why_not_dpas[0]) {
    xpi_log(2, "xpu:%d: DPAS tier not selected: %s", index, plan.why_not_dpas);
  }
  *out = d;
  return XPI_OK;
}

xpi_status xpu_device_acquire(int index, xpu_device **out) {
  if (index < 0 || index >= XPU_MAX_DEVICES) return xpi_err(XPI_ERR_DEVICE, "xpu:%d: device index out of range", index);
  pthread_mutex_lock(&g_lock);
  xpi_status s = XPI_OK;
  if (!g_devs[index]) s = device_create(index, &g_devs[index]);
  if (s == XPI_OK) {
    g_devs[index]->refs++;
    *out = g_devs[index];
  }
  pthread_mutex_unlock(&g_lock);
  return s;
}

void xpu_device_release(xpu_device *d) {
  if (!d) return;
  pthread_mutex_lock(&g_lock);
  if (--d->refs == 0) {
    g_devs[d->index] = NULL;
    device_destroy(d);
  }
  pthread_mutex_unlock(&g_lock);
}
