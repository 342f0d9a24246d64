/* One step for every family (see graph.h): the inputs written to every device (the embedding rows gathered on
 * the host where the table stays there), the embedding (times the config's embed_scale), the family's layers
 * (cfg->family->layer over an xpi_fwd of the layer's device, model/family.h) with the residual stream handed
 * through the host at device boundaries, the final norm, the lm_head (times logit_scale, then the final
 * softcap), the outputs read back (greedy ids, top-k rows, logits), and decode steps recorded once per batch-size
 * bucket and replayed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "model/family.h"
#include "model/graph_internal.h"
#include "ops/half.h"

/* Moves the residual stream x[n, H] from device a to device b (through the host). */
static xpi_status hand_over(const xpi_graph *g, xpi_graph_state *st, int a, int b, int32_t n) {
  size_t bytes = (size_t)n * (size_t)g->cfg->hidden_size * sizeof(float);
  dev_state *A = &st->dev[a], *B = &st->dev[b];
  XPI_TRY(A->be->ops->read(A->be, st->host_x, A->x, bytes));
  return B->be->ops->write(B->be, B->x, st->host_x, bytes);
}

xpi_status xpi_graph_run_layers_probed(const xpi_graph *g, xpi_graph_state *st, int32_t n, int32_t row0, int32_t rows,
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
    XPI_TRY(xpi_graph_probe_rows(g, st, probe, D->be, D->x, n, -1));
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
                 .up = D->up, .moe = c->n_experts > 0 ? &D->moe : NULL, .pending = pending,
                 .fuse = xpi_fusion_layer(D->be, c, &w->layers[l], n)};
    XPI_TRY(c->family->layer(&f, &w->layers[l]));
    pending = f.pending;
    if (probe) { /* the layer's output: x with its residual branch added */
      if (pending) XPI_TRY(D->be->ops->add(D->be, D->x, pending, (int64_t)n * H));
      pending = NULL;
      XPI_TRY(xpi_graph_probe_rows(g, st, probe, D->be, D->x, n, l));
      if (probe->found) return XPI_OK;
    }
  }
  st->head_norm = 0;
  /* one output row: its final norm goes into the lm_head's launch where the backend fuses them */
  if (rows == 1 && !probe && !pending && xpi_fusion_head_norm(D->be, &w->lm_head)) {
    st->head_norm = 1;
    return XPI_OK;
  }
  if (rows > 0) { /* final norm only over the rows whose outputs are wanted */
    size_t off = (size_t)row0 * (size_t)H;
    XPI_TRY(D->be->ops->rmsnorm(D->be, D->h + off, D->x + off, pending ? pending + off : NULL, &w->final_norm, rows,
                                H, c->rms_norm_eps));
    if (probe) {
      probe->pos0 += row0;
      XPI_TRY(xpi_graph_probe_rows(g, st, probe, D->be, D->h + off, rows, c->n_layers));
      probe->pos0 -= row0;
    }
  }
  return XPI_OK;
}

static xpi_status run_layers(const xpi_graph *g, xpi_graph_state *st, int32_t n, int32_t row0, int32_t rows) {
  return xpi_graph_run_layers_probed(g, st, n, row0, rows, NULL);
}

xpi_status xpi_graph_run_head(const xpi_graph *g, xpi_graph_state *st, int32_t row0, int32_t m, int with_argmax) {
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

void xpi_graph_long_select(const xpi_graph *g, xpi_graph_state *st, const int32_t *pos, const int32_t *seq, int32_t n,
                           int32_t n_real, const int32_t *row_long_from) {
  if (g->cfg->rope_long_from <= 0) return;
  for (int32_t i = 0; i < n; i++) {
    const int32_t from = i < n_real && row_long_from ? row_long_from[seq[i]] : g->cfg->rope_long_from;
    st->host_sel[i] = i < n_real && pos[i] >= from;
  }
}

xpi_status xpi_graph_write_inputs(const xpi_graph *g, xpi_graph_state *st, const int32_t *ids, const int32_t *pos,
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
  xpi_graph_long_select(g, st, pos, seq, B, b->n, b->rope_long_from);
  XPI_TRY(xpi_graph_write_inputs(g, st, ids, pos, seq, B, b->tables, b->tables_win, b->n_rows));
  if (!st->rec[bi]) {
    XPI_TRY(be->ops->capture_begin(be));
    xpi_status s = run_layers(g, st, B, 0, B);
    if (s == XPI_OK) s = xpi_graph_run_head(g, st, 0, B, 1);
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
  xpi_graph_long_select(g, st, b->pos, b->seq, b->n, b->n, b->rope_long_from);
  XPI_TRY(xpi_graph_write_inputs(g, st, b->ids, b->pos, b->seq, b->n, b->tables, b->tables_win, b->n_rows));
  const int32_t row0 = b->n - b->n_out;
  XPI_TRY(run_layers(g, st, b->n, row0, b->n_out));
  for (int32_t r = 0; r < b->n_out; r += lim->max_out) {
    const int32_t m = b->n_out - r < lim->max_out ? b->n_out - r : lim->max_out;
    int want_logits = 0;
    for (int32_t i = 0; b->logits && i < m; i++) want_logits |= b->logits[r + i] != NULL;
    for (int32_t i = 0; b->topk_n && i < m; i++) want_logits |= b->topk_n[r + i] > 0;
    if (!b->argmax && !want_logits) continue;
    XPI_TRY(xpi_graph_run_head(g, st, row0 + r, m, b->argmax != NULL));
    XPI_TRY(read_outputs(g, st, b, r, m));
  }
  return XPI_OK;
}
