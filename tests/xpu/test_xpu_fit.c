/* A model that does not fit on an XPU says so before loading: tinyfortunes (8 MiB of bf16 weights) on a
 * software device of 4 MiB (xpu:0; ZESIM_DEVICES in tests.cmake) fails with XPI_ERR_OUT_OF_MEMORY naming the
 * device, and nothing stays allocated there. A device map over xpu:0 and a 64 MiB xpu:1 splits the layers in
 * proportion to free memory, so it loads (an even split would put the embedding and 2 layers, > 4 MiB, on
 * xpu:0) and generates. */
#include "check.h"
#include "ops/xpu/xpu_backend.h"
#include "runtime/ze/ze_devices.h"

int main(void) {
  const char *skip = getenv("XPI_XPU_TEST_SKIP");
  if (skip && *skip) {
    printf("SKIPPED: %s\n", skip);
    return 77;
  }
  char *dir = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
  uint64_t before = 0, after = 0;
  CHECK_OK(xpi_xpu_free_memory(0, &before));
  CHECK(before > 0 && before <= (8u << 20), "xpu:0 free memory %llu (want the small test device)",
        (unsigned long long)before);
  xpi_model_options o;
  xpi_model_options_default(&o);
  o.device = "xpu:0";
  xpi_model *m = NULL;
  CHECK_ERR(xpi_model_load(dir, &o, &m), XPI_ERR_OUT_OF_MEMORY, "does not fit on xpu:0: the weights for layers 0-3 of 4 need 8.0 MiB");
  printf("message: %s\n", xpi_last_error());
  CHECK(m == NULL, "no model on failure");
  CHECK_OK(xpi_xpu_free_memory(0, &after));
  CHECK(after == before, "free memory %llu after the refused load, %llu before", (unsigned long long)after,
        (unsigned long long)before);
  xpi_model_free(m);

  o.device = "auto";
  o.device_map = "auto";
  m = NULL;
  CHECK_OK(xpi_model_load(dir, &o, &m));
  if (m) {
    xpi_model_info info = {.struct_size = sizeof info};
    CHECK_OK(xpi_model_get_info(m, &info));
    CHECK(strcmp(info.device, "xpu:0-1") == 0, "placed on %s", info.device);
    uint64_t f0 = 0, f1 = 0, t1 = 0;
    CHECK_OK(xpi_xpu_free_memory(0, &f0));
    CHECK_OK(xpi_xpu_free_memory(1, &f1));
    const xpi_ze_device *devs = NULL;
    size_t n = 0;
    CHECK_OK(xpi_ze_devices(&devs, &n));
    if (n > 1) t1 = devs[1].info.total_memory;
    CHECK(before - f0 < (1u << 20) && t1 - f1 >= (8u << 20), "weights on xpu:0 %llu bytes, on xpu:1 %llu bytes",
          (unsigned long long)(before - f0), (unsigned long long)(t1 - f1));
    xpi_request_options ro;
    xpi_request_options_default(&ro);
    ro.n_ctx = 32;
    xpi_request *r = NULL;
    CHECK_OK(xpi_request_create(m, &ro, &r));
    int32_t ids[2] = {313, 2897};
    float *logits = malloc(sizeof(float) * (size_t)info.vocab_size);
    if (r) CHECK_OK(xpi_request_eval(r, ids, 2, 0, logits, (size_t)info.vocab_size));
    xpi_request_free(r);
    free(logits);
  }
  xpi_model_free(m);
  free(dir);
  return xpi_test_done();
}
