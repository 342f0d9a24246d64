/* Qwen3: the Llama layer with per-head RMSNorm of q and k before RoPE (q_norm, k_norm), head_dim 128 by
 * default, Qwen's sliding-window layout. */
#include "core/status.h"
#include "model/family.h"

static xpi_status parse(const char *path, const cJSON *root, xpi_config *c) {
  XPI_TRY(xpi_parse_llama_like(path, root, c)); /* q/k/v/o all follow attention_bias */
  c->qk_norm = XPI_QK_PER_HEAD;
  return xpi_cfg_qwen_window(path, root, c);
}

const xpi_family xpi_family_qwen3 = {"qwen3", "Qwen3ForCausalLM", 128, parse, xpi_load_llama_layer,
                                     xpi_blk_prenorm_layer};
