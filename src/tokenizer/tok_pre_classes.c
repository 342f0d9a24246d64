/* Pre-tokenizers defined by character classes (tok_unicode.c): Whitespace (\w+|[^\w\s]+ with Rust regex's
 * Unicode \w), WhitespaceSplit, Punctuation, Digits, BertPreTokenizer, CharDelimiterSplit and UnicodeScripts (a
 * split wherever the script changes, with sentencepiece's script table: Hiragana, Katakana and U+30FC count as
 * Han; a space, or a character newer than the table, belongs to no script; Common and Inherited are scripts of
 * their own). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

enum { SCRIPT_ANY = -1 };

static const struct { const char *name; int type; } k_types[] = {
    {"Whitespace", PRE_WHITESPACE}, {"WhitespaceSplit", PRE_WHITESPACE_SPLIT}, {"Punctuation", PRE_PUNCTUATION},
    {"Digits", PRE_DIGITS}, {"BertPreTokenizer", PRE_BERT}, {"CharDelimiterSplit", PRE_CHAR_DELIMITER},
    {"UnicodeScripts", PRE_UNICODE_SCRIPTS}};

int tok_pre_class_type(const char *t) {
  for (size_t i = 0; i < sizeof k_types / sizeof *k_types; i++)
    if (!strcmp(t, k_types[i].name)) return k_types[i].type;
  return 0;
}

xpi_status tok_pre_class_parse(const cJSON *j, const char *what, tok_pretok *p) {
  p->type = tok_pre_class_type(cJSON_GetObjectItemCaseSensitive(j, "type")->valuestring);
  switch (p->type) {
    case PRE_PUNCTUATION: {
      const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "behavior");
      p->behavior = SPLIT_ISOLATED;
      if (b && !cJSON_IsNull(b) && (!cJSON_IsString(b) || (p->behavior = tok_split_behavior(b->valuestring)) < 0))
        return xpi_err(XPI_ERR_FORMAT, "%s: Punctuation \"behavior\" must be Removed, Isolated, MergedWithPrevious, "
                       "MergedWithNext or Contiguous", what);
      return XPI_OK;
    }
    case PRE_DIGITS: {
      const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "individual_digits");
      if (v && !cJSON_IsNull(v) && !cJSON_IsBool(v))
        return xpi_err(XPI_ERR_FORMAT, "%s: Digits \"individual_digits\" must be true or false", what);
      p->individual = cJSON_IsTrue(v);
      return XPI_OK;
    }
    case PRE_CHAR_DELIMITER: {
      const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "delimiter");
      size_t l = cJSON_IsString(d) ? strlen(d->valuestring) : 0;
      if (!l || tok_utf8_valid_len((const unsigned char *)d->valuestring, l) != l)
        return xpi_err(XPI_ERR_FORMAT, "%s: CharDelimiterSplit \"delimiter\" must be one character", what);
      p->delim = tok_utf8_cp((const unsigned char *)d->valuestring, l);
      return XPI_OK;
    }
    default: return XPI_OK;
  }
}

static int is_ws(int32_t cp, const void *arg) { (void)arg; return tok_is_whitespace(cp); }
static int is_punct(int32_t cp, const void *arg) { (void)arg; return tok_is_punct(cp); }
static int is_num(int32_t cp, const void *arg) { (void)arg; return tok_is_numeric(cp); }
static int is_delim(int32_t cp, const void *arg) { return cp == *(const int32_t *)arg; }

/* Whitespace: the matches of \\w+|[^\\w\\s]+ are kept, the rest removed: maximal runs of word characters and
 * maximal runs of characters that are neither word nor space. */
static xpi_status whitespace_piece(const char *s, size_t n, int at_start, int lead_deleted, tok_pieces *out) {
  const unsigned char *u = (const unsigned char *)s;
  size_t start = 0;
  int run = 0; /* 0 space, 1 word, 2 other */
  for (size_t i = 0; i <= n;) {
    int cls = 0;
    size_t l = 1;
    if (i < n) {
      l = tok_utf8_valid_len(u + i, n - i);
      if (!l) l = 1;
      int32_t cp = tok_utf8_cp(u + i, l);
      cls = tok_is_word(cp) ? 1 : tok_is_whitespace(cp) ? 0 : 2;
    }
    if (cls != run || i == n) {
      if (run) XPI_TRY(tok_pieces_add(out, s + start, i - start, at_start && start == 0 && !lead_deleted));
      start = i;
      run = cls;
    }
    i += l;
  }
  return XPI_OK;
}

static xpi_status scripts_piece(const char *s, size_t n, int at_start, int lead_deleted, tok_pieces *out) {
  const unsigned char *u = (const unsigned char *)s;
  /* a piece starts at each character whose script differs from the last non-space one; leading spaces before
   * the first such character belong to no piece and are dropped, as tokenizers does */
  int last = SCRIPT_ANY - 1; /* none yet */
  size_t start = SIZE_MAX;
  xpi_status st = XPI_OK;
  for (size_t i = 0; !st && i < n;) {
    size_t l = tok_utf8_valid_len(u + i, n - i);
    if (!l) l = 1;
    int sc = tok_script(tok_utf8_cp(u + i, l));
    if (sc != SCRIPT_ANY && last != sc) {
      if (start != SIZE_MAX) st = tok_pieces_add(out, s + start, i - start, at_start && start == 0 && !lead_deleted);
      start = i;
    }
    if (sc != SCRIPT_ANY) last = sc;
    i += l;
  }
  if (!st && start != SIZE_MAX)
    st = tok_pieces_add(out, s + start, n - start, at_start && start == 0 && !lead_deleted);
  return st;
}

xpi_status tok_pre_class_piece(const tok_pretok *p, const char *s, size_t n, int at_start, int ld, tok_pieces *out) {
  switch (p->type) {
    case PRE_WHITESPACE: return whitespace_piece(s, n, at_start, ld, out);
    case PRE_WHITESPACE_SPLIT: return tok_split_piece(NULL, is_ws, NULL, SPLIT_REMOVED, 0, s, n, at_start, ld, out);
    case PRE_PUNCTUATION: return tok_split_piece(NULL, is_punct, NULL, p->behavior, 0, s, n, at_start, ld, out);
    case PRE_DIGITS:
      return tok_split_piece(NULL, is_num, NULL, p->individual ? SPLIT_ISOLATED : SPLIT_CONTIGUOUS, 0, s, n, at_start,
                             ld, out);
    case PRE_CHAR_DELIMITER:
      return tok_split_piece(NULL, is_delim, &p->delim, SPLIT_REMOVED, 0, s, n, at_start, ld, out);
    case PRE_UNICODE_SCRIPTS: return scripts_piece(s, n, at_start, ld, out);
    case PRE_BERT: {
      tok_pieces mid = {0};
      xpi_status st = tok_split_piece(NULL, is_ws, NULL, SPLIT_REMOVED, 0, s, n, at_start, ld, &mid);
      for (size_t i = 0; !st && i < mid.n; i++)
        st = tok_split_piece(NULL, is_punct, NULL, SPLIT_ISOLATED, 0, mid.text.p + mid.v[i].off, mid.v[i].len,
                             mid.v[i].at_start, ld, out);
      tok_pieces_free(&mid);
      return st;
    }
  }
  return xpi_err(XPI_ERR_INTERNAL, "tokenizer: unknown pre-tokenizer %d", p->type);
}
