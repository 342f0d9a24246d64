/* The device-memory plan of a model's load: where its layers went and what each device keeps room for. */
#ifndef XPI_MODEL_MEM_PLAN_H
#define XPI_MODEL_MEM_PLAN_H

#include <stdint.h>

#include "model/graph.h"

/* What the plan put on each device (bytes), for the notice, the refusal and the tests. */
typedef struct xpi_mem_plan {
  int n_dev;                                   /* 0: no plan (a backend's kind is not planned) */
  int32_t first[XPI_MAX_BACKENDS + 1];         /* layers [first[d], first[d+1]) on device d */
  int32_t ctx, ctx_wanted;                     /* KV positions kept room for, and asked for */
  int embed_on_host;                           /* the embedding table stays in host memory */
  uint64_t free[XPI_MAX_BACKENDS];             /* free before the load */
  uint64_t weights[XPI_MAX_BACKENDS];          /* at the placed (converted / quantized) size */
  uint64_t kv[XPI_MAX_BACKENDS];               /* the pools for ctx positions (each + the graph's spare block;
                                                * xpi_graph_kv_pool_bytes: sliding layers in the window pool) */
  uint64_t step[XPI_MAX_BACKENDS];             /* the request engine's step buffers */
  uint64_t reserve[XPI_MAX_BACKENDS];          /* left for the driver and small buffers */
} xpi_mem_plan;

#endif
