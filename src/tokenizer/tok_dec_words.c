/* Decoders that rebuild words: WordPiece (continuation prefix "##" glued, other tokens after a space, optional
 * cleanup of tokenization artifacts), BPEDecoder (end-of-word suffix becomes a space, nothing after the last
 * token) and CTC (repeats collapsed, pad token removed, word delimiter becomes a space), as tokenizers. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

static xpi_status str_field(const cJSON *j, const char *key, const char *dflt, const char *what, char **out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
  if (v && !cJSON_IsNull(v) && !cJSON_IsString(v))
    return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" must be a string", what, key);
  if (!(*out = strdup(cJSON_IsString(v) ? v->valuestring : dflt))) return tok_oom();
  return XPI_OK;
}

static xpi_status bool_field(const cJSON *j, const char *key, int dflt, const char *what, int *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
  if (v && !cJSON_IsNull(v) && !cJSON_IsBool(v))
    return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" must be true or false", what, key);
  *out = v && cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
  return XPI_OK;
}

xpi_status tok_dec_words_parse(const cJSON *j, const char *what, const char *type, tok_dec *d) {
  if (!strcmp(type, "WordPiece")) {
    d->type = DEC_WORDPIECE;
    XPI_TRY(str_field(j, "prefix", "##", what, &d->content));
    return bool_field(j, "cleanup", 1, what, &d->cleanup);
  }
  if (!strcmp(type, "BPEDecoder")) {
    d->type = DEC_BPE;
    return str_field(j, "suffix", "</w>", what, &d->content);
  }
  d->type = DEC_CTC;
  XPI_TRY(str_field(j, "pad_token", "<pad>", what, &d->content));
  XPI_TRY(str_field(j, "word_delimiter_token", "|", what, &d->delim));
  return bool_field(j, "cleanup", 1, what, &d->cleanup);
}

/* tokenizers' wordpiece::cleanup: spaces before punctuation and contractions removed. */
static xpi_status cleanup(tok_buf *b) {
  static const char *const pairs[][2] = {{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
                                         {" n't", "n't"}, {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"},
                                         {" 've", "'ve"}, {" 're", "'re"}};
  for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) XPI_TRY(tok_buf_replace(b, pairs[i][0], pairs[i][1]));
  return XPI_OK;
}

static xpi_status wordpiece(const tok_dec *d, tok_strs *s) {
  size_t pl = strlen(d->content);
  for (size_t i = 0; i < s->n; i++) {
    tok_buf *b = &s->v[i];
    XPI_TRY(tok_buf_put(b, "", 0));
    if (i) {
      if (b->len >= pl && !memcmp(b->p, d->content, pl)) {
        memmove(b->p, b->p + pl, b->len - pl + 1);
        b->len -= pl;
      } else {
        tok_buf r = {0};
        xpi_status st = tok_buf_put(&r, " ", 1);
        if (!st) st = tok_buf_put(&r, b->p, b->len);
        if (st) { tok_buf_free(&r); return st; }
        tok_buf_free(b);
        *b = r;
      }
    }
    if (d->cleanup) XPI_TRY(cleanup(b));
  }
  return XPI_OK;
}

static xpi_status bpe(const tok_dec *d, tok_strs *s) {
  for (size_t i = 0; i < s->n; i++) {
    XPI_TRY(tok_buf_put(&s->v[i], "", 0));
    XPI_TRY(tok_buf_replace(&s->v[i], d->content, i + 1 == s->n ? "" : " "));
  }
  return XPI_OK;
}

static xpi_status ctc(const tok_dec *d, tok_strs *s) {
  tok_strs out = {0};
  xpi_status st = XPI_OK;
  tok_buf r = {0};
  for (size_t i = 0; !st && i < s->n; i++) {
    if (i && s->v[i].len == s->v[i - 1].len && (!s->v[i].len || !memcmp(s->v[i].p, s->v[i - 1].p, s->v[i].len)))
      continue; /* a repeat of the token before */
    r.len = 0;
    st = tok_buf_put(&r, s->v[i].p ? s->v[i].p : "", s->v[i].len);
    if (!st) st = tok_buf_replace(&r, d->content, "");
    if (!st && d->cleanup) {
      st = cleanup(&r);
      if (!st) st = tok_buf_replace(&r, d->delim, " ");
    }
    if (!st && r.len) st = tok_strs_add(&out, r.p, r.len);
  }
  tok_buf_free(&r);
  if (st) { tok_strs_free(&out); return st; }
  tok_strs_free(s);
  *s = out;
  return XPI_OK;
}

xpi_status tok_dec_words_run(const tok_dec *d, tok_strs *s) {
  switch (d->type) {
    case DEC_WORDPIECE: return wordpiece(d, s);
    case DEC_BPE: return bpe(d, s);
    default: return ctc(d, s);
  }
}
