/* The serving defaults of a model's request engine (the engine every xpi_request of the model runs on): its
 * options and pool cap, the graph limits its state takes, and a request's default context. Shared by the
 * request side (src/api/request.c) and the load's memory plan (src/api/model.c), so both size the same engine. */
#ifndef XPI_ENGINE_SERVE_LIMITS_H
#define XPI_ENGINE_SERVE_LIMITS_H

#include <stdint.h>

#include "model/model.h"

/* The request engine's options; returns the cap of its default pool in positions. */
int64_t xpi_serve_engine_options(const xpi_model *m, xpi_engine_options *o);
/* The graph limits of the request engine's state (its step buffers), for the load's memory plan. */
xpi_status xpi_serve_plan_limits(const xpi_model *m, xpi_graph_limits *lim);
/* A request's context when it names none: min(max_position_embeddings, 4096), or the shorter context the
 * load's memory plan kept room for. */
int32_t xpi_serve_default_ctx(const xpi_model *m);

#endif
