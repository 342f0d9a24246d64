/* Mistral: the Llama layer without any attention bias, with sliding-window attention on every layer when
 * sliding_window is set (transformers' mask: a token sees itself and the window - 1 positions before it). */
#include "core/status.h"
#include "model/family.h"

static xpi_status parse(const char *path, const cJSON *root, xpi_config *c) {
  XPI_TRY(xpi_parse_llama_like(path, root, c));
  c->attention_bias = c->o_proj_bias = 0; /* MistralAttention has no biases, whatever attention_bias says */
  return xpi_cfg_window_all(path, root, c);
}

const xpi_family xpi_family_mistral = {"mistral", "MistralForCausalLM", 0, parse, xpi_load_llama_layer,
                                       xpi_blk_prenorm_layer};
