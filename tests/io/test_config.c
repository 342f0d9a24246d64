/* config.json / generation_config.json: the bundled and reference models read to the values their files hold,
 * and the transformers defaults where a field is absent (values written out by hand from the files and from
 * transformers' config classes: LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config). */
#include <string.h>

#include "check.h"
#include "model/config.h"
#include "model/family.h"

#define ARCH_IS(c, fam) (strcmp((c).family->name, #fam) == 0)

static char *g_dir;

static xpi_status load_text(const char *cfg, const char *gen, xpi_config *c) {
  char *p = xpi_test_strf("%s/config.json", g_dir), *g = xpi_test_strf("%s/generation_config.json", g_dir);
  CHECK(xpi_test_write_file(p, cfg, strlen(cfg)) == 0, "write");
  remove(g);
  if (gen) CHECK(xpi_test_write_file(g, gen, strlen(gen)) == 0, "write");
  xpi_status s = xpi_config_load(g_dir, c);
  CHECK(s == XPI_OK, "%s", xpi_last_error());
  remove(p);
  remove(g);
  free(p);
  free(g);
  return s;
}

static void bundled(void) {
  const char *src = xpi_test_env("XPI_SOURCE_DIR"), *data = xpi_test_env("XPI_TEST_DATA");
  xpi_config c;
  /* tinyfortunes: transformers 5 layout (rope_parameters, dtype) plus generation_config.json. */
  char *dir = xpi_test_strf("%s/examples/models/tinyfortunes", src);
  CHECK_OK(xpi_config_load(dir, &c));
  CHECK(ARCH_IS(c, qwen3) && strcmp(c.model_type, "qwen3") == 0, "arch");
  CHECK(c.vocab_size == 4096 && c.hidden_size == 256 && c.intermediate_size == 768 && c.n_layers == 4, "sizes");
  CHECK(c.n_heads == 4 && c.n_kv_heads == 2 && c.head_dim == 64 && c.max_position_embeddings == 1024, "heads");
  CHECK(c.rms_norm_eps == 1e-6f && c.tie_word_embeddings == 1 && c.attention_bias == 0 && c.o_proj_bias == 0 &&
            c.qk_norm == 1,
        "flags");
  CHECK(c.rope[0].p.type == XPI_ROPE_DEFAULT && c.rope[0].p.theta == 10000.0f && c.rope[0].p.head_dim == 64, "rope");
  CHECK(c.torch_dtype == XPI_DT_BF16, "dtype");
  CHECK(c.bos_id == 4093 && c.n_eos == 1 && c.eos_ids[0] == 4093, "bos/eos");
  CHECK(c.gen_do_sample == 0 && c.gen_max_new_tokens == 64 && c.gen_temperature == 0 && c.gen_top_k == 0 &&
            c.gen_top_p == 0 && c.gen_repetition_penalty == 0,
        "generation defaults");
  free(dir);

  dir = xpi_test_strf("%s/models/llama3-rope", data);
  CHECK_OK(xpi_config_load(dir, &c));
  CHECK(ARCH_IS(c, llama) && c.vocab_size == 1000 && c.head_dim == 16 && c.qk_norm == 0, "llama3-rope");
  CHECK(c.rope[0].p.type == XPI_ROPE_LLAMA3 && c.rope[0].p.theta == 500000.0f && c.rope[0].p.factor == 8.0f &&
            c.rope[0].p.low_freq_factor == 1.0f && c.rope[0].p.high_freq_factor == 4.0f &&
            c.rope[0].p.original_max_position_embeddings == 8192 && c.max_position_embeddings == 131072,
        "llama3 rope");
  CHECK(c.bos_id == 1 && c.n_eos == 1 && c.eos_ids[0] == 2 && c.tie_word_embeddings == 0, "ids");
  CHECK(c.gen_do_sample == -1, "no generation_config.json");
  free(dir);

  dir = xpi_test_strf("%s/models/mistral", data);
  CHECK_OK(xpi_config_load(dir, &c));
  CHECK(ARCH_IS(c, mistral) && strcmp(c.model_type, "mistral") == 0 && c.rope[0].p.theta == 1000000.0f &&
            c.rope[0].p.type == XPI_ROPE_DEFAULT && c.attention_bias == 0,
        "mistral");
  free(dir);

  /* The random models: values as their config.json files state them. */
  const char *models = xpi_test_env("XPI_MODELS_DIR");
  struct { const char *name; const char *arch; int vocab, hidden, layers, tie, bias; float theta; xpi_dtype dt; int bos, eos; } m[] = {
      {"tiny-qwen3-f32", "qwen3", 151936, 64, 2, 1, 0, 1e6f, XPI_DT_F32, 151643, 151645},
      {"tiny-qwen3-bf16", "qwen3", 151936, 64, 2, 1, 0, 1e6f, XPI_DT_BF16, 151643, 151645},
      {"tiny-qwen2-f16", "qwen2", 151936, 64, 2, 1, 1, 1e6f, XPI_DT_F16, 151643, 151645},
      {"tiny-llama-bf16", "llama", 128256, 64, 2, 0, 0, 5e5f, XPI_DT_BF16, 128000, 128001},
      {"qwen3-0.6b-rand", "qwen3", 151936, 1024, 28, 1, 0, 1e6f, XPI_DT_BF16, 151643, 151645},
  };
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
    dir = xpi_test_strf("%s/%s", models, m[i].name);
    CHECK_OK(xpi_config_load(dir, &c));
    CHECK(!strcmp(c.family->name, m[i].arch) && c.vocab_size == m[i].vocab && c.hidden_size == m[i].hidden &&
              c.n_layers == m[i].layers && c.tie_word_embeddings == m[i].tie && c.attention_bias == m[i].bias &&
              c.rope[0].p.theta == m[i].theta && c.torch_dtype == m[i].dt && c.bos_id == m[i].bos && c.n_eos == 1 &&
              c.eos_ids[0] == m[i].eos && c.qk_norm == !strcmp(m[i].arch, "qwen3") && c.o_proj_bias == 0,
          "%s", m[i].name);
    free(dir);
  }
}

#define BASE(extra)                                                                                        \
  "{\"model_type\":\"llama\",\"hidden_size\":64,\"num_hidden_layers\":2,\"num_attention_heads\":4,"     \
  "\"intermediate_size\":128,\"vocab_size\":1000,\"max_position_embeddings\":4096" extra "}"

static void defaults(void) {
  xpi_config c;
  /* Minimal llama: every optional field at transformers' default. */
  if (load_text(BASE(""), NULL, &c) == XPI_OK) {
    CHECK(ARCH_IS(c, llama) && c.n_kv_heads == 4 && c.head_dim == 16, "kv heads default, head_dim derived");
    CHECK(c.rms_norm_eps == 1e-6f && c.rope[0].p.theta == 10000.0f && c.rope[0].p.type == XPI_ROPE_DEFAULT, "eps/theta");
    CHECK(c.tie_word_embeddings == 0 && c.attention_bias == 0 && c.o_proj_bias == 0 && c.qk_norm == 0, "flags");
    CHECK(c.torch_dtype == XPI_DT_F32 && c.bos_id == -1 && c.n_eos == 0 && c.gen_do_sample == -1, "ids");
  }
  /* architectures alone picks the family. */
  if (load_text("{\"architectures\":[\"Qwen2ForCausalLM\"],\"hidden_size\":64,\"num_hidden_layers\":2,"
                "\"num_attention_heads\":4,\"intermediate_size\":128,\"vocab_size\":1000,"
                "\"max_position_embeddings\":4096,\"attention_bias\":false}",
                NULL, &c) == XPI_OK)
    CHECK(ARCH_IS(c, qwen2) && strcmp(c.model_type, "qwen2") == 0 && c.attention_bias == 1 &&
              c.o_proj_bias == 0,
          "qwen2: q/k/v biases always, o_proj never");
  /* Qwen3Config's head_dim default is 128, not hidden/heads. */
  if (load_text("{\"model_type\":\"qwen3\",\"hidden_size\":64,\"num_hidden_layers\":2,\"num_attention_heads\":4,"
                "\"intermediate_size\":128,\"vocab_size\":1000,\"max_position_embeddings\":4096}",
                NULL, &c) == XPI_OK)
    CHECK(c.head_dim == 128 && c.rope[0].p.head_dim == 128 && c.qk_norm == 1, "qwen3 head_dim default");
  /* Llama with attention_bias: q/k/v and o all biased. */
  if (load_text(BASE(",\"attention_bias\":true,\"mlp_bias\":false"), NULL, &c) == XPI_OK)
    CHECK(c.attention_bias == 1 && c.o_proj_bias == 1, "llama attention_bias");
  /* transformers 5: rope_parameters with llama3 scaling and the theta inside; dtype instead of torch_dtype. */
  if (load_text(BASE(",\"dtype\":\"float16\",\"rope_parameters\":{\"rope_type\":\"llama3\",\"rope_theta\":500000.0,"
                     "\"factor\":32.0,\"low_freq_factor\":1.0,\"high_freq_factor\":4.0,"
                     "\"original_max_position_embeddings\":8192}"),
                NULL, &c) == XPI_OK)
    CHECK(c.rope[0].p.type == XPI_ROPE_LLAMA3 && c.rope[0].p.theta == 500000.0f && c.rope[0].p.factor == 32.0f &&
              c.torch_dtype == XPI_DT_F16,
          "rope_parameters llama3");
  /* transformers 4 legacy "type" key, and an explicit "default" with null scaling. */
  if (load_text(BASE(",\"rope_theta\":1e6,\"rope_scaling\":{\"type\":\"llama3\",\"factor\":8,\"low_freq_factor\":1,"
                     "\"high_freq_factor\":4,\"original_max_position_embeddings\":8192}"),
                NULL, &c) == XPI_OK)
    CHECK(c.rope[0].p.type == XPI_ROPE_LLAMA3 && c.rope[0].p.theta == 1e6f, "rope_scaling type");
  if (load_text(BASE(",\"rope_theta\":1e6,\"rope_scaling\":null"), NULL, &c) == XPI_OK)
    CHECK(c.rope[0].p.type == XPI_ROPE_DEFAULT && c.rope[0].p.theta == 1e6f, "null rope_scaling");
  if (load_text(BASE(",\"rope_scaling\":{\"rope_type\":\"default\"}"), NULL, &c) == XPI_OK)
    CHECK(c.rope[0].p.type == XPI_ROPE_DEFAULT, "default rope_type");
  /* Sliding windows that never apply. */
  load_text("{\"model_type\":\"mistral\",\"hidden_size\":64,\"num_hidden_layers\":2,\"num_attention_heads\":4,"
            "\"intermediate_size\":128,\"vocab_size\":1000,\"max_position_embeddings\":4096,\"sliding_window\":4096}",
            NULL, &c);
  load_text("{\"model_type\":\"qwen2\",\"hidden_size\":64,\"num_hidden_layers\":2,\"num_attention_heads\":4,"
            "\"intermediate_size\":128,\"vocab_size\":1000,\"max_position_embeddings\":4096,\"sliding_window\":128,"
            "\"use_sliding_window\":false,\"max_window_layers\":1}",
            NULL, &c);
  load_text("{\"model_type\":\"qwen2\",\"hidden_size\":64,\"num_hidden_layers\":2,\"num_attention_heads\":4,"
            "\"intermediate_size\":128,\"vocab_size\":1000,\"max_position_embeddings\":4096,\"sliding_window\":128,"
            "\"use_sliding_window\":true,\"max_window_layers\":2}",
            NULL, &c);
  load_text(BASE(",\"layer_types\":[\"full_attention\",\"full_attention\"],\"sliding_window\":16"), NULL, &c);
  /* eos: union of both files, deduplicated, in order of appearance; bos from generation_config.json. */
  if (load_text(BASE(",\"bos_token_id\":1,\"eos_token_id\":[2,7]"),
                "{\"bos_token_id\":5,\"eos_token_id\":[7,2,9],\"do_sample\":true,\"temperature\":0.7,"
                "\"top_k\":20,\"top_p\":0.8,\"repetition_penalty\":1.05,\"max_new_tokens\":128}",
                &c) == XPI_OK) {
    CHECK(c.n_eos == 3 && c.eos_ids[0] == 2 && c.eos_ids[1] == 7 && c.eos_ids[2] == 9, "eos union: n=%d", c.n_eos);
    CHECK(c.bos_id == 5, "bos from generation_config.json");
    CHECK(c.gen_do_sample == 1 && c.gen_temperature == 0.7f && c.gen_top_k == 20 && c.gen_top_p == 0.8f &&
              c.gen_repetition_penalty == 1.05f && c.gen_max_new_tokens == 128,
          "generation values");
  }
  if (load_text(BASE(",\"eos_token_id\":null,\"bos_token_id\":null"), "{\"eos_token_id\":3}", &c) == XPI_OK)
    CHECK(c.n_eos == 1 && c.eos_ids[0] == 3 && c.bos_id == -1, "null ids");
}

int main(void) {
  g_dir = xpi_test_tmpdir("cfg");
  bundled();
  defaults();
  remove(g_dir);
  free(g_dir);
  return xpi_test_done();
}
