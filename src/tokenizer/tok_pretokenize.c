/* Pre-tokenizers of tokenizer.json: parsing (with JSON paths), the split engine every splitting pre-tokenizer
 * shares (tokenizers' NormalizedString::split: matches, then one of the five behaviors, optionally inverted),
 * Split and Sequence, and the dispatch to the families (tok_pre_bytelevel.c, tok_metaspace.c,
 * tok_pre_classes.c). Each turns a list of pieces into a finer list of pieces. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

int tok_split_behavior(const char *b) {
  if (!strcmp(b, "Removed")) return SPLIT_REMOVED;
  if (!strcmp(b, "Isolated")) return SPLIT_ISOLATED;
  if (!strcmp(b, "MergedWithPrevious")) return SPLIT_MERGED_PREV;
  if (!strcmp(b, "MergedWithNext")) return SPLIT_MERGED_NEXT;
  if (!strcmp(b, "Contiguous")) return SPLIT_CONTIGUOUS;
  return -1;
}

static xpi_status parse_type(const cJSON *j, const char *what, const char *t, tok_pretok *p) {
  if (!strcmp(t, "Sequence")) {
    p->type = PRE_SEQ;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "pretokenizers"), *e;
    if (!cJSON_IsArray(arr)) return xpi_err(XPI_ERR_FORMAT, "%s: Sequence \"pretokenizers\" must be an array", what);
    size_t k = (size_t)cJSON_GetArraySize(arr);
    if (!(p->kids = calloc(k ? k : 1, sizeof *p->kids))) return tok_oom();
    cJSON_ArrayForEach(e, arr) {
      char *kw = tok_path_child(what, "pretokenizers", (long)p->n_kids);
      if (!kw) return tok_oom();
      xpi_status st = tok_pretok_parse(e, kw, &p->kids[p->n_kids]);
      free(kw);
      if (st) return st; /* the child freed itself */
      p->n_kids++;
    }
    return XPI_OK;
  }
  if (!strcmp(t, "Split")) {
    p->type = PRE_SPLIT;
    const cJSON *beh = cJSON_GetObjectItemCaseSensitive(j, "behavior");
    if (!cJSON_IsString(beh)) return xpi_err(XPI_ERR_FORMAT, "%s: Split \"behavior\" must be a string", what);
    if ((p->behavior = tok_split_behavior(beh->valuestring)) < 0)
      return xpi_err(XPI_ERR_FORMAT, "%s: Split behavior \"%s\" is unknown", what, beh->valuestring);
    const cJSON *inv = cJSON_GetObjectItemCaseSensitive(j, "invert");
    if (inv && !cJSON_IsBool(inv)) return xpi_err(XPI_ERR_FORMAT, "%s: Split \"invert\" must be true or false", what);
    p->invert = cJSON_IsTrue(inv);
    return tok_pattern_parse(cJSON_GetObjectItemCaseSensitive(j, "pattern"), what, &p->pat);
  }
  if (!strcmp(t, "ByteLevel")) return tok_pre_bytelevel_parse(j, what, p);
  if (!strcmp(t, "Metaspace")) return tok_pre_metaspace_parse(j, what, p);
  if (tok_pre_class_type(t)) return tok_pre_class_parse(j, what, p);
  return xpi_err(XPI_ERR_UNSUPPORTED, "%s: type \"%s\" is not supported (supported pre-tokenizers: Split, ByteLevel, "
                 "Metaspace, Digits, Whitespace, WhitespaceSplit, Punctuation, BertPreTokenizer, CharDelimiterSplit, "
                 "UnicodeScripts, Sequence)", what, t);
}

xpi_status tok_pretok_parse(const cJSON *j, const char *what, tok_pretok *p) {
  memset(p, 0, sizeof *p);
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
  if (!cJSON_IsObject(j) || !cJSON_IsString(type))
    return xpi_err(XPI_ERR_FORMAT, "%s: a pre_tokenizer must be an object with a string \"type\"", what);
  xpi_status st = parse_type(j, what, type->valuestring, p);
  if (st) tok_pretok_free(p);
  return st;
}

void tok_pretok_free(tok_pretok *p) {
  if (!p) return;
  for (size_t i = 0; i < p->n_kids; i++) tok_pretok_free(&p->kids[i]);
  free(p->kids);
  tok_pattern_free(&p->pat);
  memset(p, 0, sizeof *p);
}

/* ---- the split engine */
typedef struct { size_t a, b; int match; } seg;
typedef struct { seg *v; size_t n, cap; size_t prev; } segs;

static xpi_status seg_add(segs *s, size_t a, size_t b, int match) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 32;
    seg *v = realloc(s->v, cap * sizeof *v);
    if (!v) return tok_oom();
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = (seg){a, b, match};
  return XPI_OK;
}

static xpi_status seg_cb(size_t a, size_t b, void *user) {
  segs *s = user;
  if (a > s->prev) XPI_TRY(seg_add(s, s->prev, a, 0));
  XPI_TRY(seg_add(s, a, b, 1));
  s->prev = b;
  return XPI_OK;
}

xpi_status tok_split_piece(const tok_pattern *pat, tok_cp_class cls, const void *arg, int behavior, int invert,
                           const char *s, size_t n, int at_start, int lead_deleted, tok_pieces *out) {
  segs g = {0};
  xpi_status st = XPI_OK;
  if (pat) {
    st = tok_pattern_each(pat, s, n, seg_cb, &g);
  } else { /* each character of the class is a match of its own */
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; !st && i < n;) {
      size_t l = tok_utf8_valid_len(u + i, n - i);
      if (!l) l = 1;
      if (cls(tok_utf8_cp(u + i, l), arg)) st = seg_cb(i, i + l, &g);
      i += l;
    }
  }
  if (!st && g.prev < n) st = seg_add(&g, g.prev, n, 0);
  if (st) { free(g.v); return st; }
  if (invert)
    for (size_t i = 0; i < g.n; i++) g.v[i].match = !g.v[i].match;
  /* merge according to the behavior; v[k].match then means "remove" */
  size_t m = 0;
  int prev_match = 0;
  if (behavior == SPLIT_MERGED_NEXT) {
    /* walk right to left, fold a match into the piece after it */
    seg *r = g.v;
    size_t w = g.n;
    for (size_t i = g.n; i-- > 0;) {
      seg cur = g.v[i];
      if (cur.match && !prev_match && w < g.n) r[w].a = cur.a;
      else r[--w] = (seg){cur.a, cur.b, 0};
      prev_match = cur.match;
    }
    memmove(r, r + w, (g.n - w) * sizeof *r);
    m = g.n - w;
  } else {
    for (size_t i = 0; i < g.n; i++) {
      seg cur = g.v[i];
      if (behavior == SPLIT_ISOLATED) g.v[m++] = (seg){cur.a, cur.b, 0};
      else if (behavior == SPLIT_REMOVED) g.v[m++] = cur;
      else if (behavior == SPLIT_CONTIGUOUS && cur.match == prev_match && m) g.v[m - 1].b = cur.b;
      else if (behavior == SPLIT_MERGED_PREV && cur.match && !prev_match && m) g.v[m - 1].b = cur.b;
      else g.v[m++] = (seg){cur.a, cur.b, 0};
      prev_match = cur.match;
    }
  }
  for (size_t i = 0; !st && i < m; i++)
    if (!g.v[i].match)
      st = tok_pieces_add(out, s + g.v[i].a, g.v[i].b - g.v[i].a, at_start && g.v[i].a == 0 && !lead_deleted);
  free(g.v);
  return st;
}

xpi_status tok_pretok_apply(const tok_pretok *p, tok_pieces *pieces) {
  if (p->type == PRE_SEQ) {
    for (size_t i = 0; i < p->n_kids; i++) XPI_TRY(tok_pretok_apply(&p->kids[i], pieces));
    return XPI_OK;
  }
  tok_pieces out = {0};
  out.lead_deleted = pieces->lead_deleted;
  xpi_status st = XPI_OK;
  int ld = pieces->lead_deleted;
  for (size_t i = 0; !st && i < pieces->n; i++) {
    const char *s = pieces->text.p + pieces->v[i].off;
    size_t n = pieces->v[i].len;
    int a0 = pieces->v[i].at_start;
    switch (p->type) {
      case PRE_SPLIT: st = tok_split_piece(&p->pat, NULL, NULL, p->behavior, p->invert, s, n, a0, ld, &out); break;
      case PRE_BYTELEVEL: st = tok_pre_bytelevel_piece(p, s, n, a0, &out); break;
      case PRE_METASPACE: st = tok_pre_metaspace_piece(p, s, n, a0, ld, &out); break;
      default: st = tok_pre_class_piece(p, s, n, a0, ld, &out); break;
    }
  }
  if (st) { tok_pieces_free(&out); return st; }
  tok_pieces_free(pieces);
  *pieces = out;
  return XPI_OK;
}
