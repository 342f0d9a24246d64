/* What the graph's files share (graph.c, graph_memory.c, graph_state.c, graph_step.c, graph_single.c,
 * graph_nonfinite.c): the state's layout, the step buffers' table, and the step's pieces that the single-sequence
 * and diagnostic paths run again. Private to src/model/graph*.c. */
#ifndef XPI_MODEL_GRAPH_INTERNAL_H
#define XPI_MODEL_GRAPH_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "model/graph.h"
#include "model/moe.h"

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

/* The first device with layers (the embedding lives there). */
static inline int first_dev(const xpi_graph *g) {
  int d = 0;
  while (d + 1 < g->n_backends && g->layer_dev[d + 1] == 0) d++;
  return d;
}

/* The device of the last layer (final norm, lm_head and logits live there). */
static inline int last_dev(const xpi_graph *g) {
  int d = g->n_backends - 1;
  while (d > 0 && g->layer_dev[d] >= g->cfg->n_layers) d--;
  return d;
}

/* Layer l attends to a sliding window (blocks.c gives it c->sliding_window). */
static inline int layer_slides(const xpi_config *c, int32_t l) { return c->sliding_window > 0 && c->layer_sliding[l]; }

/* ---- memory (graph_memory.c) */

/* Layers of device d whose KV is in the window pool (pool 1) or in the other one (pool 0), for a state with a
 * window pool (win) or without (every layer in pool 0). */
int32_t xpi_graph_pool_layers(const xpi_graph *g, int win, int d, int pool);

/* The step's buffers of one device: which dev_state field, how many 4-byte elements (int32 or float), and
 * whether host-visible memory serves (inputs and small outputs, balloc_host). One table for
 * xpi_graph_state_create, which allocates them, and xpi_graph_step_bytes, which counts them for the memory plan. */
typedef struct step_buf {
  size_t field;   /* offsetof(dev_state, the pointer) */
  uint64_t count; /* elements */
  int host;
} step_buf;

#define STEP_BUFS_MAX 24

/* The buffers of a device (last: it holds the logits, greedy ids and top-k rows; xin: it holds the host-gathered
 * embedding rows) for a state with a window pool's tables (win) or not, into b[STEP_BUFS_MAX]. Returns how many. */
int xpi_graph_step_bufs(const xpi_config *c, const xpi_graph_limits *lim, int win, int last, int xin, step_buf *b);

/* The default pool: half of what every backend with layers has free, the smallest share over them, or the
 * context the load's memory plan kept room for where that is more (the plan checked it fits). */
xpi_status xpi_graph_default_blocks(const xpi_graph *g, const xpi_graph_limits *lim, int win, int32_t *n_blocks);

/* ---- the step's pieces (graph_step.c) */

/* The diagnostic path's probe (xpi_graph_locate_nonfinite): where the first non-finite value was seen. */
typedef struct nonfinite_probe {
  int32_t pos0;        /* position of row 0 */
  int found;
  int32_t layer;       /* -1: the embedding; n_layers: the final norm; n_layers + 1: the lm_head */
  int32_t pos;         /* first position (row) with a non-finite value at that point */
} nonfinite_probe;

/* 1 when v[0..n) holds a NaN or an infinity. */
static inline int has_nonfinite(const float *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!(v[i] - v[i] == 0.0f)) return 1;
  return 0;
}

/* Enqueues the layers for n tokens whose ids/pos/seq/tables are already in the backend buffers; leaves the
 * final hidden state (normed) in the last device's h for the rows [row0, row0+rows). With a probe (diagnostic
 * path, never the hot one), the residual stream is completed and read back after the embedding and after
 * every layer, stopping at the first non-finite value. */
xpi_status xpi_graph_run_layers_probed(const xpi_graph *g, xpi_graph_state *st, int32_t n, int32_t row0, int32_t rows,
                                       nonfinite_probe *probe);

/* lm_head over rows [row0, row0+m) of the last device's h into its logits buffer (m <= max_out), then the
 * argmax of each row into its tok buffer. */
xpi_status xpi_graph_run_head(const xpi_graph *g, xpi_graph_state *st, int32_t row0, int32_t m, int with_argmax);

/* longrope: which of the n tokens take the long factors (into st->host_sel): those at positions from their
 * row's long_from (the original context when the step gives none; see xpi_graph_batch). Tokens past n_real
 * are padding (row max_rows). */
void xpi_graph_long_select(const xpi_graph *g, xpi_graph_state *st, const int32_t *pos, const int32_t *seq, int32_t n,
                           int32_t n_real, const int32_t *row_long_from);

/* Writes a step's inputs (n tokens, n_rows table rows; the longrope selections in st->host_sel) to every
 * backend that needs them. */
xpi_status xpi_graph_write_inputs(const xpi_graph *g, xpi_graph_state *st, const int32_t *ids, const int32_t *pos,
                                  const int32_t *seq, int32_t n, const int32_t *tables, const int32_t *tables_win,
                                  int32_t n_rows);

/* ---- the diagnostic path (graph_nonfinite.c) */

/* Reads rows [0, n) (n <= max_tokens) of x[n, hidden] on backend be and records the first non-finite row under
 * `layer`. */
xpi_status xpi_graph_probe_rows(const xpi_graph *g, xpi_graph_state *st, nonfinite_probe *p, xpi_backend *be,
                                const float *x, int32_t n, int32_t layer);

#endif
