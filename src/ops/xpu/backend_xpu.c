/* The XPU backend: ops.h over Level Zero. Ordinary ops are appended to an immediate command list; between
 * capture_begin and capture_end they are recorded into a regular command list instead, which replay submits
 * to the queue ("XPU graph"). Kernels read positions, ids and tables from host USM (alloc_host) that the host
 * writes in place, so a recording replays with new values and a decode step is one submission plus the wait
 * of its one small read. The host waits only in read(), sync() and write() (whose host buffer the caller may
 * reuse at once), and where the two submission paths must be ordered. Weights go up on the copy engine
 * (xpu_upload.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "ops/xpu/xpu_backend.h"
#include "ops/xpu/xpu_internal.h"
#include "runtime/device.h"

/* ------------------------------------------------------------------ ordering and sync */

static xpi_status sync_imm_locked(xpi_backend *be) {
  xpu_impl *im = im_of(be);
  if (!im->imm_pending) return XPI_OK;
  ZE_CHECK(im->ze->zeCommandListAppendSignalEvent(im->imm, im->ev), "zeCommandListAppendSignalEvent");
  ZE_CHECK(im->ze->zeEventHostSynchronize(im->ev, UINT64_MAX), "waiting for the immediate command list");
  ZE_CHECK(im->ze->zeEventHostReset(im->ev), "zeEventHostReset");
  im->imm_pending = 0;
  return XPI_OK;
}

xpi_status xpu_sync_imm(xpi_backend *be) {
  xpu_impl *im = im_of(be);
  pthread_mutex_lock(&im->lock);
  xpi_status s = sync_imm_locked(be);
  pthread_mutex_unlock(&im->lock);
  return s;
}

static xpi_status order_after_queue_locked(xpi_backend *be) {
  xpu_impl *im = im_of(be);
  if (!im->queue_pending) return XPI_OK;
  ZE_CHECK(im->ze->zeCommandQueueSynchronize(im->queue, UINT64_MAX), "waiting for the replayed graph");
  im->queue_pending = 0;
  return XPI_OK;
}

xpi_status xpu_order_after_queue(xpi_backend *be) {
  xpu_impl *im = im_of(be);
  pthread_mutex_lock(&im->lock);
  xpi_status s = order_after_queue_locked(be);
  pthread_mutex_unlock(&im->lock);
  return s;
}

xpi_status xpu_sync(xpi_backend *be) {
  xpu_impl *im = im_of(be);
  pthread_mutex_lock(&im->lock);
  xpi_status s = order_after_queue_locked(be);
  if (s == XPI_OK) s = sync_imm_locked(be);
  pthread_mutex_unlock(&im->lock);
  return s;
}

static xpi_status xpu_sync_op(xpi_backend *be) {
  if (xpu_my_rec(im_of(be))) return xpi_err(XPI_ERR_INTERNAL, "%s: sync while capturing a graph", be->device);
  return xpu_sync(be);
}

xpi_status xpu_launch(xpi_backend *be, xpu_kid kid, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t lx, uint32_t ly,
                      uint32_t lz, const xpu_arg *args, int nargs) {
  xpu_impl *im = im_of(be);
  xpu_device *d = im->d;
  ze_kernel_handle_t k = d->k[kid];
  if (!k) return xpi_err(XPI_ERR_INTERNAL, "%s: kernel %s not available", be->device, xpu_kernel_name(kid));
  if (gx == 0 || gy == 0 || gz == 0) return XPI_OK; /* empty op */
  if (im->perf) XPI_TRY(xpu_perf_count(be, kid, gx, gy, gz, args, nargs));
  ze_command_list_handle_t rec = xpu_my_rec(im);
  pthread_mutex_lock(&im->lock);
  if (!rec) {
    xpi_status s = order_after_queue_locked(be);
    if (s != XPI_OK) {
      pthread_mutex_unlock(&im->lock);
      return s;
    }
  }
  ze_command_list_handle_t list = rec ? rec : im->imm;
  const xpi_ze_api *ze = im->ze;
  ze_result_t r = ZE_RESULT_SUCCESS;
  const char *what = "zeKernelSetGroupSize";
  pthread_mutex_lock(&d->lock); /* kernel arguments live in the shared kernel object until appended */
  r = ze->zeKernelSetGroupSize(k, lx, ly, lz);
  for (int i = 0; r == ZE_RESULT_SUCCESS && i < nargs; i++) {
    what = "zeKernelSetArgumentValue";
    r = ze->zeKernelSetArgumentValue(k, (uint32_t)i, args[i].size, args[i].value);
  }
  if (r == ZE_RESULT_SUCCESS) {
    ze_group_count_t gc = {gx, gy, gz};
    what = "zeCommandListAppendLaunchKernel";
    r = ze->zeCommandListAppendLaunchKernel(list, k, &gc, NULL, 0, NULL);
  }
  pthread_mutex_unlock(&d->lock);
  if (r == ZE_RESULT_SUCCESS && !im->in_order) { /* a list without the in-order flag may overlap launches */
    what = "zeCommandListAppendBarrier";
    r = ze->zeCommandListAppendBarrier(list, NULL, 0, NULL);
  }
  if (r == ZE_RESULT_SUCCESS && !rec) im->imm_pending = 1;
  if (r == ZE_RESULT_SUCCESS && rec) im->rec_launches++;
  pthread_mutex_unlock(&im->lock);
  if (r != ZE_RESULT_SUCCESS)
    return xpi_err(XPI_ERR_DEVICE, "%s: %s for kernel %s failed (%s)", be->device, what, xpu_kernel_name(kid),
                   xpu_ze_result_name(r));
  return XPI_OK;
}

/* ------------------------------------------------------------------ weights */

static int is_float(xpi_dtype dt) { return dt == XPI_DT_F32 || dt == XPI_DT_F16 || dt == XPI_DT_BF16; }

xpi_status xpu_weight_alloc(xpi_backend *be, size_t bytes, int64_t rows, int64_t cols, xpi_dtype dt, void **buf) {
  *buf = xpu_alloc(be, bytes);
  if (*buf) return XPI_OK;
  return xpi_err_prefix(XPI_ERR_OUT_OF_MEMORY, "placing a [%lld, %lld] %s weight: ", (long long)rows, (long long)cols,
                        xpi_dtype_name(dt));
}

xpi_status xpu_weight_placed(xpi_backend *be, xpi_status s, void *buf) {
  if (s != XPI_OK) xpu_free(be, buf);
  return s;
}

static xpi_status xpu_weight_create(xpi_backend *be, xpi_weight *w, const void *src, xpi_dtype src_dtype, int64_t rows,
                                    int64_t cols, xpi_dtype want) {
  memset(w, 0, sizeof *w);
  if (xpu_my_rec(im_of(be))) return xpi_err(XPI_ERR_INTERNAL, "%s: weight upload while capturing a graph", be->device);
  if (want == XPI_DT_Q8 || want == XPI_DT_Q4) /* the CPU's block formats, quantized on the host (xpu_quant.c) */
    return xpu_quant_weight_create(be, w, src, src_dtype, rows, cols, want);
  if (!is_float(src_dtype) || !is_float(want))
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: weights of dtype %s -> %s are not supported (f32, f16, bf16)",
                   be->device, xpi_dtype_name(src_dtype), xpi_dtype_name(want));
  if (rows <= 0 || cols <= 0 || rows > INT64_MAX / cols || rows * cols > (int64_t)(SIZE_MAX / 4))
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "%s: bad weight shape [%lld, %lld]", be->device, (long long)rows,
                   (long long)cols);
  size_t count = (size_t)(rows * cols);
  size_t bytes = count * xpi_dtype_size(want);
  void *buf = NULL;
  XPI_TRY(xpu_weight_alloc(be, bytes, rows, cols, want, &buf));
  xpi_status s;
  if (want == src_dtype) { /* bf16/f16 weights stay as they are */
    s = xpu_upload(be, buf, src, bytes);
  } else { /* upload as stored, convert on the device */
    void *tmp = xpu_alloc(be, count * xpi_dtype_size(src_dtype));
    if (!tmp) {
      xpu_free(be, buf);
      return XPI_ERR_OUT_OF_MEMORY;
    }
    s = xpu_upload(be, tmp, src, count * xpi_dtype_size(src_dtype));
    if (s == XPI_OK) s = xpu_convert(be, buf, want, tmp, src_dtype, count);
    if (s == XPI_OK) s = xpu_sync(be);
    xpu_free(be, tmp);
  }
  XPI_TRY(xpu_weight_placed(be, s, buf));
  w->dtype = want;
  w->rows = rows;
  w->cols = cols;
  w->data = buf;
  w->owned = buf;
  w->bytes = bytes;
  return XPI_OK;
}

static void xpu_weight_free(xpi_backend *be, xpi_weight *w) {
  if (!w) return;
  xpu_free(be, w->owned);
  memset(w, 0, sizeof *w);
}

/* ------------------------------------------------------------------ KV cache */

static xpi_status xpu_kv_create(xpi_backend *be, int32_t n_layers, int32_t n_blocks, int32_t block_size, int32_t hk,
                                int32_t hd, xpi_dtype dtype, xpi_kv **out) {
  *out = NULL;
  if (!is_float(dtype))
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: KV cache dtype %s is not supported", be->device, xpi_dtype_name(dtype));
  if (n_layers <= 0 || n_blocks <= 0 || hk <= 0 || hd <= 0 || block_size <= 0 || block_size > (1 << 16) ||
      (block_size & (block_size - 1)))
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "%s: bad KV cache shape (block size %d must be a power of two)",
                   be->device, block_size);
  size_t per = (size_t)block_size * (size_t)hk * (size_t)hd; /* each factor < 2^31: no overflow on 64-bit */
  if ((size_t)n_blocks > SIZE_MAX / 8 / per || (size_t)n_layers > SIZE_MAX / 8 / per / (size_t)n_blocks)
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: KV cache size overflows", be->device);
  size_t bytes = (size_t)n_layers * (size_t)n_blocks * per * xpi_dtype_size(dtype);
  xpi_kv *kv = calloc(1, sizeof *kv);
  if (!kv) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: out of host memory", be->device);
  *kv = (xpi_kv){dtype, n_layers, n_blocks, block_size, 0, hk, hd, NULL, NULL};
  while ((1 << kv->block_shift) < block_size) kv->block_shift++;
  kv->k = xpu_alloc(be, bytes);
  kv->v = kv->k ? xpu_alloc(be, bytes) : NULL;
  if (!kv->v) {
    xpu_free(be, kv->k);
    free(kv);
    return xpi_err_prefix(XPI_ERR_OUT_OF_MEMORY, "allocating the KV cache (2 x %zu bytes): ", bytes);
  }
  *out = kv;
  return XPI_OK;
}

static void xpu_kv_free(xpi_backend *be, xpi_kv *kv) {
  if (!kv) return;
  xpu_free(be, kv->k);
  xpu_free(be, kv->v);
  free(kv);
}

/* ------------------------------------------------------------------ XPU graph */

/* A recording: its command list and how many kernel launches it holds. */
typedef struct xpu_graph {
  ze_command_list_handle_t list;
  uint64_t launches;
} xpu_graph;

static xpi_status xpu_capture_begin(xpi_backend *be) {
  xpu_impl *im = im_of(be);
  if (xpu_my_rec(im)) return xpi_err(XPI_ERR_INTERNAL, "%s: capture_begin while already capturing", be->device);
  pthread_mutex_lock(&im->cap_lock); /* one recording at a time; other threads' ops go on meanwhile */
  ze_command_list_desc_t ld = {.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, .commandQueueGroupOrdinal = im->ordinal,
                               .flags = im->in_order ? XPI_ZE_COMMAND_LIST_FLAG_IN_ORDER : 0};
  ze_command_list_handle_t list = NULL;
  ze_result_t r = im->ze->zeCommandListCreate(im->d->ctx, im->d->dev->device, &ld, &list);
  if (r != ZE_RESULT_SUCCESS) {
    pthread_mutex_unlock(&im->cap_lock);
    return xpi_err(XPI_ERR_DEVICE, "%s: zeCommandListCreate failed (%s)", be->device, xpu_ze_result_name(r));
  }
  pthread_mutex_lock(&im->lock);
  im->rec_owner = pthread_self();
  im->rec = list;
  im->rec_launches = 0;
  pthread_mutex_unlock(&im->lock);
  return XPI_OK;
}

static xpi_status xpu_capture_end(xpi_backend *be, void **graph) {
  xpu_impl *im = im_of(be);
  *graph = NULL;
  ze_command_list_handle_t list = xpu_my_rec(im);
  if (!list) return xpi_err(XPI_ERR_INTERNAL, "%s: capture_end without capture_begin", be->device);
  pthread_mutex_lock(&im->lock);
  im->rec = NULL;
  uint64_t launches = im->rec_launches;
  pthread_mutex_unlock(&im->lock);
  pthread_mutex_unlock(&im->cap_lock);
  ze_result_t r = im->ze->zeCommandListClose(list);
  xpu_graph *g = r == ZE_RESULT_SUCCESS ? malloc(sizeof *g) : NULL;
  if (!g) {
    im->ze->zeCommandListDestroy(list);
    if (r == ZE_RESULT_SUCCESS) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: out of memory", be->device);
    return xpi_err(XPI_ERR_DEVICE, "%s: zeCommandListClose failed (%s)", be->device, xpu_ze_result_name(r));
  }
  g->list = list;
  g->launches = launches;
  *graph = g;
  return XPI_OK;
}

static xpi_status xpu_replay(xpi_backend *be, void *graph) {
  xpu_impl *im = im_of(be);
  if (xpu_my_rec(im)) return xpi_err(XPI_ERR_INTERNAL, "%s: replay while capturing", be->device);
  xpu_graph *g = graph;
  ze_command_list_handle_t list = g->list;
  pthread_mutex_lock(&im->lock);
  xpi_status s = sync_imm_locked(be); /* inputs written through the immediate list must have landed */
  ze_result_t r = ZE_RESULT_SUCCESS;
  if (s == XPI_OK) r = im->ze->zeCommandQueueExecuteCommandLists(im->queue, 1, &list, NULL);
  if (s == XPI_OK && r == ZE_RESULT_SUCCESS) {
    im->queue_pending = 1;
    im->replayed_launches += g->launches;
    im->replays++;
  }
  pthread_mutex_unlock(&im->lock);
  if (s == XPI_OK && r != ZE_RESULT_SUCCESS)
    s = xpi_err(XPI_ERR_DEVICE, "%s: zeCommandQueueExecuteCommandLists failed (%s)", be->device, xpu_ze_result_name(r));
  return s;
}

static void xpu_graph_free(xpi_backend *be, void *graph) {
  if (!graph) return;
  xpu_impl *im = im_of(be);
  xpu_order_after_queue(be);
  im->ze->zeCommandListDestroy(((xpu_graph *)graph)->list);
  free(graph);
}

/* ------------------------------------------------------------------ create / destroy */

static void xpu_destroy(xpi_backend *be) {
  if (!be) return;
  xpu_impl *im = im_of(be);
  if (im) {
    const xpi_ze_api *ze = im->ze;
    if (im->rec) ze->zeCommandListDestroy(im->rec); /* destroyed mid-recording: the owner's error path */
    im->rec = NULL;
    if (im->imm) xpu_sync(be);
    xpu_upload_release(im);
    xpu_free(be, im->scratch);
    xpu_free(be, im->partials);
    xpu_free(be, im->counters);
    xpu_free(be, im->splitk_part);
    while (im->retired) {
      xpu_retired *r = im->retired;
      im->retired = r->next;
      xpu_free(be, r->p);
      free(r);
    }
    xpu_usage_release(im);
    if (im->ev) ze->zeEventDestroy(im->ev);
    if (im->evpool) ze->zeEventPoolDestroy(im->evpool);
    if (im->imm) ze->zeCommandListDestroy(im->imm);
    if (im->queue) ze->zeCommandQueueDestroy(im->queue);
    xpu_device_release(im->d);
    pthread_mutex_destroy(&im->lock);
    pthread_mutex_destroy(&im->cap_lock);
    free(im);
  }
  free(be);
}

static xpi_status xpu_free_memory_op(xpi_backend *be, uint64_t *bytes) {
  return xpi_xpu_free_memory(im_of(be)->d->index, bytes);
}

static const xpi_backend_ops k_xpu_ops = {
  .name = "xpu",
  .destroy = xpu_destroy,
  .alloc = xpu_alloc,
  .alloc_host = xpu_alloc_host,
  .free = xpu_free,
  .write = xpu_write,
  .read = xpu_read,
  .weight_create = xpu_weight_create,
  .weight_free = xpu_weight_free,
  .kv_create = xpu_kv_create,
  .kv_free = xpu_kv_free,
  .embed = xpu_embed,
  .rmsnorm = xpu_rmsnorm,
  .matmul = xpu_matmul,
  .rope = xpu_rope,
  .attention = xpu_attention,
  .swiglu = xpu_swiglu,
  .geglu = xpu_geglu,
  .softcap = xpu_softcap,
  .scale = xpu_scale,
  .add = xpu_add,
  .argmax = xpu_argmax,
  .topk = xpu_topk,
  .moe_route = xpu_moe_route,
  .moe_matmul = xpu_moe_matmul,
  .moe_combine = xpu_moe_combine,
  .capture_begin = xpu_capture_begin,
  .capture_end = xpu_capture_end,
  .replay = xpu_replay,
  .graph_free = xpu_graph_free,
  .sync = xpu_sync_op,
  .free_memory = xpu_free_memory_op,
  .supports = xpu_supports,
  .matmul_multi = xpu_matmul_multi,
  .matmul_glu = xpu_matmul_glu,
  .matmul_add = xpu_matmul_add,
};

/* The compute queue group of the device (ordinal 0 where the driver does not say). */
static uint32_t compute_ordinal(const xpi_ze_api *ze, ze_device_handle_t dev) {
  uint32_t n = 0;
  if (ze->zeDeviceGetCommandQueueGroupProperties(dev, &n, NULL) != ZE_RESULT_SUCCESS || n == 0 || n > 64) return 0;
  ze_command_queue_group_properties_t props[64];
  for (uint32_t i = 0; i < n; i++) props[i] = (ze_command_queue_group_properties_t){.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES};
  if (ze->zeDeviceGetCommandQueueGroupProperties(dev, &n, props) != ZE_RESULT_SUCCESS) return 0;
  for (uint32_t i = 0; i < n; i++)
    if (props[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) return i;
  return 0;
}

static xpi_status xpu_init(xpi_backend *be, xpu_impl *im) {
  const xpi_ze_api *ze = im->ze;
  ze_device_handle_t dev = im->d->dev->device;
  uint32_t ord = compute_ordinal(ze, dev);
  im->ordinal = ord;
  ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, .ordinal = ord,
                                .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
                                .priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ZE_CHECK(ze->zeCommandQueueCreate(im->d->ctx, dev, &qd, &im->queue), "zeCommandQueueCreate");
  /* In-order lists (Level Zero 1.7) keep the ops' order without a barrier after every launch (hundreds per decode
   * step); the recorded lists get the same flag in capture_begin. */
  im->in_order = im->d->dev->in_order_lists;
  if (im->in_order) qd.flags |= XPI_ZE_COMMAND_QUEUE_FLAG_IN_ORDER;
  ZE_CHECK(ze->zeCommandListCreateImmediate(im->d->ctx, dev, &qd, &im->imm), "zeCommandListCreateImmediate");
  ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                             .count = 1};
  ZE_CHECK(ze->zeEventPoolCreate(im->d->ctx, &pd, 1, &dev, &im->evpool), "zeEventPoolCreate");
  ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC, .index = 0, .signal = ZE_EVENT_SCOPE_FLAG_HOST,
                        .wait = ZE_EVENT_SCOPE_FLAG_HOST};
  ZE_CHECK(ze->zeEventCreate(im->evpool, &ed, &im->ev), "zeEventCreate");
  return xpu_counters_init(be);
}

xpi_status xpi_backend_xpu_create(const xpi_backend_config *cfg, xpi_backend **out) {
  *out = NULL;
  int index = 0;
  XPI_TRY(xpi_device_parse_xpu(cfg && cfg->device ? cfg->device : "xpu", &index));
  xpi_backend *be = calloc(1, sizeof *be);
  xpu_impl *im = calloc(1, sizeof *im);
  if (!be || !im) {
    free(be);
    free(im);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "xpu:%d: out of host memory", index);
  }
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&im->lock, &ma);
  pthread_mutexattr_destroy(&ma);
  pthread_mutex_init(&im->cap_lock, NULL);
  be->ops = &k_xpu_ops;
  be->impl = im;
  be->use_kernels = cfg ? cfg->use_kernels : 1;
  snprintf(be->device, sizeof be->device, "xpu:%d", index);
  xpi_status s = xpu_device_acquire(index, &im->d);
  if (s != XPI_OK) {
    pthread_mutex_destroy(&im->lock);
    pthread_mutex_destroy(&im->cap_lock);
    free(im);
    be->impl = NULL;
    free(be);
    return s;
  }
  im->ze = im->d->ze;
  s = xpu_init(be, im);
  if (s != XPI_OK) {
    xpu_destroy(be);
    return s;
  }
  *out = be;
  return XPI_OK;
}

const char *xpi_xpu_tier(const xpi_backend *be) {
  const xpu_device *d = im_of(be)->d;
  return d->dpas == 8 ? "tuned+dpas8" : d->dpas ? "tuned+dpas" : d->tuned ? "tuned" : "portable";
}

uint64_t xpi_xpu_bytes_read(xpi_backend *be) {
  xpu_impl *im = im_of(be);
  pthread_mutex_lock(&im->lock);
  uint64_t n = im->bytes_read;
  pthread_mutex_unlock(&im->lock);
  return n;
}

void xpi_xpu_replayed_launches(xpi_backend *be, uint64_t *launches, uint64_t *replays) {
  xpu_impl *im = im_of(be);
  pthread_mutex_lock(&im->lock);
  *launches = im->replayed_launches;
  *replays = im->replays;
  pthread_mutex_unlock(&im->lock);
}
