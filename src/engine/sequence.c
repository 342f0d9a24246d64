/* A sequence's own storage (tokens, job state, result) and the intrusive lists the scheduler keeps them in. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "engine/engine_internal.h"

void xpi_seq_list_push(xpi_seq_list *l, xpi_seq *s) {
  s->next = NULL;
  s->prev = l->tail;
  if (l->tail) l->tail->next = s;
  else l->head = s;
  l->tail = s;
  l->count++;
}

void xpi_seq_list_push_front(xpi_seq_list *l, xpi_seq *s) {
  s->prev = NULL;
  s->next = l->head;
  if (l->head) l->head->prev = s;
  else l->tail = s;
  l->head = s;
  l->count++;
}

void xpi_seq_list_remove(xpi_seq_list *l, xpi_seq *s) {
  if (s->prev) s->prev->next = s->next;
  else l->head = s->next;
  if (s->next) s->next->prev = s->prev;
  else l->tail = s->prev;
  s->prev = s->next = NULL;
  l->count--;
}

void xpi_seq_list_insert_ordered(xpi_seq_list *l, xpi_seq *s) {
  xpi_seq *at = l->tail;
  while (at && at->order > s->order) at = at->prev;
  if (!at) {
    xpi_seq_list_push_front(l, s);
    return;
  }
  s->prev = at;
  s->next = at->next;
  if (at->next) at->next->prev = s;
  else l->tail = s;
  at->next = s;
  l->count++;
}

xpi_status xpi_seq_reserve_tokens(xpi_seq *s, int32_t n) {
  if (n <= s->cap_tok) return XPI_OK;
  int64_t c = s->cap_tok ? s->cap_tok : 64;
  while (c < n) c *= 2;
  if (c > s->max_len) c = s->max_len > n ? s->max_len : n;
  int32_t *t = realloc(s->tokens, (size_t)c * sizeof *t);
  if (!t) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory for %lld token ids", (long long)c);
  s->tokens = t;
  s->cap_tok = (int32_t)c;
  return XPI_OK;
}

void xpi_seq_job_clear(xpi_seq *s) {
  if (s->smp_ready) xpi_sampler_free(&s->smp);
  if (s->out_ready) xpi_seq_output_free(&s->out);
  s->smp_ready = s->out_ready = 0;
  free(s->top);
  s->top = NULL;
  free(s->lp_raw);
  s->lp_raw = NULL;
  s->job = JOB_NONE;
  s->eval_logits = NULL;
  s->cb = NULL;
  s->user = NULL;
}

void xpi_seq_fail(xpi_seq *s, xpi_status st, const char *msg) {
  if (s->status != XPI_OK || st == XPI_OK) return;
  s->status = st;
  free(s->error);
  s->error = strdup(msg && *msg ? msg : xpi_status_name(st));
}

void xpi_seq_destroy(xpi_seq *s) {
  if (!s) return;
  xpi_seq_job_clear(s);
  free(s->tokens);
  free(s->blocks);
  free(s->wblocks);
  free(s->error);
  free(s);
}
