/* The serving defaults of a model's request engine (serve_limits.h). */
#include "engine/serve_limits.h"

#include "engine/engine_internal.h"

#define REQUEST_POOL_CONTEXTS 8 /* the request engine's pool: half the free memory, at most this many contexts of
                                 * min(max_position_embeddings, 4096) positions */
#define REQUEST_STEP_TOKENS 256 /* prefill chunks of 256 tokens: activations of 64 KiB a token (Qwen3-0.6B) */
/* MoE models: each expert's weights are read once a step for the tokens routed to it, so a longer step gives
 * each expert more tokens (64 instead of 32 at top-8 of 64) and half the weight reads. Measured on
 * qwen3moe-mini (balanced router), pp512 at 1 thread: CPU time -10% at 512; the dense peer +8%, so only MoE. */
#define REQUEST_STEP_TOKENS_MOE 512

int64_t xpi_serve_engine_options(const xpi_model *m, xpi_engine_options *o) {
  int32_t max_pos = m->cfg.max_position_embeddings > 0 ? m->cfg.max_position_embeddings : 4096;
  int32_t ctx = max_pos < 4096 ? max_pos : 4096;
  xpi_engine_options_default(o);
  o->step_tokens = m->cfg.n_experts > 0 ? REQUEST_STEP_TOKENS_MOE : REQUEST_STEP_TOKENS;
  return (int64_t)REQUEST_POOL_CONTEXTS * ctx;
}

xpi_status xpi_serve_plan_limits(const xpi_model *m, xpi_graph_limits *lim) {
  xpi_engine_options o;
  int64_t cap = xpi_serve_engine_options(m, &o);
  return xpi_engine_plan_limits(m, &o, cap, lim);
}

int32_t xpi_serve_default_ctx(const xpi_model *m) {
  int32_t max_pos = m->cfg.max_position_embeddings > 0 ? m->cfg.max_position_embeddings : 4096;
  int32_t n = max_pos < 4096 ? max_pos : 4096;
  /* a device the plan could only give a shorter context to (it said so when loading) */
  if (m->graph.kv_plan_tokens > 0 && m->graph.kv_plan_tokens < n) n = m->graph.kv_plan_tokens;
  return n;
}
