/* The generation loop and the model/request API on the bundled tinyfortunes model: eos, stop strings,
 * callback stop, the context-length check (before any work), n_ctx overflow, bad options with clear
 * messages, loader errors for a config that disagrees with the weights, and 3 threads sharing one model. */
#include <pthread.h>
#include <unistd.h>

#include <math.h>

#include "check.h"

static char *g_dir;

typedef struct collect { int32_t ids[64]; int n, stop_after; char text[4096]; size_t len; } collect;

static int on_tok(const xpi_token_event *ev, void *user) {
  collect *c = user;
  if (c->n < 64) c->ids[c->n] = ev->id;
  c->n++;
  if (c->len + ev->text_len < sizeof c->text) {
    memcpy(c->text + c->len, ev->text, ev->text_len);
    c->len += ev->text_len;
    c->text[c->len] = 0;
  }
  return c->stop_after && c->n >= c->stop_after;
}

static xpi_model *load(const char *attn) {
  xpi_model_options o;
  xpi_model_options_default(&o);
  o.device = "cpu";
  o.n_threads = 2;
  o.attn_implementation = attn;
  xpi_model *m = NULL;
  CHECK_OK(xpi_model_load(g_dir, &o, &m));
  return m;
}

/* "A computer" -> " is like a raisin, not a stain you can.<|endoftext|>" (golden, 16 tokens, eos 4093) */
static const int32_t k_prompt[] = {32, 877};

static void test_stops(xpi_model *m) {
  xpi_request *r = NULL;
  CHECK_OK(xpi_request_create(m, NULL, &r));
  xpi_gen_options go;
  xpi_gen_options_default(&go);
  go.greedy = 1;
  go.max_new_tokens = 40;
  collect c = {0};
  xpi_gen_result res = {.struct_size = sizeof res};
  CHECK_OK(xpi_request_generate(r, k_prompt, 2, &go, on_tok, &c, &res));
  CHECK(res.finish_reason == XPI_FINISH_STOP && res.n_generated == 16 && c.n == 16 && c.ids[15] == 4093,
        "eos: reason %d, %d tokens", res.finish_reason, res.n_generated);
  CHECK(strcmp(c.text, " is like a raisin, not a stain you can.") == 0, "eos text never streamed: '%s'", c.text);
  CHECK(res.n_prompt_tokens == 2 && xpi_request_n_past(r) == 2 + 15, "n_past %d", xpi_request_n_past(r));

  /* ignore_eos: runs to max_new_tokens */
  xpi_request_reset(r);
  go.ignore_eos = 1;
  go.max_new_tokens = 20;
  memset(&c, 0, sizeof c);
  CHECK_OK(xpi_request_generate(r, k_prompt, 2, &go, on_tok, &c, &res));
  CHECK(res.finish_reason == XPI_FINISH_LENGTH && res.n_generated == 20, "ignore_eos: %d tokens", res.n_generated);

  /* stop string: ends on the token that completes it; excluded from the text by default, kept with
   * include_stop; the ids keep the token that completed it */
  const char *stops[] = {"zzz", "rais"};
  go.ignore_eos = 0;
  go.stop_strings = stops;
  go.n_stop_strings = 2;
  for (int include = 0; include < 2; include++) {
    xpi_request_reset(r);
    go.include_stop = include;
    memset(&c, 0, sizeof c);
    CHECK_OK(xpi_request_generate(r, k_prompt, 2, &go, on_tok, &c, &res));
    CHECK(res.finish_reason == XPI_FINISH_STOP && res.n_generated == 6 && c.n == 6 && c.ids[5] == 267 &&
          strcmp(c.text, include ? " is like a rais" : " is like a ") == 0, "stop string (include %d): '%s' (%d tokens)",
          include, c.text, res.n_generated);
  }
  go.include_stop = 0;

  /* callback stop: cancelled */
  xpi_request_reset(r);
  go.n_stop_strings = 0;
  memset(&c, 0, sizeof c);
  c.stop_after = 3;
  CHECK_OK(xpi_request_generate(r, k_prompt, 2, &go, on_tok, &c, &res));
  CHECK(res.finish_reason == XPI_FINISH_CANCELLED && res.n_generated == 3 && c.n == 3, "callback stop: %d, reason %d",
        res.n_generated, res.finish_reason);

  /* a caller built against an older header (no include_stop): the missing fields keep their defaults */
  xpi_request_reset(r);
  xpi_gen_options old = go;
  old.struct_size = offsetof(xpi_gen_options, include_stop);
  old.include_stop = 1; /* beyond the caller's struct: must not be read */
  old.stop_strings = stops;
  old.n_stop_strings = 2;
  memset(&c, 0, sizeof c);
  CHECK_OK(xpi_request_generate(r, k_prompt, 2, &old, on_tok, &c, &res));
  CHECK(strcmp(c.text, " is like a ") == 0, "old struct_size: include_stop read past the struct: '%s'", c.text);
  old.struct_size = 0;
  CHECK_ERR(xpi_request_generate(r, k_prompt, 2, &old, on_tok, &c, &res), XPI_ERR_INVALID_ARGUMENT, "struct_size");

  /* logprobs: of the raw logits, the greedy token first */
  xpi_request_reset(r);
  go.logprobs = 4;
  go.max_new_tokens = 2;
  CHECK_OK(xpi_request_generate(r, k_prompt, 2, &go, NULL, NULL, &res));
  xpi_request_free(r);
}

static void test_context(xpi_model *m) {
  xpi_request_options ro;
  xpi_request_options_default(&ro);
  ro.n_ctx = 16;
  xpi_request *r = NULL;
  CHECK_OK(xpi_request_create(m, &ro, &r));
  xpi_gen_options go;
  xpi_gen_options_default(&go);
  go.greedy = 1;
  go.max_new_tokens = 15; /* 2 + 14 positions = 16: fits exactly */
  xpi_gen_result res = {.struct_size = sizeof res};
  CHECK_OK(xpi_request_generate(r, k_prompt, 2, &go, NULL, NULL, &res));
  xpi_request_reset(r);
  go.max_new_tokens = 16; /* one too many: refused before any work */
  CHECK_ERR(xpi_request_generate(r, k_prompt, 2, &go, NULL, NULL, &res), XPI_ERR_CONTEXT_LENGTH, "the context holds 16");
  CHECK(xpi_request_n_past(r) == 0, "nothing evaluated");
  int32_t ids[17] = {0};
  CHECK_ERR(xpi_request_eval(r, ids, 17, 0, NULL, 0), XPI_ERR_CONTEXT_LENGTH, "do not fit");
  CHECK_OK(xpi_request_eval(r, ids, 16, 0, NULL, 0));
  CHECK_ERR(xpi_request_eval(r, ids, 1, 0, NULL, 0), XPI_ERR_CONTEXT_LENGTH, "16 of the context's 16");
  int32_t bad = 4096;
  xpi_request_reset(r);
  CHECK_ERR(xpi_request_eval(r, &bad, 1, 0, NULL, 0), XPI_ERR_INVALID_ARGUMENT, "outside the vocabulary");
  float small[10];
  CHECK_ERR(xpi_request_eval(r, k_prompt, 2, 0, small, 10), XPI_ERR_INVALID_ARGUMENT, "logits holds 10 floats");
  CHECK_ERR(xpi_request_generate(r, k_prompt, 0, &go, NULL, NULL, &res), XPI_ERR_INVALID_ARGUMENT, "no tokens");
  xpi_request_free(r);
  ro.n_ctx = 1025;
  CHECK_ERR(xpi_request_create(m, &ro, &r), XPI_ERR_INVALID_ARGUMENT, "max_position_embeddings");
}

static void test_bad_options(void) {
  xpi_model_options o;
  xpi_model *m = NULL;
  xpi_model_options_default(&o);
  o.attn_implementation = "flash";
  CHECK_ERR(xpi_model_load(g_dir, &o, &m), XPI_ERR_INVALID_ARGUMENT, "valid: sdpa, eager, flash_attention_2");
  xpi_model_options_default(&o);
  o.device = "gpu";
  CHECK_ERR(xpi_model_load(g_dir, &o, &m), XPI_ERR_INVALID_ARGUMENT, "unknown device 'gpu'");
  xpi_model_options_default(&o);
  o.device = "xpu:7";
  xpi_status s = xpi_model_load(g_dir, &o, &m);
  CHECK(s != XPI_OK && m == NULL && strstr(xpi_last_error(), "xpu"), "xpu:7: %s", xpi_last_error());
  xpi_model_options_default(&o);
  o.dtype = "f8";
  CHECK_ERR(xpi_model_load(g_dir, &o, &m), XPI_ERR_INVALID_ARGUMENT, "unknown dtype 'f8'");
  xpi_model_options_default(&o);
  o.quant = "q3";
  CHECK_ERR(xpi_model_load(g_dir, &o, &m), XPI_ERR_INVALID_ARGUMENT, "q8, q4");
  CHECK_ERR(xpi_model_load("/nonexistent/model", NULL, &m), XPI_ERR_NOT_FOUND, "/nonexistent/model");
}

/* A config that disagrees with the weights: the error names the tensor and both shapes. */
static void test_shape_mismatch(void) {
  char *tmp = xpi_test_tmpdir("shape");
  const char *files[] = {"tokenizer.json", "tokenizer_config.json", "model.safetensors"};
  for (int i = 0; i < 3; i++) {
    char *src = xpi_test_strf("%s/%s", g_dir, files[i]), *dst = xpi_test_strf("%s/%s", tmp, files[i]);
    CHECK(symlink(src, dst) == 0, "symlink %s", dst);
    free(src);
    free(dst);
  }
  static const char cfg[] =
    "{\"architectures\": [\"Qwen3ForCausalLM\"], \"model_type\": \"qwen3\", \"hidden_size\": 256,"
    " \"intermediate_size\": 512, \"num_hidden_layers\": 4, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
    " \"head_dim\": 64, \"vocab_size\": 4096, \"max_position_embeddings\": 1024, \"rms_norm_eps\": 1e-6,"
    " \"rope_theta\": 10000.0, \"tie_word_embeddings\": true, \"eos_token_id\": 4093}";
  char *cp = xpi_test_strf("%s/config.json", tmp);
  xpi_test_write_file(cp, cfg, sizeof cfg - 1);
  xpi_model *m = NULL;
  CHECK_ERR(xpi_model_load(tmp, NULL, &m), XPI_ERR_FORMAT, "'model.layers.0.mlp.gate_proj.weight' has shape [768, 256], the config implies [512, 256]");
  /* one layer more than the checkpoint has: the missing tensor is named */
  char *cfg2 = xpi_test_strf("%.*s5%s", (int)(strstr(cfg, "\"num_hidden_layers\": 4") - cfg) + 21, cfg,
                             strstr(cfg, "\"num_hidden_layers\": 4") + 22);
  char *cfg3 = xpi_test_strf("%.*s768%s", (int)(strstr(cfg2, "512") - cfg2), cfg2, strstr(cfg2, "512") + 3);
  xpi_test_write_file(cp, cfg3, strlen(cfg3));
  CHECK_ERR(xpi_model_load(tmp, NULL, &m), XPI_ERR_FORMAT, "tensor 'model.layers.4.input_layernorm.weight' is missing");
  free(cfg2);
  free(cfg3);
  free(cp);
  free(tmp);
}

/* Three threads generate on one model at once; each must equal its single-thread result. */
typedef struct job { xpi_model *m; int32_t prompt[2]; uint64_t seed; collect out; xpi_status s; } job;

static void *gen_thread(void *arg) {
  job *j = arg;
  xpi_request *r = NULL;
  j->s = xpi_request_create(j->m, NULL, &r);
  if (j->s != XPI_OK) return NULL;
  xpi_gen_options go;
  xpi_gen_options_default(&go);
  go.max_new_tokens = 24;
  go.temperature = 0.8f;
  go.top_k = 40;
  go.seed = j->seed;
  go.ignore_eos = 1;
  xpi_gen_result res = {.struct_size = sizeof res};
  j->s = xpi_request_generate(r, j->prompt, 2, &go, on_tok, &j->out, &res);
  xpi_request_free(r);
  return NULL;
}

static void test_threads(xpi_model *m) {
  job solo[3], par[3];
  pthread_t th[3];
  for (int i = 0; i < 3; i++) {
    memset(&solo[i], 0, sizeof solo[i]);
    solo[i].m = m, solo[i].prompt[0] = 32 + i, solo[i].prompt[1] = 877, solo[i].seed = 100 + (uint64_t)i;
    gen_thread(&solo[i]);
    CHECK(solo[i].s == XPI_OK && solo[i].out.n == 24, "solo %d", i);
    par[i] = solo[i];
    memset(&par[i].out, 0, sizeof par[i].out);
  }
  for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, gen_thread, &par[i]);
  for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 3; i++)
    CHECK(par[i].s == XPI_OK && par[i].out.n == 24 && !memcmp(par[i].out.ids, solo[i].out.ids, sizeof solo[i].out.ids),
          "thread %d differs from its single-thread run", i);
  CHECK(memcmp(solo[0].out.ids, solo[1].out.ids, sizeof solo[0].out.ids) != 0, "different prompts/seeds differ");
}

/* KV cache in bf16/f16 and the unfused reference path still give the golden greedy continuation of
 * "A computer" (its smallest golden margin is 0.11; bf16 KV rounding moves these logits by ~1e-2 at most). */
static void test_variants(void) {
  const int32_t want[16] = {300, 541, 258, 381, 64, 267, 259, 11, 363, 258, 346, 391, 299, 399, 13, 4093};
  const char *kv[] = {"bf16", "f16", NULL};
  for (int i = 0; i < 3; i++) {
    xpi_model_options o;
    xpi_model_options_default(&o);
    o.device = "cpu";
    o.kv_dtype = kv[i];
    o.use_kernels = kv[i] != NULL;
    xpi_model *m = NULL;
    CHECK_OK(xpi_model_load(g_dir, &o, &m));
    if (!m) continue;
    xpi_request *r = NULL;
    CHECK_OK(xpi_request_create(m, NULL, &r));
    xpi_gen_options go;
    xpi_gen_options_default(&go);
    go.greedy = 1;
    go.max_new_tokens = 20;
    collect c = {0};
    xpi_gen_result res = {.struct_size = sizeof res};
    CHECK_OK(xpi_request_generate(r, k_prompt, 2, &go, on_tok, &c, &res));
    CHECK(c.n == 16 && !memcmp(c.ids, want, sizeof want), "kv %s / use_kernels %d: greedy ids differ",
          kv[i] ? kv[i] : "f32", o.use_kernels);
    xpi_request_free(r);
    xpi_model_free(m);
  }
  xpi_model_options o;
  xpi_model_options_default(&o);
  o.kv_dtype = "q8";
  xpi_model *m = NULL;
  CHECK_ERR(xpi_model_load(g_dir, &o, &m), XPI_ERR_INVALID_ARGUMENT, "unknown kv_dtype 'q8'");
}

/* Long prompts go through the graph in chunks (256 tokens) and logits in blocks of rows: 300 tokens in one
 * call must match the same tokens fed in pieces of 1, 99 and 200. Tolerance 1e-4: the same f32 math, only
 * the batch size differs (a faster GEMM sums in another order than its GEMV: measured 1.6e-5 with the AVX-512
 * kernels, 0 with the scalar ones). */
static void test_chunks(xpi_model *m) {
  enum { N = 300, V = 4096 };
  int32_t ids[N];
  for (int i = 0; i < N; i++) ids[i] = (i * 7919 + 13) % 4000;
  float *all = malloc(sizeof(float) * (size_t)N * V), *one = malloc(sizeof(float) * V);
  xpi_request *r = NULL;
  CHECK_OK(xpi_request_create(m, NULL, &r));
  CHECK_OK(xpi_request_eval(r, ids, N, 1, all, (size_t)N * V));
  xpi_request_reset(r);
  const int cuts[4] = {0, 1, 100, N};
  double worst = 0;
  for (int c = 0; c < 3; c++) {
    CHECK_OK(xpi_request_eval(r, ids + cuts[c], (size_t)(cuts[c + 1] - cuts[c]), 0, one, V));
    const float *ref = all + (size_t)(cuts[c + 1] - 1) * V;
    for (int i = 0; i < V; i++) worst = fabs(one[i] - ref[i]) > worst ? fabs(one[i] - ref[i]) : worst;
  }
  printf("chunked vs whole prompt: max |diff| %g\n", worst);
  CHECK(worst <= 1e-4, "chunked vs whole prompt: max |diff| %g", worst);
  CHECK(xpi_request_n_past(r) == N, "n_past %d", xpi_request_n_past(r));
  xpi_request_free(r);
  free(all);
  free(one);
}

typedef struct lpcollect { int32_t ids[32]; float lp[32], top0[32]; int n; char text[1024]; size_t len; } lpcollect;

static int on_lp(const xpi_token_event *ev, void *user) {
  lpcollect *c = user;
  if (c->n < 32) c->ids[c->n] = ev->id, c->lp[c->n] = ev->logprob, c->top0[c->n] = ev->n_top ? ev->top[0].logprob : 1;
  c->n++;
  if (c->len + ev->text_len < sizeof c->text) memcpy(c->text + c->len, ev->text, ev->text_len), c->len += ev->text_len;
  c->text[c->len] = 0;
  return 0;
}

/* xpi_token_event.logprob, the sampled token's log-probability, against the log-softmax (in double) of the raw
 * logits xpi_request_eval gives for the same prefix; tolerance 1e-3: prefill rows against decode steps (the
 * batch size changes the summation order, see test_chunks). And skip_special: with ignore_eos the greedy text
 * runs past <|endoftext|> (4093, a special token at step 15), which is then left out of the text exactly as
 * xpi_detokenize(skip_special = 1) leaves it out (tests/tokenizer checks that one against tokenizers), and a stop
 * string is matched on the text without it. */
static void test_logprob_skip_special(xpi_model *m) {
  enum { V = 4096, NEW = 20 };
  xpi_request *r = NULL;
  CHECK_OK(xpi_request_create(m, NULL, &r));
  xpi_gen_options go;
  xpi_gen_options_default(&go);
  go.temperature = 1.3f;
  go.seed = 5;
  go.logprobs = 2;
  go.max_new_tokens = NEW;
  go.ignore_eos = 1;
  lpcollect c = {0};
  xpi_gen_result res = {.struct_size = sizeof res};
  CHECK_OK(xpi_request_generate(r, k_prompt, 2, &go, on_lp, &c, &res));
  CHECK(c.n == NEW, "%d tokens", c.n);
  int32_t all[2 + NEW];
  memcpy(all, k_prompt, sizeof k_prompt);
  memcpy(all + 2, c.ids, sizeof c.ids[0] * NEW);
  float *lg = malloc(sizeof(float) * (size_t)(2 + NEW) * V);
  xpi_request_reset(r);
  CHECK_OK(xpi_request_eval(r, all, 2 + NEW, 1, lg, (size_t)(2 + NEW) * V));
  double worst = 0;
  int below_top = 0;
  for (int k = 0; k < NEW; k++) {
    const float *row = lg + (size_t)(1 + k) * V; /* the logits that chose token k */
    double mx = -INFINITY, sum = 0;
    for (int i = 0; i < V; i++) mx = row[i] > mx ? row[i] : mx;
    for (int i = 0; i < V; i++) sum += exp((double)row[i] - mx);
    const double want = (double)row[c.ids[k]] - mx - log(sum);
    worst = fmax(worst, fabs(want - c.lp[k]));
    below_top += c.lp[k] < c.top0[k] - 1e-6;
    CHECK(c.lp[k] <= c.top0[k] + 1e-6, "token %d: logprob %g above the best %g", k, c.lp[k], c.top0[k]);
  }
  printf("sampled tokens' logprob vs log-softmax of xpi_request_eval's logits: max |diff| %g (%d not the best)\n",
         worst, below_top);
  CHECK(worst <= 1e-3, "sampled logprob: max |diff| %g", worst);
  CHECK(below_top > 0, "temperature 1.3 never sampled a token other than the most likely one");
  free(lg);

  /* skip_special */
  xpi_gen_options_default(&go);
  go.greedy = 1;
  go.max_new_tokens = NEW;
  go.ignore_eos = 1;
  lpcollect keep = {0}, skip = {0};
  xpi_request_reset(r);
  CHECK_OK(xpi_request_generate(r, k_prompt, 2, &go, on_lp, &keep, &res));
  go.skip_special = 1;
  xpi_request_reset(r);
  CHECK_OK(xpi_request_generate(r, k_prompt, 2, &go, on_lp, &skip, &res));
  char want[1024];
  size_t wl = 0;
  CHECK_OK(xpi_detokenize(xpi_model_tokenizer(m), skip.ids, (size_t)skip.n, 1, want, sizeof want, &wl));
  CHECK(keep.n == NEW && skip.n == NEW && !memcmp(keep.ids, skip.ids, sizeof keep.ids) && skip.ids[15] == 4093,
        "skip_special changes no id (eos at 15: %d)", skip.ids[15]);
  CHECK(strstr(keep.text, "<|endoftext|>") && !strstr(skip.text, "<|endoftext|>") && !strcmp(skip.text, want),
        "skip_special: '%s' (want '%s'; kept: '%s')", skip.text, want, keep.text);
  /* "can." ends the golden sentence and the next token starts right after <|endoftext|>: a stop string spanning
   * it matches only when the special token is skipped */
  const char *after = strstr(keep.text, "<|endoftext|>") + 13;
  char stop[16];
  snprintf(stop, sizeof stop, ".%.3s", after);
  const char *stops[] = {stop};
  go.stop_strings = stops;
  go.n_stop_strings = 1;
  memset(&skip, 0, sizeof skip);
  xpi_request_reset(r);
  CHECK_OK(xpi_request_generate(r, k_prompt, 2, &go, on_lp, &skip, &res));
  CHECK(res.finish_reason == XPI_FINISH_STOP && !strcmp(skip.text, " is like a raisin, not a stain you can"),
        "stop '%s' across the skipped special token: '%s' (reason %d)", stop, skip.text, res.finish_reason);
  xpi_request_free(r);
}

int main(void) {
  g_dir = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
  xpi_model *m = load("sdpa");
  if (m) {
    xpi_model_info info = {.struct_size = sizeof info};
    CHECK_OK(xpi_model_get_info(m, &info));
    CHECK(!strcmp(info.architecture, "qwen3") && !strcmp(info.device, "cpu") && !strcmp(info.weight_dtype, "bf16") &&
          info.n_eos >= 1 && info.eos_ids[0] == 4093 && info.vocab_size == 4096, "info");
    test_stops(m);
    test_context(m);
    test_threads(m);
    test_chunks(m);
    test_logprob_skip_special(m);
    xpi_model_free(m);
  }
  test_variants();
  test_bad_options();
  test_shape_mismatch();
  free(g_dir);
  return xpi_test_done();
}
