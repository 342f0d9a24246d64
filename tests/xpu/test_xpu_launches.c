/* Kernel launches per decode step on xpu:0 (fused decode). The XPU backend counts the launches
 * it records into a graph and submits through replay(); a greedy generation replays the decode step's recording
 * once per token. The count is L * per_layer + constant; running tinyfortunes (4 layers) and the same model cut to
 * its first 2 layers (config.json edited, the tensors of layers 2..3 left unread) separates the two. The counts
 * asserted are the current ones, so that both a regression and an improvement show here (and the docs follow). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api/api_internal.h"
#include "ops/xpu/xpu_backend.h"
#include "xpu_load.h"

/* Launches of the decoder layer and of the rest of the step (embedding, final norm + lm_head in one launch,
 * argmax) with the fused ops of blocks.c (13 per layer before them, the 368 a token for the 28-layer 0.6B
 * model): norm + q|k|v (one launch), RoPE + q/k norm, attention + KV store, o_proj + residual add, norm + gate|up +
 * SwiGLU, down + residual add. The target is at most 6 per layer plus a constant; q8/q4 weights the same
 * (their fused kernels quantize the input row in every work-group). */
#define WANT_PER_LAYER 6
#define WANT_CONSTANT 3

/* Launches per decode step of a greedy generation of the first golden case (and its ids against the golden). */
static double launches_per_step(const char *dir, const cJSON *cs, int check_ids, const char *quant, int *tuned) {
  xpi_model *m = NULL;
  xpi_model_options o;
  xpi_model_options_default(&o);
  o.device = "xpu:0", o.attn_implementation = "sdpa", o.n_threads = 2, o.quant = quant;
  xpi_status s = xpi_model_load(dir, &o, &m);
  CHECK(s == XPI_OK, "loading %s (quant %s): %s", dir, quant ? quant : "none", xpi_last_error());
  if (s != XPI_OK) return -1;
  *tuned = strcmp(xpi_xpu_tier(m->backends[0]), "portable") != 0;
  uint64_t l0, r0, l1, r1;
  xpi_xpu_replayed_launches(m->backends[0], &l0, &r0);
  collected got = {0};
  greedy(m, cs, 0, &got);
  xpi_xpu_replayed_launches(m->backends[0], &l1, &r1);
  const cJSON *want = cJSON_GetObjectItem(cs, "greedy_new_ids");
  int nw = cJSON_GetArraySize(want);
  CHECK(r1 - r0 == (uint64_t)nw - 1, "%s: %llu replays for %d new tokens (one per decode step)", dir,
        (unsigned long long)(r1 - r0), nw);
  if (check_ids) {
    int same = got.n == nw;
    for (int i = 0; same && i < nw; i++) same = got.ids[i] == cJSON_GetArrayItem(want, i)->valueint;
    CHECK(same, "%s: greedy ids differ from the golden", dir);
  }
  xpi_model_free(m);
  if (r1 == r0) return -1;
  double per = (double)(l1 - l0) / (double)(r1 - r0);
  CHECK(per == (double)((l1 - l0) / (r1 - r0)), "%s: decode steps of different launch counts (%.2f on average)",
        dir, per);
  return per;
}

/* A copy of tinyfortunes with n_layers of its layers: the config says so, the other files are links. */
static char *cut_model(const char *src, int n_layers) {
  char *dir = xpi_test_tmpdir("launches");
  static const char *files[] = {"model.safetensors", "tokenizer.json", "tokenizer_config.json",
                                "generation_config.json"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char *from = xpi_test_strf("%s/%s", src, files[i]), *to = xpi_test_strf("%s/%s", dir, files[i]);
    CHECK(symlink(from, to) == 0, "linking %s", to);
    free(from), free(to);
  }
  char *cp = xpi_test_strf("%s/config.json", src);
  cJSON *c = xpi_test_load_json(cp);
  cJSON_ReplaceItemInObject(c, "num_hidden_layers", cJSON_CreateNumber(n_layers));
  cJSON *lt = cJSON_GetObjectItem(c, "layer_types");
  while (lt && cJSON_GetArraySize(lt) > n_layers) cJSON_DeleteItemFromArray(lt, cJSON_GetArraySize(lt) - 1);
  char *txt = cJSON_Print(c), *out = xpi_test_strf("%s/config.json", dir);
  CHECK(xpi_test_write_file(out, txt, strlen(txt)) == 0, "writing %s", out);
  free(txt), free(out), free(cp);
  cJSON_Delete(c);
  return dir;
}

int main(void) {
  const char *skip = getenv("XPI_XPU_TEST_SKIP");
  if (skip && *skip) {
    printf("SKIPPED: %s\n", skip);
    return 77;
  }
  char *path = xpi_test_strf("%s/goldens/tinyfortunes.json", xpi_test_env("XPI_TEST_DATA"));
  char *dir = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
  cJSON *g = xpi_test_load_json(path);
  const cJSON *cs = g->child;
  char *cut = cut_model(dir, 2);
  /* the model's own weights (bf16), then q8 and q4 ones (--quant: every matrix, the lm_head too): the fused
   * quantized kernels keep the same count (the golden ids are bf16's: checked for bf16 only) */
  const char *quants[3] = {NULL, "q8", "q4"};
  for (int qi = 0; qi < 3; qi++) {
    int tuned = 0;
    double s4 = launches_per_step(dir, cs, qi == 0, quants[qi], &tuned);
    double s2 = launches_per_step(cut, cs, 0, quants[qi], &tuned);
    if (s4 <= 0 || s2 <= 0) continue;
    double per_layer = (s4 - s2) / 2, constant = s4 - 4 * per_layer;
    const char *qn = quants[qi] ? quants[qi] : "model dtype";
    printf("%s (%s tier): launches per decode step: %.0f (4 layers), %.0f (2 layers): %.0f per layer + %.0f\n", qn,
           tuned ? "tuned" : "portable", s4, s2, per_layer, constant);
    /* the q8/q4 fused kernels take the input's RMSNorm into the launch on either tier (the shared staging) */
    CHECK(per_layer == WANT_PER_LAYER, "%s: %.0f launches per layer, want %d", qn, per_layer, WANT_PER_LAYER);
    CHECK(constant == WANT_CONSTANT, "%s: %.0f launches per step besides the layers, want %d", qn, constant,
          WANT_CONSTANT);
  }
  cJSON_Delete(g);
  free(cut), free(dir), free(path);
  return xpi_test_done();
}
