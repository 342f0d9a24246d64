/* xpi_request_*: one conversation's KV cache and context ids over a shared, immutable model. */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "core/status.h"

void xpi_request_options_default(xpi_request_options *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
}

xpi_status xpi_request_create(xpi_model *model, const xpi_request_options *opts, xpi_request **out) {
  if (!out) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_request_create: out is NULL");
  *out = NULL;
  if (!model) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_request_create: model is NULL");
  int32_t max_pos = model->cfg.max_position_embeddings > 0 ? model->cfg.max_position_embeddings : 4096;
  int32_t n_ctx = opts && opts->n_ctx ? opts->n_ctx : (max_pos < 4096 ? max_pos : 4096);
  if (n_ctx < 1 || n_ctx > max_pos)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "n_ctx = %d is outside [1, %d] (the model's max_position_embeddings)",
                   n_ctx, max_pos);
  xpi_request *r = calloc(1, sizeof *r);
  if (!r) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  r->model = model;
  r->n_ctx = n_ctx;
  r->history = malloc((size_t)n_ctx * sizeof *r->history);
  r->logits = malloc((size_t)model->cfg.vocab_size * sizeof *r->logits);
  xpi_status s = !r->history || !r->logits ? xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory")
                                           : xpi_graph_state_create(&model->graph, n_ctx, &r->gs);
  if (s != XPI_OK) {
    xpi_request_free(r);
    return s;
  }
  *out = r;
  return XPI_OK;
}

void xpi_request_free(xpi_request *r) {
  if (!r) return;
  xpi_graph_state_free(r->gs);
  free(r->history);
  free(r->logits);
  free(r);
}

void xpi_request_reset(xpi_request *r) {
  if (r) r->n_past = 0;
}

int32_t xpi_request_n_past(const xpi_request *r) { return r ? r->n_past : 0; }

int32_t xpi_request_n_ctx(const xpi_request *r) { return r ? r->n_ctx : 0; }

xpi_status xpi_request_eval(xpi_request *r, const int32_t *ids, size_t n, int all_positions, float *logits, size_t cap) {
  if (!r || (!ids && n)) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_request_eval: NULL argument");
  if (n == 0) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_request_eval: no ids given");
  if (n > (size_t)(r->n_ctx - r->n_past))
    return xpi_err(XPI_ERR_CONTEXT_LENGTH, "%zu tokens do not fit: %d of the context's %d are used", n, r->n_past,
                   r->n_ctx);
  int32_t V = r->model->cfg.vocab_size;
  size_t rows = all_positions ? n : 1;
  if (logits && cap / (size_t)V < rows)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_request_eval: logits holds %zu floats, %zu x %d are needed", cap, rows,
                   V);
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= V)
      return xpi_err(XPI_ERR_INVALID_ARGUMENT, "token id %d at index %zu is outside the vocabulary [0, %d)", ids[i], i, V);
  xpi_status s = xpi_graph_forward(&r->model->graph, r->gs, ids, (int32_t)n, r->n_past, all_positions, logits);
  if (s != XPI_OK) return s;
  memcpy(r->history + r->n_past, ids, n * sizeof *ids);
  r->n_past += (int32_t)n;
  return XPI_OK;
}
