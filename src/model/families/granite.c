/* Granite: the Llama layer with multipliers: the embedding times embedding_multiplier, each residual branch
 * times residual_multiplier, q.k times attention_multiplier (instead of 1/sqrt(head_dim)), the logits divided by
 * logits_scaling. */
#include "core/status.h"
#include "model/family.h"

static xpi_status parse(const char *path, const cJSON *root, xpi_config *c) {
  XPI_TRY(xpi_parse_llama_like(path, root, c));
  double emb = 1.0, res = 1.0, att = 1.0, lgs = 1.0; /* GraniteConfig defaults */
  XPI_TRY(xpi_cfg_num(path, root, "embedding_multiplier", 0.0, 1, 1e6, &emb, NULL));
  XPI_TRY(xpi_cfg_num(path, root, "residual_multiplier", 0.0, 1, 1e6, &res, NULL));
  XPI_TRY(xpi_cfg_num(path, root, "attention_multiplier", 0.0, 1, 1e6, &att, NULL));
  XPI_TRY(xpi_cfg_num(path, root, "logits_scaling", 0.0, 1, 1e6, &lgs, NULL));
  c->embed_scale = (float)emb;
  c->residual_scale = (float)res;
  c->attn_scale = (float)att;
  c->logit_scale = (float)(1.0 / lgs);
  return XPI_OK;
}

const xpi_family xpi_family_granite = {"granite", "GraniteForCausalLM", 0, parse, xpi_load_llama_layer,
                                       xpi_blk_prenorm_layer};
