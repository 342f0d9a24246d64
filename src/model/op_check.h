/* Before the first step: every op the graph will place, asked of the backend that will run it (ops.h:
 * xpi_backend_supports), so that an op, dtype or shape a backend lacks refuses the load by name instead of failing
 * a step. */
#ifndef XPI_MODEL_OP_CHECK_H
#define XPI_MODEL_OP_CHECK_H

#include "model/graph.h"

/* g with cfg, w (placed), backends and layer_dev set: XPI_OK, or XPI_ERR_UNSUPPORTED naming the op, its weight's
 * dtype and shape, where the graph uses it (layer, embedding, output) and the device. The fused forms are not
 * asked: where a backend has none the graph runs the separate ops, which are. */
xpi_status xpi_graph_check_ops(const xpi_graph *g);

#endif
