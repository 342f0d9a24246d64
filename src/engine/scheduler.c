/* The scheduler: which tokens of which sequences run in the next step (continuous batching with chunked
 * prefill), KV blocks for them (prefix-cache hits, allocation, preemption), and the bookkeeping after it.
 *
 * Every step takes, in this order and under a budget of step_tokens tokens:
 *  1. the next token of every decoding sequence (one pending token), oldest first;
 *  2. a chunk of every running sequence that still has prompt (or recomputation) to prefill, oldest first;
 *  3. waiting sequences, first come first served, admitted while there is room for them (max_seqs running,
 *     KV blocks for their first chunk beyond what the running ones still need: the rest of their prompts and
 *     one block each to grow) - their prefix-cache hits first.
 * A running sequence that needs a block when the pool is full takes it from a younger one: parked request
 * sessions first, then the youngest sequence not in this step, whose blocks are freed and whose tokens are
 * recomputed when it is admitted again (its full blocks usually survive in the prefix cache). The oldest
 * sequence can always grow, because every sequence alone fits the pool (checked at submission): no step
 * can deadlock, and nothing is ever truncated.
 *
 * Window pool (models with sliding-window layers, engine.c sizes it): the sliding layers' KV lives in a second
 * pool with its own table per sequence (wblocks, the same logical block index as blocks). Blocks are allocated
 * in both as positions advance; after each step a sequence releases the window blocks before the window of its
 * next token (first block (p - window + 1) / block_size), so it holds about window / block_size + 2 of them
 * however long it gets. Admission, growth and preemption count both pools. The prefix cache publishes full
 * blocks in both; a hit needs the main pool's chain and the window pool's blocks of the window where it ends. */
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/status.h"
#include "engine/engine_internal.h"

static int32_t blocks_for(const xpi_engine *e, int64_t positions) {
  return (int32_t)((positions + e->o.block_size - 1) / e->o.block_size);
}

int32_t xpi_sched_first_block(const xpi_engine *e, int64_t p) {
  if (!e->bw || p - e->window + 1 <= 0) return 0;
  return (int32_t)((p - e->window + 1) / e->o.block_size);
}

/* Releases s's window blocks before logical block lo (they are out of every later token's window). */
static void release_window_below(xpi_engine *e, xpi_seq *s, int32_t lo) {
  if (!e->bw) return;
  if (lo > s->n_blocks) lo = s->n_blocks;
  for (; s->w_lo < lo; s->w_lo++) {
    xpi_kv_blocks_release(e->bw, s->wblocks[s->w_lo]);
    s->wblocks[s->w_lo] = -1;
  }
}

/* Releases s's blocks from logical block `from` on, in both pools (the tail first: it is evicted before the
 * prefix it extends). */
static void release_tail(xpi_engine *e, xpi_seq *s, int32_t from) {
  while (s->n_blocks > from) {
    const int32_t i = --s->n_blocks;
    xpi_kv_blocks_release(e->bm, s->blocks[i]);
    if (e->bw && i >= s->w_lo) xpi_kv_blocks_release(e->bw, s->wblocks[i]);
  }
  if (s->w_lo > s->n_blocks) s->w_lo = s->n_blocks;
}

void xpi_sched_release_blocks(xpi_engine *e, xpi_seq *s) {
  release_tail(e, s, 0);
  s->w_lo = 0;
  s->n_blocks = 0;
  s->n_computed = 0;
  s->n_published = 0;
  s->last_hash = s->hash_root;
}

void xpi_sched_truncate(xpi_engine *e, xpi_seq *s, int32_t n) {
  if (n < 0) n = 0;
  if (n >= s->n_tok) return;
  s->n_tok = n;
  if (s->n_computed > n) s->n_computed = n;
  const int32_t full = s->n_computed / e->o.block_size;
  if (s->n_published > full) { /* a published block must never be written again: recompute from its start */
    s->n_computed = full * e->o.block_size;
    s->n_published = 0;
    s->last_hash = s->hash_root;
    while (s->n_published < full) {
      s->last_hash = xpi_kv_blocks_hash(s->last_hash, s->tokens + (size_t)s->n_published * e->o.block_size,
                                        e->o.block_size);
      s->n_published++;
    }
  }
  if (e->bw && s->w_lo > xpi_sched_first_block(e, s->n_computed)) {
    /* the window of the new end was released: start again (the prefix cache keeps what it can) */
    xpi_sched_release_blocks(e, s);
    return;
  }
  release_tail(e, s, blocks_for(e, s->n_computed));
}

/* Frees a victim's blocks and puts it back in the waiting list (sessions that are parked stay parked). */
static void preempt(xpi_engine *e, xpi_seq *v) {
  xpi_sched_release_blocks(e, v);
  if (v->state == SEQ_RUNNING) {
    xpi_seq_list_remove(&e->running, v);
    v->state = SEQ_WAITING;
    xpi_seq_list_insert_ordered(&e->waiting, v);
    v->n_preempt++;
    e->stats.preemptions++;
  }
}

/* Frees the blocks of one sequence for r: a parked session, else the youngest waiting or running sequence
 * younger than r (r == NULL: parked sessions only) that holds blocks and is not in this step. */
static int preempt_one(xpi_engine *e, const xpi_seq *r) {
  /* (every sequence holding window blocks holds main-pool blocks too: n_blocks > 0 finds both) */
  for (xpi_seq *v = e->idle.head; v; v = v->next)
    if (v->n_blocks > 0) {
      preempt(e, v);
      return 1;
    }
  if (!r) return 0;
  xpi_seq *best = NULL;
  for (xpi_seq *v = e->waiting.head; v; v = v->next)
    if (v->n_blocks > 0 && v != r && v->order > r->order && (!best || v->order > best->order)) best = v;
  for (xpi_seq *v = e->running.tail; v; v = v->prev)
    if (v->n_blocks > 0 && v != r && !v->in_batch && v->order > r->order && (!best || v->order > best->order)) {
      best = v;
      break; /* the running list is ordered: the first from the tail is its youngest */
    }
  if (!best) return 0;
  preempt(e, best);
  return 1;
}

/* Gives s blocks up to position upto (exclusive) in both pools while more than reserve[0] (main) and
 * reserve[1] (window) blocks stay available, freeing parked sessions' blocks when needed and, with may_preempt,
 * younger sequences'. Returns the positions s can now hold. */
static int64_t grow(xpi_engine *e, xpi_seq *s, int64_t upto, const int32_t reserve[2], int may_preempt) {
  const int32_t need = blocks_for(e, upto);
  while (s->n_blocks < need) {
    if (xpi_kv_blocks_available(e->bm) > reserve[0] && (!e->bw || xpi_kv_blocks_available(e->bw) > reserve[1])) {
      int32_t b = xpi_kv_blocks_alloc(e->bm), w = e->bw ? xpi_kv_blocks_alloc(e->bw) : -1;
      if (b < 0 || (e->bw && w < 0)) { /* cannot happen: both had one available */
        xpi_kv_blocks_release(e->bm, b);
        if (e->bw) xpi_kv_blocks_release(e->bw, w);
        break;
      }
      s->blocks[s->n_blocks] = b;
      s->wblocks[s->n_blocks++] = w;
    } else if (!preempt_one(e, may_preempt ? s : NULL)) {
      break;
    }
  }
  return (int64_t)s->n_blocks * e->o.block_size;
}

/* What admission keeps back for a running sequence in each pool: the blocks of its prompt's rest and its next
 * block (in the window pool at most what its window and a chunk take, less what it holds). */
static void reserve_for(const xpi_engine *e, const xpi_seq *s, int32_t reserve[2]) {
  int32_t rest = blocks_for(e, s->n_tok) - s->n_blocks;
  if (rest < 0) rest = 0;
  reserve[0] += 1 + rest;
  if (e->bw) {
    int32_t room = e->win_per_seq - (s->n_blocks - s->w_lo);
    reserve[1] += 1 + (rest < room ? rest : room > 0 ? room : 0);
  }
}

/* Prefix-cache hits for a sequence that holds no blocks: the full blocks of tokens before out_from. The hit is
 * the longest run of k blocks whose main-pool chain is cached and, with a window pool, whose window-pool blocks
 * of the window of position k * block_size (the next token) are cached too (the graph runs every layer for
 * every token, so both pools must hold the prefix). */
static void take_cached(xpi_engine *e, xpi_seq *s) {
  const int32_t bs = e->o.block_size;
  int32_t limit = s->out_from < s->n_tok - 1 ? s->out_from : s->n_tok - 1; /* the last token always runs */
  int32_t k = 0;
  uint64_t *h = e->hashes;
  for (uint64_t prev = s->hash_root; (int64_t)(k + 1) * bs <= limit; k++) {
    const int32_t *ids = s->tokens + (size_t)k * bs;
    h[k] = xpi_kv_blocks_hash(prev, ids, bs);
    if (xpi_kv_blocks_find(e->bm, h[k], prev, ids) < 0) break;
    prev = h[k];
  }
  int32_t lo = 0;
  for (; e->bw && k > 0; k--) { /* the longest k whose window the window pool holds */
    lo = xpi_sched_first_block(e, (int64_t)k * bs);
    int32_t j = lo;
    while (j < k && xpi_kv_blocks_find(e->bw, h[j], j ? h[j - 1] : s->hash_root, s->tokens + (size_t)j * bs) >= 0)
      j++;
    if (j == k) break;
  }
  if (k == 0) lo = 0;
  for (int32_t j = 0; j < k; j++) {
    const uint64_t prev = j ? h[j - 1] : s->hash_root;
    const int32_t *ids = s->tokens + (size_t)j * bs;
    s->blocks[j] = xpi_kv_blocks_lookup(e->bm, h[j], prev, ids);
    if (e->bw) s->wblocks[j] = j >= lo ? xpi_kv_blocks_lookup(e->bw, h[j], prev, ids) : -1;
  }
  s->n_blocks = s->n_published = k;
  s->w_lo = lo;
  s->last_hash = k ? h[k - 1] : s->hash_root;
  e->stats.prefix_cache_hits += (uint64_t)k;
  s->n_computed = s->n_blocks * bs;
}

static void add_chunk(xpi_engine *e, xpi_seq *s, int32_t count, int32_t *n) {
  xpi_chunk *c = &e->chunks[e->n_chunks];
  c->s = s;
  c->from = s->n_computed;
  c->count = count;
  c->row = e->n_chunks++;
  s->in_batch = 1;
  *n += count;
}

/* Whether position p of s is an output row of the step. */
static int is_output(const xpi_seq *s, int32_t p) {
  if (s->job == JOB_EVAL) return s->eval_logits && p >= s->out_from && (s->eval_all || p == s->n_tok - 1);
  return s->job == JOB_GENERATE && p == s->n_tok - 1;
}

xpi_status xpi_sched_plan(xpi_engine *e, xpi_step_plan *p) {
  memset(p, 0, sizeof *p);
  e->n_chunks = 0;
  const int32_t budget = e->o.step_tokens, max_rows = e->o.max_seqs;
  int32_t n = 0;
  const int32_t no_reserve[2] = {0, 0};
  /* 1. decode tokens */
  for (xpi_seq *s = e->running.head; s && n < budget && e->n_chunks < max_rows; s = s->next) {
    if (s->n_tok - s->n_computed != 1) continue;
    if (grow(e, s, (int64_t)s->n_computed + 1, no_reserve, 1) < (int64_t)s->n_computed + 1) continue; /* waits */
    add_chunk(e, s, 1, &n);
  }
  /* 2. prefill chunks of running sequences */
  for (xpi_seq *s = e->running.head; s && n < budget && e->n_chunks < max_rows; s = s->next) {
    const int32_t pending = s->n_tok - s->n_computed;
    if (pending <= 1 || s->in_batch) continue;
    int64_t want = pending < budget - n ? pending : budget - n;
    int64_t reach = grow(e, s, (int64_t)s->n_computed + want, no_reserve, 1);
    if (reach - s->n_computed < want) want = reach - s->n_computed;
    if (want > 0) add_chunk(e, s, (int32_t)want, &n);
  }
  /* 3. admission, keeping back what the running sequences still need: the blocks of their prompts' rest and
   * the next block of each (a younger sequence admitted into that room would hold an older one's prefill up) */
  int32_t reserve[2] = {0, 0};
  for (xpi_seq *s = e->running.head; s; s = s->next) reserve_for(e, s, reserve);
  for (xpi_seq *s = e->waiting.head, *next; s && n < budget && e->running.count < max_rows &&
                                            e->n_chunks < max_rows; s = next) {
    next = s->next;
    const int fresh = s->n_blocks == 0;
    if (fresh && !s->private_kv) take_cached(e, s);
    const int32_t hits = fresh ? s->n_computed : 0;
    const int32_t pending = s->n_tok - s->n_computed;
    int64_t want = pending < budget - n ? pending : budget - n;
    int64_t reach = grow(e, s, (int64_t)s->n_computed + want, reserve, 0);
    if (reach - s->n_computed < want) want = reach - s->n_computed;
    if (want <= 0) { /* no room yet: first come, first served */
      if (fresh) {
        e->stats.prefix_cache_hits -= (uint64_t)s->n_published;
        xpi_sched_release_blocks(e, s);
      }
      break;
    }
    xpi_seq_list_remove(&e->waiting, s);
    s->state = SEQ_RUNNING;
    xpi_seq_list_insert_ordered(&e->running, s);
    reserve_for(e, s, reserve);
    if (s->t_start == 0) {
      s->t_start = xpi_now_s();
      s->n_cached = hits;
      e->stats.prompt_tokens += (uint64_t)s->n_prompt;
      e->stats.prompt_tokens_cached += (uint64_t)(hits < s->n_prompt ? hits : s->n_prompt);
    }
    add_chunk(e, s, (int32_t)want, &n);
  }
  if (n == 0) return XPI_OK;
  /* lay the tokens out: rows without outputs first, then the output rows (the graph computes lm_head over the
   * last n_out rows) */
  int32_t at = 0, n_out = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int32_t c = 0; c < e->n_chunks; c++) {
      const xpi_chunk *ch = &e->chunks[c];
      for (int32_t i = 0; i < ch->count; i++) {
        const int32_t pos = ch->from + i;
        if (is_output(ch->s, pos) != pass) continue;
        e->ids[at] = ch->s->tokens[pos];
        e->pos[at] = pos;
        e->seqrow[at] = ch->row;
        if (pass) {
          e->out_seq[n_out] = ch->s;
          e->out_pos[n_out] = pos;
          n_out++;
        }
        at++;
      }
    }
  int decode = 1;
  for (int32_t c = 0; c < e->n_chunks; c++) {
    const xpi_chunk *ch = &e->chunks[c];
    decode &= ch->count == 1 && is_output(ch->s, ch->from);
    e->row_seq[c] = ch->s;
    e->row_long_from[c] = ch->s->rope_long_from;
    memcpy(e->tables + (size_t)c * (size_t)e->max_blocks, ch->s->blocks, (size_t)ch->s->n_blocks * sizeof(int32_t));
    if (e->bw)
      memcpy(e->tables_win + (size_t)c * (size_t)e->max_blocks, ch->s->wblocks,
             (size_t)ch->s->n_blocks * sizeof(int32_t));
  }
  p->n = n;
  p->n_out = n_out;
  p->n_rows = e->n_chunks;
  p->decode = decode;
  return XPI_OK;
}

void xpi_sched_advance(xpi_engine *e, const xpi_step_plan *p) {
  const int32_t bs = e->o.block_size;
  (void)p;
  for (int32_t c = 0; c < e->n_chunks; c++) {
    xpi_chunk *ch = &e->chunks[c];
    xpi_seq *s = ch->s;
    s->in_batch = 0;
    if (s->state != SEQ_RUNNING || s->n_computed != ch->from) continue; /* ended or preempted meanwhile */
    s->n_computed = ch->from + ch->count;
    const int decode = ch->count == 1 && ch->from == s->n_tok - 1 && ch->from >= s->gen_start;
    if (!decode) e->stats.prefill_tokens += (uint64_t)ch->count; /* prompts, and recomputation */
    while (!s->private_kv && (int64_t)(s->n_published + 1) * bs <= s->n_computed) {
      const int32_t *ids = s->tokens + (size_t)s->n_published * bs;
      uint64_t h = xpi_kv_blocks_hash(s->last_hash, ids, bs);
      xpi_kv_blocks_publish(e->bm, s->blocks[s->n_published], h, s->last_hash, ids);
      if (e->bw && s->n_published >= s->w_lo) xpi_kv_blocks_publish(e->bw, s->wblocks[s->n_published], h, s->last_hash, ids);
      s->last_hash = h;
      s->n_published++;
    }
    release_window_below(e, s, xpi_sched_first_block(e, s->n_computed)); /* the next token's window on */
  }
}

void xpi_sched_finish(xpi_engine *e, xpi_seq *s) {
  if (s->state == SEQ_WAITING) xpi_seq_list_remove(&e->waiting, s);
  else if (s->state == SEQ_RUNNING) xpi_seq_list_remove(&e->running, s);
  else return;
  e->stats.sequences_finished++;
  if (s->session) { /* the context stays for the request's next call */
    s->state = SEQ_IDLE;
    xpi_seq_list_push(&e->idle, s);
  } else {
    xpi_sched_release_blocks(e, s);
    s->state = SEQ_DONE;
  }
  s->done_next = NULL;
  if (e->done_tail) e->done_tail->done_next = s;
  else e->done_head = s;
  e->done_tail = s;
}

void xpi_sched_cancels(xpi_engine *e) {
  xpi_seq_list *lists[2] = {&e->waiting, &e->running};
  for (int l = 0; l < 2; l++)
    for (xpi_seq *s = lists[l]->head, *next; s; s = next) {
      next = s->next;
      if (!atomic_load(&s->cancel)) continue;
      if (s->out_ready) xpi_seq_output_cancel(&s->out);
      xpi_sched_finish(e, s);
    }
}
