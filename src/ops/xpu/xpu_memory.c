/* XPU memory: device allocations (relaxed limits above max_alloc_size), host USM for per-step inputs (written
 * and read in place: no copy command), host <-> device copies, scratch, and
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
  while (im->host) { /* host USM the caller did not free */
    xpu_host_buf *h = im->host;
    im->host = h->next;
    im->ze->zeMemFree(im->d->ctx, h->p);
    free(h);
  }
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

void *xpu_alloc_host(xpi_backend *be, size_t bytes) {
  xpu_impl *im = im_of(be);
  ze_host_mem_alloc_desc_t hd = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
  void *p = NULL;
  xpu_host_buf *h = malloc(sizeof *h);
  ze_result_t r = h ? im->ze->zeMemAllocHost(im->d->ctx, &hd, bytes ? bytes : 1, 64, &p) : ZE_RESULT_SUCCESS;
  if (!h || r != ZE_RESULT_SUCCESS) {
    free(h);
    xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: zeMemAllocHost of %zu bytes failed (%s)", be->device, bytes,
            h ? xpu_ze_result_name(r) : "out of host memory");
    return NULL;
  }
  pthread_mutex_lock(&im->lock);
  *h = (xpu_host_buf){p, bytes ? bytes : 1, im->host};
  im->host = h;
  pthread_mutex_unlock(&im->lock);
  return p;
}

/* The host USM buffer holding [p, p + bytes), or NULL (im->lock held). A handful of buffers per graph state. */
static xpu_host_buf *host_buf_of(const xpu_impl *im, const void *p, size_t bytes) {
  for (xpu_host_buf *h = im->host; h; h = h->next)
    if ((const char *)p >= (const char *)h->p && bytes <= h->size &&
        (size_t)((const char *)p - (const char *)h->p) <= h->size - bytes)
      return h;
  return NULL;
}

void xpu_free(xpi_backend *be, void *p) {
  if (!p) return;
  xpu_impl *im = im_of(be);
  if (!xpu_my_rec(im)) xpu_sync(be); /* memory must not be in use by pending commands; errors surface later */
  pthread_mutex_lock(&im->lock);
  for (xpu_host_buf **hp = &im->host; *hp; hp = &(*hp)->next)
    if ((*hp)->p == p) {
      xpu_host_buf *h = *hp;
      *hp = h->next;
      pthread_mutex_unlock(&im->lock);
      free(h);
      im->ze->zeMemFree(im->d->ctx, p);
      return;
    }
  size_t size = usage_take(im->usage, p);
  pthread_mutex_unlock(&im->lock);
  account(im->d->index, -(int64_t)size);
  im->ze->zeMemFree(im->d->ctx, p);
}

/* One copy on the immediate list, waited for: the host buffer may be reused when we return. Where the backend
 * side is host USM, a memcpy once the queued work that may read or write it has completed (nothing to wait for
 * in a decode loop, whose previous read waited already): no command, no wait. */
static xpi_status copy_sync(xpi_backend *be, void *dst, const void *src, size_t bytes, int to_device,
                            const char *what) {
  xpu_impl *im = im_of(be);
  if (xpu_my_rec(im)) return xpi_err(XPI_ERR_INTERNAL, "%s: %s while capturing a graph", be->device, what);
  if (!bytes) return XPI_OK;
  pthread_mutex_lock(&im->lock);
  if (host_buf_of(im, to_device ? dst : src, bytes)) {
    xpi_status s = xpu_order_after_queue(be);
    if (s == XPI_OK) s = xpu_sync_imm(be);
    if (s == XPI_OK) memcpy(dst, src, bytes);
    pthread_mutex_unlock(&im->lock);
    return s;
  }
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
  return copy_sync(be, dst, src, bytes, 1, "host-to-device copy");
}

xpi_status xpu_read(xpi_backend *be, void *dst, const void *src, size_t bytes) {
  xpu_impl *im = im_of(be);
  pthread_mutex_lock(&im->lock);
  im->bytes_read += bytes;
  pthread_mutex_unlock(&im->lock);
  return copy_sync(be, dst, src, bytes, 0, "device-to-host copy");
}

xpi_status xpu_read_uncounted(xpi_backend *be, void *dst, const void *src, size_t bytes) {
  return copy_sync(be, dst, src, bytes, 0, "device-to-host copy");
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
  XPI_TRY(xpu_write(be, im->counters, zero, sizeof zero));
  im->splitk_part = xpu_alloc(be, XPU_SPLITK_PART * sizeof(float)); /* written before read by every launch */
  if (!im->splitk_part)
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: no device memory for %zu bytes of split-K partial sums", be->device,
                   XPU_SPLITK_PART * sizeof(float));
  return XPI_OK;
}
