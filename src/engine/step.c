/* One engine step: under the lock, cancels are applied and the scheduler plans the batch; without it, the
 * graph runs the batch and every output row is sampled (greedy rows by the device's argmax, top-k rows from the
 * device's best values and normaliser (engine.c: xpi_seq_job_generate says which), the others on the host from
 * their logits) and pushed through its sequence's output (detokenization, stop rules), and a sequence
 * whose logits are not finite is located layer by layer; under the lock again, the sequences advance, full
 * blocks are published in the prefix cache and ended sequences release their blocks; without it, the callbacks
 * get the step's token events, then the final events. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/status.h"
#include "engine/engine_internal.h"

#define XPI_MAX_NUMERIC 8 /* sequences of one step whose non-finite logits are located layer by layer */

static void push_event(xpi_engine *e, xpi_seq *s, int32_t id, const char *text, size_t len, float logprob) {
  xpi_pending_event *ev = &e->events[e->n_events++];
  ev->s = s;
  ev->tok = (xpi_token_event){.id = id, .text = text, .text_len = len, .top = s->logprobs > 0 ? s->top : NULL,
                              .n_top = s->logprobs, .logprob = logprob};
}

/* Token and final events of the step, with no lock held. Ended sequences are destroyed after their final
 * event, except sessions, which their request owns again once the event has been delivered. */
void xpi_engine_deliver(xpi_engine *e) {
  for (int32_t i = 0; i < e->n_events; i++) {
    xpi_pending_event *ev = &e->events[i];
    if (!ev->s->cb) continue;
    xpi_seq_event se = {ev->s->id, &ev->tok, NULL};
    if (ev->s->cb(&se, ev->s->user) && ev->s->state != SEQ_DONE && ev->s->state != SEQ_IDLE)
      atomic_store(&ev->s->cancel, 1);
  }
  e->n_events = 0;
  pthread_mutex_lock(&e->mu);
  xpi_seq *s = e->done_head;
  e->done_head = e->done_tail = NULL;
  pthread_mutex_unlock(&e->mu);
  while (s) {
    xpi_seq *next = s->done_next;
    xpi_seq_result r = {.struct_size = sizeof r, .status = s->status, .error = s->error ? s->error : ""};
    r.gen.struct_size = sizeof r.gen;
    r.gen.finish_reason = s->out_ready ? s->out.reason : XPI_FINISH_LENGTH;
    r.gen.n_prompt_tokens = s->n_prompt;
    r.gen.n_generated = s->out_ready ? s->out.n_generated : 0;
    if (s->t_first > 0) {
      r.gen.prompt_seconds = s->t_first - s->t_submit;
      r.gen.generate_seconds = s->t_last - s->t_first;
    }
    r.n_cached_tokens = s->n_cached;
    r.n_preemptions = s->n_preempt;
    r.queue_seconds = s->t_start > 0 ? s->t_start - s->t_submit : 0;
    const int session = s->session;
    if (s->cb) {
      xpi_seq_event se = {s->id, NULL, &r};
      s->cb(&se, s->user);
    }
    if (!session) xpi_seq_destroy(s);
    s = next;
  }
}

/* Whether top-k row r came back undecided (a tie at the k-th value, raw or by the temperature): then the
 * graph reads the whole row too. Called inside the step, no lock held. */
static int topk_undecided(void *user, int32_t r, const int32_t *ids, const float *vals, int32_t n) {
  (void)ids;
  const xpi_seq *s = ((xpi_engine *)user)->out_seq[r];
  return !s->smp.greedy && !xpi_sampler_topk_exact(&s->smp, vals, n);
}

/* Samples output row r of a generation job (no lock: the sequence is the stepping thread's while it runs). */
static void sample_row(xpi_engine *e, int32_t r, int32_t *next_tok) {
  xpi_seq *s = e->out_seq[r];
  *next_tok = -1;
  if (s->out.finished) return; /* max_new_tokens 0: the prompt only */
  float *lg = e->out_logits[r];
  const int topk = s->device_topk > 0 && !e->full[r]; /* from the device's best values, not the row */
  const int32_t *tk_ids = topk ? e->tk_ids + (size_t)r * (size_t)e->max_topk : NULL;
  const float *tk_vals = topk ? e->tk_vals + (size_t)r * (size_t)e->max_topk : NULL;
  int finite = 1;
  if (s->device_greedy) finite = e->argmax[r] >= 0; /* the device's argmax is -1 for a non-finite row */
  else if (topk) finite = tk_ids[0] >= 0;          /* so are its top-k ids */
  else
    for (int32_t i = 0; i < e->vocab && finite; i++) finite = lg[i] - lg[i] == 0;
  if (!finite) { /* this sequence's numbers broke (the rows of a batch are independent): it ends alone, once
                   * located (locate_numeric) */
    s->numeric = 1;
    return;
  }
  double lse = 0;
  float raw = 0; /* the sampled id's raw logit (logprobs) */
  int32_t id;
  if (topk) { /* the top logprobs are the first values (same order as xpi_logprobs_top); log-sum-exp from the
               * device's normaliser */
    lse = (double)e->tk_norm[2 * r] + log((double)e->tk_norm[2 * r + 1]);
    for (int32_t j = 0; j < s->logprobs; j++)
      s->top[j] = (xpi_logprob){.id = tk_ids[j], .logprob = (float)((double)tk_vals[j] - lse)};
    id = s->smp.greedy ? tk_ids[0] : xpi_sampler_sample_topk(&s->smp, tk_ids, tk_vals, s->device_topk);
    for (int32_t j = 0; j < s->device_topk; j++)
      if (tk_ids[j] == id) {
        raw = tk_vals[j];
        break;
      }
  } else {
    if (s->logprobs > 0) { /* the sampler rewrites lg in place: the raw row is kept for the sampled id's logprob */
      lse = xpi_logprobs_top(lg, e->vocab, s->logprobs, s->top);
      memcpy(s->lp_raw, lg, (size_t)e->vocab * sizeof *lg);
    }
    id = s->device_greedy ? e->argmax[r] : xpi_sampler_sample(&s->smp, lg, s->tokens, s->n_tok);
    if (s->logprobs > 0) raw = s->lp_raw[id];
  }
  const char *piece = "";
  size_t plen = 0;
  xpi_status st = xpi_seq_output_push(&s->out, id, &piece, &plen);
  if (st != XPI_OK) {
    xpi_seq_fail(s, st, xpi_last_error());
    return;
  }
  double now = xpi_now_s();
  if (s->t_first == 0) s->t_first = now;
  s->t_last = now;
  push_event(e, s, id, piece, plen, s->logprobs > 0 ? (float)((double)raw - lse) : 0.0f);
  if (!s->out.finished) *next_tok = id;
}

/* The first position of s to run again when its logits were not finite: the current job's first (its
 * prompt) at step 0, else the token of this step; but never inside a block another sequence holds too, nor
 * where the window pool released part of the window. */
static int32_t numeric_start(const xpi_engine *e, const xpi_seq *s) {
  int32_t start = s->out.n_generated == 0 ? s->gen_start - s->n_prompt : s->n_tok - 1;
  const int32_t bs = e->o.block_size;
  if (e->bw && s->w_lo > 0 && start < s->w_lo * bs + e->window - 1) start = s->w_lo * bs + e->window - 1;
  for (int32_t b = start / bs; b < s->n_blocks && (xpi_kv_blocks_refs(e->bm, s->blocks[b]) > 1 ||
                                                  (e->bw && xpi_kv_blocks_refs(e->bw, s->wblocks[b]) > 1));
       b++)
    start = (b + 1) * bs;
  return start < s->n_tok ? start : s->n_tok - 1;
}

/* Where the non-finite logits of s came from (the step's positions from start run again alone, layer by
 * layer): its error. No lock held; the graph state is the stepping thread's. */
static void locate_numeric(xpi_engine *e, xpi_seq *s, int32_t start) {
  xpi_status st = xpi_graph_locate_nonfinite(e->g, e->gs, s->tokens + start, s->n_tok - start, start, s->blocks,
                                             e->bw ? s->wblocks : NULL, s->n_blocks, s->rope_long_from);
  if (st == XPI_ERR_NUMERIC) {
    const int32_t step = s->out.n_generated;
    const int32_t first = s->gen_start - s->n_prompt;
    if (step == 0 && start > first) /* earlier positions' KV is shared or out of the kept window: not re-run,
                                     * a NaN there reaches the re-run positions through attention */
      xpi_err_prefix(st, "generation step 0 (the prompt, positions %d-%d; re-run from %d, positions %d-%d not "
                     "checked): ", first, s->n_tok - 1, start, first, start - 1);
    else if (step == 0)
      xpi_err_prefix(st, "generation step 0 (the prompt, positions %d-%d): ", first, s->n_tok - 1);
    else
      xpi_err_prefix(st, "generation step %d (token position %d): ", step, s->n_tok - 1);
  }
  xpi_seq_fail(s, st, xpi_last_error());
}

/* One step with e->mu held on entry and exit (released inside). */
xpi_status xpi_engine_step_locked(xpi_engine *e) {
  const double t0 = xpi_now_s();
  xpi_sched_cancels(e);
  xpi_step_plan p;
  xpi_status st = xpi_sched_plan(e, &p);
  if (st != XPI_OK || p.n == 0) {
    pthread_mutex_unlock(&e->mu);
    xpi_engine_deliver(e);
    pthread_mutex_lock(&e->mu);
    return st;
  }
  /* where every output row goes */
  int any_argmax = 0, any_topk = 0, k = 0;
  for (int32_t r = 0; r < p.n_out; r++) {
    xpi_seq *s = e->out_seq[r];
    e->out_logits[r] = NULL;
    e->topk_n[r] = 0;
    e->full[r] = 0;
    if (s->job == JOB_GENERATE && s->device_topk > 0 && !s->out.finished) { /* the row is read only if undecided */
      e->topk_n[r] = s->device_topk;
      any_topk = 1;
      e->out_logits[r] = e->host_logits + (size_t)k++ * (size_t)e->vocab;
    } else if (s->job == JOB_EVAL) {
      e->out_logits[r] = s->eval_logits + (s->eval_all ? (size_t)(e->out_pos[r] - s->out_from) * (size_t)e->vocab : 0);
    } else if (s->device_greedy) {
      any_argmax = 1;
    } else if (!s->out.finished) {
      e->out_logits[r] = e->host_logits + (size_t)k++ * (size_t)e->vocab;
    }
  }
  pthread_mutex_unlock(&e->mu);

  xpi_graph_batch b = {.n = p.n, .ids = e->ids, .pos = e->pos, .seq = e->seqrow, .n_rows = p.n_rows,
                       .tables = e->tables, .tables_win = e->bw ? e->tables_win : NULL, .n_out = p.n_out,
                       .argmax = any_argmax ? e->argmax : NULL, .logits = e->out_logits, .decode = p.decode,
                       .rope_long_from = e->row_long_from};
  if (any_topk) {
    b.topk_n = e->topk_n, b.topk_ids = e->tk_ids, b.topk_vals = e->tk_vals, b.topk_norm = e->tk_norm;
    b.topk_full = topk_undecided, b.topk_user = e, b.full = e->full;
  }
  st = xpi_graph_step(e->g, e->gs, &b);
  const char *step_err = st != XPI_OK ? xpi_last_error() : NULL;
  char err_copy[512] = "";
  if (step_err) snprintf(err_copy, sizeof err_copy, "%s", step_err);
  /* the next token of every generation row (-1: none) */
  int numeric = 0;
  for (int32_t r = 0; st == XPI_OK && r < p.n_out; r++) {
    e->next[r] = -1;
    if (e->out_seq[r]->job == JOB_GENERATE && !atomic_load(&e->out_seq[r]->cancel)) sample_row(e, r, &e->next[r]);
    numeric |= e->out_seq[r]->numeric;
  }
  if (numeric) { /* rare: sequences whose logits were not finite are located (under the lock: block references) */
    int32_t start[XPI_MAX_NUMERIC];
    int32_t nn = 0;
    xpi_seq *bad[XPI_MAX_NUMERIC];
    pthread_mutex_lock(&e->mu);
    for (int32_t r = 0; r < p.n_out && nn < XPI_MAX_NUMERIC; r++)
      if (e->out_seq[r]->numeric) bad[nn] = e->out_seq[r], start[nn] = numeric_start(e, bad[nn]), nn++;
    pthread_mutex_unlock(&e->mu);
    for (int32_t i = 0; i < nn; i++) locate_numeric(e, bad[i], start[i]);
    for (int32_t r = 0; r < p.n_out; r++)
      if (e->out_seq[r]->numeric && e->out_seq[r]->status == XPI_OK) /* beyond XPI_MAX_NUMERIC: not located */
        xpi_seq_fail(e->out_seq[r], XPI_ERR_NUMERIC, "non-finite logits (NaN or infinity)");
  }

  pthread_mutex_lock(&e->mu);
  if (st != XPI_OK) { /* the batch's sequences end with the step's error; the others are not touched */
    for (int32_t c = 0; c < e->n_chunks; c++) {
      xpi_seq *s = e->chunks[c].s;
      s->in_batch = 0;
      xpi_seq_fail(s, st, err_copy);
      if (s->out_ready) xpi_seq_output_cancel(&s->out);
      xpi_sched_finish(e, s);
    }
    e->n_events = 0;
  } else {
    xpi_sched_advance(e, &p);
    for (int32_t r = 0; r < p.n_out; r++) {
      xpi_seq *s = e->out_seq[r];
      if (s->state != SEQ_RUNNING || s->job != JOB_GENERATE) continue;
      if (s->status != XPI_OK || s->out.finished) {
        xpi_sched_finish(e, s);
      } else if (e->next[r] >= 0) {
        if (xpi_seq_reserve_tokens(s, s->n_tok + 1) != XPI_OK) {
          xpi_seq_fail(s, XPI_ERR_OUT_OF_MEMORY, xpi_last_error());
          xpi_sched_finish(e, s);
        } else {
          s->tokens[s->n_tok++] = e->next[r];
        }
      }
    }
    for (int32_t c = 0; c < e->n_chunks; c++) { /* evaluations end once their ids are in */
      xpi_seq *s = e->chunks[c].s;
      if (s->state == SEQ_RUNNING && s->job == JOB_EVAL && s->n_computed == s->n_tok) xpi_sched_finish(e, s);
    }
    e->stats.completion_tokens += (uint64_t)e->n_events;
  }
  e->stats.readback_bytes = xpi_graph_state_bytes_read(e->gs);
  e->stats.steps++;
  e->stats.step_seconds += xpi_now_s() - t0;
  pthread_mutex_unlock(&e->mu);
  xpi_engine_deliver(e);
  pthread_mutex_lock(&e->mu);
  return st;
}

xpi_status xpi_engine_step(xpi_engine *e, int32_t *n_pending) {
  if (n_pending) *n_pending = 0;
  if (!e) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_engine_step: engine is NULL");
  pthread_mutex_lock(&e->mu);
  while (e->stepping && !e->bg_on) pthread_cond_wait(&e->cv, &e->mu);
  if (e->bg_on) {
    pthread_mutex_unlock(&e->mu);
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_engine_step: the engine runs in the background (xpi_engine_start)");
  }
  e->stepping = 1;
  xpi_status st = xpi_engine_step_locked(e);
  e->stepping = 0;
  if (n_pending) *n_pending = e->waiting.count + e->running.count;
  pthread_cond_broadcast(&e->cv);
  pthread_mutex_unlock(&e->mu);
  return st;
}

