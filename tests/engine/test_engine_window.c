/* The window pool (src/engine/scheduler.c): models with sliding-window layers keep those layers' KV in a second
 * pool where a sequence holds only the blocks of its window. On the tiny transformers models of
 * tests/data/arch_models with a 16-position window (Mistral: every layer slides, so only the window pool holds
 * KV; Gemma 2: every other layer; Gemma 3: 3 of 4):
 * - batched == single: sequences with prompts of 5..90 tokens, several of them longer than the window, each
 *   decoding 120 tokens (far past the window), through the engine in one batch (prefill chunks of 32, longer
 *   than the window, beside decode steps) give exactly the greedy ids of the single-sequence graph path, whose
 *   state keeps every position of every layer (xpi_graph_forward_argmax): a block released too early, a stale
 *   table entry read or a block shared wrongly changes them;
 * - the bound: a sequence decoding far past the window holds at most ceil((window + chunk) / bs) + 1 window
 *   blocks after every step, and two sequences whose windows need 7 blocks at once finish, unpreempted and exact,
 *   in a window pool of 7 blocks while together they span 28 logical blocks (the freed blocks are reused);
 * - prefix cache: a hit needs the window pool's blocks of the window where it ends: hits give the ids of an
 *   engine without a cache, and after the window pool was churned by another prompt (the main pool still holds
 *   the chain) the hit falls back to what both pools hold;
 * - a NaN embedding row at a position whose window blocks later chunks released: the sequence fails alone with
 *   XPI_ERR_NUMERIC (the locator re-runs only what the window still holds), its neighbour gives the single ids;
 * - a session's context cut back (xpi_sched_truncate) keeps its blocks where the new end's window is held and
 *   starts again from the prefix cache where it is not; the logits after the cut equal a fresh request's;
 * - memory (CPU only): at 32k positions, a Gemma-3-like layout (5 of 6 layers sliding, window 1024) and Mistral
 *   (window 4096), random weights made by mkrandmodel (XPI_WINDOW_MODELS): kv_pool_bytes is what the design
 *   predicts, printed against keeping every position.
 * usage: test_engine_window [DEVICE [DEVICE_MAP]]   (cpu by default; xpu:0, or auto auto over two zesim XPUs) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "api/api_internal.h" /* a request's session */
#include "check.h"
#include "engine/engine_internal.h"
#include "model_util.h"

#define MAXG 256
#define BS 16

static const char *g_device = "cpu", *g_map = NULL;

typedef struct run {
  int32_t ids[MAXG];
  int n, done;
  xpi_seq_result res;
  char error[256];
} run;

static int on_event(const xpi_seq_event *ev, void *user) {
  run *r = user;
  if (ev->token) {
    if (r->n < MAXG) r->ids[r->n] = ev->token->id;
    r->n++;
  } else {
    r->res = *ev->done;
    snprintf(r->error, sizeof r->error, "%s", ev->done->error);
    r->done = 1;
  }
  return 0;
}

/* Greedy ids of the single-sequence graph path (a state that keeps every position of every layer). */
static void ref_greedy(xpi_model *m, const int32_t *prompt, int n, int G, int32_t *out) {
  xpi_graph_state *st = NULL;
  CHECK_OK(xpi_graph_state_create_single(&m->graph, n + G, &st));
  if (!st) return;
  int32_t tok = -1;
  CHECK_OK(xpi_graph_forward_argmax(&m->graph, st, prompt, n, 0, &tok));
  for (int i = 0; i < G; i++) {
    out[i] = tok;
    if (i + 1 < G) CHECK_OK(xpi_graph_forward_argmax(&m->graph, st, &tok, 1, n + i, &tok));
  }
  xpi_graph_state_free(st);
}

static xpi_gen_options greedy(int G, int logprobs) {
  xpi_gen_options go;
  xpi_gen_options_default(&go);
  go.greedy = 1;
  go.ignore_eos = 1;
  go.max_new_tokens = G;
  go.logprobs = logprobs; /* 0: the device's argmax; > 0: the host's row */
  return go;
}

static void check_ids(const char *what, const run *r, const int32_t *want, int G) {
  CHECK(r->done && r->res.status == XPI_OK, "%s: done %d: %s", what, r->done, r->error);
  int bad = -1;
  for (int i = 0; i < G && i < r->n && bad < 0; i++)
    if (r->ids[i] != want[i]) bad = i;
  CHECK(r->n == G && bad < 0, "%s: %d ids, first difference at %d (%d vs %d)", what, r->n, bad,
        bad >= 0 ? r->ids[bad] : 0, bad >= 0 ? want[bad] : 0);
}

#define MAX_STEPS 4000 /* a sequence that can never get its blocks shows as unfinished */

static int32_t bound_blocks(int32_t window, int32_t chunk) { return (window + chunk + BS - 1) / BS + 1; }

/* ------------------------------------------------------------------ batched == single, past the window */

enum { NP = 5, G = 120 };

static void make_prompts(const cJSON *mj, int32_t prompts[NP][96], int lens[NP]) {
  int np = 0;
  const cJSON *cs;
  cJSON_ArrayForEach(cs, cJSON_GetObjectItem(mj, "cases")) { /* 5, 25 and 44 tokens */
    const cJSON *in = cJSON_GetObjectItem(cs, "input_ids");
    lens[np] = cJSON_GetArraySize(in);
    for (int i = 0; i < lens[np]; i++) prompts[np][i] = cJSON_GetArrayItem(in, i)->valueint;
    np++;
  }
  for (; np < NP; np++) { /* and 60, 90 */
    lens[np] = np == 3 ? 60 : 90;
    for (int i = 0; i < lens[np]; i++) prompts[np][i] = (int32_t)((i * 131 + np * 17 + 5) % 3000) + 10;
  }
}

static void test_batched(xpi_model *m, const char *name, const cJSON *mj) {
  int32_t prompts[NP][96], want[NP][G];
  int lens[NP];
  make_prompts(mj, prompts, lens);
  for (int i = 0; i < NP; i++) ref_greedy(m, prompts[i], lens[i], G, want[i]);
  xpi_engine_options eo;
  xpi_engine_options_default(&eo);
  eo.block_size = BS;
  eo.step_tokens = 32; /* prefill chunks of 32: longer than the window */
  eo.max_seqs = 8;
  eo.kv_pool_tokens = 2048;
  xpi_engine *e = NULL;
  CHECK_OK(xpi_engine_create(m, &eo, &e));
  if (!e) return;
  xpi_engine_stats st = {.struct_size = sizeof st};
  xpi_engine_get_stats(e, &st);
  CHECK(st.window == 16 && st.kv_window_blocks_total > 0, "%s: window %d, %d window blocks", name, st.window,
        st.kv_window_blocks_total);
  run r[NP];
  memset(r, 0, sizeof r);
  for (int i = 0; i < NP; i++) {
    xpi_gen_options go = greedy(G, i % 2);
    CHECK_OK(xpi_engine_submit(e, prompts[i], (size_t)lens[i], &go, on_event, &r[i], NULL));
  }
  int32_t pending = 1, most = 0, max_running = 0;
  for (int guard = 0; pending > 0 && guard < MAX_STEPS; guard++) {
    if (xpi_engine_step(e, &pending) != XPI_OK) break;
    xpi_engine_get_stats(e, &st);
    most = st.kv_window_blocks_used > most ? st.kv_window_blocks_used : most;
    max_running = st.running > max_running ? st.running : max_running;
  }
  for (int i = 0; i < NP; i++) {
    char *what = xpi_test_strf("%s on %s: sequence %d (prompt %d) batched vs single", name, g_device, i, lens[i]);
    check_ids(what, &r[i], want[i], G);
    free(what);
  }
  /* every running sequence holds at most its window's blocks after a step (plus the cached ones, none used) */
  CHECK(max_running >= 4 && most <= max_running * bound_blocks(16, 32),
        "%s: at most %d window blocks held by %d sequences", name, most, max_running);
  printf("%s on %s: %d sequences (prompts %d..%d, %d tokens each) batched == single; window pool %d blocks, at most "
         "%d held (the whole context would be %d)\n",
         name, g_device, NP, lens[0], lens[NP - 1], G, st.kv_window_blocks_total, most, (90 + G) / BS * NP);
  xpi_engine_free(e);
}

/* ------------------------------------------------------------------ the bound, and reuse of freed blocks */

static void test_bound(xpi_model *m, const char *name) {
  enum { GL = 200 };
  int32_t p[2][20], want[2][GL];
  for (int s = 0; s < 2; s++) {
    for (int i = 0; i < 20; i++) p[s][i] = (int32_t)((i * 71 + s * 313 + 3) % 3000) + 10;
    ref_greedy(m, p[s], 20, GL, want[s]);
  }
  xpi_engine_options eo;
  xpi_engine_options_default(&eo);
  eo.block_size = BS;
  eo.step_tokens = BS;
  eo.max_seqs = 2;
  eo.kv_pool_tokens = 1024;
  eo.prefix_caching = 0; /* released blocks go back empty: "used" is what the sequences hold */
  xpi_engine *e = NULL;
  CHECK_OK(xpi_engine_create(m, &eo, &e));
  if (!e) return;
  xpi_engine_stats st = {.struct_size = sizeof st};
  xpi_engine_get_stats(e, &st);
  /* 2 sequences x (ceil(16 / 16) + 2) + ceil(16 / 16): engine.c's window_blocks */
  CHECK(st.kv_window_blocks_total == 7, "%s: window pool of %d blocks", name, st.kv_window_blocks_total);
  /* one sequence alone, 220 positions (14 blocks) */
  run a = {0};
  xpi_gen_options go = greedy(GL, 0);
  CHECK_OK(xpi_engine_submit(e, p[0], 20, &go, on_event, &a, NULL));
  int32_t pending = 1, most = 0, steps = 0;
  for (int guard = 0; pending > 0 && guard < MAX_STEPS; guard++) {
    if (xpi_engine_step(e, &pending) != XPI_OK) break;
    xpi_engine_get_stats(e, &st);
    most = st.kv_window_blocks_used > most ? st.kv_window_blocks_used : most;
    steps++;
  }
  check_ids("one sequence far past the window", &a, want[0], GL);
  CHECK(most <= bound_blocks(16, BS), "%s: the sequence held up to %d window blocks (bound %d) over %d steps", name,
        most, bound_blocks(16, BS), steps);
  /* two at once: 28 logical blocks through a window pool of 7, no preemption */
  run b[2];
  memset(b, 0, sizeof b);
  const uint64_t pre = st.preemptions;
  for (int s = 0; s < 2; s++) CHECK_OK(xpi_engine_submit(e, p[s], 20, &go, on_event, &b[s], NULL));
  xpi_test_drive(e, MAX_STEPS);
  xpi_engine_get_stats(e, &st);
  for (int s = 0; s < 2; s++) check_ids("two sequences sharing the window pool", &b[s], want[s], GL);
  CHECK(st.preemptions == pre && st.kv_window_blocks_used == 0, "%s: %llu preemptions, %d window blocks left held",
        name, (unsigned long long)(st.preemptions - pre), st.kv_window_blocks_used);
  printf("%s on %s: a sequence of %d positions held <= %d window blocks (bound %d); two shared a pool of %d\n", name,
         g_device, 20 + GL, most, bound_blocks(16, BS), st.kv_window_blocks_total);
  xpi_engine_free(e);
}

/* ------------------------------------------------------------------ prefix cache */

static void test_prefix(xpi_model *m, const char *name) {
  enum { SYS = 100, GP = 24 };
  int32_t a[SYS + 2], b[SYS + 2], c[SYS + 2], other[200], want[GP];
  for (int i = 0; i < SYS; i++) a[i] = b[i] = c[i] = (int32_t)((i * 37 + 11) % 3000) + 10;
  for (int i = 0; i < 200; i++) other[i] = (int32_t)((i * 53 + 5) % 3000) + 10;
  a[SYS] = 100, a[SYS + 1] = 7, b[SYS] = 200, b[SYS + 1] = 9, c[SYS] = 300, c[SYS + 1] = 4;
  xpi_engine_options eo;
  xpi_engine_options_default(&eo);
  eo.block_size = BS;
  eo.step_tokens = BS;
  eo.max_seqs = 1; /* a window pool of 4 blocks: another prompt churns it */
  eo.kv_pool_tokens = 2048;
  xpi_engine *e = NULL;
  CHECK_OK(xpi_engine_create(m, &eo, &e));
  if (!e) return;
  xpi_gen_options go = greedy(GP, 1);
  run r1 = {0}, r2 = {0}, r3 = {0}, r4 = {0};
  CHECK_OK(xpi_engine_submit(e, a, SYS + 2, &go, on_event, &r1, NULL));
  xpi_test_drive(e, MAX_STEPS);
  CHECK_OK(xpi_engine_submit(e, b, SYS + 2, &go, on_event, &r2, NULL));
  xpi_test_drive(e, MAX_STEPS);
  ref_greedy(m, b, SYS + 2, GP, want);
  check_ids("prefix-cached (window resident) vs single", &r2, want, GP);
  /* the hit ends at the last full block of the shared prefix (96), whose window (blocks 5..5) r1 left cached */
  CHECK(r2.res.n_cached_tokens == 96, "%s: %d tokens from the prefix cache (want 96)", name, r2.res.n_cached_tokens);
  /* another prompt cycles the window pool; the main pool keeps the system prompt's chain */
  CHECK_OK(xpi_engine_submit(e, other, 200, &go, on_event, &r3, NULL));
  xpi_test_drive(e, MAX_STEPS);
  xpi_engine_stats st = {.struct_size = sizeof st};
  xpi_engine_get_stats(e, &st);
  CHECK_OK(xpi_engine_submit(e, c, SYS + 2, &go, on_event, &r4, NULL));
  xpi_test_drive(e, MAX_STEPS);
  ref_greedy(m, c, SYS + 2, GP, want);
  check_ids("prefix cache after the window pool was churned vs single", &r4, want, GP);
  /* the chain (6 blocks) is still in the main pool (127 blocks), not the window: no usable hit */
  CHECK(st.kv_blocks_cached >= 6 && r4.res.n_cached_tokens == 0,
        "%s: %d main-pool blocks cached, %d tokens taken from the cache (want 0: the window is gone)", name,
        st.kv_blocks_cached, r4.res.n_cached_tokens);
  printf("%s on %s: prefix hits %d (window resident) and %d (window evicted, chain cached) give the uncached ids\n",
         name, g_device, r2.res.n_cached_tokens, r4.res.n_cached_tokens);
  xpi_engine_free(e);
}

/* ------------------------------------------------------------------ a session's context cut back */

/* Max |a - b| over n floats. */
static double max_diff(const float *a, const float *b, size_t n) {
  double w = 0;
  for (size_t i = 0; i < n; i++) w = fmax(w, fabs((double)a[i] - b[i]));
  return w;
}

/* A request's context cut back (xpi_sched_truncate): where the new end's window is still held the blocks stay
 * (cut to 99 of 100); where its window was released (cut to 50) the context starts again from the prefix cache.
 * Either way the logits of what follows equal a fresh request's over the same ids (1e-4: only the batch's
 * summation order differs, ~1e-6 here). */
static void test_truncate(xpi_model *m, const char *name) {
  enum { N = 100, M = 10 };
  int32_t t[N + M];
  for (int i = 0; i < N + M; i++) t[i] = (int32_t)((i * 23 + 9) % 2000) + 10;
  const int32_t V = m->cfg.vocab_size;
  float *la = malloc(sizeof(float) * (size_t)V * M), *lf = malloc(sizeof(float) * (size_t)V * (N + M));
  xpi_request *a = NULL, *f = NULL;
  CHECK_OK(xpi_request_create(m, NULL, &a));
  CHECK_OK(xpi_request_create(m, NULL, &f));
  if (a && f && la && lf) {
    CHECK_OK(xpi_request_eval(f, t, N + M, 1, lf, (size_t)V * (N + M)));
    const int32_t cuts[2] = {99, 50};
    for (int k = 0; k < 2; k++) {
      CHECK_OK(xpi_request_eval(a, t, N, 0, NULL, 0));
      xpi_engine_lock(a->e);
      const int32_t w_lo = a->seq->w_lo;
      xpi_sched_truncate(a->e, a->seq, cuts[k]);
      const int32_t computed = a->seq->n_computed, held = a->seq->n_blocks;
      xpi_engine_unlock(a->e);
      CHECK(w_lo > 0 && (k == 0 ? computed == cuts[k] && held > 0 : computed == 0 && held == 0),
            "%s: cut to %d (window blocks from %d released): %d computed, %d blocks held", name, cuts[k], w_lo,
            computed, held);
      CHECK_OK(xpi_request_eval(a, t + cuts[k], M, 1, la, (size_t)V * M));
      double w = max_diff(la, lf + (size_t)V * (size_t)cuts[k], (size_t)V * M);
      CHECK(w < 1e-4, "%s: after the cut to %d the logits differ from a fresh request's by %g", name, cuts[k], w);
      xpi_request_reset(a);
    }
  }
  xpi_request_free(a);
  xpi_request_free(f);
  free(la);
  free(lf);
}

/* ------------------------------------------------------------------ NaN beyond the released blocks */

/* A prompt whose NaN token sits where later chunks have released the window blocks before it: the sequence
 * fails alone with XPI_ERR_NUMERIC (the locator re-runs only positions whose window is still held: a re-run from
 * the prompt's start would write through released, -1 table entries), and the other sequence is unharmed. */
static void test_numeric(void) {
  enum { BAD = 1234, GN = 40 };
  char *src = xpi_test_strf("%s/arch_models/tiny-mistral", xpi_test_env("XPI_TEST_DATA"));
  char *dir = xpi_test_nan_row_model(src, BAD);
  free(src);
  xpi_model *m = xpi_test_load(dir, g_device, g_map, NULL, NULL);
  if (m) {
    int32_t pa[70], pb[50], want[GN];
    for (int i = 0; i < 70; i++) pa[i] = (int32_t)((i * 29 + 7) % 1000) + 10;
    for (int i = 0; i < 50; i++) pb[i] = (int32_t)((i * 41 + 3) % 1000) + 10;
    pa[60] = BAD;
    ref_greedy(m, pb, 50, GN, want);
    xpi_engine_options eo;
    xpi_engine_options_default(&eo);
    eo.block_size = BS;
    eo.step_tokens = BS; /* the prompt in chunks of 16: blocks 0-2 are released before its last chunk */
    eo.kv_pool_tokens = 1024;
    xpi_engine *e = NULL;
    CHECK_OK(xpi_engine_create(m, &eo, &e));
    run ra = {0}, rb = {0};
    xpi_gen_options ga = greedy(GN, 0), gb = greedy(GN, 1);
    if (e) {
      CHECK_OK(xpi_engine_submit(e, pa, 70, &ga, on_event, &ra, NULL));
      CHECK_OK(xpi_engine_submit(e, pb, 50, &gb, on_event, &rb, NULL));
      xpi_test_drive(e, MAX_STEPS);
      CHECK(ra.done && ra.res.status == XPI_ERR_NUMERIC && strstr(ra.error, "NaN") && ra.n == 0,
            "the NaN sequence on %s: status %s, '%s'", g_device, xpi_status_name(ra.res.status), ra.error);
      check_ids("beside a NaN sequence", &rb, want, GN);
      printf("NaN at position 60 of 70 (window 16) on %s: %s\n", g_device, ra.error);
      xpi_engine_free(e);
    }
    xpi_model_free(m);
  }
  free(dir);
}

/* ------------------------------------------------------------------ memory at 32k */

static void test_memory(const char *dir, const char *what, double min_ratio) {
  xpi_model *m = xpi_test_load(dir, "cpu", NULL, NULL, NULL);
  if (!m) return;
  enum { CTX = 32768 };
  xpi_engine_options eo;
  xpi_engine_options_default(&eo);
  eo.max_seqs = 1;
  eo.max_seq_len = CTX;
  eo.kv_pool_tokens = CTX + 32; /* CTX positions and the spare block */
  xpi_engine *e = NULL;
  CHECK_OK(xpi_engine_create(m, &eo, &e));
  if (e) {
    xpi_engine_stats st = {.struct_size = sizeof st};
    xpi_engine_get_stats(e, &st);
    uint64_t full = 0, win = 0;
    xpi_graph_kv_bytes_split(&m->graph, &full, &win);
    const uint64_t every = (full + win) * (uint64_t)(CTX + 32);
    /* the design: the global layers keep CTX positions, the sliding ones 1 x (ceil(window / 32) + 2) +
     * ceil(512 / 32) blocks, each pool with its spare block */
    const uint64_t wb = (uint64_t)(st.window + 31) / 32 + 2 + 16 + 1;
    const uint64_t predicted = full * (uint64_t)(CTX + 32) + win * wb * 32;
    CHECK(st.kv_pool_bytes == predicted && st.kv_blocks_total == CTX / 32 && st.kv_window_blocks_total == (int32_t)wb - 1,
          "%s: %llu KV bytes, predicted %llu (%d + %d blocks)", what, (unsigned long long)st.kv_pool_bytes,
          (unsigned long long)predicted, st.kv_blocks_total, st.kv_window_blocks_total);
    const double ratio = (double)every / (double)st.kv_pool_bytes;
    CHECK(ratio >= min_ratio, "%s: %.2fx smaller", what, ratio);
    printf("memory: %s, one sequence of %d positions: KV %.2f MiB (window pool %d blocks of 32 + the global layers' "
           "%d) vs %.2f MiB keeping every position: %.2fx smaller\n",
           what, CTX, (double)st.kv_pool_bytes / 1048576.0, st.kv_window_blocks_total, st.kv_blocks_total,
           (double)every / 1048576.0, ratio);
    /* and the sequence fits: 32k positions are accepted */
    int32_t p[4] = {11, 12, 13, 14};
    xpi_gen_options go = greedy(CTX - 4, 0);
    run r = {0};
    uint64_t id = 0;
    CHECK_OK(xpi_engine_submit(e, p, 4, &go, on_event, &r, &id));
    if (id) xpi_engine_cancel(e, id);
    xpi_engine_free(e);
  }
  xpi_model_free(m);
}

int main(int argc, char **argv) {
  if (argc > 1) g_device = argv[1];
  if (argc > 2) g_map = argv[2];
  const char *data = xpi_test_env("XPI_TEST_DATA");
  char *gpath = xpi_test_strf("%s/arch_models/goldens.json", data);
  cJSON *goldens = xpi_test_load_json(gpath);
  const cJSON *models = cJSON_GetObjectItem(goldens, "models");
  const char *names[] = {"tiny-mistral", "tiny-gemma3_text", "tiny-gemma2"};
  for (int i = 0; i < 3; i++) {
    char *dir = xpi_test_strf("%s/arch_models/%s", data, names[i]);
    xpi_model *m = xpi_test_load(dir, g_device, g_map, NULL, NULL);
    if (m) {
      test_batched(m, names[i], cJSON_GetObjectItem(models, names[i]));
#if defined(__SANITIZE_ADDRESS__)
      if (i == 0) /* sanitizer builds (-O0): the bound and the prefix cache on one model */
#endif
      {
        test_bound(m, names[i]);
        test_prefix(m, names[i]);
        test_truncate(m, names[i]);
      }
      xpi_model_free(m);
    }
    free(dir);
  }
  test_numeric();
  const char *wm = getenv("XPI_WINDOW_MODELS");
  if (!strcmp(g_device, "cpu") && wm && *wm) {
    char *g3 = xpi_test_strf("%s/gemma3-w1024", wm), *mi = xpi_test_strf("%s/mistral-w4096", wm);
    test_memory(g3, "Gemma-3-like (5 of 6 layers sliding, window 1024)", 4.5);
    test_memory(mi, "Mistral (every layer sliding, window 4096)", 6.5);
    free(g3);
    free(mi);
  }
  cJSON_Delete(goldens);
  free(gpath);
  return xpi_test_done();
}
