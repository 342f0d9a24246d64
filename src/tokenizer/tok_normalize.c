/* Normalizers of tokenizer.json: parsing (with the JSON path of every component for messages) and the dispatch
 * of each type: NFC/NFD/NFKC/NFKD, Lowercase, StripAccents, BertNormalizer (tok_norm_unicode.c), Precompiled
 * (tok_precompiled.c), Prepend, Replace, Strip, Sequence (here). */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

static xpi_status dup_field(const cJSON *j, const char *key, const char *what, char **out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
  if (!cJSON_IsString(v)) return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" must be a string", what, key);
  *out = strdup(v->valuestring);
  if (!*out) return tok_oom();
  return XPI_OK;
}

/* A bool field with its default; error if present and not a bool (null counts as absent). */
static xpi_status get_bool(const cJSON *j, const char *key, const char *what, int dflt, int *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
  *out = dflt;
  if (!v || cJSON_IsNull(v)) return XPI_OK;
  if (!cJSON_IsBool(v)) return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" must be true or false", what, key);
  *out = cJSON_IsTrue(v);
  return XPI_OK;
}

static xpi_status parse_seq(const cJSON *j, const char *what, tok_norm *n) {
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "normalizers"), *e;
  if (!cJSON_IsArray(arr)) return xpi_err(XPI_ERR_FORMAT, "%s: Sequence \"normalizers\" must be an array", what);
  size_t k = (size_t)cJSON_GetArraySize(arr);
  if (!(n->kids = calloc(k ? k : 1, sizeof *n->kids))) return tok_oom();
  cJSON_ArrayForEach(e, arr) {
    char *kw = tok_path_child(what, "normalizers", (long)n->n_kids);
    if (!kw) return tok_oom();
    xpi_status st = tok_norm_parse(e, kw, &n->kids[n->n_kids]);
    free(kw);
    if (st) return st; /* the child freed itself */
    n->n_kids++;
  }
  return XPI_OK;
}

static xpi_status parse_type(const cJSON *j, const char *what, const char *t, tok_norm *n) {
  if (!strcmp(t, "NFC")) n->type = NORM_NFC;
  else if (!strcmp(t, "NFD")) n->type = NORM_NFD;
  else if (!strcmp(t, "NFKC")) n->type = NORM_NFKC;
  else if (!strcmp(t, "NFKD")) n->type = NORM_NFKD;
  else if (!strcmp(t, "Lowercase")) n->type = NORM_LOWERCASE;
  else if (!strcmp(t, "StripAccents")) n->type = NORM_STRIP_ACCENTS;
  else if (!strcmp(t, "Prepend")) {
    n->type = NORM_PREPEND;
    return dup_field(j, "prepend", what, &n->str);
  } else if (!strcmp(t, "Replace")) {
    n->type = NORM_REPLACE;
    XPI_TRY(dup_field(j, "content", what, &n->str));
    return tok_pattern_parse(cJSON_GetObjectItemCaseSensitive(j, "pattern"), what, &n->pat);
  } else if (!strcmp(t, "Strip")) {
    n->type = NORM_STRIP;
    XPI_TRY(get_bool(j, "strip_left", what, 0, &n->left));
    XPI_TRY(get_bool(j, "strip_right", what, 0, &n->right));
  } else if (!strcmp(t, "BertNormalizer")) {
    n->type = NORM_BERT;
    XPI_TRY(get_bool(j, "clean_text", what, 1, &n->clean_text));
    XPI_TRY(get_bool(j, "handle_chinese_chars", what, 1, &n->chinese));
    XPI_TRY(get_bool(j, "lowercase", what, 1, &n->lowercase));
    XPI_TRY(get_bool(j, "strip_accents", what, -1, &n->strip_accents)); /* null: follows lowercase */
    if (n->strip_accents < 0) n->strip_accents = n->lowercase;
  } else if (!strcmp(t, "Precompiled")) {
    n->type = NORM_PRECOMPILED;
    return tok_charsmap_parse(j, what, &n->charsmap);
  } else if (!strcmp(t, "Sequence")) {
    n->type = NORM_SEQ;
    return parse_seq(j, what, n);
  } else {
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: type \"%s\" is not supported (supported normalizers: NFC, NFD, NFKC, "
                   "NFKD, Lowercase, Strip, StripAccents, Replace, Prepend, BertNormalizer, Precompiled, Sequence)",
                   what, t);
  }
  return XPI_OK;
}

xpi_status tok_norm_parse(const cJSON *j, const char *what, tok_norm *n) {
  memset(n, 0, sizeof *n);
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
  if (!cJSON_IsObject(j) || !cJSON_IsString(type))
    return xpi_err(XPI_ERR_FORMAT, "%s: a normalizer must be an object with a string \"type\"", what);
  xpi_status st = parse_type(j, what, type->valuestring, n);
  if (st) tok_norm_free(n);
  return st;
}

void tok_norm_free(tok_norm *n) {
  if (!n) return;
  for (size_t i = 0; i < n->n_kids; i++) tok_norm_free(&n->kids[i]);
  free(n->kids);
  free(n->str);
  tok_pattern_free(&n->pat);
  tok_charsmap_free(n->charsmap);
  memset(n, 0, sizeof *n);
}

/* ---- Replace: the content replaces each match; a match at the start that is deleted, or that spans more than
 * one character (tokenizers aligns the new text to the match's last character), moves the start. */
typedef struct { const char *s; const char *content; size_t clen; tok_buf *out; size_t prev; int lead; } repl_ctx;

static xpi_status repl_cb(size_t a, size_t b, void *user) {
  repl_ctx *c = user;
  if (a == 0 && b > 0) {
    size_t l = tok_utf8_valid_len((const unsigned char *)c->s, b);
    if (!c->clen || b > l) c->lead = 1;
  }
  XPI_TRY(tok_buf_put(c->out, c->s + c->prev, a - c->prev));
  XPI_TRY(tok_buf_put(c->out, c->content, c->clen));
  c->prev = b;
  return XPI_OK;
}

static xpi_status replace(const tok_norm *n, const char *s, size_t len, tok_buf *out, int *lead) {
  repl_ctx c = {s, n->str, strlen(n->str), out, 0, 0};
  XPI_TRY(tok_buf_put(out, "", 0));
  const tok_pattern *p = &n->pat;
  if (!p->is_regex && p->lit_len) { /* a literal (Llama 2's " " -> "▁"): a plain scan, no callback per match */
    size_t pos = 0;
    while (pos < len) {
      const char *hit = p->lit_len == 1 ? memchr(s + pos, p->literal[0], len - pos)
                                        : memmem(s + pos, len - pos, p->literal, p->lit_len);
      if (!hit) break;
      size_t a = (size_t)(hit - s);
      if (a == 0 && (!c.clen || tok_utf8_valid_len((const unsigned char *)s, len) < p->lit_len) && lead) *lead = 1;
      XPI_TRY(tok_buf_put(out, s + pos, a - pos));
      XPI_TRY(tok_buf_put(out, c.content, c.clen));
      pos = a + p->lit_len;
    }
    return tok_buf_put(out, s + pos, len - pos);
  }
  XPI_TRY(tok_pattern_each(&n->pat, s, len, repl_cb, &c));
  if (c.lead && lead) *lead = 1;
  return tok_buf_put(out, s + c.prev, len - c.prev);
}

static xpi_status strip(const tok_norm *n, const char *s, size_t len, tok_buf *out, int *lead) {
  const unsigned char *u = (const unsigned char *)s;
  size_t a = 0, b = len;
  while (n->left && a < b) {
    size_t l = tok_utf8_valid_len(u + a, b - a);
    if (!l || !tok_is_whitespace(tok_utf8_cp(u + a, l))) break;
    a += l;
  }
  while (n->right && b > a) {
    size_t st;
    int32_t cp = tok_utf8_prev(s, b, &st);
    if (!tok_is_whitespace(cp)) break;
    b = st;
  }
  if (a && lead) *lead = 1;
  return tok_buf_put(out, s + a, b - a);
}

xpi_status tok_norm_apply(const tok_norm *n, const char *s, size_t len, tok_buf *out, int *lead) {
  out->len = 0;
  switch (n->type) {
    case NORM_NFC: case NORM_NFD: case NORM_NFKC: case NORM_NFKD: return tok_norm_unicode(n->type, s, len, out);
    case NORM_LOWERCASE: return tok_norm_lowercase(s, len, out);
    case NORM_STRIP_ACCENTS: return tok_norm_strip_accents(s, len, out, lead);
    case NORM_BERT: return tok_norm_bert(n, s, len, out, lead);
    case NORM_PRECOMPILED: return tok_charsmap_apply(n->charsmap, s, len, out, lead);
    case NORM_PREPEND:
      XPI_TRY(tok_buf_put(out, "", 0));
      if (len) XPI_TRY(tok_buf_puts(out, n->str)); /* tokenizers prepends to a non-empty string only */
      return tok_buf_put(out, s, len);
    case NORM_REPLACE: return replace(n, s, len, out, lead);
    case NORM_STRIP: return strip(n, s, len, out, lead);
    case NORM_SEQ: {
      tok_buf cur = {0}, nxt = {0};
      xpi_status st = tok_buf_put(&cur, s, len);
      for (size_t i = 0; !st && i < n->n_kids; i++) {
        st = tok_norm_apply(&n->kids[i], cur.p, cur.len, &nxt, lead);
        tok_buf t = cur; cur = nxt; nxt = t;
      }
      if (!st) st = tok_buf_put(out, cur.p, cur.len);
      tok_buf_free(&cur);
      tok_buf_free(&nxt);
      return st;
    }
  }
  return xpi_err(XPI_ERR_INTERNAL, "tokenizer: unknown normalizer %d", n->type);
}
