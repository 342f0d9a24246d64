/* The small random-weight models of random_models.json against transformers' logits (see goldens_common.h). */
#include "goldens_common.h"

int main(void) {
  char *path = xpi_test_strf("%s/goldens/random_models.json", xpi_test_env("XPI_TEST_DATA"));
  cJSON *g = xpi_test_load_json(path);
  const char *names[] = {"tiny-qwen3-f32", "tiny-qwen3-bf16", "tiny-llama-bf16", "tiny-qwen2-f16"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) check_model(g, names[i]);
  printf("max |logit - golden| over all checks: %.3g (tolerance %.g)\n", g_max_err, LOGIT_TOL);
  cJSON_Delete(g);
  free(path);
  return xpi_test_done();
}
