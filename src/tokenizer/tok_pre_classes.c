/* Pre-tokenizers defined by character classes: Whitespace (\w+|[^\w\s]+ with Rust regex's Unicode \w),
 * WhitespaceSplit, Punctuation, Digits, BertPreTokenizer, CharDelimiterSplit and UnicodeScripts (a split wherever
 * the script changes, sentencepiece-style: Hiragana, Katakana and U+30FC count as Han; a space belongs to no
 * script; Common and Inherited are scripts of their own). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

/* Rust regex's \w (Alphabetic, marks, decimal digits, connector punctuation, joiners) and \s (White_Space). */
#define W_CLASS "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}"
#define S_CLASS "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
static const char k_whitespace_regex[] = "[" W_CLASS "]+|[^" W_CLASS S_CLASS "]+";

/* The scripts of tokenizers' table (sentencepiece's, Unicode 9), most frequent first; the index + 1 of the
 * capture group that matches is the script. */
static const char *const k_scripts[] = {
    "Latin", "Common", "Han", "Inherited", "Cyrillic", "Greek", "Arabic", "Hangul", "Hiragana", "Katakana", "Hebrew",
    "Devanagari", "Thai", "Bengali", "Tamil", "Telugu", "Georgian", "Armenian", "Ethiopic", "Gujarati", "Gurmukhi",
    "Kannada", "Malayalam", "Sinhala", "Khmer", "Lao", "Myanmar", "Tibetan", "Mongolian", "Oriya", "Syriac", "Thaana",
    "Adlam", "Ahom", "AnatolianHieroglyphs", "Avestan", "Balinese", "Bamum", "BassaVah", "Batak", "Bhaiksuki",
    "Bopomofo", "Brahmi", "Braille", "Buginese", "Buhid", "CanadianAboriginal", "Carian", "CaucasianAlbanian",
    "Chakma", "Cham", "Cherokee", "Coptic", "Cuneiform", "Cypriot", "Deseret", "Duployan", "EgyptianHieroglyphs",
    "Elbasan", "Glagolitic", "Gothic", "Grantha", "Hanunoo", "Hatran", "ImperialAramaic", "InscriptionalPahlavi",
    "InscriptionalParthian", "Javanese", "Kaithi", "KayahLi", "Kharoshthi", "Khojki", "Khudawadi", "Lepcha", "Limbu",
    "LinearA", "LinearB", "Lisu", "Lycian", "Lydian", "Mahajani", "Mandaic", "Manichaean", "Marchen", "MeeteiMayek",
    "MendeKikakui", "MeroiticCursive", "MeroiticHieroglyphs", "Miao", "Modi", "Mro", "Multani", "Nabataean",
    "NewTaiLue", "Newa", "Nko", "Ogham", "OlChiki", "OldHungarian", "OldItalic", "OldNorthArabian", "OldPermic",
    "OldPersian", "OldSouthArabian", "OldTurkic", "Osage", "Osmanya", "PahawhHmong", "Palmyrene", "PauCinHau",
    "PhagsPa", "Phoenician", "PsalterPahlavi", "Rejang", "Runic", "Samaritan", "Saurashtra", "Sharada", "Shavian",
    "Siddham", "SignWriting", "SoraSompeng", "Sundanese", "SylotiNagri", "Tagalog", "Tagbanwa", "TaiLe", "TaiTham",
    "TaiViet", "Takri", "Tangut", "Tifinagh", "Tirhuta", "Ugaritic", "Vai", "WarangCiti", "Yi"};
#define N_SCRIPTS (sizeof k_scripts / sizeof *k_scripts)
enum { SCRIPT_ANY = -1, SCRIPT_HAN = 2, SCRIPT_HIRAGANA = 8, SCRIPT_KATAKANA = 9 };

static const struct { const char *name; int type; } k_types[] = {
    {"Whitespace", PRE_WHITESPACE}, {"WhitespaceSplit", PRE_WHITESPACE_SPLIT}, {"Punctuation", PRE_PUNCTUATION},
    {"Digits", PRE_DIGITS}, {"BertPreTokenizer", PRE_BERT}, {"CharDelimiterSplit", PRE_CHAR_DELIMITER},
    {"UnicodeScripts", PRE_UNICODE_SCRIPTS}};

int tok_pre_class_type(const char *t) {
  for (size_t i = 0; i < sizeof k_types / sizeof *k_types; i++)
    if (!strcmp(t, k_types[i].name)) return k_types[i].type;
  return 0;
}

static xpi_status scripts_regex(const char *what, tok_pattern *pat) {
  tok_buf b = {0};
  xpi_status st = tok_buf_puts(&b, "\\G(?:");
  for (size_t i = 0; !st && i < N_SCRIPTS; i++) {
    if (i) st = tok_buf_puts(&b, "|");
    if (!st) st = tok_buf_puts(&b, "(\\p{");
    if (!st) st = tok_buf_puts(&b, k_scripts[i]);
    if (!st) st = tok_buf_puts(&b, "})");
  }
  if (!st) st = tok_buf_puts(&b, ")");
  if (!st) {
    pat->is_regex = 1;
    st = tok_regex_compile(b.p, what, &pat->re);
  }
  tok_buf_free(&b);
  return st;
}

xpi_status tok_pre_class_parse(const cJSON *j, const char *what, tok_pretok *p) {
  p->type = tok_pre_class_type(cJSON_GetObjectItemCaseSensitive(j, "type")->valuestring);
  switch (p->type) {
    case PRE_WHITESPACE:
      p->pat.is_regex = 1;
      return tok_regex_compile(k_whitespace_regex, what, &p->pat.re);
    case PRE_UNICODE_SCRIPTS: return scripts_regex(what, &p->pat);
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

static int script_of(const tok_regex *re, pcre2_match_data *md, const char *s, size_t n, size_t i, int32_t cp) {
  if (cp == ' ') return SCRIPT_ANY;
  if (cp == 0x30FC) return SCRIPT_HAN;
  int rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, i, PCRE2_NO_UTF_CHECK, md, NULL);
  if (rc < 2) return SCRIPT_ANY; /* in no script of the table (unassigned, or a script newer than the table) */
  int sc = rc - 2;                /* rc = highest group set + 1 */
  return sc == SCRIPT_HIRAGANA || sc == SCRIPT_KATAKANA ? SCRIPT_HAN : sc;
}

static xpi_status scripts_piece(const tok_pretok *p, const char *s, size_t n, int at_start, int lead_deleted,
                                tok_pieces *out) {
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(p->pat.re.code, NULL);
  if (!md) return tok_oom();
  const unsigned char *u = (const unsigned char *)s;
  /* a piece starts at each character whose script differs from the last non-space one; leading spaces before
   * the first such character belong to no piece and are dropped, as tokenizers does */
  int last = SCRIPT_ANY - 1; /* none yet */
  size_t start = SIZE_MAX;
  xpi_status st = XPI_OK;
  for (size_t i = 0; !st && i < n;) {
    size_t l = tok_utf8_valid_len(u + i, n - i);
    if (!l) l = 1;
    int sc = script_of(&p->pat.re, md, s, n, i, tok_utf8_cp(u + i, l));
    if (sc != SCRIPT_ANY && last != sc) {
      if (start != SIZE_MAX) st = tok_pieces_add(out, s + start, i - start, at_start && start == 0 && !lead_deleted);
      start = i;
    }
    if (sc != SCRIPT_ANY) last = sc;
    i += l;
  }
  if (!st && start != SIZE_MAX)
    st = tok_pieces_add(out, s + start, n - start, at_start && start == 0 && !lead_deleted);
  pcre2_match_data_free(md);
  return st;
}

xpi_status tok_pre_class_piece(const tok_pretok *p, const char *s, size_t n, int at_start, int ld, tok_pieces *out) {
  switch (p->type) {
    case PRE_WHITESPACE: return tok_split_piece(&p->pat, NULL, NULL, SPLIT_REMOVED, 1, s, n, at_start, ld, out);
    case PRE_WHITESPACE_SPLIT: return tok_split_piece(NULL, is_ws, NULL, SPLIT_REMOVED, 0, s, n, at_start, ld, out);
    case PRE_PUNCTUATION: return tok_split_piece(NULL, is_punct, NULL, p->behavior, 0, s, n, at_start, ld, out);
    case PRE_DIGITS:
      return tok_split_piece(NULL, is_num, NULL, p->individual ? SPLIT_ISOLATED : SPLIT_CONTIGUOUS, 0, s, n, at_start,
                             ld, out);
    case PRE_CHAR_DELIMITER:
      return tok_split_piece(NULL, is_delim, &p->delim, SPLIT_REMOVED, 0, s, n, at_start, ld, out);
    case PRE_UNICODE_SCRIPTS: return scripts_piece(p, s, n, at_start, ld, out);
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
