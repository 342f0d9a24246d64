/* xpi_request_*: one conversation's context as a sequence of the model's request engine (src/engine), so
 * requests of several threads share its steps (batched) instead of taking turns. A request's thread runs
 * the engine's steps itself while nobody else does, or sleeps until the stepping thread has delivered its
 * events; its own callback is always called on its own thread. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "core/status.h"
#include "engine/engine_internal.h"
#include "engine/serve_limits.h"

void xpi_request_options_default(xpi_request_options *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->prefix_cache = 1;
}

xpi_status xpi_request_engine(xpi_model *m, xpi_engine **out) {
  pthread_mutex_lock(&m->req_mu);
  xpi_status s = XPI_OK;
  if (!m->req_engine) {
    xpi_engine_options o;
    int64_t cap = xpi_serve_engine_options(m, &o);
    s = xpi_engine_create_capped(m, &o, cap, &m->req_engine);
    if (s != XPI_OK) s = xpi_err_prefix(s, "creating the engine of the model's requests: ");
  }
  *out = m->req_engine;
  pthread_mutex_unlock(&m->req_mu);
  return s;
}

xpi_status xpi_request_create(xpi_model *model, const xpi_request_options *opts, xpi_request **out) {
  if (!out) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_request_create: out is NULL");
  *out = NULL;
  if (!model) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_request_create: model is NULL");
  int32_t max_pos = model->cfg.max_position_embeddings > 0 ? model->cfg.max_position_embeddings : 4096;
  int32_t n_ctx = opts && opts->n_ctx ? opts->n_ctx : xpi_serve_default_ctx(model);
  if (n_ctx < 1 || n_ctx > max_pos)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "n_ctx = %d is outside [1, %d] (the model's max_position_embeddings)",
                   n_ctx, max_pos);
  xpi_request *r = calloc(1, sizeof *r);
  if (!r) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  r->model = model;
  r->n_ctx = n_ctx;
  xpi_status s = xpi_request_engine(model, &r->e);
  /* callers built before prefix_cache existed (a smaller struct_size) get its default */
  const int cache = !opts || opts->struct_size < offsetof(xpi_request_options, prefix_cache) + sizeof(int) ||
                    opts->prefix_cache != 0;
  if (s == XPI_OK) s = xpi_engine_session_create(r->e, n_ctx, !cache, &r->seq);
  if (s != XPI_OK) {
    free(r);
    return s;
  }
  *out = r;
  return XPI_OK;
}

static void clear_queue(xpi_request *r) {
  for (int32_t i = 0; i < r->q_len; i++) {
    xpi_req_event *ev = &r->q[(r->q_head + i) % r->q_cap];
    free(ev->text);
    free(ev->top);
  }
  r->q_head = r->q_len = 0;
}

void xpi_request_free(xpi_request *r) {
  if (!r) return;
  xpi_engine_session_free(r->e, r->seq);
  clear_queue(r);
  free(r->q);
  free(r->error);
  free(r);
}

void xpi_request_reset(xpi_request *r) {
  if (r) xpi_engine_session_reset(r->e, r->seq);
}

int32_t xpi_request_n_past(const xpi_request *r) { return r ? r->seq->n_tok : 0; }

/* ------------------------------------------------------------------ jobs */

static int queue_push(xpi_request *r, const xpi_token_event *t) {
  if (r->q_len == r->q_cap) {
    int32_t cap = r->q_cap ? 2 * r->q_cap : 16;
    xpi_req_event *q = malloc((size_t)cap * sizeof *q);
    if (!q) return 0;
    for (int32_t i = 0; i < r->q_len; i++) q[i] = r->q[(r->q_head + i) % r->q_cap];
    free(r->q);
    r->q = q;
    r->q_cap = cap;
    r->q_head = 0;
  }
  xpi_req_event ev = {t->id, malloc(t->text_len + 1), t->text_len, NULL, t->n_top, t->logprob};
  if (t->n_top > 0) ev.top = malloc((size_t)t->n_top * sizeof *ev.top);
  if (!ev.text || (t->n_top > 0 && !ev.top)) {
    free(ev.text);
    free(ev.top);
    return 0;
  }
  memcpy(ev.text, t->text, t->text_len);
  if (t->n_top > 0) memcpy(ev.top, t->top, (size_t)t->n_top * sizeof *ev.top);
  r->q[(r->q_head + r->q_len++) % r->q_cap] = ev;
  return 1;
}

int xpi_request_on_event(const xpi_seq_event *ev, void *user) {
  xpi_request *r = user;
  xpi_engine_lock(r->e);
  if (ev->token) {
    if (!r->stopped && !queue_push(r, ev->token)) r->oom = 1;
  } else {
    r->status = ev->done->status;
    free(r->error);
    r->error = ev->done->status != XPI_OK ? strdup(ev->done->error) : NULL;
    r->gen = ev->done->gen;
    r->done = 1;
  }
  xpi_engine_wake(r->e);
  xpi_engine_unlock(r->e);
  return 0;
}

/* Calls the request's callback for the events queued so far, on the request's thread. */
static void drain(void *user) {
  xpi_request *r = user;
  for (;;) {
    xpi_engine_lock(r->e);
    if (r->q_len == 0) {
      xpi_engine_unlock(r->e);
      return;
    }
    xpi_req_event ev = r->q[r->q_head];
    r->q_head = (r->q_head + 1) % r->q_cap;
    r->q_len--;
    int stopped = r->stopped;
    xpi_engine_unlock(r->e);
    if (!stopped) {
      r->delivered++;
      xpi_token_event te = {ev.id, ev.text, ev.len, ev.top, ev.n_top, ev.logprob};
      if (r->cb && r->cb(&te, r->user)) {
        xpi_engine_lock(r->e);
        r->stopped = 1; /* events already computed past this one are dropped */
        atomic_store(&r->seq->cancel, 2);
        clear_queue(r);
        xpi_engine_wake(r->e);
        xpi_engine_unlock(r->e);
      }
    }
    free(ev.text);
    free(ev.top);
  }
}

xpi_status xpi_request_wait(xpi_request *r) {
  xpi_status s = xpi_engine_session_wait(r->e, &r->done, drain, r);
  if (r->status != XPI_OK) return xpi_err(r->status, "%s", r->error ? r->error : xpi_status_name(r->status));
  if (r->oom) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory for a request's token events");
  return s;
}

int32_t xpi_request_n_ctx(const xpi_request *r) { return r ? r->n_ctx : 0; }

xpi_status xpi_request_eval(xpi_request *r, const int32_t *ids, size_t n, int all_positions, float *logits, size_t cap) {
  if (!r || (!ids && n)) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_request_eval: NULL argument");
  if (n == 0) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_request_eval: no ids given");
  const int32_t n_past = r->seq->n_tok;
  if (n > (size_t)(r->n_ctx - n_past))
    return xpi_err(XPI_ERR_CONTEXT_LENGTH, "%zu tokens do not fit: %d of the context's %d are used", n, n_past,
                   r->n_ctx);
  int32_t V = r->model->cfg.vocab_size;
  size_t rows = all_positions ? n : 1;
  if (logits && cap / (size_t)V < rows)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_request_eval: logits holds %zu floats, %zu x %d are needed", cap, rows,
                   V);
  r->done = r->stopped = r->oom = 0;
  r->status = XPI_OK;
  r->cb = NULL;
  r->delivered = 0;
  XPI_TRY(xpi_engine_session_eval(r->e, r->seq, ids, (int32_t)n, all_positions, logits, xpi_request_on_event, r));
  xpi_status s = xpi_request_wait(r);
  if (s != XPI_OK) xpi_engine_session_truncate(r->e, r->seq, n_past); /* the context stays as it was */
  return s;
}
