/* zesim contexts and memory. Device, host and shared allocations are all fine-grained SVM from the OpenCL
 * engine (host memory underneath). Device allocations count against the device's configured memory and are
 * limited to maxMemAllocSize unless ze_relaxed_allocation_limits_exp_desc_t is chained, as on Intel GPUs. */
#include "zesim.h"

#include <stdlib.h>
#include <string.h>

typedef struct zs_context {
  uint32_t magic;
} zs_context;

static zs_alloc *g_allocs;
static size_t g_n_allocs, g_cap_allocs;
static uint64_t g_next_id = 1;

static zs_context *ctx_of(ze_context_handle_t h) {
  zs_context *c = (zs_context *)h;
  return c && c->magic == ZS_MAGIC_CONTEXT ? c : NULL;
}

ze_result_t zs_zeContextCreate(ze_driver_handle_t hd, const ze_context_desc_t *desc, ze_context_handle_t *ph) {
  if ((zs_driver *)hd != &zs_drv) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !ph) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  zs_context *c = calloc(1, sizeof *c);
  if (!c) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  c->magic = ZS_MAGIC_CONTEXT;
  *ph = (ze_context_handle_t)c;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeContextCreateEx(ze_driver_handle_t hd, const ze_context_desc_t *desc, uint32_t n,
                                 ze_device_handle_t *devs, ze_context_handle_t *ph) {
  for (uint32_t i = 0; i < n; i++)
    if (!zs_dev(devs[i])) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return zs_zeContextCreate(hd, desc, ph);
}

ze_result_t zs_zeContextDestroy(ze_context_handle_t h) {
  zs_context *c = ctx_of(h);
  if (!c) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  c->magic = 0;
  free(c);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeContextGetStatus(ze_context_handle_t h) {
  return ctx_of(h) ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

const zs_alloc *zs_alloc_find(const void *p) {
  uintptr_t a = (uintptr_t)p;
  for (size_t i = 0; i < g_n_allocs; i++) {
    uintptr_t b = (uintptr_t)g_allocs[i].ptr;
    if (a >= b && a < b + g_allocs[i].size) return &g_allocs[i];
  }
  return NULL;
}

static int relaxed(const void *pnext) {
  for (const ze_base_desc_t *e = pnext; e; e = e->pNext)
    if (e->stype == ZE_STRUCTURE_TYPE_RELAXED_ALLOCATION_LIMITS_EXP_DESC &&
        (((const ze_relaxed_allocation_limits_exp_desc_t *)e)->flags & ZE_RELAXED_ALLOCATION_LIMITS_EXP_FLAG_MAX_SIZE))
      return 1;
  return 0;
}

static ze_result_t do_alloc(zs_device *d, int is_relaxed, size_t size, size_t align, ze_memory_type_t type, void **pptr) {
  if (!pptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *pptr = NULL;
  if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  if (align & (align - 1)) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  if (align < 64) align = 64;
  if (align > 0x80000000u) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  pthread_mutex_lock(&zs_lock);
  ze_result_t r = ZE_RESULT_SUCCESS;
  if (d) {
    if (size > d->max_alloc && !is_relaxed) r = ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
    else if (size > d->mem_size - d->mem_used) r = ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  }
  if (r == ZE_RESULT_SUCCESS && g_n_allocs == g_cap_allocs) {
    size_t nc = g_cap_allocs ? g_cap_allocs * 2 : 64;
    zs_alloc *na = realloc(g_allocs, nc * sizeof *na);
    if (!na) r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    else {
      g_allocs = na;
      g_cap_allocs = nc;
    }
  }
  if (r == ZE_RESULT_SUCCESS) {
    void *p = clSVMAlloc(zs_cl.ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, size, (cl_uint)align);
    if (!p) {
      r = d ? ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    } else {
      zs_alloc *a = &g_allocs[g_n_allocs++];
      a->ptr = p;
      a->size = size;
      a->type = type;
      a->device = d;
      a->id = g_next_id++;
      if (d && type == ZE_MEMORY_TYPE_DEVICE) d->mem_used += size;
      *pptr = p;
    }
  }
  pthread_mutex_unlock(&zs_lock);
  zs_debug("alloc %zu bytes type %d -> %p (%d)", size, (int)type, *pptr, (int)r);
  return r;
}

ze_result_t zs_zeMemAllocDevice(ze_context_handle_t hc, const ze_device_mem_alloc_desc_t *desc, size_t size,
                                size_t align, ze_device_handle_t hd, void **pptr) {
  if (!ctx_of(hc) || !zs_dev(hd)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  return do_alloc(zs_dev(hd), relaxed(desc->pNext), size, align, ZE_MEMORY_TYPE_DEVICE, pptr);
}

ze_result_t zs_zeMemAllocShared(ze_context_handle_t hc, const ze_device_mem_alloc_desc_t *ddesc,
                                const ze_host_mem_alloc_desc_t *hdesc, size_t size, size_t align,
                                ze_device_handle_t hd, void **pptr) {
  if (!ctx_of(hc)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!ddesc || !hdesc) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (hd && !zs_dev(hd)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  zs_device *d = hd ? zs_dev(hd) : NULL;
  return do_alloc(d, relaxed(ddesc->pNext), size, align, ZE_MEMORY_TYPE_SHARED, pptr);
}

ze_result_t zs_zeMemAllocHost(ze_context_handle_t hc, const ze_host_mem_alloc_desc_t *desc, size_t size, size_t align,
                              void **pptr) {
  if (!ctx_of(hc)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  return do_alloc(NULL, 1, size, align, ZE_MEMORY_TYPE_HOST, pptr);
}

ze_result_t zs_zeMemFree(ze_context_handle_t hc, void *ptr) {
  if (!ctx_of(hc)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!ptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  pthread_mutex_lock(&zs_lock);
  size_t i = 0;
  while (i < g_n_allocs && g_allocs[i].ptr != ptr) i++;
  if (i == g_n_allocs) {
    pthread_mutex_unlock(&zs_lock);
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  /* Work already submitted may still use the memory: the spec says the caller must have synchronized,
   * but finishing the engine first keeps a careless caller from a use-after-free. */
  zs_flush();
  zs_alloc a = g_allocs[i];
  g_allocs[i] = g_allocs[--g_n_allocs];
  if (a.device && a.type == ZE_MEMORY_TYPE_DEVICE) a.device->mem_used -= a.size;
  clSVMFree(zs_cl.ctx, a.ptr);
  pthread_mutex_unlock(&zs_lock);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeMemGetAllocProperties(ze_context_handle_t hc, const void *ptr, ze_memory_allocation_properties_t *p,
                                       ze_device_handle_t *phDevice) {
  if (!ctx_of(hc)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!ptr || !p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  pthread_mutex_lock(&zs_lock);
  const zs_alloc *a = zs_alloc_find(ptr);
  p->type = a ? a->type : ZE_MEMORY_TYPE_UNKNOWN;
  p->id = a ? a->id : 0;
  p->pageSize = a ? 4096 : 0;
  if (phDevice) *phDevice = a ? (ze_device_handle_t)a->device : NULL;
  pthread_mutex_unlock(&zs_lock);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeMemGetAddressRange(ze_context_handle_t hc, const void *ptr, void **pBase, size_t *pSize) {
  if (!ctx_of(hc)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  pthread_mutex_lock(&zs_lock);
  const zs_alloc *a = zs_alloc_find(ptr);
  if (a) {
    if (pBase) *pBase = a->ptr;
    if (pSize) *pSize = a->size;
  }
  pthread_mutex_unlock(&zs_lock);
  return a ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_ARGUMENT;
}
