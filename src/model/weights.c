/* Tensors by Hugging Face name -> xpi_weight through backend->ops->weight_create. Every shape is checked
 * against the config before use; a mismatch names the tensor, the expected and the found shape. Which tensors
 * a layer has is declared by its family (family->load_layer through the xpi_load_* helpers below). */
#include "model/weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "model/family.h"
#include "ops/half.h"

static void shape_str(char *buf, size_t cap, const int64_t *shape, int32_t ndim) {
  size_t o = 0;
  o += (size_t)snprintf(buf + o, cap - o, "[");
  for (int32_t i = 0; i < ndim && o < cap; i++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
  if (o < cap) snprintf(buf + o, cap - o, "]");
}

/* What a load reads from: the checkpoint, which of its tensors were placed (xpi_weights_unused), where the
 * current layer goes and how matrices are converted. */
struct xpi_loader {
  const xpi_config *c;
  const xpi_safetensors *st;
  xpi_model_weights *w;
  xpi_backend *be;                  /* backend of what is placed now */
  int32_t layer;                    /* layer being loaded (names "model.layers.<layer>.<suffix>") */
  int want;
};

/* The checkpoint tensor `name` of shape [rows, cols] (cols only when rows == 0: a vector). */
static xpi_status find(const xpi_loader *ld, const char *name, int64_t rows, int64_t cols,
                       const xpi_st_tensor **out) {
  const xpi_st_tensor *t = xpi_st_find(ld->st, name);
  if (!t) return xpi_err(XPI_ERR_FORMAT, "tensor '%s' is missing from the checkpoint", name);
  ld->w->used[t - xpi_st_at(ld->st, 0)] = 1;
  int64_t exp[2] = {rows, cols};
  int32_t endim = rows ? 2 : 1;
  int ok = t->ndim == endim && (rows ? t->shape[0] == rows && t->shape[1] == cols : t->shape[0] == cols);
  if (!ok) {
    char e[64], f[128];
    shape_str(e, sizeof e, rows ? exp : exp + 1, endim);
    shape_str(f, sizeof f, t->shape, t->ndim);
    return xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s' has shape %s, the config implies %s", t->file, name, f, e);
  }
  *out = t;
  return XPI_OK;
}

/* Places rows [r0, r0 + n) of tensor t (n == 0: a vector of cols) on be; want applies to matrices only. */
static xpi_status place_range(const xpi_loader *ld, xpi_backend *be, const xpi_st_tensor *t, const char *name,
                              int64_t r0, int64_t n, int64_t cols, int want, xpi_weight *w) {
  xpi_dtype dt = t->dtype;
  if (want >= 0 && n) dt = (xpi_dtype)want;
  const unsigned char *src = (const unsigned char *)t->data + (size_t)r0 * (size_t)cols * xpi_dtype_size(t->dtype);
  xpi_status s = be->ops->weight_create(be, w, src, t->dtype, n ? n : 1, cols, dt);
  if (s != XPI_OK) return xpi_err_prefix(s, "tensor '%s': ", name);
  ld->w->bytes += w->bytes;
  return XPI_OK;
}

static xpi_status place(const xpi_loader *ld, xpi_backend *be, const char *name, int64_t rows, int64_t cols, int want,
                        xpi_weight *w) {
  const xpi_st_tensor *t = NULL;
  XPI_TRY(find(ld, name, rows, cols, &t));
  return place_range(ld, be, t, name, 0, rows, cols, want, w);
}

static void layer_name(const xpi_loader *ld, const char *suffix, char *n, size_t cap) {
  snprintf(n, cap, "model.layers.%d.%s", ld->layer, suffix);
}

xpi_status xpi_load_matrix(xpi_loader *ld, const char *suffix, int64_t rows, int64_t cols, xpi_weight *w) {
  char n[200];
  layer_name(ld, suffix, n, sizeof n);
  return place(ld, ld->be, n, rows, cols, ld->want, w);
}

xpi_status xpi_load_rows(xpi_loader *ld, const char *suffix, int64_t total_rows, int64_t r0, int64_t rows,
                         int64_t cols, xpi_weight *w) {
  char n[200];
  layer_name(ld, suffix, n, sizeof n);
  const xpi_st_tensor *t = NULL;
  XPI_TRY(find(ld, n, total_rows, cols, &t));
  if (r0 < 0 || rows <= 0 || r0 + rows > total_rows)
    return xpi_err(XPI_ERR_INTERNAL, "tensor '%s': rows [%lld, %lld) outside its %lld", n, (long long)r0,
                   (long long)(r0 + rows), (long long)total_rows);
  return place_range(ld, ld->be, t, n, r0, rows, cols, ld->want, w);
}

int32_t xpi_loader_layer(const xpi_loader *ld) { return ld->layer; }

xpi_status xpi_load_matrix_float(xpi_loader *ld, const char *suffix, int64_t rows, int64_t cols, xpi_weight *w) {
  char n[200];
  layer_name(ld, suffix, n, sizeof n);
  return place(ld, ld->be, n, rows, cols, ld->want == XPI_DT_Q8 || ld->want == XPI_DT_Q4 ? -1 : ld->want, w);
}

xpi_status xpi_load_experts(xpi_loader *ld, const char *proj, int32_t n_experts, int64_t rows, int64_t cols,
                            xpi_experts *e) {
  const void **src = calloc((size_t)n_experts, sizeof *src);
  if (!src) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  xpi_dtype dt = XPI_DT_F32;
  xpi_status s = XPI_OK;
  char suffix[128], n[200];
  for (int32_t x = 0; s == XPI_OK && x < n_experts; x++) {
    snprintf(suffix, sizeof suffix, "mlp.experts.%d.%s.weight", x, proj);
    layer_name(ld, suffix, n, sizeof n);
    const xpi_st_tensor *t = NULL;
    s = find(ld, n, rows, cols, &t);
    if (s == XPI_OK && x > 0 && t->dtype != dt)
      s = xpi_err(XPI_ERR_FORMAT, "tensor '%s' is %s, expert 0's is %s", n, xpi_dtype_name(t->dtype),
                  xpi_dtype_name(dt));
    if (s == XPI_OK) dt = t->dtype, src[x] = t->data;
  }
  if (s == XPI_OK) {
    s = xpi_experts_create(ld->be, e, src, dt, n_experts, rows, cols, ld->want >= 0 ? (xpi_dtype)ld->want : dt);
    if (s != XPI_OK) s = xpi_err_prefix(s, "model.layers.%d.mlp.experts.*.%s.weight: ", ld->layer, proj);
    else ld->w->bytes += e->bytes;
  }
  free(src);
  return s;
}

xpi_status xpi_load_vector(xpi_loader *ld, const char *suffix, int64_t n, xpi_weight *w) {
  char name[200];
  layer_name(ld, suffix, name, sizeof name);
  return place(ld, ld->be, name, 0, n, ld->want, w);
}

/* 1 + w in f32, in a host buffer the weight borrows for the model's life (the CPU backend keeps f32 in place;
 * others copy it). */
static xpi_status place_norm(xpi_loader *ld, xpi_backend *be, const char *name, int64_t n, xpi_weight *w) {
  if (!ld->c->norm_plus_one) return place(ld, be, name, 0, n, ld->want, w);
  const xpi_st_tensor *t = NULL;
  XPI_TRY(find(ld, name, 0, n, &t));
  void **grown = realloc(ld->w->host, (ld->w->n_host + 1) * sizeof *grown);
  float *buf = malloc((size_t)n * sizeof *buf);
  if (grown) ld->w->host = grown;
  if (!grown || !buf) {
    free(buf);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory for '%s'", name);
  }
  ld->w->host[ld->w->n_host++] = buf;
  for (int64_t i = 0; i < n; i++) {
    float v;
    if (t->dtype == XPI_DT_BF16) v = xpi_bf16_to_f32(((const uint16_t *)t->data)[i]);
    else if (t->dtype == XPI_DT_F16) v = xpi_f16_to_f32(((const uint16_t *)t->data)[i]);
    else memcpy(&v, (const unsigned char *)t->data + (size_t)i * 4, 4);
    buf[i] = 1.0f + v;
  }
  xpi_status s = be->ops->weight_create(be, w, buf, XPI_DT_F32, 1, n, XPI_DT_F32);
  if (s != XPI_OK) return xpi_err_prefix(s, "tensor '%s': ", name);
  ld->w->bytes += w->bytes;
  return XPI_OK;
}

xpi_status xpi_load_norm(xpi_loader *ld, const char *suffix, int64_t n, xpi_weight *w) {
  char name[200];
  layer_name(ld, suffix, name, sizeof name);
  return place_norm(ld, ld->be, name, n, w);
}

#define FREE_W(be, w) do { if ((w).data || (w).owned) (be)->ops->weight_free((be), &(w)); } while (0)

static void free_layer(xpi_layer_weights *L) {
  if (!L->be) return;
  xpi_weight *all[] = {&L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo, &L->bq, &L->bk, &L->bv, &L->bo,
                       &L->q_norm, &L->k_norm, &L->post_attn_norm, &L->mlp_norm, &L->gate, &L->up, &L->down,
                       &L->post_mlp_norm};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) FREE_W(L->be, *all[i]);
  FREE_W(L->be, L->router);
  FREE_W(L->be, L->shared_gate);
  xpi_experts_free(L->be, &L->ex_gate);
  xpi_experts_free(L->be, &L->ex_up);
  xpi_experts_free(L->be, &L->ex_down);
}

void xpi_weights_free(xpi_model_weights *w) {
  if (!w) return;
  if (w->layers)
    for (int32_t l = 0; l < w->n_layers; l++) free_layer(&w->layers[l]);
  free(w->layers);
  free(w->used);
  if (w->first && !w->embed_on_host) FREE_W(w->first, w->embed);
  if (w->last) {
    FREE_W(w->last, w->final_norm);
    if (!w->lm_head_is_embed) FREE_W(w->last, w->lm_head);
  }
  for (size_t i = 0; i < w->n_host; i++) free(w->host[i]);
  free(w->host);
  memset(w, 0, sizeof *w);
}

xpi_status xpi_weights_load(const xpi_config *c, const xpi_safetensors *st, xpi_backend *const *layer_be, int want,
                            xpi_model_weights *w) {
  return xpi_weights_load_opt(c, st, layer_be, want, 0, w);
}

/* The embedding table as the mapped checkpoint holds it, for gathers on the host. */
static xpi_status borrow_host(const xpi_loader *ld, const xpi_config *c, xpi_weight *w) {
  const char *name = "model.embed_tokens.weight";
  const xpi_st_tensor *t = xpi_st_find(ld->st, name);
  if (!t) return xpi_err(XPI_ERR_FORMAT, "tensor '%s' is missing from the checkpoint", name);
  if (t->ndim != 2 || t->shape[0] != c->vocab_size || t->shape[1] != c->hidden_size)
    return xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s' is not [%d, %d]", t->file, name, c->vocab_size, c->hidden_size);
  if (t->dtype != XPI_DT_F32 && t->dtype != XPI_DT_F16 && t->dtype != XPI_DT_BF16)
    return xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s' of dtype %s cannot stay in host memory", t->file, name,
                   xpi_dtype_name(t->dtype));
  ld->w->used[t - xpi_st_at(ld->st, 0)] = 1;
  memset(w, 0, sizeof *w);
  w->dtype = t->dtype;
  w->rows = t->shape[0];
  w->cols = t->shape[1];
  w->data = t->data;
  return XPI_OK;
}

xpi_status xpi_weights_load_opt(const xpi_config *c, const xpi_safetensors *st, xpi_backend *const *layer_be,
                                int want, int embed_on_host, xpi_model_weights *w) {
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
  xpi_loader ld = {c, st, w, w->first, -1, want};
  const int quant = want == XPI_DT_Q8 || want == XPI_DT_Q4;
  w->embed_on_host = embed_on_host;
  xpi_status s = embed_on_host ? borrow_host(&ld, c, &w->embed)
                               : place(&ld, w->first, "model.embed_tokens.weight", c->vocab_size, c->hidden_size,
                                       quant ? -1 : want, &w->embed);
  for (int32_t l = 0; s == XPI_OK && l < c->n_layers; l++) {
    ld.be = w->layers[l].be = layer_be[l];
    ld.layer = l;
    s = c->family->load_layer(&ld, c, &w->layers[l]);
  }
  if (s == XPI_OK) s = place_norm(&ld, w->last, "model.norm.weight", c->hidden_size, &w->final_norm);
  if (s == XPI_OK) {
    if (c->tie_word_embeddings && w->last == w->first && !quant && !embed_on_host) {
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
