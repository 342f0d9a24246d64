/* config.json (+ generation_config.json) of the supported families, validated.
 *
 * The common fields (sizes, RoPE, dtype, eos/bos, generation defaults) are read here for every family; what
 * only some families have (biases, q/k norms, sliding windows, softcaps, multipliers, ...) is read by the
 * family's own parse function (src/model/families/<name>.c) into the fields below. */
#ifndef XPI_MODEL_CONFIG_H
#define XPI_MODEL_CONFIG_H

#include <stdint.h>
#include "ops/ops.h"

#define XPI_MAX_EOS 8
#define XPI_MAX_LAYERS 4096
#define XPI_MAX_ROPE_EXT 256 /* longrope factors: head_dim / 2 of them */

struct xpi_family;

typedef enum xpi_mlp_act { XPI_ACT_SILU = 0, XPI_ACT_GELU_TANH = 1 } xpi_mlp_act;
typedef enum xpi_qk_norm { XPI_QK_NONE = 0, XPI_QK_PER_HEAD = 1, XPI_QK_WHOLE = 2 } xpi_qk_norm;

/* One set of RoPE parameters (a model has one, or one per layer type: Gemma 3). */
typedef struct xpi_rope_set {
  xpi_rope_params p;           /* theta, llama3 scaling; head_dim */
  float linear_factor;         /* rope_type "linear": inv_freq / factor (1 when none) */
  int has_ext;                 /* longrope: inv_freq / ext[i] (short factors) */
  float ext[XPI_MAX_ROPE_EXT];
  int32_t long_from;           /* longrope past original_max_position_embeddings: positions from this one use
                                * inv_freq / ext_long[i] (the long factors), as transformers switches; 0: no
                                * long set (the model's max_position_embeddings is no larger than the original) */
  float ext_long[XPI_MAX_ROPE_EXT];
  float attention_factor;      /* longrope mscale: multiplies cos and sin, i.e. q.k by its square (1 when none) */
} xpi_rope_set;

typedef struct xpi_config {
  const struct xpi_family *family; /* from model_type / architectures (model/family.h) */
  char model_type[32];         /* as written: "llama", "mistral", "qwen2", "gemma2", ... */
  int32_t vocab_size, hidden_size, intermediate_size;
  int32_t n_layers, n_heads, n_kv_heads, head_dim;  /* head_dim given or the family's default */
  int32_t max_position_embeddings; /* positions a request may use */
  float rms_norm_eps;
  int tie_word_embeddings;
  int attention_bias;          /* q/k/v biases (qwen2: true by default) */
  int o_proj_bias;             /* o_proj has a bias (llama/qwen3/granite with attention_bias) */
  xpi_qk_norm qk_norm;         /* qwen3/gemma3: per head; olmo2: over the whole projection */
  xpi_mlp_act act;             /* silu (swiglu) or gelu_pytorch_tanh (geglu) */
  int norm_plus_one;           /* Gemma: norms compute x * (1 + w); the loader stores 1 + w */
  float attn_scale;            /* multiplies q.k: 1/sqrt(head_dim), query_pre_attn_scalar^-0.5, Granite's
                                * attention_multiplier; times the longrope attention_factor squared */
  float attn_softcap, final_softcap; /* Gemma 2 (0: none) */
  float embed_scale;           /* embedding multiplier (Gemma sqrt(hidden), Granite); 1 when none */
  float residual_scale;        /* Granite residual_multiplier on each branch; 1 when none */
  float logit_scale;           /* 1 / Granite logits_scaling; 1 when none */
  int32_t sliding_window;      /* window of the sliding layers (0: none) */
  unsigned char layer_sliding[XPI_MAX_LAYERS]; /* 1: layer l attends to the last sliding_window positions */
  unsigned char layer_norope[XPI_MAX_LAYERS];  /* 1: layer l applies no RoPE (SmolLM3 no_rope_layers) */
  int n_rope;                  /* 1, or 2 when sliding layers use rope[1] (Gemma 3 local base) */
  xpi_rope_set rope[2];
  int32_t rope_long_from;      /* longrope with long factors: original_max_position_embeddings (rope[0].long_from,
                                * the same for every set); 0 otherwise */
  xpi_dtype torch_dtype;       /* "dtype"/"torch_dtype"; F32 when absent */
  int32_t bos_id;              /* -1 when none */
  int32_t eos_ids[XPI_MAX_EOS];/* union of config.json and generation_config.json */
  int32_t n_eos;
  /* generation_config.json defaults (used by the CLI when the user gives none) */
  int gen_do_sample;           /* -1 when absent */
  float gen_temperature, gen_top_p; int32_t gen_top_k; /* 0 when absent */
  float gen_repetition_penalty;/* 0 when absent */
  int32_t gen_max_new_tokens;  /* 0 when absent */
  /* Mixture of experts (qwen2_moe, qwen3_moe; model/moe.c). n_experts == 0: every layer has the dense MLP;
   * else layer_moe[l] says which layers are sparse (decoder_sparse_step, mlp_only_layers). */
  int32_t n_experts, n_experts_per_tok, moe_intermediate_size;
  int32_t shared_expert_intermediate_size; /* qwen2_moe's sigmoid-gated shared expert; 0: none */
  int norm_topk_prob;          /* renormalize the top-k router probabilities */
  unsigned char layer_moe[XPI_MAX_LAYERS];
} xpi_config;

/* Reads dir/config.json and, if present, dir/generation_config.json. Unknown architecture, missing or
 * inconsistent sizes (e.g. hidden_size not divisible by heads without head_dim) are clear errors. */
xpi_status xpi_config_load(const char *dir, xpi_config *out);

/* Helpers the families' parse functions use (model/config.c). Each names the file and the field in its
 * message; *out is untouched when the key is absent. */
typedef struct cJSON cJSON;
const cJSON *xpi_cfg_get(const cJSON *o, const char *key);
xpi_status xpi_cfg_int(const char *path, const cJSON *o, const char *key, int64_t min, int64_t max, int32_t *out);
xpi_status xpi_cfg_num(const char *path, const cJSON *o, const char *key, double lo, int lo_open, double hi,
                       double *out, int *found);
xpi_status xpi_cfg_bool(const char *path, const cJSON *o, const char *key, int *out);
/* "hidden_act"/"hidden_activation" (whichever is given) must be one of the accepted activations. */
xpi_status xpi_cfg_act(const char *path, const cJSON *o, const char *key, xpi_mlp_act dflt, xpi_mlp_act *out);
/* layer_types when given (sliding_attention / full_attention per layer) into layer_sliding; *found says so. */
xpi_status xpi_cfg_layer_types(const char *path, const cJSON *o, xpi_config *c, int *found);
/* sliding_window (null or >= min) into c->sliding_window; 0 when absent or null. */
xpi_status xpi_cfg_sliding_window(const char *path, const cJSON *o, int32_t min, xpi_config *c);
/* Qwen2/Qwen3/SmolLM3 layout: use_sliding_window + max_window_layers, unless layer_types says. */
xpi_status xpi_cfg_qwen_window(const char *path, const cJSON *o, xpi_config *c);
/* Every layer sliding when sliding_window is set (Mistral, Phi-3), unless layer_types says. */
xpi_status xpi_cfg_window_all(const char *path, const cJSON *o, xpi_config *c);

#endif
