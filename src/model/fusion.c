/* The fusion choices (fusion.h): each fused op asked of the backend with the weight it would take. */
#include "model/fusion.h"

/* Whether be runs op over weight w (dtype and shape) for n tokens. */
static int runs(const xpi_backend *be, xpi_op op, const xpi_weight *w, int32_t n) {
  const xpi_op_desc d = {op, w->dtype, w->rows, w->cols, n, 0};
  return xpi_backend_supports(be, &d);
}

xpi_fusion xpi_fusion_layer(const xpi_backend *be, const xpi_config *c, const xpi_layer_weights *L, int32_t n) {
  xpi_fusion f;
  const int biases_alike = (!L->bq.rows) == (!L->bk.rows) && (!L->bq.rows) == (!L->bv.rows);
  f.qkv = biases_alike && runs(be, XPI_OP_MATMUL_MULTI, &L->wq, n);
  f.glu = runs(be, XPI_OP_MATMUL_GLU, &L->gate, n);
  f.residual = f.qkv && f.glu && !L->moe && !L->post_attn_norm.rows && !L->post_mlp_norm.rows &&
               c->residual_scale == 1.0f && runs(be, XPI_OP_MATMUL_ADD, &L->wo, n) &&
               runs(be, XPI_OP_MATMUL_ADD, &L->down, n);
  return f;
}

int xpi_fusion_head_norm(const xpi_backend *be, const xpi_weight *lm_head) {
  return runs(be, XPI_OP_MATMUL_MULTI, lm_head, 1);
}

int xpi_fusion_moe_mlp(const xpi_backend *be, const xpi_experts *gate, int32_t n) {
  const xpi_op_desc d = {XPI_OP_MOE_MLP, gate->dtype, gate->rows, gate->cols, n, 0};
  return xpi_backend_supports(be, &d);
}
