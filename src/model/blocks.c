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

/* ------------------------------------------------------------------ op wrappers */

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

/* ------------------------------------------------------------------ forward
 * A block reads the residual stream x through its pre-norm (or x itself) and adds its output, through its
 * post-norm and the residual multiplier, back into x. Where the layer fuses (f->fuse, model/fusion.c) the norm
 * runs inside the block's first projections' launch and the add inside its output projection's; otherwise the
 * add stays pending and the next pre-norm's rmsnorm does it (x += pending; h = norm(x)). */

static const xpi_weight *opt(const xpi_weight *w) { return w->rows ? w : NULL; }

/* What a block's first projections read: in, normed by norm inside their launch when norm is not NULL. */
typedef struct blk_src {
  const float *in;
  const xpi_weight *norm;
} blk_src;

/* The block's input pre(x), or x without pre, the pending branch added into x first: h = norm(x) by rmsnorm, or
 * (in_launch) x with the norm left to the projections. */
static xpi_status source(xpi_fwd *f, const xpi_weight *pre, int in_launch, blk_src *s) {
  if (pre && !in_launch) {
    XPI_TRY(f->o->rmsnorm(f->be, f->h, f->x, f->pending, pre, f->n, f->c->hidden_size, f->c->rms_norm_eps));
    f->pending = NULL;
    *s = (blk_src){f->h, NULL};
    return XPI_OK;
  }
  if (f->pending) XPI_TRY(f->o->add(f->be, f->x, f->pending, (int64_t)f->n * f->c->hidden_size));
  f->pending = NULL;
  *s = (blk_src){f->x, pre};
  return XPI_OK;
}

xpi_status xpi_blk_input(xpi_fwd *f, const xpi_weight *pre, const float **in) {
  blk_src s;
  XPI_TRY(source(f, pre, 0, &s));
  *in = s.in;
  return XPI_OK;
}

/* q, k, v = src @ wq|wk|wv^T (+ biases). */
static xpi_status qkv(xpi_fwd *f, const xpi_layer_weights *L, blk_src s) {
  const xpi_backend_ops *o = f->o;
  xpi_backend *be = f->be;
  const int32_t n = f->n;
  if (f->fuse.qkv) {
    float *const outs[3] = {f->q, f->k, f->v};
    const xpi_weight *const ws[3] = {&L->wq, &L->wk, &L->wv}, *const bs[3] = {opt(&L->bq), opt(&L->bk), opt(&L->bv)};
    return o->matmul_multi(be, 3, outs, s.in, s.norm, f->c->rms_norm_eps, f->h, ws, bs, n);
  }
  XPI_TRY(o->matmul(be, f->q, s.in, &L->wq, opt(&L->bq), n));
  XPI_TRY(o->matmul(be, f->k, s.in, &L->wk, opt(&L->bk), n));
  return o->matmul(be, f->v, s.in, &L->wv, opt(&L->bv), n);
}

static xpi_glu_act glu_act(const xpi_config *c) {
  return c->act == XPI_ACT_GELU_TANH ? XPI_GLU_GELU_TANH : XPI_GLU_SILU;
}

/* gate = act(src @ L's gate^T) * (src @ L's up^T), at the size of L's gate (the intermediate size; a Qwen2-MoE
 * layer's shared expert's). */
static xpi_status glu(xpi_fwd *f, const xpi_layer_weights *L, blk_src s) {
  const int32_t n = f->n, I = (int32_t)L->gate.rows;
  if (f->fuse.glu)
    return f->o->matmul_glu(f->be, f->gate, f->up, s.in, s.norm, s.norm ? f->c->rms_norm_eps : 0.0f,
                            s.norm ? f->h : NULL, &L->gate, &L->up, glu_act(f->c), n);
  XPI_TRY(f->o->matmul(f->be, f->gate, s.in, &L->gate, NULL, n));
  XPI_TRY(f->o->matmul(f->be, f->up, s.in, &L->up, NULL, n));
  return op_act(f, f->gate, f->gate, f->up, n, I);
}

/* x += post(in @ w^T (+ b)): the add inside the projection's launch where the layer fuses, else the projection
 * into res, which becomes the pending branch (xpi_blk_branch). */
static xpi_status out_residual(xpi_fwd *f, const float *in, const xpi_weight *w, const xpi_weight *b,
                               const xpi_weight *post) {
  if (f->fuse.residual) return f->o->matmul_add(f->be, f->x, f->res, in, w, b, f->n);
  XPI_TRY(f->o->matmul(f->be, f->res, in, w, b, f->n));
  return xpi_blk_branch(f, f->res, post);
}

/* q and k in place: the layer's q/k norm (whole projection, or per head inside the rope op) and RoPE set. */
static xpi_status qk_rope(xpi_fwd *f, const xpi_layer_weights *L) {
  const xpi_config *c = f->c;
  const xpi_backend_ops *o = f->o;
  xpi_backend *be = f->be;
  const int32_t n = f->n, hq = c->n_heads, hk = c->n_kv_heads, hd = c->head_dim, l = f->layer;
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
    return o->rope(be, f->q, f->k, f->pos, n, hq, hk, &rp, f->inv_freq[r], qn, kn, c->rms_norm_eps);
  }
  if (qn) return xpi_err(XPI_ERR_INTERNAL, "layer %d: per-head q/k norm without RoPE", l); /* refused at parse */
  return XPI_OK;
}

xpi_status xpi_blk_attention(xpi_fwd *f, const xpi_layer_weights *L, const xpi_weight *pre, const xpi_weight *post) {
  const xpi_config *c = f->c;
  const int32_t l = f->layer;
  blk_src s;
  XPI_TRY(source(f, pre, f->fuse.residual, &s));
  XPI_TRY(qkv(f, L, s));
  XPI_TRY(qk_rope(f, L));
  const xpi_attn_params ap = {c->attn_scale, c->attn_softcap, c->layer_sliding[l] ? c->sliding_window : 0, f->impl};
  XPI_TRY(op_attention(f, f->att, &ap));
  return out_residual(f, f->att, &L->wo, opt(&L->bo), post);
}

xpi_status xpi_blk_mlp(xpi_fwd *f, const xpi_layer_weights *L, const xpi_weight *pre, const xpi_weight *post) {
  blk_src s;
  XPI_TRY(source(f, pre, f->fuse.residual, &s));
  XPI_TRY(glu(f, L, s));
  return out_residual(f, f->gate, &L->down, NULL, post);
}

xpi_status xpi_blk_ffn(xpi_fwd *f, const xpi_layer_weights *L, const float *in, float *out) {
  XPI_TRY(glu(f, L, (blk_src){in, NULL}));
  return f->o->matmul(f->be, out, f->gate, &L->down, NULL, f->n);
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

xpi_status xpi_blk_prenorm_layer(xpi_fwd *f, const xpi_layer_weights *L) {
  XPI_TRY(xpi_blk_attention(f, L, &L->attn_norm, &L->post_attn_norm));
  return xpi_blk_mlp(f, L, &L->mlp_norm, &L->post_mlp_norm);
}
