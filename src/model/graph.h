/* The transformer forward of every family, over the op interface (ops.h): the embedding, the family's layers
 * (model/family.h, src/model/families/), the final norm and the lm_head.
 *
 * A graph is immutable after xpi_graph_init and shared by every engine of a model; each engine owns an
 * xpi_graph_state (the paged KV pool and activation buffers on every backend). One step runs a batch of
 * tokens from any number of sequences: every row is one token, attention finds each token's sequence through
 * its block table. Layers may live on different backends (device_map): the residual stream of the whole batch
 * is copied through the host at each boundary. */
#ifndef XPI_MODEL_GRAPH_H
#define XPI_MODEL_GRAPH_H

#include "model/config.h"
#include "model/weights.h"
#include "ops/ops.h"

#define XPI_MAX_BACKENDS 16

typedef struct xpi_graph {
  const xpi_config *cfg;
  const xpi_model_weights *w;
  xpi_backend *backends[XPI_MAX_BACKENDS];
  int n_backends;
  int32_t layer_dev[XPI_MAX_BACKENDS + 1];  /* layers [layer_dev[d], layer_dev[d+1]) run on backends[d] */
  float *inv_freq[2][XPI_MAX_BACKENDS];     /* per RoPE set of the config: backend memory, head_dim/2 floats */
  xpi_attn_impl attn;
  xpi_dtype kv_dtype;
  int32_t kv_plan_tokens;                   /* positions of KV the load's memory plan kept room for on every device
                                             * (src/model/placement.c); the default pool is at least that, 0: none */
} xpi_graph;

/* Splits n_layers over n_dev devices in proportion to weight[d] (e.g. free memory): first[d] is the first
 * layer of device d, first[n_dev] == n_layers. Devices may get zero layers only if their weight is 0. */
xpi_status xpi_graph_split(int32_t n_layers, const double *weight, int n_dev, int32_t *first);

/* Builds layer_be[] for xpi_weights_load from backends/layer_dev. */
void xpi_graph_layer_backends(const xpi_graph *g, int32_t n_layers, xpi_backend **layer_be);

/* Fills the per-backend constants (RoPE inverse frequencies). g->cfg, backends, layer_dev set by caller. */
xpi_status xpi_graph_init(xpi_graph *g);
void xpi_graph_release(xpi_graph *g);

/* Bytes one KV position takes over all layers (K and V) at the graph's KV dtype. */
uint64_t xpi_graph_kv_bytes_per_token(const xpi_graph *g);
/* The same split between the layers that attend to every position (*full) and the sliding-window layers
 * (*win), which a state with a window pool keeps apart; *full + *win == xpi_graph_kv_bytes_per_token. */
void xpi_graph_kv_bytes_split(const xpi_graph *g, uint64_t *full, uint64_t *win);
/* 1 when some layer has a sliding window (a state may keep those layers in a window pool). */
int xpi_graph_has_window(const xpi_graph *g);
/* Blocks of the main pool (block_size positions) that `bytes` hold over all backends, each pool with its spare
 * block, where the window pool of a state with max_win_blocks > 0 holds min(n, max_win_blocks) blocks of the
 * sliding layers (-1: not one block; INT32_MAX / 2 when every layer slides and the window pool fits). */
int64_t xpi_graph_pool_blocks(const xpi_graph *g, uint64_t bytes, int32_t block_size, int32_t max_win_blocks);

/* Bytes the KV pools of layers [l0, l1) (one device's) take, as xpi_graph_state_create allocates them for a main
 * pool of n_blocks blocks: each pool with its spare block; with max_win_blocks > 0 the sliding layers' in the
 * window pool of min(n_blocks, max_win_blocks) blocks. The load's memory plan (model/placement.c) counts with it. */
uint64_t xpi_graph_kv_pool_bytes(const xpi_graph *g, int32_t l0, int32_t l1, int32_t n_blocks, int32_t max_win_blocks,
                                 int32_t block_size);

/* What a state is sized for. */
typedef struct xpi_graph_limits {
  int32_t max_tokens;  /* tokens per step */
  int32_t max_rows;    /* block-table rows (sequences) per step */
  int32_t max_blocks;  /* blocks of the longest sequence: the row stride of the tables */
  int32_t n_blocks;    /* blocks in the KV pool of every backend (ids 0..n_blocks-1); 0: half of what every
                        * backend has free once the step buffers are allocated, at most max_pool_blocks */
  int32_t max_pool_blocks;
  int32_t block_size;  /* positions per block, a power of two */
  int32_t max_out;     /* output rows (lm_head) computed at once; decode steps of up to this many sequences are
                        * recorded and replayed per batch-size bucket (1, 2, 4, ...) where the backend can */
  int32_t max_topk;    /* most top-k values an output row may ask for (0: none); also the row stride of the
                        * batch's topk_ids / topk_vals */
  int32_t max_win_blocks; /* > 0 (a model with sliding layers): those layers keep their KV in a separate window
                        * pool of n_win_blocks = min(n_blocks, max_win_blocks) blocks (ids 0..n_win_blocks-1),
                        * addressed by the batch's tables_win; the other layers in the pool of n_blocks, which
                        * is not allocated when every layer slides. 0: one pool for every layer */
  int32_t n_win_blocks;   /* set by xpi_graph_state_create */
} xpi_graph_limits;

typedef struct xpi_graph_state xpi_graph_state;

/* Device bytes a state's step buffers take on one backend (inputs, tables, activations; with last: the
 * logits, greedy ids and top-k rows of the last device), as xpi_graph_state_create allocates them. */
uint64_t xpi_graph_step_bytes(const xpi_config *c, const xpi_graph_limits *lim, int last);

xpi_status xpi_graph_state_create(const xpi_graph *g, const xpi_graph_limits *lim, xpi_graph_state **out);
void xpi_graph_state_free(xpi_graph_state *st);
/* The limits, with n_blocks as allocated. */
const xpi_graph_limits *xpi_graph_state_limits(const xpi_graph_state *st);
/* Bytes the KV pools take over all backends: n_blocks + 1 blocks (a spare block takes the padding tokens of
 * replayed steps), and the window pool's n_win_blocks + 1 blocks of the sliding layers where there is one. */
uint64_t xpi_graph_state_kv_bytes(const xpi_graph_state *st);

/* One step. Token i (ids[i]) is at position pos[i] of the sequence whose block table is row seq[i] of tables
 * (n_rows rows of max_blocks entries); its K/V are stored in that table's block, then it attends to its
 * sequence's positions 0..pos[i]. The last n_out tokens produce outputs: out row r is token n - n_out + r. */
typedef struct xpi_graph_batch {
  int32_t n;                       /* tokens, 1..max_tokens */
  const int32_t *ids, *pos, *seq;  /* host [n] */
  int32_t n_rows;                  /* 1..max_rows */
  const int32_t *tables;           /* host [n_rows][max_blocks] */
  const int32_t *tables_win;       /* host [n_rows][max_blocks]: the window pool's tables (a state with one; the
                                    * sliding layers' blocks, same logical index as in tables; entries before a
                                    * token's window are never read and may be -1), else NULL */
  int32_t n_out;                   /* 0..n */
  int32_t *argmax;                 /* host [n_out] or NULL: greedy ids, computed on the device (4 bytes a row
                                    * come back) */
  float *const *logits;            /* host [n_out] row pointers (vocab_size floats; NULL: not wanted), or NULL.
                                    * A top-k row's pointer is where its row goes if topk_full asks for it */
  /* Top-k rows: the device computes the row's topk_n[r] best logits and its softmax normaliser (the topk op,
   * after the lm_head, replayed steps included) and only those come back: topk_ids/topk_vals row r at
   * r * max_topk (ids all -1 when the row is not finite), topk_norm[2r], [2r+1] = (max, sum of exp(x - max)).
   * Then, if topk_full says so (the values did not decide the row's sampling), the whole row is read into
   * logits[r] as well (the row is still on the device), and full[r] = 1. */
  const int32_t *topk_n;           /* host [n_out] values wanted per row (0: none; <= max_topk), or NULL */
  int32_t *topk_ids;               /* host [n_out][max_topk] */
  float *topk_vals;                /* host [n_out][max_topk] */
  float *topk_norm;                /* host [n_out][2] */
  int (*topk_full)(void *user, int32_t r, const int32_t *ids, const float *vals, int32_t n);
  void *topk_user;
  unsigned char *full;             /* host [n_out]: 1 where the whole row was read too */
  const int32_t *rope_long_from;   /* host [n_rows] or NULL. longrope models: row r's tokens at positions from
                                    * rope_long_from[r] take the long factors (NULL: original_max_position_embeddings
                                    * for every row); the engine gives 0 for a sequence whose first prompt was
                                    * longer than that, as transformers computes such a prompt */
  int decode;                      /* every token is the only one of its sequence and n_out == n: the step may
                                    * replay the recording of its batch-size bucket */
} xpi_graph_batch;

xpi_status xpi_graph_step(const xpi_graph *g, xpi_graph_state *st, const xpi_graph_batch *b);

/* Bytes of step outputs (ids, top-k, logits rows) read back to the host by this state's steps so far. */
uint64_t xpi_graph_state_bytes_read(const xpi_graph_state *st);

/* ---- one sequence over the same step (tests and tools that drive the graph without an engine) */

/* A state for one sequence of up to n_ctx positions whose block table is the identity (blocks 0, 1, 2, ...). */
xpi_status xpi_graph_state_create_single(const xpi_graph *g, int32_t n_ctx, xpi_graph_state **out);

/* Runs ids[0..n) at positions n_past..n_past+n-1 of that sequence (in steps of max_tokens). logits: NULL, or
 * host memory for vocab_size floats per row: n rows when all_logits, else only the last position's row. */
xpi_status xpi_graph_forward(const xpi_graph *g, xpi_graph_state *st, const int32_t *ids, int32_t n, int32_t n_past,
                             int all_logits, float *logits);

/* Like xpi_graph_forward, but instead of host logits: *token = argmax of the last position's logits (lowest
 * index on ties, as the host argmax), computed on the last device inside the same step (inside the replayed
 * decode step where there is one); only the int32 id is copied to the host. *token is -1 when those logits
 * hold a NaN or an infinity (the argmax op reports it). */
xpi_status xpi_graph_forward_argmax(const xpi_graph *g, xpi_graph_state *st, const int32_t *ids, int32_t n,
                                    int32_t n_past, int32_t *token);

/* The diagnostic path (off the hot path) after a step gave non-finite logits for a sequence: runs its tokens
 * ids[0..n) at positions pos0.. again, alone (block table `table`, n_table blocks, and table_win, the window
 * pool's, or NULL; their KV slots are written again), layer by layer, reading the residual stream back after the embedding and after each layer, then the
 * final norm and lm_head of the last position. Returns XPI_ERR_NUMERIC with a message naming where a NaN or
 * an infinity first appears (the embedding row, layer L's output, the final norm or the lm_head) and the first
 * token position holding one; another status if the re-run itself fails. */
xpi_status xpi_graph_locate_nonfinite(const xpi_graph *g, xpi_graph_state *st, const int32_t *ids, int32_t n,
                                      int32_t pos0, const int32_t *table, const int32_t *table_win,
                                      int32_t n_table, int32_t rope_long_from);

#endif
