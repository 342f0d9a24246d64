/* One sequence over the batched step (see graph.h): a state whose one block table is the identity, and forwards
 * of ids that return host logits or the device's argmax, for tests and tools that drive the graph without an
 * engine. */
#include <stdlib.h>

#include "core/status.h"
#include "model/graph_internal.h"

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
