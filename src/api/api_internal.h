/* What the public request object holds, and the request side of the engine's jobs (src/api/request*.c); the
 * model object is model/model.h's. */
#ifndef XPI_API_INTERNAL_H
#define XPI_API_INTERNAL_H

#include "model/model.h"
#include "model/placement.h"

struct xpi_engine;
struct xpi_seq;

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

/* The engine of the model's requests (made on first use, sized by engine/serve_limits.h) and the request side of
 * its jobs (request.c). */
xpi_status xpi_request_engine(xpi_model *m, struct xpi_engine **out);
/* The callback of every request job: queues token events, records the final one. */
int xpi_request_on_event(const xpi_seq_event *ev, void *user);
/* Runs the engine until the request's job ended; delivers its token events to req->cb on this thread. */
xpi_status xpi_request_wait(xpi_request *req);

#endif
