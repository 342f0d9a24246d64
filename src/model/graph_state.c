/* A graph state (see graph.h): the step's buffers and the KV pools of every device, allocated and freed. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "model/graph_internal.h"
#include "model/moe.h"

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
    const int nb = xpi_graph_step_bufs(c, lim, st->win, d == last_dev(g), xin, bufs);
    for (int i = 0; i < nb; i++) { /* the field is a float * or int32_t *: stored as the pointer it is */
      void *p = (bufs[i].host ? balloc_host : balloc)(be, (size_t)bufs[i].count, 4, &s);
      memcpy((char *)ds + bufs[i].field, &p, sizeof p);
    }
    if (s == XPI_OK && c->n_experts > 0) s = xpi_moe_bufs_alloc(be, c, (int32_t)P, &ds->moe);
    for (size_t i = 0; s == XPI_OK && xin && i < P; i++) ds->iota[i] = (int32_t)i; /* host memory: plain stores */
  }
  if (s == XPI_OK && st->lim.n_blocks == 0) s = xpi_graph_default_blocks(g, lim, st->win, &st->lim.n_blocks);
  if (st->win)
    st->lim.n_win_blocks = st->lim.n_blocks < lim->max_win_blocks ? st->lim.n_blocks : lim->max_win_blocks;
  for (int d = 0; d < g->n_backends && s == XPI_OK; d++) {
    dev_state *ds = &st->dev[d];
    xpi_backend *be = ds->be;
    for (int pool = 0; pool < 1 + st->win && s == XPI_OK; pool++) {
      /* a pool has one block more than the engine hands out: padding tokens of a replayed step write there */
      const int32_t nb = pool ? st->lim.n_win_blocks : st->lim.n_blocks;
      const int32_t nl = xpi_graph_pool_layers(g, st->win, d, pool);
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
