/* device_map: layers split over several backends (here 2 and 3 CPU backends through the undocumented
 * device_map list "cpu,cpu[,cpu]") must give logits bit-identical to the single-backend run: the same ops
 * run in the same order, only the residual stream is copied (exactly) at the boundaries. */
#include "check.h"
#include "model/graph.h"

#define NP 5
#define NDEC 4

/* Prefill (all positions) then a few decode steps; all logits into out. */
static int run(const char *dir, const char *map, float *out, int32_t V) {
  xpi_model_options o;
  xpi_model_options_default(&o);
  o.device = "cpu";
  o.device_map = map;
  o.n_threads = 2;
  xpi_model *m = NULL;
  xpi_request *r = NULL;
  CHECK_OK(xpi_model_load(dir, &o, &m));
  if (!m) return 0;
  CHECK_OK(xpi_request_create(m, NULL, &r));
  int32_t ids[NP + NDEC] = {1, 17, 300, 4000, 42, 7, 99, 1234, 5};
  CHECK_OK(xpi_request_eval(r, ids, NP, 1, out, (size_t)NP * V));
  for (int k = 0; k < NDEC; k++) CHECK_OK(xpi_request_eval(r, &ids[NP + k], 1, 0, out + (size_t)(NP + k) * V, V));
  xpi_model_info info = {.struct_size = sizeof info};
  CHECK_OK(xpi_model_get_info(m, &info));
  if (map) CHECK(strcmp(info.device, map) == 0, "info.device = '%s', want '%s'", info.device, map);
  xpi_request_free(r);
  xpi_model_free(m);
  return 1;
}

static void check_model(const char *dir) {
  xpi_model *m = NULL;
  CHECK_OK(xpi_model_load(dir, NULL, &m));
  if (!m) return;
  xpi_model_info info = {.struct_size = sizeof info};
  xpi_model_get_info(m, &info);
  xpi_model_free(m);
  size_t n = (size_t)(NP + NDEC) * info.vocab_size;
  float *ref = calloc(n, sizeof *ref), *got = calloc(n, sizeof *got);
  run(dir, NULL, ref, info.vocab_size);
  const char *maps[] = {"cpu,cpu", "cpu,cpu,cpu"};
  for (int i = 0; i < 2; i++) {
    memset(got, 0, n * sizeof *got);
    if (!run(dir, maps[i], got, info.vocab_size)) continue;
    CHECK(memcmp(ref, got, n * sizeof *got) == 0, "%s with device_map %s: logits differ from one backend", dir, maps[i]);
  }
  free(ref);
  free(got);
}

/* Layers split in proportion to each device's weight (e.g. free memory). */
static void test_split(void) {
  int32_t f[5];
  const double w1[3] = {2, 1, 1}, w2[2] = {1, 3}, w3[4] = {1, 1, 1, 1}, w4[2] = {0, 1};
  CHECK_OK(xpi_graph_split(28, w1, 3, f));
  CHECK(f[0] == 0 && f[1] == 14 && f[2] == 21 && f[3] == 28, "2:1:1 of 28 -> %d %d %d %d", f[0], f[1], f[2], f[3]);
  CHECK_OK(xpi_graph_split(4, w2, 2, f));
  CHECK(f[1] == 1 && f[2] == 4, "1:3 of 4 -> %d %d", f[1], f[2]);
  CHECK_OK(xpi_graph_split(2, w3, 4, f));
  CHECK(f[4] == 2 && f[1] <= f[2] && f[2] <= f[3], "more devices than layers");
  CHECK_OK(xpi_graph_split(5, w4, 2, f));
  CHECK(f[1] == 0 && f[2] == 5, "zero weight gets no layer");
  const double bad[2] = {0, 0};
  CHECK_ERR(xpi_graph_split(5, bad, 2, f), XPI_ERR_INVALID_ARGUMENT, "no device");
}

int main(void) {
  test_split();
  const char *models = xpi_test_env("XPI_MODELS_DIR");
  char *tf = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
  char *llama = xpi_test_strf("%s/tiny-llama-bf16", models); /* untied lm_head, 2 layers: one device gets none */
  check_model(tf);
  check_model(llama);
  /* a bad entry names the device */
  xpi_model_options o;
  xpi_model_options_default(&o);
  o.device_map = "cpu,gpu7";
  xpi_model *m = NULL;
  CHECK_ERR(xpi_model_load(tf, &o, &m), XPI_ERR_INVALID_ARGUMENT, "gpu7");
  free(tf);
  free(llama);
  return xpi_test_done();
}
