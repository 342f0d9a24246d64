/* Unicode normalizers: NFC/NFD/NFKC/NFKD (utf8proc), Lowercase (char::to_lowercase), StripAccents (drops combining
 * marks), and BertNormalizer (clean text, space around CJK characters, strip accents after NFD, lowercase), each
 * as tokenizers applies it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

extern const unsigned char tok_tab_norm_unknown_lead[256]; /* tok_unicode_tables.c */

static xpi_status map_segment(int options, const char *s, size_t len, tok_buf *out) {
  if (!len) return XPI_OK;
  utf8proc_uint8_t *dst = NULL;
  utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)len, &dst, options);
  if (r < 0) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "tokenizer: normalization failed: %s", utf8proc_errmsg(r));
  xpi_status st = tok_buf_put(out, dst, (size_t)r);
  free(dst);
  return st;
}

/* Characters newer than tokenizers' normalization tables stay as they are and, being starters of class 0 there,
 * nothing composes or reorders across them: the text is normalized in segments between them. */
xpi_status tok_norm_unicode(int type, const char *s, size_t len, tok_buf *out) {
  int options = UTF8PROC_STABLE;
  switch (type) {
    case NORM_NFC: options |= UTF8PROC_COMPOSE; break;
    case NORM_NFD: options |= UTF8PROC_DECOMPOSE; break;
    case NORM_NFKC: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    default: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  XPI_TRY(tok_buf_put(out, "", 0));
  const unsigned char *u = (const unsigned char *)s;
  size_t seg = 0;
  for (size_t i = 0; i < len;) {
    uint64_t w8;
    if (i + 8 <= len && (memcpy(&w8, u + i, 8), !(w8 & 0x8080808080808080ull))) { i += 8; continue; } /* ASCII */
    if (!tok_tab_norm_unknown_lead[u[i]]) { i++; continue; } /* continuation and most lead bytes */
    size_t l = tok_utf8_valid_len(u + i, len - i);
    if (!l) l = 1;
    if (tok_norm_unknown(tok_utf8_cp(u + i, l))) {
      XPI_TRY(map_segment(options, s + seg, i - seg, out));
      XPI_TRY(tok_buf_put(out, s + i, l));
      seg = i + l;
    }
    i += l;
  }
  return map_segment(options, s + seg, len - seg, out);
}

/* Calls the per-character step over valid UTF-8 s. */
#define EACH_CP(s, len, i, cp, l, body)                                        \
  for (size_t i = 0, l; i < (len); i += l) {                                   \
    l = tok_utf8_valid_len((const unsigned char *)(s) + i, (len) - i);         \
    if (!l) l = 1;                                                             \
    int32_t cp = tok_utf8_cp((const unsigned char *)(s) + i, l);               \
    body                                                                       \
  }

xpi_status tok_norm_lowercase(const char *s, size_t len, tok_buf *out) {
  XPI_TRY(tok_buf_put(out, "", 0));
  EACH_CP(s, len, i, cp, l, {
    if (cp < 128) {
      char c = (char)(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
      XPI_TRY(tok_buf_put(out, &c, 1));
    } else {
      XPI_TRY(tok_put_lower(out, cp));
    }
  })
  return XPI_OK;
}

/* Keeps the characters for which keep() is true; a deleted first character moves the start. */
static xpi_status filter(const char *s, size_t len, int (*drop)(int32_t), tok_buf *out, int *lead) {
  XPI_TRY(tok_buf_put(out, "", 0));
  int kept_any = 0;
  EACH_CP(s, len, i, cp, l, {
    if (drop(cp)) {
      if (!kept_any && lead) *lead = 1;
      continue;
    }
    kept_any = 1;
    XPI_TRY(tok_buf_put(out, s + i, l));
  })
  return XPI_OK;
}

xpi_status tok_norm_strip_accents(const char *s, size_t len, tok_buf *out, int *lead) {
  return filter(s, len, tok_is_combining_mark, out, lead);
}

static int bert_drop(int32_t cp) {
  return cp == 0 || cp == 0xFFFD || (cp != '\t' && cp != '\n' && cp != '\r' && tok_is_other(cp));
}

xpi_status tok_norm_bert(const tok_norm *n, const char *s, size_t len, tok_buf *out, int *lead) {
  tok_buf a = {0}, b = {0};
  xpi_status st = tok_buf_put(&a, s, len);
  if (!st && n->clean_text) { /* drop NUL, U+FFFD and controls; any whitespace becomes a space */
    st = filter(a.p, a.len, bert_drop, &b, lead);
    tok_buf t = a; a = b; b = t;
    b.len = 0;
    if (!st) st = tok_buf_put(&b, "", 0);
    EACH_CP(a.p, a.len, i, cp, l, {
      if (st) break;
      st = tok_is_whitespace(cp) ? tok_buf_put(&b, " ", 1) : tok_buf_put(&b, a.p + i, l);
    })
    t = a; a = b; b = t;
  }
  if (!st && n->chinese) {
    b.len = 0;
    st = tok_buf_put(&b, "", 0);
    EACH_CP(a.p, a.len, i, cp, l, {
      if (st) break;
      if (tok_is_cjk(cp)) {
        if (!(st = tok_buf_put(&b, " ", 1)) && !(st = tok_buf_put(&b, a.p + i, l))) st = tok_buf_put(&b, " ", 1);
      } else {
        st = tok_buf_put(&b, a.p + i, l);
      }
    })
    tok_buf t = a; a = b; b = t;
  }
  if (!st && n->strip_accents) {
    b.len = 0;
    st = tok_norm_unicode(NORM_NFD, a.p, a.len, &b);
    tok_buf t = a; a = b; b = t;
    if (!st) {
      b.len = 0;
      st = filter(a.p, a.len, tok_is_mark_nonspacing, &b, lead);
      t = a; a = b; b = t;
    }
  }
  if (!st && n->lowercase) {
    b.len = 0;
    st = tok_norm_lowercase(a.p, a.len, &b);
    tok_buf t = a; a = b; b = t;
  }
  if (!st) st = tok_buf_put(out, a.p, a.len);
  tok_buf_free(&a);
  tok_buf_free(&b);
  return st;
}
