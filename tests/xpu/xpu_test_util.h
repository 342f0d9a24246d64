/* Helpers for the XPU tests: a CPU oracle and an XPU backend side by side, buffers on both, comparisons. */
#ifndef XPI_XPU_TEST_UTIL_H
#define XPI_XPU_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops/ops.h"
#include "runtime/xpu.h"

/* Creates the XPU backend, or tells why the test cannot run: returns 77 (ctest SKIP_RETURN_CODE) when the
 * software device is not built into this tree (XPI_XPU_TEST_SKIP set by tests.cmake), else fails. */
static inline int xt_open_xpu(const char *device, xpi_backend **xpu) {
  const char *skip = getenv("XPI_XPU_TEST_SKIP");
  if (skip && *skip) {
    printf("SKIPPED: %s\n", skip);
    return 77;
  }
  xpi_backend_config c = {.device = device, .n_threads = 1, .use_kernels = 1};
  xpi_status s = xpi_backend_xpu_create(&c, xpu);
  CHECK(s == XPI_OK, "xpi_backend_xpu_create(%s): %s", device, xpi_last_error());
  return s == XPI_OK ? 0 : 1;
}

static uint64_t xt_rng = 0x9e3779b97f4a7c15ull;
/* Uniform in [-1, 1). */
static inline float xt_rand(void) {
  xt_rng = xt_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((xt_rng >> 40) & 0xffffff) / (float)(1 << 23) - 1.0f;
}
static inline float *xt_randv(size_t n) {
  float *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = xt_rand();
  return v;
}

/* bytes on the backend holding a copy of host (NULL host: uninitialized). */
static inline void *xt_up(xpi_backend *be, const void *host, size_t bytes) {
  void *p = be->ops->alloc(be, bytes);
  CHECK(p != NULL, "alloc %zu on %s: %s", bytes, be->device, xpi_last_error());
  if (p && host) CHECK_OK(be->ops->write(be, p, host, bytes));
  return p;
}
static inline void xt_down(xpi_backend *be, void *host, const void *dev, size_t bytes) {
  CHECK_OK(be->ops->read(be, host, dev, bytes));
}

/* |a - b| <= atol + rtol * |b| everywhere (b the reference); reports the worst element. */
static inline void xt_close(const char *what, const float *a, const float *b, size_t n, float atol, float rtol) {
  size_t bad = 0, worst = 0;
  double werr = -1;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)a[i] - (double)b[i]);
    double lim = atol + rtol * fabs((double)b[i]);
    if (!(e <= lim)) bad++;
    if (!(e <= werr)) {
      werr = e;
      worst = i;
    }
  }
  CHECK(bad == 0, "%s: %zu of %zu elements differ; worst [%zu] xpu %.9g cpu %.9g", what, bad, n, worst,
        (double)a[worst], (double)b[worst]);
}

#endif
