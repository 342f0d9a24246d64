/* Llama (LlamaForCausalLM): pre-norm layers, SwiGLU MLP, RoPE (default or llama3 scaling), q/k/v/o biases when
 * attention_bias. The reference layout the other families vary. */
#include "core/status.h"
#include "model/family.h"

static xpi_status parse(const char *path, const cJSON *root, xpi_config *c) {
  return xpi_parse_llama_like(path, root, c);
}

const xpi_family xpi_family_llama = {"llama", "LlamaForCausalLM", 0, parse, xpi_load_llama_layer,
                                     xpi_blk_prenorm_layer};
