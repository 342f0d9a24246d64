/* The backend table (src/ops/backend_registry.c): device names resolve to their row, index and canonical name;
 * unknown names list the valid ones; "auto" takes the preferred kind with a visible device; a created backend
 * finds its row again. */
#include "check.h"
#include "ops/backend_registry.h"

int main(void) {
  const xpi_backend_kind *k = NULL;
  int idx = -1;
  char name[32];
  CHECK_OK(xpi_backend_kind_parse("cpu", &k, &idx, name, sizeof name));
  CHECK(k && !strcmp(k->name, "cpu") && idx == 0 && !strcmp(name, "cpu") && !k->planned, "cpu: its row");
  CHECK_ERR(xpi_backend_kind_parse("gpu", &k, &idx, name, sizeof name), XPI_ERR_INVALID_ARGUMENT,
            "unknown device 'gpu' (valid: auto, cpu, xpu, xpu:N)");
  CHECK_ERR(xpi_backend_kind_parse("cpu:1", &k, &idx, name, sizeof name), XPI_ERR_INVALID_ARGUMENT,
            "unknown device 'cpu:1'");
  int n = 0;
  const xpi_backend_kind *rows = xpi_backend_kinds(&n);
  CHECK(n == 2 && !strcmp(rows[0].name, "xpu") && rows[0].indexed && rows[0].planned, "xpu first, then cpu");
  size_t nx = 0, na = 0;
  CHECK_OK(rows[0].count(&nx));
  CHECK_OK(xpi_backend_kind_auto(&k, &na));
  CHECK(k == (nx ? &rows[0] : &rows[1]) && na == (nx ? nx : 1), "auto: the XPUs where visible, else the CPU");
  /* placed sizes: q8 34 bytes a block of 32, q4 18, the last block of a row padded; floats at their size */
  CHECK(rows[1].placed_bytes(3, 40, XPI_DT_Q8) == 3 * 2 * 34 && rows[1].placed_bytes(3, 40, XPI_DT_Q4) == 3 * 2 * 18,
        "q8/q4 placed sizes");
  CHECK(rows[1].placed_bytes(3, 40, XPI_DT_BF16) == 3 * 40 * 2, "bf16 placed size");

  xpi_backend *be = NULL;
  xpi_backend_config bc = {"cpu", 1, 1};
  CHECK_OK(rows[1].create(&bc, &be));
  if (be) {
    CHECK(xpi_backend_kind_of(be) == &rows[1] && xpi_backend_index(be) == 0, "a CPU backend finds its row");
    be->ops->destroy(be);
  }
  return xpi_test_done();
}
