/* The random-model goldens on xpu:0 through the stock loader and zesim (tolerance as in
 * tests/model/goldens_common.h: the XPU kernels' other summation orders and f32 cos/exp stay far inside
 * LOGIT_TOL; measured max 5e-6). */
#pragma GCC diagnostic ignored "-Wunused-function" /* goldens_common.h's CPU-only check_model */
#include "../model/goldens_common.h"

#include <string.h>

#include "xpu_load.h"

static int goldens(void) {
  char *path = xpi_test_strf("%s/goldens/random_models.json", xpi_test_env("XPI_TEST_DATA"));
  cJSON *g = xpi_test_load_json(path);
  /* every tiny model with sdpa (the default); all three attention implementations on one of them */
  const struct { const char *name, *impl; } runs[] = {
    {"tiny-qwen3-f32", "sdpa"}, {"tiny-qwen3-bf16", "sdpa"}, {"tiny-qwen3-bf16", "eager"},
    {"tiny-qwen3-bf16", "flash_attention_2"}, {"tiny-llama-bf16", "sdpa"}, {"tiny-qwen2-f16", "sdpa"}};
  /* XPI_XPU_MODEL_PART=1: the first three runs, 2: the last three (tests.cmake runs the halves as two entries, in
   * parallel); unset: all */
  const char *pe = getenv("XPI_XPU_MODEL_PART");
  const int part = pe && *pe ? atoi(pe) : 0;
  CHECK(part >= 0 && part <= 2, "XPI_XPU_MODEL_PART=%s: not 1 or 2", pe);
  const size_t nr = sizeof runs / sizeof runs[0], first = part == 2 ? nr / 2 : 0, end = part == 1 ? nr / 2 : nr;
  int rc = 0;
  for (size_t i = first; i < end && rc == 0; i++) {
    char *dir = xpi_test_strf("%s/%s", xpi_test_env("XPI_MODELS_DIR"), runs[i].name);
    xpi_model *m = NULL;
    rc = load(dir, "xpu:0", NULL, runs[i].impl, &m);
    const cJSON *mj = cJSON_GetObjectItem(g, runs[i].name), *cs;
    CHECK(mj != NULL, "model %s in random_models.json", runs[i].name);
    if (m && mj) {
      xpi_model_info info = {.struct_size = sizeof info};
      CHECK_OK(xpi_model_get_info(m, &info));
      CHECK(strcmp(info.device, "xpu:0") == 0, "model placed on %s", info.device);
      int compared = 0, total = 0;
      cJSON_ArrayForEach(cs, cJSON_GetObjectItem(mj, "cases")) {
        compared += check_case(m, runs[i].name, runs[i].impl, cs->string, cs);
        total += cJSON_GetArraySize(cJSON_GetObjectItem(cs, "greedy_new_ids"));
      }
      CHECK(compared > 0, "%s: no greedy id had a clear margin", runs[i].name);
      printf("xpu:0 %s %s: max |diff| so far %.3g; greedy ids compared %d of %d\n", runs[i].name, runs[i].impl,
             g_max_err, compared, total);
    }
    xpi_model_free(m);
    free(dir);
  }
  printf("xpu:0 max |logit - golden|: %.3g (tolerance %.g)\n", g_max_err, LOGIT_TOL);
  cJSON_Delete(g);
  free(path);
  return rc;
}

int main(void) {
  int rc = goldens();
  if (rc == 77) return 77;
  return xpi_test_done();
}
