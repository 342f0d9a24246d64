/* Encoding: split on added tokens (raw text, then normalized text), normalize, pre-tokenize, the model on each
 * pre-token, then the post-processor when add_special is asked, as tokenizers' encode(). */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

/* Longest added token starting at s[0..n), or -1 (index into t->added). */
static int32_t trie_longest(const tok_trie *tr, const char *s, size_t n, size_t *len) {
  int32_t node = 0, best = -1;
  for (size_t i = 0; i < n; i++) {
    unsigned char b = (unsigned char)s[i];
    int32_t c = tr->nodes[node].first_child;
    while (c >= 0 && tr->nodes[c].byte != b) c = tr->nodes[c].next_sibling;
    if (c < 0) break;
    node = c;
    if (tr->nodes[node].token >= 0) { best = tr->nodes[node].token; *len = i + 1; }
  }
  return best;
}

static int is_word_cp(int32_t cp) {
  if (cp == '_') return 1;
  utf8proc_category_t c = utf8proc_category(cp);
  return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) || (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO) ||
         c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC;
}

/* Character before offset i / at offset i. */
static int32_t cp_before(const char *s, size_t i) {
  const unsigned char *u = (const unsigned char *)s;
  size_t st = i - 1;
  while (st > 0 && (u[st] & 0xC0) == 0x80) st--;
  size_t l = tok_utf8_valid_len(u + st, i - st);
  return l ? tok_utf8_cp(u + st, l) : -1;
}
static int32_t cp_at(const char *s, size_t n, size_t i, size_t *l) {
  *l = tok_utf8_valid_len((const unsigned char *)s + i, n - i);
  return *l ? tok_utf8_cp((const unsigned char *)s + i, *l) : -1;
}

/* at_start: the text begins at original offset 0 of the input (see tok_span). */
typedef xpi_status (*text_fn)(const xpi_tokenizer *t, const char *s, size_t n, int at_start, tok_ids *out);

/* Splits s on the added tokens of trie tr (aho-corasick leftmost-longest semantics, then single_word,
 * lstrip, rstrip as tokenizers' AddedVocabulary::find_matches); token ids go to out, text between them to fn. */
static xpi_status split_added(const xpi_tokenizer *t, const tok_trie *tr, const char *s, size_t n, int at_start,
                              text_fn fn, tok_ids *out) {
  size_t start_off = 0, i = 0;
  while (tr->n && i < n) {
    unsigned char b = (unsigned char)s[i];
    size_t len = 0;
    int32_t k = (tr->first[b >> 3] & (1u << (b & 7))) ? trie_longest(tr, s + i, n - i, &len) : -1;
    if (k < 0) { i++; continue; }
    const tok_added *a = &t->added[k];
    size_t ms = i, me = i + len;
    i = me; /* matches never overlap, even a rejected one */
    if (a->single_word) {
      size_t l;
      int before = ms > 0 && is_word_cp(cp_before(s, ms));
      int after = me < n && is_word_cp(cp_at(s, n, me, &l));
      if (before || after) continue;
    }
    if (a->lstrip) {
      size_t ns = ms;
      while (ns > 0) {
        size_t st = ns - 1;
        while (st > 0 && ((unsigned char)s[st] & 0xC0) == 0x80) st--;
        size_t l;
        if (!tok_is_whitespace(cp_at(s, n, st, &l))) break;
        ns = st;
      }
      ms = ns > start_off ? ns : start_off;
    }
    if (a->rstrip) {
      size_t l;
      while (me < n && tok_is_whitespace(cp_at(s, n, me, &l))) me += l;
      i = me;
    }
    if (ms > start_off) XPI_TRY(fn(t, s + start_off, ms - start_off, at_start && start_off == 0, out));
    XPI_TRY(tok_ids_add(out, a->id));
    start_off = me;
  }
  if (start_off < n) XPI_TRY(fn(t, s + start_off, n - start_off, at_start && start_off == 0, out));
  return XPI_OK;
}

/* Normalized text without added tokens: pre-tokenize and run the model on each piece. */
static xpi_status encode_words(const xpi_tokenizer *t, const char *s, size_t n, int at_start, tok_ids *out) {
  tok_pieces p = {0};
  xpi_status st = tok_pieces_add(&p, s, n, at_start);
  if (!st && t->pretok) st = tok_pretok_apply(t->pretok, &p);
  if (t->model_type == MODEL_BPE) /* the hot path without the dispatch */
    for (size_t i = 0; !st && i < p.n; i++) st = tok_bpe_word(t, p.text.p + p.v[i].off, p.v[i].len, out);
  else
    for (size_t i = 0; !st && i < p.n; i++) st = tok_model_word(t, p.text.p + p.v[i].off, p.v[i].len, out);
  tok_pieces_free(&p);
  return st;
}

/* Raw text between non-normalized added tokens: normalize, then split on normalized added tokens. The pieces
 * tokenizers hands on are slices of the normalized text, whose original offset is that of their first
 * character: when the normalizer deleted the segment's first characters, even the first piece no longer
 * starts at offset 0. */
static xpi_status encode_segment(const xpi_tokenizer *t, const char *s, size_t n, int at_start, tok_ids *out) {
  if (!t->norm) return split_added(t, &t->trie_norm, s, n, at_start, encode_words, out);
  tok_buf nb = {0};
  int lead_deleted = 0;
  xpi_status st = tok_norm_apply(t->norm, s, n, &nb, &lead_deleted);
  if (!st) st = split_added(t, &t->trie_norm, nb.p, nb.len, at_start && !lead_deleted, encode_words, out);
  tok_buf_free(&nb);
  return st;
}

xpi_status xpi_tokenize(const xpi_tokenizer *tok, const char *text, size_t len, int add_special, int32_t *ids,
                        size_t cap, size_t *n_out) {
  if (!tok || !n_out || (len && !text))
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_tokenize: tok, n_out and text (when len > 0) must not be NULL");
  size_t bad = tok_utf8_check(text, len);
  if (bad != len)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_tokenize: text is not valid UTF-8 (byte 0x%02X at offset %zu)",
                   (unsigned char)text[bad], bad);
  tok_ids out = {0};
  xpi_status st = XPI_OK;
  if (add_special && tok->has_post)
    for (int i = 0; !st && i < tok->post_seq_pos; i++) st = tok_ids_add(&out, tok->post_single[i]);
  if (!st && len) st = split_added(tok, &tok->trie_raw, text, len, 1, encode_segment, &out);
  if (add_special && tok->has_post)
    for (size_t i = (size_t)tok->post_seq_pos; !st && i < tok->n_post_single; i++) st = tok_ids_add(&out, tok->post_single[i]);
  if (!st) {
    *n_out = out.n;
    if ((!ids && out.n) || cap < out.n)
      st = xpi_err(XPI_ERR_BUFFER_TOO_SMALL, "xpi_tokenize: %zu ids do not fit in a capacity of %zu", out.n, cap);
    else if (out.n)
      memcpy(ids, out.v, out.n * sizeof *ids);
  }
  free(out.v);
  return st;
}
