/* The sparse MoE MLP (moe.h): router matmul, moe_route, the experts' gate/up/down through moe_matmul (each
 * chosen expert read once per step, tokens grouped by expert), SwiGLU over all slots at once, and moe_combine
 * which also adds Qwen2-MoE's sigmoid-gated shared expert. Everything stays on the backend, so a decode step
 * records and replays like the dense one. */
#include "model/moe.h"

#include <string.h>

#include "core/status.h"

void xpi_moe_bufs_free(xpi_backend *be, xpi_moe_bufs *b) {
  void *all[] = {b->logits, b->ids, b->wts, b->g, b->u, b->y, b->sg};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (all[i]) be->ops->free(be, all[i]);
  memset(b, 0, sizeof *b);
}

xpi_status xpi_moe_bufs_alloc(xpi_backend *be, const xpi_config *c, int32_t max_tokens, xpi_moe_bufs *b) {
  memset(b, 0, sizeof *b);
  const size_t T = (size_t)max_tokens, K = (size_t)c->n_experts_per_tok;
  b->logits = be->ops->alloc(be, T * (size_t)c->n_experts * sizeof(float));
  b->ids = be->ops->alloc(be, T * K * sizeof(int32_t));
  b->wts = be->ops->alloc(be, T * K * sizeof(float));
  b->g = be->ops->alloc(be, T * K * (size_t)c->moe_intermediate_size * sizeof(float));
  b->u = be->ops->alloc(be, T * K * (size_t)c->moe_intermediate_size * sizeof(float));
  b->y = be->ops->alloc(be, (T * K + T) * (size_t)c->hidden_size * sizeof(float));
  b->sg = be->ops->alloc(be, T * sizeof(float));
  if (!b->logits || !b->ids || !b->wts || !b->g || !b->u || !b->y || !b->sg) {
    xpi_moe_bufs_free(be, b);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: out of memory for the MoE buffers of %d tokens", be->device,
                   max_tokens);
  }
  return XPI_OK;
}

xpi_status xpi_moe_forward(xpi_backend *be, const xpi_config *c, const xpi_layer_weights *L, const xpi_moe_bufs *b,
                           float *out, const float *h, float *sgate, float *sup, int32_t n) {
  const xpi_backend_ops *o = be->ops;
  const int32_t K = c->n_experts_per_tok, Im = c->moe_intermediate_size, H = c->hidden_size;
  XPI_TRY(o->matmul(be, b->logits, h, &L->router, NULL, n));
  XPI_TRY(o->moe_route(be, b->ids, b->wts, b->logits, n, c->n_experts, K, c->norm_topk_prob));
  XPI_TRY(o->moe_matmul(be, b->g, h, 1, &L->ex_gate, b->ids, n, K));
  XPI_TRY(o->moe_matmul(be, b->u, h, 1, &L->ex_up, b->ids, n, K));
  XPI_TRY(o->swiglu(be, b->g, b->g, b->u, n * K, Im));
  XPI_TRY(o->moe_matmul(be, b->y, b->g, K, &L->ex_down, b->ids, n, K));
  float *shared = NULL;
  if (L->shared_gate.rows) {
    const int32_t Is = c->shared_expert_intermediate_size;
    shared = b->y + (size_t)n * (size_t)K * (size_t)H;
    XPI_TRY(o->matmul(be, sgate, h, &L->gate, NULL, n));
    XPI_TRY(o->matmul(be, sup, h, &L->up, NULL, n));
    XPI_TRY(o->swiglu(be, sgate, sgate, sup, n, Is));
    XPI_TRY(o->matmul(be, shared, sgate, &L->down, NULL, n));
    XPI_TRY(o->matmul(be, b->sg, h, &L->shared_gate, NULL, n));
  }
  return o->moe_combine(be, out, b->y, b->wts, shared, b->sg, n, K, H);
}
