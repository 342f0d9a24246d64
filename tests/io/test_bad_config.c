/* Every rejection path of config.json / generation_config.json: a valid base config with one field changed
 * (or removed) per case; each must fail with the expected code and a message naming the file and the field. */
#include <string.h>

#include "check.h"
#include "model/config.h"
#include "model/family.h"

static char *g_dir;

static const char *k_base_llama =
    "{\"architectures\":[\"LlamaForCausalLM\"],\"model_type\":\"llama\",\"hidden_size\":64,"
    "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"intermediate_size\":128,"
    "\"vocab_size\":1000,\"max_position_embeddings\":4096,\"rms_norm_eps\":1e-5,\"rope_theta\":500000.0,"
    "\"torch_dtype\":\"bfloat16\",\"bos_token_id\":1,\"eos_token_id\":2,\"hidden_act\":\"silu\"}";

/* base with edits "key", "json value" pairs (NULL value: remove the key) applied, written to g_dir. */
static void write_config(const char *base, const char *const *edits, const char *gen) {
  cJSON *j = cJSON_Parse(base);
  for (int i = 0; edits && edits[i]; i += 2) {
    cJSON_DeleteItemFromObjectCaseSensitive(j, edits[i]);
    if (edits[i + 1]) {
      cJSON *v = cJSON_Parse(edits[i + 1]);
      if (!v) {
        fprintf(stderr, "bad test edit %s\n", edits[i + 1]);
        exit(2);
      }
      cJSON_AddItemToObject(j, edits[i], v);
    }
  }
  char *txt = cJSON_Print(j);
  char *p = xpi_test_strf("%s/config.json", g_dir), *g = xpi_test_strf("%s/generation_config.json", g_dir);
  CHECK(xpi_test_write_file(p, txt, strlen(txt)) == 0, "write");
  remove(g);
  if (gen) CHECK(xpi_test_write_file(g, gen, strlen(gen)) == 0, "write");
  free(p);
  free(g);
  free(txt);
  cJSON_Delete(j);
}

static void expect(int line, const char *base, const char *const *edits, const char *gen, xpi_status code,
                   const char *file, const char *needle) {
  write_config(base, edits, gen);
  xpi_config c;
  memset(&c, 0x5a, sizeof c);
  xpi_status s = xpi_config_load(g_dir, &c);
  const char *msg = xpi_last_error();
  CHECK(s == code && strstr(msg, file) && strstr(msg, needle),
        "case at line %d: got %s \"%s\", want %s naming %s and \"%s\"", line, xpi_status_name(s), msg,
        xpi_status_name(code), file, needle);
  if (s != XPI_OK) CHECK(c.n_eos == 0 && c.bos_id == -1, "a failed load leaves a cleared config");
}
#define E(...) ((const char *const[]){__VA_ARGS__, NULL})
#define BAD(edits, code, needle) expect(__LINE__, k_base_llama, edits, NULL, code, "config.json", needle)
#define BADF(edits, needle) BAD(edits, XPI_ERR_FORMAT, needle)
#define UNS(edits, needle) BAD(edits, XPI_ERR_UNSUPPORTED, needle)
#define BADGEN(gen, code, needle) expect(__LINE__, k_base_llama, NULL, gen, code, "generation_config.json", needle)

/* "(supported: a, b, c)" of every registered family's model_type (arch 0) or architecture (arch 1). */
static char *supported(int arch) {
  char *acc = xpi_test_strf("(supported: ");
  for (size_t i = 0; i < xpi_family_count(); i++) {
    const xpi_family *f = xpi_family_at(i);
    char *next = xpi_test_strf("%s%s%s", acc, i ? ", " : "", arch ? f->architecture : f->name);
    free(acc);
    acc = next;
  }
  char *out = xpi_test_strf("%s)", acc);
  free(acc);
  return out;
}

static void family_cases(void) {
  CHECK(xpi_family_count() >= 12 && xpi_family_at(xpi_family_count()) == NULL, "the registry lists the families");
  char *types = supported(0), *archs = supported(1);
  char *want = xpi_test_strf("\"model_type\" \"gemma\" is not supported %s", types);
  UNS(E("model_type", "\"gemma\""), want);
  free(want);
  want = xpi_test_strf("\"architectures\" entry \"GemmaForCausalLM\" is not supported %s", archs);
  UNS(E("architectures", "[\"GemmaForCausalLM\"]"), want);
  free(want);
  want = xpi_test_strf("neither \"model_type\" nor \"architectures\" is given %s", types);
  BADF(E("model_type", NULL, "architectures", NULL), want);
  free(want);
  free(types);
  free(archs);
  UNS(E("architectures", "[\"LlamaForCausalLM\",\"MixtralForCausalLM\"]"), "MixtralForCausalLM");
  BADF(E("model_type", "\"qwen3_moe\"", "architectures", "[\"Qwen3MoeForCausalLM\"]"), "\"num_experts\"");
  BADF(E("architectures", "\"LlamaForCausalLM\""), "\"architectures\" must be a non-empty list");
  BADF(E("architectures", "[]"), "\"architectures\" must be a non-empty list");
  BADF(E("architectures", "[3]"), "\"architectures\" must be a non-empty list");
  BADF(E("model_type", "3"), "\"model_type\" must be a string");
  BADF(E("architectures", "[\"Qwen2ForCausalLM\"]"), "\"model_type\" \"llama\" contradicts \"architectures\"");
  BADF(E("model_type", NULL, "architectures", NULL), "neither \"model_type\" nor \"architectures\"");
}

static void size_cases(void) {
  static const char *req[] = {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                              "num_attention_heads", "max_position_embeddings"};
  for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
    char *missing = xpi_test_strf("\"%s\" is missing", req[i]);
    char *field = xpi_test_strf("\"%s\"", req[i]);
    BADF(E(req[i], NULL), missing);
    BADF(E(req[i], "0"), field);
    BADF(E(req[i], "-64"), field);
    BADF(E(req[i], "1.5"), field);
    BADF(E(req[i], "\"64\""), field);
    BADF(E(req[i], "1e300"), field);
    free(missing);
    free(field);
  }
  BADF(E("num_key_value_heads", "3"), "\"num_attention_heads\" = 4 is not a multiple of \"num_key_value_heads\" = 3");
  BADF(E("num_key_value_heads", "8"), "\"num_key_value_heads\" = 8");
  BADF(E("num_key_value_heads", "0"), "\"num_key_value_heads\"");
  BADF(E("hidden_size", "66"), "\"head_dim\" is missing and \"hidden_size\" = 66 is not divisible");
  BADF(E("head_dim", "15"), "\"head_dim\" = 15 must be even");
  BADF(E("head_dim", "0"), "\"head_dim\"");
  BADF(E("head_dim", "4194304"), "\"head_dim\"");
  BADF(E("head_dim", "16384", "num_attention_heads", "4096", "num_key_value_heads", "1"),
       "\"num_attention_heads\" x \"head_dim\"");
  BADF(E("rms_norm_eps", "0"), "\"rms_norm_eps\" = 0 is out of range");
  BADF(E("rms_norm_eps", "-1e-6"), "\"rms_norm_eps\"");
  BADF(E("rms_norm_eps", "2"), "\"rms_norm_eps\"");
  BADF(E("rms_norm_eps", "\"1e-6\""), "\"rms_norm_eps\" must be a finite number");
  BADF(E("tie_word_embeddings", "1"), "\"tie_word_embeddings\" must be true or false");
  BADF(E("attention_bias", "\"no\""), "\"attention_bias\" must be true or false");
}

static void feature_cases(void) {
  UNS(E("hidden_act", "\"gelu\""), "\"hidden_act\" \"gelu\" is not supported (silu, gelu_pytorch_tanh)");
  BADF(E("hidden_act", "1"), "\"hidden_act\"");
  UNS(E("mlp_bias", "true"), "\"mlp_bias\"");
  BADF(E("model_type", "\"mistral\"", "architectures", "[\"MistralForCausalLM\"]", "sliding_window", "0"),
       "\"sliding_window\"");
  BADF(E("model_type", "\"qwen2\"", "architectures", "[\"Qwen2ForCausalLM\"]", "sliding_window", "1024",
         "use_sliding_window", "1"),
       "\"use_sliding_window\" must be true or false");
  UNS(E("model_type", "\"mistral\"", "architectures", "[\"MistralForCausalLM\"]", "layer_types",
        "[\"full_attention\",\"chunked_attention\"]"),
      "\"layer_types\"[1] is \"chunked_attention\" (supported: full_attention, sliding_attention)");
  BADF(E("model_type", "\"mistral\"", "architectures", "[\"MistralForCausalLM\"]", "layer_types",
         "[\"full_attention\"]"),
       "\"layer_types\" must be a list of 2 strings (one per layer)");
  /* mixture of experts: the expert sizes are required (tests/model/test_moe_config has the rest) */
  BADF(E("model_type", "\"qwen2_moe\"", "architectures", "[\"Qwen2MoeForCausalLM\"]", "num_experts", "4",
         "num_experts_per_tok", "2"),
       "\"moe_intermediate_size\" is missing");
  UNS(E("model_type", "\"gemma2\"", "architectures", "[\"Gemma2ForCausalLM\"]", "hidden_activation", "\"gelu\""),
      "\"hidden_activation\" \"gelu\" is not supported (silu, gelu_pytorch_tanh)");
  BADF(E("model_type", "\"smollm3\"", "architectures", "[\"SmolLM3ForCausalLM\"]", "no_rope_layers", "[1,2]"),
       "\"no_rope_layers\"[1] must be 0 or 1");
  BADF(E("model_type", "\"phi3\"", "architectures", "[\"Phi3ForCausalLM\"]", "rope_scaling",
         "{\"rope_type\":\"longrope\",\"short_factor\":[1,1],\"long_factor\":[1,1,1,1,1,1,1,1]}"),
       "\"short_factor\" must be a list of head_dim / 2 = 8 numbers");
  BADF(E("model_type", "\"qwen2\"", "architectures", "[\"Qwen2ForCausalLM\"]", "layer_types", "\"full_attention\""),
       "\"layer_types\" must be a list");
  BADF(E("model_type", "\"gemma2\"", "architectures", "[\"Gemma2ForCausalLM\"]", "layer_types", "[1, 2]"),
       "\"layer_types\" must be a list of strings");
}

static void rope_cases(void) {
  BADF(E("rope_theta", "0"), "\"rope_theta\" = 0 is out of range");
  BADF(E("rope_theta", "-10000"), "\"rope_theta\"");
  BADF(E("rope_theta", "\"1e4\""), "\"rope_theta\"");
  BADF(E("rope_parameters", "{\"rope_type\":\"default\",\"rope_theta\":0}"), "rope_parameters: \"rope_theta\"");
  BADF(E("rope_scaling", "[]"), "\"rope_scaling\" must be a JSON object");
  BADF(E("rope_parameters", "3"), "\"rope_parameters\" must be a JSON object");
  UNS(E("rope_scaling", "{\"rope_type\":\"yarn\",\"factor\":4.0}"),
      "rope_scaling: rope_type \"yarn\" is not supported (supported: default, llama3, linear, longrope)");
  BADF(E("rope_scaling", "{\"type\":\"linear\"}"), "\"factor\" is missing (needed by rope_type linear)");
  UNS(E("rope_parameters", "{\"rope_type\":\"dynamic\",\"rope_theta\":10000.0,\"factor\":2.0}"),
      "rope_parameters: rope_type \"dynamic\"");
  BADF(E("rope_scaling", "{\"rope_type\":3}"), "\"rope_type\" must be a string");
  static const char *l3[] = {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"};
  for (int i = 0; i < 4; i++) {
    /* llama3 scaling with one parameter left out */
    char *js = xpi_test_strf("{\"rope_type\":\"llama3\"%s%s%s%s}", i == 0 ? "" : ",\"factor\":8.0",
                             i == 1 ? "" : ",\"low_freq_factor\":1.0", i == 2 ? "" : ",\"high_freq_factor\":4.0",
                             i == 3 ? "" : ",\"original_max_position_embeddings\":8192");
    char *needle = xpi_test_strf("rope_scaling: \"%s\" is missing (needed by rope_type llama3)", l3[i]);
    BADF(E("rope_scaling", js), needle);
    free(js);
    free(needle);
  }
  BADF(E("rope_scaling", "{\"rope_type\":\"llama3\",\"factor\":0.5,\"low_freq_factor\":1.0,"
                         "\"high_freq_factor\":4.0,\"original_max_position_embeddings\":8192}"),
       "rope_scaling: \"factor\" = 0.5 is out of range");
  BADF(E("rope_scaling", "{\"rope_type\":\"llama3\",\"factor\":8.0,\"low_freq_factor\":4.0,"
                         "\"high_freq_factor\":4.0,\"original_max_position_embeddings\":8192}"),
       "\"high_freq_factor\" = 4 must be greater than \"low_freq_factor\" = 4");
  BADF(E("rope_scaling", "{\"rope_type\":\"llama3\",\"factor\":8.0,\"low_freq_factor\":0,"
                         "\"high_freq_factor\":4.0,\"original_max_position_embeddings\":8192}"),
       "\"low_freq_factor\"");
  BADF(E("rope_scaling", "{\"rope_type\":\"llama3\",\"factor\":8.0,\"low_freq_factor\":1.0,"
                         "\"high_freq_factor\":4.0,\"original_max_position_embeddings\":0}"),
       "rope_scaling: \"original_max_position_embeddings\"");
  UNS(E("partial_rotary_factor", "0.5"), "\"partial_rotary_factor\" = 0.5 is not supported");
  UNS(E("rope_parameters", "{\"rope_type\":\"default\",\"partial_rotary_factor\":0.25}"),
      "rope_parameters: \"partial_rotary_factor\"");
}

static void dtype_and_ids_cases(void) {
  UNS(E("torch_dtype", "\"float64\""), "\"torch_dtype\" \"float64\" is not supported");
  UNS(E("torch_dtype", NULL, "dtype", "\"int8\""), "\"dtype\" \"int8\" is not supported");
  BADF(E("dtype", "16"), "\"dtype\" must be a string");
  BADF(E("eos_token_id", "1000"), "\"eos_token_id\" must be a token id in [0, 1000)");
  BADF(E("eos_token_id", "-1"), "\"eos_token_id\"");
  BADF(E("eos_token_id", "\"2\""), "\"eos_token_id\"");
  BADF(E("eos_token_id", "[2, 2.5]"), "\"eos_token_id\"");
  BADF(E("eos_token_id", "{}"), "\"eos_token_id\"");
  UNS(E("eos_token_id", "[1,2,3,4,5,6,7,8,9]"), "\"eos_token_id\": more than 8 distinct eos ids");
  BADF(E("bos_token_id", "1000"), "\"bos_token_id\" = 1000 is out of range");
  BADF(E("bos_token_id", "[1]"), "\"bos_token_id\" must be an integer");

  /* generation_config.json */
  BADGEN("{\"do_sample\":", XPI_ERR_FORMAT, "invalid JSON");
  BADGEN("[]", XPI_ERR_FORMAT, "not a JSON object");
  BADGEN("{\"do_sample\":\"yes\"}", XPI_ERR_FORMAT, "\"do_sample\" must be true or false");
  BADGEN("{\"temperature\":-0.5}", XPI_ERR_FORMAT, "\"temperature\" = -0.5 is out of range");
  BADGEN("{\"top_p\":1.5}", XPI_ERR_FORMAT, "\"top_p\" = 1.5 is out of range");
  BADGEN("{\"top_k\":-1}", XPI_ERR_FORMAT, "\"top_k\"");
  BADGEN("{\"top_k\":2.5}", XPI_ERR_FORMAT, "\"top_k\" must be an integer");
  BADGEN("{\"repetition_penalty\":0}", XPI_ERR_FORMAT, "\"repetition_penalty\" = 0 is out of range");
  BADGEN("{\"max_new_tokens\":-5}", XPI_ERR_FORMAT, "\"max_new_tokens\"");
  BADGEN("{\"eos_token_id\":[2,\"x\"]}", XPI_ERR_FORMAT, "\"eos_token_id\"");
  BADGEN("{\"eos_token_id\":[3,4,5,6,7,8,9,10]}", XPI_ERR_UNSUPPORTED, "more than 8 distinct eos ids");
  BADGEN("{\"bos_token_id\":-2}", XPI_ERR_FORMAT, "\"bos_token_id\"");
}

static void file_cases(void) {
  char *p = xpi_test_strf("%s/config.json", g_dir);
  xpi_config c;
  remove(p);
  CHECK_ERR(xpi_config_load(g_dir, &c), XPI_ERR_NOT_FOUND, "no config.json");
  CHECK(strstr(xpi_last_error(), g_dir) != NULL, "names the folder: %s", xpi_last_error());
  const char *broken = "{\"model_type\": \"llama\",,}";
  CHECK(xpi_test_write_file(p, broken, strlen(broken)) == 0, "write");
  CHECK_ERR(xpi_config_load(g_dir, &c), XPI_ERR_FORMAT, "invalid JSON near line 1");
  CHECK(strstr(xpi_last_error(), "config.json") != NULL, "names the file: %s", xpi_last_error());
  CHECK(xpi_test_write_file(p, "[1,2]", 5) == 0, "write");
  CHECK_ERR(xpi_config_load(g_dir, &c), XPI_ERR_FORMAT, "config.json: not a JSON object");
  remove(p);
  free(p);
}

/* Random edits to a full config text: never a crash or leak; a success must hold sane values. */
static void mutation_loop(void) {
  static const char *base =
      "{\"architectures\":[\"Qwen3ForCausalLM\"],\"model_type\":\"qwen3\",\"hidden_size\":64,"
      "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"
      "\"intermediate_size\":128,\"vocab_size\":1000,\"max_position_embeddings\":4096,\"rms_norm_eps\":1e-6,"
      "\"rope_scaling\":{\"rope_type\":\"llama3\",\"factor\":8.0,\"low_freq_factor\":1.0,\"high_freq_factor\":4.0,"
      "\"original_max_position_embeddings\":8192},\"sliding_window\":null,\"tie_word_embeddings\":true,"
      "\"torch_dtype\":\"bfloat16\",\"bos_token_id\":1,\"eos_token_id\":[2,3]}";
  static const char alphabet[] = "{}[]\",:-.0123456789eltn ";
  uint64_t rng = 0x2545F4914F6CDD1Dull;
  size_t n = strlen(base);
  char *m = malloc(n + 1), *p = xpi_test_strf("%s/config.json", g_dir);
  char *g = xpi_test_strf("%s/generation_config.json", g_dir);
  remove(g); /* left by the cases above */
  free(g);
  int ok = 0;
  for (int it = 0; it < 1000; it++) {
    memcpy(m, base, n + 1);
    size_t len = n;
    for (int e = 0; e < 2; e++) {
      rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
      uint64_t r = rng * 2685821657736338717ull;
      if ((r >> 60) == 0) len = (size_t)((r >> 8) % (len + 1)); /* sometimes truncate */
      else m[(r >> 8) % n] = alphabet[(r >> 40) % (sizeof alphabet - 1)];
    }
    CHECK(xpi_test_write_file(p, m, len) == 0, "write");
    xpi_config c;
    if (xpi_config_load(g_dir, &c) == XPI_OK) {
      ok++;
      CHECK(c.hidden_size > 0 && c.n_heads > 0 && c.n_heads % c.n_kv_heads == 0 && c.head_dim % 2 == 0 &&
                c.n_eos <= XPI_MAX_EOS && c.rms_norm_eps > 0,
            "accepted config with bad values: %.*s", (int)len, m);
    }
  }
  /* Edits inside key names or string values often keep the file valid; if none did, the loop tested nothing. */
  CHECK(ok > 0 && ok < 1000, "config mutation loop accepted %d of 1000", ok);
  printf("config mutation loop: %d of 1000 accepted\n", ok);
  remove(p);
  free(p);
  free(m);
}

int main(void) {
  g_dir = xpi_test_tmpdir("badcfg");
  /* The base itself must load, so each failure below comes from its one edit. */
  expect(__LINE__, k_base_llama, NULL, "{\"do_sample\":true,\"temperature\":0.6,\"top_p\":0.9}", XPI_OK, "", "");
  family_cases();
  size_cases();
  feature_cases();
  rope_cases();
  dtype_and_ids_cases();
  file_cases();
  mutation_loop();
  char *g = xpi_test_strf("%s/generation_config.json", g_dir);
  remove(g);
  free(g);
  remove(g_dir);
  free(g_dir);
  return xpi_test_done();
}
