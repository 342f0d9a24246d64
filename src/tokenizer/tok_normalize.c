/* Normalizers of tokenizer.json: NFC/NFD/NFKC/NFKD (utf8proc), Prepend, Replace, Strip, Sequence. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

static xpi_status dup_field(const cJSON *j, const char *key, const char *what, char **out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
  if (!cJSON_IsString(v)) return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" must be a string", what, key);
  *out = strdup(v->valuestring);
  if (!*out) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
  return XPI_OK;
}

xpi_status tok_norm_parse(const cJSON *j, const char *what, tok_norm *n) {
  memset(n, 0, sizeof *n);
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
  if (!cJSON_IsObject(j) || !cJSON_IsString(type))
    return xpi_err(XPI_ERR_FORMAT, "%s: a normalizer must be an object with a string \"type\"", what);
  const char *t = type->valuestring;
  if (!strcmp(t, "NFC")) n->type = NORM_NFC;
  else if (!strcmp(t, "NFD")) n->type = NORM_NFD;
  else if (!strcmp(t, "NFKC")) n->type = NORM_NFKC;
  else if (!strcmp(t, "NFKD")) n->type = NORM_NFKD;
  else if (!strcmp(t, "Prepend")) {
    n->type = NORM_PREPEND;
    return dup_field(j, "prepend", what, &n->str);
  } else if (!strcmp(t, "Replace")) {
    n->type = NORM_REPLACE;
    XPI_TRY(dup_field(j, "content", what, &n->str));
    return tok_pattern_parse(cJSON_GetObjectItemCaseSensitive(j, "pattern"), what, &n->pat);
  } else if (!strcmp(t, "Strip")) {
    n->type = NORM_STRIP;
    n->left = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "strip_left"));
    n->right = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "strip_right"));
  } else if (!strcmp(t, "Sequence")) {
    n->type = NORM_SEQ;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "normalizers");
    if (!cJSON_IsArray(arr)) return xpi_err(XPI_ERR_FORMAT, "%s: Sequence \"normalizers\" must be an array", what);
    size_t k = (size_t)cJSON_GetArraySize(arr);
    n->kids = calloc(k ? k : 1, sizeof *n->kids);
    if (!n->kids) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
      XPI_TRY(tok_norm_parse(e, what, &n->kids[n->n_kids]));
      n->n_kids++;
    }
  } else {
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: normalizer type \"%s\" is not supported (supported: NFC, NFD, NFKC, "
                   "NFKD, Prepend, Replace, Strip, Sequence)", what, t);
  }
  return XPI_OK;
}

void tok_norm_free(tok_norm *n) {
  if (!n) return;
  for (size_t i = 0; i < n->n_kids; i++) tok_norm_free(&n->kids[i]);
  free(n->kids);
  free(n->str);
  tok_pattern_free(&n->pat);
  memset(n, 0, sizeof *n);
}

static xpi_status unicode_norm(int options, const char *s, size_t len, tok_buf *out) {
  utf8proc_uint8_t *dst = NULL;
  utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)len, &dst, options);
  if (r < 0) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "tokenizer: normalization failed: %s", utf8proc_errmsg(r));
  xpi_status st = tok_buf_put(out, dst, (size_t)r);
  free(dst);
  return st;
}

xpi_status tok_norm_apply(const tok_norm *n, const char *s, size_t len, tok_buf *out) {
  out->len = 0;
  switch (n->type) {
    case NORM_NFC: return unicode_norm(UTF8PROC_STABLE | UTF8PROC_COMPOSE, s, len, out);
    case NORM_NFD: return unicode_norm(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE, s, len, out);
    case NORM_NFKC: return unicode_norm(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT, s, len, out);
    case NORM_NFKD: return unicode_norm(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, s, len, out);
    case NORM_PREPEND:
      if (len) XPI_TRY(tok_buf_puts(out, n->str));
      return tok_buf_put(out, s, len);
    case NORM_REPLACE: return tok_pattern_replace(&n->pat, s, len, n->str, out);
    case NORM_STRIP: {
      const unsigned char *u = (const unsigned char *)s;
      size_t a = 0, b = len;
      while (n->left && a < b) {
        size_t l = tok_utf8_valid_len(u + a, b - a);
        if (!l || !tok_is_whitespace(tok_utf8_cp(u + a, l))) break;
        a += l;
      }
      while (n->right && b > a) {
        size_t st = b - 1;
        while (st > a && (u[st] & 0xC0) == 0x80) st--;
        size_t l = tok_utf8_valid_len(u + st, b - st);
        if (!l || !tok_is_whitespace(tok_utf8_cp(u + st, l))) break;
        b = st;
      }
      return tok_buf_put(out, s + a, b - a);
    }
    case NORM_SEQ: {
      tok_buf cur = {0}, nxt = {0};
      xpi_status st = tok_buf_put(&cur, s, len);
      for (size_t i = 0; !st && i < n->n_kids; i++) {
        st = tok_norm_apply(&n->kids[i], cur.p, cur.len, &nxt);
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
