/* Qwen2-MoE: the Qwen2 layer (q/k/v biases as qkv_bias says, true by default; o_proj never) whose MLP is the
 * sparse mixture of experts plus a shared expert scaled by sigmoid(shared_expert_gate) (model/moe.c). */
#include "core/status.h"
#include "model/moe.h"

static xpi_status parse(const char *path, const cJSON *root, xpi_config *c) {
  XPI_TRY(xpi_parse_llama_like(path, root, c));
  c->attention_bias = 1; /* Qwen2MoeAttention: bias=config.qkv_bias (default true) on q/k/v, none on o_proj */
  XPI_TRY(xpi_cfg_bool(path, root, "qkv_bias", &c->attention_bias));
  c->o_proj_bias = 0;
  XPI_TRY(xpi_cfg_qwen_window(path, root, c));
  return xpi_parse_moe(path, root, c, 1);
}

const xpi_family xpi_family_qwen2_moe = {"qwen2_moe", "Qwen2MoeForCausalLM", 0, parse, xpi_load_moe_layer,
                                         xpi_moe_layer};
