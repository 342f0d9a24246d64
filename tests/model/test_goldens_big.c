/* qwen3-0.6b-rand (a Qwen3-0.6B-shaped random model) against transformers' logits; slow on 2 cores. */
#include "goldens_common.h"

int main(void) {
  char *path = xpi_test_strf("%s/goldens/random_models.json", xpi_test_env("XPI_TEST_DATA"));
  cJSON *g = xpi_test_load_json(path);
  check_model(g, "qwen3-0.6b-rand");
  printf("max |logit - golden| over all checks: %.3g (tolerance %.g)\n", g_max_err, LOGIT_TOL);
  cJSON_Delete(g);
  free(path);
  return xpi_test_done();
}
