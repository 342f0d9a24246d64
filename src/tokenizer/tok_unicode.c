/* Character classes with the definitions tokenizers uses (Rust std's char methods and the unicode_categories
 * crate), from utf8proc's general categories. */
#include <utf8proc.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

static utf8proc_category_t cat(int32_t cp) { return utf8proc_category(cp); }

int tok_is_punct(int32_t cp) {
  if (cp < 128) return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126);
  utf8proc_category_t c = cat(cp);
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

int tok_is_numeric(int32_t cp) {
  utf8proc_category_t c = cat(cp);
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

int tok_is_other(int32_t cp) {
  utf8proc_category_t c = cat(cp);
  return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CO;
}

int tok_is_mark_nonspacing(int32_t cp) { return cat(cp) == UTF8PROC_CATEGORY_MN; }

int tok_is_combining_mark(int32_t cp) {
  utf8proc_category_t c = cat(cp);
  return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC || c == UTF8PROC_CATEGORY_ME;
}

int tok_is_cjk(int32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

xpi_status tok_put_lower(tok_buf *out, int32_t cp) {
  char b[4];
  if (cp == 0x130) return tok_buf_put(out, "i\xCC\x87", 3); /* the one unconditional multi-character lowercase */
  return tok_buf_put(out, b, tok_utf8_put(utf8proc_tolower(cp), b));
}

int32_t tok_utf8_prev(const char *s, size_t i, size_t *start) {
  const unsigned char *u = (const unsigned char *)s;
  size_t st = i - 1;
  while (st > 0 && (u[st] & 0xC0) == 0x80 && i - st < 4) st--;
  size_t l = tok_utf8_valid_len(u + st, i - st);
  *start = l == i - st ? st : i - 1;
  return l == i - st ? tok_utf8_cp(u + st, l) : u[i - 1];
}
