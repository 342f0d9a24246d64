/* The Unigram model (sentencepiece): vocabulary [[piece, score], ...] with ids by position, a byte trie for the
 * common-prefix search, and the best segmentation of a pre-token by Viterbi over byte positions, exactly as
 * tokenizers' Unigram::encode_optimized: a candidate replaces the best path ending at a position only when its
 * score is strictly higher (ties keep the path found first, i.e. the one whose last piece starts earliest); a
 * character with no single-character piece gets <unk> at min_score - 10; consecutive <unk> pieces are fused;
 * a fused unknown string then becomes byte tokens <0xNN> when byte_fallback is on and all exist, else <unk>. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

#define UNK_PENALTY 10.0

/* ---------------------------------------------------------------- trie */
typedef struct { int32_t first_child, next_sibling, token; unsigned char byte; } bnode;
typedef struct { bnode *v; size_t n, cap; } bnodes;

static xpi_status bnode_new(bnodes *b, unsigned char byte, int32_t *out) {
  if (b->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 1024;
    bnode *v = realloc(b->v, cap * sizeof *v);
    if (!v) return tok_oom();
    b->v = v;
    b->cap = cap;
  }
  b->v[b->n] = (bnode){-1, -1, -1, byte};
  *out = (int32_t)b->n++;
  return XPI_OK;
}

static xpi_status bnode_insert(bnodes *b, const char *s, size_t n, int32_t token) {
  int32_t node = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    int32_t k = b->v[node].first_child;
    while (k >= 0 && b->v[k].byte != c) k = b->v[k].next_sibling;
    if (k < 0) {
      XPI_TRY(bnode_new(b, c, &k));
      b->v[k].next_sibling = b->v[node].first_child;
      b->v[node].first_child = k;
    }
    node = k;
  }
  b->v[node].token = token;
  return XPI_OK;
}

static int cmp_edge(const void *x, const void *y) {
  const int32_t *a = x, *b = y; /* pairs (byte, node) */
  return a[0] - b[0];
}

/* Compacts the linked trie into sorted edge ranges (binary search per byte at encode time). */
static xpi_status ptrie_build(tok_ptrie *p, const bnodes *b) {
  size_t n = b->n;
  p->n_nodes = n;
  p->first = malloc(n * sizeof *p->first);
  p->n_children = calloc(n, sizeof *p->n_children);
  p->token = malloc(n * sizeof *p->token);
  p->edge_byte = malloc(n ? n : 1);
  p->edge_node = malloc((n ? n : 1) * sizeof *p->edge_node);
  int32_t *pairs = malloc(2 * 256 * sizeof *pairs);
  if (!p->first || !p->n_children || !p->token || !p->edge_byte || !p->edge_node || !pairs) {
    free(pairs);
    return tok_oom();
  }
  size_t e = 0;
  for (size_t i = 0; i < n; i++) {
    p->token[i] = b->v[i].token;
    p->first[i] = (int32_t)e;
    int k = 0;
    for (int32_t c = b->v[i].first_child; c >= 0; c = b->v[c].next_sibling) {
      pairs[2 * k] = b->v[c].byte;
      pairs[2 * k + 1] = c;
      k++;
    }
    qsort(pairs, (size_t)k, 2 * sizeof *pairs, cmp_edge);
    for (int j = 0; j < k; j++) {
      p->edge_byte[e] = (unsigned char)pairs[2 * j];
      p->edge_node[e] = pairs[2 * j + 1];
      e++;
    }
    p->n_children[i] = k;
  }
  free(pairs);
  return XPI_OK;
}

void tok_ptrie_free(tok_ptrie *p) {
  free(p->first); free(p->n_children); free(p->token); free(p->edge_byte); free(p->edge_node);
  memset(p, 0, sizeof *p);
}

static int32_t ptrie_child(const tok_ptrie *p, int32_t node, unsigned char c) {
  int32_t lo = p->first[node], hi = lo + p->n_children[node];
  while (lo < hi) {
    int32_t mid = (lo + hi) / 2;
    if (p->edge_byte[mid] < c) lo = mid + 1;
    else hi = mid;
  }
  return lo < p->first[node] + p->n_children[node] && p->edge_byte[lo] == c ? p->edge_node[lo] : -1;
}

/* ---------------------------------------------------------------- loading */
xpi_status tok_unigram_load(xpi_tokenizer *t, const cJSON *model) {
  const char *path = t->path;
  const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
  if (!cJSON_IsArray(vocab)) return xpi_err(XPI_ERR_FORMAT, "%s: model.vocab must be an array of [piece, score]", path);
  size_t n = (size_t)cJSON_GetArraySize(vocab), bytes = 0;
  if (n >= TOK_MAX_ID) return xpi_err(XPI_ERR_FORMAT, "%s: model.vocab has %zu pieces (at most %d)", path, n, TOK_MAX_ID - 1);
  const cJSON *e;
  size_t i = 0;
  cJSON_ArrayForEach(e, vocab) {
    const cJSON *piece = cJSON_GetArrayItem(e, 0), *score = cJSON_GetArrayItem(e, 1);
    if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsString(piece) || !cJSON_IsNumber(score))
      return xpi_err(XPI_ERR_FORMAT, "%s: model.vocab[%zu] must be [piece (string), score (number)]", path, i);
    bytes += strlen(piece->valuestring) + 1;
    i++;
  }
  const cJSON *bf = cJSON_GetObjectItemCaseSensitive(model, "byte_fallback");
  if (bf && !cJSON_IsNull(bf) && !cJSON_IsBool(bf))
    return xpi_err(XPI_ERR_FORMAT, "%s: model.byte_fallback must be true or false", path);
  t->byte_fallback = cJSON_IsTrue(bf);
  t->fuse_unk = 1;
  const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_id");
  if (unk && !cJSON_IsNull(unk)) {
    int32_t id;
    if (!tok_json_id(unk, &id) || (size_t)id >= n)
      return xpi_err(XPI_ERR_FORMAT, "%s: model.unk_id must be an id of the vocabulary (0..%zu) or null", path,
                     n ? n - 1 : 0);
    t->unk_id = id;
  }
  t->vocab_arena = malloc(bytes ? bytes : 1);
  t->scores = malloc((n ? n : 1) * sizeof *t->scores);
  if (!t->vocab_arena || !t->scores) return tok_oom();
  XPI_TRY(tok_strmap_init(&t->vocab, n));
  bnodes b = {0};
  int32_t root;
  xpi_status st = bnode_new(&b, 0, &root);
  char *p = t->vocab_arena;
  t->min_score = n ? INFINITY : 0;
  i = 0;
  cJSON_ArrayForEach(e, vocab) {
    if (st) break;
    const char *s = cJSON_GetArrayItem(e, 0)->valuestring;
    size_t l = strlen(s);
    memcpy(p, s, l + 1);
    double sc = cJSON_GetArrayItem(e, 1)->valuedouble;
    t->scores[i] = sc;
    if (sc < t->min_score) t->min_score = sc;
    /* a repeated piece maps to its last id, as tokenizers' token_to_ids */
    st = tok_strmap_put(&t->vocab, p, l, (int32_t)i, NULL);
    if (!st && l) st = bnode_insert(&b, p, l, (int32_t)i);
    p += l + 1;
    i++;
  }
  t->n_ids = t->n_pieces = (int32_t)n;
  if (!st) st = ptrie_build(&t->ptrie, &b);
  free(b.v);
  return st;
}

/* The id the trie gives a piece is the vocabulary's (last id of a repeated piece), not the trie's. */
static int32_t piece_id(const xpi_tokenizer *t, const char *s, size_t n) { return tok_strmap_get(&t->vocab, s, n); }

/* ---------------------------------------------------------------- encoding */
typedef struct { double score; int32_t start, id; } best;

static xpi_status emit_piece(const xpi_tokenizer *t, const char *s, size_t n, tok_ids *out) {
  int32_t id = piece_id(t, s, n);
  if (id >= 0) return tok_ids_add(out, id);
  if (t->byte_fallback) {
    int all = 1;
    for (size_t k = 0; k < n; k++) all &= t->byte_ids[(unsigned char)s[k]] >= 0;
    if (all) {
      for (size_t k = 0; k < n; k++) XPI_TRY(tok_ids_add(out, t->byte_ids[(unsigned char)s[k]]));
      return XPI_OK;
    }
  }
  if (t->unk_id < 0) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "tokenizer: the Unigram model has no unk_id for \"%.*s\"",
                                    (int)n, s);
  return tok_ids_add(out, t->unk_id);
}

xpi_status tok_unigram_word(const xpi_tokenizer *t, const char *w, size_t n, tok_ids *out) {
  if (!n) return XPI_OK;
  best *bp = malloc((n + 1) * sizeof *bp);
  int32_t *ends = NULL;
  if (!bp) return tok_oom();
  for (size_t i = 0; i <= n; i++) bp[i] = (best){0, -1, -1};
  const unsigned char *u = (const unsigned char *)w;
  const tok_ptrie *tr = &t->ptrie;
  double unk_score = t->min_score - UNK_PENALTY;
  xpi_status st = XPI_OK;
  for (size_t i = 0; i < n;) {
    size_t ml = tok_utf8_valid_len(u + i, n - i);
    if (!ml) ml = 1;
    double here = bp[i].score;
    int single = 0;
    int32_t node = 0;
    for (size_t k = i; k < n && node >= 0;) {
      node = ptrie_child(tr, node, u[k]);
      k++;
      if (node < 0) break;
      if (tr->token[node] < 0) continue;
      int32_t id = piece_id(t, w + i, k - i);
      double cand = t->scores[id] + here;
      if (bp[k].start < 0 || cand > bp[k].score) bp[k] = (best){cand, (int32_t)i, id};
      if (k - i == ml) single = 1;
    }
    if (!single) {
      if (t->unk_id < 0) {
        st = xpi_err(XPI_ERR_INVALID_ARGUMENT, "tokenizer: the Unigram model has no piece for \"%.*s\" and no unk_id",
                     (int)ml, w + i);
        break;
      }
      double cand = unk_score + here;
      if (bp[i + ml].start < 0 || cand > bp[i + ml].score) bp[i + ml] = (best){cand, (int32_t)i, t->unk_id};
    }
    i += ml;
  }
  /* walk back, fusing consecutive <unk> pieces */
  size_t n_ends = 0;
  if (!st && !(ends = malloc((n + 1) * sizeof *ends))) st = tok_oom();
  for (size_t e = n; !st && e > 0;) {
    ends[n_ends++] = (int32_t)e;
    e = (size_t)bp[e].start;
  }
  for (size_t k = n_ends; !st && k-- > 0;) {
    size_t e = (size_t)ends[k], s = (size_t)bp[e].start;
    if (bp[e].id == t->unk_id && t->unk_id >= 0) {
      while (k > 0 && bp[ends[k - 1]].id == t->unk_id) e = (size_t)ends[--k];
    }
    st = emit_piece(t, w + s, e - s, out);
  }
  free(ends);
  free(bp);
  return st;
}
