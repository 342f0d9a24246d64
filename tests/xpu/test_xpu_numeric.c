/* Non-finite logits on xpu:0 (zesim): the XPU argmax kernel reports NaN/infinity (-1) inside the replayed
 * decode step, and xpi_request_generate fails with XPI_ERR_NUMERIC naming the step and the first layer, as on
 * the CPU (tests/generate/test_numeric.c); the host-logits path agrees. */
#include "../generate/nan_model.h"
#include "xpu_load.h"

static const int32_t k_prompt[] = {32, 877};

static int expect(const char *src, const char *tensor, size_t index, uint16_t bits, int untie, int tokens_before,
                  const char *step, const char *where) {
  char *dir = nan_model(src, tensor, index, bits, untie);
  xpi_model *m = NULL;
  int rc = load(dir, "xpu:0", NULL, "sdpa", &m);
  if (rc == 0) {
    xpi_request *r = NULL;
    CHECK_OK(xpi_request_create(m, NULL, &r));
    for (int path = 0; r && path < 2; path++) { /* 0: argmax on the device (replayed step), 1: host logits */
      xpi_gen_options go;
      xpi_gen_options_default(&go);
      go.greedy = 1;
      go.max_new_tokens = 12;
      go.logprobs = path;
      collected c = {.n = 0};
      xpi_request_reset(r);
      xpi_status st = xpi_request_generate(r, k_prompt, 2, &go, collect, &c, NULL);
      const char *e = xpi_last_error();
      CHECK(st == XPI_ERR_NUMERIC && strstr(e, step) && strstr(e, where), "xpu:0 %s (path %d): %s: %s", tensor, path,
            xpi_status_name(st), e);
      CHECK(c.n == tokens_before, "xpu:0 %s (path %d): %d tokens before the error, want %d", tensor, path, c.n,
            tokens_before);
    }
    xpi_request_free(r);
  }
  xpi_model_free(m);
  nan_model_remove(dir);
  return rc;
}

int main(void) {
  char *src = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
  int rc = expect(src, "model.layers.2.mlp.down_proj.weight", 0, BF16_NAN, 0, 0, "generation step 0",
                  "output of layer 2 (model.layers.2.*) at position 0");
  if (rc == 0)
    expect(src, "model.embed_tokens.weight", 258 * 256 + 5, BF16_INF, 1, 3, "generation step 3 (token position 4)",
           "embedding of token 258 at position 4");
  free(src);
  return rc == 77 ? 77 : xpi_test_done();
}
