/* xpi_engine_*: continuous batching over one model (see include/xpuinfer.h and engine_internal.h).
 *
 * A step: under the lock, cancels are applied and the scheduler plans the batch; without it, the graph runs
 * the batch and every output row is sampled (greedy rows by the device's argmax, the others on the host
 * from their logits) and pushed through its sequence's output (detokenization, stop rules); under the lock
 * again, the sequences advance, full blocks are published in the prefix cache and ended sequences release
 * their blocks; without it, the callbacks get the step's token events, then the final events. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/status.h"
#include "engine/engine_internal.h"

#define DEFAULT_BLOCK 32    /* 32 positions: a block of one KV head is 4-16 KiB at head_dim 128 (a few pages the
                             * prefetchers stream well, and the CPU tile's 32-key inner block never straddles
                             * two blocks), block tables stay short (128 entries for 4096 positions), and a
                             * prefix-cache miss recomputes at most 31 tokens of a shared prompt */
#define DEFAULT_MAX_SEQS 64
#define DEFAULT_STEP_TOKENS 512
#define DEFAULT_POOL_CTX 4096 /* the default pool holds at most max_seqs sequences of this many positions */

void xpi_engine_options_default(xpi_engine_options *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->block_size = DEFAULT_BLOCK;
  o->max_seqs = DEFAULT_MAX_SEQS;
  o->step_tokens = DEFAULT_STEP_TOKENS;
  o->prefix_caching = 1;
}

void xpi_engine_lock(xpi_engine *e) { pthread_mutex_lock(&e->mu); }
void xpi_engine_unlock(xpi_engine *e) { pthread_mutex_unlock(&e->mu); }
void xpi_engine_wake(xpi_engine *e) { pthread_cond_broadcast(&e->cv); }

/* ------------------------------------------------------------------ create / free */

static xpi_status check_options(const xpi_model *m, xpi_engine_options *o) {
  if (o->block_size != 16 && o->block_size != 32)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "engine: block_size = %d (valid: 16, 32)", o->block_size);
  if (o->max_seqs < 1 || o->max_seqs > 4096)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "engine: max_seqs = %d must be in [1, 4096]", o->max_seqs);
  if (o->step_tokens < 1 || o->step_tokens > 65536)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "engine: step_tokens = %d must be in [1, 65536]", o->step_tokens);
  if (o->kv_pool_bytes < 0 || o->kv_pool_tokens < 0 || (o->kv_pool_bytes > 0 && o->kv_pool_tokens > 0))
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "engine: give kv_pool_bytes or kv_pool_tokens (>= 0), not both");
  int32_t max_pos = m->cfg.max_position_embeddings > 0 ? m->cfg.max_position_embeddings : 4096;
  if (o->max_seq_len == 0) o->max_seq_len = max_pos;
  if (o->max_seq_len < 1 || o->max_seq_len > max_pos)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "engine: max_seq_len = %d is outside [1, %d] (max_position_embeddings)",
                   o->max_seq_len, max_pos);
  return XPI_OK;
}

/* Blocks of the pool (the usable ones; the graph adds a spare block for padding, counted in the budget), or 0
 * for the default, sized from free memory by the graph state. */
static xpi_status pool_blocks(const xpi_model *m, const xpi_engine_options *o, int32_t *n_blocks) {
  const uint64_t per_tok = xpi_graph_kv_bytes_per_token(&m->graph);
  int64_t tokens = o->kv_pool_tokens;
  if (o->kv_pool_bytes > 0) tokens = (int64_t)((uint64_t)o->kv_pool_bytes / per_tok);
  *n_blocks = 0;
  if (tokens == 0 && o->kv_pool_bytes == 0) return XPI_OK;
  int64_t blocks = tokens / o->block_size - 1;
  if (blocks > INT32_MAX / 2) blocks = INT32_MAX / 2;
  if (blocks < 1)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT,
                   "engine: a KV pool of %lld positions holds no block of %d (a position takes %llu bytes)",
                   (long long)tokens, o->block_size, (unsigned long long)per_tok);
  *n_blocks = (int32_t)blocks;
  return XPI_OK;
}

static void engine_release(xpi_engine *e) {
  xpi_graph_state_free(e->gs);
  xpi_kv_blocks_free(e->bm);
  free(e->chunks);
  free(e->ids);
  free(e->pos);
  free(e->seqrow);
  free(e->tables);
  free(e->argmax);
  free(e->next);
  free(e->row_seq);
  free(e->out_seq);
  free(e->out_pos);
  free(e->out_logits);
  free(e->host_logits);
  free(e->events);
  pthread_mutex_destroy(&e->mu);
  pthread_cond_destroy(&e->cv);
  free(e);
}

xpi_status xpi_engine_create(xpi_model *model, const xpi_engine_options *opts, xpi_engine **out) {
  return xpi_engine_create_capped(model, opts, -1, out);
}

xpi_status xpi_engine_create_capped(xpi_model *model, const xpi_engine_options *opts, int64_t max_pool_tokens,
                                    xpi_engine **out) {
  if (!out) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_engine_create: out is NULL");
  *out = NULL;
  if (!model) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_engine_create: model is NULL");
  xpi_engine_options o;
  xpi_engine_options_default(&o);
  if (opts) { /* a caller's older, smaller struct keeps the defaults of the fields it lacks */
    size_t sz = opts->struct_size && opts->struct_size < sizeof o ? opts->struct_size : sizeof o;
    memcpy(&o, opts, sz);
    o.struct_size = sizeof o;
  }
  XPI_TRY(check_options(model, &o));
  int32_t n_blocks = 0;
  XPI_TRY(pool_blocks(model, &o, &n_blocks));
  if (max_pool_tokens < 0) /* default cap: max_seqs sequences of up to DEFAULT_POOL_CTX positions */
    max_pool_tokens = (int64_t)o.max_seqs * (o.max_seq_len < DEFAULT_POOL_CTX ? o.max_seq_len : DEFAULT_POOL_CTX);
  int64_t cap = max_pool_tokens / o.block_size - 1;
  if (cap > INT32_MAX / 2) cap = INT32_MAX / 2;
  xpi_engine *e = calloc(1, sizeof *e);
  if (!e) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  pthread_mutex_init(&e->mu, NULL);
  pthread_cond_init(&e->cv, NULL);
  e->model = model;
  e->g = &model->graph;
  e->o = o;
  e->vocab = model->cfg.vocab_size;
  e->max_blocks = (o.max_seq_len + o.block_size - 1) / o.block_size;
  e->next_id = 1;
  const int32_t T = o.step_tokens, S = o.max_seqs;
  /* decode steps of up to max_seqs sequences replay as one bucket; lm_head takes as many rows at once */
  int32_t max_out = 16;
  while (max_out < S && max_out < 256) max_out <<= 1;
  xpi_graph_limits lim = {T, S, e->max_blocks, n_blocks, (int32_t)(cap > 1 ? cap : 1), o.block_size, max_out};
  xpi_status s = xpi_graph_state_create(e->g, &lim, &e->gs);
  if (s == XPI_OK) {
    e->n_blocks = n_blocks = xpi_graph_state_limits(e->gs)->n_blocks;
    s = xpi_kv_blocks_create(n_blocks, o.block_size, o.prefix_caching, &e->bm);
  }
  if (s == XPI_OK) {
    e->chunks = calloc((size_t)S, sizeof *e->chunks);
    e->ids = calloc((size_t)T, sizeof *e->ids);
    e->pos = calloc((size_t)T, sizeof *e->pos);
    e->seqrow = calloc((size_t)T, sizeof *e->seqrow);
    e->tables = calloc((size_t)S * (size_t)e->max_blocks, sizeof *e->tables);
    e->argmax = calloc((size_t)T, sizeof *e->argmax);
    e->next = calloc((size_t)T, sizeof *e->next);
    e->row_seq = calloc((size_t)S, sizeof *e->row_seq);
    e->out_seq = calloc((size_t)T, sizeof *e->out_seq);
    e->out_pos = calloc((size_t)T, sizeof *e->out_pos);
    e->out_logits = calloc((size_t)T, sizeof *e->out_logits);
    e->events = calloc((size_t)T, sizeof *e->events);
    /* rows sampled on the host: one per sequence at most; pages are touched only by rows in use */
    e->host_logits = malloc((size_t)S * (size_t)e->vocab * sizeof *e->host_logits);
    if (!e->chunks || !e->ids || !e->pos || !e->seqrow || !e->tables || !e->argmax || !e->next || !e->row_seq || !e->out_seq ||
        !e->out_pos || !e->out_logits || !e->events || !e->host_logits)
      s = xpi_err(XPI_ERR_OUT_OF_MEMORY, "engine: out of memory for the step buffers");
  }
  if (s != XPI_OK) {
    engine_release(e);
    return s;
  }
  e->stats.block_size = o.block_size;
  e->stats.kv_pool_bytes = xpi_graph_state_kv_bytes(e->gs);
  *out = e;
  return XPI_OK;
}

static void deliver(xpi_engine *e);

void xpi_engine_free(xpi_engine *e) {
  if (!e) return;
  xpi_engine_stop(e);
  pthread_mutex_lock(&e->mu);
  while (e->stepping) pthread_cond_wait(&e->cv, &e->mu);
  e->stepping = 1;
  e->closing = 1;
  xpi_seq_list *lists[2] = {&e->waiting, &e->running};
  for (int l = 0; l < 2; l++)
    while (lists[l]->head) {
      xpi_seq *s = lists[l]->head;
      if (s->out_ready) xpi_seq_output_cancel(&s->out);
      xpi_sched_finish(e, s);
    }
  pthread_mutex_unlock(&e->mu);
  e->n_events = 0;
  deliver(e); /* final events (CANCELLED) of everything unfinished */
  pthread_mutex_lock(&e->mu);
  while (e->idle.head) { /* sessions left by requests that were not freed: their requests are unusable now */
    xpi_seq *s = e->idle.head;
    xpi_seq_list_remove(&e->idle, s);
    xpi_seq_destroy(s);
  }
  pthread_mutex_unlock(&e->mu);
  engine_release(e);
}

/* ------------------------------------------------------------------ sequences and jobs */

static xpi_seq *seq_new(xpi_engine *e, int32_t max_len) {
  xpi_seq *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->max_len = max_len;
  s->blocks = malloc((size_t)e->max_blocks * sizeof *s->blocks);
  if (!s->blocks) {
    free(s);
    return NULL;
  }
  atomic_init(&s->cancel, 0);
  return s;
}

static xpi_status check_ids(const xpi_engine *e, const int32_t *ids, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= e->vocab)
      return xpi_err(XPI_ERR_INVALID_ARGUMENT, "token id %d at index %zu is outside the vocabulary [0, %d)", ids[i], i,
                     e->vocab);
  return XPI_OK;
}

/* The positions a job needs beyond what the sequence holds must fit the sequence and the pool. */
static xpi_status check_room(const xpi_engine *e, const xpi_seq *s, int64_t need, const char *what) {
  const int64_t pool = (int64_t)e->n_blocks * e->o.block_size;
  if (need > s->max_len)
    return xpi_err(XPI_ERR_CONTEXT_LENGTH,
                   "%s needs %lld positions, but the context of a sequence holds %d: shorten the prompt or lower "
                   "max_new_tokens",
                   what, (long long)need, s->max_len);
  if (need > pool)
    return xpi_err(XPI_ERR_CONTEXT_LENGTH,
                   "%s needs %lld positions, but the KV pool holds %lld (%d blocks of %d): shorten the prompt, lower "
                   "max_new_tokens or give the engine a larger kv_pool",
                   what, (long long)need, (long long)pool, e->n_blocks, e->o.block_size);
  return XPI_OK;
}

/* Sampler and output for a generation job; logprobs buffer. */
static xpi_status job_generate_init(xpi_engine *e, xpi_seq *s, const xpi_gen_options *o) {
  if (o->logprobs < 0 || o->logprobs > 1000)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "logprobs = %d must be in [0, 1000]", o->logprobs);
  XPI_TRY(xpi_sampler_init(&s->smp, o, e->vocab));
  s->smp_ready = 1;
  XPI_TRY(xpi_seq_output_init(&s->out, e->model->tok, e->model->cfg.eos_ids, e->model->cfg.n_eos, o));
  s->out_ready = 1;
  s->logprobs = o->logprobs < e->vocab ? o->logprobs : e->vocab;
  if (s->logprobs > 0 && (!(s->top = malloc((size_t)s->logprobs * sizeof *s->top)) ||
                         !(s->lp_raw = malloc((size_t)e->vocab * sizeof *s->lp_raw))))
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  s->device_greedy = s->smp.greedy && s->logprobs == 0 && s->smp.penalty == 1.0f;
  s->job = JOB_GENERATE;
  return XPI_OK;
}

/* Appends ids and queues the job (e->mu held). */
static xpi_status enqueue(xpi_engine *e, xpi_seq *s, const int32_t *ids, int32_t n) {
  XPI_TRY(xpi_seq_reserve_tokens(s, s->n_tok + n));
  memcpy(s->tokens + s->n_tok, ids, (size_t)n * sizeof *ids);
  s->n_tok += n;
  s->gen_start = s->n_tok;
  s->n_prompt = n;
  s->n_cached = s->n_preempt = 0;
  s->status = XPI_OK;
  free(s->error);
  s->error = NULL;
  atomic_store(&s->cancel, 0);
  s->t_submit = xpi_now_s();
  s->t_start = s->t_first = s->t_last = 0;
  s->order = e->next_order++;
  if (s->state == SEQ_IDLE) xpi_seq_list_remove(&e->idle, s);
  s->state = SEQ_WAITING;
  xpi_seq_list_insert_ordered(&e->waiting, s);
  e->stats.sequences_submitted++;
  pthread_cond_broadcast(&e->cv);
  return XPI_OK;
}

xpi_status xpi_engine_submit(xpi_engine *e, const int32_t *ids, size_t n, const xpi_gen_options *opts,
                             xpi_seq_callback cb, void *user, uint64_t *seq_id) {
  if (seq_id) *seq_id = 0;
  if (!e || (!ids && n)) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_engine_submit: NULL argument");
  if (n == 0) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_engine_submit: the prompt has no tokens");
  xpi_gen_options def;
  if (!opts) {
    xpi_gen_options_default(&def);
    opts = &def;
  }
  XPI_TRY(check_ids(e, ids, n));
  xpi_seq *s = seq_new(e, e->o.max_seq_len);
  if (!s) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  int64_t need = (int64_t)n + (opts->max_new_tokens > 0 ? opts->max_new_tokens - 1 : 0);
  char what[96];
  snprintf(what, sizeof what, "a prompt of %zu tokens + max_new_tokens %d", n, opts->max_new_tokens);
  xpi_status st = n > (size_t)INT32_MAX ? xpi_err(XPI_ERR_CONTEXT_LENGTH, "%zu prompt tokens", n)
                                        : check_room(e, s, need, what);
  if (st == XPI_OK) st = job_generate_init(e, s, opts);
  if (st == XPI_OK) {
    s->cb = cb;
    s->user = user;
    s->out_from = (int32_t)n - 1;
    pthread_mutex_lock(&e->mu);
    if (e->closing) st = xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_engine_submit: the engine is being freed");
    else {
      s->id = e->next_id++;
      st = enqueue(e, s, ids, (int32_t)n);
      if (st == XPI_OK && seq_id) *seq_id = s->id;
    }
    pthread_mutex_unlock(&e->mu);
  }
  if (st != XPI_OK) xpi_seq_destroy(s);
  return st;
}

xpi_status xpi_engine_cancel(xpi_engine *e, uint64_t seq_id) {
  if (!e) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_engine_cancel: engine is NULL");
  pthread_mutex_lock(&e->mu);
  xpi_status st = XPI_OK;
  if (seq_id == 0 || seq_id >= e->next_id) {
    st = xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_engine_cancel: sequence %llu was never submitted",
                 (unsigned long long)seq_id);
  } else {
    xpi_seq_list *lists[2] = {&e->waiting, &e->running};
    for (int l = 0; l < 2; l++)
      for (xpi_seq *s = lists[l]->head; s; s = s->next)
        if (s->id == seq_id) atomic_store(&s->cancel, 1);
    pthread_cond_broadcast(&e->cv);
  }
  pthread_mutex_unlock(&e->mu);
  return st;
}

/* ------------------------------------------------------------------ one step */

static void push_event(xpi_engine *e, xpi_seq *s, int32_t id, const char *text, size_t len, float logprob) {
  xpi_pending_event *ev = &e->events[e->n_events++];
  ev->s = s;
  ev->tok = (xpi_token_event){.id = id, .text = text, .text_len = len, .top = s->logprobs > 0 ? s->top : NULL,
                              .n_top = s->logprobs, .logprob = logprob};
}

/* Token and final events of the step, with no lock held. Ended sequences are destroyed after their final
 * event, except sessions, which their request owns again once the event has been delivered. */
static void deliver(xpi_engine *e) {
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

/* Samples output row r of a generation job (no lock: the sequence is the stepping thread's while it runs). */
static void sample_row(xpi_engine *e, int32_t r, int32_t *next_tok) {
  xpi_seq *s = e->out_seq[r];
  *next_tok = -1;
  if (s->out.finished) return; /* max_new_tokens 0: the prompt only */
  float *lg = e->out_logits[r];
  int finite = 1;
  if (s->device_greedy) finite = e->argmax[r] >= 0; /* the device's argmax is -1 for a non-finite row */
  else
    for (int32_t i = 0; i < e->vocab && finite; i++) finite = lg[i] - lg[i] == 0;
  if (!finite) { /* this sequence's numbers broke (the rows of a batch are independent): it ends alone */
    char msg[160];
    snprintf(msg, sizeof msg, "the logits of generated token %d (position %d) hold a NaN or an infinity",
             s->out.n_generated + 1, e->out_pos[r]);
    xpi_seq_fail(s, XPI_ERR_NUMERIC, msg);
    return;
  }
  double lse = 0;
  if (s->logprobs > 0) {
    lse = xpi_logprobs_top(lg, e->vocab, s->logprobs, s->top);
    memcpy(s->lp_raw, lg, (size_t)e->vocab * sizeof *lg);
  }
  int32_t id = s->device_greedy ? e->argmax[r] : xpi_sampler_sample(&s->smp, lg, s->tokens, s->n_tok);
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
  push_event(e, s, id, piece, plen, s->logprobs > 0 ? (float)((double)s->lp_raw[id] - lse) : 0.0f);
  if (!s->out.finished) *next_tok = id;
}

/* One step with e->mu held on entry and exit (released inside). */
static xpi_status step_locked(xpi_engine *e) {
  const double t0 = xpi_now_s();
  xpi_sched_cancels(e);
  xpi_step_plan p;
  xpi_status st = xpi_sched_plan(e, &p);
  if (st != XPI_OK || p.n == 0) {
    pthread_mutex_unlock(&e->mu);
    deliver(e);
    pthread_mutex_lock(&e->mu);
    return st;
  }
  /* where every output row goes */
  int any_argmax = 0, k = 0;
  for (int32_t r = 0; r < p.n_out; r++) {
    xpi_seq *s = e->out_seq[r];
    e->out_logits[r] = NULL;
    if (s->job == JOB_EVAL) {
      e->out_logits[r] = s->eval_logits + (s->eval_all ? (size_t)(e->out_pos[r] - s->out_from) * (size_t)e->vocab : 0);
    } else if (s->device_greedy) {
      any_argmax = 1;
    } else if (!s->out.finished) {
      e->out_logits[r] = e->host_logits + (size_t)k++ * (size_t)e->vocab;
    }
  }
  pthread_mutex_unlock(&e->mu);

  xpi_graph_batch b = {.n = p.n, .ids = e->ids, .pos = e->pos, .seq = e->seqrow, .n_rows = p.n_rows,
                       .tables = e->tables, .n_out = p.n_out, .argmax = any_argmax ? e->argmax : NULL,
                       .logits = e->out_logits, .decode = p.decode};
  st = xpi_graph_step(e->g, e->gs, &b);
  const char *step_err = st != XPI_OK ? xpi_last_error() : NULL;
  char err_copy[512] = "";
  if (step_err) snprintf(err_copy, sizeof err_copy, "%s", step_err);
  /* the next token of every generation row (-1: none) */
  for (int32_t r = 0; st == XPI_OK && r < p.n_out; r++) {
    e->next[r] = -1;
    if (e->out_seq[r]->job == JOB_GENERATE && !atomic_load(&e->out_seq[r]->cancel)) sample_row(e, r, &e->next[r]);
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
  e->stats.steps++;
  e->stats.step_seconds += xpi_now_s() - t0;
  pthread_mutex_unlock(&e->mu);
  deliver(e);
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
  xpi_status st = step_locked(e);
  e->stepping = 0;
  if (n_pending) *n_pending = e->waiting.count + e->running.count;
  pthread_cond_broadcast(&e->cv);
  pthread_mutex_unlock(&e->mu);
  return st;
}

/* ------------------------------------------------------------------ background thread */

static void *bg_main(void *arg) {
  xpi_engine *e = arg;
  pthread_mutex_lock(&e->mu);
  while (!e->bg_stop) {
    if (e->waiting.count + e->running.count == 0 || e->stepping) {
      pthread_cond_wait(&e->cv, &e->mu);
      continue;
    }
    e->stepping = 1;
    const uint64_t before = e->stats.steps;
    int32_t idle = e->running.count == 0;
    step_locked(e); /* a failing step ends its batch's sequences: their callbacks have been told */
    e->stepping = 0;
    pthread_cond_broadcast(&e->cv);
    if (idle && e->running.count == 0 && e->stats.steps == before + 1 && e->waiting.count > 0) {
      /* nothing could be admitted (cannot last: see scheduler.c); do not spin */
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 10000000;
      if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
      pthread_cond_timedwait(&e->cv, &e->mu, &ts);
    }
  }
  pthread_mutex_unlock(&e->mu);
  return NULL;
}

xpi_status xpi_engine_start(xpi_engine *e) {
  if (!e) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_engine_start: engine is NULL");
  pthread_mutex_lock(&e->mu);
  if (e->bg_on) {
    pthread_mutex_unlock(&e->mu);
    return XPI_OK;
  }
  while (e->stepping) pthread_cond_wait(&e->cv, &e->mu);
  e->bg_stop = 0;
  int rc = pthread_create(&e->bg, NULL, bg_main, e);
  if (rc == 0) e->bg_on = 1;
  pthread_mutex_unlock(&e->mu);
  return rc == 0 ? XPI_OK : xpi_err(XPI_ERR_OUT_OF_MEMORY, "xpi_engine_start: cannot start a thread (error %d)", rc);
}

xpi_status xpi_engine_stop(xpi_engine *e) {
  if (!e) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_engine_stop: engine is NULL");
  pthread_mutex_lock(&e->mu);
  if (!e->bg_on) {
    pthread_mutex_unlock(&e->mu);
    return XPI_OK;
  }
  e->bg_stop = 1;
  pthread_cond_broadcast(&e->cv);
  pthread_mutex_unlock(&e->mu);
  pthread_join(e->bg, NULL);
  pthread_mutex_lock(&e->mu);
  e->bg_on = 0;
  pthread_cond_broadcast(&e->cv);
  pthread_mutex_unlock(&e->mu);
  return XPI_OK;
}

xpi_status xpi_engine_get_stats(const xpi_engine *ce, xpi_engine_stats *out) {
  if (!ce || !out) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_engine_get_stats: NULL argument");
  xpi_engine *e = (xpi_engine *)ce; /* the lock is the only thing written */
  pthread_mutex_lock(&e->mu);
  xpi_engine_stats s = e->stats;
  s.struct_size = sizeof s;
  s.running = e->running.count;
  s.waiting = e->waiting.count;
  s.kv_blocks_total = xpi_kv_blocks_total(e->bm);
  s.kv_blocks_used = xpi_kv_blocks_used(e->bm);
  s.kv_blocks_cached = xpi_kv_blocks_cached(e->bm);
  s.kv_blocks_free = s.kv_blocks_total - s.kv_blocks_used - s.kv_blocks_cached;
  pthread_mutex_unlock(&e->mu);
  size_t sz = out->struct_size && out->struct_size < sizeof s ? out->struct_size : sizeof s;
  memcpy(out, &s, sz);
  out->struct_size = sz;
  return XPI_OK;
}

/* ------------------------------------------------------------------ sessions (xpi_request) */

xpi_status xpi_engine_session_create(xpi_engine *e, int32_t max_len, xpi_seq **out) {
  *out = NULL;
  if (max_len < 1 || max_len > e->o.max_seq_len)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "a context of %d positions is outside [1, %d]", max_len, e->o.max_seq_len);
  xpi_seq *s = seq_new(e, max_len);
  if (!s) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  s->session = 1;
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

xpi_status xpi_engine_session_eval(xpi_engine *e, xpi_seq *s, const int32_t *ids, int32_t n, int all_logits,
                                   float *logits, xpi_seq_callback cb, void *user) {
  XPI_TRY(check_ids(e, ids, (size_t)n));
  xpi_seq_job_clear(s);
  s->cb = cb;
  s->user = user;
  pthread_mutex_lock(&e->mu);
  xpi_status st = check_room(e, s, (int64_t)s->n_tok + n, "the evaluation");
  if (st == XPI_OK) {
    s->job = JOB_EVAL;
    s->eval_logits = logits;
    s->eval_all = all_logits;
    s->out_from = all_logits ? s->n_tok : s->n_tok + n - 1;
    st = enqueue(e, s, ids, n);
  }
  pthread_mutex_unlock(&e->mu);
  return st;
}

xpi_status xpi_engine_session_generate(xpi_engine *e, xpi_seq *s, const int32_t *ids, int32_t n,
                                       const xpi_gen_options *opts, xpi_seq_callback cb, void *user) {
  XPI_TRY(check_ids(e, ids, (size_t)n));
  xpi_seq_job_clear(s);
  xpi_status st = job_generate_init(e, s, opts);
  if (st != XPI_OK) {
    xpi_seq_job_clear(s);
    return st;
  }
  s->cb = cb;
  s->user = user;
  pthread_mutex_lock(&e->mu);
  s->out_from = s->n_tok + n - 1;
  st = enqueue(e, s, ids, n);
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
      xpi_status s = step_locked(e);
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
