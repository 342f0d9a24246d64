/* Gemma 2: pre- and post-norms around attention and MLP ((1 + w) RMSNorms), GeGLU (gelu tanh) MLP, embedding
 * times sqrt(hidden), q.k times query_pre_attn_scalar^-0.5, attention logits and final logits softcapped
 * (defaults 50 and 30), sliding window on alternate layers (even layers, or layer_types). */
#include "core/status.h"
#include "model/family.h"

static xpi_status parse(const char *path, const cJSON *root, xpi_config *c) {
  int have_types = 0;
  XPI_TRY(xpi_parse_gemma_like(path, root, c, 50.0, 30.0, &have_types));
  if (!have_types) /* transformers 4: is_sliding = not bool(layer_idx % 2) */
    for (int32_t l = 0; l < c->n_layers; l++) c->layer_sliding[l] = l % 2 == 0;
  return XPI_OK;
}

const xpi_family xpi_family_gemma2 = {"gemma2", "Gemma2ForCausalLM", 256, parse, xpi_load_sandwich_layer,
                                      xpi_blk_prenorm_layer};
