/* The model object behind the public xpi_model: its folder, config, tokenizer, backends, weights, graph and the
 * load's memory plan. Loaded by src/api/model.c, immutable afterwards; engines (src/engine) run its graph. */
#ifndef XPI_MODEL_MODEL_H
#define XPI_MODEL_MODEL_H

#include <pthread.h>

#include "io/safetensors.h"
#include "model/config.h"
#include "model/graph.h"
#include "model/mem_plan.h"
#include "model/weights.h"

struct xpi_engine;

struct xpi_model {
  char *dir;                      /* the resolved model folder */
  xpi_config cfg;
  xpi_safetensors *st;            /* kept mapped: CPU weights borrow it */
  xpi_tokenizer *tok;
  xpi_backend *backends[XPI_MAX_BACKENDS];
  int n_backends;
  xpi_model_weights w;
  xpi_graph graph;
  xpi_model_info info;
  xpi_mem_plan plan;              /* the XPU memory plan of the load (n_dev 0: none) */
  struct xpi_engine *req_engine;  /* the engine every xpi_request of the model runs on: made on first use under
                                   * req_mu (src/api/request.c), freed with the model */
  pthread_mutex_t req_mu;
};

#endif
