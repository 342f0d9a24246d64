/* A model that does not fit on an XPU says so before loading: tinyfortunes (8 MiB of bf16 weights) on a
 * software device of 4 MiB (ZESIM_DEVICES in tests.cmake) fails with XPI_ERR_OUT_OF_MEMORY naming the device,
 * and nothing stays allocated there. */
#include "check.h"
#include "ops/xpu/xpu_backend.h"

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
  free(dir);
  return xpi_test_done();
}
