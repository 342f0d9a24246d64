/* Public device list (include/xpuinfer.h): the XPUs of discovery, then the CPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"
#include "runtime/xpu.h"

struct xpi_device_list {
  size_t n_xpu;
  xpi_device_info *infos; /* n_xpu XPUs, then the CPU */
  char summary[2048];
};

static void cpu_info(xpi_device_info *c) {
  memset(c, 0, sizeof *c);
  c->struct_size = sizeof *c;
  snprintf(c->id, sizeof c->id, "cpu");
  c->index = -1;
  snprintf(c->name, sizeof c->name, "CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f) {
    char line[512];
    while (fgets(line, sizeof line, f)) {
      if (strncmp(line, "model name", 10)) continue;
      const char *v = strchr(line, ':');
      if (!v) break;
      v++;
      while (*v == ' ' || *v == '\t') v++;
      snprintf(c->name, sizeof c->name, "%s", v);
      c->name[strcspn(c->name, "\n")] = 0;
      break;
    }
    fclose(f);
  }
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  if (pages > 0 && psz > 0) c->total_memory = (uint64_t)pages * (uint64_t)psz;
  c->max_alloc_size = c->total_memory;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  c->eu_count = ncpu > 0 ? (uint32_t)ncpu : 1;
  c->threads_per_eu = 1;
  /* The CPU backend computes every dtype (bf16/f16 are converted in software where the ISA lacks them). */
  c->has_fp16 = c->has_fp64 = c->has_bf16 = 1;
}

xpi_status xpi_device_list_create(xpi_device_list **out) {
  if (!out) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_device_list_create: out is NULL");
  *out = NULL;
  size_t n;
  XPI_TRY(xpi_xpu_count(&n));
  xpi_device_list *l = calloc(1, sizeof *l);
  if (!l) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "device list: out of memory");
  l->infos = calloc(n + 1, sizeof *l->infos);
  if (!l->infos) {
    free(l);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "device list: out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    xpi_status s = xpi_xpu_info(i, &l->infos[i]);
    if (s != XPI_OK) {
      xpi_device_list_free(l);
      return s;
    }
  }
  cpu_info(&l->infos[n]);
  l->n_xpu = n;
  xpi_xpu_summary(l->summary, sizeof l->summary);
  *out = l;
  return XPI_OK;
}

void xpi_device_list_free(xpi_device_list *list) {
  if (!list) return;
  free(list->infos);
  free(list);
}

size_t xpi_device_list_count_xpu(const xpi_device_list *list) { return list ? list->n_xpu : 0; }

xpi_status xpi_device_list_get(const xpi_device_list *list, size_t i, xpi_device_info *out) {
  if (!list || !out) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_device_list_get: NULL argument");
  if (i > list->n_xpu)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_device_list_get: index %zu out of range (0..%zu: %zu XPUs, then the CPU)",
                   i, list->n_xpu, list->n_xpu);
  if (out->struct_size && out->struct_size < sizeof *out)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_device_list_get: struct_size %zu is smaller than this library's %zu",
                   out->struct_size, sizeof *out);
  *out = list->infos[i];
  return XPI_OK;
}

const char *xpi_device_list_summary(const xpi_device_list *list) { return list ? list->summary : ""; }
