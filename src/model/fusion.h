/* Which of a backend's optional fused ops (ops.h: matmul_multi, matmul_glu, matmul_add, moe_mlp) the model runs,
 * decided here and only here, from the backend's capabilities (xpi_backend_supports, asked with the weight the op
 * would take) and the layer's properties. The blocks (blocks.c, moe.c) and the lm_head (graph_step.c) state their
 * math once and follow these choices; every choice computes the same values, the fused ones in fewer launches. */
#ifndef XPI_MODEL_FUSION_H
#define XPI_MODEL_FUSION_H

#include "model/config.h"
#include "model/weights.h"
#include "ops/ops.h"

/* One layer's choices (xpi_fwd.fuse). */
typedef struct xpi_fusion {
  int qkv;      /* q|k|v projections in one matmul_multi (their biases all present or all absent) */
  int glu;      /* gate|up projections and the activation in one matmul_glu */
  int residual; /* the block's pre-norm inside its first projections' launch (matmul_multi, matmul_glu with
                 * norm) and its residual add inside its output projection's (matmul_add). All of the layer's
                 * or none: a dense layer whose q|k|v fuse, without post-norms or residual multiplier; elsewhere
                 * a branch's add stays pending for the next rmsnorm, which does it in its own launch */
} xpi_fusion;

/* The choices for layer L on backend be in a step of n tokens. */
xpi_fusion xpi_fusion_layer(const xpi_backend *be, const xpi_config *c, const xpi_layer_weights *L, int32_t n);

/* 1: the final norm of a step's one output row runs inside the lm_head's launch (matmul_multi with norm). */
int xpi_fusion_head_norm(const xpi_backend *be, const xpi_weight *lm_head);

/* 1: the experts' gate, up, activation and down of n tokens run as one moe_mlp. */
int xpi_fusion_moe_mlp(const xpi_backend *be, const xpi_experts *gate, int32_t n);

#endif
