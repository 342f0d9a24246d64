/* Capability queries over the op table (ops.h): an op is supported when its entry point exists and the
 * backend's own supports function, where it has one, accepts the dtype and shape. */
#include "ops/ops.h"

static const char *const k_names[XPI_OP_COUNT] = {
    "embed",      "rmsnorm",    "matmul",      "rope",         "attention",  "swiglu",  "geglu",
    "softcap",    "scale",      "add",         "argmax",       "topk",       "moe_route", "moe_matmul",
    "moe_combine", "matmul_multi", "matmul_glu", "moe_mlp",    "matmul_add", "capture",
};

const char *xpi_op_name(xpi_op op) { return (unsigned)op < XPI_OP_COUNT ? k_names[op] : "?"; }

static int has_entry(const xpi_backend_ops *o, xpi_op op) {
  switch (op) {
    case XPI_OP_EMBED: return o->embed != NULL;
    case XPI_OP_RMSNORM: return o->rmsnorm != NULL;
    case XPI_OP_MATMUL: return o->matmul != NULL;
    case XPI_OP_ROPE: return o->rope != NULL;
    case XPI_OP_ATTENTION: return o->attention != NULL;
    case XPI_OP_SWIGLU: return o->swiglu != NULL;
    case XPI_OP_GEGLU: return o->geglu != NULL;
    case XPI_OP_SOFTCAP: return o->softcap != NULL;
    case XPI_OP_SCALE: return o->scale != NULL;
    case XPI_OP_ADD: return o->add != NULL;
    case XPI_OP_ARGMAX: return o->argmax != NULL;
    case XPI_OP_TOPK: return o->topk != NULL;
    case XPI_OP_MOE_ROUTE: return o->moe_route != NULL;
    case XPI_OP_MOE_MATMUL: return o->moe_matmul != NULL;
    case XPI_OP_MOE_COMBINE: return o->moe_combine != NULL;
    case XPI_OP_MATMUL_MULTI: return o->matmul_multi != NULL;
    case XPI_OP_MATMUL_GLU: return o->matmul_glu != NULL;
    case XPI_OP_MOE_MLP: return o->moe_mlp != NULL;
    case XPI_OP_MATMUL_ADD: return o->matmul_add != NULL;
    case XPI_OP_CAPTURE: return o->capture_begin && o->capture_end && o->replay && o->graph_free;
    default: return 0;
  }
}

int xpi_backend_supports(const xpi_backend *be, const xpi_op_desc *d) {
  if (!be || !be->ops || !d || !has_entry(be->ops, d->op)) return 0;
  return be->ops->supports ? be->ops->supports(be, d) : 1;
}
