/* The load's op check (op_check.h): the ops of the embedding, of each layer (its norms, projections, rope,
 * attention, activation and residual adds, or the router and experts of a mixture-of-experts layer) and of the
 * output (final norm, lm_head, scaling, greedy and top-k), each with its weight's dtype and shape, against the
 * backend that runs it. */
#include "model/op_check.h"

#include <stdio.h>

#include "core/status.h"

/* be runs op d for `where`; else the refusal. */
static xpi_status need(const xpi_backend *be, const char *where, xpi_op_desc d) {
  if (xpi_backend_supports(be, &d)) return XPI_OK;
  char what[96] = "";
  if (d.rows > 0)
    snprintf(what, sizeof what, " with %s weights [%lld, %lld]", xpi_dtype_name(d.wdtype), (long long)d.rows,
             (long long)d.cols);
  else if (d.head_dim > 0)
    snprintf(what, sizeof what, " with head_dim %d", d.head_dim);
  return xpi_err(XPI_ERR_UNSUPPORTED, "%s: op %s%s is not supported on device '%s'", where, xpi_op_name(d.op), what,
                 be->device);
}

static xpi_status need_op(const xpi_backend *be, const char *where, xpi_op op) {
  return need(be, where, (xpi_op_desc){.op = op, .wdtype = XPI_DT_F32});
}

/* An op over a weight; a weight the model does not have (no rows) asks nothing. */
static xpi_status need_w(const xpi_backend *be, const char *where, xpi_op op, const xpi_weight *w) {
  if (w->rows <= 0) return XPI_OK;
  return need(be, where, (xpi_op_desc){.op = op, .wdtype = w->dtype, .rows = w->rows, .cols = w->cols});
}

static xpi_status need_experts(const xpi_backend *be, const char *where, const xpi_experts *e) {
  if (e->n <= 0) return XPI_OK;
  return need(be, where, (xpi_op_desc){.op = XPI_OP_MOE_MATMUL, .wdtype = e->dtype, .rows = e->rows, .cols = e->cols});
}

static xpi_status check_layer(const xpi_graph *g, const xpi_backend *be, int32_t l) {
  const xpi_config *c = g->cfg;
  const xpi_layer_weights *L = &g->w->layers[l];
  char where[32];
  snprintf(where, sizeof where, "layer %d", l);
  const xpi_weight *norms[] = {&L->attn_norm, &L->post_attn_norm, &L->mlp_norm, &L->post_mlp_norm};
  for (size_t i = 0; i < sizeof norms / sizeof norms[0]; i++) XPI_TRY(need_w(be, where, XPI_OP_RMSNORM, norms[i]));
  const xpi_weight *mats[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->gate, &L->up, &L->down};
  for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) XPI_TRY(need_w(be, where, XPI_OP_MATMUL, mats[i]));
  XPI_TRY(need(be, where, (xpi_op_desc){.op = XPI_OP_ROPE, .wdtype = XPI_DT_F32, .head_dim = c->head_dim}));
  XPI_TRY(need(be, where, (xpi_op_desc){.op = XPI_OP_ATTENTION, .wdtype = XPI_DT_F32, .head_dim = c->head_dim}));
  XPI_TRY(need_op(be, where, XPI_OP_ADD));
  const xpi_op act = c->act == XPI_ACT_GELU_TANH ? XPI_OP_GEGLU : XPI_OP_SWIGLU;
  if (!L->moe || L->gate.rows > 0) XPI_TRY(need_op(be, where, act)); /* the dense MLP or the shared expert */
  if (c->residual_scale != 1.0f) XPI_TRY(need_op(be, where, XPI_OP_SCALE));
  if (L->moe) {
    XPI_TRY(need_w(be, where, XPI_OP_MATMUL, &L->router));
    XPI_TRY(need_w(be, where, XPI_OP_MATMUL, &L->shared_gate));
    XPI_TRY(need_op(be, where, XPI_OP_MOE_ROUTE));
    XPI_TRY(need_experts(be, where, &L->ex_gate));
    XPI_TRY(need_experts(be, where, &L->ex_up));
    XPI_TRY(need_experts(be, where, &L->ex_down));
    XPI_TRY(need_op(be, where, XPI_OP_SWIGLU));
    XPI_TRY(need_op(be, where, XPI_OP_MOE_COMBINE));
  }
  return XPI_OK;
}

xpi_status xpi_graph_check_ops(const xpi_graph *g) {
  const xpi_config *c = g->cfg;
  const xpi_model_weights *w = g->w;
  if (!w->embed_on_host) XPI_TRY(need_w(w->first, "the embedding", XPI_OP_EMBED, &w->embed));
  if (c->embed_scale != 1.0f) XPI_TRY(need_op(w->first, "the embedding", XPI_OP_SCALE));
  for (int d = 0; d < g->n_backends; d++)
    for (int32_t l = g->layer_dev[d]; l < g->layer_dev[d + 1] && l < w->n_layers; l++)
      XPI_TRY(check_layer(g, g->backends[d], l));
  const char *out = "the output";
  XPI_TRY(need_w(w->last, out, XPI_OP_RMSNORM, &w->final_norm));
  XPI_TRY(need_w(w->last, out, XPI_OP_MATMUL, &w->lm_head));
  if (c->final_softcap > 0) XPI_TRY(need_op(w->last, out, XPI_OP_SOFTCAP));
  if (c->logit_scale != 1.0f) XPI_TRY(need_op(w->last, out, XPI_OP_SCALE));
  XPI_TRY(need_op(w->last, out, XPI_OP_ARGMAX));
  return need_op(w->last, out, XPI_OP_TOPK);
}
