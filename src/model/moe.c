/* Mixture of experts shared by the Qwen-MoE families (moe.h): router matmul, moe_route, the experts' gate/up/down
 * through moe_matmul (each chosen expert read once per step, tokens grouped by expert), SwiGLU over all slots at
 * once, and moe_combine, which also adds Qwen2-MoE's sigmoid-gated shared expert. Everything stays on the
 * backend, so a decode step records and replays like a dense one. moe_mlp may leave the experts' output rows in its
 * own order (the CPU's: grouped by expert); moe_combine then reads them through the positions it returns. */
#include "model/moe.h"

#include <string.h>

#include "core/json.h"
#include "core/status.h"

/* ------------------------------------------------------------------ config */

xpi_status xpi_parse_moe(const char *path, const cJSON *root, xpi_config *c, int shared) {
  int32_t n = 0;
  XPI_TRY(xpi_cfg_int(path, root, "num_local_experts", 1, 1 << 16, &n));
  if (!n) XPI_TRY(xpi_cfg_int(path, root, "num_experts", 1, 1 << 16, &n));
  if (!n) return xpi_err(XPI_ERR_FORMAT, "%s: \"num_experts\" (or \"num_local_experts\") is missing", path);
  c->n_experts = n;
  static const char *const req[] = {"num_experts_per_tok", "moe_intermediate_size", "shared_expert_intermediate_size"};
  int32_t *dst[] = {&c->n_experts_per_tok, &c->moe_intermediate_size, &c->shared_expert_intermediate_size};
  for (int i = 0; i < (shared ? 3 : 2); i++) {
    XPI_TRY(xpi_cfg_int(path, root, req[i], 1, i == 0 ? n : 1 << 20, dst[i]));
    if (!*dst[i]) return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" is missing", path, req[i]);
  }
  XPI_TRY(xpi_cfg_bool(path, root, "norm_topk_prob", &c->norm_topk_prob));
  int32_t step = 1;
  XPI_TRY(xpi_cfg_int(path, root, "decoder_sparse_step", 1, XPI_MAX_LAYERS, &step));
  for (int32_t l = 0; l < c->n_layers; l++) c->layer_moe[l] = (l + 1) % step == 0;
  const cJSON *mo = xpi_cfg_get(root, "mlp_only_layers");
  if (mo && !cJSON_IsArray(mo))
    return xpi_err(XPI_ERR_FORMAT, "%s: \"mlp_only_layers\" must be a list of layer indices", path);
  for (const cJSON *x = mo ? mo->child : NULL; x; x = x->next) {
    if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble >= c->n_layers ||
        x->valuedouble != (double)(int)x->valuedouble)
      return xpi_err(XPI_ERR_FORMAT, "%s: \"mlp_only_layers\" holds a value that is not a layer index below %d", path,
                     c->n_layers);
    c->layer_moe[(int)x->valuedouble] = 0;
  }
  return XPI_OK;
}

/* ------------------------------------------------------------------ tensors */

xpi_status xpi_load_moe_layer(xpi_loader *ld, const xpi_config *c, xpi_layer_weights *L) {
  if (!c->layer_moe[xpi_loader_layer(ld)]) return xpi_load_llama_layer(ld, c, L);
  const int64_t H = c->hidden_size, Im = c->moe_intermediate_size, Is = c->shared_expert_intermediate_size;
  XPI_TRY(xpi_load_norm(ld, "input_layernorm.weight", H, &L->attn_norm));
  XPI_TRY(xpi_load_attention(ld, c, L));
  XPI_TRY(xpi_load_norm(ld, "post_attention_layernorm.weight", H, &L->mlp_norm));
  L->moe = 1;
  XPI_TRY(xpi_load_matrix_float(ld, "mlp.gate.weight", c->n_experts, H, &L->router));
  XPI_TRY(xpi_load_experts(ld, "gate_proj", c->n_experts, Im, H, &L->ex_gate));
  XPI_TRY(xpi_load_experts(ld, "up_proj", c->n_experts, Im, H, &L->ex_up));
  XPI_TRY(xpi_load_experts(ld, "down_proj", c->n_experts, H, Im, &L->ex_down));
  if (Is <= 0) return XPI_OK;
  XPI_TRY(xpi_load_matrix(ld, "mlp.shared_expert.gate_proj.weight", Is, H, &L->gate));
  XPI_TRY(xpi_load_matrix(ld, "mlp.shared_expert.up_proj.weight", Is, H, &L->up));
  XPI_TRY(xpi_load_matrix(ld, "mlp.shared_expert.down_proj.weight", H, Is, &L->down));
  return xpi_load_matrix_float(ld, "mlp.shared_expert_gate.weight", 1, H, &L->shared_gate);
}

/* ------------------------------------------------------------------ activations */

void xpi_moe_bufs_free(xpi_backend *be, xpi_moe_bufs *b) {
  void *all[] = {b->logits, b->ids, b->pos, b->wts, b->g, b->u, b->y, b->sg};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (all[i]) be->ops->free(be, all[i]);
  memset(b, 0, sizeof *b);
}

uint64_t xpi_moe_bufs_bytes(const xpi_config *c, int32_t max_tokens) {
  const uint64_t T = (uint64_t)max_tokens, K = (uint64_t)c->n_experts_per_tok, Im = (uint64_t)c->moe_intermediate_size;
  /* logits, ids, pos, wts, g, u, y, sg of xpi_moe_bufs_alloc (4-byte elements) */
  return 4 * (T * (uint64_t)c->n_experts + 3 * T * K + 2 * T * K * Im + (T * K + T) * (uint64_t)c->hidden_size + T);
}

xpi_status xpi_moe_bufs_alloc(xpi_backend *be, const xpi_config *c, int32_t max_tokens, xpi_moe_bufs *b) {
  memset(b, 0, sizeof *b);
  const size_t T = (size_t)max_tokens, K = (size_t)c->n_experts_per_tok;
  b->logits = be->ops->alloc(be, T * (size_t)c->n_experts * sizeof(float));
  b->ids = be->ops->alloc(be, T * K * sizeof(int32_t));
  b->pos = be->ops->alloc(be, T * K * sizeof(int32_t));
  b->wts = be->ops->alloc(be, T * K * sizeof(float));
  b->g = be->ops->alloc(be, T * K * (size_t)c->moe_intermediate_size * sizeof(float));
  b->u = be->ops->alloc(be, T * K * (size_t)c->moe_intermediate_size * sizeof(float));
  b->y = be->ops->alloc(be, (T * K + T) * (size_t)c->hidden_size * sizeof(float));
  b->sg = be->ops->alloc(be, T * sizeof(float));
  if (!b->logits || !b->ids || !b->pos || !b->wts || !b->g || !b->u || !b->y || !b->sg) {
    xpi_moe_bufs_free(be, b);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: out of memory for the MoE buffers of %d tokens", be->device,
                   max_tokens);
  }
  return XPI_OK;
}

/* ------------------------------------------------------------------ forward */

xpi_status xpi_blk_moe(xpi_fwd *f, const xpi_layer_weights *L, const xpi_weight *pre) {
  const xpi_config *c = f->c;
  const xpi_backend_ops *o = f->o;
  const xpi_moe_bufs *b = f->moe;
  xpi_backend *be = f->be;
  const int32_t n = f->n, K = c->n_experts_per_tok, Im = c->moe_intermediate_size, H = c->hidden_size;
  if (!b) return xpi_err(XPI_ERR_INTERNAL, "layer %d: a MoE layer without MoE buffers", f->layer);
  const float *in = NULL;
  XPI_TRY(xpi_blk_input(f, pre, &in));
  XPI_TRY(o->matmul(be, b->logits, in, &L->router, NULL, n));
  XPI_TRY(o->moe_route(be, b->ids, b->wts, b->logits, n, c->n_experts, K, c->norm_topk_prob));
  const int32_t *pos = NULL; /* slot s's row of y: s, or as moe_mlp left them */
  if (xpi_fusion_moe_mlp(be, &L->ex_gate, n)) { /* the same in fewer launches (the CPU's prefill) */
    XPI_TRY(o->moe_mlp(be, b->y, b->pos, b->g, b->u, in, &L->ex_gate, &L->ex_up, &L->ex_down, b->ids, n, K));
    pos = b->pos;
  } else {
    XPI_TRY(o->moe_matmul(be, b->g, in, 1, &L->ex_gate, b->ids, n, K));
    XPI_TRY(o->moe_matmul(be, b->u, in, 1, &L->ex_up, b->ids, n, K));
    XPI_TRY(o->swiglu(be, b->g, b->g, b->u, n * K, Im));
    XPI_TRY(o->moe_matmul(be, b->y, b->g, K, &L->ex_down, b->ids, n, K));
  }
  float *shared = NULL;
  if (L->shared_gate.rows) {
    shared = b->y + (size_t)n * (size_t)K * (size_t)H;
    XPI_TRY(xpi_blk_ffn(f, L, in, shared)); /* the shared expert: the dense MLP at its own size */
    XPI_TRY(o->matmul(be, b->sg, in, &L->shared_gate, NULL, n));
  }
  XPI_TRY(o->moe_combine(be, f->res, b->y, pos, b->wts, shared, b->sg, n, K, H));
  return xpi_blk_branch(f, f->res, NULL);
}

xpi_status xpi_moe_layer(xpi_fwd *f, const xpi_layer_weights *L) {
  if (!L->moe) return xpi_blk_prenorm_layer(f, L);
  XPI_TRY(xpi_blk_attention(f, L, &L->attn_norm, NULL)); /* x += attn(norm(x)) */
  return xpi_blk_moe(f, L, &L->mlp_norm);                /* x += moe(norm(x)) */
}
