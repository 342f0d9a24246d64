/* XPU-only entry points beyond ops.h (introspection for tests and device maps). */
#ifndef XPI_XPU_BACKEND_H
#define XPI_XPU_BACKEND_H

#include <stdint.h>
#include "ops/ops.h"
#include "ops/backend_xpu.h" /* the seams: the devices (runtime/xpu.h) and this backend's constructor */

/* Which kernel tier the backend's device uses: "portable", "tuned", "tuned+dpas" or "tuned+dpas8" (sub-group 8). */
const char *xpi_xpu_tier(const xpi_backend *be);


/* Bytes copied device-to-host through read() since the backend was created (tests: the greedy decode step
 * reads back only the token id). */
uint64_t xpi_xpu_bytes_read(xpi_backend *be);

/* Kernel launches submitted through replay() since the backend was created, and the number of replays (tests:
 * the launches of a recorded decode step). */
void xpi_xpu_replayed_launches(xpi_backend *be, uint64_t *launches, uint64_t *replays);

/* Where the backend's weight uploads went: 1 a copy-only queue group (copy engine), 0 the compute group (the
 * device has no copy engine), -1 no upload yet. */
int xpi_xpu_upload_engine(xpi_backend *be);

#endif
