/* The embedding table in host memory (what the memory plan chooses when a device is short of memory,
 * src/model/placement.c): tinyfortunes on xpu:0 with its weights loaded again with embed_on_host gives the golden
 * greedy ids through the replayed decode steps (the step's rows gathered on the host and written to the device
 * before the replay) and through prefill; the device then holds no embedding table (its tied lm_head is placed
 * on its own), and an id outside the vocabulary is refused. */
#include <string.h>

#include "api/api_internal.h"
#include "runtime/xpu.h"
#include "xpu_load.h"

int main(void) {
  char *dir = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
  xpi_model *m = NULL;
  int rc = load(dir, "xpu:0", NULL, "sdpa", &m);
  free(dir);
  if (rc == 77) return 77;
  if (!m) return xpi_test_done();
  CHECK(m->w.lm_head_is_embed && !m->w.embed_on_host, "loaded as usual: the tied lm_head is the device's table");
  uint64_t before = 0, after = 0;
  CHECK_OK(xpi_xpu_free_memory(0, &before));
  xpi_backend **layer_be = calloc((size_t)m->cfg.n_layers, sizeof *layer_be);
  xpi_graph_layer_backends(&m->graph, m->cfg.n_layers, layer_be);
  xpi_weights_free(&m->w);
  CHECK_OK(xpi_weights_load_opt(&m->cfg, m->st, layer_be, -1, 1, &m->w));
  free(layer_be);
  CHECK_OK(xpi_xpu_free_memory(0, &after));
  CHECK(m->w.embed_on_host && !m->w.lm_head_is_embed && m->w.embed.bytes == 0 && before == after,
        "host table, lm_head placed alone: the device holds the same bytes (%llu before, %llu after)",
        (unsigned long long)before, (unsigned long long)after);

  char *path = xpi_test_strf("%s/goldens/tinyfortunes.json", xpi_test_env("XPI_TEST_DATA"));
  cJSON *g = xpi_test_load_json(path);
  const cJSON *cs;
  int cases = 0;
  cJSON_ArrayForEach(cs, g) {
    collected c;
    greedy(m, cs, 0, &c); /* logprobs 0: the argmax on the device, decode steps replayed */
    const cJSON *want = cJSON_GetObjectItem(cs, "greedy_new_ids");
    int same = c.n == cJSON_GetArraySize(want);
    for (int i = 0; same && i < c.n; i++) same = c.ids[i] == cJSON_GetArrayItem(want, i)->valueint;
    CHECK(same, "'%s': greedy ids differ from the golden with the table on the host", cs->string);
    cases++;
  }
  CHECK(cases >= 4, "%d golden prompts", cases);
  cJSON_Delete(g);
  free(path);

  xpi_request *r = NULL;
  CHECK_OK(xpi_request_create(m, NULL, &r));
  const int32_t bad[2] = {313, 1 << 20};
  float *logits = malloc(sizeof(float) * (size_t)m->cfg.vocab_size);
  if (r) CHECK(xpi_request_eval(r, bad, 2, 0, logits, (size_t)m->cfg.vocab_size) != XPI_OK, "id 2^20 refused");
  xpi_request_free(r);
  free(logits);
  xpi_model_free(m);
  return xpi_test_done();
}
