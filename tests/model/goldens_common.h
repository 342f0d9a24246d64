/* Random-model golden checks shared by test_goldens.c (small models) and test_goldens_big.c (qwen3-0.6b-rand).
 *
 * Tolerance. The goldens are transformers' fp32 math on the stored weights (bf16/f16 upcast exactly to f32);
 * we do the same f32 math, so the only differences come from summation order (blocked GEMMs and reductions
 * in torch vs our 4-way accumulators) and from expf/cosf implementations: a few f32 ulps per operation,
 * growing roughly with sqrt(reduction length) through the layers. For logits of magnitude ~1-10 that is
 * ~1e-5 absolute (measured max 5.1e-6 over all small models and impls); LOGIT_TOL = 1e-3 leaves room for
 * faster kernels' other summation orders (perf, xpu) while
 * still catching any real defect (a wrong rope convention, a missing bias or norm moves logits by >= 1e-2).
 * Greedy ids are compared only where the golden top-1/top-2 margin exceeds GREEDY_MARGIN = 10 x LOGIT_TOL,
 * under teacher forcing (the golden ids are fed back), so one close call cannot derail later steps. */
#ifndef XPI_TEST_GOLDENS_COMMON_H
#define XPI_TEST_GOLDENS_COMMON_H

#include <math.h>
#include "check.h"

#define LOGIT_TOL 1e-3
#define GREEDY_MARGIN (10 * LOGIT_TOL)

static double g_max_err = 0;

static void note_err(double e) {
  if (e > g_max_err) g_max_err = e;
}

static int32_t argmax_row(const float *l, int32_t V) {
  int32_t b = 0;
  for (int32_t i = 1; i < V; i++)
    if (l[i] > l[b]) b = i;
  return b;
}

/* Checks one case of one model; returns the number of greedy ids compared. */
static int check_case(xpi_model *m, const char *model_name, const char *impl, const char *prompt, const cJSON *cs) {
  xpi_model_info info = {.struct_size = sizeof info};
  CHECK_OK(xpi_model_get_info(m, &info));
  int32_t V = info.vocab_size;
  const cJSON *ids_j = cJSON_GetObjectItem(cs, "input_ids");
  int n = cJSON_GetArraySize(ids_j);
  const cJSON *gids = cJSON_GetObjectItem(cs, "greedy_new_ids"), *gm = cJSON_GetObjectItem(cs, "greedy_margins");
  int ng = cJSON_GetArraySize(gids);
  int32_t *ids = malloc(sizeof(int32_t) * (size_t)(n + ng));
  float *logits = malloc(sizeof(float) * (size_t)V * (size_t)n);
  for (int i = 0; i < n; i++) ids[i] = cJSON_GetArrayItem(ids_j, i)->valueint;
  for (int i = 0; i < ng; i++) ids[n + i] = cJSON_GetArrayItem(gids, i)->valueint;
  xpi_request *r = NULL;
  xpi_request_options ro;
  xpi_request_options_default(&ro);
  ro.n_ctx = 128;
  CHECK_OK(xpi_request_create(m, &ro, &r));
  int compared = 0;
  if (!r) goto out;
  CHECK_OK(xpi_request_eval(r, ids, (size_t)n, 1, logits, (size_t)V * (size_t)n));
  /* top-5 logits at every position */
  const cJSON *t5i = cJSON_GetObjectItem(cs, "top5_ids"), *t5l = cJSON_GetObjectItem(cs, "top5_logits");
  for (int p = 0; p < n; p++) {
    const float *row = logits + (size_t)p * V;
    for (int k = 0; k < 5; k++) {
      int id = cJSON_GetArrayItem(cJSON_GetArrayItem(t5i, p), k)->valueint;
      double want = cJSON_GetArrayItem(cJSON_GetArrayItem(t5l, p), k)->valuedouble;
      double e = fabs(row[id] - want);
      note_err(e);
      CHECK(e <= LOGIT_TOL, "%s/%s '%s' pos %d top%d id %d: logit %.6f, golden %.6f", model_name, impl, prompt, p, k,
            id, row[id], want);
    }
    /* our best id is the golden best wherever the golden top-2 gap is clear */
    double g0 = cJSON_GetArrayItem(cJSON_GetArrayItem(t5l, p), 0)->valuedouble;
    double g1 = cJSON_GetArrayItem(cJSON_GetArrayItem(t5l, p), 1)->valuedouble;
    if (g0 - g1 > GREEDY_MARGIN)
      CHECK(argmax_row(row, V) == cJSON_GetArrayItem(cJSON_GetArrayItem(t5i, p), 0)->valueint,
            "%s/%s '%s' pos %d: argmax differs", model_name, impl, prompt, p);
  }
  const float *last = logits + (size_t)(n - 1) * V;
  double mx = -INFINITY, sum = 0;
  for (int32_t i = 0; i < V; i++) mx = last[i] > mx ? last[i] : mx;
  for (int32_t i = 0; i < V; i++) sum += exp(last[i] - mx);
  double lse = mx + log(sum), want_lse = cJSON_GetObjectItem(cs, "last_logsumexp")->valuedouble;
  note_err(fabs(lse - want_lse));
  CHECK(fabs(lse - want_lse) <= LOGIT_TOL, "%s/%s '%s': logsumexp %.6f, golden %.6f", model_name, impl, prompt, lse, want_lse);
  const cJSON *head = cJSON_GetObjectItem(cs, "last_logits_head");
  for (int i = 0; i < cJSON_GetArraySize(head); i++) {
    double e = fabs(last[i] - cJSON_GetArrayItem(head, i)->valuedouble);
    note_err(e);
    CHECK(e <= LOGIT_TOL, "%s/%s '%s': logit[%d] = %.6f, golden %.6f", model_name, impl, prompt, i, last[i],
          cJSON_GetArrayItem(head, i)->valuedouble);
  }
  /* greedy continuation under teacher forcing: sdpa step by step through the KV cache (the decode path);
   * eager and flash over the whole teacher-forced sequence in one pass (cheaper, their decode steps are
   * covered by tests/ops and the tinyfortunes CLI test) */
  if (strcmp(impl, "sdpa") != 0) {
    float *all = malloc(sizeof(float) * (size_t)V * (size_t)(n + ng));
    xpi_request_reset(r);
    CHECK_OK(xpi_request_eval(r, ids, (size_t)(n + ng - 1), 1, all, (size_t)V * (size_t)(n + ng)));
    for (int k = 0; k < ng; k++)
      if (cJSON_GetArrayItem(gm, k)->valuedouble > GREEDY_MARGIN) {
        int32_t got = argmax_row(all + (size_t)(n - 1 + k) * V, V);
        CHECK(got == ids[n + k], "%s/%s '%s' greedy step %d: %d, golden %d (margin %.4f)", model_name, impl, prompt,
              k, got, ids[n + k], cJSON_GetArrayItem(gm, k)->valuedouble);
        compared++;
      }
    free(all);
    goto out;
  }
  int32_t got = argmax_row(last, V);
  for (int k = 0; k < ng; k++) {
    if (cJSON_GetArrayItem(gm, k)->valuedouble > GREEDY_MARGIN) {
      CHECK(got == ids[n + k], "%s/%s '%s' greedy step %d: %d, golden %d (margin %.4f)", model_name, impl, prompt, k,
            got, ids[n + k], cJSON_GetArrayItem(gm, k)->valuedouble);
      compared++;
    }
    if (k + 1 == ng) break;
    xpi_status s = xpi_request_eval(r, &ids[n + k], 1, 0, logits, (size_t)V);
    CHECK(s == XPI_OK, "eval: %s", xpi_last_error());
    if (s != XPI_OK) break;
    got = argmax_row(logits, V);
  }
out:
  xpi_request_free(r);
  free(ids);
  free(logits);
  return compared;
}

/* Every case of one model, for each attention implementation. */
static void check_model(const cJSON *goldens, const char *name) {
  const char *models = xpi_test_env("XPI_MODELS_DIR");
  char *dir = xpi_test_strf("%s/%s", models, name);
  const cJSON *mj = cJSON_GetObjectItem(goldens, name);
  CHECK(mj != NULL, "model %s in random_models.json", name);
  const char *impls[] = {"sdpa", "eager", "flash_attention_2"};
  for (int i = 0; i < 3 && mj; i++) {
    xpi_model_options o;
    xpi_model_options_default(&o);
    o.device = "cpu";
    o.attn_implementation = impls[i];
    o.n_threads = 2;
    xpi_model *m = NULL;
    CHECK_OK(xpi_model_load(dir, &o, &m));
    if (!m) continue;
    int compared = 0, total = 0;
    const cJSON *cs;
    cJSON_ArrayForEach(cs, cJSON_GetObjectItem(mj, "cases")) {
      compared += check_case(m, name, impls[i], cs->string, cs);
      total += cJSON_GetArraySize(cJSON_GetObjectItem(cs, "greedy_new_ids"));
    }
    printf("%s %s: max |diff| so far %.3g; greedy ids compared %d of %d\n", name, impls[i], g_max_err, compared, total);
    xpi_model_free(m);
  }
  free(dir);
}

#endif
