/* The model's tensors by name, shape-checked against the config and placed on the backend of their layer.
 * Which tensors a layer has is the family's business (model/family.h load_layer); this file places them. */
#ifndef XPI_MODEL_WEIGHTS_H
#define XPI_MODEL_WEIGHTS_H

#include "io/safetensors.h"
#include "model/config.h"
#include "ops/ops.h"

/* Every tensor a dense layer of the supported families may have; rows == 0 (and data NULL) when absent. */
typedef struct xpi_layer_weights {
  xpi_backend *be;                  /* where this layer runs */
  xpi_weight attn_norm;             /* input_layernorm (none in OLMo 2) */
  xpi_weight wq, wk, wv, wo;        /* Phi-3: wq/wk/wv are row ranges of qkv_proj */
  xpi_weight bq, bk, bv, bo;        /* biases (qwen2 q/k/v; attention_bias) */
  xpi_weight q_norm, k_norm;        /* per head [hd] (qwen3, gemma3) or whole [hq*hd] / [hk*hd] (olmo2) */
  xpi_weight post_attn_norm;        /* Gemma 2/3, OLMo 2: norm of the attention output before the add */
  xpi_weight mlp_norm;              /* post_attention_layernorm (Llama) / pre_feedforward_layernorm (Gemma) */
  xpi_weight gate, up, down;        /* Phi-3: gate/up are row ranges of gate_up_proj */
  xpi_weight post_mlp_norm;         /* Gemma 2/3, OLMo 2: post_feedforward_layernorm */
  /* mixture of experts (model/moe.c); moe == 0: the dense MLP above. A MoE layer's gate/up/down are its shared
   * expert (qwen2_moe) or absent. */
  int moe;
  xpi_weight router;                /* mlp.gate [n_experts, hidden] */
  xpi_experts ex_gate, ex_up, ex_down;
  xpi_weight shared_gate;           /* mlp.shared_expert_gate [1, hidden] (qwen2_moe) */
} xpi_layer_weights;

typedef struct xpi_model_weights {
  xpi_backend *first, *last;        /* embedding on first; final norm and lm_head on last */
  xpi_weight embed, final_norm, lm_head;
  int lm_head_is_embed;             /* tied and on the same backend: lm_head aliases embed */
  int embed_on_host;                /* embed borrows the mapped checkpoint in host memory (stored dtype): the graph
                                     * gathers the step's rows on the host and writes only those to the device */
  xpi_layer_weights *layers;
  int32_t n_layers;
  uint64_t bytes;                   /* weight bytes as used by the backends */
  unsigned char *used;              /* [n_used]: 1 for each checkpoint tensor (xpi_st_at order) that was placed */
  size_t n_used;
  void **host;                      /* host buffers made at load that weights borrow ((1 + w) norms) */
  size_t n_host;
} xpi_model_weights;

/* layer_be[l] is the backend of layer l. want: XPI_DT_F32/F16/BF16 to convert matrices, or -1 to keep
 * each tensor's stored dtype (then CPU weights borrow the mapping); XPI_DT_Q8/Q4 to quantize matrices. */
xpi_status xpi_weights_load(const xpi_config *cfg, const xpi_safetensors *st, xpi_backend *const *layer_be, int want,
                            xpi_model_weights *w);
/* The same, with the embedding table left in host memory (embed_on_host) when embed_on_host is 1: a device
 * then holds no vocabulary x hidden matrix for it (a tied lm_head is placed on its own). */
xpi_status xpi_weights_load_opt(const xpi_config *cfg, const xpi_safetensors *st, xpi_backend *const *layer_be,
                                int want, int embed_on_host, xpi_model_weights *w);
void xpi_weights_free(xpi_model_weights *w);

/* The checkpoint's tensors the load did not place, i.e. that the graph never reads (a checkpoint with more
 * layers than num_hidden_layers, biases the config does not ask for...), except those transformers
 * ignores too (rotary_emb.inv_freq buffers, lm_head.weight of a tied model). Returns how many; list gets as
 * many names as fit in cap bytes, comma separated, then "(and N more)". */
size_t xpi_weights_unused(const xpi_model_weights *w, const xpi_config *c, const xpi_safetensors *st, char *list,
                          size_t cap);

/* ---- what a family's load_layer uses: names are under "model.layers.<l>." of the layer being loaded */
typedef struct xpi_loader xpi_loader;
/* A matrix [rows, cols] (converted/quantized as the load asks). */
xpi_status xpi_load_matrix(xpi_loader *ld, const char *suffix, int64_t rows, int64_t cols, xpi_weight *w);
/* Rows [r0, r0 + rows) of a fused matrix [total_rows, cols] as its own weight: on the CPU a view of the
 * mapping when the dtype is kept (no copy), else that range converted/quantized/uploaded. */
xpi_status xpi_load_rows(xpi_loader *ld, const char *suffix, int64_t total_rows, int64_t r0, int64_t rows,
                         int64_t cols, xpi_weight *w);
/* The index of the layer being loaded. */
int32_t xpi_loader_layer(const xpi_loader *ld);
/* A matrix kept in a float dtype even when the load quantizes (routers: they choose which experts run). */
xpi_status xpi_load_matrix_float(xpi_loader *ld, const char *suffix, int64_t rows, int64_t cols, xpi_weight *w);
/* The n_experts matrices "mlp.experts.<e>.<proj>.weight", each [rows, cols] and of one dtype, as one xpi_experts
 * (converted/quantized per expert as the load asks). */
xpi_status xpi_load_experts(xpi_loader *ld, const char *proj, int32_t n_experts, int64_t rows, int64_t cols,
                            xpi_experts *e);
/* A vector [n] in its stored dtype (biases). */
xpi_status xpi_load_vector(xpi_loader *ld, const char *suffix, int64_t n, xpi_weight *w);
/* A norm weight [n]: as stored, or 1 + w in f32 when the config says norm_plus_one (Gemma). */
xpi_status xpi_load_norm(xpi_loader *ld, const char *suffix, int64_t n, xpi_weight *w);

#endif
