/* The diagnostic path after non-finite logits (see graph.h): the sequence's tokens run again layer by layer,
 * the residual stream read back after the embedding and after each layer, to name where a NaN or an infinity
 * first appears. Off the hot path. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "model/graph_internal.h"

xpi_status xpi_graph_probe_rows(const xpi_graph *g, xpi_graph_state *st, nonfinite_probe *p, xpi_backend *be,
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
    xpi_graph_long_select(g, st, pos, seq, m, m, &rope_long_from);
    s = xpi_graph_write_inputs(g, st, ids + done, pos, seq, m, tables, tables_win, 1);
    if (s == XPI_OK) s = xpi_graph_run_layers_probed(g, st, m, m - 1, last_chunk, &p);
    if (s == XPI_OK && !p.found && last_chunk) { /* the lm_head over the last position, as the step ran it */
      s = xpi_graph_run_head(g, st, m - 1, 1, 0);
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
