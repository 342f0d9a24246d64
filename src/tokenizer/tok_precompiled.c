/* The Precompiled normalizer: sentencepiece's precompiled charsmap, base64 in tokenizer.json. Its bytes are
 * [u32 trie size in bytes][trie: u32 units of a Darts double array][normalized strings, each NUL-terminated];
 * a trie leaf's value is the byte offset of a replacement string. As tokenizers (spm_precompiled) applies it:
 * each extended grapheme cluster shorter than 6 bytes is looked up whole; otherwise (or when that finds
 * nothing) each character is. A lookup takes the SHORTEST key that is a prefix of the chunk (sentencepiece's
 * own normalizer takes the longest; tokenizers keeps this for compatibility with its published outputs). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

struct tok_charsmap {
  uint32_t *units; size_t n_units;
  char *norm; size_t norm_len;
};

static int b64_val(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

/* Standard base64 with padding; 0 on a malformed string. */
static int b64_decode(const char *s, unsigned char **out, size_t *n_out) {
  size_t n = strlen(s);
  if (n % 4) return 0;
  unsigned char *o = malloc(n / 4 * 3 + 1);
  if (!o) return -1;
  size_t k = 0;
  for (size_t i = 0; i < n; i += 4) {
    int v[4], pad = 0;
    for (int j = 0; j < 4; j++) {
      if (s[i + j] == '=' && i + 4 == n && j >= 2) { v[j] = 0; pad++; continue; }
      if (pad || (v[j] = b64_val((unsigned char)s[i + j])) < 0) { free(o); return 0; }
    }
    uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
    o[k++] = (unsigned char)(w >> 16);
    if (pad < 2) o[k++] = (unsigned char)(w >> 8);
    if (pad < 1) o[k++] = (unsigned char)w;
  }
  *out = o;
  *n_out = k;
  return 1;
}

void tok_charsmap_free(tok_charsmap *m) {
  if (!m) return;
  free(m->units);
  free(m->norm);
  free(m);
}

xpi_status tok_charsmap_parse(const cJSON *j, const char *what, tok_charsmap **out) {
  *out = NULL;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "precompiled_charsmap");
  if (!cJSON_IsString(v))
    return xpi_err(XPI_ERR_FORMAT, "%s: Precompiled \"precompiled_charsmap\" must be a base64 string", what);
  unsigned char *bytes = NULL;
  size_t n = 0;
  int r = b64_decode(v->valuestring, &bytes, &n);
  if (r < 0) return tok_oom();
  if (!r) return xpi_err(XPI_ERR_FORMAT, "%s: Precompiled \"precompiled_charsmap\" is not valid base64", what);
  uint32_t trie_bytes = n >= 4 ? (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 |
                                     (uint32_t)bytes[3] << 24 : 0;
  size_t n_units = trie_bytes / 4;
  if (n < 4 || n_units == 0 || n_units > (n - 4) / 4) {
    free(bytes);
    return xpi_err(XPI_ERR_FORMAT, "%s: Precompiled charsmap: %zu bytes cannot hold a trie of %u bytes", what, n,
                   trie_bytes);
  }
  tok_charsmap *m = calloc(1, sizeof *m);
  size_t norm_off = 4 + n_units * 4;
  if (m) {
    m->n_units = n_units;
    m->norm_len = n - norm_off;
    m->units = malloc(n_units * sizeof *m->units);
    m->norm = malloc(m->norm_len + 1);
  }
  if (!m || !m->units || !m->norm) {
    free(bytes);
    tok_charsmap_free(m);
    return tok_oom();
  }
  for (size_t i = 0; i < n_units; i++) {
    const unsigned char *p = bytes + 4 + 4 * i;
    m->units[i] = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  }
  memcpy(m->norm, bytes + norm_off, m->norm_len);
  m->norm[m->norm_len] = 0;
  free(bytes);
  if (tok_utf8_check(m->norm, m->norm_len) != m->norm_len) {
    tok_charsmap_free(m);
    return xpi_err(XPI_ERR_FORMAT, "%s: Precompiled charsmap: the normalized strings are not valid UTF-8", what);
  }
  *out = m;
  return XPI_OK;
}

/* Replacement of the shortest key that prefixes s[0, n), or NULL. A unit or offset outside the arrays ends the
 * search (the Rust crate would panic there; only a corrupt charsmap has them). */
static const char *lookup(const tok_charsmap *m, const unsigned char *s, size_t n, size_t *rlen) {
#define OFFSET(u) (((size_t)(u) >> 10) << (((u) & (1u << 9)) >> 6))
  size_t pos = OFFSET(m->units[0]);
  for (size_t i = 0; i < n && s[i]; i++) {
    pos ^= s[i];
    if (pos >= m->n_units) return NULL;
    uint32_t unit = m->units[pos];
    if ((unit & ((1u << 31) | 0xFFu)) != s[i]) return NULL;
    pos ^= OFFSET(unit);
    if ((unit >> 8) & 1) {
      if (pos >= m->n_units) return NULL;
      size_t at = m->units[pos] & ((1u << 31) - 1), end = at;
      if (at > m->norm_len) return NULL;
      while (end < m->norm_len && m->norm[end]) end++;
      /* a string that starts inside a character would make the Rust slice panic: treat as no mapping */
      if (at < m->norm_len && ((unsigned char)m->norm[at] & 0xC0) == 0x80) return NULL;
      *rlen = end - at;
      return m->norm + at;
    }
  }
  return NULL;
#undef OFFSET
}

xpi_status tok_charsmap_apply(const tok_charsmap *m, const char *s, size_t len, tok_buf *out, int *lead) {
  XPI_TRY(tok_buf_put(out, "", 0));
  const unsigned char *u = (const unsigned char *)s;
  int32_t state = 0;
  size_t g = 0; /* start of the current grapheme */
  int produced = 0;
  while (g < len) {
    /* the grapheme [g, e) */
    size_t l = tok_utf8_valid_len(u + g, len - g), e = g + (l ? l : 1);
    int32_t prev = tok_utf8_cp(u + g, l ? l : 1); /* state carries over: after a break it holds prev's class */
    while (e < len) {
      size_t l2 = tok_utf8_valid_len(u + e, len - e);
      int32_t cp = tok_utf8_cp(u + e, l2 ? l2 : 1);
      if (utf8proc_grapheme_break_stateful(prev, cp, &state)) break;
      prev = cp;
      e += l2 ? l2 : 1;
    }
    size_t rl;
    const char *r = e - g < 6 ? lookup(m, u + g, e - g, &rl) : NULL;
    if (r) {
      if (!rl && !produced && lead) *lead = 1;
      produced |= rl > 0;
      XPI_TRY(tok_buf_put(out, r, rl));
    } else {
      for (size_t c = g; c < e;) {
        size_t cl = tok_utf8_valid_len(u + c, e - c);
        if (!cl) cl = 1;
        r = lookup(m, u + c, cl, &rl);
        if (!r) { r = s + c; rl = cl; }
        if (!rl && !produced && lead) *lead = 1;
        produced |= rl > 0;
        XPI_TRY(tok_buf_put(out, r, rl));
        c += cl;
      }
    }
    g = e;
  }
  return XPI_OK;
}
