/* Test driver for tests/tokenizer/test_differential.py: loads the tokenizer in argv[1], then for each JSON line
 * on stdin writes one JSON line on stdout.
 *   {"text": str}  -> {"ids", "ids_sp", "dec", "dec_skip", "dec_sp", "dec_sp_skip", "stream", "stream_skip"}
 *   {"ids": [int]} -> {"dec", "dec_skip", "stream", "stream_skip"}
 *   {"chat": [{"role", "content", "tool_calls", "tool_call_id", "name", "reasoning_content"}], "gen": 0|1,
 *    "think": 0|1, "now": seconds} -> {"text"} (xpi_apply_chat_template
 *   with add_generation_prompt = gen and enable_thinking = think; now fixes strftime_now's clock)
 *   {"normalize": str} -> {"norm"}: the normalizer alone (tokenizers' normalizer.normalize_str)
 *   {"pretokenize": str} -> {"pieces": [...]}: the pre-tokenizer alone (pre_tokenizer.pre_tokenize_str)
 * ids = encode(text, add_special_tokens=False), ids_sp = with True; dec* decode ids (dec_sp* decode ids_sp);
 * Texts are hex-encoded UTF-8. stream* are the concatenated pieces of a streaming decode of ids_sp (or the given ids). Errors: {"error"}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "xpuinfer.h"
#include "tokenizer/tok_internal.h" /* the normalizer and pre-tokenizer alone, for component-level comparisons */

static cJSON *ids_json(const int32_t *ids, size_t n) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(ids[i]));
  return a;
}

/* Texts go out as hex so that NUL bytes (valid in decoded text) survive JSON. */
static void add_hex(cJSON *out, const char *key, const char *s, size_t n) {
  char *h = malloc(2 * n + 1);
  for (size_t i = 0; i < n; i++) snprintf(h + 2 * i, 3, "%02x", (unsigned char)s[i]);
  h[2 * n] = 0;
  cJSON_AddStringToObject(out, key, h);
  free(h);
}

static int decode(const xpi_tokenizer *t, const int32_t *ids, size_t n, int skip, cJSON *out, const char *key) {
  size_t len = 0;
  xpi_status s = xpi_detokenize(t, ids, n, skip, NULL, 0, &len);
  if (s != XPI_ERR_BUFFER_TOO_SMALL) return -1;
  char *buf = malloc(len + 1);
  s = xpi_detokenize(t, ids, n, skip, buf, len + 1, &len);
  if (!s) add_hex(out, key, buf, len);
  free(buf);
  return s ? -1 : 0;
}

static int stream(const xpi_tokenizer *t, const int32_t *ids, size_t n, int skip, cJSON *out, const char *key) {
  xpi_detok_stream *st = NULL;
  if (xpi_detok_stream_create(t, skip, &st)) return -1;
  size_t cap = 1024, len = 0;
  char *all = malloc(cap);
  int rc = 0;
  for (size_t i = 0; i <= n && !rc; i++) {
    const char *p;
    size_t pl;
    xpi_status s = i < n ? xpi_detok_stream_push(st, ids[i], &p, &pl) : xpi_detok_stream_flush(st, &p, &pl);
    if (s) { rc = -1; break; }
    /* a piece never ends inside a character (flush excepted, which is whole text anyway) */
    if (pl && ((unsigned char)p[pl - 1] & 0xC0) == 0xC0) { rc = -2; break; }
    while (len + pl + 1 > cap) all = realloc(all, cap *= 2);
    memcpy(all + len, p, pl);
    len += pl;
  }
  all[len] = 0;
  if (!rc) add_hex(out, key, all, len);
  free(all);
  xpi_detok_stream_free(st);
  return rc;
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--sanitized")) { /* lets the Python tests scale down under ASan */
#if defined(__SANITIZE_ADDRESS__)
    puts("1");
#else
    puts("0");
#endif
    return 0;
  }
  if (argc != 2) { fprintf(stderr, "usage: tok_driver TOKENIZER_DIR < requests.jsonl\n"); return 2; }
  xpi_tokenizer *t = NULL;
  if (xpi_tokenizer_load(argv[1], &t)) { fprintf(stderr, "tok_driver: %s\n", xpi_last_error()); return 1; }
  char *line = NULL;
  size_t lcap = 0;
  ssize_t ll;
  while ((ll = getline(&line, &lcap, stdin)) > 0) {
    cJSON *req = cJSON_ParseWithLength(line, (size_t)ll), *out = cJSON_CreateObject();
    const cJSON *text = cJSON_GetObjectItem(req, "text"), *rids = cJSON_GetObjectItem(req, "ids");
    int32_t *ids = NULL, *ids_sp = NULL;
    size_t n = 0, n_sp = 0;
    int err = 0;
    if (cJSON_IsString(text)) {
      const char *s = text->valuestring;
      size_t len = strlen(s);
      xpi_tokenize(t, s, len, 0, NULL, 0, &n);
      ids = malloc((n + 1) * sizeof *ids);
      err |= xpi_tokenize(t, s, len, 0, ids, n, &n) != XPI_OK;
      xpi_tokenize(t, s, len, 1, NULL, 0, &n_sp);
      ids_sp = malloc((n_sp + 1) * sizeof *ids_sp);
      err |= xpi_tokenize(t, s, len, 1, ids_sp, n_sp, &n_sp) != XPI_OK;
      if (!err) {
        cJSON_AddItemToObject(out, "ids", ids_json(ids, n));
        cJSON_AddItemToObject(out, "ids_sp", ids_json(ids_sp, n_sp));
        err |= decode(t, ids, n, 0, out, "dec") | decode(t, ids, n, 1, out, "dec_skip");
        err |= decode(t, ids_sp, n_sp, 0, out, "dec_sp") | decode(t, ids_sp, n_sp, 1, out, "dec_sp_skip");
        err |= stream(t, ids_sp, n_sp, 0, out, "stream") | stream(t, ids_sp, n_sp, 1, out, "stream_skip");
      }
    } else if (cJSON_IsArray(rids)) {
      n = (size_t)cJSON_GetArraySize(rids);
      ids = malloc((n + 1) * sizeof *ids);
      for (size_t i = 0; i < n; i++) ids[i] = (int32_t)cJSON_GetArrayItem(rids, (int)i)->valuedouble;
      err |= decode(t, ids, n, 0, out, "dec") | decode(t, ids, n, 1, out, "dec_skip");
      err |= stream(t, ids, n, 0, out, "stream") | stream(t, ids, n, 1, out, "stream_skip");
    } else if (cJSON_IsArray(cJSON_GetObjectItem(req, "chat"))) {
      const cJSON *msgs = cJSON_GetObjectItem(req, "chat");
      size_t nm = (size_t)cJSON_GetArraySize(msgs), len = 0;
      xpi_chat_message *m = calloc(nm + 1, sizeof *m);
      char **json = calloc(2 * nm + 1, sizeof *json); /* printed JSON fields, freed below */
      for (size_t i = 0; i < nm; i++) { /* dict keys to the structured message */
        const cJSON *e = cJSON_GetArrayItem(msgs, (int)i), *c = cJSON_GetObjectItem(e, "content");
        const cJSON *tc = cJSON_GetObjectItem(e, "tool_calls");
        m[i].role = cJSON_GetObjectItem(e, "role")->valuestring;
        if (cJSON_IsString(c)) m[i].content = c->valuestring;
        else if (c) m[i].content_json = json[2 * i] = cJSON_PrintUnformatted(c);
        if (tc) m[i].tool_calls_json = json[2 * i + 1] = cJSON_PrintUnformatted(tc);
        const cJSON *f;
        if (cJSON_IsString(f = cJSON_GetObjectItem(e, "reasoning_content"))) m[i].reasoning_content = f->valuestring;
        if (cJSON_IsString(f = cJSON_GetObjectItem(e, "tool_call_id"))) m[i].tool_call_id = f->valuestring;
        if (cJSON_IsString(f = cJSON_GetObjectItem(e, "name"))) m[i].name = f->valuestring;
      }
      xpi_chat_options o;
      xpi_chat_options_default(&o);
      o.add_generation_prompt = cJSON_IsTrue(cJSON_GetObjectItem(req, "gen"));
      o.variables_json = cJSON_IsTrue(cJSON_GetObjectItem(req, "think")) ? "{\"enable_thinking\": true}"
                                                                          : "{\"enable_thinking\": false}";
      const cJSON *now = cJSON_GetObjectItem(req, "now");
      if (cJSON_IsNumber(now)) o.now = (int64_t)now->valuedouble;
      xpi_status st = xpi_apply_chat_template(t, m, nm, &o, NULL, 0, &len);
      char *buf = malloc(len + 1);
      if (st == XPI_ERR_BUFFER_TOO_SMALL) st = xpi_apply_chat_template(t, m, nm, &o, buf, len + 1, &len);
      if (st) err = 1;
      else add_hex(out, "text", buf, len);
      free(buf);
      for (size_t i = 0; i < 2 * nm; i++) free(json[i]);
      free(json);
      free(m);
    } else if (cJSON_IsString(cJSON_GetObjectItem(req, "normalize"))) {
      const char *s = cJSON_GetObjectItem(req, "normalize")->valuestring;
      tok_buf nb = {0};
      if (!t->norm) err = tok_buf_puts(&nb, s) != XPI_OK;
      else err = tok_norm_apply(t->norm, s, strlen(s), &nb, NULL) != XPI_OK;
      if (!err) add_hex(out, "norm", nb.p ? nb.p : "", nb.len);
      tok_buf_free(&nb);
    } else if (cJSON_IsString(cJSON_GetObjectItem(req, "pretokenize"))) {
      const char *s = cJSON_GetObjectItem(req, "pretokenize")->valuestring;
      tok_pieces p = {0};
      err = tok_pieces_add(&p, s, strlen(s), 1) != XPI_OK;
      if (!err && t->pretok) err = tok_pretok_apply(t->pretok, &p) != XPI_OK;
      if (!err) {
        cJSON *arr = cJSON_CreateArray();
        for (size_t i = 0; i < p.n; i++) {
          cJSON *one = cJSON_CreateObject();
          add_hex(one, "h", p.text.p + p.v[i].off, p.v[i].len);
          cJSON_AddItemToArray(arr, cJSON_DetachItemFromObject(one, "h"));
          cJSON_Delete(one);
        }
        cJSON_AddItemToObject(out, "pieces", arr);
      }
      tok_pieces_free(&p);
    } else {
      cJSON_AddStringToObject(out, "error", "bad request line");
    }
    if (err) cJSON_AddStringToObject(out, "error", xpi_last_error());
    char *o = cJSON_PrintUnformatted(out);
    puts(o);
    free(o);
    free(ids);
    free(ids_sp);
    cJSON_Delete(req);
    cJSON_Delete(out);
  }
  fflush(stdout);
  free(line);
  xpi_tokenizer_free(t);
  return 0;
}
