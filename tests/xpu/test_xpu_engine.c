/* The engine on xpu:0 (zesim) and over a device map of the three software devices: greedy sequences of
 * mixed prompt lengths decoded in one batch (prefill chunks beside decode steps, decode steps replayed from
 * the recording of their batch-size bucket, padding tokens included) give the ids they give alone, with top
 * log-probabilities within 1e-3; the tinyfortunes goldens' continuations come out in the batch; and a greedy
 * decode step reads back 4 bytes per sequence (the argmax stays on the device); sampled sequences with device
 * top-k give the ids of whole-row readback and read back O(k) bytes a step (engine_topk.h). */
#include <math.h>
#include <string.h>

#include "check.h"
#include "ops/xpu/xpu_backend.h"
#include "xpu_load.h"
#include "api/api_internal.h"
#include "../engine/engine_topk.h"

#define MAXN 48

typedef struct run {
  int32_t ids[MAXN];
  float lp[MAXN];
  int n, done;
  xpi_status status;
} run;

static int on_event(const xpi_seq_event *ev, void *user) {
  run *r = user;
  if (ev->token) {
    if (r->n < MAXN) r->ids[r->n] = ev->token->id, r->lp[r->n] = ev->token->n_top ? ev->token->top[0].logprob : 0;
    r->n++;
  } else {
    r->done = 1;
    r->status = ev->done->status;
  }
  return 0;
}

static void drive(xpi_engine *e) {
  int32_t pending = 1;
  while (pending > 0 && xpi_engine_step(e, &pending) == XPI_OK) {}
}

static xpi_engine *engine(xpi_model *m, int step_tokens) {
  xpi_engine_options eo;
  xpi_engine_options_default(&eo);
  eo.kv_pool_tokens = 1024;
  eo.block_size = 16;
  eo.max_seqs = 8;
  eo.step_tokens = step_tokens;
  xpi_engine *e = NULL;
  CHECK_OK(xpi_engine_create(m, &eo, &e));
  return e;
}

/* The tinyfortunes goldens' prompts plus continuations: 6 sequences of 2..20 tokens. */
static void equality(xpi_model *m, const cJSON *g, const char *what) {
  enum { NP = 6 };
  int32_t prompts[NP][64], lens[NP];
  xpi_gen_options go[NP];
  int np = 0;
  const cJSON *cs;
  cJSON_ArrayForEach(cs, g) {
    if (np == NP) break;
    const cJSON *in = cJSON_GetObjectItem(cs, "input_ids"), *cont = cJSON_GetObjectItem(cs, "greedy_new_ids");
    for (int ext = 0; ext < 2 && np < NP; ext++) {
      int n = cJSON_GetArraySize(in), extra = ext ? 3 + 4 * np : 0;
      if (extra > cJSON_GetArraySize(cont)) extra = cJSON_GetArraySize(cont);
      if (n > 32) n = 32;
      if (extra > 32) extra = 32;
      for (int i = 0; i < n; i++) prompts[np][i] = cJSON_GetArrayItem(in, i)->valueint;
      for (int i = 0; i < extra; i++) prompts[np][n + i] = cJSON_GetArrayItem(cont, i)->valueint;
      lens[np] = n + extra;
      xpi_gen_options_default(&go[np]);
      go[np].greedy = 1, go[np].ignore_eos = 1, go[np].max_new_tokens = 8 + np, go[np].logprobs = np % 2 ? 0 : 2;
      np++;
    }
  }
  run alone[NP], batch[NP];
  memset(alone, 0, sizeof alone);
  memset(batch, 0, sizeof batch);
  for (int i = 0; i < np; i++) {
    xpi_engine *e = engine(m, 256);
    if (e) CHECK_OK(xpi_engine_submit(e, prompts[i], (size_t)lens[i], &go[i], on_event, &alone[i], NULL));
    drive(e);
    xpi_engine_free(e);
  }
  xpi_engine *e = engine(m, 12);
  for (int i = 0; e && i < np; i++) CHECK_OK(xpi_engine_submit(e, prompts[i], (size_t)lens[i], &go[i], on_event, &batch[i], NULL));
  drive(e);
  xpi_engine_free(e);
  for (int i = 0; i < np; i++) {
    CHECK(alone[i].done && batch[i].done && alone[i].status == XPI_OK && batch[i].status == XPI_OK, "%s seq %d ended",
          what, i);
    CHECK(alone[i].n == batch[i].n && !memcmp(alone[i].ids, batch[i].ids, sizeof(int32_t) * (size_t)alone[i].n),
          "%s seq %d: batched ids differ from alone", what, i);
    double worst = 0;
    for (int t = 0; t < alone[i].n && t < MAXN; t++) worst = fmax(worst, fabs(alone[i].lp[t] - batch[i].lp[t]));
    CHECK(worst <= 1e-3, "%s seq %d: logprobs differ by %g", what, i, worst);
  }
  /* the goldens' own continuations (prompts without extension) */
  for (int i = 0; i < np; i += 2) {
    const cJSON *cont = cJSON_GetObjectItem(cJSON_GetArrayItem(g, i / 2), "greedy_new_ids");
    int same = 1;
    for (int t = 0; t < batch[i].n && t < cJSON_GetArraySize(cont); t++)
      same &= batch[i].ids[t] == cJSON_GetArrayItem(cont, t)->valueint;
    CHECK(same, "%s seq %d: batched continuation differs from the golden", what, i);
  }
  printf("%s: %d sequences batched == alone\n", what, np);
}

/* Four greedy sequences decoding together: each step reads back 4 bytes a sequence. */
static void readback(xpi_model *m) {
  xpi_engine *e = engine(m, 64);
  if (!e) return;
  run r[4];
  memset(r, 0, sizeof r);
  const int32_t p[4][2] = {{32, 877}, {313, 2897}, {466, 1382}, {1289, 389}};
  xpi_gen_options go;
  xpi_gen_options_default(&go);
  go.greedy = 1, go.ignore_eos = 1, go.max_new_tokens = 6;
  for (int i = 0; i < 4; i++) CHECK_OK(xpi_engine_submit(e, p[i], 2, &go, on_event, &r[i], NULL));
  CHECK_OK(xpi_engine_step(e, NULL)); /* the prompts */
  xpi_backend *be = m->backends[0];
  uint64_t before = xpi_xpu_bytes_read(be);
  CHECK_OK(xpi_engine_step(e, NULL)); /* a decode step of all four */
  uint64_t after = xpi_xpu_bytes_read(be);
  CHECK(after - before == 4 * sizeof(int32_t), "a greedy decode step of 4 sequences read %llu bytes back",
        (unsigned long long)(after - before));
  drive(e);
  xpi_engine_free(e);
}

static uint64_t xpu_bytes(xpi_model *m) { return xpi_xpu_bytes_read(m->backends[0]); }

int main(void) {
  char *dir = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
  char *gpath = xpi_test_strf("%s/goldens/tinyfortunes.json", xpi_test_env("XPI_TEST_DATA"));
  cJSON *g = xpi_test_load_json(gpath);
  xpi_model *m = NULL;
  int rc = load(dir, "xpu:0", NULL, "sdpa", &m);
  if (rc == 77) return 77;
  if (m) {
    equality(m, g, "xpu:0 sdpa");
    readback(m);
    tk_equality(m, "xpu:0");
    tk_readback(m, "xpu:0", xpu_bytes);
    xpi_model_free(m);
  }
  m = NULL;
  load(dir, "xpu:0", NULL, "flash_attention_2", &m);
  if (m) equality(m, g, "xpu:0 flash_attention_2");
  xpi_model_free(m);
  m = NULL;
  load(dir, "auto", "auto", "sdpa", &m);
  if (m) equality(m, g, "device map over xpu:0-2");
  xpi_model_free(m);
  cJSON_Delete(g);
  free(gpath);
  free(dir);
  return xpi_test_done();
}
