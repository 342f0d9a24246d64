/* The backend table (backend_registry.h): the XPU row through the XPU seam (runtime/xpu.h: Level Zero, or a
 * CPU-only build's stub that sees no XPU), then the CPU, which is always there. */
#include "ops/backend_registry.h"

#include <stdio.h>
#include <string.h>

#include "core/status.h"
#include "ops/quant_format.h"
#include "runtime/device.h"
#include "ops/backend_xpu.h"

/* Both backends place matrices alike: converted to the dtype's size, or in the q8/q4 block format (quants and
 * half scales; ops/quant_format.h). */
static uint64_t placed_bytes(int64_t rows, int64_t cols, xpi_dtype want) {
  if (want == XPI_DT_Q8 || want == XPI_DT_Q4) {
    const xpi_q_layout l = xpi_q_layout_of(want, rows, cols);
    return l.qbytes + l.dbytes;
  }
  return (uint64_t)rows * (uint64_t)cols * xpi_dtype_size(want);
}

static xpi_status cpu_count(size_t *n) {
  *n = 1;
  return XPI_OK;
}

static const xpi_backend_kind k_kinds[] = {
  {"xpu", 1, 1, xpi_xpu_count, xpi_device_parse_xpu, xpi_backend_xpu_create, xpi_xpu_free_memory, xpi_xpu_check_fit,
   placed_bytes},
  {"cpu", 0, 0, cpu_count, NULL, xpi_backend_cpu_create, NULL, NULL, placed_bytes},
};
#define N_KINDS ((int)(sizeof k_kinds / sizeof k_kinds[0]))

const xpi_backend_kind *xpi_backend_kinds(int *n) {
  *n = N_KINDS;
  return k_kinds;
}

const xpi_backend_kind *xpi_backend_kind_of(const xpi_backend *be) {
  if (!be || !be->ops || !be->ops->name) return NULL;
  for (int i = 0; i < N_KINDS; i++)
    if (!strcmp(be->ops->name, k_kinds[i].name)) return &k_kinds[i];
  return NULL;
}

int xpi_backend_index(const xpi_backend *be) {
  const char *c = be ? strchr(be->device, ':') : NULL;
  int idx = 0;
  return c && sscanf(c + 1, "%d", &idx) == 1 ? idx : 0;
}

xpi_status xpi_backend_kind_parse(const char *dev, const xpi_backend_kind **kind, int *index, char *canon,
                                  size_t cap) {
  for (int i = 0; i < N_KINDS; i++) {
    const xpi_backend_kind *k = &k_kinds[i];
    const size_t nl = strlen(k->name);
    if (strncmp(dev, k->name, nl) || !(dev[nl] == 0 || (k->indexed && dev[nl] == ':'))) continue;
    int idx = 0;
    if (k->indexed) XPI_TRY(k->parse(dev, &idx)); /* its messages name the device */
    if (k->indexed) snprintf(canon, cap, "%s:%d", k->name, idx);
    else snprintf(canon, cap, "%s", k->name);
    *kind = k;
    *index = idx;
    return XPI_OK;
  }
  char valid[128] = "auto";
  size_t o = strlen(valid);
  for (int i = N_KINDS - 1; i >= 0 && o < sizeof valid; i--) { /* least preferred first: "cpu, xpu, xpu:N" */
    const char *nm = k_kinds[i].name;
    if (k_kinds[i].indexed) o += (size_t)snprintf(valid + o, sizeof valid - o, ", %s, %s:N", nm, nm);
    else o += (size_t)snprintf(valid + o, sizeof valid - o, ", %s", nm);
  }
  return xpi_err(XPI_ERR_INVALID_ARGUMENT, "unknown device '%s' (valid: %s)", dev, valid);
}

xpi_status xpi_backend_kind_auto(const xpi_backend_kind **kind, size_t *n) {
  for (int i = 0; i < N_KINDS; i++) {
    XPI_TRY(k_kinds[i].count(n));
    if (*n > 0) {
      *kind = &k_kinds[i];
      return XPI_OK;
    }
  }
  return xpi_err(XPI_ERR_DEVICE, "no device is visible");
}
