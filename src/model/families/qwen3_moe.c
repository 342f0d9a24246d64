/* Qwen3-MoE: the Qwen3 layer (per-head q/k norm, attention_bias) whose MLP is the sparse mixture of experts
 * (model/moe.c: router softmax, top-k, norm_topk_prob) on the layers decoder_sparse_step / mlp_only_layers
 * choose. */
#include "core/status.h"
#include "model/moe.h"

static xpi_status parse(const char *path, const cJSON *root, xpi_config *c) {
  XPI_TRY(xpi_parse_llama_like(path, root, c));
  c->qk_norm = XPI_QK_PER_HEAD;
  XPI_TRY(xpi_cfg_qwen_window(path, root, c));
  return xpi_parse_moe(path, root, c, 0);
}

const xpi_family xpi_family_qwen3_moe = {"qwen3_moe", "Qwen3MoeForCausalLM", 128, parse, xpi_load_moe_layer,
                                         xpi_moe_layer};
