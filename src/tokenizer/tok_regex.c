/* Patterns of Split/Replace components: PCRE2 regexes (UTF + UCP, JIT when available) or literal strings. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

xpi_status tok_regex_compile(const char *pattern, const char *what, tok_regex *re) {
  int err = 0;
  PCRE2_SIZE at = 0;
  re->code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &at, NULL);
  if (!re->code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    return xpi_err(XPI_ERR_FORMAT, "%s: bad regex at offset %zu: %s (pattern \"%s\")", what, (size_t)at,
                   (const char *)msg, pattern);
  }
  (void)pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE); /* interpreter fallback when JIT is unavailable */
  return XPI_OK;
}

void tok_regex_free(tok_regex *re) {
  pcre2_code_free(re->code);
  re->code = NULL;
}

xpi_status tok_regex_each(const tok_regex *re, const char *s, size_t n, tok_match_fn cb, void *user) {
  if (!n) return XPI_OK;
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(re->code, NULL);
  if (!md) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "tokenizer: out of memory (regex match data)");
  size_t pos = 0, last_end = (size_t)-1;
  xpi_status st = XPI_OK;
  while (pos <= n) {
    int rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, md, NULL);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      st = xpi_err(XPI_ERR_INTERNAL, "tokenizer: regex match failed: %s", (const char *)msg);
      break;
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    size_t a = ov[0], b = ov[1];
    if (a == b && b == last_end) { /* no empty match right where the previous one ended: step one character */
      if (pos >= n) break;
      size_t l = tok_utf8_valid_len((const unsigned char *)s + pos, n - pos);
      pos += l ? l : 1;
      continue;
    }
    if ((st = cb(a, b, user))) break;
    pos = last_end = b;
  }
  pcre2_match_data_free(md);
  return st;
}

xpi_status tok_pattern_parse(const cJSON *j, const char *what, tok_pattern *p) {
  memset(p, 0, sizeof *p);
  const cJSON *str = cJSON_GetObjectItemCaseSensitive(j, "String");
  const cJSON *rx = cJSON_GetObjectItemCaseSensitive(j, "Regex");
  if (cJSON_IsString(str)) {
    p->lit_len = strlen(str->valuestring); /* "" matches (empty) at every character boundary */
    p->literal = strdup(str->valuestring);
    if (!p->literal) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    return XPI_OK;
  }
  if (cJSON_IsString(rx)) {
    p->is_regex = 1;
    return tok_regex_compile(rx->valuestring, what, &p->re);
  }
  return xpi_err(XPI_ERR_FORMAT, "%s: \"pattern\" must be {\"String\": ...} or {\"Regex\": ...}", what);
}

void tok_pattern_free(tok_pattern *p) {
  free(p->literal);
  tok_regex_free(&p->re);
  memset(p, 0, sizeof *p);
}

xpi_status tok_pattern_each(const tok_pattern *p, const char *s, size_t n, tok_match_fn cb, void *user) {
  if (p->is_regex) return tok_regex_each(&p->re, s, n, cb, user);
  if (!p->lit_len) { /* as the escaped empty regex: an empty match at each boundary, the end included */
    for (size_t i = 0; n && i <= n;) {
      XPI_TRY(cb(i, i, user));
      size_t l = i < n ? tok_utf8_valid_len((const unsigned char *)s + i, n - i) : 1;
      i += l ? l : 1;
    }
    return XPI_OK;
  }
  size_t pos = 0;
  while (pos + p->lit_len <= n) {
    const char *hit = memmem(s + pos, n - pos, p->literal, p->lit_len);
    if (!hit) break;
    size_t a = (size_t)(hit - s);
    XPI_TRY(cb(a, a + p->lit_len, user));
    pos = a + p->lit_len;
  }
  return XPI_OK;
}

typedef struct { const char *s; const char *content; tok_buf *out; size_t prev; } repl_ctx;

static xpi_status repl_cb(size_t a, size_t b, void *user) {
  repl_ctx *c = user;
  XPI_TRY(tok_buf_put(c->out, c->s + c->prev, a - c->prev));
  XPI_TRY(tok_buf_puts(c->out, c->content));
  c->prev = b;
  return XPI_OK;
}

xpi_status tok_pattern_replace(const tok_pattern *p, const char *s, size_t n, const char *content, tok_buf *out) {
  repl_ctx c = {s, content, out, 0};
  XPI_TRY(tok_buf_put(out, "", 0));
  if (!n) return XPI_OK;
  XPI_TRY(tok_pattern_each(p, s, n, repl_cb, &c));
  return tok_buf_put(out, s + c.prev, n - c.prev);
}
