/* safetensors reader on real files: counts, shapes, dtypes and bytes against the Python reference. */
#include <math.h>
#include <stdint.h>

#include "check.h"
#include "io/safetensors.h"

int main(void) {
  const char *src = xpi_test_env("XPI_SOURCE_DIR");
  char *dir = xpi_test_strf("%s/examples/models/tinyfortunes", src);
  xpi_safetensors *st = NULL;
  CHECK_OK(xpi_st_open_dir(dir, &st));
  if (st) {
    CHECK(xpi_st_count(st) == 46, "count %zu", xpi_st_count(st));
    CHECK(xpi_st_total_bytes(st) == 8394240, "total %llu", (unsigned long long)xpi_st_total_bytes(st));
    const xpi_st_tensor *t = xpi_st_find(st, "model.embed_tokens.weight");
    CHECK(t && t->dtype == XPI_DT_BF16 && t->ndim == 2 && t->shape[0] == 4096 && t->shape[1] == 256, "embed");
  }
  xpi_st_close(st);
  free(dir);
  return xpi_test_done();
}
