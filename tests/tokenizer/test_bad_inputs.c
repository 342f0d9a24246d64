/* Rejection paths of the tokenizer: crafted bad tokenizer.json / tokenizer_config.json files and bad arguments.
 * Each checks the status and that the message names the file and the field at fault. */
#include "check.h"

#define GOOD_MODEL "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [\"a b\"]}"

static char *g_dir;

/* Writes tokenizer.json (and tokenizer_config.json when cfg != NULL) and tries to load it. */
static xpi_status load_json(const char *json, const char *cfg, xpi_tokenizer **out) {
  char *p = xpi_test_strf("%s/tokenizer.json", g_dir);
  xpi_test_write_file(p, json, strlen(json));
  free(p);
  p = xpi_test_strf("%s/tokenizer_config.json", g_dir);
  if (cfg) xpi_test_write_file(p, cfg, strlen(cfg));
  else remove(p);
  free(p);
  xpi_tokenizer *t = NULL;
  xpi_status s = xpi_tokenizer_load(g_dir, &t);
  if (out) *out = t;
  else xpi_tokenizer_free(t);
  return s;
}

/* A file that must be refused with code and a message naming the file and containing needle. */
#define BAD(json, code, needle)                                                                          \
  do {                                                                                                   \
    CHECK_ERR(load_json(json, NULL, NULL), code, needle);                                                \
    CHECK(strstr(xpi_last_error(), "tokenizer.json") != NULL, "message does not name the file: %s",     \
          xpi_last_error());                                                                             \
  } while (0)

static void bad_files(void) {
  xpi_tokenizer *t = (xpi_tokenizer *)1;
  char *missing = xpi_test_strf("%s/nonexistent", g_dir);
  CHECK_ERR(xpi_tokenizer_load(missing, &t), XPI_ERR_IO, "tokenizer.json");
  CHECK(t == NULL, "out not cleared");
  free(missing);
  BAD("{\"model\": ", XPI_ERR_FORMAT, "invalid JSON");
  BAD("[1, 2]", XPI_ERR_FORMAT, "top level");
  BAD("{\"model\": 3}", XPI_ERR_FORMAT, "\"model\"");
  BAD("{\"model\": {\"type\": \"Magic\", \"vocab\": {}}}", XPI_ERR_UNSUPPORTED, "model: type \"Magic\" is not supported");
  BAD("{\"model\": {\"type\": \"Unigram\", \"vocab\": {\"a\": 0}}}", XPI_ERR_FORMAT, "model.vocab must be an array");
  BAD("{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", \"x\"]]}}", XPI_ERR_FORMAT, "model.vocab[0]");
  BAD("{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", -1.0]], \"unk_id\": 1}}", XPI_ERR_FORMAT,
      "model.unk_id");
  BAD("{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", -1.0]], \"unk_id\": 1e300}}", XPI_ERR_FORMAT,
      "model.unk_id");
  BAD("{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"a\": 0}, \"max_input_chars_per_word\": -2}}",
      XPI_ERR_FORMAT, "max_input_chars_per_word");
  BAD("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], \"dropout\": 0.1}}",
      XPI_ERR_UNSUPPORTED, "model.dropout is not supported");
  BAD("{\"model\": {\"type\": \"BPE\", \"vocab\": [], \"merges\": []}}", XPI_ERR_FORMAT, "model.vocab");
  BAD("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": \"0\"}, \"merges\": []}}", XPI_ERR_FORMAT,
      "model.vocab[\"a\"]");
  BAD("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -1}, \"merges\": []}}", XPI_ERR_FORMAT, "out of range");
  BAD("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 99999999999}, \"merges\": []}}", XPI_ERR_FORMAT, "out of range");
  /* ids like 1e300 must be range-checked before they are converted to an integer (undefined behaviour) */
  BAD("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 1e300}, \"merges\": []}}", XPI_ERR_FORMAT, "out of range");
  BAD("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -1e300}, \"merges\": []}}", XPI_ERR_FORMAT, "out of range");
  BAD("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 1e999}, \"merges\": []}}", XPI_ERR_FORMAT, "out of range");
  BAD("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0.5}, \"merges\": []}}", XPI_ERR_FORMAT, "integer id");
  BAD("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 0}, \"merges\": []}}", XPI_ERR_FORMAT,
      "id 0 is given to both");
  BAD("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"a\": 1}, \"merges\": []}}", XPI_ERR_FORMAT, "twice");
  BAD("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": {}}}", XPI_ERR_FORMAT, "model.merges");
  BAD("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [\"a c\"]}}",
      XPI_ERR_FORMAT, "model.merges[0]: token \"c\" is not in the vocabulary");
  BAD("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [[\"a\", \"b\"], "
      "[\"b\", \"a\"]]}}", XPI_ERR_FORMAT, "model.merges[1]: token \"ba\"");
  BAD("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a\"]}}", XPI_ERR_FORMAT,
      "model.merges[0]");
  BAD("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [3]}}", XPI_ERR_FORMAT, "model.merges[0]");
  BAD("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], \"byte_fallback\": 1}}", XPI_ERR_FORMAT,
      "model.byte_fallback");
  BAD("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], \"unk_token\": 5}}",
      XPI_ERR_FORMAT, "model.unk_token");
  BAD("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], \"continuing_subword_prefix\": 1}}",
      XPI_ERR_FORMAT, "continuing_subword_prefix");
  BAD("{" GOOD_MODEL ", \"added_tokens\": {}}", XPI_ERR_FORMAT, "\"added_tokens\"");
  BAD("{" GOOD_MODEL ", \"added_tokens\": [{\"id\": \"5\", \"content\": \"<s>\"}]}", XPI_ERR_FORMAT,
      "added_tokens[0].id");
  BAD("{" GOOD_MODEL ", \"added_tokens\": [{\"id\": -3, \"content\": \"<s>\"}]}", XPI_ERR_FORMAT, "out of range");
  BAD("{" GOOD_MODEL ", \"added_tokens\": [{\"id\": 1e300, \"content\": \"<s>\"}]}", XPI_ERR_FORMAT, "out of range");
  BAD("{" GOOD_MODEL ", \"post_processor\": {\"type\": \"BertProcessing\", \"cls\": [\"a\", 1e300], \"sep\": "
      "[\"b\", 1]}}", XPI_ERR_FORMAT, "post_processor.cls[1]");
  BAD("{" GOOD_MODEL ", \"added_tokens\": [{\"id\": 3, \"content\": \"\"}]}", XPI_ERR_FORMAT, "added_tokens[0].content");
  BAD("{" GOOD_MODEL ", \"added_tokens\": [{\"id\": 3, \"content\": \"<s>\", \"special\": \"yes\"}]}", XPI_ERR_FORMAT,
      "added_tokens[0].special");
  BAD("{" GOOD_MODEL ", \"normalizer\": {\"type\": \"ByteLevel\"}}", XPI_ERR_UNSUPPORTED,
      "normalizer: type \"ByteLevel\" is not supported");
  /* an unsupported component deep inside is named by its JSON path */
  BAD("{" GOOD_MODEL ", \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}, {\"type\": "
      "\"Sequence\", \"normalizers\": [{\"type\": \"Magic\"}]}]}}", XPI_ERR_UNSUPPORTED,
      "normalizer.normalizers[1].normalizers[0]: type \"Magic\" is not supported");
  BAD("{" GOOD_MODEL ", \"normalizer\": {\"type\": \"Precompiled\", \"precompiled_charsmap\": \"@@@@\"}}",
      XPI_ERR_FORMAT, "not valid base64");
  BAD("{" GOOD_MODEL ", \"normalizer\": {\"type\": \"Precompiled\", \"precompiled_charsmap\": \"AAAAAA==\"}}",
      XPI_ERR_FORMAT, "cannot hold a trie");
  BAD("{" GOOD_MODEL ", \"normalizer\": {\"type\": \"BertNormalizer\", \"lowercase\": \"yes\"}}", XPI_ERR_FORMAT,
      "\"lowercase\"");
  BAD("{" GOOD_MODEL ", \"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"Regex\": \"[\"}, \"content\": \"x\"}}",
      XPI_ERR_FORMAT, "bad regex");
  BAD("{" GOOD_MODEL ", \"normalizer\": [1]}", XPI_ERR_FORMAT, "normalizer");
  BAD("{" GOOD_MODEL ", \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\"}, "
      "{\"type\": \"FixedLength\", \"length\": 5}]}}", XPI_ERR_UNSUPPORTED,
      "pre_tokenizer.pretokenizers[1]: type \"FixedLength\" is not supported");
  BAD("{" GOOD_MODEL ", \"pre_tokenizer\": {\"type\": \"CharDelimiterSplit\", \"delimiter\": \"ab\"}}", XPI_ERR_FORMAT,
      "\"delimiter\"");
  BAD("{" GOOD_MODEL ", \"pre_tokenizer\": {\"type\": \"Punctuation\", \"behavior\": \"Sideways\"}}", XPI_ERR_FORMAT,
      "Punctuation \"behavior\"");
  BAD("{" GOOD_MODEL ", \"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"_\", \"prepend_scheme\": "
      "\"sometimes\"}}", XPI_ERR_FORMAT, "prepend_scheme \"sometimes\"");
  BAD("{" GOOD_MODEL ", \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(?i:'s|(unclosed\"}, "
      "\"behavior\": \"Isolated\", \"invert\": false}}", XPI_ERR_FORMAT, "pre_tokenizer: bad regex");
  BAD("{" GOOD_MODEL ", \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"a\"}, \"behavior\": "
      "\"Sideways\"}}", XPI_ERR_FORMAT, "Split behavior \"Sideways\"");
  BAD("{" GOOD_MODEL ", \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": 5, \"behavior\": \"Isolated\"}}",
      XPI_ERR_FORMAT, "\"pattern\"");
  BAD("{" GOOD_MODEL ", \"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Fuse\"}, {\"type\": "
      "\"Magic\"}]}}", XPI_ERR_UNSUPPORTED, "decoder.decoders[1]: type \"Magic\" is not supported");
  BAD("{" GOOD_MODEL ", \"decoder\": {\"type\": \"WordPiece\", \"cleanup\": 3}}", XPI_ERR_FORMAT, "\"cleanup\"");
  BAD("{" GOOD_MODEL ", \"decoder\": {\"type\": \"Strip\", \"content\": \"ab\", \"start\": 1, \"stop\": 0}}",
      XPI_ERR_FORMAT, "decoder: \"content\"");
  BAD("{" GOOD_MODEL ", \"post_processor\": {\"type\": \"Sequence\", \"processors\": [{\"type\": \"ByteLevel\"}, "
      "{\"type\": \"Magic\"}]}}", XPI_ERR_UNSUPPORTED, "post_processor.processors[1]: type \"Magic\" is not supported");
  BAD("{" GOOD_MODEL ", \"post_processor\": {\"type\": \"Sequence\", \"processors\": [{\"type\": \"BertProcessing\", "
      "\"cls\": [\"a\", 0], \"sep\": [\"b\", 1]}, {\"type\": \"RobertaProcessing\", \"cls\": [\"a\", 0], \"sep\": [\"b\", "
      "1]}]}}", XPI_ERR_UNSUPPORTED, "post_processor.processors[1]: a second processor");
  BAD("{" GOOD_MODEL ", \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": "
      "\"<s>\"}}, {\"Sequence\": {\"id\": \"A\"}}], \"special_tokens\": {\"<s>\": {\"ids\": [7]}}}}", XPI_ERR_FORMAT,
      "post_processor.special_tokens");
  BAD("{" GOOD_MODEL ", \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": "
      "\"<s>\"}}], \"special_tokens\": {}}}", XPI_ERR_FORMAT, "post_processor.special_tokens[\"<s>\"]");

  /* a child of a Sequence that fails to parse is freed, with the children parsed before it (the sanitizer build's
   * leak check would catch a leak): each failing child allocates before it fails */
  BAD("{" GOOD_MODEL ", \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Replace\", "
      "\"pattern\": {\"String\": \"a\"}, \"content\": \"x\"}, {\"type\": \"Replace\", \"content\": \"y\", \"pattern\": "
      "{\"Regex\": \"[\"}}]}}", XPI_ERR_FORMAT, "normalizer.normalizers[1]: bad regex");
  BAD("{" GOOD_MODEL ", \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
      "\"pattern\": {\"Regex\": \"a\"}, \"behavior\": \"Isolated\"}, {\"type\": \"Sequence\", \"pretokenizers\": "
      "[{\"type\": \"ByteLevel\"}, {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"}, \"behavior\": \"Isolated\"}]}]}}",
      XPI_ERR_FORMAT, "pre_tokenizer.pretokenizers[1].pretokenizers[1]: bad regex");
  BAD("{" GOOD_MODEL ", \"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": "
      "{\"String\": \"a\"}, \"content\": \"x\"}, {\"type\": \"Replace\", \"content\": \"y\", \"pattern\": {\"Regex\": "
      "\"[\"}}]}}", XPI_ERR_FORMAT, "decoder.decoders[1]: bad regex");
  BAD("{" GOOD_MODEL ", \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Precompiled\", "
      "\"precompiled_charsmap\": \"AAAAAA==\"}]}}", XPI_ERR_FORMAT, "normalizer.normalizers[0]");

  /* tokenizer_config.json problems */
  CHECK_ERR(load_json("{" GOOD_MODEL "}", "{\"chat_template\": ", NULL), XPI_ERR_FORMAT, "tokenizer_config.json");
  CHECK_ERR(load_json("{" GOOD_MODEL "}", "{\"chat_template\": 5}", NULL), XPI_ERR_FORMAT,
            "tokenizer_config.json: \"chat_template\"");
  CHECK_ERR(load_json("{" GOOD_MODEL "}", "{\"eos_token\": 5}", NULL), XPI_ERR_FORMAT,
            "tokenizer_config.json: \"eos_token\"");
  /* any template renders (the Jinja engine); one that does not parse still loads, and rendering names the error */
  CHECK_OK(load_json("{" GOOD_MODEL "}", "{\"chat_template\": \"{% for m in messages %}{{ m.content }}{% endfor %}\"}",
                     &t));
  xpi_chat_message m = {.role = "user", .content = "ab"};
  size_t len = 0;
  char out[16];
  CHECK_OK(xpi_apply_chat_template(t, &m, 1, NULL, out, sizeof out, &len));
  CHECK(!strcmp(out, "ab"), "generic template: %s", out);
  xpi_tokenizer_free(t);
  CHECK_OK(load_json("{" GOOD_MODEL "}", "{\"chat_template\": \"{% for m in messages %}\\n{{ m.content }\"}", &t));
  CHECK_ERR(xpi_apply_chat_template(t, &m, 1, NULL, out, sizeof out, &len), XPI_ERR_FORMAT,
            "tokenizer_config.json: chat template 'default': template syntax error at line 2, column 14");
  xpi_tokenizer_free(t);
  /* named templates: "default", or "tool_use" when tools are given; none named default needs a choice */
  CHECK_OK(load_json("{" GOOD_MODEL "}", "{\"chat_template\": [{\"name\": \"default\", \"template\": \"D\"}, "
                     "{\"name\": \"tool_use\", \"template\": \"T{{ tools|length }}\"}]}", &t));
  xpi_chat_options o;
  xpi_chat_options_default(&o);
  CHECK_OK(xpi_apply_chat_template(t, &m, 1, &o, out, sizeof out, &len));
  CHECK(!strcmp(out, "D"), "default template: %s", out);
  o.tools_json = "[{\"type\": \"function\"}]";
  CHECK_OK(xpi_apply_chat_template(t, &m, 1, &o, out, sizeof out, &len));
  CHECK(!strcmp(out, "T1"), "tool_use template: %s", out);
  o.template_name = "default";
  CHECK_OK(xpi_apply_chat_template(t, &m, 1, &o, out, sizeof out, &len));
  CHECK(!strcmp(out, "D"), "template_name: %s", out);
  o.template_name = "nope";
  CHECK_ERR(xpi_apply_chat_template(t, &m, 1, &o, out, sizeof out, &len), XPI_ERR_INVALID_ARGUMENT,
            "no chat template named 'nope' (the tokenizer has 'default', 'tool_use')");
  xpi_tokenizer_free(t);
  CHECK_OK(load_json("{" GOOD_MODEL "}", "{\"chat_template\": [{\"name\": \"rag\", \"template\": \"R\"}]}", &t));
  CHECK_ERR(xpi_apply_chat_template(t, &m, 1, NULL, out, sizeof out, &len), XPI_ERR_INVALID_ARGUMENT,
            "none is named 'default'");
  xpi_tokenizer_free(t);
  CHECK_ERR(load_json("{" GOOD_MODEL "}", "{\"chat_template\": [{\"name\": \"x\"}]}", NULL), XPI_ERR_FORMAT,
            "\"chat_template\"[0] must be {\"name\": string, \"template\": string}");
  /* special tokens as strings or AddedToken objects */
  CHECK_OK(load_json("{" GOOD_MODEL "}", "{\"bos_token\": {\"content\": \"<s>\", \"lstrip\": false}, \"eos_token\": "
                     "\"</s>\", \"chat_template\": \"{{ bos_token }}{{ eos_token }}{{ pad_token is defined }}\"}", &t));
  CHECK_OK(xpi_apply_chat_template(t, &m, 1, NULL, out, sizeof out, &len));
  CHECK(!strcmp(out, "<s></s>False"), "special tokens: %s", out);
  xpi_tokenizer_free(t);
  /* chat_template.jinja (transformers 5) wins over tokenizer_config.json */
  static const char jinja[] =
      "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\n"
      "You are a helpful assistant.<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + "
      "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>"
      "assistant\\n' }}{% endif %}";
  char *jp = xpi_test_strf("%s/chat_template.jinja", g_dir);
  xpi_test_write_file(jp, jinja, strlen(jinja));
  CHECK_OK(load_json("{" GOOD_MODEL "}", "{\"chat_template\": \"{{ unknown }}\"}", &t));
  char text[256];
  CHECK_OK(xpi_apply_chat_template(t, &m, 1, NULL, text, sizeof text, &len));
  CHECK(!strcmp(text, "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nab<|im_end|>\n"
                      "<|im_start|>assistant\n"), "chat_template.jinja: %s", text);
  xpi_tokenizer_free(t);
  remove(jp);
  free(jp);
}

static void bad_calls(void) {
  xpi_tokenizer *t = NULL;
  CHECK_OK(load_json("{" GOOD_MODEL ", \"added_tokens\": [{\"id\": 3, \"content\": \"<s>\", \"special\": true}]}",
                     NULL, &t));
  if (!t) return;
  int32_t ids[8];
  size_t n = 99;
  CHECK_ERR(xpi_tokenize(t, "ab\xff", 3, 0, ids, 8, &n), XPI_ERR_INVALID_ARGUMENT, "not valid UTF-8");
  CHECK_ERR(xpi_tokenize(t, "a\xC3", 2, 0, ids, 8, &n), XPI_ERR_INVALID_ARGUMENT, "offset 1");
  CHECK_ERR(xpi_tokenize(t, "\xED\xA0\x80", 3, 0, ids, 8, &n), XPI_ERR_INVALID_ARGUMENT, "UTF-8"); /* surrogate */
  CHECK_ERR(xpi_tokenize(t, NULL, 3, 0, ids, 8, &n), XPI_ERR_INVALID_ARGUMENT, "NULL");
  /* buffer too small: the size is still reported */
  CHECK_ERR(xpi_tokenize(t, "ab<s>ab", 7, 0, ids, 2, &n), XPI_ERR_BUFFER_TOO_SMALL, "capacity of 2");
  CHECK(n == 3, "n_out = %zu", n);
  CHECK_ERR(xpi_tokenize(t, "ab<s>ab", 7, 0, NULL, 0, &n), XPI_ERR_BUFFER_TOO_SMALL, "3 ids");
  CHECK_OK(xpi_tokenize(t, "ab<s>ab", 7, 0, ids, 3, &n));
  CHECK(n == 3 && ids[0] == 2 && ids[1] == 3 && ids[2] == 2, "ids %d %d %d", ids[0], ids[1], ids[2]);
  char text[16];
  size_t len = 0;
  int32_t bad[] = {2, 4};
  CHECK_ERR(xpi_detokenize(t, bad, 2, 0, text, sizeof text, &len), XPI_ERR_INVALID_ARGUMENT, "ids[1] = 4");
  int32_t neg[] = {-1};
  CHECK_ERR(xpi_detokenize(t, neg, 1, 0, text, sizeof text, &len), XPI_ERR_INVALID_ARGUMENT, "ids[0] = -1");
  /* no decoder: tokens joined by spaces, as tokenizers */
  CHECK_ERR(xpi_detokenize(t, ids, 3, 0, text, 9, &len), XPI_ERR_BUFFER_TOO_SMALL, "needs 9 bytes");
  CHECK(len == 9, "len_out = %zu", len);
  CHECK_ERR(xpi_detokenize(t, ids, 3, 0, NULL, 0, &len), XPI_ERR_BUFFER_TOO_SMALL, "capacity is 0");
  CHECK_OK(xpi_detokenize(t, ids, 3, 0, text, 10, &len));
  CHECK(!strcmp(text, "ab <s> ab"), "text %s", text);
  CHECK_OK(xpi_detokenize(t, ids, 3, 1, text, 9, &len));
  CHECK(!strcmp(text, "ab ab"), "skip text %s", text);
  xpi_detok_stream *s = NULL;
  CHECK_OK(xpi_detok_stream_create(t, 0, &s));
  const char *piece;
  size_t pl;
  CHECK_ERR(xpi_detok_stream_push(s, 77, &piece, &pl), XPI_ERR_INVALID_ARGUMENT, "ids[0] = 77");
  xpi_detok_stream_free(s);
  CHECK_ERR(xpi_detok_stream_create(NULL, 0, &s), XPI_ERR_INVALID_ARGUMENT, "tok is NULL");
  /* no tokenizer_config.json: no chat template */
  xpi_chat_message m = {.role = "user", .content = "ab"};
  CHECK_ERR(xpi_apply_chat_template(t, &m, 1, NULL, text, sizeof text, &len), XPI_ERR_UNSUPPORTED, "chat_template");
  xpi_tokenizer_free(t);

  /* chat template buffer too small, bad messages */
  char *q = xpi_test_strf("%s/tokenizers/qwen3", xpi_test_env("XPI_TEST_DATA"));
  CHECK_OK(xpi_tokenizer_load(q, &t));
  free(q);
  if (!t) return;
  CHECK_ERR(xpi_apply_chat_template(t, &m, 1, NULL, text, sizeof text, &len), XPI_ERR_BUFFER_TOO_SMALL, "needs");
  CHECK(len == strlen("<|im_start|>user\nab<|im_end|>\n<|im_start|>assistant\n"), "len %zu", len);
  xpi_chat_message bad_m = {.role = NULL, .content = "x"};
  CHECK_ERR(xpi_apply_chat_template(t, &bad_m, 1, NULL, text, sizeof text, &len), XPI_ERR_INVALID_ARGUMENT,
            "message 0 has no role");
  xpi_chat_message bad_u = {.role = "user", .content = "\xC0\x80"};
  CHECK_ERR(xpi_apply_chat_template(t, &bad_u, 1, NULL, text, sizeof text, &len), XPI_ERR_INVALID_ARGUMENT,
            "message 0: content is not valid UTF-8 (byte 0)");
  xpi_chat_message bad_j = {.role = "assistant", .tool_calls_json = "[{\"id\": }]"};
  CHECK_ERR(xpi_apply_chat_template(t, &bad_j, 1, NULL, text, sizeof text, &len), XPI_ERR_INVALID_ARGUMENT,
            "message 0: tool_calls_json: invalid JSON near line 1, column 9");
  bad_j.tool_calls_json = "{}";
  CHECK_ERR(xpi_apply_chat_template(t, &bad_j, 1, NULL, text, sizeof text, &len), XPI_ERR_INVALID_ARGUMENT,
            "tool_calls_json must be a JSON array");
  xpi_chat_message both = {.role = "user", .content = "a", .content_json = "\"b\""};
  CHECK_ERR(xpi_apply_chat_template(t, &both, 1, NULL, text, sizeof text, &len), XPI_ERR_INVALID_ARGUMENT,
            "content or content_json");
  xpi_chat_options small = {.struct_size = 4};
  CHECK_ERR(xpi_apply_chat_template(t, &m, 1, &small, text, sizeof text, &len), XPI_ERR_INVALID_ARGUMENT, "struct_size");
  xpi_tokenizer_free(t);
}

/* Random bytes (fixed seed) through encode, and random ids through decode and the stream: each call either
 * succeeds or is refused as INVALID_ARGUMENT, and valid UTF-8 is always accepted (the sanitizers watch). */
static void random_inputs(void) {
  char *dir = xpi_test_strf("%s/tokenizers/llama2", xpi_test_env("XPI_TEST_DATA"));
  xpi_tokenizer *t = NULL;
  CHECK_OK(xpi_tokenizer_load(dir, &t));
  free(dir);
  if (!t) return;
  uint32_t x = 12345;
  int bad_status = 0, valid_refused = 0;
  for (int iter = 0; iter < 2000; iter++) {
    unsigned char buf[64];
    size_t n = 0, len = (x = x * 1103515245u + 12345u) >> 26;
    for (size_t i = 0; i < len; i++) buf[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 24);
    int32_t ids[256];
    xpi_status s = xpi_tokenize(t, (const char *)buf, len, iter & 1, ids, 256, &n);
    if (s != XPI_OK && s != XPI_ERR_INVALID_ARGUMENT) bad_status++;
    /* the same bytes with every non-ASCII byte replaced: valid UTF-8 must be accepted */
    for (size_t i = 0; i < len; i++) buf[i] &= 0x7F;
    if (xpi_tokenize(t, (const char *)buf, len, 0, ids, 256, &n) != XPI_OK) valid_refused++;
    int32_t rid[16];
    for (int i = 0; i < 16; i++) rid[i] = (int32_t)(((x = x * 1103515245u + 12345u) >> 8) % 32100) - 50;
    char text[512];
    s = xpi_detokenize(t, rid, 16, iter & 1, text, sizeof text, &len);
    if (s != XPI_OK && s != XPI_ERR_INVALID_ARGUMENT) bad_status++;
    xpi_detok_stream *st = NULL;
    if (xpi_detok_stream_create(t, iter & 1, &st) == XPI_OK) {
      for (int i = 0; i < 16; i++) {
        const char *p;
        size_t pl;
        s = xpi_detok_stream_push(st, rid[i], &p, &pl);
        if (s != XPI_OK && s != XPI_ERR_INVALID_ARGUMENT) bad_status++;
      }
      const char *p;
      size_t pl;
      if (xpi_detok_stream_flush(st, &p, &pl) != XPI_OK) bad_status++;
      xpi_detok_stream_free(st);
    }
  }
  CHECK(bad_status == 0, "%d calls returned an unexpected status", bad_status);
  CHECK(valid_refused == 0, "%d valid UTF-8 texts were refused", valid_refused);
  xpi_tokenizer_free(t);
}

int main(void) {
  g_dir = xpi_test_tmpdir("tok_bad");
  bad_files();
  bad_calls();
  random_inputs();
  free(g_dir);
  return xpi_test_done();
}
