/* xpi_model_perf_decode: one decode step with every XPU launch counted by the performance model's cost table
 * (src/ops/xpu/xpu_perf.c), against the bytes a decode step cannot avoid reading. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "model/model.h"
#include "ops/backend_xpu.h"

/* Weights every decode step reads: all placed weights, with the embedding counted as the one row gathered and a
 * mixture-of-experts layer's experts as the k a token chooses (the others are never read). */
static double must_read_weights(const xpi_model *m) {
  const xpi_model_weights *w = &m->w;
  double b = (double)w->bytes;
  const int32_t k = m->cfg.n_experts_per_tok;
  for (int32_t l = 0; l < w->n_layers; l++) {
    const xpi_layer_weights *L = &w->layers[l];
    const xpi_experts *ex[3] = {&L->ex_gate, &L->ex_up, &L->ex_down};
    for (int i = 0; L->moe && i < 3; i++)
      if (ex[i]->n > k) b -= (double)ex[i]->bytes * (double)(ex[i]->n - k) / (double)ex[i]->n;
  }
  const size_t es = xpi_dtype_size(w->embed.dtype);
  const double row = (double)m->cfg.hidden_size * (double)(es ? es : 4);
  if (!w->lm_head_is_embed) b -= (double)w->embed.bytes; /* a table of its own: only the step's row */
  return b + row;
}

xpi_status xpi_model_perf_decode(xpi_model *m, int32_t n_ctx, xpi_perf_report *out) {
  if (!m || !out) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_model_perf_decode: NULL argument");
  int32_t max_pos = m->cfg.max_position_embeddings > 0 ? m->cfg.max_position_embeddings : 4096;
  if (n_ctx < 1 || n_ctx > max_pos)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_model_perf_decode: n_ctx = %d is outside [1, %d]", n_ctx, max_pos);
  xpi_perf_report r;
  memset(&r, 0, sizeof r);
  r.n_ctx = n_ctx;
  r.weight_bytes = must_read_weights(m);
  r.kv_bytes = (double)xpi_graph_kv_bytes_per_token(&m->graph) * (double)n_ctx;
  xpi_graph_state *st = NULL;
  XPI_TRY(xpi_graph_state_create_single(&m->graph, n_ctx, &st));
  const int32_t nb = xpi_graph_state_limits(st)->max_blocks;
  int32_t *table = malloc((size_t)nb * sizeof *table);
  xpi_status s = table ? XPI_OK : xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int32_t i = 0; table && i < nb; i++) table[i] = i;
  int began = 0;
  for (int d = 0; s == XPI_OK && d < m->n_backends; d++, began = d) s = xpi_xpu_perf_begin(m->backends[d], &r);
  if (s == XPI_OK) { /* a step of one token at the context's last position; not replayed, so every launch counts */
    int32_t id = 0, pos = n_ctx - 1, seq = 0, tok = -1;
    xpi_graph_batch b = {0};
    b.n = 1, b.ids = &id, b.pos = &pos, b.seq = &seq, b.n_rows = 1, b.tables = table, b.n_out = 1, b.argmax = &tok;
    s = xpi_graph_step(&m->graph, st, &b);
  }
  for (int d = 0; d < began; d++) xpi_xpu_perf_end(m->backends[d]);
  free(table);
  xpi_graph_state_free(st);
  if (s != XPI_OK) return xpi_err_prefix(s, "performance model: ");
  size_t sz = out->struct_size && out->struct_size < sizeof r ? out->struct_size : sizeof r;
  r.struct_size = sz;
  memcpy(out, &r, sz);
  return XPI_OK;
}
