/* Phi-3: the Llama layer with fused projections: self_attn.qkv_proj [q; k; v] and mlp.gate_up_proj [gate; up],
 * placed as row ranges (views of the mapping on the CPU, no copy); sliding_window on every layer when set;
 * RoPE default or longrope (model/config.c: short factors, attention factor folded into the scale). */
#include "core/status.h"
#include "model/family.h"

static xpi_status parse(const char *path, const cJSON *root, xpi_config *c) {
  XPI_TRY(xpi_parse_llama_like(path, root, c));
  c->attention_bias = c->o_proj_bias = 0; /* Phi3Attention has no biases */
  xpi_family_defaults(root, c, 1e-5, 10000.0); /* Phi3Config */
  return xpi_cfg_window_all(path, root, c);
}

static xpi_status load_layer(xpi_loader *ld, const xpi_config *c, xpi_layer_weights *L) {
  const int64_t H = c->hidden_size, I = c->intermediate_size, hd = c->head_dim;
  const int64_t qd = (int64_t)c->n_heads * hd, kd = (int64_t)c->n_kv_heads * hd, fused = qd + 2 * kd;
  XPI_TRY(xpi_load_norm(ld, "input_layernorm.weight", H, &L->attn_norm));
  XPI_TRY(xpi_load_rows(ld, "self_attn.qkv_proj.weight", fused, 0, qd, H, &L->wq));
  XPI_TRY(xpi_load_rows(ld, "self_attn.qkv_proj.weight", fused, qd, kd, H, &L->wk));
  XPI_TRY(xpi_load_rows(ld, "self_attn.qkv_proj.weight", fused, qd + kd, kd, H, &L->wv));
  XPI_TRY(xpi_load_matrix(ld, "self_attn.o_proj.weight", H, qd, &L->wo));
  XPI_TRY(xpi_load_norm(ld, "post_attention_layernorm.weight", H, &L->mlp_norm));
  XPI_TRY(xpi_load_rows(ld, "mlp.gate_up_proj.weight", 2 * I, 0, I, H, &L->gate));
  XPI_TRY(xpi_load_rows(ld, "mlp.gate_up_proj.weight", 2 * I, I, I, H, &L->up));
  return xpi_load_matrix(ld, "mlp.down_proj.weight", H, I, &L->down);
}

const xpi_family xpi_family_phi3 = {"phi3", "Phi3ForCausalLM", 0, parse, load_layer, xpi_blk_prenorm_layer};
