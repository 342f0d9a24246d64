/* The transformer forward for llama / qwen2 / qwen3, written once over the op interface (ops.h).
 *
 * A graph is immutable after xpi_graph_init and shared by every request of a model; each request owns an
 * xpi_graph_state (KV caches and activation buffers on every backend). Layers may live on different
 * backends (device_map): the residual stream is copied through the host at each boundary. */
#ifndef XPI_MODEL_GRAPH_H
#define XPI_MODEL_GRAPH_H

#include "model/config.h"
#include "model/weights.h"
#include "ops/ops.h"

#define XPI_MAX_BACKENDS 16

typedef struct xpi_graph {
  const xpi_config *cfg;
  const xpi_model_weights *w;
  xpi_backend *backends[XPI_MAX_BACKENDS];
  int n_backends;
  int32_t layer_dev[XPI_MAX_BACKENDS + 1];  /* layers [layer_dev[d], layer_dev[d+1]) run on backends[d] */
  float *inv_freq[XPI_MAX_BACKENDS];        /* backend memory, head_dim/2 floats each */
  xpi_attn_impl attn;
  xpi_dtype kv_dtype;
} xpi_graph;

/* Splits n_layers over n_dev devices in proportion to weight[d] (e.g. free memory): first[d] is the first
 * layer of device d, first[n_dev] == n_layers. Devices may get zero layers only if their weight is 0. */
xpi_status xpi_graph_split(int32_t n_layers, const double *weight, int n_dev, int32_t *first);

/* Builds layer_be[] for xpi_weights_load from backends/layer_dev. */
void xpi_graph_layer_backends(const xpi_graph *g, int32_t n_layers, xpi_backend **layer_be);

/* Fills the per-backend constants (RoPE inverse frequencies). g->cfg, backends, layer_dev set by caller. */
xpi_status xpi_graph_init(xpi_graph *g);
void xpi_graph_release(xpi_graph *g);

typedef struct xpi_graph_state xpi_graph_state;

xpi_status xpi_graph_state_create(const xpi_graph *g, int32_t n_ctx, xpi_graph_state **out);
void xpi_graph_state_free(xpi_graph_state *st);

/* Runs ids[0..n) at positions n_past..n_past+n-1 (chunked internally). logits: NULL, or host memory for
 * vocab_size floats per row: n rows when all_logits, else only the last position's row. */
xpi_status xpi_graph_forward(const xpi_graph *g, xpi_graph_state *st, const int32_t *ids, int32_t n, int32_t n_past,
                             int all_logits, float *logits);

/* Like xpi_graph_forward, but instead of host logits: *token = argmax of the last position's logits (lowest
 * index on ties, as the host argmax), computed on the last device inside the same step (inside the replayed
 * decode step where there is one); only the int32 id is copied to the host. *token is -1 when those logits
 * hold a NaN or an infinity (the argmax op reports it). */
xpi_status xpi_graph_forward_argmax(const xpi_graph *g, xpi_graph_state *st, const int32_t *ids, int32_t n,
                                    int32_t n_past, int32_t *token);

/* The diagnostic path (off the hot path) after a step over ids[0..n) at positions n_past.. gave non-finite
 * logits: runs that step again (rewriting the same KV slots with the same values) layer by layer, reading the
 * residual stream back after the embedding and after each layer, then the final norm and lm_head of the last
 * position. Returns XPI_ERR_NUMERIC with a message naming where a NaN or an infinity first appears (the
 * embedding row, layer L's output, the final norm or the lm_head) and the first token position holding one;
 * another status if the re-run itself fails. */
xpi_status xpi_graph_locate_nonfinite(const xpi_graph *g, xpi_graph_state *st, const int32_t *ids, int32_t n,
                                      int32_t n_past);

#endif
