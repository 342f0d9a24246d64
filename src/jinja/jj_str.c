/* Strings as Python sees them: UTF-8 text indexed by code point, and the character classes and case mappings of
 * Python's str methods (isspace is Python's exact set; the others come from utf8proc's Unicode tables). */
#include <string.h>
#include <utf8proc.h>

#include "jinja/jj_internal.h"

jj_str *jj_str_new(jj_arena *a, const char *s, size_t n) {
  if (n > SIZE_MAX - sizeof(jj_str) - 1)
    jj_throw(a->err, XPI_ERR_INVALID_ARGUMENT, 0, 0, "string too long");
  jj_str *r = jj_alloc(a, sizeof(jj_str) + n + 1);
  r->len = n;
  r->ncp = SIZE_MAX;
  if (n) memcpy(r->p, s, n);
  r->p[n] = 0;
  return r;
}

jj_str *jj_str_c(jj_arena *a, const char *s) { return jj_str_new(a, s, strlen(s)); }
jv jj_strv(jj_arena *a, const char *s, size_t n) { return jv_strv(jj_str_new(a, s, n)); }
jv jj_cstrv(jj_arena *a, const char *s) { return jv_strv(jj_str_c(a, s)); }

int jj_is_ascii(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] >= 0x80) return 0;
  return 1;
}

size_t jj_str_ncp(jj_str *s) {
  if (s->ncp == SIZE_MAX) {
    size_t c = 0;
    for (size_t i = 0; i < s->len; i++) c += ((unsigned char)s->p[i] & 0xC0) != 0x80;
    s->ncp = c;
  }
  return s->ncp;
}

size_t jj_u8_len(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xF0) return 4;
  if (c >= 0xE0) return 3;
  if (c >= 0xC0) return 2;
  return 1;
}

uint32_t jj_u8_dec(const char *s, size_t *adv) {
  const unsigned char *u = (const unsigned char *)s;
  size_t l = jj_u8_len(u[0]);
  *adv = l;
  switch (l) {
    case 1: return u[0];
    case 2: return ((uint32_t)(u[0] & 0x1F) << 6) | (u[1] & 0x3F);
    case 3: return ((uint32_t)(u[0] & 0x0F) << 12) | ((uint32_t)(u[1] & 0x3F) << 6) | (u[2] & 0x3F);
    default:
      return ((uint32_t)(u[0] & 0x07) << 18) | ((uint32_t)(u[1] & 0x3F) << 12) | ((uint32_t)(u[2] & 0x3F) << 6) |
             (u[3] & 0x3F);
  }
}

size_t jj_u8_enc(uint32_t cp, char *o) {
  if (cp < 0x80) { o[0] = (char)cp; return 1; }
  if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

size_t jj_u8_offset(const jj_str *s, size_t idx) {
  if (s->ncp == s->len) return idx < s->len ? idx : s->len;
  size_t i = 0;
  while (idx && i < s->len) {
    i += jj_u8_len((unsigned char)s->p[i]);
    idx--;
  }
  return i < s->len ? i : s->len;
}

/* ---------------------------------------------------------------- character classes */
int jj_py_isspace(uint32_t c) {
  if (c < 0x80) return (c >= 9 && c <= 13) || (c >= 0x1C && c <= 0x20);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

static int cat(uint32_t c) { return c > 0x10FFFF ? UTF8PROC_CATEGORY_CN : (int)utf8proc_category((utf8proc_int32_t)c); }

int jj_py_isprintable(uint32_t c) {
  if (c == ' ') return 1;
  switch (cat(c)) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS: case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP: case UTF8PROC_CATEGORY_ZS:
      return 0;
    default: return 1;
  }
}

int jj_py_isalpha(uint32_t c) {
  if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
  switch (cat(c)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT: case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return 1;
    default: return 0;
  }
}

int jj_py_isdecimal(uint32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return cat(c) == UTF8PROC_CATEGORY_ND;
}

/* Nd plus the No characters Python counts as digits (superscripts, subscripts, circled digits). */
int jj_py_isdigit(uint32_t c) {
  if (jj_py_isdecimal(c)) return 1;
  return c == 0xB2 || c == 0xB3 || c == 0xB9 || c == 0x2070 || (c >= 0x2074 && c <= 0x2079) ||
         (c >= 0x2080 && c <= 0x2089) || (c >= 0x2460 && c <= 0x2468) || (c >= 0x2474 && c <= 0x247C) ||
         (c >= 0x2488 && c <= 0x2490) || c == 0x24EA || (c >= 0x24F5 && c <= 0x24FD) || c == 0x24FF ||
         (c >= 0x2776 && c <= 0x277E) || (c >= 0x2780 && c <= 0x2788) || (c >= 0x278A && c <= 0x2792);
}

int jj_py_isnumeric(uint32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  int k = cat(c);
  return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}

int jj_py_isalnum(uint32_t c) { return jj_py_isalpha(c) || jj_py_isdigit(c) || jj_py_isnumeric(c); }

int jj_py_islower_cp(uint32_t c) {
  if (c < 0x80) return c >= 'a' && c <= 'z';
  return cat(c) == UTF8PROC_CATEGORY_LL || (utf8proc_toupper((utf8proc_int32_t)c) != (utf8proc_int32_t)c &&
                                            cat(c) != UTF8PROC_CATEGORY_LT && cat(c) != UTF8PROC_CATEGORY_LU);
}

int jj_py_isupper_cp(uint32_t c) {
  if (c < 0x80) return c >= 'A' && c <= 'Z';
  return cat(c) == UTF8PROC_CATEGORY_LU;
}

int jj_py_iscased(uint32_t c) {
  if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
  int k = cat(c);
  return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT ||
         utf8proc_tolower((utf8proc_int32_t)c) != (utf8proc_int32_t)c ||
         utf8proc_toupper((utf8proc_int32_t)c) != (utf8proc_int32_t)c;
}

uint32_t jj_py_lower(uint32_t c) {
  if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
  return (uint32_t)utf8proc_tolower((utf8proc_int32_t)c);
}

uint32_t jj_py_upper(uint32_t c) {
  if (c < 0x80) return c >= 'a' && c <= 'z' ? c - 32 : c;
  return (uint32_t)utf8proc_toupper((utf8proc_int32_t)c);
}

uint32_t jj_py_title(uint32_t c) {
  if (c < 0x80) return jj_py_upper(c);
  return (uint32_t)utf8proc_totitle((utf8proc_int32_t)c);
}

/* Python's special (one-to-many) upper-case mappings that occur in real text. */
static const char *upper_special(uint32_t c) {
  switch (c) {
    case 0xDF: return "SS";
    case 0x149: return "\xCA\xBCN";
    case 0xFB00: return "FF";
    case 0xFB01: return "FI";
    case 0xFB02: return "FL";
    case 0xFB03: return "FFI";
    case 0xFB04: return "FFL";
    case 0xFB05: case 0xFB06: return "ST";
    default: return NULL;
  }
}

static int case_ignorable(uint32_t c) {
  if (c == '\'' || c == '.' || c == ':' || c == '^' || c == '`' || c == 0xB7 || c == 0x2019) return 1;
  int k = cat(c);
  return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_ME || k == UTF8PROC_CATEGORY_CF ||
         k == UTF8PROC_CATEGORY_LM || k == UTF8PROC_CATEGORY_SK;
}

/* Python's lower-casing of the character c at s[i] (of s[0, n)): İ becomes i + combining dot, Σ becomes ς at the
 * end of a word (Final_Sigma: after a cased letter and not before one). */
void jj_lower_at(jj_buf *b, const char *s, size_t n, size_t i, size_t adv, uint32_t c) {
  if (c == 0x130) { jj_buf_puts(b, "i\xCC\x87"); return; }
  if (c != 0x3A3) { jj_buf_cp(b, jj_py_lower(c)); return; }
  int before = 0, after = 0;
  for (size_t j = i; j > 0;) {
    size_t k = j - 1;
    while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
    size_t a2;
    uint32_t p = jj_u8_dec(s + k, &a2);
    j = k;
    if (case_ignorable(p)) continue;
    before = jj_py_iscased(p);
    break;
  }
  for (size_t j = i + adv; j < n;) {
    size_t a2;
    uint32_t p = jj_u8_dec(s + j, &a2);
    j += a2;
    if (case_ignorable(p)) continue;
    after = jj_py_iscased(p);
    break;
  }
  jj_buf_cp(b, before && !after ? 0x3C2 : 0x3C3);
}

void jj_buf_lower(jj_buf *b, const char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned char u = (unsigned char)s[i];
    if (u < 0x80) {
      jj_buf_putc(b, (char)(u >= 'A' && u <= 'Z' ? u + 32 : u));
      i++;
      continue;
    }
    size_t adv;
    uint32_t c = jj_u8_dec(s + i, &adv);
    jj_lower_at(b, s, n, i, adv, c);
    i += adv;
  }
}

/* Python's title-casing of one character (ß -> Ss, the ligatures to two or three letters). */
void jj_title_cp(jj_buf *b, uint32_t c) {
  switch (c) {
    case 0xDF: jj_buf_puts(b, "Ss"); return;
    case 0xFB00: jj_buf_puts(b, "Ff"); return;
    case 0xFB01: jj_buf_puts(b, "Fi"); return;
    case 0xFB02: jj_buf_puts(b, "Fl"); return;
    case 0xFB03: jj_buf_puts(b, "Ffi"); return;
    case 0xFB04: jj_buf_puts(b, "Ffl"); return;
    case 0xFB05: case 0xFB06: jj_buf_puts(b, "St"); return;
    case 0x149: jj_buf_puts(b, "\xCA\xBCN"); return;
    default: jj_buf_cp(b, jj_py_title(c));
  }
}

/* Python's str.casefold (full case folding: ß -> ss). */
void jj_buf_casefold(jj_buf *b, const char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    size_t adv;
    uint32_t c = jj_u8_dec(s + i, &adv);
    utf8proc_int32_t out[8];
    utf8proc_ssize_t k = utf8proc_decompose_char((utf8proc_int32_t)c, out, 8, UTF8PROC_CASEFOLD, NULL);
    if (k < 1 || k > 8) jj_buf_put(b, s + i, adv);
    else
      for (utf8proc_ssize_t q = 0; q < k; q++) jj_buf_cp(b, (uint32_t)out[q]);
    i += adv;
  }
}

void jj_buf_upper(jj_buf *b, const char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned char u = (unsigned char)s[i];
    if (u < 0x80) {
      jj_buf_putc(b, (char)(u >= 'a' && u <= 'z' ? u - 32 : u));
      i++;
      continue;
    }
    size_t adv;
    uint32_t c = jj_u8_dec(s + i, &adv);
    const char *sp = upper_special(c);
    if (sp) jj_buf_puts(b, sp);
    else jj_buf_cp(b, jj_py_upper(c));
    i += adv;
  }
}
