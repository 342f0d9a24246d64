/* UTF-8 validation, decoding and Rust-compatible lossy conversion; Unicode White_Space. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"
#include "tokenizer/tokenizer.h"

/* ---------------------------------------------------------------- UTF-8 */
size_t tok_utf8_valid_len(const unsigned char *s, size_t n) {
  if (!n) return 0;
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) need = 1;
  else if (c == 0xE0) { need = 2; lo = 0xA0; }
  else if (c == 0xED) { need = 2; hi = 0x9F; }
  else if (c >= 0xE1 && c <= 0xEF) need = 2;
  else if (c == 0xF0) { need = 3; lo = 0x90; }
  else if (c == 0xF4) { need = 3; hi = 0x8F; }
  else if (c >= 0xF1 && c <= 0xF3) need = 3;
  else return 0;
  if (n < need + 1) return 0;
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i <= need; i++)
    if (s[i] < 0x80 || s[i] > 0xBF) return 0;
  return need + 1;
}

size_t tok_utf8_check(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    size_t l = tok_utf8_valid_len(u + i, n - i);
    if (!l) return i;
    i += l;
  }
  return n;
}

int32_t tok_utf8_cp(const unsigned char *s, size_t len) {
  switch (len) {
    case 1: return s[0];
    case 2: return ((s[0] & 0x1F) << 6) | (s[1] & 0x3F);
    case 3: return ((s[0] & 0x0F) << 12) | ((s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    default: return ((s[0] & 0x07) << 18) | ((s[1] & 0x3F) << 12) | ((s[2] & 0x3F) << 6) | (s[3] & 0x3F);
  }
}

size_t tok_utf8_put(int32_t cp, char out[4]) {
  if (cp < 0x80) { out[0] = (char)cp; return 1; }
  if (cp < 0x800) { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12)); out[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | (cp >> 18)); out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Maximal-subpart replacement: an invalid sequence's longest valid prefix becomes one U+FFFD. */
xpi_status tok_utf8_lossy(tok_buf *out, const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0, run = 0;
  while (i < n) {
    size_t l = tok_utf8_valid_len(u + i, n - i);
    if (l) { i += l; continue; }
    XPI_TRY(tok_buf_put(out, s + run, i - run));
    /* length of the valid prefix of the broken sequence */
    unsigned char c = u[i];
    size_t need = 0, k = 1;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c == 0xE0) { need = 2; lo = 0xA0; }
    else if (c == 0xED) { need = 2; hi = 0x9F; }
    else if (c >= 0xE1 && c <= 0xEF) need = 2;
    else if (c == 0xF0) { need = 3; lo = 0x90; }
    else if (c == 0xF4) { need = 3; hi = 0x8F; }
    else if (c >= 0xF1 && c <= 0xF3) need = 3;
    if (need && i + 1 < n && u[i + 1] >= lo && u[i + 1] <= hi) {
      k = 2;
      while (k <= need && i + k < n && u[i + k] >= 0x80 && u[i + k] <= 0xBF) k++;
    }
    XPI_TRY(tok_buf_put(out, "\xEF\xBF\xBD", 3));
    i += k;
    run = i;
  }
  return tok_buf_put(out, s + run, n - run);
}

int tok_is_whitespace(int32_t c) {
  return (c >= 9 && c <= 13) || c == 32 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

size_t xpi_utf8_check(const char *s, size_t n) { return tok_utf8_check(s, n); }
