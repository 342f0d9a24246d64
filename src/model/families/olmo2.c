/* OLMo 2: no pre-norms; the attention and MLP outputs are normed (post_attention_layernorm,
 * post_feedforward_layernorm) before their residual add, and q and k are RMS-normed over the whole projection
 * (all heads together) before RoPE. */
#include "core/status.h"
#include "model/family.h"

static xpi_status parse(const char *path, const cJSON *root, xpi_config *c) {
  XPI_TRY(xpi_parse_llama_like(path, root, c));
  c->qk_norm = XPI_QK_WHOLE;
  xpi_family_defaults(root, c, 1e-5, 10000.0); /* Olmo2Config */
  return XPI_OK;
}

static xpi_status load_layer(xpi_loader *ld, const xpi_config *c, xpi_layer_weights *L) {
  XPI_TRY(xpi_load_attention(ld, c, L));
  XPI_TRY(xpi_load_norm(ld, "post_attention_layernorm.weight", c->hidden_size, &L->post_attn_norm));
  XPI_TRY(xpi_load_norm(ld, "post_feedforward_layernorm.weight", c->hidden_size, &L->post_mlp_norm));
  return xpi_load_mlp(ld, c, L);
}

/* x += post_norm(attn(x)); x += post_norm(mlp(x)) */
static xpi_status layer(xpi_fwd *f, const xpi_layer_weights *L) {
  XPI_TRY(xpi_blk_attention(f, L, NULL, &L->post_attn_norm));
  return xpi_blk_mlp(f, L, NULL, &L->post_mlp_norm);
}

const xpi_family xpi_family_olmo2 = {"olmo2", "Olmo2ForCausalLM", 0, parse, load_layer, layer};
