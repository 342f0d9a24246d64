/* tinyfortunes on XPU through the stock loader and zesim: greedy continuations on xpu:0 (decode steps replay
 * the recorded XPU graph) equal to the CPU goldens, and --device-map auto over the 3 software devices of
 * tests.cmake giving logits bit-identical to the single-device run (same kernels in the same order; the
 * residual stream crosses devices through exact f32 copies) and the same greedy ids. */
#include <string.h>

#include "check.h"

static int32_t argmax_row(const float *l, int32_t V) {
  int32_t b = 0;
  for (int32_t i = 1; i < V; i++)
    if (l[i] > l[b]) b = i;
  return b;
}

#include "xpu_load.h"

static int tinyfortunes(void) {
  char *path = xpi_test_strf("%s/goldens/tinyfortunes.json", xpi_test_env("XPI_TEST_DATA"));
  char *dir = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
  cJSON *g = xpi_test_load_json(path);
  xpi_model *one = NULL, *map = NULL;
  if (load(dir, "xpu:0", NULL, "sdpa", &one) == 77) {
    cJSON_Delete(g);
    free(dir), free(path);
    return 77;
  }
  load(dir, "auto", "auto", "sdpa", &map);
  if (map) {
    xpi_model_info info = {.struct_size = sizeof info};
    CHECK_OK(xpi_model_get_info(map, &info));
    CHECK(strcmp(info.device, "xpu:0-2") == 0, "device map over the 3 software devices: %s", info.device);
  }
  const cJSON *cs;
  cJSON_ArrayForEach(cs, g) {
    const cJSON *want = cJSON_GetObjectItem(cs, "greedy_new_ids");
    int nw = cJSON_GetArraySize(want);
    collected a = {0}, b = {0};
    if (one) greedy(one, cs, 0, &a);
    if (map) greedy(map, cs, 0, &b);
    int same_a = a.n == nw, same_b = b.n == nw;
    for (int i = 0; i < nw; i++) {
      int w = cJSON_GetArrayItem(want, i)->valueint;
      if (i < a.n && a.ids[i] != w) same_a = 0;
      if (i < b.n && b.ids[i] != w) same_b = 0;
    }
    CHECK(same_a, "tinyfortunes '%s' greedy on xpu:0 differs from the golden (%d of %d tokens)", cs->string, a.n, nw);
    CHECK(same_b, "tinyfortunes '%s' greedy with --device-map auto differs from the golden", cs->string);
  }
  /* logits of a prompt, every position, single device vs device map: bit-identical */
  if (one && map) {
    xpi_model_info info = {.struct_size = sizeof info};
    CHECK_OK(xpi_model_get_info(one, &info));
    const cJSON *c0 = cJSON_GetArrayItem(g, 2);
    const cJSON *in = cJSON_GetObjectItem(c0, "input_ids");
    int n = cJSON_GetArraySize(in);
    int32_t ids[64];
    for (int i = 0; i < n && i < 64; i++) ids[i] = cJSON_GetArrayItem(in, i)->valueint;
    size_t cap = (size_t)n * (size_t)info.vocab_size;
    float *la = malloc(cap * sizeof *la), *lb = malloc(cap * sizeof *lb);
    xpi_request *ra = NULL, *rb = NULL;
    xpi_request_options ro;
    xpi_request_options_default(&ro);
    ro.n_ctx = 64;
    CHECK_OK(xpi_request_create(one, &ro, &ra));
    CHECK_OK(xpi_request_create(map, &ro, &rb));
    if (ra && rb) {
      CHECK_OK(xpi_request_eval(ra, ids, (size_t)n, 1, la, cap));
      CHECK_OK(xpi_request_eval(rb, ids, (size_t)n, 1, lb, cap));
      CHECK(memcmp(la, lb, cap * sizeof *la) == 0, "prefill logits: device map differs from xpu:0");
      for (int step = 0; step < 4; step++) { /* decode: replayed graph on xpu:0, three devices in the map */
        int32_t next = argmax_row(la, info.vocab_size);
        CHECK_OK(xpi_request_eval(ra, &next, 1, 0, la, (size_t)info.vocab_size));
        CHECK_OK(xpi_request_eval(rb, &next, 1, 0, lb, (size_t)info.vocab_size));
        CHECK(memcmp(la, lb, (size_t)info.vocab_size * sizeof *la) == 0, "decode step %d logits differ", step);
      }
    }
    xpi_request_free(ra);
    xpi_request_free(rb);
    free(la), free(lb);
  }
  xpi_model_free(one);
  xpi_model_free(map);
  cJSON_Delete(g);
  free(dir), free(path);
  return 0;
}

int main(void) {
  const char *skip = getenv("XPI_XPU_TEST_SKIP");
  if (skip && *skip) {
    printf("SKIPPED: %s\n", skip);
    return 77;
  }
  if (tinyfortunes() == 77) return 77;
  return xpi_test_done();
}
