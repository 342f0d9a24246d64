/* Non-finite logits at generation time (CPU): a NaN or an infinity in the weights fails xpi_request_generate
 * with XPI_ERR_NUMERIC naming the generation step, the token position and where the value first appears
 * (embedding row, layer, final norm, lm_head), on the greedy path whose argmax runs on the backend (the
 * argmax op reports non-finite input) and on the host-logits path alike. The same check on xpu:0 is
 * tests/xpu/test_xpu_numeric.c. */
#include "check.h"
#include "nan_model.h"

static const int32_t k_prompt[] = {32, 877}; /* "A computer": greedy 300 541 258 381 ... (test_generate.c) */

typedef struct seen { int n; } seen;
static int count(const xpi_token_event *ev, void *user) {
  (void)ev;
  ((seen *)user)->n++;
  return 0;
}

static void expect_on(const char *map, const char *src, const char *tensor, size_t index, uint16_t bits, int untie,
                      int tokens_before, const char *step, const char *where) {
  char *dir = nan_model(src, tensor, index, bits, untie);
  xpi_model_options mo;
  xpi_model_options_default(&mo);
  mo.device = "cpu";
  mo.device_map = map;
  mo.n_threads = 2;
  xpi_model *m = NULL;
  CHECK_OK(xpi_model_load(dir, &mo, &m));
  xpi_request *r = NULL;
  if (m) CHECK_OK(xpi_request_create(m, NULL, &r));
  for (int path = 0; r && path < 3; path++) { /* 0: argmax on the backend, 1: host logits, 2: host + penalty */
    xpi_gen_options go;
    xpi_gen_options_default(&go);
    go.greedy = 1;
    go.max_new_tokens = 12;
    go.logprobs = path == 1;
    go.repetition_penalty = path == 2 ? 1.1f : 1.0f;
    seen s = {0};
    xpi_request_reset(r);
    xpi_status st = xpi_request_generate(r, k_prompt, 2, &go, count, &s, NULL);
    const char *e = xpi_last_error();
    CHECK(st == XPI_ERR_NUMERIC && strstr(e, step) && strstr(e, where) && strstr(e, "NaN or infinity"),
          "%s[%zu] (path %d): %s: %s (want '%s' and '%s')", tensor, index, path, xpi_status_name(st), e, step, where);
    CHECK(s.n == tokens_before, "%s (path %d): %d tokens streamed before the error, want %d", tensor, path, s.n,
          tokens_before);
  }
  if (r) { /* the request stays usable: it can be reset and used again (the same weights fail the same way) */
    xpi_request_reset(r);
    float *l = malloc(4096 * sizeof *l);
    CHECK_OK(xpi_request_eval(r, k_prompt, 2, 0, l, 4096)); /* raw logits are returned as they are */
    free(l);
  }
  xpi_request_free(r);
  xpi_model_free(m);
  nan_model_remove(dir);
}

static void expect(const char *src, const char *tensor, size_t index, uint16_t bits, int untie, int tokens_before,
                   const char *step, const char *where) {
  expect_on(NULL, src, tensor, index, bits, untie, tokens_before, step, where);
}

int main(void) {
  char *src = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
  /* a layer's weight: its output is the first non-finite one, at the prompt step */
  expect(src, "model.layers.2.mlp.down_proj.weight", 0, BF16_NAN, 0, 0, "generation step 0 (the prompt, positions 0-1)",
         "output of layer 2 (model.layers.2.*) at position 0");
  /* layers split over two backends (layers 2-3 on the second): the re-run crosses the boundary too */
  expect_on("cpu,cpu", src, "model.layers.2.mlp.down_proj.weight", 0, BF16_NAN, 0, 0, "generation step 0",
            "output of layer 2 (model.layers.2.*) at position 0");
  expect_on("cpu,cpu", src, "model.layers.1.mlp.down_proj.weight", 0, BF16_NAN, 0, 0, "generation step 0",
            "output of layer 1 (model.layers.1.*) at position 0");
  expect(src, "model.layers.0.self_attn.q_proj.weight", 77, BF16_INF, 0, 0, "generation step 0",
         "output of layer 0 (model.layers.0.*)");
  /* the embedding row of the third generated token (258), untied lm_head: steps 1-2 stream, step 3 fails */
  expect(src, "model.embed_tokens.weight", 258 * 256 + 5, BF16_INF, 1, 3, "generation step 3 (token position 4)",
         "embedding of token 258 at position 4");
  /* after the layers */
  expect(src, "model.norm.weight", 3, BF16_NAN, 0, 0, "generation step 0", "final norm (model.norm.weight)");
  expect(src, "lm_head.weight", 7 * 256, BF16_NAN, 1, 0, "generation step 0", "lm_head at position 1");
  free(src);
  return xpi_test_done();
}
