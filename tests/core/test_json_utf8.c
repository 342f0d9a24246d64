/* JSON text must be UTF-8 (RFC 8259), as tokenizers, transformers and safetensors require: a tokenizer.json with
 * invalid bytes in a token must not load, or decode would return text that is not UTF-8 (the fuzz input
 * tests/fuzz/corpus/tokenizer/regress_invalid_utf8_token). Checks the
 * validator on each kind of bad sequence, then every JSON reader and the safetensors header through it. */
#include "check.h"
#include "core/json.h"
#include "io/safetensors_internal.h"
#include "model/config.h"

static void expect_invalid_at(const char *s, size_t n, size_t at) {
  size_t got = xpi_utf8_invalid_at(s, n);
  CHECK(got == at, "xpi_utf8_invalid_at(\"%.*s\") = %zu, want %zu", (int)n, s, got, at);
}

static char *write_in(const char *dir, const char *name, const char *text) {
  char *path = xpi_test_strf("%s/%s", dir, name);
  CHECK(xpi_test_write_file(path, text, strlen(text)) == 0, "writing %s", path);
  return path;
}

int main(void) {
  /* valid: ASCII, 2/3/4-byte forms, U+10FFFF, and an empty string */
  const char ok[] = "a\xc3\xa9\xe4\xbd\xa0\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf";
  expect_invalid_at(ok, sizeof ok - 1, sizeof ok - 1);
  expect_invalid_at("", 0, 0);
  expect_invalid_at("ab\x80", 3, 2);                 /* lone continuation byte */
  expect_invalid_at("ab\xc0\x80", 4, 2);             /* overlong NUL */
  expect_invalid_at("\xe0\x80\xaf", 3, 0);           /* overlong '/' */
  expect_invalid_at("x\xed\xa0\x80", 4, 1);          /* UTF-16 surrogate D800 */
  expect_invalid_at("\xf4\x90\x80\x80", 4, 0);       /* above U+10FFFF */
  expect_invalid_at("\xe2\x82", 2, 0);               /* truncated */
  expect_invalid_at("\xe2\x82x", 3, 0);              /* truncated, then ASCII */
  expect_invalid_at("\xff", 1, 0);

  cJSON *j = NULL;
  CHECK_OK(xpi_json_parse("ok.json", "{\"k\": \"caf\xc3\xa9\"}", 15, &j));
  cJSON_Delete(j);
  j = NULL;
  CHECK_ERR(xpi_json_parse("bad.json", "{\"k\": \"caf\xe9\"}", 14, &j), XPI_ERR_FORMAT,
            "bad.json: not valid UTF-8 (byte 0xe9 at offset 10)");
  CHECK(j == NULL, "a rejected parse returned a tree");

  char *dir = xpi_test_tmpdir("json_utf8");
  /* tokenizer.json: a vocabulary token with a Latin-1 byte */
  char *tj = write_in(dir, "tokenizer.json",
                      "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"\xe9\":1},\"merges\":[]},\"added_tokens\":[]}");
  xpi_tokenizer *tok = NULL;
  CHECK_ERR(xpi_tokenizer_load(dir, &tok), XPI_ERR_FORMAT, "not valid UTF-8");
  CHECK(tok == NULL, "a rejected tokenizer was returned");
  /* config.json */
  char *cj = write_in(dir, "config.json", "{\"model_type\": \"qwen3\", \"architectures\": [\"Qwen3\xff\"]}");
  xpi_config cfg;
  CHECK_ERR(xpi_config_load(dir, &cfg), XPI_ERR_FORMAT, "config.json: not valid UTF-8");
  /* safetensors header: a tensor name with a stray continuation byte */
  static const char hdr[] = "{\"w\x80\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  unsigned char img[8 + sizeof hdr + 4];
  size_t hl = sizeof hdr - 1;
  for (int i = 0; i < 8; i++) img[i] = (unsigned char)((uint64_t)hl >> (8 * i));
  memcpy(img + 8, hdr, hl);
  memset(img + 8 + hl, 0, 4);
  xpi_st_tensor *ts = NULL;
  size_t n = 0;
  uint64_t payload = 0;
  CHECK_ERR(xpi_st_parse_header("x.safetensors", img, 8 + hl + 4, &ts, &n, &payload), XPI_ERR_FORMAT,
            "header is not valid UTF-8 (byte 0x80 at offset 3");
  CHECK(ts == NULL && n == 0, "a rejected header returned tensors");
  free(tj), free(cj), free(dir);
  return xpi_test_done();
}
