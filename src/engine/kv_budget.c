/* The default size of an engine's KV pool: half of what each backend has free, in positions. */
#include <stdio.h>
#include <string.h>

#include "core/status.h"
#include "engine/engine_internal.h"
#include "ops/xpu/xpu_backend.h"

/* MemAvailable of /proc/meminfo in bytes (the kernel's estimate of what can be allocated without swapping);
 * 0 when unknown. */
static uint64_t host_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
  fclose(f);
  return (uint64_t)kb * 1024;
}

xpi_status xpi_engine_default_pool_tokens(const xpi_model *m, int64_t *tokens) {
  const xpi_graph *g = &m->graph;
  const xpi_config *c = &m->cfg;
  const uint64_t per_layer = 2ull * (uint64_t)c->n_kv_heads * (uint64_t)c->head_dim * xpi_dtype_size(g->kv_dtype);
  int64_t best = -1;
  for (int d = 0; d < g->n_backends; d++) {
    int32_t nl = g->layer_dev[d + 1] - g->layer_dev[d];
    if (nl <= 0) continue;
    uint64_t avail = 0;
    int idx = -1;
    if (!strcmp(g->backends[d]->ops->name, "xpu") && sscanf(g->backends[d]->device, "xpu:%d", &idx) == 1)
      XPI_TRY(xpi_xpu_free_memory(idx, &avail));
    else
      avail = host_available();
    if (avail == 0) avail = 1ull << 30; /* unknown: 1 GiB */
    int64_t t = (int64_t)(avail / 2 / (per_layer * (uint64_t)nl));
    if (best < 0 || t < best) best = t;
  }
  *tokens = best > 0 ? best : 0;
  return XPI_OK;
}
