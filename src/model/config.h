/* config.json (+ generation_config.json) of the supported families, validated. */
#ifndef XPI_MODEL_CONFIG_H
#define XPI_MODEL_CONFIG_H

#include <stdint.h>
#include "ops/ops.h"

#define XPI_MAX_EOS 8

typedef enum xpi_arch { XPI_ARCH_LLAMA = 0, XPI_ARCH_QWEN2 = 1, XPI_ARCH_QWEN3 = 2 } xpi_arch;

typedef struct xpi_config {
  xpi_arch arch;
  char model_type[32];         /* as written: "llama", "mistral", "qwen2", "qwen3" */
  int32_t vocab_size, hidden_size, intermediate_size;
  int32_t n_layers, n_heads, n_kv_heads, head_dim;  /* head_dim given or hidden_size / n_heads */
  int32_t max_position_embeddings;
  float rms_norm_eps;
  int tie_word_embeddings;
  int attention_bias;          /* q/k/v biases (qwen2: true by default) */
  int qk_norm;                 /* per-head q_norm/k_norm (qwen3) */
  xpi_rope_params rope;        /* theta from rope_theta or rope_parameters; llama3 scaling */
  xpi_dtype torch_dtype;       /* "dtype"/"torch_dtype"; F32 when absent */
  int32_t bos_id;              /* -1 when none */
  int32_t eos_ids[XPI_MAX_EOS];/* union of config.json and generation_config.json */
  int32_t n_eos;
  /* generation_config.json defaults (used by the CLI when the user gives none) */
  int gen_do_sample;           /* -1 when absent */
  float gen_temperature, gen_top_p; int32_t gen_top_k; /* 0 when absent */
  float gen_repetition_penalty;/* 0 when absent */
  int32_t gen_max_new_tokens;  /* 0 when absent */
  /* Mixture of experts (qwen2_moe, qwen3_moe; n_experts == 0: every layer has the dense MLP). Layer l is sparse
   * when xpi_config_layer_moe says so (decoder_sparse_step, mlp_only_layers). */
  int32_t n_experts, n_experts_per_tok, moe_intermediate_size;
  int32_t shared_expert_intermediate_size; /* qwen2_moe's shared expert (sigmoid-gated); 0: none */
  int norm_topk_prob;
  int32_t decoder_sparse_step;
  uint64_t mlp_only[64];       /* bit l: layer l keeps the dense MLP (mlp_only_layers) */
  /* Added by io: o_proj has a bias (llama/qwen3 with attention_bias true; never qwen2/mistral). */
  int o_proj_bias;
} xpi_config;

/* 1 when layer l's MLP is the mixture of experts (transformers' Qwen2/3-MoE decoder layer rule). */
int xpi_config_layer_moe(const xpi_config *c, int32_t l);

/* Reads dir/config.json and, if present, dir/generation_config.json. Unknown architecture, missing or
 * inconsistent sizes (e.g. hidden_size not divisible by heads without head_dim) are clear errors. */
xpi_status xpi_config_load(const char *dir, xpi_config *out);

#endif
