/* The mixture-of-experts pieces Qwen2-MoE and Qwen3-MoE share (transformers' Qwen2MoeSparseMoeBlock /
 * Qwen3MoeSparseMoeBlock) over the moe_* ops of ops.h: config fields, tensors, the sparse MLP block and the
 * decoder layer built from it (families/qwen2_moe.c, families/qwen3_moe.c). */
#ifndef XPI_MODEL_MOE_H
#define XPI_MODEL_MOE_H

#include "model/family.h"

/* Activations of the sparse block for up to T tokens a step, on one backend (graph state). */
typedef struct xpi_moe_bufs {
  float *logits;   /* [T, n_experts] router logits */
  int32_t *ids;    /* [T, k] chosen experts */
  int32_t *pos;    /* [T, k] the row of y holding each slot's expert output (moe_mlp) */
  float *wts;      /* [T, k] their weights */
  float *g, *u;    /* [T * k, moe_intermediate_size] */
  float *y;        /* [T * k + T, hidden]: expert outputs, then the shared expert's */
  float *sg;       /* [T] shared expert gate logits */
} xpi_moe_bufs;

/* Bytes xpi_moe_bufs_alloc takes for max_tokens (the memory plan counts them). */
uint64_t xpi_moe_bufs_bytes(const xpi_config *c, int32_t max_tokens);
xpi_status xpi_moe_bufs_alloc(xpi_backend *be, const xpi_config *c, int32_t max_tokens, xpi_moe_bufs *b);
void xpi_moe_bufs_free(xpi_backend *be, xpi_moe_bufs *b);

/* Config: num_experts (transformers 4; qwen2_moe in 5) or num_local_experts (qwen3_moe in 5),
 * num_experts_per_tok, moe_intermediate_size, norm_topk_prob (default false), decoder_sparse_step (default 1),
 * mlp_only_layers; with shared, shared_expert_intermediate_size (required). Fills layer_moe as transformers'
 * decoder layer decides: sparse when not in mlp_only_layers and (l + 1) % decoder_sparse_step == 0. */
xpi_status xpi_parse_moe(const char *path, const cJSON *root, xpi_config *c, int shared);

/* Tensors of a Qwen-MoE decoder layer: the Llama layer's norms and attention, then a sparse layer's router
 * (mlp.gate, kept unquantized), experts and shared expert (mlp.shared_expert.*, mlp.shared_expert_gate), or a
 * dense layer's mlp. */
xpi_status xpi_load_moe_layer(xpi_loader *ld, const xpi_config *c, xpi_layer_weights *L);

/* x += the sparse block of layer L on in = pre(x) (xpi_blk_input):
 *   p = softmax(in @ router^T), top-k (renormalized with norm_topk_prob), per chosen expert e:
 *   y_e = down_e(silu(gate_e(in)) * up_e(in)); out = sum_e w_e y_e (+ sigmoid(in @ shared_gate^T) * shared(in)). */
xpi_status xpi_blk_moe(xpi_fwd *f, const xpi_layer_weights *L, const xpi_weight *pre);

/* The pre-norm decoder layer with the sparse block as its MLP on sparse layers (xpi_blk_prenorm_layer else). */
xpi_status xpi_moe_layer(xpi_fwd *f, const xpi_layer_weights *L);

#endif
