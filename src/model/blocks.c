/* The transformer pieces the families share (see model/family.h): config defaults, tensor sets and forward
 * blocks over the ops. Each block reads what varies between families from the config (biases, q/k norm kind,
 * RoPE set per layer, window, softcaps, multipliers) so a family file only says which blocks in which order. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/json.h"
#include "core/status.h"
#include "model/family.h"

/* ------------------------------------------------------------------ config */

void xpi_family_defaults(const cJSON *root, xpi_config *c, double rms_norm_eps, double rope_theta) {
  if (!xpi_cfg_get(root, "rms_norm_eps")) c->rms_norm_eps = (float)rms_norm_eps;
  const cJSON *rp = xpi_cfg_get(root, "rope_parameters");
  if (!rp) rp = xpi_cfg_get(root, "rope_scaling");
  if (xpi_cfg_get(root, "rope_theta") || (rp && xpi_cfg_get(rp, "rope_theta"))) return;
  if (rp && (xpi_cfg_get(rp, "full_attention") || xpi_cfg_get(rp, "sliding_attention"))) return;
  c->rope[0].p.theta = (float)rope_theta;
}

xpi_status xpi_parse_llama_like(const char *path, const cJSON *root, xpi_config *c) {
  XPI_TRY(xpi_cfg_act(path, root, "hidden_act", XPI_ACT_SILU, &c->act));
  int ab = 0;
  XPI_TRY(xpi_cfg_bool(path, root, "attention_bias", &ab));
  c->attention_bias = c->o_proj_bias = ab; /* LlamaAttention: q/k/v/o all follow attention_bias */
  int mlp_bias = 0;
  XPI_TRY(xpi_cfg_bool(path, root, "mlp_bias", &mlp_bias));
  if (mlp_bias)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: \"mlp_bias\" true is not supported (MLP projections without bias only)",
                   path);
  return XPI_OK;
}

/* A softcap: the default when the key is absent, none (0) when null. */
static xpi_status softcap_of(const char *path, const cJSON *root, const char *key, double dflt, float *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
  double cap = v ? 0.0 : dflt;
  XPI_TRY(xpi_cfg_num(path, root, key, 0.0, 1, 1e6, &cap, NULL));
  *out = (float)cap;
  return XPI_OK;
}

xpi_status xpi_parse_gemma_like(const char *path, const cJSON *root, xpi_config *c, double attn_softcap,
                                double final_softcap, int *have_layer_types) {
  XPI_TRY(xpi_cfg_act(path, root, "hidden_activation", XPI_ACT_GELU_TANH, &c->act));
  int ab = 0;
  XPI_TRY(xpi_cfg_bool(path, root, "attention_bias", &ab));
  c->attention_bias = c->o_proj_bias = ab;
  if (!xpi_cfg_get(root, "tie_word_embeddings")) c->tie_word_embeddings = 1;
  c->norm_plus_one = 1;
  c->embed_scale = (float)sqrt((double)c->hidden_size); /* the normalizer, hidden_size ** 0.5 */
  double qpas = 256.0;
  XPI_TRY(xpi_cfg_num(path, root, "query_pre_attn_scalar", 0.0, 1, 1e9, &qpas, NULL));
  c->attn_scale = (float)(1.0 / sqrt(qpas));
  XPI_TRY(softcap_of(path, root, "attn_logit_softcapping", attn_softcap, &c->attn_softcap));
  XPI_TRY(softcap_of(path, root, "final_logit_softcapping", final_softcap, &c->final_softcap));
  c->sliding_window = 4096;
  XPI_TRY(xpi_cfg_int(path, root, "sliding_window", 1, INT32_MAX, &c->sliding_window));
  return xpi_cfg_layer_types(path, root, c, have_layer_types);
}

/* ------------------------------------------------------------------ tensors */

xpi_status xpi_load_attention(xpi_loader *ld, const xpi_config *c, xpi_layer_weights *L) {
  const int64_t H = c->hidden_size, hd = c->head_dim, qd = (int64_t)c->n_heads * hd, kd = (int64_t)c->n_kv_heads * hd;
  XPI_TRY(xpi_load_matrix(ld, "self_attn.q_proj.weight", qd, H, &L->wq));
  XPI_TRY(xpi_load_matrix(ld, "self_attn.k_proj.weight", kd, H, &L->wk));
  XPI_TRY(xpi_load_matrix(ld, "self_attn.v_proj.weight", kd, H, &L->wv));
  XPI_TRY(xpi_load_matrix(ld, "self_attn.o_proj.weight", H, qd, &L->wo));
  if (c->attention_bias) {
    XPI_TRY(xpi_load_vector(ld, "self_attn.q_proj.bias", qd, &L->bq));
    XPI_TRY(xpi_load_vector(ld, "self_attn.k_proj.bias", kd, &L->bk));
    XPI_TRY(xpi_load_vector(ld, "self_attn.v_proj.bias", kd, &L->bv));
  }
  if (c->o_proj_bias) XPI_TRY(xpi_load_vector(ld, "self_attn.o_proj.bias", H, &L->bo));
  if (c->qk_norm != XPI_QK_NONE) {
    const int whole = c->qk_norm == XPI_QK_WHOLE;
    XPI_TRY(xpi_load_norm(ld, "self_attn.q_norm.weight", whole ? qd : hd, &L->q_norm));
    XPI_TRY(xpi_load_norm(ld, "self_attn.k_norm.weight", whole ? kd : hd, &L->k_norm));
  }
  return XPI_OK;
}

xpi_status xpi_load_llama_layer(xpi_loader *ld, const xpi_config *c, xpi_layer_weights *L) {
  XPI_TRY(xpi_load_norm(ld, "input_layernorm.weight", c->hidden_size, &L->attn_norm));
  XPI_TRY(xpi_load_attention(ld, c, L));
  XPI_TRY(xpi_load_norm(ld, "post_attention_layernorm.weight", c->hidden_size, &L->mlp_norm));
  return xpi_load_mlp(ld, c, L);
}

xpi_status xpi_load_sandwich_layer(xpi_loader *ld, const xpi_config *c, xpi_layer_weights *L) {
  const int64_t H = c->hidden_size;
  XPI_TRY(xpi_load_norm(ld, "input_layernorm.weight", H, &L->attn_norm));
  XPI_TRY(xpi_load_attention(ld, c, L));
  XPI_TRY(xpi_load_norm(ld, "post_attention_layernorm.weight", H, &L->post_attn_norm));
  XPI_TRY(xpi_load_norm(ld, "pre_feedforward_layernorm.weight", H, &L->mlp_norm));
  XPI_TRY(xpi_load_norm(ld, "post_feedforward_layernorm.weight", H, &L->post_mlp_norm));
  return xpi_load_mlp(ld, c, L);
}

xpi_status xpi_load_mlp(xpi_loader *ld, const xpi_config *c, xpi_layer_weights *L) {
  const int64_t H = c->hidden_size, I = c->intermediate_size;
  XPI_TRY(xpi_load_matrix(ld, "mlp.gate_proj.weight", I, H, &L->gate));
  XPI_TRY(xpi_load_matrix(ld, "mlp.up_proj.weight", I, H, &L->up));
  return xpi_load_matrix(ld, "mlp.down_proj.weight", H, I, &L->down);
}

/* ------------------------------------------------------------------ op wrappers (issue 15's new ops) */

xpi_status xpi_op_scale(xpi_backend *be, float *x, int64_t count, float s) {
  if (s == 1.0f) return XPI_OK;
  return be->ops->scale(be, x, count, s);
}

xpi_status xpi_op_softcap(xpi_backend *be, float *x, int64_t count, float cap) {
  if (cap <= 0.0f) return XPI_OK;
  return be->ops->softcap(be, x, count, cap);
}

static xpi_status op_act(xpi_fwd *f, float *out, const float *gate, const float *up, int32_t n, int32_t I) {
  if (f->c->act == XPI_ACT_GELU_TANH) return f->o->geglu(f->be, out, gate, up, n, I);
  return f->o->swiglu(f->be, out, gate, up, n, I);
}

static xpi_status op_attention(xpi_fwd *f, float *out, const xpi_attn_params *ap) {
  const xpi_config *c = f->c;
  return f->o->attention(f->be, out, f->q, f->k, f->v, f->kv, f->kv_layer, f->map, f->n, c->n_heads, c->n_kv_heads,
                         c->head_dim, ap);
}

/* ------------------------------------------------------------------ forward */

static const xpi_weight *opt(const xpi_weight *w) { return w->rows ? w : NULL; }

xpi_status xpi_blk_norm_in(xpi_fwd *f, const xpi_weight *w) {
  XPI_TRY(f->o->rmsnorm(f->be, f->h, f->x, f->pending, w, f->n, f->c->hidden_size, f->c->rms_norm_eps));
  f->pending = NULL;
  return XPI_OK;
}

xpi_status xpi_blk_flush(xpi_fwd *f) {
  if (f->pending) XPI_TRY(f->o->add(f->be, f->x, f->pending, (int64_t)f->n * f->c->hidden_size));
  f->pending = NULL;
  return XPI_OK;
}

/* The attention block over in, or over rmsnorm(in) with norm (fused: only with matmul_multi); the output
 * projection into out, or added into out with accumulate (matmul_add). */
static xpi_status attention(xpi_fwd *f, const xpi_layer_weights *L, const float *in, const xpi_weight *norm,
                            float *out, int accumulate) {
  const xpi_config *c = f->c;
  const xpi_backend_ops *o = f->o;
  xpi_backend *be = f->be;
  const int32_t n = f->n, hq = c->n_heads, hk = c->n_kv_heads, hd = c->head_dim, l = f->layer;
  if (norm || (o->matmul_multi && (!L->bq.rows) == (!L->bk.rows) && (!L->bq.rows) == (!L->bv.rows))) {
    float *const outs[3] = {f->q, f->k, f->v}; /* q|k|v in one launch */
    const xpi_weight *const ws[3] = {&L->wq, &L->wk, &L->wv}, *const bs[3] = {opt(&L->bq), opt(&L->bk), opt(&L->bv)};
    XPI_TRY(o->matmul_multi(be, 3, outs, in, norm, c->rms_norm_eps, f->h, ws, bs, n));
  } else {
    XPI_TRY(o->matmul(be, f->q, in, &L->wq, opt(&L->bq), n));
    XPI_TRY(o->matmul(be, f->k, in, &L->wk, opt(&L->bk), n));
    XPI_TRY(o->matmul(be, f->v, in, &L->wv, opt(&L->bv), n));
  }
  const xpi_weight *qn = NULL, *kn = NULL;
  if (c->qk_norm == XPI_QK_WHOLE) { /* OLMo 2: one norm over all heads of the projection */
    XPI_TRY(o->rmsnorm(be, f->q, f->q, NULL, &L->q_norm, n, hq * hd, c->rms_norm_eps));
    XPI_TRY(o->rmsnorm(be, f->k, f->k, NULL, &L->k_norm, n, hk * hd, c->rms_norm_eps));
  } else if (c->qk_norm == XPI_QK_PER_HEAD) {
    qn = &L->q_norm, kn = &L->k_norm;
  }
  if (!c->layer_norope[l]) {
    const int r = c->n_rope > 1 && c->layer_sliding[l] ? 1 : 0;
    xpi_rope_params rp = c->rope[r].p;
    rp.long_sel = c->rope[r].long_from > 0 ? f->long_sel : NULL;
    XPI_TRY(o->rope(be, f->q, f->k, f->pos, n, hq, hk, &rp, f->inv_freq[r], qn, kn, c->rms_norm_eps));
  } else if (qn) {
    return xpi_err(XPI_ERR_INTERNAL, "layer %d: per-head q/k norm without RoPE", l); /* refused at parse */
  }
  const xpi_attn_params ap = {c->attn_scale, c->attn_softcap, c->layer_sliding[l] ? c->sliding_window : 0, f->impl};
  XPI_TRY(op_attention(f, f->att, &ap));
  if (accumulate) return o->matmul_add(be, out, f->res, f->att, &L->wo, opt(&L->bo), n);
  return o->matmul(be, out, f->att, &L->wo, opt(&L->bo), n);
}

xpi_status xpi_blk_attention(xpi_fwd *f, const xpi_layer_weights *L, const float *in, float *out) {
  return attention(f, L, in, NULL, out, 0);
}

static xpi_glu_act glu_act(const xpi_config *c) {
  return c->act == XPI_ACT_GELU_TANH ? XPI_GLU_GELU_TANH : XPI_GLU_SILU;
}

xpi_status xpi_blk_mlp(xpi_fwd *f, const xpi_layer_weights *L, const float *in, float *out) {
  const int32_t n = f->n, I = (int32_t)L->gate.rows; /* the config's, or a MoE layer's shared expert's */
  if (f->o->matmul_glu) { /* gate, up and the activation in one launch */
    XPI_TRY(f->o->matmul_glu(f->be, f->gate, f->up, in, NULL, 0.0f, NULL, &L->gate, &L->up, glu_act(f->c), n));
    return f->o->matmul(f->be, out, f->gate, &L->down, NULL, n);
  }
  XPI_TRY(f->o->matmul(f->be, f->gate, in, &L->gate, NULL, n));
  XPI_TRY(f->o->matmul(f->be, f->up, in, &L->up, NULL, n));
  XPI_TRY(op_act(f, f->gate, f->gate, f->up, n, I));
  return f->o->matmul(f->be, out, f->gate, &L->down, NULL, n);
}

xpi_status xpi_blk_branch(xpi_fwd *f, float *branch, const xpi_weight *post_norm) {
  const int32_t H = f->c->hidden_size;
  if (post_norm && post_norm->rows) {
    XPI_TRY(f->o->rmsnorm(f->be, f->t, branch, NULL, post_norm, f->n, H, f->c->rms_norm_eps));
    branch = f->t;
  }
  XPI_TRY(xpi_op_scale(f->be, branch, (int64_t)f->n * H, f->c->residual_scale));
  f->pending = branch;
  return XPI_OK;
}

/* The pre-norm layer with the norms in the following projections' launches and the residual adds in the output
 * projections' (the backend's fused ops): where there are no post-norms and no residual scale, and q/k/v have
 * biases all or none. The same values as the separate ops (ops.h). */
static int fused_layer_ok(const xpi_fwd *f, const xpi_layer_weights *L) {
  const xpi_backend_ops *o = f->o;
  return o->matmul_multi && o->matmul_glu && o->matmul_add && !L->post_attn_norm.rows && !L->post_mlp_norm.rows &&
         f->c->residual_scale == 1.0f && (!L->bq.rows) == (!L->bk.rows) && (!L->bq.rows) == (!L->bv.rows);
}

static xpi_status fused_prenorm_layer(xpi_fwd *f, const xpi_layer_weights *L) {
  XPI_TRY(xpi_blk_flush(f));
  XPI_TRY(attention(f, L, f->x, &L->attn_norm, f->x, 1)); /* x += o_proj(attn(norm(x))) */
  XPI_TRY(f->o->matmul_glu(f->be, f->gate, f->up, f->x, &L->mlp_norm, f->c->rms_norm_eps, f->h, &L->gate, &L->up,
                           glu_act(f->c), f->n));
  return f->o->matmul_add(f->be, f->x, f->res, f->gate, &L->down, NULL, f->n); /* x += down(...) */
}

xpi_status xpi_blk_prenorm_layer(xpi_fwd *f, const xpi_layer_weights *L) {
  if (fused_layer_ok(f, L)) return fused_prenorm_layer(f, L);
  XPI_TRY(xpi_blk_norm_in(f, &L->attn_norm));
  XPI_TRY(xpi_blk_attention(f, L, f->h, f->res));
  XPI_TRY(xpi_blk_branch(f, f->res, &L->post_attn_norm));
  XPI_TRY(xpi_blk_norm_in(f, &L->mlp_norm));
  XPI_TRY(xpi_blk_mlp(f, L, f->h, f->res));
  return xpi_blk_branch(f, f->res, &L->post_mlp_norm);
}
