/* Qwen3-MoE and Qwen2-MoE goldens (tests/data/arch_models/goldens.json, transformers float32) on xpu:0 and with
 * device_map "auto" (layers split over the simulated devices, the residual stream handed over between them),
 * through the stock loader and zesim. Tolerance as in tests/model/goldens_common.h (1e-3; the XPU kernels'
 * other summation orders stay far inside it), greedy ids under teacher forcing where the margin is clear; the
 * sdpa runs decode step by step, i.e. through the recorded and replayed decode step with the experts chosen
 * on the device. */
#pragma GCC diagnostic ignored "-Wunused-function" /* goldens_common.h's CPU-only check_model */
#include "../model/goldens_common.h"

#include <string.h>

#include "xpu_load.h"

static int goldens(void) {
  char *path = xpi_test_strf("%s/arch_models/goldens.json", xpi_test_env("XPI_TEST_DATA"));
  cJSON *g = xpi_test_load_json(path);
  const struct { const char *name, *map, *impl; } runs[] = {
    {"tiny-qwen3_moe", NULL, "sdpa"}, {"tiny-qwen3_moe", NULL, "flash_attention_2"}, {"tiny-qwen3_moe", "auto", "sdpa"},
    {"tiny-qwen2_moe", NULL, "sdpa"}, {"tiny-qwen2_moe", NULL, "eager"}, {"tiny-qwen2_moe", "auto", "sdpa"}};
  int rc = 0;
  for (size_t i = 0; i < sizeof runs / sizeof runs[0] && rc == 0; i++) {
    char *dir = xpi_test_strf("%s/arch_models/%s", xpi_test_env("XPI_TEST_DATA"), runs[i].name);
    xpi_model *m = NULL;
    rc = load(dir, "xpu:0", runs[i].map, runs[i].impl, &m);
    const cJSON *mj = cJSON_GetObjectItem(cJSON_GetObjectItem(g, "models"), runs[i].name), *cs;
    CHECK(mj != NULL, "model %s in arch_models/goldens.json", runs[i].name);
    if (m && mj) {
      xpi_model_info info = {.struct_size = sizeof info};
      CHECK_OK(xpi_model_get_info(m, &info));
      if (runs[i].map) CHECK(strchr(info.device, '-') != NULL, "device map placed the model on %s", info.device);
      else CHECK(strcmp(info.device, "xpu:0") == 0, "model placed on %s", info.device);
      int compared = 0, total = 0;
      cJSON_ArrayForEach(cs, cJSON_GetObjectItem(mj, "cases")) {
        compared += check_case(m, runs[i].name, runs[i].impl, cs->string, cs);
        total += cJSON_GetArraySize(cJSON_GetObjectItem(cs, "greedy_new_ids"));
      }
      CHECK(compared > 0, "%s: no greedy id had a clear margin", runs[i].name);
      printf("%s %s %s: max |diff| so far %.3g; greedy ids compared %d of %d\n", info.device, runs[i].name,
             runs[i].impl, g_max_err, compared, total);
    }
    xpi_model_free(m);
    free(dir);
  }
  printf("xpu max |logit - golden|: %.3g (tolerance %.g)\n", g_max_err, LOGIT_TOL);
  cJSON_Delete(g);
  free(path);
  return rc;
}

int main(void) {
  int rc = goldens();
  if (rc == 77) return 77;
  return xpi_test_done();
}
