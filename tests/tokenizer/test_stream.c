/* Streaming decode equals the full decode, for both skip_special flags: a skipped special token inside a run
 * of <0xNN> byte tokens must not end the pending run (else the stream emits different, invalid UTF-8), then a property test over random id sequences of every committed tokenizer, with runs of
 * byte tokens (split characters, invalid bytes) and special tokens inside them. */
#include "check.h"
#include "tokenizer/tokenizer.h" /* token_id, is_special, token_text */

/* Pushes ids one by one and flushes; returns the concatenated pieces (caller frees) or NULL on an error. */
static char *streamed(const xpi_tokenizer *t, const int32_t *ids, size_t n, int skip, size_t *len) {
  xpi_detok_stream *s = NULL;
  if (xpi_detok_stream_create(t, skip, &s)) return NULL;
  size_t cap = 256;
  char *all = malloc(cap);
  *len = 0;
  for (size_t i = 0; i <= n; i++) {
    const char *p;
    size_t pl;
    xpi_status st = i < n ? xpi_detok_stream_push(s, ids[i], &p, &pl) : xpi_detok_stream_flush(s, &p, &pl);
    if (st) { free(all); xpi_detok_stream_free(s); return NULL; }
    while (*len + pl + 1 > cap) all = realloc(all, cap *= 2);
    memcpy(all + *len, p, pl);
    *len += pl;
  }
  all[*len] = 0;
  xpi_detok_stream_free(s);
  return all;
}

static char *full(const xpi_tokenizer *t, const int32_t *ids, size_t n, int skip, size_t *len) {
  if (xpi_detokenize(t, ids, n, skip, NULL, 0, len) != XPI_ERR_BUFFER_TOO_SMALL) return NULL;
  char *b = malloc(*len + 1);
  if (xpi_detokenize(t, ids, n, skip, b, *len + 1, len)) { free(b); return NULL; }
  return b;
}

/* 1 when the stream equals the full decode for both flags (reports the first difference). */
static int same(const char *name, const xpi_tokenizer *t, const int32_t *ids, size_t n) {
  int ok = 1;
  for (int skip = 0; skip < 2; skip++) {
    size_t la = 0, lb = 0;
    char *a = full(t, ids, n, skip, &la), *b = streamed(t, ids, n, skip, &lb);
    int eq = a && b && la == lb && !memcmp(a, b, la);
    if (!eq && ok) {
      fprintf(stderr, "%s skip=%d: stream differs from decode for ids", name, skip);
      for (size_t i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
      fprintf(stderr, "\n  decode \"%s\"\n  stream \"%s\"\n", a ? a : "(error)", b ? b : "(error)");
    }
    ok &= eq;
    free(a);
    free(b);
  }
  return ok;
}

static void special_inside_byte_run(void) {
  char *dir = xpi_test_strf("%s/tokenizers/llama2", xpi_test_env("XPI_TEST_DATA"));
  xpi_tokenizer *t = NULL;
  CHECK_OK(xpi_tokenizer_load(dir, &t));
  free(dir);
  if (!t) return;
  const int32_t ids[] = {44, 0, 191, 296}; /* <0x29> <unk>(special) <0xBC> ... */
  CHECK(same("llama2", t, ids, 4), "a skipped special token inside a byte run");
  /* "é" (C3 A9) split by a special token: skip_special must glue the bytes back */
  int32_t bos = xpi_tokenizer_token_id(t, "<s>"), c3 = xpi_tokenizer_token_id(t, "<0xC3>"),
          a9 = xpi_tokenizer_token_id(t, "<0xA9>");
  const int32_t split[] = {c3, bos, a9, bos, c3};
  CHECK(bos >= 0 && c3 >= 0 && a9 >= 0 && same("llama2", t, split, 5), "byte run around specials");
  xpi_tokenizer_free(t);
}

static void property(const char *name, const char *dir) {
  xpi_tokenizer *t = NULL;
  CHECK_OK(xpi_tokenizer_load(dir, &t));
  if (!t) return;
  int32_t vocab = xpi_tokenizer_vocab_size(t), byte_ids[256], specials[64];
  size_t n_bytes = 0, n_special = 0;
  for (int b = 0; b < 256; b++) {
    char tok[8];
    snprintf(tok, sizeof tok, "<0x%02X>", b);
    int32_t id = xpi_tokenizer_token_id(t, tok);
    if (id >= 0) byte_ids[n_bytes++] = id;
  }
  for (int32_t id = 0; id < vocab && n_special < 64; id++)
    if (xpi_tokenizer_is_special(t, id)) specials[n_special++] = id;
  uint32_t x = 2024;
#define RND() ((x = x * 1103515245u + 12345u) >> 8)
  int bad = 0;
  for (int iter = 0; iter < 600 && bad < 3; iter++) {
    int32_t ids[48];
    size_t n = 0, want = 1 + RND() % 40;
    while (n < want) {
      uint32_t r = RND() % 10;
      int32_t id;
      if (r < 3 && n_bytes) id = byte_ids[RND() % n_bytes];
      else if (r < 5 && n_special) id = specials[RND() % n_special];
      else id = (int32_t)(RND() % (uint32_t)vocab);
      if (xpi_tokenizer_token_text(t, id)) ids[n++] = id;
    }
    if (!same(name, t, ids, n)) bad++;
  }
  CHECK(bad == 0, "%s: %d random sequences stream differently", name, bad);
  xpi_tokenizer_free(t);
}

int main(void) {
  special_inside_byte_run();
  const char *names[] = {"llama2", "qwen3", "llama3_1", "smollm2"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char *dir = xpi_test_strf("%s/tokenizers/%s", xpi_test_env("XPI_TEST_DATA"), names[i]);
    property(names[i], dir);
    free(dir);
  }
  return xpi_test_done();
}
