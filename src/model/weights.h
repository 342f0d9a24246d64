/* The model's tensors by name, shape-checked against the config and placed on the backend of their layer. */
#ifndef XPI_MODEL_WEIGHTS_H
#define XPI_MODEL_WEIGHTS_H

#include "io/safetensors.h"
#include "model/config.h"
#include "ops/ops.h"

typedef struct xpi_layer_weights {
  xpi_backend *be;                  /* where this layer runs */
  xpi_weight attn_norm, wq, wk, wv, wo;
  xpi_weight bq, bk, bv;            /* qwen2 / attention_bias; rows == 0 when absent */
  xpi_weight bo;                    /* o_proj bias (llama/qwen3 with attention_bias); rows == 0 when absent */
  xpi_weight q_norm, k_norm;        /* qwen3; rows == 0 when absent */
  xpi_weight mlp_norm, gate, up, down; /* the dense MLP, or a MoE layer's shared expert (qwen2_moe) */
  /* mixture of experts (model/moe.c); moe == 0: dense MLP */
  int moe;
  xpi_weight router;                /* mlp.gate [n_experts, hidden] */
  xpi_experts ex_gate, ex_up, ex_down;
  xpi_weight shared_gate;           /* mlp.shared_expert_gate [1, hidden] (qwen2_moe); rows == 0 when absent */
} xpi_layer_weights;

typedef struct xpi_model_weights {
  xpi_backend *first, *last;        /* embedding on first; final norm and lm_head on last */
  xpi_weight embed, final_norm, lm_head;
  int lm_head_is_embed;             /* tied and on the same backend: lm_head aliases embed */
  xpi_layer_weights *layers;
  int32_t n_layers;
  uint64_t bytes;                   /* weight bytes as used by the backends */
  unsigned char *used;              /* [n_used]: 1 for each checkpoint tensor (xpi_st_at order) that was placed */
  size_t n_used;
} xpi_model_weights;

/* layer_be[l] is the backend of layer l. want: XPI_DT_F32/F16/BF16 to convert matrices, or -1 to keep
 * each tensor's stored dtype (then CPU weights borrow the mapping); XPI_DT_Q8/Q4 to quantize matrices. */
xpi_status xpi_weights_load(const xpi_config *cfg, const xpi_safetensors *st, xpi_backend *const *layer_be, int want,
                            xpi_model_weights *w);
void xpi_weights_free(xpi_model_weights *w);

/* The checkpoint's tensors the load did not place, i.e. that the graph never reads (a checkpoint with more
 * layers than num_hidden_layers, biases the config does not ask for...), except those transformers
 * ignores too (rotary_emb.inv_freq buffers, lm_head.weight of a tied model). Returns how many; list gets as
 * many names as fit in cap bytes, comma separated, then "(and N more)". */
size_t xpi_weights_unused(const xpi_model_weights *w, const xpi_config *c, const xpi_safetensors *st, char *list,
                          size_t cap);

#endif
