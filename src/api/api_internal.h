/* What the public model and request objects hold (shared by src/api and src/generate). */
#ifndef XPI_API_INTERNAL_H
#define XPI_API_INTERNAL_H

#include <pthread.h>

#include "model/placement.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/graph.h"
#include "model/weights.h"

struct xpi_engine;
struct xpi_seq;

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
  struct xpi_engine *req_engine;  /* the engine every xpi_request of the model runs on, made on first use */
  pthread_mutex_t req_mu;
};

/* A token event waiting for its request's thread. */
typedef struct xpi_req_event {
  int32_t id;
  char *text;
  size_t len;
  xpi_logprob *top;
  int32_t n_top;
  float logprob;
} xpi_req_event;

/* A request: one sequence (a session) of the model's request engine. Its jobs run in the engine's steps,
 * on whichever requesting thread steps; its callbacks are called on its own thread (the events are queued
 * for it under the engine's lock). */
struct xpi_request {
  xpi_model *model;
  struct xpi_engine *e;
  struct xpi_seq *seq;
  int32_t n_ctx;
  /* the job in flight (guarded by the engine's lock where the stepping thread writes them) */
  int done, stopped, oom;
  xpi_req_event *q;
  int32_t q_head, q_len, q_cap;
  xpi_status status;
  char *error;
  xpi_gen_result gen;
  xpi_token_callback cb;
  void *user;
  int32_t delivered;
};

/* The engine of the model's requests (made on first use) and the request side of its jobs (request.c). */
xpi_status xpi_request_engine(xpi_model *m, struct xpi_engine **out);
/* The graph limits of the request engine's state (its step buffers), for the load's memory plan. */
xpi_status xpi_request_plan_limits(const xpi_model *m, xpi_graph_limits *lim);
/* A request's context when it names none: min(max_position_embeddings, 4096), or the shorter context the
 * load's memory plan kept room for. */
int32_t xpi_request_default_ctx(const xpi_model *m);
/* The callback of every request job: queues token events, records the final one. */
int xpi_request_on_event(const xpi_seq_event *ev, void *user);
/* Runs the engine until the request's job ended; delivers its token events to req->cb on this thread. */
xpi_status xpi_request_wait(xpi_request *req);

#endif
