/* Device allocations above maxMemAllocSize and module build errors through the runtime helpers, on a zesim
 * device of 64 MiB (maxMemAllocSize 32 MiB) set up by tests.cmake. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "runtime/ze/ze_devices.h"
#include "runtime/ze/ze_loader.h"
#include "runtime/ze/ze_memory.h"

int main(void) {
  const xpi_ze_device *devs;
  size_t n = 0;
  CHECK_OK(xpi_ze_devices(&devs, &n));
  int two = getenv("XPI_TWO_DRIVERS") != NULL; /* a second zesim driver with one more device */
  CHECK(n == (two ? 2u : 1u), "zesim devices: %zu", n);
  if (n < 1) return xpi_test_done();
  const xpi_ze_api *ze = xpi_ze_load(NULL);
  ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
  ze_context_handle_t ctx = NULL;
  CHECK(ze->zeContextCreate(devs[0].driver, &cd, &ctx) == ZE_RESULT_SUCCESS, "context");
  CHECK(devs[0].relaxed_alloc == 1 && devs[0].info.max_alloc_size == 32u << 20, "zesim offers relaxed limits, max %llu",
        (unsigned long long)devs[0].info.max_alloc_size);
  void *small = NULL, *big = NULL, *huge = NULL;
  CHECK_OK(xpi_ze_alloc_device(ctx, &devs[0], 1u << 20, 64, &small));
  /* 40 MiB > maxMemAllocSize: only possible with the relaxed-limits descriptor, which the helper chains. */
  CHECK_OK(xpi_ze_alloc_device(ctx, &devs[0], 40u << 20, 0, &big));
  CHECK(big != NULL, "40 MiB allocation");
  CHECK_ERR(xpi_ze_alloc_device(ctx, &devs[0], 30u << 20, 0, &huge), XPI_ERR_OUT_OF_MEMORY, "zeMemAllocDevice of");
  CHECK(huge == NULL, "failed allocation leaves NULL");
  CHECK_ERR(xpi_ze_alloc_device(ctx, &devs[0], 1024, 3, &huge), XPI_ERR_INVALID_ARGUMENT, "power of two");
  /* A driver without relaxed limits: the helper refuses with the limit in the message. */
  xpi_ze_device strict = devs[0];
  strict.relaxed_alloc = 0;
  CHECK_ERR(xpi_ze_alloc_device(ctx, &strict, 40u << 20, 0, &huge), XPI_ERR_OUT_OF_MEMORY,
            "exceeds the device's maxMemAllocSize of 33554432 bytes");
  if (small) ze->zeMemFree(ctx, small);
  if (big) ze->zeMemFree(ctx, big);

  unsigned char junk[64] = {0x03, 0x02, 0x23, 0x07, 9, 9, 9};
  ze_module_handle_t m = NULL;
  CHECK_ERR(xpi_ze_module_from_spirv(ctx, &devs[0], "junk.spv", junk, sizeof junk, NULL, &m), XPI_ERR_DEVICE,
            "building SPIR-V module junk.spv failed");
  CHECK(strstr(xpi_last_error(), two ? "no build log (the Level Zero loader" : "malformed SPIR-V") != NULL,
        "the build log (or why there is none) is in the message: %s", xpi_last_error());
  CHECK(m == NULL, "no module");
  ze->zeContextDestroy(ctx);
  return xpi_test_done();
}
