/* The engine (src/engine, xpi_engine_* in include/xpuinfer.h) on the CPU:
 * - batched = alone: greedy sequences of mixed prompt lengths (the goldens' prompts, extended with their
 *   continuations) decoded together, with prefill chunks mixed into decode steps, give the ids they give
 *   alone, and top log-probabilities within 1e-3 (the batch only changes summation orders: GEMM vs GEMV
 *   blocking, key pieces; ~1e-6 on these logits); sampled sequences with their own seeds likewise;
 * - device top-k sampling against whole-row readback, and its bytes read back (engine_topk.h);
 * - prefix caching: a second request with the same 1,000-token system prompt skips its prefill (prefill tokens
 *   counted by the stats) and gives what a cache-less engine gives; LRU eviction under pressure;
 * - the pool: never above its byte budget, blocks never above the total; preemption when it is full gives
 *   the same outputs; a sequence that cannot fit is refused at submission;
 * - cancel during prefill and from a callback, per-sequence errors (bad ids, too long, bad options, NaN from a
 *   broken embedding row) that leave the rest of the batch unharmed;
 * - the background thread with submissions from several threads, and several threads calling
 *   xpi_request_generate on one model, served in shared steps. */
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>

#include "api/api_internal.h" /* a request's session */
#include "check.h"
#include "engine/engine_internal.h"
#include "engine_topk.h"
#include "model_util.h"

#define MAXN 64

typedef struct run {
  int32_t ids[MAXN];
  float lp[MAXN];          /* top-1 log-probability per token (logprobs requested) */
  int n, done, stop_after, final_events;
  xpi_seq_result res;
  char error[256];
  xpi_status status;
  uint64_t id;
  pthread_mutex_t *mu;     /* background mode: guards done, signals cv */
  pthread_cond_t *cv;
} run;

static int on_event(const xpi_seq_event *ev, void *user) {
  run *r = user;
  if (r->mu) pthread_mutex_lock(r->mu);
  int stop = 0;
  if (ev->token) {
    if (r->n < MAXN) {
      r->ids[r->n] = ev->token->id;
      r->lp[r->n] = ev->token->n_top > 0 ? ev->token->top[0].logprob : 0;
    }
    r->n++;
    stop = r->stop_after && r->n >= r->stop_after;
  } else {
    r->res = *ev->done;
    r->status = ev->done->status;
    snprintf(r->error, sizeof r->error, "%s", ev->done->error);
    r->done = 1;
    r->final_events++;
  }
  if (r->mu) {
    pthread_cond_broadcast(r->cv);
    pthread_mutex_unlock(r->mu);
  }
  return stop;
}

#define MAX_STEPS 100000

/* Every prompt alone in a fresh engine (default options, whole prompts in one step). */
static void run_alone(xpi_model *m, int32_t *const *prompts, const int32_t *lens, int np, const xpi_gen_options *go,
                      run *out) {
  for (int i = 0; i < np; i++) {
    xpi_engine *e = NULL;
    xpi_engine_options eo;
    xpi_engine_options_default(&eo);
    eo.kv_pool_tokens = 4096;
    CHECK_OK(xpi_engine_create(m, &eo, &e));
    memset(&out[i], 0, sizeof out[i]);
    if (e) CHECK_OK(xpi_engine_submit(e, prompts[i], (size_t)lens[i], &go[i], on_event, &out[i], NULL));
    xpi_test_drive(e, MAX_STEPS);
    xpi_engine_free(e);
  }
}

static void compare(const char *what, const run *a, const run *b, int np) {
  for (int i = 0; i < np; i++) {
    CHECK(a[i].done && b[i].done && a[i].status == XPI_OK && b[i].status == XPI_OK, "%s seq %d: done %d/%d: %s %s", what,
          i, a[i].done, b[i].done, a[i].error, b[i].error);
    CHECK(a[i].n == b[i].n && !memcmp(a[i].ids, b[i].ids, sizeof(int32_t) * (size_t)(a[i].n < MAXN ? a[i].n : MAXN)),
          "%s seq %d: %d vs %d ids, first %d vs %d", what, i, a[i].n, b[i].n, a[i].ids[0], b[i].ids[0]);
    double worst = 0;
    for (int t = 0; t < a[i].n && t < b[i].n && t < MAXN; t++) worst = fmax(worst, fabs(a[i].lp[t] - b[i].lp[t]));
    CHECK(worst <= 1e-3, "%s seq %d: logprobs differ by %g", what, i, worst);
    CHECK(a[i].res.gen.finish_reason == b[i].res.gen.finish_reason, "%s seq %d: finish %d vs %d", what, i,
          a[i].res.gen.finish_reason, b[i].res.gen.finish_reason);
  }
}

/* ------------------------------------------------------------------ batched == alone over the goldens */

static void test_equality(const cJSON *goldens, const char *name, const char *attn) {
  char *dir = xpi_test_strf("%s/%s", xpi_test_env("XPI_MODELS_DIR"), name);
  xpi_model *m = xpi_test_load(dir, "cpu", NULL, attn, NULL);
  const cJSON *cases = cJSON_GetObjectItem(cJSON_GetObjectItem(goldens, name), "cases");
#if defined(__SANITIZE_ADDRESS__)
  enum { NP = 5 };
#else
  enum { NP = 8 };
#endif
  int32_t *prompts[NP], lens[NP];
  xpi_gen_options go[NP];
  int np = 0;
  const cJSON *cs;
  cJSON_ArrayForEach(cs, cases) {
    const cJSON *in = cJSON_GetObjectItem(cs, "input_ids"), *cont = cJSON_GetObjectItem(cs, "greedy_new_ids");
    for (int ext = 0; ext < 2 && np < NP; ext++) { /* the prompt, and the prompt plus a continuation */
      int n = cJSON_GetArraySize(in), extra = ext ? 7 + 5 * np : 0;
      if (extra > cJSON_GetArraySize(cont)) extra = cJSON_GetArraySize(cont);
      prompts[np] = malloc(sizeof(int32_t) * (size_t)(n + extra));
      for (int i = 0; i < n; i++) prompts[np][i] = cJSON_GetArrayItem(in, i)->valueint;
      for (int i = 0; i < extra; i++) prompts[np][n + i] = cJSON_GetArrayItem(cont, i)->valueint;
      lens[np] = n + extra;
      xpi_gen_options_default(&go[np]);
      go[np].greedy = 1;
      go[np].ignore_eos = 1;
      go[np].max_new_tokens = 10 + np;
      go[np].logprobs = np % 2 ? 0 : 3; /* odd: the device argmax path; even: host logits */
      np++;
    }
  }
  run alone[NP], batch[NP];
  run_alone(m, prompts, lens, np, go, alone);
  /* all at once, 16 tokens a step: prefill chunks of the longer prompts run beside others' decode steps */
  xpi_engine_options eo;
  xpi_engine_options_default(&eo);
  eo.block_size = 16;
  eo.step_tokens = 16;
  eo.kv_pool_tokens = 2048;
  xpi_engine *e = NULL;
  CHECK_OK(xpi_engine_create(m, &eo, &e));
  memset(batch, 0, sizeof batch);
  for (int i = 0; i < np && e; i++) CHECK_OK(xpi_engine_submit(e, prompts[i], (size_t)lens[i], &go[i], on_event, &batch[i], NULL));
  int max_running = 0;
  int32_t pending = 1;
  while (e && pending > 0) {
    xpi_engine_stats st = {.struct_size = sizeof st};
    xpi_engine_get_stats(e, &st);
    max_running = st.running > max_running ? st.running : max_running;
    if (xpi_engine_step(e, &pending) != XPI_OK) break;
  }
  CHECK(max_running >= np - 1, "%s: at most %d sequences ran together", name, max_running);
  char *what = xpi_test_strf("%s/%s batched vs alone", name, attn);
  compare(what, batch, alone, np);
  printf("%s %s: %d sequences (prompts of %d..%d tokens) batched == alone\n", name, attn, np, lens[0], lens[np - 1]);
  free(what);
  xpi_engine_free(e);
  for (int i = 0; i < np; i++) free(prompts[i]);
  xpi_model_free(m);
  free(dir);
}

/* Sampled sequences with their own options and seeds, and stop strings, in one batch == each alone. */
static void test_sampling(xpi_model *m) {
  enum { NP = 4 };
  int32_t p0[] = {32, 877}, p1[] = {313, 2897, 286, 652, 300}, p2[] = {466, 1382}, p3[] = {1289, 389, 300, 258, 293, 7};
  int32_t *prompts[NP] = {p0, p1, p2, p3}, lens[NP] = {2, 5, 2, 6};
  xpi_gen_options go[NP];
  const char *stops[] = {"a"};
  for (int i = 0; i < NP; i++) {
    xpi_gen_options_default(&go[i]);
    go[i].max_new_tokens = 24;
    go[i].seed = 100 + (uint64_t)i;
    go[i].logprobs = 2;
  }
  go[0].temperature = 0.8f, go[0].top_p = 0.9f;
  go[1].top_k = 20, go[1].repetition_penalty = 1.3f;
  go[2].min_p = 0.05f, go[2].temperature = 1.2f;
  go[3].greedy = 1, go[3].stop_strings = stops, go[3].n_stop_strings = 1;
  run alone[NP], batch[NP];
  run_alone(m, prompts, lens, NP, go, alone);
  xpi_engine *e = NULL;
  xpi_engine_options eo;
  xpi_engine_options_default(&eo);
  eo.kv_pool_tokens = 1024;
  CHECK_OK(xpi_engine_create(m, &eo, &e));
  memset(batch, 0, sizeof batch);
  for (int i = 0; i < NP && e; i++) CHECK_OK(xpi_engine_submit(e, prompts[i], (size_t)lens[i], &go[i], on_event, &batch[i], NULL));
  xpi_test_drive(e, MAX_STEPS);
  compare("sampling options per sequence", batch, alone, NP);
  CHECK(batch[3].res.gen.finish_reason == XPI_FINISH_STOP && batch[3].n < 24, "stop string: %d tokens, finish %d",
        batch[3].n, batch[3].res.gen.finish_reason);
  xpi_engine_free(e);
}

/* ------------------------------------------------------------------ prefix cache */

static void test_prefix_cache(xpi_model *m) {
#if defined(__SANITIZE_ADDRESS__)
  enum { SYS = 300 }; /* sanitizer builds (-O0): the same checks on a shorter system prompt */
#else
  enum { SYS = 1000 };
#endif
  int32_t a[SYS + 2], b[SYS + 2], other[SYS + 2];
  for (int i = 0; i < SYS; i++) a[i] = b[i] = (int32_t)((i * 37 + 11) % 4000), other[i] = (int32_t)((i * 53 + 5) % 4000);
  a[SYS] = 100, a[SYS + 1] = 7;
  b[SYS] = 200, b[SYS + 1] = 9;
  other[SYS] = 1, other[SYS + 1] = 2;
  xpi_gen_options go;
  xpi_gen_options_default(&go);
  go.greedy = 1;
  go.max_new_tokens = 6;
  go.logprobs = 1;
  /* room for one system prompt at a time: 1280 positions (40 blocks of 32, one spare) for 1,000 tokens */
  xpi_engine_options eo;
  xpi_engine_options_default(&eo);
  eo.kv_pool_tokens = (SYS / 32 + 9) * 32;
  xpi_engine *e = NULL, *plain = NULL;
  CHECK_OK(xpi_engine_create(m, &eo, &e));
  eo.prefix_caching = 0;
  CHECK_OK(xpi_engine_create(m, &eo, &plain));
  if (!e || !plain) return;
  run r1 = {0}, r2 = {0}, ref = {0}, r3 = {0}, r4 = {0}, ref4 = {0};
  xpi_engine_stats s0 = {.struct_size = sizeof s0}, s1 = s0, s2 = s0, s3 = s0, s4 = s0;
  CHECK_OK(xpi_engine_submit(e, a, SYS + 2, &go, on_event, &r1, NULL));
  xpi_test_drive(e, MAX_STEPS);
  xpi_engine_get_stats(e, &s1);
  CHECK(s1.prefill_tokens == SYS + 2 && s1.kv_blocks_cached == SYS / 32, "first request: %llu prefill tokens, %d cached blocks",
        (unsigned long long)s1.prefill_tokens, s1.kv_blocks_cached);
  CHECK_OK(xpi_engine_submit(e, b, SYS + 2, &go, on_event, &r2, NULL));
  xpi_test_drive(e, MAX_STEPS);
  xpi_engine_get_stats(e, &s2);
  const uint64_t prefill2 = s2.prefill_tokens - s1.prefill_tokens;
  CHECK(prefill2 == SYS + 2 - (SYS / 32) * 32 && r2.res.n_cached_tokens == (SYS / 32) * 32 &&
            s2.prompt_tokens_cached - s1.prompt_tokens_cached == (SYS / 32) * 32,
        "second request with the same system prompt: %llu prefill tokens, %d cached", (unsigned long long)prefill2,
        r2.res.n_cached_tokens);
  CHECK_OK(xpi_engine_submit(plain, b, SYS + 2, &go, on_event, &ref, NULL));
  xpi_test_drive(plain, MAX_STEPS);
  compare("prefix-cached vs computed", &r2, &ref, 1);
  /* another long prompt evicts the least recently released blocks: the system prompt's tail first */
  CHECK_OK(xpi_engine_submit(e, other, SYS + 2, &go, on_event, &r3, NULL));
  xpi_test_drive(e, MAX_STEPS);
  xpi_engine_get_stats(e, &s3);
  CHECK(s3.kv_blocks_used == 0 && s3.kv_blocks_cached <= s3.kv_blocks_total, "after: %d used, %d cached",
        s3.kv_blocks_used, s3.kv_blocks_cached);
  b[SYS] = 300;
  CHECK_OK(xpi_engine_submit(e, b, SYS + 2, &go, on_event, &r4, NULL));
  xpi_test_drive(e, MAX_STEPS);
  xpi_engine_get_stats(e, &s4);
  CHECK(r4.res.n_cached_tokens > 0 && r4.res.n_cached_tokens < (SYS / 32) * 32,
        "after eviction only the head of the prefix is cached: %d tokens", r4.res.n_cached_tokens);
  CHECK_OK(xpi_engine_submit(plain, b, SYS + 2, &go, on_event, &ref4, NULL));
  xpi_test_drive(plain, MAX_STEPS);
  compare("partly cached vs computed", &r4, &ref4, 1);
  (void)s0;
  xpi_engine_free(e);
  xpi_engine_free(plain);
}

/* ------------------------------------------------------------------ pool budget and preemption */

static void test_pool(xpi_model *m) {
  enum { NP = 4 };
  /* a position of tinyfortunes' KV (f32): 4 layers x 2 heads x 64 x 2 x 4 bytes = 4 KiB; 160 positions */
  const int64_t budget = 160 * 4096 + 1000;
  xpi_engine_options eo;
  xpi_engine_options_default(&eo);
  eo.block_size = 16;
  eo.kv_pool_bytes = budget;
  xpi_engine *e = NULL;
  CHECK_OK(xpi_engine_create(m, &eo, &e));
  if (!e) return;
  xpi_engine_stats st = {.struct_size = sizeof st};
  xpi_engine_get_stats(e, &st);
  CHECK(st.kv_pool_bytes <= (uint64_t)budget && st.kv_blocks_total == 9,
        "pool of %llu bytes (budget %lld), %d blocks", (unsigned long long)st.kv_pool_bytes, (long long)budget,
        st.kv_blocks_total);
  int32_t prompts_buf[NP][20], *prompts[NP], lens[NP];
  xpi_gen_options go[NP];
  for (int i = 0; i < NP; i++) {
    for (int t = 0; t < 20; t++) prompts_buf[i][t] = (int32_t)((i * 101 + t * 7 + 3) % 4000);
    prompts[i] = prompts_buf[i];
    lens[i] = 20;
    xpi_gen_options_default(&go[i]);
    go[i].greedy = 1;
    go[i].ignore_eos = 1;
    go[i].max_new_tokens = 40; /* 59 positions, 4 blocks each: 16 blocks for all, the pool has 9 */
    go[i].logprobs = 1;
  }
  run alone[NP], batch[NP];
  run_alone(m, prompts, lens, NP, go, alone);
  memset(batch, 0, sizeof batch);
  for (int i = 0; i < NP; i++) CHECK_OK(xpi_engine_submit(e, prompts[i], 20, &go[i], on_event, &batch[i], NULL));
  int32_t pending = 1, over = 0;
  while (pending > 0) {
    if (xpi_engine_step(e, &pending) != XPI_OK) break;
    xpi_engine_get_stats(e, &st);
    over |= st.kv_blocks_used + st.kv_blocks_cached > st.kv_blocks_total;
  }
  CHECK(!over, "blocks held beyond the pool");
  CHECK(st.preemptions > 0, "a full pool preempts (%llu preemptions)", (unsigned long long)st.preemptions);
  compare("preempted and recomputed vs alone", batch, alone, NP);
  /* more than the whole pool: refused at once, nothing truncated */
  int32_t big[100] = {0};
  xpi_gen_options g2;
  xpi_gen_options_default(&g2);
  g2.max_new_tokens = 100;
  run never = {0};
  CHECK_ERR(xpi_engine_submit(e, big, 100, &g2, on_event, &never, NULL), XPI_ERR_CONTEXT_LENGTH, "KV pool holds 144");
  CHECK(never.done == 0 && never.n == 0, "no callback for a refused submission");
  xpi_engine_free(e);
}

/* ------------------------------------------------------------------ cancel and errors */

static void test_cancel(xpi_model *m) {
  int32_t longp[300], p1[] = {32, 877}, p2[] = {313, 2897, 286};
  for (int i = 0; i < 300; i++) longp[i] = (int32_t)((i * 13 + 1) % 4000);
  xpi_gen_options go;
  xpi_gen_options_default(&go);
  go.greedy = 1;
  go.ignore_eos = 1;
  go.max_new_tokens = 12;
  go.logprobs = 1;
  int32_t *ps[2] = {p1, p2}, ls[2] = {2, 3};
  xpi_gen_options gos[2] = {go, go};
  run alone[2];
  run_alone(m, ps, ls, 2, gos, alone);
  xpi_engine_options eo;
  xpi_engine_options_default(&eo);
  eo.step_tokens = 32; /* the long prompt needs ten steps of prefill */
  eo.kv_pool_tokens = 1024;
  xpi_engine *e = NULL;
  CHECK_OK(xpi_engine_create(m, &eo, &e));
  if (!e) return;
  run rl, r[2], rs;
  memset(&rl, 0, sizeof rl), memset(r, 0, sizeof r), memset(&rs, 0, sizeof rs);
  uint64_t idl = 0, id1 = 0;
  CHECK_OK(xpi_engine_submit(e, p1, 2, &go, on_event, &r[0], &id1));
  CHECK_OK(xpi_engine_submit(e, p2, 3, &go, on_event, &r[1], NULL));
  rs.stop_after = 3; /* the callback ends it */
  CHECK_OK(xpi_engine_submit(e, p1, 2, &go, on_event, &rs, NULL));
  CHECK_OK(xpi_engine_submit(e, longp, 300, &go, on_event, &rl, &idl));
  for (int i = 0; i < 3; i++) CHECK_OK(xpi_engine_step(e, NULL));
  xpi_engine_stats before = {.struct_size = sizeof before}, after = before;
  xpi_engine_get_stats(e, &before);
  CHECK(rl.n == 0 && before.running == 4, "the long prompt is still in its prefill (%d tokens, %d running)", rl.n,
        before.running);
  CHECK_OK(xpi_engine_cancel(e, idl));
  CHECK_OK(xpi_engine_step(e, NULL));
  xpi_engine_get_stats(e, &after);
  CHECK(rl.done && rl.res.gen.finish_reason == XPI_FINISH_CANCELLED && rl.status == XPI_OK && rl.n == 0,
        "cancelled during prefill: done %d reason %d", rl.done, rl.res.gen.finish_reason);
  CHECK(after.kv_blocks_used < before.kv_blocks_used, "its blocks are freed at once (%d -> %d)", before.kv_blocks_used,
        after.kv_blocks_used);
  xpi_test_drive(e, MAX_STEPS);
  compare("beside a cancelled sequence", r, alone, 2);
  CHECK(rs.done && rs.n == 3 && rs.res.gen.finish_reason == XPI_FINISH_CANCELLED && rs.res.gen.n_generated == 3,
        "callback stop: %d tokens, reason %d", rs.n, rs.res.gen.finish_reason);
  CHECK_OK(xpi_engine_cancel(e, id1)); /* ended already: nothing to do */
  CHECK_ERR(xpi_engine_cancel(e, 999999), XPI_ERR_INVALID_ARGUMENT, "never submitted");
  CHECK(rl.final_events == 1 && r[0].final_events == 1 && rs.final_events == 1, "one final event each");
  xpi_engine_free(e);
}

static void test_errors(xpi_model *m) {
  xpi_engine *e = NULL;
  xpi_engine_options eo;
  xpi_engine_options_default(&eo);
  eo.block_size = 8;
  CHECK_ERR(xpi_engine_create(m, &eo, &e), XPI_ERR_INVALID_ARGUMENT, "block_size = 8");
  xpi_engine_options_default(&eo);
  eo.kv_pool_tokens = 100, eo.kv_pool_bytes = 100;
  CHECK_ERR(xpi_engine_create(m, &eo, &e), XPI_ERR_INVALID_ARGUMENT, "not both");
  xpi_engine_options_default(&eo);
  eo.kv_pool_tokens = 40;
  CHECK_ERR(xpi_engine_create(m, &eo, &e), XPI_ERR_INVALID_ARGUMENT, "holds no block");
  eo.kv_pool_tokens = 512;
  eo.max_seq_len = 5000;
  CHECK_ERR(xpi_engine_create(m, &eo, &e), XPI_ERR_INVALID_ARGUMENT, "max_seq_len = 5000");
  eo.max_seq_len = 64;
  CHECK_ERR(xpi_engine_create(NULL, &eo, &e), XPI_ERR_INVALID_ARGUMENT, "model is NULL");
  CHECK_OK(xpi_engine_create(m, &eo, &e));
  if (!e) return;
  xpi_gen_options go;
  xpi_gen_options_default(&go);
  go.max_new_tokens = 8;
  run r = {0};
  int32_t bad[] = {32, 5000}, ok[] = {32, 877}, longp[60] = {0};
  CHECK_ERR(xpi_engine_submit(e, bad, 2, &go, on_event, &r, NULL), XPI_ERR_INVALID_ARGUMENT, "token id 5000 at index 1");
  CHECK_ERR(xpi_engine_submit(e, ok, 0, &go, on_event, &r, NULL), XPI_ERR_INVALID_ARGUMENT, "no tokens");
  CHECK_ERR(xpi_engine_submit(e, longp, 60, &go, on_event, &r, NULL), XPI_ERR_CONTEXT_LENGTH, "context of a sequence holds 64");
  go.top_p = 0;
  CHECK_ERR(xpi_engine_submit(e, ok, 2, &go, on_event, &r, NULL), XPI_ERR_INVALID_ARGUMENT, "top_p");
  go.top_p = 1;
  go.logprobs = 5000;
  CHECK_ERR(xpi_engine_submit(e, ok, 2, &go, on_event, &r, NULL), XPI_ERR_INVALID_ARGUMENT, "logprobs = 5000");
  CHECK(r.done == 0 && r.n == 0, "refused submissions call no callback");
  CHECK_OK(xpi_engine_start(e));
  CHECK_ERR(xpi_engine_step(e, NULL), XPI_ERR_INVALID_ARGUMENT, "runs in the background");
  CHECK_OK(xpi_engine_stop(e));
  xpi_engine_free(e);

  /* NaN: a sequence whose prompt holds the broken token fails alone, with XPI_ERR_NUMERIC */
  char *src = xpi_test_strf("%s/models/llama-bias", xpi_test_env("XPI_TEST_DATA")); /* untied lm_head */
  char *dir = xpi_test_nan_row_model(src, 17);
  free(src);
  xpi_model *nm = xpi_test_load(dir, "cpu", NULL, "sdpa", NULL);
  if (!nm) return;
  xpi_engine_options_default(&eo);
  eo.kv_pool_tokens = 1024;
  CHECK_OK(xpi_engine_create(nm, &eo, &e));
  int32_t pa[] = {5, 9, 12}, pb[] = {5, 17, 12}, pc[] = {40, 41};
  int32_t *ps[2] = {pa, pc}, ls[2] = {3, 2};
  xpi_gen_options gos[2];
  for (int i = 0; i < 2; i++) {
    xpi_gen_options_default(&gos[i]);
    gos[i].greedy = 1, gos[i].max_new_tokens = 6, gos[i].ignore_eos = 1, gos[i].logprobs = i;
  }
  run alone[2], rs[3];
  run_alone(nm, ps, ls, 2, gos, alone);
  memset(rs, 0, sizeof rs);
  CHECK_OK(xpi_engine_submit(e, pa, 3, &gos[0], on_event, &rs[0], NULL));
  CHECK_OK(xpi_engine_submit(e, pb, 3, &gos[0], on_event, &rs[1], NULL));
  CHECK_OK(xpi_engine_submit(e, pc, 2, &gos[1], on_event, &rs[2], NULL));
  xpi_test_drive(e, MAX_STEPS);
  CHECK(rs[1].done && rs[1].status == XPI_ERR_NUMERIC && strstr(rs[1].error, "NaN") && rs[1].n == 0,
        "the NaN sequence: status %s, '%s'", xpi_status_name(rs[1].status), rs[1].error);
  run ok2[2] = {rs[0], rs[2]};
  compare("beside a NaN sequence", ok2, alone, 2);
  xpi_engine_free(e);
  xpi_model_free(nm);
  free(dir);
}

/* ------------------------------------------------------------------ truncation (a request's callback stop) */

/* A request's context cut back inside a published block (what a callback stop does when the stepping thread
 * ran ahead) recomputes that block into a fresh one rather than writing into the shared one: the logits after
 * the cut equal a fresh request's, and the published prefix still serves another request unchanged. */
static void test_truncate(xpi_model *m) {
  xpi_request *a = NULL, *b = NULL, *c = NULL;
  CHECK_OK(xpi_request_create(m, NULL, &a));
  CHECK_OK(xpi_request_create(m, NULL, &b));
  CHECK_OK(xpi_request_create(m, NULL, &c));
  if (!a || !b || !c) return;
  int32_t t1[40], t2[40];
  for (int i = 0; i < 40; i++) t1[i] = (int32_t)((i * 31 + 7) % 4000), t2[i] = i < 20 ? t1[i] : (int32_t)(i * 3 + 1);
  const int32_t V = m->cfg.vocab_size;
  float *la = malloc(sizeof(float) * (size_t)V * 20), *lb = malloc(sizeof(float) * (size_t)V * 20);
  float *lc = malloc(sizeof(float) * (size_t)V * 40), *ld = malloc(sizeof(float) * (size_t)V * 40);
  CHECK_OK(xpi_request_eval(a, t1, 40, 1, lc, (size_t)V * 40)); /* block 0 (positions 0..31) is published */
  xpi_engine_lock(a->e);
  xpi_sched_truncate(a->e, a->seq, 20);
  CHECK(a->seq->n_computed == 0 && a->seq->n_published == 0 && xpi_request_n_past(a) == 20,
        "cut inside the published block: computed %d, published %d", a->seq->n_computed, a->seq->n_published);
  xpi_engine_unlock(a->e);
  CHECK_OK(xpi_request_eval(a, t2 + 20, 20, 1, la, (size_t)V * 20));
  CHECK_OK(xpi_request_eval(b, t2, 40, 1, ld, (size_t)V * 40));
  memcpy(lb, ld + (size_t)V * 20, sizeof(float) * (size_t)V * 20);
  double worst = 0;
  for (size_t i = 0; i < (size_t)V * 20; i++) worst = fmax(worst, fabs((double)la[i] - lb[i]));
  CHECK(worst < 1e-4, "after the cut: logits differ from a fresh request by %g", worst);
  /* the first prompt again, last position only (so its first block comes from the prefix cache): that block
   * still holds t1's keys */
  CHECK_OK(xpi_request_eval(c, t1, 40, 0, ld, (size_t)V));
  worst = 0;
  for (size_t i = 0; i < (size_t)V; i++) worst = fmax(worst, fabs((double)lc[(size_t)V * 39 + i] - ld[i]));
  CHECK(worst < 1e-4 && c->seq->n_cached == 32, "the published prefix changed: logits differ by %g (%d cached)", worst,
        c->seq->n_cached);
  xpi_request_free(a);
  xpi_request_free(b);
  xpi_request_free(c);
  free(la), free(lb), free(lc), free(ld);
}

/* ------------------------------------------------------------------ threads */

typedef struct bg_arg {
  xpi_engine *e;
  int32_t *prompt;
  int32_t len;
  xpi_gen_options *go;
  run *r;
} bg_arg;

static void *bg_submit(void *p) {
  bg_arg *a = p;
  xpi_engine_submit(a->e, a->prompt, (size_t)a->len, a->go, on_event, a->r, &a->r->id);
  return NULL;
}

static void test_background(xpi_model *m) {
  enum { NP = 3 };
  int32_t p0[] = {32, 877}, p1[] = {313, 2897, 286, 652}, p2[] = {466, 1382, 1289};
  int32_t *ps[NP] = {p0, p1, p2}, ls[NP] = {2, 4, 3};
  xpi_gen_options go[NP];
  for (int i = 0; i < NP; i++) {
    xpi_gen_options_default(&go[i]);
    go[i].greedy = 1, go[i].ignore_eos = 1, go[i].max_new_tokens = 16, go[i].logprobs = 1;
  }
  run alone[NP], rs[NP];
  run_alone(m, ps, ls, NP, go, alone);
  xpi_engine_options eo;
  xpi_engine_options_default(&eo);
  eo.kv_pool_tokens = 1024;
  xpi_engine *e = NULL;
  CHECK_OK(xpi_engine_create(m, &eo, &e));
  if (!e) return;
  CHECK_OK(xpi_engine_start(e));
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  memset(rs, 0, sizeof rs);
  pthread_t th[NP];
  bg_arg args[NP];
  for (int i = 0; i < NP; i++) {
    rs[i].mu = &mu, rs[i].cv = &cv;
    args[i] = (bg_arg){e, ps[i], ls[i], &go[i], &rs[i]};
    pthread_create(&th[i], NULL, bg_submit, &args[i]);
  }
  for (int i = 0; i < NP; i++) pthread_join(th[i], NULL);
  pthread_mutex_lock(&mu);
  for (int i = 0; i < NP; i++)
    while (!rs[i].done) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  CHECK_OK(xpi_engine_stop(e));
  for (int i = 0; i < NP; i++) rs[i].mu = NULL;
  compare("background thread", rs, alone, NP);
  xpi_engine_free(e);
}

typedef struct req_arg {
  xpi_model *m;
  const int32_t *prompt;
  int32_t len;
  int32_t ids[32];
  int n;
  xpi_status st;
  pthread_barrier_t *bar;
} req_arg;

static int req_tok(const xpi_token_event *ev, void *user) {
  req_arg *a = user;
  if (a->n < 32) a->ids[a->n] = ev->id;
  a->n++;
  return 0;
}

static void *req_thread(void *p) {
  req_arg *a = p;
  xpi_request *r = NULL;
  a->st = xpi_request_create(a->m, NULL, &r);
  xpi_gen_options go;
  xpi_gen_options_default(&go);
  go.greedy = 1, go.ignore_eos = 1, go.max_new_tokens = 24;
  if (a->bar) pthread_barrier_wait(a->bar);
  if (a->st == XPI_OK) a->st = xpi_request_generate(r, a->prompt, (size_t)a->len, &go, req_tok, a, NULL);
  xpi_request_free(r);
  return NULL;
}

/* Four threads, one request each, on one model: the same ids as one after the other, in shared steps. */
static void test_request_threads(const char *dir) {
  enum { NT = 4 };
  const int32_t p[NT][3] = {{32, 877, 0}, {313, 2897, 286}, {466, 1382, 0}, {1289, 389, 300}};
  const int32_t lens[NT] = {2, 3, 2, 3};
  req_arg seq_args[NT], par[NT];
  xpi_model *m = xpi_test_load(dir, "cpu", NULL, "sdpa", NULL);
  if (!m) return;
  for (int i = 0; i < NT; i++) {
    seq_args[i] = (req_arg){.m = m, .prompt = p[i], .len = lens[i]};
    req_thread(&seq_args[i]);
  }
  xpi_model_free(m);
  m = xpi_test_load(dir, "cpu", NULL, "sdpa", NULL); /* a fresh model: its request engine's counters start at 0 */
  if (!m) return;
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, NT);
  pthread_t th[NT];
  for (int i = 0; i < NT; i++) {
    par[i] = (req_arg){.m = m, .prompt = p[i], .len = lens[i], .bar = &bar};
    pthread_create(&th[i], NULL, req_thread, &par[i]);
  }
  for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&bar);
  for (int i = 0; i < NT; i++) {
    CHECK(par[i].st == XPI_OK && seq_args[i].st == XPI_OK, "thread %d: %s", i, xpi_status_name(par[i].st));
    CHECK(par[i].n == 24 && !memcmp(par[i].ids, seq_args[i].ids, sizeof par[i].ids), "thread %d: ids differ", i);
  }
  xpi_engine_stats st = {.struct_size = sizeof st};
  CHECK_OK(xpi_engine_get_stats(m->req_engine, &st));
  /* one at a time would take 24 steps each (prefill + 23 decode steps): shared steps take far fewer */
  CHECK(st.steps < 2 * 24 && st.completion_tokens == NT * 24, "%llu steps for %llu tokens of %d threads",
        (unsigned long long)st.steps, (unsigned long long)st.completion_tokens, NT);
  printf("%d threads' requests: %llu steps for %llu tokens\n", NT, (unsigned long long)st.steps,
         (unsigned long long)st.completion_tokens);
  xpi_model_free(m);
}

/* ------------------------------------------------------------------ a request's prefix_cache option */

static uint64_t req_cached(xpi_model *m, int32_t *blocks_cached) {
  xpi_engine_stats st = {.struct_size = sizeof st};
  CHECK_OK(xpi_engine_get_stats(m->req_engine, &st));
  *blocks_cached = st.kv_blocks_cached;
  return st.prompt_tokens_cached;
}

/* prefix_cache 0: a private context that neither reuses nor leaves cached blocks, whose reset hands the same
 * blocks (warm pages) to its next prompt; the same logits as a cached request's; an older struct_size (without
 * the field) keeps the default. */
static void test_request_prefix_option(const char *dir) {
  enum { N = 100, V = 4096 }; /* three full blocks of 32 and a partial one */
  int32_t p[N], q[N];
  for (int i = 0; i < N; i++) p[i] = (int32_t)((i * 41 + 3) % 4000), q[i] = (int32_t)((i * 29 + 17) % 4000);
  xpi_model *m = xpi_test_load(dir, "cpu", NULL, "sdpa", NULL);
  if (!m) return;
  float *l_priv = calloc(V, sizeof *l_priv), *l_pub = calloc(V, sizeof *l_pub), *l_hit = calloc(V, sizeof *l_hit);
  xpi_request_options ro;
  xpi_request_options_default(&ro);
  CHECK(ro.prefix_cache == 1, "default prefix_cache %d", ro.prefix_cache);
  ro.prefix_cache = 0;
  xpi_request *priv = NULL, *pub = NULL, *old = NULL;
  CHECK_OK(xpi_request_create(m, &ro, &priv));
  ro.prefix_cache = 1;
  CHECK_OK(xpi_request_create(m, &ro, &pub));
  xpi_request_options small = ro;
  small.struct_size = offsetof(xpi_request_options, prefix_cache);
  small.prefix_cache = 0; /* beyond its struct_size: not read */
  CHECK_OK(xpi_request_create(m, &small, &old));
  if (!priv || !pub || !old) goto out;
  int32_t cached;
  CHECK_OK(xpi_request_eval(priv, q, N, 0, l_priv, V));
  int32_t first[4];
  memcpy(first, priv->seq->blocks, sizeof first);
  xpi_request_reset(priv);
  CHECK(req_cached(m, &cached) == 0 && cached == 0, "a private request left %d cached blocks", cached);
  CHECK_OK(xpi_request_eval(priv, p, N, 0, l_priv, V));
  int same = 1;
  for (int i = 0; i < 4; i++) { /* the free stack gives back the released blocks, last released first */
    int found = 0;
    for (int j = 0; j < 4; j++) found |= priv->seq->blocks[i] == first[j];
    same &= found;
  }
  CHECK(same, "the private request's next prompt got other blocks than the ones it released");
  CHECK_OK(xpi_request_eval(pub, p, N, 0, l_pub, V));
  CHECK(req_cached(m, &cached) == 0, "a cached request found a private request's blocks");
  CHECK(!memcmp(l_priv, l_pub, V * sizeof *l_pub), "private and cached requests' logits differ");
  xpi_request_reset(pub);
  CHECK(req_cached(m, &cached) == 0 && cached == 3, "after a cached request's reset: %d cached blocks", cached);
  xpi_request_reset(priv);
  CHECK_OK(xpi_request_eval(priv, p, N, 0, l_hit, V));
  CHECK(req_cached(m, &cached) == 0 && cached == 3, "a private request took %d cached blocks' tokens", 3 - cached);
  CHECK_OK(xpi_request_eval(old, p, N, 0, l_hit, V));
  CHECK(req_cached(m, &cached) == 96, "an older struct_size's request: %d of 96 tokens from the prefix cache",
        (int)req_cached(m, &cached));
  /* the last 4 tokens alone take the small-n kernel, the whole prompt the GEMM: f32 sums in another order */
  double worst = 0;
  for (int i = 0; i < V; i++) worst = fmax(worst, fabs((double)l_hit[i] - l_pub[i]));
  CHECK(worst <= 1e-3, "prefix-cached logits differ from computed ones by %g", worst);
out:
  xpi_request_free(priv);
  xpi_request_free(pub);
  xpi_request_free(old);
  free(l_priv), free(l_pub), free(l_hit);
  xpi_model_free(m);
}

int main(void) {
  char *tf = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
  char *gpath = xpi_test_strf("%s/goldens/random_models.json", xpi_test_env("XPI_TEST_DATA"));
  cJSON *g = xpi_test_load_json(gpath);
#if defined(__SANITIZE_ADDRESS__)
  /* sanitizer builds (-O0, ~20x slower): one model; the normal build runs them all */
  test_equality(g, "tiny-qwen3-f32", "sdpa");
#else
  test_equality(g, "tiny-qwen3-f32", "sdpa");
  test_equality(g, "tiny-llama-bf16", "flash_attention_2");
  test_equality(g, "tiny-qwen2-f16", "eager");
  test_equality(g, "tiny-qwen3-bf16", "sdpa");
#endif
  xpi_model *m = xpi_test_load(tf, "cpu", NULL, "sdpa", NULL);
  if (m) {
    test_sampling(m);
    tk_equality(m, "cpu");
    tk_readback(m, "cpu", NULL);
    test_prefix_cache(m);
    test_pool(m);
    test_cancel(m);
    test_errors(m);
    test_background(m);
    test_truncate(m);
    xpi_model_free(m);
  }
  test_request_threads(tf);
  test_request_prefix_option(tf);
  cJSON_Delete(g);
  free(gpath);
  free(tf);
  return xpi_test_done();
}
