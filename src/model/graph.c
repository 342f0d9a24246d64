/* One forward for every family (see graph.h): embedding (times the config's embed_scale), the layers of the
 * family (cfg->family->layer over an xpi_fwd of the layer's device, model/family.h), the final norm, the
 * lm_head (times logit_scale, then the final softcap). The batch/state/device_map/replay machinery is here and
 * the same for every family. */
#include "model/graph.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "model/moe.h"
#include "model/family.h"
#include "ops/half.h"

typedef struct dev_state {
  xpi_backend *be;
  xpi_kv *kv;                               /* the pool of this device's layers (without a window pool: all) */
  xpi_kv *kv_win;                           /* the window pool of its sliding layers, or NULL */
  int32_t *ids, *pos, *seq;                 /* [max_tokens] */
  int32_t *lsel;                            /* [max_tokens] longrope: 1 where a token takes the long factors
                                             * (models that have them, else NULL) */
  int32_t *tables;                          /* [max_rows + 1][max_blocks]: the extra row maps padding tokens */
  int32_t *tables_win;                      /* the same for the window pool (a state with one) */
  float *x, *h, *t, *q, *k, *v, *att, *res, *gate, *up; /* activations for max_tokens tokens */
  float *logits;                            /* [max_out, vocab] on the last device */
  int32_t *tok;                             /* [max_out] greedy tokens on the last device */
  int32_t *tk_ids;                          /* [max_out, max_topk] top-k of the rows that ask, on the last device */
  float *tk_vals, *tk_norm;                 /* [max_out, max_topk], [max_out, 2] */
  xpi_moe_bufs moe;                         /* MoE layers' activations (model/moe.h), when the model has them */
  float *xin;     /* embedding table on the host, backend with alloc_host: [max_tokens, hidden] host-gathered rows */
  int32_t *iota;  /* [max_tokens] 0, 1, ...: the embed op copies xin's rows into x inside the (recorded) step */
} dev_state;

#define N_BUCKETS 16 /* decode recordings for 1, 2, 4, ... 2^15 sequences */

struct xpi_graph_state {
  xpi_graph_limits lim;
  int n_dev;
  dev_state dev[XPI_MAX_BACKENDS];
  float *host_x;                            /* boundary copies through the host */
  int32_t *host_in;                         /* padded inputs of a replayed step: ids, pos, seq [max_out each] */
  int32_t *host_sel;                        /* [max(max_tokens, max_out)] longrope selections of a step */
  int32_t single_long_from;                 /* xpi_graph_forward's sequence: where its long factors start */
  void *rec[N_BUCKETS];                     /* recorded decode steps of 2^i sequences (single backend with
                                             * capture): layers + lm_head + argmax of every row */
  uint64_t kv_bytes;
  uint64_t bytes_read;                      /* step outputs read back */
  int win;                                  /* the sliding layers keep their KV in the window pool */
  unsigned char *in_win;                    /* [n_layers] 1: layer l's KV is in the window pool */
  int32_t *kv_layer;                        /* [n_layers] its index among its pool's layers on its device */
  int head_norm;                            /* 1: run_layers left the final norm of its one output row to run_head,
                                             * inside the lm_head's matmul_multi (one launch less on the XPU) */
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

/* inv_freq of RoPE set r: transformers' table for the type, divided by a linear factor and, for longrope, by
 * the short factors (1 / (ext[i] * theta^(2i/d))). */
static void inv_freq_of(const xpi_config *c, int r, float *out) {
  const xpi_rope_set *rs = &c->rope[r];
  xpi_rope_params rp = rs->p;
  rp.head_dim = c->head_dim;
  const int32_t half = c->head_dim / 2;
  xpi_rope_inv_freq(&rp, out);
  for (int32_t i = 0; i < half; i++) {
    double f = out[i];
    if (rs->has_ext) f = 1.0 / ((double)rs->ext[i] * pow((double)rp.theta, (double)(2 * i) / c->head_dim));
    out[i] = (float)(f / rs->linear_factor);
    if (rs->long_from > 0) /* the long factors' table follows: [2][hd/2] */
      out[half + i] = (float)(1.0 / ((double)rs->ext_long[i] * pow((double)rp.theta, (double)(2 * i) / c->head_dim)) /
                              rs->linear_factor);
  }
}

xpi_status xpi_graph_init(xpi_graph *g) {
  int32_t half = g->cfg->head_dim / 2;
  float *tmp = malloc(2 * (size_t)half * sizeof *tmp);
  if (!tmp) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int r = 0; r < g->cfg->n_rope; r++) {
    inv_freq_of(g->cfg, r, tmp);
    const size_t bytes = (g->cfg->rope[r].long_from > 0 ? 2 : 1) * (size_t)half * sizeof *tmp;
    for (int d = 0; d < g->n_backends; d++) {
      xpi_backend *be = g->backends[d];
      g->inv_freq[r][d] = be->ops->alloc(be, bytes);
      xpi_status s = g->inv_freq[r][d] ? be->ops->write(be, g->inv_freq[r][d], tmp, bytes)
                                       : XPI_ERR_OUT_OF_MEMORY;
      if (s != XPI_OK) {
        free(tmp);
        xpi_graph_release(g);
        return s;
      }
    }
  }
  free(tmp);
  return XPI_OK;
}

void xpi_graph_release(xpi_graph *g) {
  for (int r = 0; r < 2; r++)
    for (int d = 0; d < g->n_backends; d++)
      if (g->inv_freq[r][d]) {
        g->backends[d]->ops->free(g->backends[d], g->inv_freq[r][d]);
        g->inv_freq[r][d] = NULL;
      }
}

/* The first device with layers (the embedding lives there). */
static int first_dev(const xpi_graph *g) {
  int d = 0;
  while (d + 1 < g->n_backends && g->layer_dev[d + 1] == 0) d++;
  return d;
}

/* The device of the last layer (final norm, lm_head and logits live there). */
static int last_dev(const xpi_graph *g) {
  int d = g->n_backends - 1;
  while (d > 0 && g->layer_dev[d] >= g->cfg->n_layers) d--;
  return d;
}

uint64_t xpi_graph_kv_bytes_per_token(const xpi_graph *g) {
  const xpi_config *c = g->cfg;
  return 2ull * (uint64_t)c->n_layers * (uint64_t)c->n_kv_heads * (uint64_t)c->head_dim * xpi_dtype_size(g->kv_dtype);
}

/* Layer l attends to a sliding window (blocks.c gives it c->sliding_window). */
static int layer_slides(const xpi_config *c, int32_t l) { return c->sliding_window > 0 && c->layer_sliding[l]; }

int xpi_graph_has_window(const xpi_graph *g) {
  for (int32_t l = 0; l < g->cfg->n_layers; l++)
    if (layer_slides(g->cfg, l)) return 1;
  return 0;
}

void xpi_graph_kv_bytes_split(const xpi_graph *g, uint64_t *full, uint64_t *win) {
  const xpi_config *c = g->cfg;
  int32_t n_win = 0;
  for (int32_t l = 0; l < c->n_layers; l++) n_win += layer_slides(c, l);
  const uint64_t per_layer = 2ull * (uint64_t)c->n_kv_heads * (uint64_t)c->head_dim * xpi_dtype_size(g->kv_dtype);
  *full = per_layer * (uint64_t)(c->n_layers - n_win);
  *win = per_layer * (uint64_t)n_win;
}

/* ------------------------------------------------------------------ state */

void xpi_graph_state_free(xpi_graph_state *st) {
  if (!st) return;
  for (int d = 0; d < st->n_dev; d++) {
    dev_state *ds = &st->dev[d];
    xpi_backend *be = ds->be;
    if (!be) continue;
    for (int i = 0; i < N_BUCKETS; i++)
      if (d == 0 && st->rec[i] && be->ops->graph_free) be->ops->graph_free(be, st->rec[i]);
    if (ds->kv) be->ops->kv_free(be, ds->kv);
    if (ds->kv_win) be->ops->kv_free(be, ds->kv_win);
    xpi_moe_bufs_free(be, &ds->moe);
    void *bufs[] = {ds->ids, ds->pos, ds->seq, ds->lsel, ds->tables, ds->tables_win, ds->x, ds->h, ds->t, ds->q, ds->k,
                    ds->v, ds->att, ds->res, ds->gate, ds->up, ds->logits, ds->tok, ds->tk_ids, ds->tk_vals,
                    ds->tk_norm, ds->xin, ds->iota};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
      if (bufs[i]) be->ops->free(be, bufs[i]);
  }
  free(st->host_x);
  free(st->host_sel);
  free(st->host_in);
  free(st->in_win);
  free(st->kv_layer);
  free(st);
}

static void *balloc(xpi_backend *be, size_t count, size_t esz, xpi_status *s) {
  if (*s != XPI_OK) return NULL;
  void *p = be->ops->alloc(be, count * esz);
  if (!p) *s = XPI_ERR_OUT_OF_MEMORY;
  return p;
}

/* A step's inputs and small outputs: where the backend has host-visible memory for them (host USM), writing
 * them is a memcpy and a replayed decode step needs no copy command. */
static void *balloc_host(xpi_backend *be, size_t count, size_t esz, xpi_status *s) {
  if (!be->ops->alloc_host) return balloc(be, count, esz, s);
  if (*s != XPI_OK) return NULL;
  void *p = be->ops->alloc_host(be, count * esz);
  if (!p) *s = XPI_ERR_OUT_OF_MEMORY;
  return p;
}

const xpi_graph_limits *xpi_graph_state_limits(const xpi_graph_state *st) { return &st->lim; }

uint64_t xpi_graph_state_kv_bytes(const xpi_graph_state *st) { return st->kv_bytes; }

uint64_t xpi_graph_state_bytes_read(const xpi_graph_state *st) { return st->bytes_read; }

/* Layers of device d whose KV is in the window pool (pool 1) or in the other one (pool 0), for a state with a
 * window pool (win) or without (every layer in pool 0). */
static int32_t pool_layers(const xpi_graph *g, int win, int d, int pool) {
  int32_t n = 0;
  for (int32_t l = g->layer_dev[d]; l < g->layer_dev[d + 1]; l++) n += (win && layer_slides(g->cfg, l)) == pool;
  return n;
}

uint64_t xpi_graph_kv_pool_bytes(const xpi_graph *g, int32_t l0, int32_t l1, int32_t n_blocks, int32_t max_win_blocks,
                                 int32_t block_size) {
  const xpi_config *c = g->cfg;
  const uint64_t layer_block = 2ull * (uint64_t)c->n_kv_heads * (uint64_t)c->head_dim * xpi_dtype_size(g->kv_dtype) *
                               (uint64_t)block_size;
  const int32_t n_win = n_blocks < max_win_blocks ? n_blocks : max_win_blocks;
  uint64_t bytes = 0;
  for (int32_t l = l0; l < l1; l++) /* each pool has its spare block */
    bytes += (uint64_t)((max_win_blocks > 0 && layer_slides(c, l) ? n_win : n_blocks) + 1) * layer_block;
  return bytes;
}

/* Bytes of one block of a pool on device d (its layers in that pool). */
static uint64_t block_bytes(const xpi_graph *g, int win, int d, int pool, int32_t block_size) {
  const xpi_config *c = g->cfg;
  return 2ull * (uint64_t)pool_layers(g, win, d, pool) * (uint64_t)c->n_kv_heads * (uint64_t)c->head_dim *
         xpi_dtype_size(g->kv_dtype) * (uint64_t)block_size;
}

/* The step's buffers of one device: which dev_state field, how many 4-byte elements (int32 or float), and
 * whether host-visible memory serves (inputs and small outputs, balloc_host). One table for
 * xpi_graph_state_create, which allocates them, and xpi_graph_step_bytes, which counts them for the memory plan. */
typedef struct step_buf {
  size_t field;   /* offsetof(dev_state, the pointer) */
  uint64_t count; /* elements */
  int host;
} step_buf;

#define STEP_BUFS_MAX 24
#define SB(f, n, h) (step_buf){offsetof(dev_state, f), (n), (h)}

/* The buffers of a device (last: it holds the logits, greedy ids and top-k rows; xin: it holds the host-gathered
 * embedding rows) for a state with a window pool's tables (win) or not. Returns how many. */
static int step_bufs(const xpi_config *c, const xpi_graph_limits *lim, int win, int last, int xin, step_buf *b) {
  const uint64_t B = (uint64_t)lim->max_tokens, H = (uint64_t)c->hidden_size, Q = (uint64_t)c->n_heads * c->head_dim;
  const uint64_t K = (uint64_t)c->n_kv_heads * c->head_dim, O = (uint64_t)lim->max_out;
  uint64_t I = (uint64_t)c->intermediate_size;
  if ((uint64_t)c->shared_expert_intermediate_size > I) I = (uint64_t)c->shared_expert_intermediate_size; /* its scratch */
  const uint64_t T = (uint64_t)(lim->max_rows + 1) * (uint64_t)lim->max_blocks; /* + the padding tokens' row */
  const uint64_t P = B > O ? B : O; /* a replayed step pads its tokens up to its bucket */
  int n = 0;
  b[n++] = SB(ids, P, 1);
  b[n++] = SB(pos, P, 1);
  b[n++] = SB(seq, P, 1);
  if (c->rope_long_from > 0) b[n++] = SB(lsel, P, 1);
  b[n++] = SB(tables, T, 1);
  if (win) b[n++] = SB(tables_win, T, 1);
  b[n++] = SB(x, P * H, 0);
  b[n++] = SB(h, P * H, 0);
  b[n++] = SB(res, P * H, 0);
  b[n++] = SB(q, P * Q, 0);
  b[n++] = SB(t, P * H, 0);
  b[n++] = SB(att, P * Q, 0);
  b[n++] = SB(k, P * K, 0);
  b[n++] = SB(v, P * K, 0);
  b[n++] = SB(gate, P * I, 0);
  b[n++] = SB(up, P * I, 0);
  if (xin) {
    b[n++] = SB(xin, P * H, 1);
    b[n++] = SB(iota, P, 1);
  }
  if (last) {
    b[n++] = SB(logits, O * (uint64_t)c->vocab_size, 0);
    b[n++] = SB(tok, O, 1);
    if (lim->max_topk > 0) {
      b[n++] = SB(tk_ids, O * (uint64_t)lim->max_topk, 0);
      b[n++] = SB(tk_vals, O * (uint64_t)lim->max_topk, 0);
      b[n++] = SB(tk_norm, O * 2, 0);
    }
  }
  return n;
}

uint64_t xpi_graph_step_bytes(const xpi_config *c, const xpi_graph_limits *lim, int last) {
  step_buf b[STEP_BUFS_MAX];
  const int n = step_bufs(c, lim, lim->max_win_blocks > 0, last, 0, b);
  uint64_t bytes = 0;
  for (int i = 0; i < n; i++) bytes += 4 * b[i].count;
  const uint64_t O = (uint64_t)lim->max_out, P = (uint64_t)lim->max_tokens > O ? (uint64_t)lim->max_tokens : O;
  if (c->n_experts > 0) bytes += xpi_moe_bufs_bytes(c, (int32_t)P);
  return bytes;
}

/* Blocks n of the main pool that `bytes` hold on device d with its spare block, and with a window pool of
 * min(n, max_win) blocks (+ 1 spare) beside it: (n + 1) f + (min(n, max_win) + 1) w <= bytes. */
static int64_t blocks_in(uint64_t bytes, uint64_t f, uint64_t w, int64_t max_win, int64_t cap) {
  if (w == 0) return f ? (int64_t)(bytes / f) - 1 : cap;
  if (bytes < f + w) return -1;
  bytes -= f + w;
  if (max_win <= 0 || (uint64_t)max_win * (f + w) >= bytes) return (int64_t)(bytes / (f + w)); /* n <= max_win */
  if (f == 0) return cap; /* every layer slides: the window pool is all there is */
  return (int64_t)((bytes - (uint64_t)max_win * w) / f);
}

int64_t xpi_graph_pool_blocks(const xpi_graph *g, uint64_t bytes, int32_t block_size, int32_t max_win_blocks) {
  uint64_t f = 0, w = 0;
  xpi_graph_kv_bytes_split(g, &f, &w);
  if (max_win_blocks <= 0) f += w, w = 0;
  return blocks_in(bytes, f * (uint64_t)block_size, w * (uint64_t)block_size, max_win_blocks, INT32_MAX / 2);
}

/* The default pool: half of what every backend with layers has free, the smallest share over them, or the
 * context the load's memory plan kept room for where that is more (the plan checked it fits). */
static xpi_status default_blocks(const xpi_graph *g, const xpi_graph_limits *lim, int win, int32_t *n_blocks) {
  int64_t best = -1;
  for (int d = 0; d < g->n_backends; d++) {
    uint64_t f = block_bytes(g, win, d, 0, lim->block_size), w = block_bytes(g, win, d, 1, lim->block_size), avail = 0;
    if (f + w == 0) continue;
    xpi_backend *be = g->backends[d];
    XPI_TRY(be->ops->free_memory(be, &avail));
    int64_t b = blocks_in(avail / 2, f, w, lim->max_win_blocks, lim->max_pool_blocks);
    int64_t planned = ((int64_t)g->kv_plan_tokens + lim->block_size - 1) / lim->block_size;
    int64_t most = blocks_in(avail, f, w, lim->max_win_blocks, lim->max_pool_blocks);
    if (b < planned) b = planned < most ? planned : most;
    if (best < 0 || b < best) best = b;
  }
  if (best > lim->max_pool_blocks) best = lim->max_pool_blocks;
  if (best < 1)
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "no room for a KV pool: half of the free memory holds no block of %d positions",
                   lim->block_size);
  *n_blocks = (int32_t)best;
  return XPI_OK;
}

xpi_status xpi_graph_state_create(const xpi_graph *g, const xpi_graph_limits *lim, xpi_graph_state **out) {
  *out = NULL;
  const xpi_config *c = g->cfg;
  if (lim->max_tokens <= 0 || lim->max_rows <= 0 || lim->max_blocks <= 0 || lim->n_blocks < 0 ||
      (lim->n_blocks == 0 && lim->max_pool_blocks <= 0) || lim->block_size <= 0 ||
      (lim->block_size & (lim->block_size - 1)) || lim->max_out <= 0 || lim->n_blocks == INT32_MAX ||
      lim->max_pool_blocks == INT32_MAX || (int64_t)lim->max_blocks * lim->block_size > INT32_MAX ||
      lim->max_topk < 0 || lim->max_topk > c->vocab_size || lim->max_win_blocks < 0 ||
      lim->max_win_blocks == INT32_MAX ||
      (int64_t)(lim->max_rows + 1) * lim->max_blocks > INT32_MAX)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "graph state: bad limits (%d tokens, %d rows, %d x %d-position blocks)",
                   lim->max_tokens, lim->max_rows, lim->n_blocks, lim->block_size);
  xpi_graph_state *st = calloc(1, sizeof *st);
  if (!st) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  st->lim = *lim;
  st->lim.n_win_blocks = 0;
  st->n_dev = g->n_backends;
  st->win = lim->max_win_blocks > 0 && xpi_graph_has_window(g);
  st->in_win = calloc((size_t)c->n_layers + 1, 1);
  st->kv_layer = calloc((size_t)c->n_layers + 1, sizeof *st->kv_layer);
  const size_t B = (size_t)lim->max_tokens, H = (size_t)c->hidden_size, O = (size_t)lim->max_out;
  const size_t P = B > O ? B : O; /* a replayed step pads its tokens up to its bucket */
  xpi_status s = XPI_OK;
  st->host_x = malloc(P * H * sizeof(float));
  st->host_in = malloc(3 * O * sizeof(int32_t));
  st->host_sel = malloc(P * sizeof(int32_t));
  st->single_long_from = c->rope_long_from;
  int32_t *trash = malloc((size_t)lim->max_blocks * sizeof *trash);
  if (!st->host_x || !st->host_in || !st->host_sel || !trash || !st->in_win || !st->kv_layer)
    s = xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int d = 0; d < g->n_backends && s == XPI_OK; d++) { /* each layer's pool and index in it */
    int32_t k[2] = {0, 0};
    for (int32_t l = g->layer_dev[d]; l < g->layer_dev[d + 1]; l++) {
      st->in_win[l] = st->win && layer_slides(c, l);
      st->kv_layer[l] = k[st->in_win[l]]++;
    }
  }
  for (int d = 0; d < g->n_backends && s == XPI_OK; d++) { /* the step's buffers first, then the pool */
    dev_state *ds = &st->dev[d];
    xpi_backend *be = ds->be = g->backends[d];
    const int xin = g->w->embed_on_host && be->ops->alloc_host && d == first_dev(g); /* rows written in place */
    step_buf bufs[STEP_BUFS_MAX];
    const int nb = step_bufs(c, lim, st->win, d == last_dev(g), xin, bufs);
    for (int i = 0; i < nb; i++) { /* the field is a float * or int32_t *: stored as the pointer it is */
      void *p = (bufs[i].host ? balloc_host : balloc)(be, (size_t)bufs[i].count, 4, &s);
      memcpy((char *)ds + bufs[i].field, &p, sizeof p);
    }
    if (s == XPI_OK && c->n_experts > 0) s = xpi_moe_bufs_alloc(be, c, (int32_t)P, &ds->moe);
    for (size_t i = 0; s == XPI_OK && xin && i < P; i++) ds->iota[i] = (int32_t)i; /* host memory: plain stores */
  }
  if (s == XPI_OK && st->lim.n_blocks == 0) s = default_blocks(g, lim, st->win, &st->lim.n_blocks);
  if (st->win)
    st->lim.n_win_blocks = st->lim.n_blocks < lim->max_win_blocks ? st->lim.n_blocks : lim->max_win_blocks;
  for (int d = 0; d < g->n_backends && s == XPI_OK; d++) {
    dev_state *ds = &st->dev[d];
    xpi_backend *be = ds->be;
    for (int pool = 0; pool < 1 + st->win && s == XPI_OK; pool++) {
      /* a pool has one block more than the engine hands out: padding tokens of a replayed step write there */
      const int32_t nb = pool ? st->lim.n_win_blocks : st->lim.n_blocks, nl = pool_layers(g, st->win, d, pool);
      for (int32_t i = 0; trash && i < lim->max_blocks; i++) trash[i] = nb;
      if (nl > 0) {
        s = be->ops->kv_create(be, nl, nb + 1, lim->block_size, c->n_kv_heads, c->head_dim, g->kv_dtype,
                               pool ? &ds->kv_win : &ds->kv);
      }
      if (s == XPI_OK)
        s = be->ops->write(be, (pool ? ds->tables_win : ds->tables) + (size_t)lim->max_rows * lim->max_blocks, trash,
                           (size_t)lim->max_blocks * sizeof *trash);
    }
  }
  for (int d = 0; d < g->n_backends && s == XPI_OK; d++)
    st->kv_bytes += xpi_graph_kv_pool_bytes(g, g->layer_dev[d], g->layer_dev[d + 1], st->lim.n_blocks,
                                            st->win ? lim->max_win_blocks : 0, lim->block_size);
  free(trash);
  if (s != XPI_OK) {
    int32_t nb = st->lim.n_blocks; /* read before the state goes */
    xpi_graph_state_free(st);
    return xpi_err_prefix(s, "creating the KV pool (%d blocks of %d positions) and buffers for %d tokens a step: ",
                          nb, lim->block_size, lim->max_tokens);
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

/* Reads rows [0, n) (n <= max_tokens) of x[n, hidden] on backend be and records the first non-finite row under
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

/* Enqueues the layers for n tokens whose ids/pos/seq/tables are already in the backend buffers; leaves the
 * final hidden state (normed) in the last device's h for the rows [row0, row0+rows). With a probe (diagnostic
 * path, never the hot one), the residual stream is completed and read back after the embedding and after
 * every layer, stopping at the first non-finite value. */
static xpi_status run_layers_probed(const xpi_graph *g, xpi_graph_state *st, int32_t n, int32_t row0, int32_t rows,
                                    nonfinite_probe *probe) {
  const xpi_config *c = g->cfg;
  const xpi_model_weights *w = g->w;
  const int32_t H = c->hidden_size;
  int cur = 0;
  while (g->layer_dev[cur + 1] == 0) cur++; /* first device with layers (embedding lives there) */
  dev_state *D = &st->dev[cur];
  if (!w->embed_on_host) {
    XPI_TRY(D->be->ops->embed(D->be, D->x, &w->embed, D->ids, n));
  } else if (D->xin) { /* rows gathered on the host into xin (write_inputs): x[i] = xin[iota[i]] on the device */
    const xpi_weight rows = {.dtype = XPI_DT_F32, .rows = n, .cols = H, .data = D->xin};
    XPI_TRY(D->be->ops->embed(D->be, D->x, &rows, D->iota, n));
  } /* else write_inputs wrote x */
  XPI_TRY(xpi_op_scale(D->be, D->x, (int64_t)n * H, c->embed_scale));
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
    /* the layer's pool: the window pool for a sliding layer where the state has one */
    const int in_win = st->in_win[l];
    const xpi_kv_map map = {D->pos, D->seq, in_win ? D->tables_win : D->tables, st->lim.max_blocks};
    const float *inv[2] = {g->inv_freq[0][cur], g->inv_freq[1][cur]};
    xpi_fwd f = {.c = c, .be = D->be, .o = D->be->ops, .n = n, .layer = l, .kv_layer = st->kv_layer[l],
                 .kv = in_win ? D->kv_win : D->kv, .map = &map, .pos = D->pos, .long_sel = D->lsel, .inv_freq = inv,
                 .impl = g->attn, .x = D->x, .h = D->h, .t = D->t, .q = D->q, .k = D->k, .v = D->v, .att = D->att,
                 .res = D->res, .gate = D->gate,
                 .up = D->up, .moe = c->n_experts > 0 ? &D->moe : NULL, .pending = pending};
    XPI_TRY(c->family->layer(&f, &w->layers[l]));
    pending = f.pending;
    if (probe) { /* the layer's output: x with its residual branch added */
      if (pending) XPI_TRY(D->be->ops->add(D->be, D->x, pending, (int64_t)n * H));
      pending = NULL;
      XPI_TRY(probe_rows(g, st, probe, D->be, D->x, n, l));
      if (probe->found) return XPI_OK;
    }
  }
  st->head_norm = 0;
  if (rows == 1 && !probe && !pending && D->be->ops->matmul_multi) { /* the norm goes into the lm_head's launch */
    st->head_norm = 1;
    return XPI_OK;
  }
  if (rows > 0) { /* final norm only over the rows whose outputs are wanted */
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

/* lm_head over rows [row0, row0+m) of the last device's h into its logits buffer (m <= max_out), then the
 * argmax of each row into its tok buffer. */
static xpi_status run_head(const xpi_graph *g, xpi_graph_state *st, int32_t row0, int32_t m, int with_argmax) {
  dev_state *D = &st->dev[last_dev(g)];
  const xpi_config *c = g->cfg;
  const size_t off = (size_t)row0 * c->hidden_size;
  if (st->head_norm && m == 1) { /* the final norm of run_layers, fused (h gets the normalised row where a backend
                                  * computes it separately) */
    const xpi_weight *ws[1] = {&g->w->lm_head};
    float *outs[1] = {D->logits};
    XPI_TRY(D->be->ops->matmul_multi(D->be, 1, outs, D->x + off, &g->w->final_norm, c->rms_norm_eps, D->h + off, ws,
                                     NULL, 1));
  } else {
    XPI_TRY(D->be->ops->matmul(D->be, D->logits, D->h + off, &g->w->lm_head, NULL, m));
  }
  XPI_TRY(xpi_op_scale(D->be, D->logits, (int64_t)m * c->vocab_size, c->logit_scale));
  XPI_TRY(xpi_op_softcap(D->be, D->logits, (int64_t)m * c->vocab_size, c->final_softcap));
  return with_argmax ? D->be->ops->argmax(D->be, D->tok, D->logits, m, g->cfg->vocab_size) : XPI_OK;
}

/* Reads from the last device into host memory, counting the bytes. */
static xpi_status read_out(xpi_graph_state *st, dev_state *D, void *dst, const void *src, size_t bytes) {
  st->bytes_read += bytes;
  return D->be->ops->read(D->be, dst, src, bytes);
}

/* Copies the outputs of m rows computed by run_head (out rows r0..r0+m) to the batch's host buffers: the argmax
 * ids; for top-k rows, the topk op over the span of them (after the replay of a recorded step: k varies per
 * step) and their k values, and the whole row only when topk_full asks; the other logits rows. */
static xpi_status read_outputs(const xpi_graph *g, xpi_graph_state *st, const xpi_graph_batch *b, int32_t r0,
                               int32_t m) {
  dev_state *D = &st->dev[last_dev(g)];
  const size_t V = (size_t)g->cfg->vocab_size;
  if (b->argmax) XPI_TRY(read_out(st, D, b->argmax + r0, D->tok, (size_t)m * sizeof(int32_t)));
  int32_t lo = m, hi = -1, K = 0;
  for (int32_t r = 0; b->topk_n && r < m; r++) {
    const int32_t n = b->topk_n[r0 + r];
    if (n <= 0) continue;
    if (n > st->lim.max_topk)
      return xpi_err(XPI_ERR_INTERNAL, "graph step: row %d asks for %d top-k values, the state holds %d", r0 + r, n,
                     st->lim.max_topk);
    lo = r < lo ? r : lo, hi = r, K = n > K ? n : K;
  }
  if (K > 0)
    XPI_TRY(D->be->ops->topk(D->be, D->tk_ids, D->tk_vals, D->tk_norm, D->logits + (size_t)lo * V, hi - lo + 1,
                             (int32_t)V, K));
  for (int32_t r = 0; r < m; r++) {
    const int32_t o = r0 + r, n = b->topk_n ? b->topk_n[o] : 0;
    float *row = b->logits ? b->logits[o] : NULL;
    if (b->full) b->full[o] = 0;
    if (n > 0) {
      const size_t at = (size_t)(r - lo) * (size_t)K, ho = (size_t)o * (size_t)st->lim.max_topk;
      XPI_TRY(read_out(st, D, b->topk_ids + ho, D->tk_ids + at, (size_t)n * sizeof(int32_t)));
      XPI_TRY(read_out(st, D, b->topk_vals + ho, D->tk_vals + at, (size_t)n * sizeof(float)));
      XPI_TRY(read_out(st, D, b->topk_norm + 2 * (size_t)o, D->tk_norm + 2 * (size_t)(r - lo), 2 * sizeof(float)));
      if (b->topk_ids[ho] < 0 || !b->topk_full || !b->topk_full(b->topk_user, o, b->topk_ids + ho, b->topk_vals + ho, n))
        continue;
      if (!row || !b->full) return xpi_err(XPI_ERR_INTERNAL, "graph step: top-k row %d has no room for its logits", o);
      b->full[o] = 1;
    }
    if (row) XPI_TRY(read_out(st, D, row, D->logits + (size_t)r * V, V * sizeof(float)));
  }
  return XPI_OK;
}

/* The embedding rows of ids[0..n) gathered from the table in host memory into host_x (f32), written to x of the
 * first device with layers: the only bytes of the table that reach a device. */
static xpi_status embed_from_host(const xpi_graph *g, xpi_graph_state *st, const int32_t *ids, int32_t n) {
  const xpi_weight *E = &g->w->embed;
  const size_t H = (size_t)E->cols;
  for (int32_t i = 0; i < n; i++) {
    if (ids[i] < 0 || ids[i] >= E->rows)
      return xpi_err(XPI_ERR_INVALID_ARGUMENT, "token id %d is outside the vocabulary [0, %lld)", ids[i],
                     (long long)E->rows);
    float *dst = st->host_x + (size_t)i * H;
    const size_t r = (size_t)ids[i] * H;
    if (E->dtype == XPI_DT_F32) memcpy(dst, (const float *)E->data + r, H * sizeof *dst);
    else {
      const uint16_t *src = (const uint16_t *)E->data + r;
      for (size_t j = 0; j < H; j++)
        dst[j] = E->dtype == XPI_DT_BF16 ? xpi_bf16_to_f32(src[j]) : xpi_f16_to_f32(src[j]);
    }
  }
  dev_state *D = &st->dev[first_dev(g)];
  return D->be->ops->write(D->be, D->xin ? D->xin : D->x, st->host_x, (size_t)n * H * sizeof(float));
}

/* longrope: which of the n tokens take the long factors (into st->host_sel): those at positions from their
 * row's long_from (the original context when the step gives none; see xpi_graph_batch). Tokens past n_real
 * are padding (row max_rows). */
static void long_select(const xpi_graph *g, xpi_graph_state *st, const int32_t *pos, const int32_t *seq, int32_t n,
                        int32_t n_real, const int32_t *row_long_from) {
  if (g->cfg->rope_long_from <= 0) return;
  for (int32_t i = 0; i < n; i++) {
    const int32_t from = i < n_real && row_long_from ? row_long_from[seq[i]] : g->cfg->rope_long_from;
    st->host_sel[i] = i < n_real && pos[i] >= from;
  }
}

/* Writes a step's inputs (n tokens, n_rows table rows; the longrope selections in st->host_sel) to every
 * backend that needs them. */
static xpi_status write_inputs(const xpi_graph *g, xpi_graph_state *st, const int32_t *ids, const int32_t *pos,
                               const int32_t *seq, int32_t n, const int32_t *tables, const int32_t *tables_win,
                               int32_t n_rows) {
  const size_t tb = (size_t)n_rows * (size_t)st->lim.max_blocks * sizeof(int32_t);
  if (g->w->embed_on_host) XPI_TRY(embed_from_host(g, st, ids, n));
  for (int d = 0; d < g->n_backends; d++) {
    dev_state *D = &st->dev[d];
    if (g->layer_dev[d] == g->layer_dev[d + 1] && d != 0) continue; /* no layers here */
    if (d == 0 || g->layer_dev[d] == 0) XPI_TRY(D->be->ops->write(D->be, D->ids, ids, (size_t)n * sizeof *ids));
    XPI_TRY(D->be->ops->write(D->be, D->pos, pos, (size_t)n * sizeof *pos));
    XPI_TRY(D->be->ops->write(D->be, D->seq, seq, (size_t)n * sizeof *seq));
    if (D->lsel) XPI_TRY(D->be->ops->write(D->be, D->lsel, st->host_sel, (size_t)n * sizeof *st->host_sel));
    XPI_TRY(D->be->ops->write(D->be, D->tables, tables, tb));
    if (st->win) XPI_TRY(D->be->ops->write(D->be, D->tables_win, tables_win, tb));
  }
  return XPI_OK;
}

/* Smallest bucket (power of two) holding n sequences, and its index. */
static int32_t bucket_of(int32_t n, int *index) {
  int32_t b = 1;
  int i = 0;
  while (b < n) b <<= 1, i++;
  *index = i;
  return b;
}

/* A decode step of n sequences through the recording of its bucket B (recorded on first use): the n tokens
 * padded to B with tokens that write to the spare block and read nothing else. Layers, lm_head and argmax of
 * every row replay on the device; ids, positions and tables are read from device memory. */
static xpi_status decode_replayed(const xpi_graph *g, xpi_graph_state *st, const xpi_graph_batch *b) {
  int bi;
  const int32_t B = bucket_of(b->n, &bi);
  xpi_backend *be = st->dev[0].be;
  int32_t *ids = st->host_in, *pos = ids + st->lim.max_out, *seq = pos + st->lim.max_out;
  memcpy(ids, b->ids, (size_t)b->n * sizeof *ids);
  memcpy(pos, b->pos, (size_t)b->n * sizeof *pos);
  memcpy(seq, b->seq, (size_t)b->n * sizeof *seq);
  for (int32_t i = b->n; i < B; i++) ids[i] = 0, pos[i] = 0, seq[i] = st->lim.max_rows;
  long_select(g, st, pos, seq, B, b->n, b->rope_long_from);
  XPI_TRY(write_inputs(g, st, ids, pos, seq, B, b->tables, b->tables_win, b->n_rows));
  if (!st->rec[bi]) {
    XPI_TRY(be->ops->capture_begin(be));
    xpi_status s = run_layers(g, st, B, 0, B);
    if (s == XPI_OK) s = run_head(g, st, 0, B, 1);
    void *rec = NULL;
    xpi_status s2 = be->ops->capture_end(be, &rec);
    if (s != XPI_OK) {
      if (rec && be->ops->graph_free) be->ops->graph_free(be, rec);
      return s;
    }
    XPI_TRY(s2);
    st->rec[bi] = rec;
  }
  XPI_TRY(be->ops->replay(be, st->rec[bi]));
  return read_outputs(g, st, b, 0, b->n);
}

xpi_status xpi_graph_step(const xpi_graph *g, xpi_graph_state *st, const xpi_graph_batch *b) {
  const xpi_graph_limits *lim = &st->lim;
  if (b->n <= 0 || b->n > lim->max_tokens || b->n_out < 0 || b->n_out > b->n || b->n_rows <= 0 ||
      b->n_rows > lim->max_rows)
    return xpi_err(XPI_ERR_INTERNAL, "graph step: %d tokens (%d outputs, %d sequences) outside the limits (%d, %d)",
                   b->n, b->n_out, b->n_rows, lim->max_tokens, lim->max_rows);
  if (st->win && !b->tables_win)
    return xpi_err(XPI_ERR_INTERNAL, "graph step: the state keeps a window pool, the batch has no tables_win");
  xpi_backend *be0 = st->dev[0].be;
  int can_replay = g->n_backends == 1 && be0->ops->capture_begin && be0->ops->capture_end && be0->ops->replay;
  if (b->decode && b->n_out == b->n && b->n <= lim->max_out && can_replay) return decode_replayed(g, st, b);
  long_select(g, st, b->pos, b->seq, b->n, b->n, b->rope_long_from);
  XPI_TRY(write_inputs(g, st, b->ids, b->pos, b->seq, b->n, b->tables, b->tables_win, b->n_rows));
  const int32_t row0 = b->n - b->n_out;
  XPI_TRY(run_layers(g, st, b->n, row0, b->n_out));
  for (int32_t r = 0; r < b->n_out; r += lim->max_out) {
    const int32_t m = b->n_out - r < lim->max_out ? b->n_out - r : lim->max_out;
    int want_logits = 0;
    for (int32_t i = 0; b->logits && i < m; i++) want_logits |= b->logits[r + i] != NULL;
    for (int32_t i = 0; b->topk_n && i < m; i++) want_logits |= b->topk_n[r + i] > 0;
    if (!b->argmax && !want_logits) continue;
    XPI_TRY(run_head(g, st, row0 + r, m, b->argmax != NULL));
    XPI_TRY(read_outputs(g, st, b, r, m));
  }
  return XPI_OK;
}

/* ------------------------------------------------------------------ one sequence */

#define SINGLE_BLOCK 32
#define SINGLE_TOKENS 256 /* tokens per step: bounds activation memory (64 KiB per token for Qwen3-0.6B) */
#define SINGLE_OUT 16     /* rows of logits computed at once when all positions are wanted */

xpi_status xpi_graph_state_create_single(const xpi_graph *g, int32_t n_ctx, xpi_graph_state **out) {
  if (n_ctx <= 0) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "graph state: context of %d positions", n_ctx);
  int32_t nb = (int32_t)(((int64_t)n_ctx + SINGLE_BLOCK - 1) / SINGLE_BLOCK);
  xpi_graph_limits lim = {SINGLE_TOKENS, 1, nb, nb, 0, SINGLE_BLOCK, SINGLE_OUT, 0, 0, 0};
  return xpi_graph_state_create(g, &lim, out);
}

static xpi_status forward_single(const xpi_graph *g, xpi_graph_state *st, const int32_t *ids, int32_t n,
                                 int32_t n_past, int all_logits, float *logits, int32_t *token) {
  if (n <= 0) return XPI_OK;
  const xpi_graph_limits *lim = &st->lim;
  const int64_t n_ctx = (int64_t)lim->max_blocks * lim->block_size;
  if (lim->max_rows != 1 || lim->n_blocks < lim->max_blocks)
    return xpi_err(XPI_ERR_INTERNAL, "xpi_graph_forward needs a state made by xpi_graph_state_create_single");
  if (n_past < 0 || n > n_ctx - n_past)
    return xpi_err(XPI_ERR_CONTEXT_LENGTH, "%d tokens after %d in the context exceed the context size of %lld", n,
                   n_past, (long long)n_ctx);
  const int32_t V = g->cfg->vocab_size, T = lim->max_tokens;
  int32_t *buf = malloc(((size_t)lim->max_blocks + 2 * (size_t)T) * sizeof *buf);
  float **rows = malloc((size_t)T * sizeof *rows);
  if (!buf || !rows) {
    free(buf);
    free(rows);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  int32_t *tables = buf, *pos = buf + lim->max_blocks, *seq = pos + T;
  for (int32_t i = 0; i < lim->max_blocks; i++) tables[i] = i;
  /* longrope: a first call longer than the original context runs every position with the long factors, as
   * transformers' forward over such a prompt does; otherwise they start at the original context */
  if (n_past == 0) st->single_long_from = n > g->cfg->rope_long_from ? 0 : g->cfg->rope_long_from;
  xpi_status s = XPI_OK;
  for (int32_t done = 0; done < n && s == XPI_OK;) {
    const int32_t m = n - done < T ? n - done : T;
    const int last = done + m == n;
    for (int32_t i = 0; i < m; i++) pos[i] = n_past + done + i, seq[i] = 0;
    xpi_graph_batch b = {.n = m, .ids = ids + done, .pos = pos, .seq = seq, .n_rows = 1, .tables = tables,
                         .tables_win = tables, .rope_long_from = &st->single_long_from};
    if (token) {
      b.n_out = last;
      b.argmax = last ? token : NULL;
    } else if (logits && all_logits) {
      b.n_out = m;
      for (int32_t i = 0; i < m; i++) rows[i] = logits + (size_t)(done + i) * V;
    } else if (logits && last) {
      b.n_out = 1;
      rows[0] = logits;
    }
    if (logits && !token) b.logits = rows;
    b.decode = m == 1 && b.n_out == 1;
    s = xpi_graph_step(g, st, &b);
    done += m;
  }
  free(buf);
  free(rows);
  return s;
}

xpi_status xpi_graph_forward(const xpi_graph *g, xpi_graph_state *st, const int32_t *ids, int32_t n, int32_t n_past,
                             int all_logits, float *logits) {
  return forward_single(g, st, ids, n, n_past, all_logits, logits, NULL);
}

xpi_status xpi_graph_forward_argmax(const xpi_graph *g, xpi_graph_state *st, const int32_t *ids, int32_t n,
                                    int32_t n_past, int32_t *token) {
  if (n <= 0) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_graph_forward_argmax: no ids given");
  return forward_single(g, st, ids, n, n_past, 0, NULL, token);
}

xpi_status xpi_graph_locate_nonfinite(const xpi_graph *g, xpi_graph_state *st, const int32_t *ids, int32_t n,
                                      int32_t pos0, const int32_t *table, const int32_t *table_win,
                                      int32_t n_table, int32_t rope_long_from) {
  const xpi_graph_limits *lim = &st->lim;
  if (!ids || !table || n <= 0 || pos0 < 0 || n_table <= 0 || n_table > lim->max_blocks ||
      (int64_t)pos0 + n > (int64_t)n_table * lim->block_size)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_graph_locate_nonfinite: %d ids at position %d do not fit %d blocks",
                   n, pos0, n_table);
  const xpi_config *c = g->cfg;
  const int32_t V = c->vocab_size, T = lim->max_tokens;
  nonfinite_probe p = {0};
  float *logits = malloc((size_t)V * sizeof *logits);
  int32_t *buf = malloc((2 * (size_t)lim->max_blocks + 2 * (size_t)T) * sizeof *buf);
  xpi_status s = logits && buf ? XPI_OK : xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  int32_t *tables = buf, *tables_win = buf ? buf + lim->max_blocks : NULL;
  int32_t *pos = buf ? tables_win + lim->max_blocks : NULL, *seq = pos ? pos + T : NULL;
  if (s == XPI_OK && st->win && !table_win) s = xpi_err(XPI_ERR_INVALID_ARGUMENT, "no window-pool table given");
  if (s == XPI_OK) memcpy(tables, table, (size_t)n_table * sizeof *tables);
  if (s == XPI_OK && table_win) memcpy(tables_win, table_win, (size_t)n_table * sizeof *tables_win);
  for (int32_t done = 0; done < n && s == XPI_OK && !p.found;) {
    const int32_t m = n - done < T ? n - done : T;
    const int last_chunk = done + m == n;
    for (int32_t i = 0; i < m; i++) pos[i] = pos0 + done + i, seq[i] = 0;
    p.pos0 = pos0 + done;
    long_select(g, st, pos, seq, m, m, &rope_long_from);
    s = write_inputs(g, st, ids + done, pos, seq, m, tables, tables_win, 1);
    if (s == XPI_OK) s = run_layers_probed(g, st, m, m - 1, last_chunk, &p);
    if (s == XPI_OK && !p.found && last_chunk) { /* the lm_head over the last position, as the step ran it */
      s = run_head(g, st, m - 1, 1, 0);
      dev_state *D = &st->dev[last_dev(g)];
      if (s == XPI_OK) s = D->be->ops->read(D->be, logits, D->logits, (size_t)V * sizeof *logits);
      if (s == XPI_OK && has_nonfinite(logits, (size_t)V)) p.found = 1, p.layer = c->n_layers + 1, p.pos = pos0 + n - 1;
    }
    done += m;
  }
  free(logits);
  free(buf);
  if (s != XPI_OK) return xpi_err_prefix(s, "locating non-finite logits: ");
  const char *what = "non-finite logits (NaN or infinity)";
  if (!p.found)
    return xpi_err(XPI_ERR_NUMERIC, "%s, but a layer-by-layer re-run of the step found none (a transient device fault?)",
                   what);
  if (p.layer < 0)
    return xpi_err(XPI_ERR_NUMERIC, "%s: the embedding of token %d at position %d already holds one: row %d of "
                   "model.embed_tokens.weight is not finite", what, ids[p.pos - pos0], p.pos, ids[p.pos - pos0]);
  if (p.layer < c->n_layers)
    return xpi_err(XPI_ERR_NUMERIC, "%s: they first appear in the output of layer %d (model.layers.%d.*) at position "
                   "%d; the checkpoint's weights of that layer may hold NaN or infinity", what, p.layer, p.layer, p.pos);
  return xpi_err(XPI_ERR_NUMERIC, "%s: every layer's output is finite; they first appear in the %s at position %d",
                 what, p.layer == c->n_layers ? "final norm (model.norm.weight)" : "lm_head", p.pos);
}
