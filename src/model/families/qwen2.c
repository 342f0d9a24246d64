/* Qwen2: the Llama layer with q/k/v biases (always; o_proj never) and Qwen's sliding-window layout
 * (use_sliding_window: layers >= max_window_layers, or layer_types). */
#include "core/status.h"
#include "model/family.h"

static xpi_status parse(const char *path, const cJSON *root, xpi_config *c) {
  XPI_TRY(xpi_parse_llama_like(path, root, c));
  c->attention_bias = 1; /* Qwen2Attention: q/k/v always biased, o_proj never */
  c->o_proj_bias = 0;
  return xpi_cfg_qwen_window(path, root, c);
}

const xpi_family xpi_family_qwen2 = {"qwen2", "Qwen2ForCausalLM", 0, parse, xpi_load_llama_layer,
                                     xpi_blk_prenorm_layer};
