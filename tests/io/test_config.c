/* config.json / generation_config.json: the bundled and reference models read to the values their files hold,
 * and the transformers defaults where a field is absent (values written out by hand from the files and from
 * transformers' config classes). */
#include <math.h>
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

/* Families' config classes: their defaults where a field is absent (Gemma2Config,
 * Gemma3TextConfig, GraniteConfig, Phi3Config, SmolLM3Config, Qwen2Config, MistralConfig), per-layer layouts. */
#define FAM(type, arch, extra)                                                                                     \
  "{\"model_type\":\"" type "\",\"architectures\":[\"" arch "\"],\"hidden_size\":64,\"num_hidden_layers\":4,"          \
  "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"intermediate_size\":128,\"vocab_size\":1000,"              \
  "\"max_position_embeddings\":4096" extra "}"

static void families(void) {
  xpi_config c;
  if (load_text(FAM("gemma2", "Gemma2ForCausalLM", ""), NULL, &c) == XPI_OK) {
    CHECK(c.head_dim == 256 && c.attn_softcap == 50.0f && c.final_softcap == 30.0f && c.sliding_window == 4096 &&
              c.tie_word_embeddings == 1 && c.norm_plus_one && c.act == XPI_ACT_GELU_TANH &&
              c.attn_scale == 1.0f / 16.0f && c.embed_scale == 8.0f,
          "gemma2 defaults: hd %d caps %g %g window %d", c.head_dim, c.attn_softcap, c.final_softcap, c.sliding_window);
    CHECK(c.layer_sliding[0] && !c.layer_sliding[1] && c.layer_sliding[2] && !c.layer_sliding[3], "gemma2 even layers slide");
  }
  if (load_text(FAM("gemma2", "Gemma2ForCausalLM", ",\"attn_logit_softcapping\":null,\"final_logit_softcapping\":null,"
                                                  "\"head_dim\":16,\"query_pre_attn_scalar\":64"),
                NULL, &c) == XPI_OK)
    CHECK(c.attn_softcap == 0 && c.final_softcap == 0 && c.attn_scale == 0.125f, "gemma2 null softcaps: none");
  if (load_text(FAM("gemma3_text", "Gemma3ForCausalLM", ",\"head_dim\":16,\"sliding_window_pattern\":2,"
                                                        "\"rope_theta\":1e6,\"rope_local_base_freq\":1e4,"
                                                        "\"rope_scaling\":{\"rope_type\":\"linear\",\"factor\":8.0}"),
                NULL, &c) == XPI_OK) {
    CHECK(c.attn_softcap == 0 && c.final_softcap == 0 && c.qk_norm == XPI_QK_PER_HEAD, "gemma3: no softcaps, q/k norm");
    CHECK(c.layer_sliding[0] && !c.layer_sliding[1] && c.layer_sliding[2] && !c.layer_sliding[3], "gemma3 pattern 2");
    CHECK(c.n_rope == 2 && c.rope[0].p.theta == 1e6f && c.rope[0].linear_factor == 8.0f && c.rope[1].p.theta == 1e4f &&
              c.rope[1].linear_factor == 1.0f,
          "gemma3 v4 rope: global scaled, local base unscaled");
  }
  if (load_text(FAM("gemma3_text", "Gemma3ForCausalLM", ",\"head_dim\":16,\"rope_parameters\":{\"full_attention\":"
                                                        "{\"rope_type\":\"linear\",\"factor\":8.0,\"rope_theta\":1e6},"
                                                        "\"sliding_attention\":{\"rope_type\":\"default\",\"rope_theta\":1e4}}"),
                NULL, &c) == XPI_OK)
    CHECK(c.n_rope == 2 && c.rope[0].p.theta == 1e6f && c.rope[0].linear_factor == 8.0f && c.rope[1].p.theta == 1e4f,
          "gemma3 v5 per-layer-type rope_parameters");
  if (load_text(FAM("olmo2", "Olmo2ForCausalLM", ""), NULL, &c) == XPI_OK)
    CHECK(c.rms_norm_eps == 1e-5f && c.qk_norm == XPI_QK_WHOLE && c.rope[0].p.theta == 1e4f, "olmo2 defaults");
  if (load_text(FAM("phi3", "Phi3ForCausalLM", ",\"rms_norm_eps\":1e-6"), NULL, &c) == XPI_OK)
    CHECK(c.rms_norm_eps == 1e-6f, "phi3: a given rms_norm_eps wins over the class default");
  if (load_text(FAM("smollm3", "SmolLM3ForCausalLM", ""), NULL, &c) == XPI_OK)
    CHECK(c.rope[0].p.theta == 2e6f && c.layer_norope[3] && !c.layer_norope[2], "smollm3 defaults");
  if (load_text(FAM("gemma3_text", "Gemma3ForCausalLM", ",\"head_dim\":16"), NULL, &c) == XPI_OK)
    CHECK(c.rope[0].p.theta == 1e6f && c.rope[1].p.theta == 1e4f && c.layer_sliding[0] && c.layer_sliding[3],
          "gemma3 defaults: bases 1e6 / 1e4, pattern 6");
  if (load_text(FAM("granite", "GraniteForCausalLM", ",\"embedding_multiplier\":12,\"residual_multiplier\":0.25,"
                                                     "\"attention_multiplier\":0.5,\"logits_scaling\":4"),
                NULL, &c) == XPI_OK)
    CHECK(c.embed_scale == 12.0f && c.residual_scale == 0.25f && c.attn_scale == 0.5f && c.logit_scale == 0.25f,
          "granite multipliers");
  if (load_text(FAM("smollm3", "SmolLM3ForCausalLM", ",\"no_rope_layer_interval\":2"), NULL, &c) == XPI_OK)
    CHECK(!c.layer_norope[0] && c.layer_norope[1] && !c.layer_norope[2] && c.layer_norope[3] && c.tie_word_embeddings,
          "smollm3 interval 2: layers 1 and 3 without RoPE");
  if (load_text(FAM("qwen2", "Qwen2ForCausalLM", ",\"sliding_window\":128,\"use_sliding_window\":true,"
                                                 "\"max_window_layers\":2"),
                NULL, &c) == XPI_OK)
    CHECK(c.sliding_window == 128 && !c.layer_sliding[1] && c.layer_sliding[2] && c.layer_sliding[3],
          "qwen2: layers >= max_window_layers slide");
  if (load_text(FAM("mistral", "MistralForCausalLM", ",\"sliding_window\":4096"), NULL, &c) == XPI_OK)
    CHECK(c.sliding_window == 4096 && c.layer_sliding[0] && c.layer_sliding[3], "mistral: every layer");
  /* Phi-3 longrope: factor = max / original = 4 gives attention_factor sqrt(1 + ln 4 / ln 1024) (transformers'
   * _compute_longrope_parameters), folded squared into the attention scale; the long factors from 1024 on. */
  if (load_text(FAM("phi3", "Phi3ForCausalLM", ",\"original_max_position_embeddings\":1024,\"rope_scaling\":{"
                                               "\"type\":\"longrope\",\"short_factor\":[1,1,1,1,1,1,1,2],"
                                               "\"long_factor\":[2,2,2,2,2,2,2,2]}"),
                NULL, &c) == XPI_OK) {
    double af = sqrt(1.0 + log(4.0) / log(1024.0));
    CHECK(fabs(c.rope[0].attention_factor - af) < 1e-6 && fabs(c.attn_scale - af * af / 4.0) < 1e-6 &&
              c.rope[0].has_ext && c.rope[0].ext[7] == 2.0f,
          "phi3 longrope: attention factor %g scale %g", c.rope[0].attention_factor, c.attn_scale);
    CHECK(c.max_position_embeddings == 4096 && c.rope_long_from == 1024 && c.rope[0].long_from == 1024 &&
              c.rope[0].ext_long[0] == 2.0f,
          "longrope context: %d, long factors from %d", c.max_position_embeddings, c.rope_long_from);
  }
}

int main(void) {
  g_dir = xpi_test_tmpdir("cfg");
  bundled();
  defaults();
  families();
  remove(g_dir);
  free(g_dir);
  return xpi_test_done();
}
