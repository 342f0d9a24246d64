/* A post-processor id that names no token (a hole between the vocabulary and added_tokens) is refused at load:
 * accepted, encode(add_special) would put it in front of every prompt and decode would refuse the ids encode gave
 * (the fuzz input tests/fuzz/corpus/tokenizer/regress_post_id_hole). */
#include "check.h"

static const char *k_tpl =
    "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b\"]},"
    "\"added_tokens\":[{\"id\":5,\"content\":\"<s>\",\"special\":true,\"single_word\":false,\"lstrip\":false,"
    "\"rstrip\":false,\"normalized\":false}],"
    "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<s>\",\"type_id\":0}},"
    "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],\"special_tokens\":{\"<s>\":{\"id\":\"<s>\",\"ids\":[%d],"
    "\"tokens\":[\"<s>\"]}}}}";

static xpi_status load_with_post_id(int id, xpi_tokenizer **tok) {
  char *dir = xpi_test_tmpdir("post_ids");
  char *json = xpi_test_strf(k_tpl, id), *path = xpi_test_strf("%s/tokenizer.json", dir);
  CHECK(xpi_test_write_file(path, json, strlen(json)) == 0, "writing %s", path);
  xpi_status s = xpi_tokenizer_load(dir, tok);
  free(json), free(path), free(dir);
  return s;
}

int main(void) {
  xpi_tokenizer *tok = NULL;
  /* The reference: the post-processor's id is the added token's; encode puts it first and decode takes it. */
  CHECK_OK(load_with_post_id(5, &tok));
  if (tok) {
    int32_t ids[8];
    size_t n = 0;
    CHECK_OK(xpi_tokenize(tok, "ab", 2, 1, ids, 8, &n));
    CHECK(n == 2 && ids[0] == 5 && ids[1] == 2, "encode(\"ab\") = %zu ids [%d, %d], want [5, 2]", n, ids[0], ids[1]);
    char text[32];
    size_t len = 0;
    CHECK_OK(xpi_detokenize(tok, ids, n, 0, text, sizeof text, &len));
    /* no decoder: tokens joined by spaces, as tokenizers does */
    CHECK(!strcmp(text, "<s> ab"), "decode = \"%s\", want \"<s> ab\"", text);
    xpi_tokenizer_free(tok);
    tok = NULL;
  }
  /* Ids 3 and 4 lie inside the id range (the added token is 5) but name no token. */
  for (int id = 3; id <= 4; id++) {
    CHECK_ERR(load_with_post_id(id, &tok), XPI_ERR_FORMAT, "is not the id of a token");
    CHECK(tok == NULL, "a failed load returned a tokenizer");
  }
  CHECK_ERR(load_with_post_id(6, &tok), XPI_ERR_FORMAT, "post_processor");
  return xpi_test_done();
}
