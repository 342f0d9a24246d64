/* Model families: what a family declares (src/model/families/<name>.c, one file each) and the shared
 * transformer blocks the families compose (src/model/blocks.c).
 *
 * A family is found by model_type (or architectures[0]) in the registry (families/registry.c). It gives:
 *   parse       its config.json fields beyond the common ones (model/config.c reads sizes, RoPE, dtype, eos)
 *   load_layer  the tensors of one decoder layer, by name and shape (model/weights.h loader helpers)
 *   layer       the forward of one decoder layer over the ops, composed from the blocks below
 * The embedding, the final norm and the lm_head are the same for every family (with the config's embedding
 * and logit multipliers and softcap), in the graph (model/graph_step.c) with the batching and device_map machinery.
 * Adding a family: its file, its row in families/registry.c (XPI_FAMILIES), its layout in tools/mkrandmodel
 * and its test data (docs/ARCHITECTURE.md). */
#ifndef XPI_MODEL_FAMILY_H
#define XPI_MODEL_FAMILY_H

#include "model/config.h"
#include "model/fusion.h"
#include "model/weights.h"
#include "ops/ops.h"

/* One layer's forward on one backend, over a batch of n tokens. The residual stream is x; `pending` is a
 * branch output not yet added into x (the add is fused into the next norm: x += pending; h = norm(x)); fuse is
 * which of the backend's fused ops the layer's blocks run (model/fusion.h). */
typedef struct xpi_fwd {
  const xpi_config *c;
  xpi_backend *be;
  const xpi_backend_ops *o;
  int32_t n;                       /* tokens */
  int32_t layer;                   /* the model's layer index */
  int32_t kv_layer;                /* its index in this backend's KV cache */
  xpi_kv *kv;
  const xpi_kv_map *map;
  const int32_t *pos;              /* [n] backend memory */
  const int32_t *long_sel;         /* [n] backend memory or NULL: longrope's per-token choice (ops.h rope) */
  const float *const *inv_freq;    /* per RoPE set (c->n_rope): backend memory [head_dim / 2] */
  xpi_attn_impl impl;
  /* activations (backend memory, sized for max_tokens): x, h, t [n, hidden]; q, att [n, hq*hd]; k, v
   * [n, hk*hd]; res [n, hidden]; gate, up [n, intermediate] */
  float *x, *h, *t, *q, *k, *v, *att, *res, *gate, *up;
  const struct xpi_moe_bufs *moe;  /* MoE layers' activations (model/moe.h); NULL for dense models */
  const float *pending;
  xpi_fusion fuse;
} xpi_fwd;

typedef struct xpi_family {
  const char *name;                /* model_type */
  const char *architecture;        /* architectures[0] */
  int32_t default_head_dim;        /* head_dim when config.json has none; 0: hidden_size / num_attention_heads */
  xpi_status (*parse)(const char *path, const cJSON *root, xpi_config *c);
  xpi_status (*load_layer)(xpi_loader *ld, const xpi_config *c, xpi_layer_weights *L);
  xpi_status (*layer)(xpi_fwd *f, const xpi_layer_weights *L);
} xpi_family;

/* ---- registry (families/registry.c): the one list of families (families/<name>.c, each defining
 * xpi_family_<name>) */
size_t xpi_family_count(void);
const xpi_family *xpi_family_at(size_t i);  /* i < xpi_family_count(), else NULL */
const xpi_family *xpi_family_by_type(const char *model_type);
const xpi_family *xpi_family_by_arch(const char *architecture);
const char *xpi_family_types(void);         /* "llama, mistral, ..." for messages */
const char *xpi_family_archs(void);

/* ---- config pieces every family shares (blocks.c) */
/* The config class's defaults where they differ from the common ones (rms_norm_eps 1e-6, rope_theta 1e4),
 * applied only when config.json does not give the field (top level or in rope_parameters/rope_scaling). */
void xpi_family_defaults(const cJSON *root, xpi_config *c, double rms_norm_eps, double rope_theta);
/* Llama-like defaults: attention_bias (q/k/v/o), mlp_bias refused, silu, no q/k norm, tie flag. */
xpi_status xpi_parse_llama_like(const char *path, const cJSON *root, xpi_config *c);

/* Gemma 2/3 common: gelu_pytorch_tanh (hidden_activation), (1 + w) norms, embedding times sqrt(hidden),
 * q.k times query_pre_attn_scalar^-0.5, attention_bias on q/k/v/o, tied embeddings by default, softcaps
 * (absent: the given defaults; null: none), sliding_window default 4096 and layer_types when given. */
xpi_status xpi_parse_gemma_like(const char *path, const cJSON *root, xpi_config *c, double attn_softcap,
                                double final_softcap, int *have_layer_types);

/* ---- tensors (blocks.c) */
/* q/k/v/o projections (+ biases and q/k norms as the config says) under self_attn. */
xpi_status xpi_load_attention(xpi_loader *ld, const xpi_config *c, xpi_layer_weights *L);
/* The Llama layer's tensors: input_layernorm, self_attn (xpi_load_attention), post_attention_layernorm as the
 * MLP's norm, mlp (xpi_load_mlp). */
xpi_status xpi_load_llama_layer(xpi_loader *ld, const xpi_config *c, xpi_layer_weights *L);
/* The Gemma 2/3 layer's tensors: input_layernorm, self_attn, post_attention_layernorm,
 * pre_feedforward_layernorm (the MLP's norm), post_feedforward_layernorm, mlp. */
xpi_status xpi_load_sandwich_layer(xpi_loader *ld, const xpi_config *c, xpi_layer_weights *L);
/* gate_proj, up_proj, down_proj under mlp. */
xpi_status xpi_load_mlp(xpi_loader *ld, const xpi_config *c, xpi_layer_weights *L);

/* ---- forward blocks (blocks.c)
 * A block reads the residual stream x through its pre-norm pre (NULL: x itself) and adds its output back:
 * x += post(block(pre(x))), post an optional post-norm (NULL or rows 0: none) times the config's residual_scale.
 * How many launches that takes (norms and adds inside the projections' launches or apart) is f->fuse's choice. */
/* x += post(o_proj(attention(rope(qk_norm(q, k)), v))), q|k|v the projections of pre(x): biases, the layer's
 * q/k norm, RoPE set (or none), window, softcap and scale as the config says. */
xpi_status xpi_blk_attention(xpi_fwd *f, const xpi_layer_weights *L, const xpi_weight *pre, const xpi_weight *post);
/* x += post(down(act(gate(pre(x))) * up(pre(x)))), act silu or gelu_tanh as the config says. */
xpi_status xpi_blk_mlp(xpi_fwd *f, const xpi_layer_weights *L, const xpi_weight *pre, const xpi_weight *post);
/* The pre-norm decoder layer of Llama and most families: x += [post_norm](attn(norm(x))); x +=
 * [post_norm](mlp(norm(x))), with the post-norms of Gemma 2/3 where the layer has them. */
xpi_status xpi_blk_prenorm_layer(xpi_fwd *f, const xpi_layer_weights *L);

/* The pieces of a block that has no fused form (model/moe.c): */
/* *in = pre(x) (h = norm(x += pending)), or x (x += pending) without pre; pending consumed. */
xpi_status xpi_blk_input(xpi_fwd *f, const xpi_weight *pre, const float **in);
/* out = down(act(gate(in)) * up(in)) at the size of L's gate (a Qwen2-MoE layer's shared expert), no residual. */
xpi_status xpi_blk_ffn(xpi_fwd *f, const xpi_layer_weights *L, const float *in, float *out);
/* A branch's output becomes pending: post-norm it first when post_norm is given (rows > 0), then times the
 * config's residual_scale. */
xpi_status xpi_blk_branch(xpi_fwd *f, float *branch, const xpi_weight *post_norm);

/* x *= s and x = cap * tanh(x / cap) over count floats, skipped when s is 1 or cap is not positive (the config's
 * value that means "none"). */
xpi_status xpi_op_scale(xpi_backend *be, float *x, int64_t count, float s);
xpi_status xpi_op_softcap(xpi_backend *be, float *x, int64_t count, float cap);

#endif
