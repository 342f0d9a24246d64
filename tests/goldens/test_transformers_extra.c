/* Configurations the shared goldens do not cover, against transformers (tests/data/goldens/extra, made by
 * tests/tools/transformers_goldens.py): Llama 3 rope scaling (rope_type "llama3"), a Mistral config, and a Llama
 * config with attention_bias (q/k/v and o_proj biases, stored as F32 beside bf16 weights).
 * Tolerances as in tests/model/goldens_common.h. The rope-scaled model is also loaded with its scaling removed
 * to show the golden can tell the two apart (the scaled band of frequencies moves logits well past the
 * tolerance at 64 positions). */
#include <sys/stat.h>
#include <unistd.h>

#include "../model/goldens_common.h"

static void run(const char *name, const char *model_dir) {
  char *gp = xpi_test_strf("%s/goldens/extra/%s.json", xpi_test_env("XPI_TEST_DATA"), name);
  cJSON *g = xpi_test_load_json(gp);
  const char *impls[] = {"sdpa", "eager", "flash_attention_2"};
  for (int i = 0; i < 3; i++) {
    xpi_model_options o;
    xpi_model_options_default(&o);
    o.device = "cpu";
    o.attn_implementation = impls[i];
    xpi_model *m = NULL;
    CHECK_OK(xpi_model_load(model_dir, &o, &m));
    if (!m) continue;
    int compared = 0;
    const cJSON *cs;
    cJSON_ArrayForEach(cs, cJSON_GetObjectItem(g, "cases")) compared += check_case(m, name, impls[i], cs->string, cs);
    printf("%s %s: max |diff| so far %.3g, greedy ids compared %d\n", name, impls[i], g_max_err, compared);
    xpi_model_free(m);
  }
  cJSON_Delete(g);
  free(gp);
}

/* Same weights without rope_scaling: the 64-token case must then miss the golden by more than LOGIT_TOL. */
static void unscaled_differs(const char *data) {
  char *dir = xpi_test_tmpdir("unscaled");
  char *src = xpi_test_strf("%s/models/llama3-rope/config.json", data);
  cJSON *cfg = xpi_test_load_json(src);
  cJSON_DeleteItemFromObject(cfg, "rope_scaling");
  char *txt = cJSON_Print(cfg);
  char *dst = xpi_test_strf("%s/config.json", dir);
  CHECK(xpi_test_write_file(dst, txt, strlen(txt)) == 0, "write %s", dst);
  char *wsrc = xpi_test_strf("%s/models/llama3-rope/model.safetensors", data);
  char *wdst = xpi_test_strf("%s/model.safetensors", dir);
  CHECK(symlink(wsrc, wdst) == 0, "symlink %s", wdst);
  const char *tf[] = {"tokenizer.json", "tokenizer_config.json"};
  for (int i = 0; i < 2; i++) {
    char *a = xpi_test_strf("%s/models/llama3-rope/%s", data, tf[i]), *b = xpi_test_strf("%s/%s", dir, tf[i]);
    CHECK(symlink(a, b) == 0, "symlink %s", b);
    free(a), free(b);
  }
  xpi_model_options o;
  xpi_model_options_default(&o);
  o.device = "cpu";
  xpi_model *m = NULL;
  CHECK_OK(xpi_model_load(dir, &o, &m));
  char *gp = xpi_test_strf("%s/goldens/extra/llama3-rope.json", data);
  cJSON *g = xpi_test_load_json(gp);
  const cJSON *cs = cJSON_GetObjectItem(cJSON_GetObjectItem(g, "cases"), "ids64");
  if (m && cs) {
    const cJSON *ids_j = cJSON_GetObjectItem(cs, "input_ids");
    int n = cJSON_GetArraySize(ids_j);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)n);
    for (int i = 0; i < n; i++) ids[i] = cJSON_GetArrayItem(ids_j, i)->valueint;
    float *logits = malloc(sizeof(float) * 1000);
    xpi_request *r = NULL;
    CHECK_OK(xpi_request_create(m, NULL, &r));
    if (r) CHECK_OK(xpi_request_eval(r, ids, (size_t)n, 0, logits, 1000));
    const cJSON *head = cJSON_GetObjectItem(cs, "last_logits_head");
    double worst = 0;
    for (int i = 0; i < cJSON_GetArraySize(head); i++) {
      double e = fabs(logits[i] - cJSON_GetArrayItem(head, i)->valuedouble);
      if (e > worst) worst = e;
    }
    printf("without rope scaling: max |diff| %.3g\n", worst);
    CHECK(worst > LOGIT_TOL, "dropping llama3 rope scaling changed logits by only %.3g", worst);
    xpi_request_free(r);
    free(ids);
    free(logits);
  }
  xpi_model_free(m);
  cJSON_Delete(g);
  cJSON_Delete(cfg);
  free(txt);
  unlink(dst);
  unlink(wdst);
  for (int i = 0; i < 2; i++) {
    char *b = xpi_test_strf("%s/%s", dir, tf[i]);
    unlink(b);
    free(b);
  }
  rmdir(dir);
  free(dir), free(src), free(dst), free(wsrc), free(wdst), free(gp);
}

int main(void) {
  (void)check_model; /* shared helper for the random_models.json layout, unused here */
  const char *data = xpi_test_env("XPI_TEST_DATA");
  char *d1 = xpi_test_strf("%s/models/llama3-rope", data), *d2 = xpi_test_strf("%s/models/mistral", data);
  char *d3 = xpi_test_strf("%s/models/llama-bias", data);
  run("llama3-rope", d1);
  run("mistral", d2);
  run("llama-bias", d3);
  unscaled_differs(data);
  printf("max |logit - golden| over all checks: %.3g (tolerance %.g)\n", g_max_err, LOGIT_TOL);
  free(d1);
  free(d2);
  free(d3);
  return xpi_test_done();
}
