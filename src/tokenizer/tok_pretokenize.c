/* Pre-tokenizers of tokenizer.json: Split (regex or string, all five behaviors, invert), ByteLevel,
 * Metaspace, Sequence. Each turns a list of pieces into a finer list of pieces. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

/* GPT-2's pre-tokenization regex (ByteLevel with use_regex). */
static const char k_gpt2_regex[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* GPT-2 bytes_to_unicode: printable bytes stand for themselves, the other 68 map to U+0100.. in byte order. */
static int32_t byte_cp(unsigned char b) {
  if (b <= 32) return 256 + b;
  if (b >= 127 && b <= 160) return 289 + (b - 127);
  if (b == 173) return 323;
  return b;
}

size_t tok_bytelevel_char(unsigned char b, char out[4]) { return tok_utf8_put(byte_cp(b), out); }

int tok_bytelevel_byte(int32_t cp) {
  if (cp >= 256 && cp <= 288) return cp - 256;
  if (cp >= 289 && cp <= 322) return cp - 289 + 127;
  if (cp == 323) return 173;
  if ((cp >= 33 && cp <= 126) || (cp >= 161 && cp <= 172) || (cp >= 174 && cp <= 255)) return cp;
  return -1;
}

xpi_status tok_pretok_parse(const cJSON *j, const char *what, tok_pretok *p) {
  memset(p, 0, sizeof *p);
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
  if (!cJSON_IsObject(j) || !cJSON_IsString(type))
    return xpi_err(XPI_ERR_FORMAT, "%s: a pre_tokenizer must be an object with a string \"type\"", what);
  const char *t = type->valuestring;
  if (!strcmp(t, "Sequence")) {
    p->type = PRE_SEQ;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "pretokenizers");
    if (!cJSON_IsArray(arr)) return xpi_err(XPI_ERR_FORMAT, "%s: Sequence \"pretokenizers\" must be an array", what);
    size_t k = (size_t)cJSON_GetArraySize(arr);
    p->kids = calloc(k ? k : 1, sizeof *p->kids);
    if (!p->kids) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
      XPI_TRY(tok_pretok_parse(e, what, &p->kids[p->n_kids]));
      p->n_kids++;
    }
  } else if (!strcmp(t, "Split")) {
    p->type = PRE_SPLIT;
    const cJSON *beh = cJSON_GetObjectItemCaseSensitive(j, "behavior");
    if (!cJSON_IsString(beh)) return xpi_err(XPI_ERR_FORMAT, "%s: Split \"behavior\" must be a string", what);
    const char *b = beh->valuestring;
    if (!strcmp(b, "Removed")) p->behavior = SPLIT_REMOVED;
    else if (!strcmp(b, "Isolated")) p->behavior = SPLIT_ISOLATED;
    else if (!strcmp(b, "MergedWithPrevious")) p->behavior = SPLIT_MERGED_PREV;
    else if (!strcmp(b, "MergedWithNext")) p->behavior = SPLIT_MERGED_NEXT;
    else if (!strcmp(b, "Contiguous")) p->behavior = SPLIT_CONTIGUOUS;
    else return xpi_err(XPI_ERR_UNSUPPORTED, "%s: Split behavior \"%s\" is not supported", what, b);
    p->invert = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "invert"));
    return tok_pattern_parse(cJSON_GetObjectItemCaseSensitive(j, "pattern"), what, &p->pat);
  } else if (!strcmp(t, "ByteLevel")) {
    p->type = PRE_BYTELEVEL;
    const cJSON *aps = cJSON_GetObjectItemCaseSensitive(j, "add_prefix_space");
    const cJSON *ur = cJSON_GetObjectItemCaseSensitive(j, "use_regex");
    p->add_prefix_space = aps ? cJSON_IsTrue(aps) : 1;
    p->use_regex = ur ? cJSON_IsTrue(ur) : 1;
    if (p->use_regex) {
      p->pat.is_regex = 1;
      return tok_regex_compile(k_gpt2_regex, what, &p->pat.re);
    }
  } else if (!strcmp(t, "Metaspace")) {
    p->type = PRE_METASPACE;
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "replacement");
    const char *rs = cJSON_IsString(r) ? r->valuestring : "\xE2\x96\x81";
    size_t rl = strlen(rs);
    if (!rl || rl > 4 || tok_utf8_valid_len((const unsigned char *)rs, rl) != rl)
      return xpi_err(XPI_ERR_FORMAT, "%s: Metaspace \"replacement\" must be one character", what);
    memcpy(p->repl, rs, rl);
    p->repl_len = rl;
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(j, "prepend_scheme");
    const cJSON *aps = cJSON_GetObjectItemCaseSensitive(j, "add_prefix_space");
    p->prepend_scheme = 2;
    if (cJSON_IsString(ps)) {
      if (!strcmp(ps->valuestring, "always")) p->prepend_scheme = 2;
      else if (!strcmp(ps->valuestring, "first")) p->prepend_scheme = 1;
      else if (!strcmp(ps->valuestring, "never")) p->prepend_scheme = 0;
      else return xpi_err(XPI_ERR_FORMAT, "%s: Metaspace prepend_scheme \"%s\" unknown", what, ps->valuestring);
    } else if (aps && !cJSON_IsTrue(aps)) {
      p->prepend_scheme = 0;
    }
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(j, "split");
    p->split = sp ? cJSON_IsTrue(sp) : 1;
  } else {
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: pre_tokenizer type \"%s\" is not supported (supported: Split, "
                   "ByteLevel, Metaspace, Sequence)", what, t);
  }
  return XPI_OK;
}

void tok_pretok_free(tok_pretok *p) {
  if (!p) return;
  for (size_t i = 0; i < p->n_kids; i++) tok_pretok_free(&p->kids[i]);
  free(p->kids);
  tok_pattern_free(&p->pat);
  memset(p, 0, sizeof *p);
}

/* ---- splitting one piece by a pattern */
typedef struct { size_t a, b; int match; } seg;
typedef struct { seg *v; size_t n, cap; size_t prev; } segs;

static xpi_status seg_add(segs *s, size_t a, size_t b, int match) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 32;
    seg *v = realloc(s->v, cap * sizeof *v);
    if (!v) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
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

/* Appends the splits of s (as tokenizers' NormalizedString::split) to out. */
static xpi_status split_piece(const tok_pattern *pat, int behavior, int invert, const char *s, size_t n,
                              int at_start, tok_pieces *out) {
  segs g = {0};
  xpi_status st = tok_pattern_each(pat, s, n, seg_cb, &g);
  if (!st && g.prev < n) st = seg_add(&g, g.prev, n, 0);
  if (st) { free(g.v); return st; }
  if (invert)
    for (size_t i = 0; i < g.n; i++) g.v[i].match = !g.v[i].match;
  /* merge according to the behavior; r[k].match then means "remove" */
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
    if (!g.v[i].match) st = tok_pieces_add(out, s + g.v[i].a, g.v[i].b - g.v[i].a, at_start && g.v[i].a == 0);
  free(g.v);
  return st;
}

static xpi_status bytelevel_piece(const tok_pretok *p, const char *s, size_t n, int at_start, tok_pieces *out) {
  tok_buf pre = {0};
  xpi_status st = XPI_OK;
  if (p->add_prefix_space && (n == 0 || s[0] != ' ')) {
    st = tok_buf_put(&pre, " ", 1);
    if (!st) st = tok_buf_put(&pre, s, n);
    s = pre.p;
    n = pre.len;
  }
  tok_pieces parts = {0};
  if (!st) {
    if (p->use_regex) st = split_piece(&p->pat, SPLIT_ISOLATED, 0, s, n, at_start, &parts);
    else st = tok_pieces_add(&parts, s, n, at_start);
  }
  tok_buf mapped = {0};
  for (size_t i = 0; !st && i < parts.n; i++) {
    mapped.len = 0;
    const unsigned char *u = (const unsigned char *)parts.text.p + parts.v[i].off;
    for (size_t k = 0; !st && k < parts.v[i].len; k++) {
      char c[4];
      size_t l = tok_bytelevel_char(u[k], c);
      st = tok_buf_put(&mapped, c, l);
    }
    if (!st) st = tok_pieces_add(out, mapped.p, mapped.len, parts.v[i].at_start);
  }
  tok_buf_free(&mapped);
  tok_pieces_free(&parts);
  tok_buf_free(&pre);
  return st;
}

static xpi_status metaspace_piece(const tok_pretok *p, const char *s, size_t n, int at_start, tok_pieces *out) {
  tok_buf r = {0};
  xpi_status st = XPI_OK;
  int starts = n >= p->repl_len && !memcmp(s, p->repl, p->repl_len);
  int starts_space = n && s[0] == ' ';
  if (!starts && !starts_space && (p->prepend_scheme == 2 || (p->prepend_scheme == 1 && at_start)))
    st = tok_buf_put(&r, p->repl, p->repl_len);
  for (size_t i = 0; !st && i < n; i++)
    st = s[i] == ' ' ? tok_buf_put(&r, p->repl, p->repl_len) : tok_buf_put(&r, s + i, 1);
  if (!st && r.len) {
    if (p->split) {
      tok_pattern pat = {0};
      pat.literal = (char *)p->repl;
      pat.lit_len = p->repl_len;
      st = split_piece(&pat, SPLIT_MERGED_NEXT, 0, r.p, r.len, at_start, out);
    } else {
      st = tok_pieces_add(out, r.p, r.len, at_start);
    }
  }
  tok_buf_free(&r);
  return st;
}

xpi_status tok_pretok_apply(const tok_pretok *p, tok_pieces *pieces) {
  if (p->type == PRE_SEQ) {
    for (size_t i = 0; i < p->n_kids; i++) XPI_TRY(tok_pretok_apply(&p->kids[i], pieces));
    return XPI_OK;
  }
  tok_pieces out = {0};
  xpi_status st = XPI_OK;
  for (size_t i = 0; !st && i < pieces->n; i++) {
    const char *s = pieces->text.p + pieces->v[i].off;
    size_t n = pieces->v[i].len;
    int a0 = pieces->v[i].at_start;
    switch (p->type) {
      case PRE_SPLIT: st = split_piece(&p->pat, p->behavior, p->invert, s, n, a0, &out); break;
      case PRE_BYTELEVEL: st = bytelevel_piece(p, s, n, a0, &out); break;
      case PRE_METASPACE: st = metaspace_piece(p, s, n, a0, &out); break;
      default: st = xpi_err(XPI_ERR_INTERNAL, "tokenizer: unknown pre-tokenizer %d", p->type);
    }
  }
  if (st) { tok_pieces_free(&out); return st; }
  tok_pieces_free(pieces);
  *pieces = out;
  return XPI_OK;
}
