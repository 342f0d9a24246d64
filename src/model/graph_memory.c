/* What a graph state takes (see graph.h): KV bytes per position and per pool, the blocks a memory budget holds,
 * the step's buffers of one device (one table for their allocation, graph_state.c, and for the load's memory
 * plan), and the default pool sized from free memory. */
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "model/graph_internal.h"
#include "model/moe.h"

uint64_t xpi_graph_kv_bytes_per_token(const xpi_graph *g) {
  const xpi_config *c = g->cfg;
  return 2ull * (uint64_t)c->n_layers * (uint64_t)c->n_kv_heads * (uint64_t)c->head_dim * xpi_dtype_size(g->kv_dtype);
}

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

int32_t xpi_graph_pool_layers(const xpi_graph *g, int win, int d, int pool) {
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
  return 2ull * (uint64_t)xpi_graph_pool_layers(g, win, d, pool) * (uint64_t)c->n_kv_heads * (uint64_t)c->head_dim *
         xpi_dtype_size(g->kv_dtype) * (uint64_t)block_size;
}

#define SB(f, n, h) (step_buf){offsetof(dev_state, f), (n), (h)}

int xpi_graph_step_bufs(const xpi_config *c, const xpi_graph_limits *lim, int win, int last, int xin, step_buf *b) {
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
  const int n = xpi_graph_step_bufs(c, lim, lim->max_win_blocks > 0, last, 0, b);
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

xpi_status xpi_graph_default_blocks(const xpi_graph *g, const xpi_graph_limits *lim, int win, int32_t *n_blocks) {
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
