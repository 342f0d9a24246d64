/* The backend kinds the library can place a model on, one row each: how a device of the kind is named, counted,
 * created and sized. Device names ("cpu", "xpu", "xpu:N", and "auto" for the preferred visible kind) are resolved
 * here, so a new backend is one more row (backend_registry.c) and its constructor. What a created backend can run
 * is its own to say (ops.h: supports, asked through xpi_backend_supports). */
#ifndef XPI_OPS_BACKEND_REGISTRY_H
#define XPI_OPS_BACKEND_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "ops/ops.h"

typedef struct xpi_backend_kind {
  const char *name;  /* "cpu", "xpu": the ops table's name and the device names' stem */
  int indexed;       /* devices are numbered: "name" (the first) or "name:N"; else the one device is "name" */
  int planned;       /* the load plans this kind's device memory (weights, KV pools, step buffers) before any
                      * upload and places the layers by the plan (model/placement.c) */
  /* Devices of this kind visible now (the CPU: 1). */
  xpi_status (*count)(size_t *n);
  /* An indexed kind's device name -> its index, range-checked against the visible devices; the messages name the
   * device and say what is visible. NULL for a kind with one device. */
  xpi_status (*parse)(const char *dev, int *index);
  /* A backend on cfg->device (the canonical name: "cpu", "xpu:N"). */
  xpi_status (*create)(const xpi_backend_config *cfg, xpi_backend **out);
  /* Bytes device `index` can still take, before a backend exists on it (device maps split layers in proportion);
   * NULL: not counted (every such device weighs the same). */
  xpi_status (*free_memory)(int index, uint64_t *bytes);
  /* XPI_ERR_OUT_OF_MEMORY naming the device, `what` and the free memory when need bytes do not fit on device
   * `index`: for checks before anything is uploaded. NULL: not checked (host memory). */
  xpi_status (*check_fit)(int index, uint64_t need, const char *what);
  /* Bytes a [rows, cols] matrix takes once placed as `want` (converted, or in the q8/q4 block format); 0 where
   * the kind keeps it as stored. */
  uint64_t (*placed_bytes)(int64_t rows, int64_t cols, xpi_dtype want);
} xpi_backend_kind;

/* The rows in order of preference ("auto" takes the first with a visible device): *n of them. */
const xpi_backend_kind *xpi_backend_kinds(int *n);
/* The row of a created backend (by its ops' name), or NULL. */
const xpi_backend_kind *xpi_backend_kind_of(const xpi_backend *be);
/* The device index of a created backend (N of "name:N"; 0 for a kind with one device). */
int xpi_backend_index(const xpi_backend *be);
/* A device name (not "auto") -> its row and index, and its canonical name into canon[cap] ("xpu" -> "xpu:0").
 * Unknown names: XPI_ERR_INVALID_ARGUMENT listing the valid ones. */
xpi_status xpi_backend_kind_parse(const char *dev, const xpi_backend_kind **kind, int *index, char *canon,
                                  size_t cap);
/* The preferred kind with a visible device and how many it has ("auto", device_map "auto"). */
xpi_status xpi_backend_kind_auto(const xpi_backend_kind **kind, size_t *n);

#endif
