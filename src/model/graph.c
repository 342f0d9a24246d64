/* One forward for llama / qwen2 / qwen3 (see graph.h). Per layer, as transformers' decoder layer:
 *   h = rmsnorm(x)            q,k,v = h @ Wq,Wk,Wv (+ biases)     q,k = rope(qk_norm(q,k))
 *   a = attention(q, k, v)    x += a @ Wo                         h = rmsnorm(x)
 *   x += down(silu(gate(h)) * up(h))
 * with every residual add fused into the following rmsnorm (x += pending; h = norm(x)). */
#include "model/graph.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

#define N_BATCH 256   /* tokens per forward chunk: bounds activation memory during prefill (64 KiB per token for
                       * Qwen3-0.6B); 256 rather than 128 converts each weight panel half as often (+2-7% GEMM) */
#define N_LOGIT_ROWS 16 /* rows of logits computed at once when all positions are wanted */

typedef struct dev_state {
  xpi_backend *be;
  xpi_kv *kv;
  int32_t *ids, *pos;                       /* [N_BATCH] */
  float *x, *h, *q, *k, *v, *att, *res, *gate, *up; /* activations for N_BATCH tokens */
  float *logits;                            /* [N_LOGIT_ROWS, vocab] on the last device */
  int32_t *tok;                             /* [1] greedy token on the last device */
} dev_state;

struct xpi_graph_state {
  int32_t n_ctx;
  int n_dev;
  dev_state dev[XPI_MAX_BACKENDS];
  float *host_x;                            /* boundary copies through the host */
  void *rec[2];                             /* recorded decode steps (single backend with capture):
                                               [0] layers only, [1] layers + lm_head + argmax */
  int rec_failed;
};

xpi_status xpi_graph_split(int32_t n_layers, const double *weight, int n_dev, int32_t *first) {
  double total = 0;
  for (int d = 0; d < n_dev; d++) {
    if (!(weight[d] >= 0)) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "device_map: device %d has a negative weight", d);
    total += weight[d];
  }
  if (n_dev <= 0 || total <= 0) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "device_map: no device to place layers on");
  double cum = 0;
  first[0] = 0;
  for (int d = 0; d < n_dev; d++) { /* boundaries at the rounded cumulative share */
    cum += weight[d];
    int32_t b = d == n_dev - 1 ? n_layers : (int32_t)floor((double)n_layers * cum / total + 0.5);
    first[d + 1] = b < first[d] ? first[d] : b;
  }
  return XPI_OK;
}

void xpi_graph_layer_backends(const xpi_graph *g, int32_t n_layers, xpi_backend **layer_be) {
  for (int d = 0; d < g->n_backends; d++)
    for (int32_t l = g->layer_dev[d]; l < g->layer_dev[d + 1] && l < n_layers; l++) layer_be[l] = g->backends[d];
}

xpi_status xpi_graph_init(xpi_graph *g) {
  int32_t half = g->cfg->head_dim / 2;
  float *tmp = malloc((size_t)half * sizeof *tmp);
  if (!tmp) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  xpi_rope_params rp = g->cfg->rope;
  rp.head_dim = g->cfg->head_dim;
  xpi_rope_inv_freq(&rp, tmp);
  for (int d = 0; d < g->n_backends; d++) {
    xpi_backend *be = g->backends[d];
    g->inv_freq[d] = be->ops->alloc(be, (size_t)half * sizeof *tmp);
    xpi_status s = g->inv_freq[d] ? be->ops->write(be, g->inv_freq[d], tmp, (size_t)half * sizeof *tmp)
                                  : XPI_ERR_OUT_OF_MEMORY;
    if (s != XPI_OK) {
      free(tmp);
      xpi_graph_release(g);
      return s;
    }
  }
  free(tmp);
  return XPI_OK;
}

void xpi_graph_release(xpi_graph *g) {
  for (int d = 0; d < g->n_backends; d++)
    if (g->inv_freq[d]) {
      g->backends[d]->ops->free(g->backends[d], g->inv_freq[d]);
      g->inv_freq[d] = NULL;
    }
}

/* The device of the last layer (final norm, lm_head and logits live there). */
static int last_dev(const xpi_graph *g) {
  int d = g->n_backends - 1;
  while (d > 0 && g->layer_dev[d] >= g->cfg->n_layers) d--;
  return d;
}

/* ------------------------------------------------------------------ request state */

void xpi_graph_state_free(xpi_graph_state *st) {
  if (!st) return;
  for (int d = 0; d < st->n_dev; d++) {
    dev_state *ds = &st->dev[d];
    xpi_backend *be = ds->be;
    if (!be) continue;
    for (int i = 0; i < 2; i++)
      if (d == 0 && st->rec[i] && be->ops->graph_free) be->ops->graph_free(be, st->rec[i]);
    if (ds->kv) be->ops->kv_free(be, ds->kv);
    void *bufs[] = {ds->ids, ds->pos, ds->x, ds->h, ds->q, ds->k, ds->v, ds->att, ds->res, ds->gate, ds->up, ds->logits,
                    ds->tok};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
      if (bufs[i]) be->ops->free(be, bufs[i]);
  }
  free(st->host_x);
  free(st);
}

static void *balloc(xpi_backend *be, size_t count, size_t esz, xpi_status *s) {
  if (*s != XPI_OK) return NULL;
  void *p = be->ops->alloc(be, count * esz);
  if (!p) *s = XPI_ERR_OUT_OF_MEMORY;
  return p;
}

xpi_status xpi_graph_state_create(const xpi_graph *g, int32_t n_ctx, xpi_graph_state **out) {
  *out = NULL;
  const xpi_config *c = g->cfg;
  xpi_graph_state *st = calloc(1, sizeof *st);
  if (!st) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  st->n_ctx = n_ctx;
  st->n_dev = g->n_backends;
  size_t B = N_BATCH, H = (size_t)c->hidden_size, Q = (size_t)c->n_heads * c->head_dim;
  size_t K = (size_t)c->n_kv_heads * c->head_dim, I = (size_t)c->intermediate_size;
  xpi_status s = XPI_OK;
  st->host_x = malloc(B * H * sizeof(float));
  if (!st->host_x) s = xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int d = 0; d < g->n_backends && s == XPI_OK; d++) {
    dev_state *ds = &st->dev[d];
    xpi_backend *be = ds->be = g->backends[d];
    int32_t nl = g->layer_dev[d + 1] - g->layer_dev[d];
    if (nl > 0) s = be->ops->kv_create(be, nl, n_ctx, c->n_kv_heads, c->head_dim, g->kv_dtype, &ds->kv);
    ds->ids = balloc(be, B, sizeof(int32_t), &s);
    ds->pos = balloc(be, B, sizeof(int32_t), &s);
    ds->x = balloc(be, B * H, sizeof(float), &s);
    ds->h = balloc(be, B * H, sizeof(float), &s);
    ds->res = balloc(be, B * H, sizeof(float), &s);
    ds->q = balloc(be, B * Q, sizeof(float), &s);
    ds->att = balloc(be, B * Q, sizeof(float), &s);
    ds->k = balloc(be, B * K, sizeof(float), &s);
    ds->v = balloc(be, B * K, sizeof(float), &s);
    ds->gate = balloc(be, B * I, sizeof(float), &s);
    ds->up = balloc(be, B * I, sizeof(float), &s);
    if (d == last_dev(g)) {
      ds->logits = balloc(be, (size_t)N_LOGIT_ROWS * (size_t)c->vocab_size, sizeof(float), &s);
      ds->tok = balloc(be, 1, sizeof(int32_t), &s);
    }
  }
  if (s != XPI_OK) {
    xpi_graph_state_free(st);
    return xpi_err_prefix(s, "creating a request with a %d-token context: ", n_ctx);
  }
  *out = st;
  return XPI_OK;
}

/* ------------------------------------------------------------------ forward */

/* Moves the residual stream x[n, H] from device a to device b (through the host). */
static xpi_status hand_over(const xpi_graph *g, xpi_graph_state *st, int a, int b, int32_t n) {
  size_t bytes = (size_t)n * (size_t)g->cfg->hidden_size * sizeof(float);
  dev_state *A = &st->dev[a], *B = &st->dev[b];
  XPI_TRY(A->be->ops->read(A->be, st->host_x, A->x, bytes));
  return B->be->ops->write(B->be, B->x, st->host_x, bytes);
}

/* The diagnostic path's probe (xpi_graph_locate_nonfinite): where the first non-finite value was seen. */
typedef struct nonfinite_probe {
  int32_t pos0;        /* position of row 0 */
  int found;
  int32_t layer;       /* -1: the embedding; n_layers: the final norm; n_layers + 1: the lm_head */
  int32_t pos;         /* first position (row) with a non-finite value at that point */
} nonfinite_probe;

/* 1 when v[0..n) holds a NaN or an infinity. */
static int has_nonfinite(const float *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!(v[i] - v[i] == 0.0f)) return 1;
  return 0;
}

/* Reads rows [0, n) (n <= N_BATCH) of x[n, hidden] on backend be and records the first non-finite row under
 * `layer`. */
static xpi_status probe_rows(const xpi_graph *g, xpi_graph_state *st, nonfinite_probe *p, xpi_backend *be,
                             const float *x, int32_t n, int32_t layer) {
  size_t H = (size_t)g->cfg->hidden_size;
  XPI_TRY(be->ops->read(be, st->host_x, x, (size_t)n * H * sizeof *st->host_x));
  for (int32_t r = 0; r < n; r++)
    if (has_nonfinite(st->host_x + (size_t)r * H, H)) {
      p->found = 1;
      p->layer = layer;
      p->pos = p->pos0 + r;
      break;
    }
  return XPI_OK;
}

/* Enqueues the layers for n tokens whose ids/pos are already in the backend buffers; leaves the final
 * hidden state (normed) in the last device's h for the rows [row0, row0+rows). With a probe (diagnostic
 * path, never the hot one), the residual stream is completed and read back after the embedding and after
 * every layer, stopping at the first non-finite value. */
static xpi_status run_layers_probed(const xpi_graph *g, xpi_graph_state *st, int32_t n, int32_t row0, int32_t rows,
                                    nonfinite_probe *probe) {
  const xpi_config *c = g->cfg;
  const xpi_model_weights *w = g->w;
  int32_t H = c->hidden_size, hq = c->n_heads, hk = c->n_kv_heads, hd = c->head_dim, I = c->intermediate_size;
  float scale = 1.0f / sqrtf((float)hd);
  int cur = 0;
  while (g->layer_dev[cur + 1] == 0) cur++; /* first device with layers (embedding lives there) */
  dev_state *D = &st->dev[cur];
  XPI_TRY(D->be->ops->embed(D->be, D->x, &w->embed, D->ids, n));
  if (probe) {
    XPI_TRY(probe_rows(g, st, probe, D->be, D->x, n, -1));
    if (probe->found) return XPI_OK;
  }
  const float *pending = NULL; /* residual branch not yet added into x */
  for (int32_t l = 0; l < c->n_layers; l++) {
    int d = cur;
    while (l >= g->layer_dev[d + 1]) d++;
    if (d != cur) { /* device boundary: finish the residual add, then copy x over */
      if (pending) XPI_TRY(D->be->ops->add(D->be, D->x, pending, (int64_t)n * H));
      XPI_TRY(hand_over(g, st, cur, d, n));
      pending = NULL;
      cur = d;
      D = &st->dev[cur];
    }
    const xpi_layer_weights *L = &w->layers[l];
    const xpi_backend_ops *o = D->be->ops;
    xpi_backend *be = D->be;
    XPI_TRY(o->rmsnorm(be, D->h, D->x, pending, &L->attn_norm, n, H, c->rms_norm_eps));
    XPI_TRY(o->matmul(be, D->q, D->h, &L->wq, L->bq.rows ? &L->bq : NULL, n));
    XPI_TRY(o->matmul(be, D->k, D->h, &L->wk, L->bk.rows ? &L->bk : NULL, n));
    XPI_TRY(o->matmul(be, D->v, D->h, &L->wv, L->bv.rows ? &L->bv : NULL, n));
    xpi_rope_params rp = c->rope;
    rp.head_dim = hd;
    XPI_TRY(o->rope(be, D->q, D->k, D->pos, n, hq, hk, &rp, g->inv_freq[cur], L->q_norm.rows ? &L->q_norm : NULL,
                    L->k_norm.rows ? &L->k_norm : NULL, c->rms_norm_eps));
    XPI_TRY(o->attention(be, D->att, D->q, D->k, D->v, D->kv, l - g->layer_dev[cur], D->pos, n, hq, hk, hd, scale,
                         g->attn));
    XPI_TRY(o->matmul(be, D->res, D->att, &L->wo, L->bo.rows ? &L->bo : NULL, n));
    XPI_TRY(o->rmsnorm(be, D->h, D->x, D->res, &L->mlp_norm, n, H, c->rms_norm_eps));
    XPI_TRY(o->matmul(be, D->gate, D->h, &L->gate, NULL, n));
    XPI_TRY(o->matmul(be, D->up, D->h, &L->up, NULL, n));
    XPI_TRY(o->swiglu(be, D->gate, D->gate, D->up, n, I));
    XPI_TRY(o->matmul(be, D->res, D->gate, &L->down, NULL, n));
    pending = D->res;
    if (probe) { /* the layer's output: x with its residual branch added */
      XPI_TRY(o->add(be, D->x, pending, (int64_t)n * H));
      pending = NULL;
      XPI_TRY(probe_rows(g, st, probe, be, D->x, n, l));
      if (probe->found) return XPI_OK;
    }
  }
  if (rows > 0) { /* final norm only over the rows whose logits are wanted */
    size_t off = (size_t)row0 * (size_t)H;
    XPI_TRY(D->be->ops->rmsnorm(D->be, D->h + off, D->x + off, pending ? pending + off : NULL, &w->final_norm, rows,
                                H, c->rms_norm_eps));
    if (probe) {
      probe->pos0 += row0;
      XPI_TRY(probe_rows(g, st, probe, D->be, D->h + off, rows, c->n_layers));
      probe->pos0 -= row0;
    }
  }
  return XPI_OK;
}

static xpi_status run_layers(const xpi_graph *g, xpi_graph_state *st, int32_t n, int32_t row0, int32_t rows) {
  return run_layers_probed(g, st, n, row0, rows, NULL);
}

/* lm_head over rows [row0, row0+rows) of the last device's h, copied to host logits. */
static xpi_status run_logits(const xpi_graph *g, xpi_graph_state *st, int32_t row0, int32_t rows, float *logits) {
  dev_state *D = &st->dev[last_dev(g)];
  int32_t H = g->cfg->hidden_size, V = g->cfg->vocab_size;
  for (int32_t r = 0; r < rows; r += N_LOGIT_ROWS) {
    int32_t m = rows - r < N_LOGIT_ROWS ? rows - r : N_LOGIT_ROWS;
    XPI_TRY(D->be->ops->matmul(D->be, D->logits, D->h + (size_t)(row0 + r) * H, &g->w->lm_head, NULL, m));
    XPI_TRY(D->be->ops->read(D->be, logits + (size_t)r * V, D->logits, (size_t)m * V * sizeof(float)));
  }
  return XPI_OK;
}

/* tok[0] = argmax of the logits of row `row` of the last device's h (lm_head on the device, no copy). */
static xpi_status run_argmax(const xpi_graph *g, xpi_graph_state *st, int32_t row) {
  dev_state *D = &st->dev[last_dev(g)];
  XPI_TRY(D->be->ops->matmul(D->be, D->logits, D->h + (size_t)row * g->cfg->hidden_size, &g->w->lm_head, NULL, 1));
  return D->be->ops->argmax(D->be, D->tok, D->logits, 1, g->cfg->vocab_size);
}

static xpi_status write_inputs(const xpi_graph *g, xpi_graph_state *st, const int32_t *ids, int32_t n, int32_t n_past) {
  int32_t pos[N_BATCH];
  for (int32_t i = 0; i < n; i++) pos[i] = n_past + i;
  for (int d = 0; d < g->n_backends; d++) {
    dev_state *D = &st->dev[d];
    if (d == 0 || g->layer_dev[d] == 0) XPI_TRY(D->be->ops->write(D->be, D->ids, ids, (size_t)n * sizeof *ids));
    XPI_TRY(D->be->ops->write(D->be, D->pos, pos, (size_t)n * sizeof *pos));
  }
  return XPI_OK;
}

/* A decode step recorded once and replayed (single backend that can capture): positions and ids are
 * re-read from the same backend buffers on every replay. with_tok: the step also ends with lm_head and
 * the argmax into tok (its own recording), so the greedy token needs no logits on the host. */
static xpi_status decode_replayed(const xpi_graph *g, xpi_graph_state *st, int with_tok) {
  xpi_backend *be = st->dev[0].be;
  if (!st->rec[with_tok]) {
    XPI_TRY(be->ops->capture_begin(be));
    xpi_status s = run_layers(g, st, 1, 0, 1);
    if (s == XPI_OK && with_tok) s = run_argmax(g, st, 0);
    void *rec = NULL;
    xpi_status s2 = be->ops->capture_end(be, &rec);
    if (s != XPI_OK) {
      if (rec && be->ops->graph_free) be->ops->graph_free(be, rec);
      return s;
    }
    XPI_TRY(s2);
    st->rec[with_tok] = rec;
  }
  return be->ops->replay(be, st->rec[with_tok]);
}

/* The forward of xpi_graph_forward; with token, the last position's greedy id instead of host logits. */
static xpi_status forward(const xpi_graph *g, xpi_graph_state *st, const int32_t *ids, int32_t n, int32_t n_past,
                          int all_logits, float *logits, int32_t *token) {
  if (n <= 0) return XPI_OK;
  if (n_past < 0 || n > st->n_ctx - n_past)
    return xpi_err(XPI_ERR_CONTEXT_LENGTH, "%d tokens after %d in the context exceed the context size of %d", n,
                   n_past, st->n_ctx);
  int32_t V = g->cfg->vocab_size;
  xpi_backend *be0 = st->dev[0].be;
  int can_replay = g->n_backends == 1 && be0->ops->capture_begin && be0->ops->capture_end && be0->ops->replay;
  for (int32_t done = 0; done < n;) {
    int32_t m = n - done < N_BATCH ? n - done : N_BATCH;
    int last_chunk = done + m == n;
    int32_t rows = token ? last_chunk : !logits ? 0 : all_logits ? m : last_chunk ? 1 : 0;
    int32_t row0 = all_logits ? 0 : m - 1;
    XPI_TRY(write_inputs(g, st, ids + done, m, n_past + done));
    if (m == 1 && rows == 1 && can_replay) XPI_TRY(decode_replayed(g, st, token != NULL));
    else {
      XPI_TRY(run_layers(g, st, m, row0, rows));
      if (rows && token) XPI_TRY(run_argmax(g, st, row0));
    }
    if (rows && !token) XPI_TRY(run_logits(g, st, row0, rows, all_logits ? logits + (size_t)done * V : logits));
    done += m;
  }
  if (!token) return XPI_OK;
  dev_state *D = &st->dev[last_dev(g)];
  return D->be->ops->read(D->be, token, D->tok, sizeof *token); /* the step's only device-to-host copy */
}

xpi_status xpi_graph_forward(const xpi_graph *g, xpi_graph_state *st, const int32_t *ids, int32_t n, int32_t n_past,
                             int all_logits, float *logits) {
  return forward(g, st, ids, n, n_past, all_logits, logits, NULL);
}

xpi_status xpi_graph_forward_argmax(const xpi_graph *g, xpi_graph_state *st, const int32_t *ids, int32_t n,
                                    int32_t n_past, int32_t *token) {
  if (n <= 0) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_graph_forward_argmax: no ids given");
  return forward(g, st, ids, n, n_past, 0, NULL, token);
}

xpi_status xpi_graph_locate_nonfinite(const xpi_graph *g, xpi_graph_state *st, const int32_t *ids, int32_t n,
                                      int32_t n_past) {
  if (!ids || n <= 0 || n_past < 0 || n > st->n_ctx - n_past)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_graph_locate_nonfinite: %d ids at position %d do not fit %d", n,
                   n_past, st->n_ctx);
  const xpi_config *c = g->cfg;
  int32_t V = c->vocab_size;
  nonfinite_probe p = {0};
  float *logits = NULL;
  xpi_status s = XPI_OK;
  for (int32_t done = 0; done < n && s == XPI_OK && !p.found;) {
    int32_t m = n - done < N_BATCH ? n - done : N_BATCH;
    int last_chunk = done + m == n;
    p.pos0 = n_past + done;
    s = write_inputs(g, st, ids + done, m, n_past + done);
    if (s == XPI_OK) s = run_layers_probed(g, st, m, m - 1, last_chunk, &p);
    if (s == XPI_OK && !p.found && last_chunk) { /* the lm_head over the last position, as the step ran it */
      if (!(logits = malloc((size_t)V * sizeof *logits))) s = xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
      if (s == XPI_OK) s = run_logits(g, st, m - 1, 1, logits);
      if (s == XPI_OK && has_nonfinite(logits, (size_t)V)) p.found = 1, p.layer = c->n_layers + 1, p.pos = n_past + n - 1;
    }
    done += m;
  }
  free(logits);
  if (s != XPI_OK) return xpi_err_prefix(s, "locating non-finite logits: ");
  const char *what = "non-finite logits (NaN or infinity)";
  if (!p.found)
    return xpi_err(XPI_ERR_NUMERIC, "%s, but a layer-by-layer re-run of the step found none (a transient device fault?)",
                   what);
  if (p.layer < 0)
    return xpi_err(XPI_ERR_NUMERIC, "%s: the embedding of token %d at position %d already holds one: row %d of "
                   "model.embed_tokens.weight is not finite", what, ids[p.pos - n_past], p.pos, ids[p.pos - n_past]);
  if (p.layer < c->n_layers)
    return xpi_err(XPI_ERR_NUMERIC, "%s: they first appear in the output of layer %d (model.layers.%d.*) at position "
                   "%d; the checkpoint's weights of that layer may hold NaN or infinity", what, p.layer, p.layer, p.pos);
  return xpi_err(XPI_ERR_NUMERIC, "%s: every layer's output is finite; they first appear in the %s at position %d",
                 what, p.layer == c->n_layers ? "final norm (model.norm.weight)" : "lm_head", p.pos);
}
