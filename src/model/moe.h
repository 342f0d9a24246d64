/* The mixture-of-experts MLP block shared by the Qwen2-MoE and Qwen3-MoE families (transformers'
 * Qwen2MoeSparseMoeBlock / Qwen3MoeSparseMoeBlock) over the moe_* ops of ops.h. */
#ifndef XPI_MODEL_MOE_H
#define XPI_MODEL_MOE_H

#include "model/config.h"
#include "model/weights.h"
#include "ops/ops.h"

/* Activations of the block for up to T tokens a step, on one backend. */
typedef struct xpi_moe_bufs {
  float *logits;   /* [T, n_experts] router logits */
  int32_t *ids;    /* [T, k] chosen experts */
  float *wts;      /* [T, k] their weights */
  float *g, *u;    /* [T * k, moe_intermediate_size] */
  float *y;        /* [T * k + T, hidden]: expert outputs, then the shared expert's */
  float *sg;       /* [T] shared expert gate logits */
} xpi_moe_bufs;

/* Allocates (or, with free_only, frees) the buffers on be for max_tokens tokens. */
xpi_status xpi_moe_bufs_alloc(xpi_backend *be, const xpi_config *c, int32_t max_tokens, xpi_moe_bufs *b);
void xpi_moe_bufs_free(xpi_backend *be, xpi_moe_bufs *b);

/* out[n, hidden] = the block of layer L on h[n, hidden]:
 *   p = softmax(h @ router^T), top-k (renormalized with norm_topk_prob), per chosen expert x:
 *   y_x = down_x(silu(gate_x(h)) * up_x(h)); out = sum_x w_x y_x (+ sigmoid(h @ shared_gate^T) * shared(h)).
 * sgate, sup: [n, shared_expert_intermediate_size] scratch for the shared expert (qwen2_moe). */
xpi_status xpi_moe_forward(xpi_backend *be, const xpi_config *c, const xpi_layer_weights *L, const xpi_moe_bufs *b,
                           float *out, const float *h, float *sgate, float *sup, int32_t n);

#endif
