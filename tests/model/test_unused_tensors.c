/* Checkpoint tensors the graph never reads: a checkpoint with more layers than num_hidden_layers (tinyfortunes'
 * 4 layers under a config of 3) loads with one warning through the log callback that lists them; with
 * xpi_model_options.strict the load fails with XPI_ERR_FORMAT and the same list. Tensors transformers also
 * ignores (rotary_emb.inv_freq, a tied model's lm_head.weight) are not reported; the bundled model has none. */
#include <unistd.h>

#include "check.h"

static char g_log[16384];
static int g_warnings;

static void on_log(int level, const char *msg, void *user) {
  (void)user;
  if (level < 2) return;
  g_warnings++;
  snprintf(g_log, sizeof g_log, "%s", msg);
}

static char *model_with_layers(const char *src, int layers) {
  char *dir = xpi_test_tmpdir("unused");
  const char *links[] = {"tokenizer.json", "tokenizer_config.json", "model.safetensors"};
  for (int i = 0; i < 3; i++) {
    char *a = xpi_test_strf("%s/%s", src, links[i]), *b = xpi_test_strf("%s/%s", dir, links[i]);
    CHECK(symlink(a, b) == 0, "symlink %s", b);
    free(a);
    free(b);
  }
  char *p = xpi_test_strf("%s/config.json", src);
  cJSON *cfg = xpi_test_load_json(p);
  free(p);
  cJSON_ReplaceItemInObject(cfg, "num_hidden_layers", cJSON_CreateNumber(layers));
  cJSON_DeleteItemFromObject(cfg, "layer_types");
  char *text = cJSON_Print(cfg), *out = xpi_test_strf("%s/config.json", dir);
  xpi_test_write_file(out, text, strlen(text));
  free(out);
  cJSON_free(text);
  cJSON_Delete(cfg);
  return dir;
}

int main(void) {
  char *src = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
  xpi_set_log_callback(on_log, NULL);
  xpi_model_options o;
  xpi_model_options_default(&o);
  o.device = "cpu";
  o.n_threads = 2;
  xpi_model *m = NULL;

  /* the complete checkpoint: nothing to report */
  CHECK_OK(xpi_model_load(src, &o, &m));
  CHECK(g_warnings == 0, "no warning for the bundled model: %s", g_log);
  xpi_model_free(m);

  char *dir = model_with_layers(src, 3);
  CHECK_OK(xpi_model_load(dir, &o, &m));
  CHECK(g_warnings == 1, "one warning, got %d", g_warnings);
  const char *l3[] = {"model.layers.3.input_layernorm.weight", "model.layers.3.mlp.down_proj.weight",
                      "model.layers.3.self_attn.q_norm.weight", "model.layers.3.post_attention_layernorm.weight"};
  CHECK(strstr(g_log, "11 checkpoint tensors the model never reads") && strstr(g_log, "num_hidden_layers = 3"),
        "warning: %s", g_log);
  for (int i = 0; i < 4; i++) CHECK(strstr(g_log, l3[i]) != NULL, "warning lists %s: %s", l3[i], g_log);
  CHECK(!strstr(g_log, "model.layers.2."), "layer 2 is used: %s", g_log);
  if (m) { /* and the model runs on its 3 layers */
    xpi_model_info info = {.struct_size = sizeof info};
    CHECK_OK(xpi_model_get_info(m, &info));
    CHECK(info.n_layers == 3, "3 layers");
  }
  xpi_model_free(m);

  o.strict = 1;
  m = NULL;
  CHECK_ERR(xpi_model_load(dir, &o, &m), XPI_ERR_FORMAT, "11 checkpoint tensors the model never reads (strict)");
  CHECK(m == NULL && strstr(xpi_last_error(), "model.layers.3.mlp.up_proj.weight"), "strict: %s", xpi_last_error());
  CHECK_OK(xpi_model_load(src, &o, &m)); /* strict and complete: fine */
  xpi_model_free(m);

  /* a caller built before `strict` existed: its smaller struct keeps strict off */
  xpi_model_options old = o;
  old.struct_size = offsetof(xpi_model_options, strict);
  g_warnings = 0;
  CHECK_OK(xpi_model_load(dir, &old, &m));
  CHECK(g_warnings == 1, "old struct_size: a warning, not an error");
  xpi_model_free(m);

  xpi_set_log_callback(NULL, NULL);
  const char *files[] = {"tokenizer.json", "tokenizer_config.json", "model.safetensors", "config.json"};
  for (int i = 0; i < 4; i++) {
    char *p = xpi_test_strf("%s/%s", dir, files[i]);
    unlink(p);
    free(p);
  }
  rmdir(dir);
  free(dir);
  free(src);
  return xpi_test_done();
}
