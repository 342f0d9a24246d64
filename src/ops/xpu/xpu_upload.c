/* Weight uploads through a copy engine. Level Zero lists a device's engines as command queue groups; a group
 * whose flags have COPY without COMPUTE is a copy engine (Intel discrete GPUs: the blitter, ordinal 1), which
 * moves bytes beside the compute engines. Weights go there in chunks staged through host USM: while the copy
 * engine moves chunk i out of one staging buffer, the host fills the other with chunk i+1 (reading the mapped
 * file: the page faults are the file read). Where the device has no copy-only group the same list is made on
 * the compute group. The host waits for a chunk's event before refilling its buffer and for all of them before
 * returning, so the caller's kernels (conversions) see the bytes and the source may go. */
#include <string.h>

#include "core/status.h"
#include "ops/xpu/xpu_backend.h"
#include "ops/xpu/xpu_internal.h"

/* The first copy-only queue group of the device, or -1. */
static int copy_ordinal(const xpi_ze_api *ze, ze_device_handle_t dev) {
  uint32_t n = 0;
  if (ze->zeDeviceGetCommandQueueGroupProperties(dev, &n, NULL) != ZE_RESULT_SUCCESS || n == 0 || n > 64) return -1;
  ze_command_queue_group_properties_t props[64];
  for (uint32_t i = 0; i < n; i++)
    props[i] = (ze_command_queue_group_properties_t){.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES};
  if (ze->zeDeviceGetCommandQueueGroupProperties(dev, &n, props) != ZE_RESULT_SUCCESS) return -1;
  for (uint32_t i = 0; i < n; i++)
    if ((props[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY) &&
        !(props[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) && props[i].numQueues > 0)
      return (int)i;
  return -1;
}

void xpu_upload_release(xpu_impl *im) {
  xpu_uploader *u = &im->up;
  const xpi_ze_api *ze = im->ze;
  for (int i = 0; i < 2; i++) {
    if (u->busy[i] && u->ev[i]) ze->zeEventHostSynchronize(u->ev[i], UINT64_MAX);
    if (u->ev[i]) ze->zeEventDestroy(u->ev[i]);
    if (u->stage[i]) ze->zeMemFree(im->d->ctx, u->stage[i]);
  }
  if (u->pool) ze->zeEventPoolDestroy(u->pool);
  if (u->list) ze->zeCommandListDestroy(u->list);
  memset(u, 0, sizeof *u);
}

static xpi_status uploader_init(xpi_backend *be, xpu_impl *im) {
  xpu_uploader *u = &im->up;
  const xpi_ze_api *ze = im->ze;
  ze_device_handle_t dev = im->d->dev->device;
  int cord = copy_ordinal(ze, dev);
  u->copy_engine = cord >= 0;
  u->ordinal = cord >= 0 ? (uint32_t)cord : im->ordinal;
  ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, .ordinal = u->ordinal,
                                .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
                                .priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ZE_CHECK(ze->zeCommandListCreateImmediate(im->d->ctx, dev, &qd, &u->list), "zeCommandListCreateImmediate (copy)");
  ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                             .count = 2};
  ZE_CHECK(ze->zeEventPoolCreate(im->d->ctx, &pd, 1, &dev, &u->pool), "zeEventPoolCreate (copy)");
  ze_host_mem_alloc_desc_t hd = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
  for (uint32_t i = 0; i < 2; i++) {
    ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC, .index = i, .signal = ZE_EVENT_SCOPE_FLAG_HOST,
                          .wait = ZE_EVENT_SCOPE_FLAG_HOST};
    ZE_CHECK(ze->zeEventCreate(u->pool, &ed, &u->ev[i]), "zeEventCreate (copy)");
    ZE_CHECK(ze->zeMemAllocHost(im->d->ctx, &hd, XPU_STAGE_BYTES, 64, &u->stage[i]), "zeMemAllocHost (staging)");
  }
  u->ready = 1;
  return XPI_OK;
}

/* Waits for the copy out of stage[i] (im->lock held). */
static xpi_status stage_wait(xpi_backend *be, xpu_uploader *u, int i) {
  if (!u->busy[i]) return XPI_OK;
  const xpi_ze_api *ze = im_of(be)->ze;
  u->busy[i] = 0;
  ZE_CHECK(ze->zeEventHostSynchronize(u->ev[i], UINT64_MAX), "waiting for a weight upload");
  ZE_CHECK(ze->zeEventHostReset(u->ev[i]), "zeEventHostReset");
  return XPI_OK;
}

xpi_status xpu_upload(xpi_backend *be, void *dst, const void *src, size_t bytes) {
  xpu_impl *im = im_of(be);
  if (xpu_my_rec(im)) return xpi_err(XPI_ERR_INTERNAL, "%s: weight upload while capturing a graph", be->device);
  if (!bytes) return XPI_OK;
  pthread_mutex_lock(&im->lock);
  xpu_uploader *u = &im->up;
  xpi_status s = u->ready ? XPI_OK : uploader_init(be, im);
  if (s != XPI_OK) {
    xpu_upload_release(im);
    pthread_mutex_unlock(&im->lock);
    return xpi_err_prefix(s, "%s: setting up weight uploads: ", be->device);
  }
  const char *from = src;
  char *to = dst;
  int i = 0;
  for (size_t off = 0; off < bytes && s == XPI_OK; off += XPU_STAGE_BYTES, i ^= 1) {
    size_t n = bytes - off < XPU_STAGE_BYTES ? bytes - off : XPU_STAGE_BYTES;
    s = stage_wait(be, u, i);
    if (s != XPI_OK) break;
    memcpy(u->stage[i], from + off, n); /* overlaps the copy engine's move of the other buffer */
    ze_result_t r = im->ze->zeCommandListAppendMemoryCopy(u->list, to + off, u->stage[i], n, u->ev[i], 0, NULL);
    if (r != ZE_RESULT_SUCCESS)
      s = xpi_err(XPI_ERR_DEVICE, "%s: zeCommandListAppendMemoryCopy of a weight chunk (%zu bytes) failed (%s)",
                  be->device, n, xpu_ze_result_name(r));
    else
      u->busy[i] = 1;
  }
  for (int k = 0; k < 2; k++) { /* every chunk landed (also after a failure: the staging buffers stay usable) */
    xpi_status w = stage_wait(be, u, k);
    if (s == XPI_OK) s = w;
  }
  pthread_mutex_unlock(&im->lock);
  return s;
}

int xpi_xpu_upload_engine(xpi_backend *be) {
  xpu_impl *im = im_of(be);
  pthread_mutex_lock(&im->lock);
  int r = !im->up.ready ? -1 : im->up.copy_engine ? 1 : 0;
  pthread_mutex_unlock(&im->lock);
  return r;
}
