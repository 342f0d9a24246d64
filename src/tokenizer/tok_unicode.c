/* Character classes with the definitions tokenizers uses. tokenizers takes them from crates of different
 * Unicode versions (unicode_categories: Unicode 8; its normalization crate: about 10; Rust std and regex: 16);
 * tok_unicode_tables.c (generated from tokenizers itself by tools/gen_tok_unicode_tables.py) holds its exact
 * sets, and utf8proc serves the rest. */
#include <stdlib.h>
#include <utf8proc.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

extern const uint32_t tok_tab_other[][2], tok_tab_mn[][2], tok_tab_comb[][2], tok_tab_punct[][2],
    tok_tab_numeric[][2], tok_tab_word[][2], tok_tab_norm_unknown[][2], tok_tab_no_script[][2];
extern const size_t tok_tab_other_n, tok_tab_mn_n, tok_tab_comb_n, tok_tab_punct_n, tok_tab_numeric_n, tok_tab_word_n,
    tok_tab_norm_unknown_n, tok_tab_no_script_n;
extern const uint32_t tok_tab_script[][3];
extern const size_t tok_tab_script_n;
extern const struct tok_lower_pair { uint32_t cp, lower; } tok_tab_lower[];
extern const size_t tok_tab_lower_n;

static int in_ranges(const uint32_t (*r)[2], size_t n, int32_t cp) {
  size_t lo = 0, hi = n;
  uint32_t c = (uint32_t)cp;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (r[mid][1] < c) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && r[lo][0] <= c;
}

int tok_is_punct(int32_t cp) {
  if (cp < 128) return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126);
  return in_ranges(tok_tab_punct, tok_tab_punct_n, cp);
}

int tok_is_numeric(int32_t cp) {
  if (cp < 128) return cp >= '0' && cp <= '9';
  return in_ranges(tok_tab_numeric, tok_tab_numeric_n, cp);
}

int tok_is_other(int32_t cp) { return in_ranges(tok_tab_other, tok_tab_other_n, cp); }
int tok_is_mark_nonspacing(int32_t cp) { return cp >= 0x300 && in_ranges(tok_tab_mn, tok_tab_mn_n, cp); }
int tok_is_combining_mark(int32_t cp) { return cp >= 0x300 && in_ranges(tok_tab_comb, tok_tab_comb_n, cp); }

int tok_is_word(int32_t cp) {
  if (cp < 128) return (cp >= '0' && cp <= '9') || (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z') || cp == '_';
  return in_ranges(tok_tab_word, tok_tab_word_n, cp);
}

int tok_norm_unknown(int32_t cp) { return cp >= 0x300 && in_ranges(tok_tab_norm_unknown, tok_tab_norm_unknown_n, cp); }

int tok_script(int32_t cp) {
  if (cp == ' ' || (cp >= 0x80 && in_ranges(tok_tab_no_script, tok_tab_no_script_n, cp))) return -1;
  size_t lo = 0, hi = tok_tab_script_n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (tok_tab_script[mid][1] < (uint32_t)cp) lo = mid + 1;
    else hi = mid;
  }
  return lo < tok_tab_script_n && tok_tab_script[lo][0] <= (uint32_t)cp ? (int)tok_tab_script[lo][2] : -1;
}

int tok_is_cjk(int32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

xpi_status tok_put_lower(tok_buf *out, int32_t cp) {
  char b[4];
  if (cp == 0x130) return tok_buf_put(out, "i\xCC\x87", 3); /* the one unconditional multi-character lowercase */
  size_t lo = 0, hi = tok_tab_lower_n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (tok_tab_lower[mid].cp < (uint32_t)cp) lo = mid + 1;
    else hi = mid;
  }
  int32_t l = lo < tok_tab_lower_n && tok_tab_lower[lo].cp == (uint32_t)cp ? (int32_t)tok_tab_lower[lo].lower
                                                                              : utf8proc_tolower(cp);
  return tok_buf_put(out, b, tok_utf8_put(l, b));
}

int32_t tok_utf8_prev(const char *s, size_t i, size_t *start) {
  const unsigned char *u = (const unsigned char *)s;
  size_t st = i - 1;
  while (st > 0 && (u[st] & 0xC0) == 0x80 && i - st < 4) st--;
  size_t l = tok_utf8_valid_len(u + st, i - st);
  *start = l == i - st ? st : i - 1;
  return l == i - st ? tok_utf8_cp(u + st, l) : u[i - 1];
}
