/* XPU memory: device allocations (relaxed limits above max_alloc_size), host <-> device copies, scratch, and
 * per-device accounting of what this process holds, which gives the free memory a device map splits by
 * (Level Zero 1.4 reports no usage without sysman). */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "ops/xpu/xpu_backend.h"
#include "ops/xpu/xpu_internal.h"
#include "runtime/ze/ze_memory.h"

#define XPU_MAX_DEV 64
static uint64_t g_used[XPU_MAX_DEV]; /* bytes allocated on xpu:N by every backend of the process */
static pthread_mutex_t g_used_lock = PTHREAD_MUTEX_INITIALIZER;

/* Live allocations of one backend: an open-addressing table pointer -> size. */
typedef struct xpu_usage {
  void **ptr;
  size_t *size;
  size_t cap, count;
} xpu_usage;

static size_t slot_of(const xpu_usage *u, const void *p) {
  size_t h = ((uintptr_t)p >> 6) * 0x9e3779b97f4a7c15ull;
  return h & (u->cap - 1);
}

static void account(int index, int64_t delta) {
  if (index < 0 || index >= XPU_MAX_DEV) return;
  pthread_mutex_lock(&g_used_lock);
  g_used[index] += (uint64_t)delta;
  pthread_mutex_unlock(&g_used_lock);
}

static int usage_put(xpu_usage *u, void *p, size_t size);

static int usage_grow(xpu_usage *u) {
  xpu_usage n = {calloc(u->cap ? u->cap * 2 : 64, sizeof(void *)), calloc(u->cap ? u->cap * 2 : 64, sizeof(size_t)),
                 u->cap ? u->cap * 2 : 64, 0};
  if (!n.ptr || !n.size) {
    free(n.ptr);
    free(n.size);
    return 0;
  }
  for (size_t i = 0; i < u->cap; i++)
    if (u->ptr[i]) usage_put(&n, u->ptr[i], u->size[i]);
  free(u->ptr);
  free(u->size);
  *u = n;
  return 1;
}

static int usage_put(xpu_usage *u, void *p, size_t size) {
  if ((u->count + 1) * 2 > u->cap && !usage_grow(u)) return 0;
  size_t i = slot_of(u, p);
  while (u->ptr[i]) i = (i + 1) & (u->cap - 1);
  u->ptr[i] = p;
  u->size[i] = size;
  u->count++;
  return 1;
}

/* Removes p; returns its size (0 when unknown). Backward-shift deletion keeps probe chains intact. */
static size_t usage_take(xpu_usage *u, const void *p) {
  if (!u || !u->cap) return 0;
  size_t i = slot_of(u, p);
  while (u->ptr[i] && u->ptr[i] != p) i = (i + 1) & (u->cap - 1);
  if (!u->ptr[i]) return 0;
  size_t size = u->size[i];
  u->ptr[i] = NULL;
  u->count--;
  for (size_t j = (i + 1) & (u->cap - 1); u->ptr[j]; j = (j + 1) & (u->cap - 1)) {
    void *q = u->ptr[j];
    size_t qs = u->size[j];
    u->ptr[j] = NULL;
    u->count--;
    usage_put(u, q, qs); /* cannot grow: count only went down */
  }
  return size;
}

void xpu_usage_release(xpu_impl *im) {
  xpu_usage *u = im->usage;
  if (!u) return;
  for (size_t i = 0; i < u->cap; i++)
    if (u->ptr[i]) { /* leaked by the caller: give it back with the backend */
      im->ze->zeMemFree(im->d->ctx, u->ptr[i]);
      account(im->d->index, -(int64_t)u->size[i]);
    }
  free(u->ptr);
  free(u->size);
  free(u);
  im->usage = NULL;
}

xpi_status xpi_xpu_free_memory(int index, uint64_t *bytes) {
  const xpi_ze_device *devs = NULL;
  size_t n = 0;
  *bytes = 0;
  XPI_TRY(xpi_ze_devices(&devs, &n));
  if (index < 0 || (size_t)index >= n || index >= XPU_MAX_DEV)
    return xpi_err(XPI_ERR_DEVICE, "xpu:%d does not exist (%zu XPU device(s) visible)", index, n);
  pthread_mutex_lock(&g_used_lock);
  uint64_t used = g_used[index], total = devs[index].info.total_memory;
  pthread_mutex_unlock(&g_used_lock);
  *bytes = used < total ? total - used : 0;
  return XPI_OK;
}

xpi_status xpi_xpu_check_fit(int index, uint64_t need, const char *what) {
  uint64_t avail = 0;
  XPI_TRY(xpi_xpu_free_memory(index, &avail));
  if (need > avail)
    return xpi_err(XPI_ERR_OUT_OF_MEMORY,
                   "the model does not fit on xpu:%d: %s need %.1f MiB, the device has %.1f MiB free; use a smaller "
                   "dtype (--dtype bf16), a device map over more XPUs (--device-map auto), or the CPU",
                   index, what, (double)need / 1048576.0, (double)avail / 1048576.0);
  return XPI_OK;
}


void *xpu_alloc(xpi_backend *be, size_t bytes) {
  xpu_impl *im = im_of(be);
  size_t sz = bytes ? bytes : 1;
  void *p = NULL; /* relaxed limits above max_alloc_size where the driver allows, else a clear error */
  if (xpi_ze_alloc_device(im->d->ctx, im->d->dev, sz, 64, &p) != XPI_OK) return NULL;
  pthread_mutex_lock(&im->lock);
  if (!im->usage) im->usage = calloc(1, sizeof *im->usage);
  int ok = im->usage && usage_put(im->usage, p, sz);
  pthread_mutex_unlock(&im->lock);
  if (!ok) {
    im->ze->zeMemFree(im->d->ctx, p);
    xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: out of host memory", be->device);
    return NULL;
  }
  account(im->d->index, (int64_t)sz);
  return p;
}

void xpu_free(xpi_backend *be, void *p) {
  if (!p) return;
  xpu_impl *im = im_of(be);
  if (!xpu_my_rec(im)) xpu_sync(be); /* memory must not be in use by pending commands; errors surface later */
  pthread_mutex_lock(&im->lock);
  size_t size = usage_take(im->usage, p);
  pthread_mutex_unlock(&im->lock);
  account(im->d->index, -(int64_t)size);
  im->ze->zeMemFree(im->d->ctx, p);
}

/* One copy on the immediate list, waited for: the host buffer may be reused when we return. */
static xpi_status copy_sync(xpi_backend *be, void *dst, const void *src, size_t bytes, const char *what) {
  xpu_impl *im = im_of(be);
  if (xpu_my_rec(im)) return xpi_err(XPI_ERR_INTERNAL, "%s: %s while capturing a graph", be->device, what);
  if (!bytes) return XPI_OK;
  pthread_mutex_lock(&im->lock);
  xpi_status s = xpu_order_after_queue(be); /* a replay may write what we read, or read what we overwrite */
  ze_result_t r = ZE_RESULT_SUCCESS;
  if (s == XPI_OK) r = im->ze->zeCommandListAppendMemoryCopy(im->imm, dst, src, bytes, NULL, 0, NULL);
  if (s == XPI_OK && r == ZE_RESULT_SUCCESS) {
    im->imm_pending = 1;
    s = xpu_sync_imm(be);
  }
  pthread_mutex_unlock(&im->lock);
  if (s == XPI_OK && r != ZE_RESULT_SUCCESS)
    s = xpi_err(XPI_ERR_DEVICE, "%s: %s of %zu bytes failed (%s)", be->device, what, bytes, xpu_ze_result_name(r));
  return s;
}

xpi_status xpu_write(xpi_backend *be, void *dst, const void *src, size_t bytes) {
  return copy_sync(be, dst, src, bytes, "host-to-device copy");
}

xpi_status xpu_read(xpi_backend *be, void *dst, const void *src, size_t bytes) {
  xpu_impl *im = im_of(be);
  pthread_mutex_lock(&im->lock);
  im->bytes_read += bytes;
  pthread_mutex_unlock(&im->lock);
  return copy_sync(be, dst, src, bytes, "device-to-host copy");
}

xpi_status xpu_read_uncounted(xpi_backend *be, void *dst, const void *src, size_t bytes) {
  return copy_sync(be, dst, src, bytes, "device-to-host copy");
}

/* Grows *buf (of *have bytes) to at least bytes; the replaced buffer is kept until the backend goes. */
static xpi_status grow(xpi_backend *be, void **buf, size_t *have, size_t bytes, void **out) {
  xpu_impl *im = im_of(be);
  xpi_status s = XPI_OK;
  pthread_mutex_lock(&im->lock);
  if (*have < bytes) {
    size_t want = bytes + bytes / 2;
    void *p = xpu_alloc(be, want);
    xpu_retired *r = p && *buf ? malloc(sizeof *r) : NULL;
    if (!p || (*buf && !r)) {
      xpu_free(be, p);
      s = p ? xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: out of host memory", be->device) : XPI_ERR_OUT_OF_MEMORY;
    } else {
      if (r) { /* recorded graphs and other threads' queued ops may use the old buffer: freed with the backend */
        r->p = *buf;
        r->next = im->retired;
        im->retired = r;
      }
      *buf = p;
      *have = want;
    }
  }
  *out = *buf;
  pthread_mutex_unlock(&im->lock);
  return s;
}

xpi_status xpu_scratch(xpi_backend *be, size_t bytes, void **out) {
  xpu_impl *im = im_of(be);
  return grow(be, &im->scratch, &im->scratch_bytes, bytes, out);
}

xpi_status xpu_partials(xpi_backend *be, size_t bytes, void **out) {
  xpu_impl *im = im_of(be);
  return grow(be, &im->partials, &im->partials_bytes, bytes, out);
}

xpi_status xpu_counters_init(xpi_backend *be) {
  xpu_impl *im = im_of(be);
  static const int32_t zero[XPU_COUNTERS];
  im->counters = xpu_alloc(be, sizeof zero);
  if (!im->counters) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: no device memory for %zu bytes of split counters",
                                    be->device, sizeof zero);
  return xpu_write(be, im->counters, zero, sizeof zero);
}
