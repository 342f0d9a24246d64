/* Engine sessions: the sequences of xpi_request (src/api/request*.c). A session is parked (SEQ_IDLE) with its
 * context between jobs; a job (an evaluation or a generation) appends ids and queues it like any submission;
 * the requesting thread then steps the engine itself while nobody else does, or waits for the thread that
 * does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/status.h"
#include "engine/engine_internal.h"

xpi_status xpi_engine_session_create(xpi_engine *e, int32_t max_len, int private_kv, xpi_seq **out) {
  *out = NULL;
  if (max_len < 1 || max_len > e->o.max_seq_len)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "a context of %d positions is outside [1, %d]", max_len, e->o.max_seq_len);
  xpi_seq *s = xpi_seq_new(e, max_len);
  if (!s) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  s->session = 1;
  s->private_kv = private_kv != 0;
  pthread_mutex_lock(&e->mu);
  s->id = e->next_id++;
  s->state = SEQ_IDLE;
  xpi_seq_list_push(&e->idle, s);
  pthread_mutex_unlock(&e->mu);
  *out = s;
  return XPI_OK;
}

void xpi_engine_session_free(xpi_engine *e, xpi_seq *s) {
  if (!s) return;
  pthread_mutex_lock(&e->mu);
  xpi_sched_release_blocks(e, s);
  if (s->state == SEQ_IDLE) xpi_seq_list_remove(&e->idle, s);
  pthread_mutex_unlock(&e->mu);
  xpi_seq_destroy(s);
}

void xpi_engine_session_reset(xpi_engine *e, xpi_seq *s) {
  pthread_mutex_lock(&e->mu);
  xpi_sched_release_blocks(e, s);
  s->n_tok = 0;
  pthread_mutex_unlock(&e->mu);
}

void xpi_engine_session_truncate(xpi_engine *e, xpi_seq *s, int32_t n) {
  pthread_mutex_lock(&e->mu);
  xpi_sched_truncate(e, s, n);
  pthread_mutex_unlock(&e->mu);
}

xpi_status xpi_engine_session_eval(xpi_engine *e, xpi_seq *s, const int32_t *ids, int32_t n, int all_logits,
                                   float *logits, xpi_seq_callback cb, void *user) {
  XPI_TRY(xpi_engine_check_ids(e, ids, (size_t)n));
  xpi_seq_job_clear(s);
  s->cb = cb;
  s->user = user;
  pthread_mutex_lock(&e->mu);
  xpi_status st = xpi_engine_check_room(e, s, (int64_t)s->n_tok + n, "the evaluation");
  if (st == XPI_OK) {
    s->job = JOB_EVAL;
    s->eval_logits = logits;
    s->eval_all = all_logits;
    s->out_from = all_logits ? s->n_tok : s->n_tok + n - 1;
    st = xpi_engine_enqueue(e, s, ids, n);
  }
  pthread_mutex_unlock(&e->mu);
  return st;
}

xpi_status xpi_engine_session_generate(xpi_engine *e, xpi_seq *s, const int32_t *ids, int32_t n,
                                       const xpi_gen_options *opts, xpi_seq_callback cb, void *user) {
  XPI_TRY(xpi_engine_check_ids(e, ids, (size_t)n));
  xpi_seq_job_clear(s);
  xpi_status st = xpi_seq_job_generate(e, s, opts);
  if (st != XPI_OK) {
    xpi_seq_job_clear(s);
    return st;
  }
  s->cb = cb;
  s->user = user;
  pthread_mutex_lock(&e->mu);
  s->out_from = s->n_tok + n - 1;
  st = xpi_engine_enqueue(e, s, ids, n);
  pthread_mutex_unlock(&e->mu);
  if (st != XPI_OK) xpi_seq_job_clear(s);
  return st;
}

xpi_status xpi_engine_session_wait(xpi_engine *e, const int *done, void (*drain)(void *user), void *user) {
  xpi_status st = XPI_OK;
  pthread_mutex_lock(&e->mu);
  while (!*done) {
    if (!e->stepping && !e->bg_on) { /* nobody steps: this thread does, for every sequence of the engine */
      e->stepping = 1;
      xpi_status s = xpi_engine_step_locked(e);
      if (s != XPI_OK && st == XPI_OK) st = s;
      e->stepping = 0;
      pthread_cond_broadcast(&e->cv);
    } else {
      pthread_cond_wait(&e->cv, &e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    if (drain) drain(user);
    pthread_mutex_lock(&e->mu);
  }
  pthread_mutex_unlock(&e->mu);
  if (drain) drain(user);
  return st;
}
