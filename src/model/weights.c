/* Tensors by Hugging Face name -> xpi_weight through backend->ops->weight_create. Every shape is checked
 * against the config before use; a mismatch names the tensor, the expected and the found shape. */
#include "model/weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

static void shape_str(char *buf, size_t cap, const int64_t *shape, int32_t ndim) {
  size_t o = 0;
  o += (size_t)snprintf(buf + o, cap - o, "[");
  for (int32_t i = 0; i < ndim && o < cap; i++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
  if (o < cap) snprintf(buf + o, cap - o, "]");
}

/* What a load reads from: the checkpoint, and which of its tensors were placed (xpi_weights_unused). */
typedef struct loader {
  const xpi_safetensors *st;
  unsigned char *used;              /* [xpi_st_count(st)] */
  uint64_t *bytes;
} loader;

/* Places tensor `name` of shape [rows, cols] (cols only when rows == 0: a vector) on be. */
static xpi_status place(const loader *ld, xpi_backend *be, const char *name, int64_t rows, int64_t cols, int want,
                        xpi_weight *w) {
  const xpi_st_tensor *t = xpi_st_find(ld->st, name);
  if (!t) return xpi_err(XPI_ERR_FORMAT, "tensor '%s' is missing from the checkpoint", name);
  ld->used[t - xpi_st_at(ld->st, 0)] = 1;
  int64_t exp[2] = {rows, cols};
  int32_t endim = rows ? 2 : 1;
  int ok = t->ndim == endim && (rows ? t->shape[0] == rows && t->shape[1] == cols : t->shape[0] == cols);
  if (!ok) {
    char e[64], f[128];
    shape_str(e, sizeof e, rows ? exp : exp + 1, endim);
    shape_str(f, sizeof f, t->shape, t->ndim);
    return xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s' has shape %s, the config implies %s", t->file, name, f, e);
  }
  xpi_dtype dt = t->dtype;
  if (want >= 0 && rows) dt = (xpi_dtype)want; /* conversion/quantization applies to matrices only */
  xpi_status s = be->ops->weight_create(be, w, t->data, t->dtype, rows ? rows : 1, cols, dt);
  if (s != XPI_OK) return xpi_err_prefix(s, "tensor '%s': ", name);
  *ld->bytes += w->bytes;
  return XPI_OK;
}

#define FREE_W(be, w) do { if ((w).data || (w).owned) (be)->ops->weight_free((be), &(w)); } while (0)

static void free_layer(xpi_layer_weights *L) {
  if (!L->be) return;
  xpi_weight *all[] = {&L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo, &L->bq, &L->bk, &L->bv, &L->bo,
                       &L->q_norm, &L->k_norm, &L->mlp_norm, &L->gate, &L->up, &L->down};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) FREE_W(L->be, *all[i]);
  FREE_W(L->be, L->router);
  FREE_W(L->be, L->shared_gate);
  xpi_experts_free(L->be, &L->ex_gate);
  xpi_experts_free(L->be, &L->ex_up);
  xpi_experts_free(L->be, &L->ex_down);
}

/* The n_experts matrices model.layers.<l>.mlp.experts.<e>.<proj>.weight, each [rows, cols] and of one dtype, as
 * one xpi_experts (quantized or converted like any matrix). */
static xpi_status place_experts(const xpi_config *c, const loader *ld, xpi_backend *be, int32_t l, const char *proj,
                                int64_t rows, int64_t cols, int want, xpi_experts *e) {
  const void **src = calloc((size_t)c->n_experts, sizeof *src);
  if (!src) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  xpi_dtype dt = XPI_DT_F32;
  xpi_status s = XPI_OK;
  char name[160];
  for (int32_t x = 0; s == XPI_OK && x < c->n_experts; x++) {
    snprintf(name, sizeof name, "model.layers.%d.mlp.experts.%d.%s.weight", l, x, proj);
    const xpi_st_tensor *t = xpi_st_find(ld->st, name);
    if (!t) {
      s = xpi_err(XPI_ERR_FORMAT, "tensor '%s' is missing from the checkpoint (%d experts)", name, c->n_experts);
      break;
    }
    ld->used[t - xpi_st_at(ld->st, 0)] = 1;
    if (t->ndim != 2 || t->shape[0] != rows || t->shape[1] != cols) {
      char f[128];
      shape_str(f, sizeof f, t->shape, t->ndim);
      s = xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s' has shape %s, the config implies [%lld, %lld]", t->file, name, f,
                  (long long)rows, (long long)cols);
    } else if (x > 0 && t->dtype != dt) {
      s = xpi_err(XPI_ERR_FORMAT, "tensor '%s' is %s, expert 0's is %s", name, xpi_dtype_name(t->dtype),
                  xpi_dtype_name(dt));
    }
    dt = t->dtype;
    src[x] = t->data;
  }
  if (s == XPI_OK) {
    s = xpi_experts_create(be, e, src, dt, c->n_experts, rows, cols, want >= 0 ? (xpi_dtype)want : dt);
    if (s != XPI_OK) s = xpi_err_prefix(s, "model.layers.%d.mlp.experts.*.%s: ", l, proj);
    else *ld->bytes += e->bytes;
  }
  free(src);
  return s;
}

void xpi_weights_free(xpi_model_weights *w) {
  if (!w) return;
  if (w->layers)
    for (int32_t l = 0; l < w->n_layers; l++) free_layer(&w->layers[l]);
  free(w->layers);
  free(w->used);
  if (w->first) FREE_W(w->first, w->embed);
  if (w->last) {
    FREE_W(w->last, w->final_norm);
    if (!w->lm_head_is_embed) FREE_W(w->last, w->lm_head);
  }
  memset(w, 0, sizeof *w);
}

static xpi_status load_layer(const xpi_config *c, const loader *ld, int32_t l, int want, xpi_layer_weights *L) {
  char n[160];
  int64_t H = c->hidden_size, qd = (int64_t)c->n_heads * c->head_dim, kd = (int64_t)c->n_kv_heads * c->head_dim;
  int64_t I = c->intermediate_size;
#define P(suffix, rows, cols, field)                                                 \
  do {                                                                               \
    snprintf(n, sizeof n, "model.layers.%d.%s", l, suffix);                          \
    XPI_TRY(place(ld, L->be, n, rows, cols, want, &L->field));                       \
  } while (0)
  P("input_layernorm.weight", 0, H, attn_norm);
  P("self_attn.q_proj.weight", qd, H, wq);
  P("self_attn.k_proj.weight", kd, H, wk);
  P("self_attn.v_proj.weight", kd, H, wv);
  P("self_attn.o_proj.weight", H, qd, wo);
  if (c->attention_bias) {
    P("self_attn.q_proj.bias", 0, qd, bq);
    P("self_attn.k_proj.bias", 0, kd, bk);
    P("self_attn.v_proj.bias", 0, kd, bv);
  }
  if (c->o_proj_bias) P("self_attn.o_proj.bias", 0, H, bo); /* llama/qwen3 attention_bias: o_proj has one too */
  if (c->qk_norm) {
    P("self_attn.q_norm.weight", 0, c->head_dim, q_norm);
    P("self_attn.k_norm.weight", 0, c->head_dim, k_norm);
  }
  P("post_attention_layernorm.weight", 0, H, mlp_norm);
  if (xpi_config_layer_moe(c, l)) {
    /* the router and the shared expert's gate decide which experts run: kept unquantized */
    int keep = want == XPI_DT_Q8 || want == XPI_DT_Q4 ? -1 : want;
    int64_t Im = c->moe_intermediate_size, Is = c->shared_expert_intermediate_size;
    L->moe = 1;
    snprintf(n, sizeof n, "model.layers.%d.mlp.gate.weight", l);
    XPI_TRY(place(ld, L->be, n, c->n_experts, H, keep, &L->router));
    XPI_TRY(place_experts(c, ld, L->be, l, "gate_proj", Im, H, want, &L->ex_gate));
    XPI_TRY(place_experts(c, ld, L->be, l, "up_proj", Im, H, want, &L->ex_up));
    XPI_TRY(place_experts(c, ld, L->be, l, "down_proj", H, Im, want, &L->ex_down));
    if (Is > 0) {
      P("mlp.shared_expert.gate_proj.weight", Is, H, gate);
      P("mlp.shared_expert.up_proj.weight", Is, H, up);
      P("mlp.shared_expert.down_proj.weight", H, Is, down);
      snprintf(n, sizeof n, "model.layers.%d.mlp.shared_expert_gate.weight", l);
      XPI_TRY(place(ld, L->be, n, 1, H, keep, &L->shared_gate));
    }
    return XPI_OK;
  }
  P("mlp.gate_proj.weight", I, H, gate);
  P("mlp.up_proj.weight", I, H, up);
  P("mlp.down_proj.weight", H, I, down);
#undef P
  return XPI_OK;
}

xpi_status xpi_weights_load(const xpi_config *c, const xpi_safetensors *st, xpi_backend *const *layer_be, int want,
                            xpi_model_weights *w) {
  memset(w, 0, sizeof *w);
  w->n_layers = c->n_layers;
  w->layers = calloc((size_t)c->n_layers, sizeof *w->layers);
  if (!w->layers) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory for %d layers", c->n_layers);
  w->first = layer_be[0];
  w->last = layer_be[c->n_layers - 1];
  w->n_used = xpi_st_count(st);
  if (!(w->used = calloc(w->n_used ? w->n_used : 1, 1))) {
    xpi_weights_free(w);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  loader ld = {st, w->used, &w->bytes};
  xpi_status s = place(&ld, w->first, "model.embed_tokens.weight", c->vocab_size, c->hidden_size,
                       want == XPI_DT_Q8 || want == XPI_DT_Q4 ? -1 : want, &w->embed);
  for (int32_t l = 0; s == XPI_OK && l < c->n_layers; l++) {
    w->layers[l].be = layer_be[l];
    s = load_layer(c, &ld, l, want, &w->layers[l]);
  }
  if (s == XPI_OK) s = place(&ld, w->last, "model.norm.weight", 0, c->hidden_size, want, &w->final_norm);
  if (s == XPI_OK) {
    if (c->tie_word_embeddings && w->last == w->first && want != XPI_DT_Q8 && want != XPI_DT_Q4) {
      w->lm_head = w->embed; /* tied: the same placed tensor */
      w->lm_head_is_embed = 1;
    } else {
      s = place(&ld, w->last, c->tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight", c->vocab_size,
                c->hidden_size, want, &w->lm_head);
    }
  }
  if (s != XPI_OK) xpi_weights_free(w);
  return s;
}

/* Tensors transformers also drops without a word: old checkpoints' RoPE buffers, and a tied model's copy of
 * the embedding as lm_head. */
static int ignorable(const xpi_config *c, const char *name) {
  size_t n = strlen(name);
  static const char inv[] = ".rotary_emb.inv_freq";
  if (n >= sizeof inv - 1 && !strcmp(name + n - (sizeof inv - 1), inv)) return 1;
  return c->tie_word_embeddings && !strcmp(name, "lm_head.weight");
}

size_t xpi_weights_unused(const xpi_model_weights *w, const xpi_config *c, const xpi_safetensors *st, char *list,
                          size_t cap) {
  size_t count = 0, o = 0, shown = 0;
  if (cap) list[0] = 0;
  for (size_t i = 0; i < w->n_used && i < xpi_st_count(st); i++) {
    const char *name = xpi_st_at(st, i)->name;
    if (w->used[i] || ignorable(c, name)) continue;
    count++;
    size_t need = strlen(name) + 2;
    if (cap && o + need + 32 < cap) { /* room for ", name" and a closing "... (N more)" */
      o += (size_t)snprintf(list + o, cap - o, "%s%s", shown ? ", " : "", name);
      shown++;
    }
  }
  if (cap && count > shown) snprintf(list + o, cap - o, "%s(and %zu more)", shown ? " " : "", count - shown);
  return count;
}
