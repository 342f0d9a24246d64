/* Decoding: id -> token text, then the decoder chain of tokenizer.json exactly as tokenizers' decode_chain, then
 * the join. ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace and Sequence are here; WordPiece,
 * BPEDecoder and CTC in tok_dec_words.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

static xpi_status oom(void) { return xpi_err(XPI_ERR_OUT_OF_MEMORY, "tokenizer: out of memory"); }

static xpi_status one_char(const cJSON *v, const char *what, const char *field, char *out, size_t *len) {
  if (!cJSON_IsString(v)) return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" must be a string", what, field);
  size_t l = strlen(v->valuestring);
  if (!l || l > 4 || tok_utf8_valid_len((const unsigned char *)v->valuestring, l) != l)
    return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" must be exactly one character", what, field);
  memcpy(out, v->valuestring, l);
  *len = l;
  return XPI_OK;
}

static xpi_status get_count(const cJSON *j, const char *key, const char *what, int *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
  if (!v) { *out = 0; return XPI_OK; }
  if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e6 || v->valuedouble != (int)v->valuedouble)
    return xpi_err(XPI_ERR_FORMAT, "%s: Strip \"%s\" must be a small non-negative integer", what, key);
  *out = (int)v->valuedouble;
  return XPI_OK;
}

static xpi_status parse_type(const cJSON *j, const char *what, const char *t, tok_dec *d) {
  if (!strcmp(t, "Sequence")) {
    d->type = DEC_SEQ;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "decoders"), *e;
    if (!cJSON_IsArray(arr)) return xpi_err(XPI_ERR_FORMAT, "%s: Sequence \"decoders\" must be an array", what);
    size_t k = (size_t)cJSON_GetArraySize(arr);
    if (!(d->kids = calloc(k ? k : 1, sizeof *d->kids))) return oom();
    cJSON_ArrayForEach(e, arr) {
      char *kw = tok_path_child(what, "decoders", (long)d->n_kids);
      if (!kw) return oom();
      xpi_status st = tok_dec_parse(e, kw, &d->kids[d->n_kids]);
      free(kw);
      if (st) return st; /* the child freed itself */
      d->n_kids++;
    }
  } else if (!strcmp(t, "ByteLevel")) {
    d->type = DEC_BYTELEVEL;
  } else if (!strcmp(t, "ByteFallback")) {
    d->type = DEC_BYTEFALLBACK;
  } else if (!strcmp(t, "Fuse")) {
    d->type = DEC_FUSE;
  } else if (!strcmp(t, "Replace")) {
    d->type = DEC_REPLACE;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "content");
    if (!cJSON_IsString(c)) return xpi_err(XPI_ERR_FORMAT, "%s: Replace \"content\" must be a string", what);
    if (!(d->content = strdup(c->valuestring))) return oom();
    return tok_pattern_parse(cJSON_GetObjectItemCaseSensitive(j, "pattern"), what, &d->pat);
  } else if (!strcmp(t, "Strip")) {
    d->type = DEC_STRIP;
    char c[4];
    size_t l;
    XPI_TRY(one_char(cJSON_GetObjectItemCaseSensitive(j, "content"), what, "content", c, &l));
    d->strip_cp = tok_utf8_cp((const unsigned char *)c, l);
    XPI_TRY(get_count(j, "start", what, &d->start));
    XPI_TRY(get_count(j, "stop", what, &d->stop));
  } else if (!strcmp(t, "Metaspace")) {
    d->type = DEC_METASPACE;
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "replacement");
    if (r) XPI_TRY(one_char(r, what, "replacement", d->repl, &d->repl_len));
    else { memcpy(d->repl, "\xE2\x96\x81", 3); d->repl_len = 3; }
    return tok_metaspace_scheme(j, what, &d->prepend_scheme);
  } else if (!strcmp(t, "WordPiece") || !strcmp(t, "BPEDecoder") || !strcmp(t, "CTC")) {
    return tok_dec_words_parse(j, what, t, d);
  } else {
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: type \"%s\" is not supported (supported decoders: ByteLevel, Metaspace, "
                   "WordPiece, BPEDecoder, Replace, Strip, Fuse, ByteFallback, CTC, Sequence)", what, t);
  }
  return XPI_OK;
}

xpi_status tok_dec_parse(const cJSON *j, const char *what, tok_dec *d) {
  memset(d, 0, sizeof *d);
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
  if (!cJSON_IsObject(j) || !cJSON_IsString(type))
    return xpi_err(XPI_ERR_FORMAT, "%s: a decoder must be an object with a string \"type\"", what);
  xpi_status st = parse_type(j, what, type->valuestring, d);
  if (st) tok_dec_free(d);
  return st;
}

void tok_dec_free(tok_dec *d) {
  if (!d) return;
  for (size_t i = 0; i < d->n_kids; i++) tok_dec_free(&d->kids[i]);
  free(d->kids);
  free(d->content);
  free(d->delim);
  tok_pattern_free(&d->pat);
  memset(d, 0, sizeof *d);
}

/* Replaces tokens by a single token holding all of them joined. */
static xpi_status fuse(tok_strs *s) {
  if (s->n <= 1) return XPI_OK;
  tok_buf all = {0};
  for (size_t i = 0; i < s->n; i++) {
    xpi_status st = tok_buf_put(&all, s->v[i].p ? s->v[i].p : "", s->v[i].len);
    if (st) { tok_buf_free(&all); return st; }
  }
  for (size_t i = 0; i < s->n; i++) tok_buf_free(&s->v[i]);
  s->v[0] = all;
  s->n = 1;
  return XPI_OK;
}

static xpi_status dec_bytelevel(tok_strs *s) {
  tok_buf bytes = {0};
  xpi_status st = XPI_OK;
  for (size_t i = 0; !st && i < s->n; i++) {
    const unsigned char *u = (const unsigned char *)s->v[i].p;
    size_t n = s->v[i].len, start = bytes.len;
    int all = 1;
    for (size_t k = 0; !st && k < n;) {
      size_t l = tok_utf8_valid_len(u + k, n - k);
      int b = l ? tok_bytelevel_byte(tok_utf8_cp(u + k, l)) : -1;
      if (b < 0) { all = 0; break; }
      unsigned char c = (unsigned char)b;
      st = tok_buf_put(&bytes, &c, 1);
      k += l;
    }
    if (!st && !all) { /* a token with chars outside the byte map goes through as its own bytes */
      bytes.len = start;
      st = tok_buf_put(&bytes, u, n);
    }
  }
  tok_buf text = {0};
  if (!st) st = tok_utf8_lossy(&text, bytes.p ? bytes.p : "", bytes.len);
  tok_buf_free(&bytes);
  if (st) { tok_buf_free(&text); return st; }
  for (size_t i = 0; i < s->n; i++) tok_buf_free(&s->v[i]);
  if (!s->cap) {
    tok_buf_free(&text);
    return tok_strs_add(s, "", 0);
  }
  s->v[0] = text;
  s->n = 1;
  return XPI_OK;
}

static int byte_token(const tok_buf *b, unsigned char *out) {
  if (b->len != 6 || memcmp(b->p, "<0x", 3) || b->p[5] != '>') return 0;
  unsigned v = 0;
  for (int i = 3; i < 5; i++) {
    char c = b->p[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return 0;
    v = v * 16 + (unsigned)d;
  }
  *out = (unsigned char)v;
  return 1;
}

static xpi_status flush_bytes(tok_strs *out, tok_buf *bytes) {
  if (!bytes->len) return XPI_OK;
  xpi_status st;
  if (tok_utf8_check(bytes->p, bytes->len) == bytes->len) st = tok_strs_add(out, bytes->p, bytes->len);
  else { /* invalid UTF-8: one U+FFFD per byte */
    st = XPI_OK;
    for (size_t i = 0; !st && i < bytes->len; i++) st = tok_strs_add(out, "\xEF\xBF\xBD", 3);
  }
  bytes->len = 0;
  return st;
}

static xpi_status dec_bytefallback(tok_strs *s) {
  tok_strs out = {0};
  tok_buf bytes = {0};
  xpi_status st = XPI_OK;
  for (size_t i = 0; !st && i < s->n; i++) {
    unsigned char b;
    if (byte_token(&s->v[i], &b)) { st = tok_buf_put(&bytes, &b, 1); continue; }
    st = flush_bytes(&out, &bytes);
    if (!st) st = tok_strs_add(&out, s->v[i].p ? s->v[i].p : "", s->v[i].len);
  }
  if (!st) st = flush_bytes(&out, &bytes);
  tok_buf_free(&bytes);
  if (st) { tok_strs_free(&out); return st; }
  tok_strs_free(s);
  *s = out;
  return XPI_OK;
}

static xpi_status dec_strip(const tok_dec *d, tok_strs *s) {
  for (size_t i = 0; i < s->n; i++) {
    tok_buf *b = &s->v[i];
    const unsigned char *u = (const unsigned char *)b->p;
    size_t a = 0, e = b->len;
    for (int k = 0; k < d->start && a < e; k++) {
      size_t l = tok_utf8_valid_len(u + a, e - a);
      if (!l || tok_utf8_cp(u + a, l) != d->strip_cp) break;
      a += l;
    }
    for (int k = 0; k < d->stop && e > a; k++) {
      size_t st = e - 1;
      while (st > a && (u[st] & 0xC0) == 0x80) st--;
      size_t l = tok_utf8_valid_len(u + st, e - st);
      if (!l || tok_utf8_cp(u + st, l) != d->strip_cp) break;
      e = st;
    }
    if (a || e != b->len) {
      memmove(b->p, b->p + a, e - a);
      b->len = e - a;
      b->p[b->len] = 0;
    }
  }
  return XPI_OK;
}

static xpi_status dec_per_token(const tok_dec *d, tok_strs *s) {
  tok_buf r = {0};
  for (size_t i = 0; i < s->n; i++) {
    r.len = 0;
    xpi_status st = XPI_OK;
    const char *p = s->v[i].p ? s->v[i].p : "";
    size_t n = s->v[i].len;
    if (d->type == DEC_REPLACE) {
      st = tok_pattern_replace(&d->pat, p, n, d->content, &r);
    } else { /* Metaspace */
      st = tok_buf_put(&r, "", 0);
      for (size_t k = 0; !st && k < n;) {
        if (n - k >= d->repl_len && !memcmp(p + k, d->repl, d->repl_len)) {
          if (!(i == 0 && d->prepend_scheme != 0)) st = tok_buf_put(&r, " ", 1);
          k += d->repl_len;
        } else {
          st = tok_buf_put(&r, p + k, 1);
          k++;
        }
      }
    }
    if (st) { tok_buf_free(&r); return st; }
    tok_buf t = s->v[i]; s->v[i] = r; r = t;
  }
  tok_buf_free(&r);
  return XPI_OK;
}

static xpi_status dec_chain(const tok_dec *d, tok_strs *s) {
  switch (d->type) {
    case DEC_SEQ:
      for (size_t i = 0; i < d->n_kids; i++) XPI_TRY(dec_chain(&d->kids[i], s));
      return XPI_OK;
    case DEC_BYTELEVEL: return dec_bytelevel(s);
    case DEC_BYTEFALLBACK: return dec_bytefallback(s);
    case DEC_FUSE: return fuse(s);
    case DEC_STRIP: return dec_strip(d, s);
    case DEC_REPLACE:
    case DEC_METASPACE: return dec_per_token(d, s);
    case DEC_WORDPIECE:
    case DEC_BPE:
    case DEC_CTC: return tok_dec_words_run(d, s);
  }
  return xpi_err(XPI_ERR_INTERNAL, "tokenizer: unknown decoder %d", d->type);
}

xpi_status tok_dec_run(const tok_dec *d, tok_strs *tokens, tok_buf *out) {
  XPI_TRY(dec_chain(d, tokens));
  XPI_TRY(tok_buf_put(out, "", 0));
  for (size_t i = 0; i < tokens->n; i++) XPI_TRY(tok_buf_put(out, tokens->v[i].p ? tokens->v[i].p : "", tokens->v[i].len));
  return XPI_OK;
}

xpi_status tok_decode(const xpi_tokenizer *t, const int32_t *ids, size_t n, int skip_special, tok_buf *out) {
  tok_strs s = {0};
  xpi_status st = tok_buf_put(out, "", 0);
  for (size_t i = 0; !st && i < n; i++) {
    if (skip_special && t->id_special[ids[i]]) continue;
    size_t l;
    const char *p = tok_id_text(t, ids[i], &l);
    st = tok_strs_add(&s, p, l);
  }
  if (!st) {
    if (t->dec) st = tok_dec_run(t->dec, &s, out);
    else
      for (size_t i = 0; !st && i < s.n; i++) {
        if (i) st = tok_buf_put(out, " ", 1);
        if (!st) st = tok_buf_put(out, s.v[i].p, s.v[i].len);
      }
  }
  tok_strs_free(&s);
  return st;
}

static xpi_status check_ids(const xpi_tokenizer *t, const int32_t *ids, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= t->n_ids || !t->id_text[ids[i]])
      return xpi_err(XPI_ERR_INVALID_ARGUMENT, "detokenize: ids[%zu] = %d is not a token id of %s (vocabulary size %d)",
                     i, ids[i], t->path, t->n_ids);
  return XPI_OK;
}

xpi_status xpi_detokenize(const xpi_tokenizer *tok, const int32_t *ids, size_t n, int skip_special, char *text,
                          size_t cap, size_t *len_out) {
  if (!tok || !len_out || (n && !ids))
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_detokenize: tok, len_out and ids (when n > 0) must not be NULL");
  XPI_TRY(check_ids(tok, ids, n));
  tok_buf out = {0};
  xpi_status st = tok_decode(tok, ids, n, skip_special, &out);
  if (st) { tok_buf_free(&out); return st; }
  *len_out = out.len;
  if (!text || cap < out.len + 1) {
    st = xpi_err(XPI_ERR_BUFFER_TOO_SMALL, "xpi_detokenize: the text needs %zu bytes plus the NUL, capacity is %zu",
                 out.len, cap);
  } else {
    memcpy(text, out.p, out.len + 1);
  }
  tok_buf_free(&out);
  return st;
}

/* Used by the stream: range check shared with xpi_detokenize. */
xpi_status tok_check_ids(const xpi_tokenizer *t, const int32_t *ids, size_t n) { return check_ids(t, ids, n); }
