/* A model that does not fit on its XPUs says so before loading: the bytes each backend will hold (every
 * tensor in the dtype it will be placed in) against each XPU's free memory. The KV cache comes on top, per
 * request; it is not counted here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/xpu_fit.h"
#include "core/status.h"
#include "runtime/xpu.h"

#define FIT_MAX 64

typedef struct {
  xpi_backend *be[FIT_MAX];
  uint64_t need[FIT_MAX];
  int32_t first_layer[FIT_MAX], last_layer[FIT_MAX];
  int n;
} fit_table;

static void add(fit_table *t, xpi_backend *be, uint64_t bytes) {
  for (int i = 0; i < t->n; i++)
    if (t->be[i] == be) {
      t->need[i] += bytes;
      return;
    }
  if (t->n == FIT_MAX) return;
  t->be[t->n] = be;
  t->need[t->n] = bytes;
  t->n++;
}

static uint64_t placed_bytes(const xpi_st_tensor *t, int want) {
  size_t es = xpi_dtype_size(t->dtype), ws = want >= 0 ? xpi_dtype_size((xpi_dtype)want) : 0;
  if (want < 0 || ws == 0 || es == 0) return t->nbytes; /* as stored (block types: no larger than stored) */
  return (uint64_t)(t->nbytes / es) * ws;
}

xpi_status xpi_xpu_fit_check(const xpi_config *cfg, const xpi_safetensors *st, xpi_backend *const *layer_be, int want) {
  int32_t nl = cfg->n_layers;
  if (nl <= 0) return XPI_OK;
  xpi_backend *first = layer_be[0], *last = layer_be[nl - 1];
  fit_table t = {0};
  for (size_t i = 0; i < xpi_st_count(st); i++) {
    const xpi_st_tensor *ts = xpi_st_at(st, i);
    uint64_t b = placed_bytes(ts, want);
    int layer = -1;
    if (sscanf(ts->name, "model.layers.%d.", &layer) == 1) {
      if (layer >= 0 && layer < nl) add(&t, layer_be[layer], b);
    } else if (!strcmp(ts->name, "model.embed_tokens.weight")) {
      add(&t, first, b);
      if (cfg->tie_word_embeddings && last != first) add(&t, last, b); /* the tied head is placed again */
    } else if (!strcmp(ts->name, "model.norm.weight") || !strcmp(ts->name, "lm_head.weight")) {
      add(&t, last, b);
    }
  }
  for (int i = 0; i < t.n; i++) {
    int idx = -1;
    if (strcmp(t.be[i]->ops->name, "xpu") || sscanf(t.be[i]->device, "xpu:%d", &idx) != 1) continue;
    int lo = -1, hi = -1;
    for (int32_t l = 0; l < nl; l++)
      if (layer_be[l] == t.be[i]) {
        if (lo < 0) lo = l;
        hi = l;
      }
    char what[96];
    snprintf(what, sizeof what, "the weights for layers %d-%d of %d", lo, hi, nl);
    XPI_TRY(xpi_xpu_check_fit(idx, t.need[i], what));
  }
  return XPI_OK;
}
