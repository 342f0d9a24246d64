/* Where a model's layers go and whether they fit, decided before any weight is uploaded: the device-memory plan
 * of backends whose kind is planned (the XPUs; ops/backend_registry.h), and the fit check of device maps that mix
 * them with the CPU. Sizes come from the checkpoint and the graph's accounting (model/graph.h), free memory and
 * placed sizes from the backends through the backend table. */
#ifndef XPI_MODEL_PLACEMENT_H
#define XPI_MODEL_PLACEMENT_H

#include "io/safetensors.h"
#include "model/config.h"
#include "model/graph.h"
#include "model/mem_plan.h"
#include "ops/ops.h"

/* layer_be[l]: the backend of layer l (embedding on layer 0's, final norm and lm_head on the last layer's, as
 * model/weights.c places them); want: the weight dtype asked for, -1 as stored. XPI_ERR_OUT_OF_MEMORY naming
 * the device, the need and the free memory when a device's share of the weights exceeds its free memory (kinds
 * with a fit check: the XPUs). For device maps that mix XPUs with the CPU (their split is by weight, not
 * planned). */
xpi_status xpi_xpu_fit_check(const xpi_config *cfg, const xpi_safetensors *st, xpi_backend *const *layer_be, int want);

/* When every backend of g is of a planned kind (the XPUs): the plan. Weights per layer at the size they will be
 * placed in, the KV pools for ctx_wanted positions on every device (g->kv_dtype; the sliding layers' window pool at
 * its size for lim->max_win_blocks), the step buffers of `lim` on every device (the logits on the last), a reserve;
 * layers are split over the devices in proportion to the layers each can hold, the embedding on the first device
 * with layers and the final norm + lm_head on the last. Where ctx_wanted does not fit, the largest context of at
 * least min_ctx positions that does (a notice through xpi_log says so), with the embedding table left in host
 * memory where that gives a longer one (embed_on_host, noticed too); where not even that fits,
 * XPI_ERR_OUT_OF_MEMORY with the numbers. On success g->layer_dev and g->kv_plan_tokens are set. plan->n_dev is 0
 * (and nothing is changed) when a backend's kind is not planned. */
xpi_status xpi_xpu_plan(const xpi_config *cfg, const xpi_safetensors *st, xpi_graph *g, int want,
                        const xpi_graph_limits *lim, int32_t ctx_wanted, int32_t min_ctx, xpi_mem_plan *plan);

#endif
