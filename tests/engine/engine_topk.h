/* Device top-k sampling in the engine against whole-row readback (device_topk = 0), shared by
 * tests/engine/test_engine.c (CPU) and tests/xpu/test_xpu_engine.c (xpu:0, decode steps replayed):
 * - one batch of sampled sequences with their own options and seeds (top_k 1..256 with temperatures that make
 *   ties by division, top_p, min_p, logprobs; a greedy one with logprobs; and two the device top-k cannot
 *   serve: a repetition penalty, top_p without top_k; and one whose temperature's division overflows, so every
 *   draw is left to the whole row, read in the same step) gives the same ids either way, and the same top
 *   logprob ids, with logprobs within 1e-6 relative (1e-6 absolute below 1: the device's normaliser is an f32
 *   max and an f32 sum of exp, accurate to a few ulps, where the whole row's is summed in double);
 * - a sampled sequence with top_k = 40 reads back 8 (40 + 1) + 8 bytes a decode step (ids, values, the
 *   normaliser), not 4 vocab (the engine's readback_bytes; the caller checks the backend's own count too), and
 *   an undecided one 4 vocab more. */
#ifndef XPI_TEST_ENGINE_TOPK_H
#define XPI_TEST_ENGINE_TOPK_H

#include <math.h>
#include <string.h>

#include "check.h"
#include "xpuinfer.h"

#define TK_MAXN 16
#define TK_TOP 4

typedef struct tk_run {
  int32_t ids[TK_MAXN], top_id[TK_MAXN][TK_TOP];
  float lp[TK_MAXN], top_lp[TK_MAXN][TK_TOP];
  int n, n_top, done;
  xpi_status status;
} tk_run;

static int tk_event(const xpi_seq_event *ev, void *user) {
  tk_run *r = user;
  if (ev->token) {
    if (r->n < TK_MAXN) {
      r->ids[r->n] = ev->token->id;
      r->lp[r->n] = ev->token->logprob;
      r->n_top = ev->token->n_top < TK_TOP ? ev->token->n_top : TK_TOP;
      for (int j = 0; j < r->n_top; j++) r->top_id[r->n][j] = ev->token->top[j].id, r->top_lp[r->n][j] = ev->token->top[j].logprob;
    }
    r->n++;
  } else {
    r->done = 1;
    r->status = ev->done->status;
  }
  return 0;
}

static xpi_engine *tk_engine(xpi_model *m, int32_t device_topk) {
  xpi_engine_options eo;
  xpi_engine_options_default(&eo);
  eo.kv_pool_tokens = 1024;
  eo.block_size = 16;
  eo.max_seqs = 8;
  eo.step_tokens = 64;
  eo.device_topk = device_topk;
  xpi_engine *e = NULL;
  CHECK_OK(xpi_engine_create(m, &eo, &e));
  return e;
}

static void tk_drive(xpi_engine *e) {
  int32_t pending = 1;
  while (pending > 0 && xpi_engine_step(e, &pending) == XPI_OK) {}
}

static int tk_close(float a, float b) { return fabs((double)a - b) <= 1e-6 * fmax(1.0, fabs((double)b)); }

static void tk_equality(xpi_model *m, const char *what) {
  enum { NP = 9 };
  const int32_t prompts[NP][3] = {{32, 877, 7}, {313, 2897, 286}, {466, 1382, 9}, {1289, 389, 300}, {258, 293, 7},
                                  {32, 313, 466}, {877, 2897, 1382}, {389, 300, 258}, {7, 9, 32}};
  xpi_gen_options go[NP];
  for (int i = 0; i < NP; i++) {
    xpi_gen_options_default(&go[i]);
    go[i].max_new_tokens = TK_MAXN, go[i].ignore_eos = 1, go[i].seed = 500 + (uint64_t)i;
  }
  go[0].temperature = 0.8f, go[0].top_k = 40, go[0].logprobs = 3;
  go[1].temperature = 1.3f, go[1].top_k = 5, go[1].top_p = 0.9f;
  go[2].temperature = 0.7f, go[2].top_k = 20, go[2].min_p = 0.2f, go[2].logprobs = 1;
  go[3].top_k = 1;
  go[4].temperature = 2.5f, go[4].top_k = 256, go[4].top_p = 0.5f, go[4].logprobs = 2;
  go[5].greedy = 1, go[5].logprobs = 4;                                               /* device top-4 */
  go[6].temperature = 0.9f, go[6].top_k = 40, go[6].repetition_penalty = 1.2f;       /* the whole row */
  go[7].temperature = 0.9f, go[7].top_p = 0.8f;                                      /* the whole row */
  go[8].temperature = 1e-45f, go[8].top_k = 40, go[8].logprobs = 1; /* the division overflows: undecided */
  tk_run dev[NP], row[NP];
  uint64_t bytes[2] = {0, 0};
  for (int pass = 0; pass < 2; pass++) {
    tk_run *out = pass ? row : dev;
    memset(out, 0, sizeof dev);
    xpi_engine *e = tk_engine(m, pass ? 0 : 256);
    for (int i = 0; e && i < NP; i++) CHECK_OK(xpi_engine_submit(e, prompts[i], 3, &go[i], tk_event, &out[i], NULL));
    tk_drive(e);
    xpi_engine_stats st = {.struct_size = sizeof st};
    if (e) CHECK_OK(xpi_engine_get_stats(e, &st));
    bytes[pass] = st.readback_bytes;
    xpi_engine_free(e);
  }
  for (int i = 0; i < NP; i++) {
    CHECK(dev[i].done && row[i].done && dev[i].status == XPI_OK && row[i].status == XPI_OK && dev[i].n == TK_MAXN &&
              row[i].n == TK_MAXN, "%s seq %d ended (%d / %d tokens)", what, i, dev[i].n, row[i].n);
    CHECK(!memcmp(dev[i].ids, row[i].ids, sizeof dev[i].ids), "%s seq %d: device top-k ids differ from the whole row's",
          what, i);
    for (int t = 0; t < TK_MAXN && go[i].logprobs > 0; t++) {
      CHECK(tk_close(dev[i].lp[t], row[i].lp[t]), "%s seq %d token %d: logprob %.9g vs %.9g", what, i, t,
            (double)dev[i].lp[t], (double)row[i].lp[t]);
      for (int j = 0; j < dev[i].n_top; j++)
        CHECK(dev[i].top_id[t][j] == row[i].top_id[t][j] && tk_close(dev[i].top_lp[t][j], row[i].top_lp[t][j]),
              "%s seq %d token %d top %d: %d %.9g vs %d %.9g", what, i, t, j, dev[i].top_id[t][j],
              (double)dev[i].top_lp[t][j], row[i].top_id[t][j], (double)row[i].top_lp[t][j]);
    }
  }
  CHECK(bytes[0] < bytes[1] / 2, "%s: %llu bytes read back with device top-k, %llu without", what,
        (unsigned long long)bytes[0], (unsigned long long)bytes[1]);
  printf("%s: %d sampled sequences, device top-k == whole row; %llu vs %llu bytes read back\n", what, NP,
         (unsigned long long)bytes[0], (unsigned long long)bytes[1]);
}

/* Decode steps of one sequence sampled with top_k = 40: 8 * 41 + 8 bytes each by the engine's count and, where
 * backend_bytes is given, by the backend's own count of bytes copied to the host. */
static void tk_readback(xpi_model *m, const char *what, uint64_t (*backend_bytes)(xpi_model *m)) {
  xpi_engine *e = tk_engine(m, 256);
  if (!e) return;
  tk_run r;
  memset(&r, 0, sizeof r);
  const int32_t p[2] = {32, 877};
  xpi_gen_options go;
  xpi_gen_options_default(&go);
  go.temperature = 0.8f, go.top_k = 40, go.seed = 3, go.max_new_tokens = 8, go.ignore_eos = 1;
  CHECK_OK(xpi_engine_submit(e, p, 2, &go, tk_event, &r, NULL));
  CHECK_OK(xpi_engine_step(e, NULL)); /* the prompt */
  const uint64_t want = 8 * (40 + 1) + 8;
  for (int s = 0; s < 4; s++) {
    xpi_engine_stats a = {.struct_size = sizeof a}, b = {.struct_size = sizeof b};
    CHECK_OK(xpi_engine_get_stats(e, &a));
    uint64_t be0 = backend_bytes ? backend_bytes(m) : 0;
    CHECK_OK(xpi_engine_step(e, NULL));
    uint64_t be1 = backend_bytes ? backend_bytes(m) : 0;
    CHECK_OK(xpi_engine_get_stats(e, &b));
    CHECK(b.readback_bytes - a.readback_bytes == want, "%s: a top_k=40 decode step read %llu bytes back (want %llu)",
          what, (unsigned long long)(b.readback_bytes - a.readback_bytes), (unsigned long long)want);
    if (backend_bytes)
      CHECK(be1 - be0 == want, "%s: the backend copied %llu bytes to the host in a top_k=40 decode step (want %llu)",
            what, (unsigned long long)(be1 - be0), (unsigned long long)want);
  }
  tk_drive(e);
  CHECK(r.done && r.status == XPI_OK && r.n == 8, "%s: the top_k=40 sequence ended with %d tokens", what, r.n);
  xpi_engine_free(e);
  /* a temperature whose division overflows (the least subnormal): the top-k leaves the draw undecided and the
   * row comes back as well, in the same step (the whole-row path then decides, as it does without top-k) */
  e = tk_engine(m, 256);
  if (!e) return;
  memset(&r, 0, sizeof r);
  go.temperature = 1e-45f;
  CHECK_OK(xpi_engine_submit(e, p, 2, &go, tk_event, &r, NULL));
  CHECK_OK(xpi_engine_step(e, NULL));
  xpi_engine_stats a = {.struct_size = sizeof a}, b = {.struct_size = sizeof b};
  CHECK_OK(xpi_engine_get_stats(e, &a));
  CHECK_OK(xpi_engine_step(e, NULL));
  CHECK_OK(xpi_engine_get_stats(e, &b));
  xpi_model_info info = {.struct_size = sizeof info};
  CHECK_OK(xpi_model_get_info(m, &info));
  const uint64_t vocab = (uint64_t)info.vocab_size;
  CHECK(b.readback_bytes - a.readback_bytes == want + 4 * vocab, "%s: an undecided top_k=40 step read %llu bytes "
        "back (want %llu)", what, (unsigned long long)(b.readback_bytes - a.readback_bytes),
        (unsigned long long)(want + 4 * vocab));
  tk_drive(e);
  CHECK(r.done && r.status == XPI_OK && r.n == 8, "%s: the undecided sequence ended with %d tokens", what, r.n);
  xpi_engine_free(e);
}

#endif
