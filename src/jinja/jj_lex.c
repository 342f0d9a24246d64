/* The lexer, rule for rule as jinja2's (lexer.py) with trim_blocks and lstrip_blocks: line breaks normalized
 * and one trailing newline dropped, {%- -%} and {%+ +%} whitespace control, comments, raw blocks, brace
 * balancing inside tags, Python string escapes (after the ascii/backslashreplace round trip jinja2 does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jj_internal.h"

typedef struct lexer {
  jj_arena *a;
  const char *s;
  size_t n;
  size_t pos;
  /* line/column of pos_at, advanced incrementally (positions only move forward) */
  size_t lc_pos;
  uint32_t lc_line, lc_col;
  jj_tokens *out;
  int line_starting;
} lexer;

static void at(lexer *L, size_t pos, uint32_t *line, uint32_t *col) {
  if (pos < L->lc_pos) { L->lc_pos = 0; L->lc_line = 1; L->lc_col = 1; }
  while (L->lc_pos < pos && L->lc_pos < L->n) {
    unsigned char c = (unsigned char)L->s[L->lc_pos];
    if (c == '\n') { L->lc_line++; L->lc_col = 1; }
    else if ((c & 0xC0) != 0x80) L->lc_col++;
    L->lc_pos++;
  }
  *line = L->lc_line;
  *col = L->lc_col;
}

JJ_NORETURN static void fail_at(lexer *L, size_t pos, const char *fmt, const char *arg) {
  uint32_t line, col;
  at(L, pos, &line, &col);
  jj_throw(L->a->err, XPI_ERR_FORMAT, line, col, fmt, arg);
}

static jj_token *emit(lexer *L, int type, size_t pos) {
  jj_tokens *t = L->out;
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    jj_token *v = jj_alloc_array(L->a, cap, sizeof *v);
    if (t->n) memcpy(v, t->v, t->n * sizeof *v);
    t->v = v;
    t->cap = cap;
  }
  jj_token *k = &t->v[t->n++];
  memset(k, 0, sizeof *k);
  k->type = (uint8_t)type;
  at(L, pos, &k->line, &k->col);
  return k;
}

/* Length of the Python whitespace character at s[i] (0 when it is not one). */
static size_t ws_at(const char *s, size_t n, size_t i) {
  if (i >= n) return 0;
  unsigned char c = (unsigned char)s[i];
  if (c < 0x80) return jj_py_isspace(c) ? 1 : 0;
  size_t l = jj_u8_len(c);
  if (i + l > n) return 0;
  size_t adv;
  uint32_t cp = jj_u8_dec(s + i, &adv);
  return jj_py_isspace(cp) ? adv : 0;
}

static size_t skip_ws(const char *s, size_t n, size_t i) {
  size_t l;
  while ((l = ws_at(s, n, i))) i += l;
  return i;
}

/* Python str.rstrip() of s[from, to): the new end. */
static size_t rstrip_end(const char *s, size_t from, size_t to) {
  while (to > from) {
    size_t st = to - 1;
    while (st > from && ((unsigned char)s[st] & 0xC0) == 0x80) st--;
    if (ws_at(s, to, st) != to - st) break;
    to = st;
  }
  return to;
}

/* Data before a tag, with the tag's whitespace control applied (jinja2's OptionalLStrip). */
static void data_before(lexer *L, size_t from, size_t to, char sign, int is_variable) {
  if (sign == '-') {
    to = rstrip_end(L->s, from, to);
  } else if (sign != '+' && !is_variable) {
    size_t l_pos = from;
    for (size_t i = to; i > from; i--)
      if (L->s[i - 1] == '\n') { l_pos = i; break; }
    if (l_pos > from || L->line_starting) {
      if (l_pos < to && skip_ws(L->s, to, l_pos) == to) to = l_pos;
    }
  }
  if (to > from) {
    jj_token *k = emit(L, TK_DATA, from);
    k->s = L->s + from;
    k->len = to - from;
  }
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

/* (\d+_)*\d+ at i: end, or i when there is none. */
static size_t digits_us(const char *s, size_t n, size_t i) {
  size_t j = i;
  if (j >= n || !is_digit(s[j])) return i;
  for (;;) {
    while (j < n && is_digit(s[j])) j++;
    if (j + 1 < n && s[j] == '_' && is_digit(s[j + 1])) { j++; continue; }
    return j;
  }
}

/* float_re at i; 0 when no match. */
static size_t match_float(const char *s, size_t n, size_t i) {
  if (i > 0 && s[i - 1] == '.') return 0;
  size_t j = digits_us(s, n, i);
  if (j == i) return 0;
  size_t frac_end = 0;
  if (j < n && s[j] == '.') {
    size_t k = digits_us(s, n, j + 1);
    if (k > j + 1) frac_end = k;
  }
  size_t e = frac_end ? frac_end : j;
  if (e < n && (s[e] == 'e' || s[e] == 'E')) {
    size_t k = e + 1;
    if (k < n && (s[k] == '+' || s[k] == '-')) k++;
    size_t m = digits_us(s, n, k);
    if (m > k) return m;
  }
  return frac_end;
}

/* integer_re at i; 0 when no match. */
static size_t match_int(const char *s, size_t n, size_t i) {
  if (i >= n || !is_digit(s[i])) return 0;
  if (s[i] == '0' && i + 1 < n) {
    char p = s[i + 1] | 0x20;
    int base = p == 'b' ? 2 : p == 'o' ? 8 : p == 'x' ? 16 : 0;
    if (base) {
      size_t j = i + 2, last = 0;
      for (;;) {
        size_t k = j;
        if (k < n && s[k] == '_') k++;
        if (k < n && (base == 16 ? is_hex(s[k]) : base == 8 ? (s[k] >= '0' && s[k] <= '7') : (s[k] == '0' || s[k] == '1'))) {
          j = k + 1;
          last = j;
        } else {
          break;
        }
      }
      if (last) return last;
    }
  }
  size_t j = i + 1;
  if (s[i] == '0') {
    for (;;) {
      size_t k = j;
      if (k < n && s[k] == '_') k++;
      if (k < n && s[k] == '0') j = k + 1;
      else break;
    }
    return j;
  }
  for (;;) {
    size_t k = j;
    if (k < n && s[k] == '_') k++;
    if (k < n && is_digit(s[k])) j = k + 1;
    else break;
  }
  return j;
}

static int name_char(uint32_t cp) { return cp == '_' || jj_py_isalnum(cp); }

/* A name token (\w and combining marks): end, or i when none. */
static size_t match_name(const char *s, size_t n, size_t i, int *ident_ok) {
  size_t j = i;
  *ident_ok = 1;
  while (j < n) {
    unsigned char c = (unsigned char)s[j];
    if (c < 0x80) {
      if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit((char)c))) break;
      if (j == i && is_digit((char)c)) *ident_ok = 0;
      j++;
      continue;
    }
    size_t adv;
    if (j + jj_u8_len(c) > n) break;
    uint32_t cp = jj_u8_dec(s + j, &adv);
    if (!name_char(cp)) break;
    if (j == i && !jj_py_isalpha(cp)) *ident_ok = 0;
    j += adv;
  }
  return j;
}

/* Decodes a string literal's body as Python's unicode-escape after ascii/backslashreplace (what jinja2 does). */
static void unescape(lexer *L, size_t lit_pos, const char *s, size_t n, jj_token *k) {
  /* first the ascii/backslashreplace encoding */
  size_t cap = n * 10 + 1;
  char *enc = jj_alloc(L->a, cap), *o;
  size_t e = 0;
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x80) { enc[e++] = (char)c; i++; continue; }
    size_t adv;
    uint32_t cp = jj_u8_dec(s + i, &adv);
    i += adv;
    static const char hx[] = "0123456789abcdef";
    int digits = cp < 0x100 ? 2 : cp < 0x10000 ? 4 : 8;
    enc[e++] = '\\';
    enc[e++] = cp < 0x100 ? 'x' : cp < 0x10000 ? 'u' : 'U';
    for (int d = digits - 1; d >= 0; d--) enc[e++] = hx[(cp >> (4 * d)) & 15];
  }
  o = jj_alloc(L->a, e * 4 + 1);
  size_t m = 0;
  for (size_t i = 0; i < e;) {
    char c = enc[i];
    if (c != '\\') { o[m++] = c; i++; continue; }
    if (i + 1 >= e) fail_at(L, lit_pos, "%s", "\\ at end of string");
    char d = enc[i + 1];
    i += 2;
    uint32_t cp = 0;
    int hexn = 0;
    switch (d) {
      case '\n': continue;
      case '\\': o[m++] = '\\'; continue;
      case '\'': o[m++] = '\''; continue;
      case '"': o[m++] = '"'; continue;
      case 'a': o[m++] = 7; continue;
      case 'b': o[m++] = 8; continue;
      case 'f': o[m++] = 12; continue;
      case 'n': o[m++] = '\n'; continue;
      case 'r': o[m++] = '\r'; continue;
      case 't': o[m++] = '\t'; continue;
      case 'v': o[m++] = 11; continue;
      case 'x': hexn = 2; break;
      case 'u': hexn = 4; break;
      case 'U': hexn = 8; break;
      case 'N': fail_at(L, lit_pos, "%s", "\\N{...} escapes in string literals are not supported");
      default:
        if (d >= '0' && d <= '7') {
          cp = (uint32_t)(d - '0');
          for (int q = 0; q < 2 && i < e && enc[i] >= '0' && enc[i] <= '7'; q++) cp = cp * 8 + (uint32_t)(enc[i++] - '0');
          m += jj_u8_enc(cp, o + m);
          continue;
        }
        o[m++] = '\\';
        o[m++] = d;
        continue;
    }
    for (int q = 0; q < hexn; q++) {
      if (i >= e || !is_hex(enc[i]))
        fail_at(L, lit_pos, "%s", hexn == 2 ? "truncated \\xXX escape" : hexn == 4 ? "truncated \\uXXXX escape"
                                                                             : "truncated \\UXXXXXXXX escape");
      char h = enc[i++];
      cp = cp * 16 + (uint32_t)(is_digit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
    }
    if (cp > 0x10FFFF) fail_at(L, lit_pos, "%s", "illegal Unicode character");
    if (cp >= 0xD800 && cp <= 0xDFFF) fail_at(L, lit_pos, "%s", "a string literal holds a lone surrogate");
    m += jj_u8_enc(cp, o + m);
  }
  o[m] = 0;
  k->s = o;
  k->len = m;
}

static const char *const OPS[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]",
                                  "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"};

/* Tokens of one {% %} or {{ }} up to and including its end; returns the position after it. */
static size_t lex_tag(lexer *L, size_t i, int is_block) {
  char stack[256];
  size_t depth = 0;
  const char *s = L->s;
  size_t n = L->n;
  while (i < n) {
    if (!depth) { /* the end rule */
      if (is_block) {
        if (i + 2 < n && s[i] == '+' && s[i + 1] == '%' && s[i + 2] == '}') {
          emit(L, TK_BLOCK_END, i);
          L->line_starting = 0;
          return i + 3;
        }
        if (i + 2 < n && s[i] == '-' && s[i + 1] == '%' && s[i + 2] == '}') {
          emit(L, TK_BLOCK_END, i);
          size_t j = skip_ws(s, n, i + 3);
          L->line_starting = j > i + 3 && s[j - 1] == '\n';
          return j;
        }
        if (i + 1 < n && s[i] == '%' && s[i + 1] == '}') {
          emit(L, TK_BLOCK_END, i);
          size_t j = i + 2;
          if (j < n && s[j] == '\n') j++; /* trim_blocks */
          L->line_starting = s[j - 1] == '\n';
          return j;
        }
      } else {
        if (i + 2 < n && s[i] == '-' && s[i + 1] == '}' && s[i + 2] == '}') {
          emit(L, TK_VAR_END, i);
          size_t j = skip_ws(s, n, i + 3);
          L->line_starting = j > i + 3 && s[j - 1] == '\n';
          return j;
        }
        if (i + 1 < n && s[i] == '}' && s[i + 1] == '}') {
          emit(L, TK_VAR_END, i);
          L->line_starting = 0;
          return i + 2;
        }
      }
    }
    size_t j = skip_ws(s, n, i);
    if (j > i) { i = j; continue; }
    if ((j = match_float(s, n, i))) {
      jj_token *k = emit(L, TK_FLOAT, i);
      char tmp[128];
      size_t m = 0;
      for (size_t q = i; q < j && m < sizeof tmp - 1; q++)
        if (s[q] != '_') tmp[m++] = s[q];
      tmp[m] = 0;
      k->f = strtod(tmp, NULL);
      i = j;
      continue;
    }
    if ((j = match_int(s, n, i))) {
      jj_token *k = emit(L, TK_INT, i);
      int base = 10;
      size_t q = i;
      if (j - i > 2 && s[i] == '0') {
        char p = s[i + 1] | 0x20;
        if (p == 'b') base = 2;
        else if (p == 'o') base = 8;
        else if (p == 'x') base = 16;
        if (base != 10) q += 2;
      }
      uint64_t v = 0;
      int big = 0;
      for (; q < j; q++) {
        if (s[q] == '_') continue;
        unsigned d = is_digit(s[q]) ? (unsigned)(s[q] - '0') : (unsigned)((s[q] | 0x20) - 'a' + 10);
        if (__builtin_mul_overflow(v, (uint64_t)base, &v)) big = 1;
        if (__builtin_add_overflow(v, (uint64_t)d, &v)) big = 1;
      }
      if (big || v > INT64_MAX) fail_at(L, i, "%s", "integer literal beyond 64 bits (the engine's integers are 64-bit)");
      k->i = (int64_t)v;
      i = j;
      continue;
    }
    int ident_ok;
    if ((j = match_name(s, n, i, &ident_ok)) > i) {
      if (!ident_ok) fail_at(L, i, "%s", "Invalid character in identifier");
      jj_token *k = emit(L, TK_NAME, i);
      k->s = s + i;
      k->len = j - i;
      i = j;
      continue;
    }
    if (s[i] == '\'' || s[i] == '"') {
      char q = s[i];
      size_t e = i + 1;
      while (e < n && s[e] != q) e += s[e] == '\\' && e + 1 < n ? 2 : 1;
      if (e < n) {
        jj_token *k = emit(L, TK_STRING, i);
        unescape(L, i, s + i + 1, e - i - 1, k);
        i = e + 1;
        continue;
      }
    }
    size_t oplen = 0;
    for (size_t o = 0; o < sizeof OPS / sizeof *OPS; o++) {
      size_t l = strlen(OPS[o]);
      if (i + l <= n && !memcmp(s + i, OPS[o], l)) { oplen = l; break; }
    }
    if (!oplen) {
      char ch[8] = {0};
      size_t l = jj_u8_len((unsigned char)s[i]);
      memcpy(ch, s + i, l <= n - i ? l : 1);
      fail_at(L, i, "unexpected char '%s'", ch);
    }
    char c = s[i];
    if (oplen == 1 && (c == '{' || c == '(' || c == '[')) {
      if (depth == sizeof stack) fail_at(L, i, "%s", "brackets nested too deeply");
      stack[depth++] = c == '{' ? '}' : c == '(' ? ')' : ']';
    } else if (oplen == 1 && (c == '}' || c == ')' || c == ']')) {
      char m[48];
      if (!depth) {
        snprintf(m, sizeof m, "unexpected '%c'", c);
        fail_at(L, i, "%s", m);
      }
      char want = stack[--depth];
      if (want != c) {
        snprintf(m, sizeof m, "unexpected '%c', expected '%c'", c, want);
        fail_at(L, i, "%s", m);
      }
    }
    jj_token *k = emit(L, TK_OP, i);
    k->s = s + i;
    k->len = oplen;
    i += oplen;
  }
  return i; /* end of template inside a tag: the parser reports it */
}

/* {% raw %} at i (sign already seen): the end of the opening tag, or 0 when it is not a raw tag. */
static size_t match_raw_begin(const char *s, size_t n, size_t i) {
  size_t j = i + 2;
  if (j < n && (s[j] == '-' || s[j] == '+')) j++;
  j = skip_ws(s, n, j);
  if (j + 3 > n || memcmp(s + j, "raw", 3)) return 0;
  j = skip_ws(s, n, j + 3);
  if (j + 3 <= n && s[j] == '-' && s[j + 1] == '%' && s[j + 2] == '}') return skip_ws(s, n, j + 3);
  if (j + 2 <= n && s[j] == '%' && s[j + 1] == '}') return j + 2;
  return 0;
}

/* {% endraw %} at i: its end, with *sign; 0 when not. */
static size_t match_endraw(const char *s, size_t n, size_t i, char *sign) {
  if (i + 2 > n || s[i] != '{' || s[i + 1] != '%') return 0;
  size_t j = i + 2;
  *sign = 0;
  if (j < n && (s[j] == '-' || s[j] == '+')) *sign = s[j++];
  j = skip_ws(s, n, j);
  if (j + 6 > n || memcmp(s + j, "endraw", 6)) return 0;
  j = skip_ws(s, n, j + 6);
  if (j + 3 <= n && s[j] == '+' && s[j + 1] == '%' && s[j + 2] == '}') return j + 3;
  if (j + 3 <= n && s[j] == '-' && s[j + 1] == '%' && s[j + 2] == '}') return skip_ws(s, n, j + 3);
  if (j + 2 <= n && s[j] == '%' && s[j + 1] == '}') return j + 2 + (j + 2 < n && s[j + 2] == '\n');
  return 0;
}

void jj_lex(jj_arena *a, const char *src, size_t len, jj_tokens *out) {
  /* newline_re.split(source)[::2], the last empty line dropped, joined with "\n" */
  char *s = jj_alloc(a, len + 1);
  size_t n = 0;
  for (size_t i = 0; i < len; i++) {
    if (src[i] == '\r') {
      s[n++] = '\n';
      if (i + 1 < len && src[i + 1] == '\n') i++;
    } else {
      s[n++] = src[i];
    }
  }
  if (n && s[n - 1] == '\n') n--;
  s[n] = 0;
  lexer L = {.a = a, .s = s, .n = n, .lc_line = 1, .lc_col = 1, .out = out, .line_starting = 1};
  size_t pos = 0;
  while (pos < n) {
    /* the earliest {{, {% or {# */
    size_t p = pos;
    int kind = 0; /* 1 comment, 2 block, 3 variable */
    for (; p + 1 < n; p++) {
      if (s[p] != '{') continue;
      char d = s[p + 1];
      if (d == '#') { kind = 1; break; }
      if (d == '%') { kind = 2; break; }
      if (d == '{') { kind = 3; break; }
    }
    if (!kind) { /* the rest is data */
      jj_token *k = emit(&L, TK_DATA, pos);
      k->s = s + pos;
      k->len = n - pos;
      break;
    }
    char sign = p + 2 < n && (s[p + 2] == '-' || s[p + 2] == '+') ? s[p + 2] : 0;
    size_t raw_end = kind == 2 ? match_raw_begin(s, n, p) : 0;
    data_before(&L, pos, p, sign, kind == 3);
    if (raw_end) {
      L.line_starting = s[raw_end - 1] == '\n';
      size_t q = raw_end, end = 0;
      char esign = 0;
      for (; q < n; q++)
        if (s[q] == '{' && (end = match_endraw(s, n, q, &esign))) break;
      if (!end) fail_at(&L, p, "%s", "Missing end of raw directive");
      data_before(&L, raw_end, q, esign, 0);
      L.line_starting = s[end - 1] == '\n';
      pos = end;
      continue;
    }
    size_t i = p + 2 + (sign ? 1 : 0);
    if (kind == 1) {
      size_t h = i;
      while (h + 1 < n && !(s[h] == '#' && s[h + 1] == '}')) h++;
      if (h + 1 >= n) fail_at(&L, p, "%s", "Missing end of comment tag");
      size_t end;
      if (h > i && s[h - 1] == '+') end = h + 2;
      else if (h > i && s[h - 1] == '-') end = skip_ws(s, n, h + 2);
      else end = h + 2 + (h + 2 < n && s[h + 2] == '\n');
      L.line_starting = s[end - 1] == '\n';
      pos = end;
      continue;
    }
    emit(&L, kind == 2 ? TK_BLOCK_BEGIN : TK_VAR_BEGIN, p);
    pos = lex_tag(&L, i, kind == 2);
  }
  jj_token *eof = emit(&L, TK_EOF, n);
  (void)eof;
}
