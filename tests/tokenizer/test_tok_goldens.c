/* Tokenizer and chat-template goldens (tests/data/goldens/tokenizer.json, chat_template.json, produced by HF
 * tokenizers 0.23.2 / transformers 5.17.0): ids, decodes and rendered text must match exactly. SmolLM2-135M-Instruct
 * (tests/data/tokenizers/smollm2: Digits + ByteLevel) is the fourth tokenizer. Also checks the
 * streaming decode on every golden (pieces are whole UTF-8 characters and add up to the full decode), the
 * tinyfortunes prompts' input_ids, and the internal queries of tokenizer/tokenizer.h. */
#include <pthread.h>

#include "check.h"
#include "tokenizer/tokenizer.h"

/* Each tokenizer folder is loaded once (loading qwen3 dominates the test's time). */
static struct { char *dir; xpi_tokenizer *tok; } g_cache[8];

static xpi_tokenizer *get_tok(const char *dir) {
  size_t i = 0;
  for (; i < 8 && g_cache[i].dir; i++)
    if (!strcmp(g_cache[i].dir, dir)) return g_cache[i].tok;
  if (i == 8) return NULL;
  g_cache[i].dir = strdup(dir);
  CHECK_OK(xpi_tokenizer_load(dir, &g_cache[i].tok));
  return g_cache[i].tok;
}

static int32_t *json_ids(const cJSON *arr, size_t *n) {
  *n = (size_t)cJSON_GetArraySize(arr);
  int32_t *v = malloc((*n + 1) * sizeof *v);
  for (size_t i = 0; i < *n; i++) v[i] = (int32_t)cJSON_GetArrayItem(arr, (int)i)->valuedouble;
  return v;
}

static int ids_equal(const xpi_tokenizer *t, const char *text, int add_special, const cJSON *want) {
  size_t n = 0, nw;
  int32_t *w = json_ids(want, &nw);
  xpi_status s = xpi_tokenize(t, text, strlen(text), add_special, NULL, 0, &n);
  int ok = s == XPI_ERR_BUFFER_TOO_SMALL || (s == XPI_OK && n == 0);
  int32_t *got = malloc((n + 1) * sizeof *got);
  if (ok) ok = xpi_tokenize(t, text, strlen(text), add_special, got, n, &n) == XPI_OK;
  ok = ok && n == nw && (n == 0 || !memcmp(got, w, n * sizeof *got));
  if (!ok) {
    fprintf(stderr, "  text %s (add_special=%d): got", text, add_special);
    for (size_t i = 0; i < n && i < 40; i++) fprintf(stderr, " %d", got[i]);
    fprintf(stderr, "\n");
  }
  free(got);
  free(w);
  return ok;
}

static char *detok(const xpi_tokenizer *t, const int32_t *ids, size_t n, int skip) {
  size_t len = 0;
  if (xpi_detokenize(t, ids, n, skip, NULL, 0, &len) != XPI_ERR_BUFFER_TOO_SMALL) return NULL;
  char *buf = malloc(len + 1);
  if (xpi_detokenize(t, ids, n, skip, buf, len + 1, &len) != XPI_OK) { free(buf); return NULL; }
  return buf;
}

/* Streams ids and returns the concatenation; *pieces_ok = 0 if a piece ends inside a UTF-8 character. */
static char *stream(const xpi_tokenizer *t, const int32_t *ids, size_t n, int skip, int *pieces_ok) {
  xpi_detok_stream *s = NULL;
  *pieces_ok = 1;
  if (xpi_detok_stream_create(t, skip, &s)) return NULL;
  size_t cap = 64, len = 0;
  char *all = malloc(cap);
  for (size_t i = 0; i <= n; i++) {
    const char *p;
    size_t pl;
    xpi_status st = i < n ? xpi_detok_stream_push(s, ids[i], &p, &pl) : xpi_detok_stream_flush(s, &p, &pl);
    if (st) { free(all); xpi_detok_stream_free(s); return NULL; }
    if (pl) {
      /* last character of the piece must be complete */
      size_t k = pl - 1, cont = 0;
      while (k > 0 && ((unsigned char)p[k] & 0xC0) == 0x80) { k--; cont++; }
      unsigned char lead = (unsigned char)p[k];
      size_t need = lead < 0x80 ? 0 : lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : 1;
      if (need != cont) *pieces_ok = 0;
    }
    while (len + pl + 1 > cap) all = realloc(all, cap *= 2);
    memcpy(all + len, p, pl);
    len += pl;
  }
  all[len] = 0;
  xpi_detok_stream_free(s);
  return all;
}

static void check_tokenizer(const char *name, const char *dir, const cJSON *cases) {
  xpi_tokenizer *t = get_tok(dir);
  if (!t) return;
  const cJSON *c;
  cJSON_ArrayForEach(c, cases) {
    const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
    CHECK(ids_equal(t, text, 0, cJSON_GetObjectItem(c, "ids")), "%s: ids of %s", name, text);
    CHECK(ids_equal(t, text, 1, cJSON_GetObjectItem(c, "ids_with_special")), "%s: ids_with_special of %s", name, text);
    size_t n;
    int32_t *ids = json_ids(cJSON_GetObjectItem(c, "ids"), &n);
    const char *want = cJSON_GetObjectItem(c, "decoded")->valuestring;
    const char *want_skip = cJSON_GetObjectItem(c, "decoded_skip_special")->valuestring;
    char *d = detok(t, ids, n, 0), *ds = detok(t, ids, n, 1);
    CHECK(d && !strcmp(d, want), "%s: decode of %s: got \"%s\"", name, text, d ? d : "(error)");
    CHECK(ds && !strcmp(ds, want_skip), "%s: decode skip_special of %s: got \"%s\"", name, text, ds ? ds : "(error)");
    for (int skip = 0; skip < 2; skip++) {
      int pieces_ok;
      char *st = stream(t, ids, n, skip, &pieces_ok);
      CHECK(st && !strcmp(st, skip ? want_skip : want), "%s: streamed decode of %s (skip=%d): got \"%s\"", name, text,
            skip, st ? st : "(error)");
      CHECK(pieces_ok, "%s: a streamed piece of %s ends inside a character", name, text);
      free(st);
    }
    free(d);
    free(ds);
    free(ids);
  }
}

static void check_chat(const char *data, const cJSON *chat) {
  const cJSON *c;
  cJSON_ArrayForEach(c, chat) {
    char fam[64];
    snprintf(fam, sizeof fam, "%s", c->string);
    *strchr(fam, '/') = 0;
    char *dir = xpi_test_strf("%s/tokenizers/%s", data, fam);
    xpi_tokenizer *t = get_tok(dir);
    free(dir);
    if (!t) continue;
    const cJSON *msgs = cJSON_GetObjectItem(c, "messages");
    size_t n = (size_t)cJSON_GetArraySize(msgs);
    xpi_chat_message *m = calloc(n + 1, sizeof *m);
    for (size_t i = 0; i < n; i++) {
      const cJSON *e = cJSON_GetArrayItem(msgs, (int)i);
      m[i].role = cJSON_GetObjectItem(e, "role")->valuestring;
      m[i].content = cJSON_GetObjectItem(e, "content")->valuestring;
    }
    xpi_chat_options o;
    xpi_chat_options_default(&o);
    if (strstr(c->string, "thinking=False")) o.variables_json = "{\"enable_thinking\": false}";
    size_t len = 0;
    CHECK_ERR(xpi_apply_chat_template(t, m, n, &o, NULL, 0, &len), XPI_ERR_BUFFER_TOO_SMALL, "needs");
    char *text = malloc(len + 1);
    CHECK_OK(xpi_apply_chat_template(t, m, n, &o, text, len + 1, &len));
    const char *want = cJSON_GetObjectItem(c, "text")->valuestring;
    CHECK(!strcmp(text, want), "%s: got \"%s\"", c->string, text);
    CHECK(ids_equal(t, want, 0, cJSON_GetObjectItem(c, "ids")), "%s: ids of the rendered text", c->string);
    free(text);
    free(m);
  }
}

static void check_tinyfortunes(const char *src) {
  char *dir = xpi_test_strf("%s/examples/models/tinyfortunes", src);
  char *gold = xpi_test_strf("%s/tests/data/goldens/tinyfortunes.json", src);
  cJSON *g = xpi_test_load_json(gold);
  xpi_tokenizer *t = NULL;
  CHECK_OK(xpi_tokenizer_load(dir, &t));
  const cJSON *c;
  int n = 0;
  cJSON_ArrayForEach(c, g) {
    CHECK(t && ids_equal(t, c->string, 0, cJSON_GetObjectItem(c, "input_ids")), "tinyfortunes: %s", c->string);
    CHECK(t && ids_equal(t, c->string, 1, cJSON_GetObjectItem(c, "input_ids")), "tinyfortunes (special): %s", c->string);
    n++;
  }
  CHECK(n > 0, "no tinyfortunes prompts");
  /* no chat_template in its tokenizer_config.json */
  xpi_chat_message m = {.role = "user", .content = "hi"};
  size_t len;
  CHECK_ERR(xpi_apply_chat_template(t, &m, 1, NULL, NULL, 0, &len), XPI_ERR_UNSUPPORTED, "chat_template");
  CHECK(xpi_tokenizer_token_id(t, "<|endoftext|>") == 4093, "eos id");
  CHECK(xpi_tokenizer_config_token_id(t, "eos_token") == 4093, "config eos id");
  CHECK(xpi_tokenizer_bos_id(t) == -1, "no bos");
  CHECK(xpi_tokenizer_vocab_size(t) == 4096, "vocab size %d", xpi_tokenizer_vocab_size(t));
  xpi_tokenizer_free(t);
  cJSON_Delete(g);
  free(dir);
  free(gold);
}

static void check_queries(const char *data) {
  char *d = xpi_test_strf("%s/tokenizers/qwen3", data);
  xpi_tokenizer *q = get_tok(d), *l3, *l2;
  free(d);
  d = xpi_test_strf("%s/tokenizers/llama3_1", data);
  l3 = get_tok(d);
  free(d);
  d = xpi_test_strf("%s/tokenizers/llama2", data);
  l2 = get_tok(d);
  free(d);
  if (!q || !l3 || !l2) return;
  CHECK(xpi_tokenizer_token_id(q, "<|im_end|>") == 151645, "im_end");
  CHECK(xpi_tokenizer_token_id(q, "hello") == 14990, "hello");
  CHECK(xpi_tokenizer_token_id(q, "no such token") == -1, "missing");
  CHECK(xpi_tokenizer_is_special(q, 151645) && !xpi_tokenizer_is_special(q, 151667) && !xpi_tokenizer_is_special(q, 0),
        "is_special");
  CHECK(xpi_tokenizer_bos_id(q) == -1 && xpi_tokenizer_bos_id(l3) == 128000 && xpi_tokenizer_bos_id(l2) == 1, "bos");
  CHECK(xpi_tokenizer_config_token_id(q, "eos_token") == 151645, "qwen eos");
  CHECK(xpi_tokenizer_config_token_id(l3, "eos_token") == 128009, "llama3 eos");
  CHECK(xpi_tokenizer_vocab_size(q) == 151669 && xpi_tokenizer_vocab_size(l3) == 128256 &&
        xpi_tokenizer_vocab_size(l2) == 32000, "vocab sizes");
  CHECK(!strcmp(xpi_tokenizer_token_text(l2, 1), "<s>") && xpi_tokenizer_token_text(l2, 32000) == NULL, "token text");
  xpi_chat_message m = {.role = "user", .content = "hi"};
  size_t len;
  CHECK_ERR(xpi_apply_chat_template(l2, &m, 1, NULL, NULL, 0, &len), XPI_ERR_UNSUPPORTED, "tokenizer_config.json");
}

/* Byte-fallback pieces of one emoji: nothing comes out until the character is complete. */
static void check_stream_bytes(const char *data) {
  char *d = xpi_test_strf("%s/tokenizers/llama2", data);
  xpi_tokenizer *t = get_tok(d);
  free(d);
  if (!t) return;
  /* "▁a" then the 4 bytes of U+1F600 as <0xF0><0x9F><0x98><0x80> (ids 3 + byte), then "▁a" */
  int32_t a = xpi_tokenizer_token_id(t, "\xE2\x96\x81" "a");
  int32_t ids[] = {a, 3 + 0xF0, 3 + 0x9F, 3 + 0x98, 3 + 0x80, a};
  const char *want[] = {"a", "", "", "", "", "\xF0\x9F\x98\x80 a"};
  xpi_detok_stream *s = NULL;
  CHECK_OK(xpi_detok_stream_create(t, 0, &s));
  for (int i = 0; s && i < 6; i++) {
    const char *p;
    size_t n;
    CHECK_OK(xpi_detok_stream_push(s, ids[i], &p, &n));
    CHECK(n == strlen(want[i]) && !memcmp(p, want[i], n), "push %d: got \"%.*s\"", i, (int)n, p);
  }
  /* an incomplete character at the end comes out at flush, as tokenizers decodes it (one U+FFFD per byte) */
  const char *p;
  size_t n;
  CHECK_OK(xpi_detok_stream_push(s, 3 + 0xF0, &p, &n));
  CHECK(n == 0, "incomplete byte emitted");
  CHECK_OK(xpi_detok_stream_flush(s, &p, &n));
  CHECK(n == 3 && !memcmp(p, "\xEF\xBF\xBD", 3), "flush: got \"%.*s\"", (int)n, p);
  xpi_detok_stream_free(s);
}

/* The tokenizer is shared read-only: several threads encode at once and must all get the golden ids. */
typedef struct { const xpi_tokenizer *t; const cJSON *cases; int bad; } thread_arg;

static void *encode_all(void *p) {
  thread_arg *a = p;
  for (int rep = 0; rep < 3; rep++) {
    const cJSON *c;
    cJSON_ArrayForEach(c, a->cases) {
      const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
      const cJSON *want = cJSON_GetObjectItem(c, "ids");
      int32_t ids[512];
      size_t n = 0;
      if (xpi_tokenize(a->t, text, strlen(text), 0, ids, 512, &n) != XPI_OK || n != (size_t)cJSON_GetArraySize(want)) {
        a->bad++;
        continue;
      }
      for (size_t i = 0; i < n; i++) a->bad += ids[i] != (int32_t)cJSON_GetArrayItem(want, (int)i)->valuedouble;
    }
  }
  return NULL;
}

static void check_threads(const char *data, const cJSON *goldens) {
  char *d = xpi_test_strf("%s/tokenizers/qwen3", data);
  xpi_tokenizer *t = get_tok(d);
  free(d);
  if (!t) return;
  pthread_t th[4];
  thread_arg args[4];
  for (int i = 0; i < 4; i++) {
    args[i] = (thread_arg){t, cJSON_GetObjectItem(goldens, "qwen3"), 0};
    pthread_create(&th[i], NULL, encode_all, &args[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    CHECK(args[i].bad == 0, "thread %d: %d wrong ids", i, args[i].bad);
  }
}

int main(void) {
  const char *data = xpi_test_env("XPI_TEST_DATA");
  const char *src = xpi_test_env("XPI_SOURCE_DIR");
  char *p = xpi_test_strf("%s/goldens/tokenizer.json", data);
  cJSON *g = xpi_test_load_json(p);
  free(p);
  int n = 0;
  const cJSON *tk;
  cJSON_ArrayForEach(tk, g) {
    char *dir = xpi_test_strf("%s/tokenizers/%s", data, tk->string);
    check_tokenizer(tk->string, dir, tk);
    free(dir);
    n++;
  }
  CHECK(n == 4, "expected 4 tokenizers in the goldens, found %d", n);
  check_threads(data, g);
  cJSON_Delete(g);
  check_stream_bytes(data);
  p = xpi_test_strf("%s/goldens/chat_template.json", data);
  cJSON *chat = xpi_test_load_json(p);
  free(p);
  CHECK(cJSON_GetArraySize(chat) >= 9, "chat goldens");
  check_chat(data, chat);
  cJSON_Delete(chat);
  check_tinyfortunes(src);
  check_queries(data);
  for (size_t i = 0; i < 8 && g_cache[i].dir; i++) {
    xpi_tokenizer_free(g_cache[i].tok);
    free(g_cache[i].dir);
  }
  return xpi_test_done();
}
