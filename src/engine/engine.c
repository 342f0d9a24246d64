/* xpi_engine_*: continuous batching over one model (see include/xpuinfer.h and engine_internal.h): options,
 * creation, submission and cancellation, the background thread and the stats. The step is step.c's, the request
 * sessions session.c's. */
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
  o->device_topk = 256;
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
  if (o->device_topk < 0 || o->device_topk > 4096)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "engine: device_topk = %d must be in [0, 4096]", o->device_topk);
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

/* The window pool's size where the model has sliding layers (0: none): what max_seqs sequences hold at once
 * when each keeps only its window. A token at p needs the blocks of p - window + 1 .. p, at most
 * ceil(window / bs) + 1 of them; a prefill chunk of c tokens floor((window + c - 2) / bs) + 2; the chunks of a
 * step add up to step_tokens. */
static int32_t window_blocks(const xpi_model *m, const xpi_engine_options *o, int32_t *per_seq) {
  *per_seq = 0;
  if (!xpi_graph_has_window(&m->graph)) return 0;
  const int64_t bs = o->block_size, w = m->cfg.sliding_window, T = o->step_tokens;
  const int64_t seq_blocks = (o->max_seq_len + bs - 1) / bs;
  int64_t one = (w + T + bs - 1) / bs + 1;
  *per_seq = (int32_t)(one < seq_blocks ? one : seq_blocks);
  int64_t all = (int64_t)o->max_seqs * ((w + bs - 1) / bs + 2) + (T + bs - 1) / bs;
  if (all > (int64_t)o->max_seqs * seq_blocks) all = (int64_t)o->max_seqs * seq_blocks;
  if (all < *per_seq) all = *per_seq;
  return (int32_t)(all < INT32_MAX / 2 ? all : INT32_MAX / 2);
}

/* Blocks of the pool (the usable ones; the graph adds a spare block for padding, counted in the budget), or 0
 * for the default, sized from free memory by the graph state. A byte budget counts the window pool at its size
 * beside the main pool (the main pool's positions are what a budget in positions gives). */
static xpi_status pool_blocks(const xpi_model *m, const xpi_engine_options *o, int32_t *n_blocks) {
  const uint64_t per_tok = xpi_graph_kv_bytes_per_token(&m->graph);
  int64_t tokens = o->kv_pool_tokens;
  int32_t per_seq;
  const int32_t max_win = window_blocks(m, o, &per_seq);
  *n_blocks = 0;
  if (tokens == 0 && o->kv_pool_bytes == 0) return XPI_OK;
  int64_t blocks = o->kv_pool_bytes > 0
                       ? xpi_graph_pool_blocks(&m->graph, (uint64_t)o->kv_pool_bytes, o->block_size, max_win)
                       : tokens / o->block_size - 1;
  if (o->kv_pool_bytes > 0) tokens = (int64_t)((uint64_t)o->kv_pool_bytes / per_tok);
  if (blocks >= INT32_MAX / 2) { /* every layer slides: the main pool only counts positions, as many as max_seqs
                                  * sequences of max_seq_len take */
    const int64_t most = (int64_t)o->max_seqs * ((o->max_seq_len + o->block_size - 1) / o->block_size);
    blocks = most < INT32_MAX / 2 ? most : INT32_MAX / 2;
  }
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
  xpi_kv_blocks_free(e->bw);
  free(e->tables_win);
  free(e->hashes);
  free(e->chunks);
  free(e->ids);
  free(e->pos);
  free(e->seqrow);
  free(e->tables);
  free(e->argmax);
  free(e->topk_n);
  free(e->full);
  free(e->tk_ids);
  free(e->tk_vals);
  free(e->tk_norm);
  free(e->next);
  free(e->row_seq);
  free(e->row_long_from);
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

/* The options with defaults filled in and checked, and the graph limits of the engine's state (n_blocks 0:
 * the default pool). */
static xpi_status engine_limits(const xpi_model *model, const xpi_engine_options *opts, int64_t max_pool_tokens,
                                xpi_engine_options *o_out, xpi_graph_limits *lim) {
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
  int64_t cap = (max_pool_tokens + o.block_size - 1) / o.block_size; /* the default is no budget: the spare block
                                                                          * comes on top */
  if (cap > INT32_MAX / 2) cap = INT32_MAX / 2;
  const int32_t S = o.max_seqs, vocab = model->cfg.vocab_size;
  /* decode steps of up to max_seqs sequences replay as one bucket; lm_head takes as many rows at once */
  int32_t max_out = 16;
  while (max_out < S && max_out < 256) max_out <<= 1;
  /* top_k + 1 values decide a top-k draw (a tie with the k-th is seen) */
  int32_t max_topk = o.device_topk > 0 ? (o.device_topk + 1 < vocab ? o.device_topk + 1 : vocab) : 0;
  int32_t per_seq;
  xpi_graph_limits l = {o.step_tokens, S, (o.max_seq_len + o.block_size - 1) / o.block_size, n_blocks,
                        (int32_t)(cap > 1 ? cap : 1), o.block_size, max_out, max_topk, window_blocks(model, &o, &per_seq),
                        0};
  *lim = l;
  *o_out = o;
  return XPI_OK;
}

xpi_status xpi_engine_plan_limits(const xpi_model *model, const xpi_engine_options *opts, int64_t max_pool_tokens,
                                  xpi_graph_limits *lim) {
  xpi_engine_options o;
  return engine_limits(model, opts, max_pool_tokens, &o, lim);
}

xpi_status xpi_engine_create_capped(xpi_model *model, const xpi_engine_options *opts, int64_t max_pool_tokens,
                                    xpi_engine **out) {
  if (!out) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_engine_create: out is NULL");
  *out = NULL;
  if (!model) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_engine_create: model is NULL");
  xpi_engine_options o;
  xpi_graph_limits lim;
  XPI_TRY(engine_limits(model, opts, max_pool_tokens, &o, &lim));
  int32_t n_blocks = lim.n_blocks;
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
  e->max_topk = lim.max_topk;
  xpi_status s = xpi_graph_state_create(e->g, &lim, &e->gs);
  if (s == XPI_OK) {
    e->n_blocks = n_blocks = xpi_graph_state_limits(e->gs)->n_blocks;
    e->n_win_blocks = xpi_graph_state_limits(e->gs)->n_win_blocks;
    s = xpi_kv_blocks_create(n_blocks, o.block_size, o.prefix_caching, &e->bm);
  }
  if (s == XPI_OK && e->n_win_blocks > 0) { /* the sliding layers keep only their window (scheduler.c) */
    window_blocks(model, &o, &e->win_per_seq);
    e->window = model->cfg.sliding_window;
    s = xpi_kv_blocks_create(e->n_win_blocks, o.block_size, o.prefix_caching, &e->bw);
  }
  if (s == XPI_OK) {
    e->chunks = calloc((size_t)S, sizeof *e->chunks);
    e->ids = calloc((size_t)T, sizeof *e->ids);
    e->pos = calloc((size_t)T, sizeof *e->pos);
    e->seqrow = calloc((size_t)T, sizeof *e->seqrow);
    e->tables = calloc((size_t)S * (size_t)e->max_blocks, sizeof *e->tables);
    e->tables_win = calloc((size_t)S * (size_t)e->max_blocks, sizeof *e->tables_win);
    e->hashes = calloc((size_t)e->max_blocks, sizeof *e->hashes);
    e->argmax = calloc((size_t)T, sizeof *e->argmax);
    e->next = calloc((size_t)T, sizeof *e->next);
    e->row_seq = calloc((size_t)S, sizeof *e->row_seq);
    e->row_long_from = calloc((size_t)S, sizeof *e->row_long_from);
    e->out_seq = calloc((size_t)T, sizeof *e->out_seq);
    e->out_pos = calloc((size_t)T, sizeof *e->out_pos);
    e->out_logits = calloc((size_t)T, sizeof *e->out_logits);
    e->events = calloc((size_t)T, sizeof *e->events);
    e->topk_n = calloc((size_t)T, sizeof *e->topk_n);
    e->full = calloc((size_t)T, 1);
    e->tk_norm = calloc((size_t)T * 2, sizeof *e->tk_norm);
    if (e->max_topk > 0) {
      e->tk_ids = calloc((size_t)T * (size_t)e->max_topk, sizeof *e->tk_ids);
      e->tk_vals = calloc((size_t)T * (size_t)e->max_topk, sizeof *e->tk_vals);
    }
    /* rows sampled on the host: one per sequence at most; pages are touched only by rows in use */
    e->host_logits = malloc((size_t)S * (size_t)e->vocab * sizeof *e->host_logits);
    if (!e->chunks || !e->ids || !e->tables_win || !e->hashes || !e->pos || !e->seqrow || !e->tables || !e->argmax ||
        !e->next || !e->row_seq || !e->row_long_from || !e->out_seq ||
        !e->out_pos || !e->out_logits || !e->events || !e->host_logits || !e->topk_n || !e->full || !e->tk_norm ||
        (e->max_topk > 0 && (!e->tk_ids || !e->tk_vals)))
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
  xpi_engine_deliver(e); /* final events (CANCELLED) of everything unfinished */
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

xpi_seq *xpi_seq_new(xpi_engine *e, int32_t max_len) {
  xpi_seq *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->max_len = max_len;
  s->blocks = malloc((size_t)e->max_blocks * sizeof *s->blocks);
  s->wblocks = malloc((size_t)e->max_blocks * sizeof *s->wblocks);
  if (!s->blocks || !s->wblocks) {
    free(s->blocks);
    free(s->wblocks);
    free(s);
    return NULL;
  }
  atomic_init(&s->cancel, 0);
  return s;
}

xpi_status xpi_engine_check_ids(const xpi_engine *e, const int32_t *ids, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= e->vocab)
      return xpi_err(XPI_ERR_INVALID_ARGUMENT, "token id %d at index %zu is outside the vocabulary [0, %d)", ids[i], i,
                     e->vocab);
  return XPI_OK;
}

/* The positions a job needs beyond what the sequence holds must fit the sequence and the pool. */
xpi_status xpi_engine_check_room(const xpi_engine *e, const xpi_seq *s, int64_t need, const char *what) {
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
xpi_status xpi_seq_job_generate(xpi_engine *e, xpi_seq *s, const xpi_gen_options *o) {
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
  /* the device's best values instead of the row (sampler.h says when they decide the draw): top_k + 1 for a
   * top-k draw, the logprobs asked for (greedy: the first is the argmax) */
  s->device_topk = 0;
  if (!s->device_greedy && s->smp.penalty == 1.0f) {
    int32_t n = 0;
    if (s->smp.greedy) n = s->logprobs;
    else if (xpi_sampler_topk_usable(&s->smp, e->o.device_topk)) n = s->smp.top_k + 1 > s->logprobs ? s->smp.top_k + 1 : s->logprobs;
    if (n > 0 && n <= e->max_topk) s->device_topk = n;
  }
  s->job = JOB_GENERATE;
  return XPI_OK;
}

/* Appends ids and queues the job (e->mu held). */
xpi_status xpi_engine_enqueue(xpi_engine *e, xpi_seq *s, const int32_t *ids, int32_t n) {
  XPI_TRY(xpi_seq_reserve_tokens(s, s->n_tok + n));
  if (s->n_tok == 0) { /* a new context: transformers runs a first prompt longer than longrope's original context
                        * with the long factors at every position, a shorter one switches at that position */
    const int32_t orig = e->g->cfg->rope_long_from;
    s->rope_long_from = orig > 0 && n > orig ? 0 : orig;
    s->hash_root = orig > 0 && n > orig ? 0x6c6f6e67726f7065ull : 0; /* "longrope" */
    if (s->n_blocks == 0) s->last_hash = s->hash_root;
  }
  memcpy(s->tokens + s->n_tok, ids, (size_t)n * sizeof *ids);
  s->n_tok += n;
  s->gen_start = s->n_tok;
  s->n_prompt = n;
  s->n_cached = s->n_preempt = 0;
  s->status = XPI_OK;
  free(s->error);
  s->error = NULL;
  atomic_store(&s->cancel, 0);
  s->numeric = 0;
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
  xpi_gen_options resolved;
  XPI_TRY(xpi_gen_options_resolve(opts, &resolved));
  opts = &resolved;
  XPI_TRY(xpi_engine_check_ids(e, ids, n));
  xpi_seq *s = xpi_seq_new(e, e->o.max_seq_len);
  if (!s) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  int64_t need = (int64_t)n + (opts->max_new_tokens > 0 ? opts->max_new_tokens - 1 : 0);
  char what[96];
  snprintf(what, sizeof what, "a prompt of %zu tokens + max_new_tokens %d", n, opts->max_new_tokens);
  xpi_status st = n > (size_t)INT32_MAX ? xpi_err(XPI_ERR_CONTEXT_LENGTH, "%zu prompt tokens", n)
                                        : xpi_engine_check_room(e, s, need, what);
  if (st == XPI_OK) st = xpi_seq_job_generate(e, s, opts);
  if (st == XPI_OK) {
    s->cb = cb;
    s->user = user;
    s->out_from = (int32_t)n - 1;
    pthread_mutex_lock(&e->mu);
    if (e->closing) st = xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_engine_submit: the engine is being freed");
    else {
      s->id = e->next_id++;
      st = xpi_engine_enqueue(e, s, ids, (int32_t)n);
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
    xpi_engine_step_locked(e); /* a failing step ends its batch's sequences: their callbacks have been told */
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
  if (e->bw) {
    s.kv_window_blocks_total = xpi_kv_blocks_total(e->bw);
    s.kv_window_blocks_used = xpi_kv_blocks_used(e->bw);
    s.kv_window_blocks_cached = xpi_kv_blocks_cached(e->bw);
    s.window = e->window;
  }
  pthread_mutex_unlock(&e->mu);
  size_t sz = out->struct_size && out->struct_size < sizeof s ? out->struct_size : sizeof s;
  memcpy(out, &s, sz);
  out->struct_size = sz;
  return XPI_OK;
}

