/* What the public model and request objects hold (shared by src/api and src/generate). */
#ifndef XPI_API_INTERNAL_H
#define XPI_API_INTERNAL_H

#include "io/safetensors.h"
#include "model/config.h"
#include "model/graph.h"
#include "model/weights.h"

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
};

struct xpi_request {
  xpi_model *model;
  xpi_graph_state *gs;
  int32_t n_ctx, n_past;
  int32_t *history;               /* the ids in the context, [n_ctx] (repetition penalty reads them) */
  float *logits;                  /* [vocab] host scratch */
};

#endif
