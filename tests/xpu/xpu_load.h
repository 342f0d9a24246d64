/* Model loading for the XPU model tests: 77 (ctest's skip code) when the software device is not in this tree
 * (tests.cmake sets XPI_XPU_TEST_SKIP), 1 on failure (recorded as a failed check), 0 when loaded. */
#ifndef XPI_TEST_XPU_LOAD_H
#define XPI_TEST_XPU_LOAD_H

#include <stdlib.h>
#include "check.h"

static inline int load(const char *dir, const char *device, const char *map, const char *impl, xpi_model **m) {
  const char *skip = getenv("XPI_XPU_TEST_SKIP");
  if (skip && *skip) {
    printf("SKIPPED: %s\n", skip);
    return 77;
  }
  xpi_model_options o;
  xpi_model_options_default(&o);
  o.device = device;
  o.device_map = map;
  o.attn_implementation = impl;
  o.n_threads = 2;
  *m = NULL;
  xpi_status s = xpi_model_load(dir, &o, m);
  CHECK(s == XPI_OK, "loading %s on %s%s%s: %s", dir, device, map ? " map " : "", map ? map : "", xpi_last_error());
  return s == XPI_OK ? 0 : 1;
}

#endif
