/* The BPE model: loading (vocab, merges in both forms, affixes, flags) and encoding one pre-token: characters
 * to ids (continuing_subword_prefix / end_of_word_suffix, byte_fallback, unk with fuse_unk), then merges applied
 * lowest rank first through a heap, as tokenizers' Word::merge_all: O(n log n) in the pre-token length. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

/* ------------------------------------------------------------------ loading */
static int get_flag(const cJSON *o, const char *key) { return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key)); }

static xpi_status merge_token(const xpi_tokenizer *t, size_t i, const char *s, size_t n, int32_t *id) {
  *id = tok_strmap_get(&t->vocab, s, n);
  if (*id < 0) return xpi_err(XPI_ERR_FORMAT, "%s: model.merges[%zu]: token \"%.*s\" is not in the vocabulary",
                              t->path, i, (int)n, s);
  return XPI_OK;
}

static xpi_status load_merges(xpi_tokenizer *t, const cJSON *model) {
  const char *path = t->path;
  const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
  if (!merges || cJSON_IsNull(merges)) return tok_pairmap_init(&t->merges, 16);
  if (!cJSON_IsArray(merges)) return xpi_err(XPI_ERR_FORMAT, "%s: model.merges must be an array", path);
  XPI_TRY(tok_pairmap_init(&t->merges, (size_t)cJSON_GetArraySize(merges)));
  tok_buf cat = {0};
  size_t i = 0;
  xpi_status st = XPI_OK;
  const cJSON *e;
  cJSON_ArrayForEach(e, merges) {
    const char *a, *b;
    size_t la, lb;
    if (cJSON_IsString(e)) { /* legacy "a b" */
      const char *sp = strchr(e->valuestring, ' ');
      if (!sp || strchr(sp + 1, ' ')) {
        st = xpi_err(XPI_ERR_FORMAT, "%s: model.merges[%zu] = \"%s\" is not two tokens separated by one space",
                     path, i, e->valuestring);
        break;
      }
      a = e->valuestring; la = (size_t)(sp - a);
      b = sp + 1; lb = strlen(b);
    } else if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 && cJSON_IsString(cJSON_GetArrayItem(e, 0)) &&
               cJSON_IsString(cJSON_GetArrayItem(e, 1))) {
      a = cJSON_GetArrayItem(e, 0)->valuestring; la = strlen(a);
      b = cJSON_GetArrayItem(e, 1)->valuestring; lb = strlen(b);
    } else {
      st = xpi_err(XPI_ERR_FORMAT, "%s: model.merges[%zu] must be \"a b\" or [\"a\", \"b\"]", path, i);
      break;
    }
    int32_t ia, ib, im;
    if ((st = merge_token(t, i, a, la, &ia)) || (st = merge_token(t, i, b, lb, &ib))) break;
    /* the merged token is a + b without b's continuing_subword_prefix, as tokenizers builds it */
    if (lb < t->prefix_len) {
      st = xpi_err(XPI_ERR_FORMAT, "%s: model.merges[%zu]: \"%s\" is shorter than continuing_subword_prefix", path,
                   i, b);
      break;
    }
    cat.len = 0;
    if ((st = tok_buf_put(&cat, a, la)) || (st = tok_buf_put(&cat, b + t->prefix_len, lb - t->prefix_len))) break;
    if ((st = merge_token(t, i, cat.p, cat.len, &im))) break;
    if ((st = tok_pairmap_put(&t->merges, ((uint64_t)(uint32_t)ia << 32) | (uint32_t)ib, (int32_t)i, im))) break;
    i++;
  }
  tok_buf_free(&cat);
  return st;
}

xpi_status tok_bpe_load(xpi_tokenizer *t, const cJSON *model) {
  const char *path = t->path;
  static const char *const bools[] = {"byte_fallback", "fuse_unk", "ignore_merges"};
  for (size_t i = 0; i < 3; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(model, bools[i]);
    if (v && !cJSON_IsNull(v) && !cJSON_IsBool(v))
      return xpi_err(XPI_ERR_FORMAT, "%s: model.%s must be true or false", path, bools[i]);
  }
  t->byte_fallback = get_flag(model, "byte_fallback");
  t->fuse_unk = get_flag(model, "fuse_unk");
  t->ignore_merges = get_flag(model, "ignore_merges");
  char what[4200];
  snprintf(what, sizeof what, "%s: model", path);
  XPI_TRY(tok_json_opt_string(model, "continuing_subword_prefix", what, &t->prefix));
  XPI_TRY(tok_json_opt_string(model, "end_of_word_suffix", what, &t->suffix));
  /* "" (as Qwen's files have) changes nothing: drop it so the per-character lookup stays on its fast path */
  if (t->prefix && !t->prefix[0]) { free(t->prefix); t->prefix = NULL; }
  if (t->suffix && !t->suffix[0]) { free(t->suffix); t->suffix = NULL; }
  t->prefix_len = t->prefix ? strlen(t->prefix) : 0;
  t->suffix_len = t->suffix ? strlen(t->suffix) : 0;
  const cJSON *drop = cJSON_GetObjectItemCaseSensitive(model, "dropout");
  if (drop && !cJSON_IsNull(drop) && !(cJSON_IsNumber(drop) && drop->valuedouble == 0))
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: model.dropout is not supported: BPE dropout skips merges at random, so "
                   "the ids would not be reproducible (must be null or 0)", path);
  XPI_TRY(tok_load_vocab_object(t, model));
  XPI_TRY(load_merges(t, model));
  XPI_TRY(tok_json_opt_string(model, "unk_token", what, &t->model_unk));
  if (t->model_unk) { /* tokenizers fails only when an unknown character needs it */
    t->unk_id = tok_strmap_get(&t->vocab, t->model_unk, strlen(t->model_unk));
    if (t->unk_id < 0) t->unk_id = -2;
  }
  return XPI_OK;
}

/* ------------------------------------------------------------------ encoding */
typedef struct { int32_t id, prev, next; size_t len; } sym;
typedef struct { int32_t rank, pos, new_id; } cand;

static int cand_less(cand x, cand y) { return x.rank < y.rank || (x.rank == y.rank && x.pos < y.pos); }

typedef struct { cand *v; size_t n, cap; } heap;

static xpi_status heap_push(heap *h, cand c) {
  if (h->n == h->cap) {
    size_t cap = h->cap ? h->cap * 2 : 64;
    cand *v = realloc(h->v, cap * sizeof *v);
    if (!v) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    h->v = v;
    h->cap = cap;
  }
  size_t i = h->n++;
  h->v[i] = c;
  while (i && cand_less(h->v[i], h->v[(i - 1) / 2])) {
    cand t = h->v[i]; h->v[i] = h->v[(i - 1) / 2]; h->v[(i - 1) / 2] = t;
    i = (i - 1) / 2;
  }
  return XPI_OK;
}

static cand heap_pop(heap *h) {
  cand top = h->v[0];
  h->v[0] = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->n && cand_less(h->v[l], h->v[m])) m = l;
    if (r < h->n && cand_less(h->v[r], h->v[m])) m = r;
    if (m == i) break;
    cand t = h->v[i]; h->v[i] = h->v[m]; h->v[m] = t;
    i = m;
  }
  return top;
}

static uint64_t pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }

typedef struct { sym *v; size_t n, cap; } syms;

static xpi_status sym_add(syms *s, int32_t id, size_t len) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 32;
    sym *v = realloc(s->v, cap * sizeof *v);
    if (!v) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n] = (sym){id, (int32_t)s->n - 1, (int32_t)s->n + 1, len};
  s->n++;
  return XPI_OK;
}

static xpi_status merge_all(const xpi_tokenizer *t, syms *w) {
  heap h = {0};
  xpi_status st = XPI_OK;
  int32_t rank, nid;
  for (size_t i = 0; !st && i + 1 < w->n; i++)
    if (tok_pairmap_get(&t->merges, pair_key(w->v[i].id, w->v[i + 1].id), &rank, &nid))
      st = heap_push(&h, (cand){rank, (int32_t)i, nid});
  while (!st && h.n) {
    cand top = heap_pop(&h);
    sym *cur = &w->v[top.pos];
    if (cur->len == 0 || cur->next < 0 || (size_t)cur->next >= w->n) continue;
    sym right = w->v[cur->next];
    if (!tok_pairmap_get(&t->merges, pair_key(cur->id, right.id), &rank, &nid) || nid != top.new_id) continue;
    int32_t right_pos = cur->next;
    cur->id = top.new_id;
    cur->len += right.len;
    cur->next = right.next;
    w->v[right_pos].len = 0;
    if (right.next >= 0 && (size_t)right.next < w->n) w->v[right.next].prev = top.pos;
    if (cur->prev >= 0 &&
        tok_pairmap_get(&t->merges, pair_key(w->v[cur->prev].id, cur->id), &rank, &nid))
      st = heap_push(&h, (cand){rank, cur->prev, nid});
    if (!st && cur->next >= 0 && (size_t)cur->next < w->n &&
        tok_pairmap_get(&t->merges, pair_key(cur->id, w->v[cur->next].id), &rank, &nid))
      st = heap_push(&h, (cand){rank, top.pos, nid});
  }
  free(h.v);
  return st;
}

static xpi_status unk_missing(const xpi_tokenizer *t) {
  return xpi_err(XPI_ERR_FORMAT, "%s: model.unk_token \"%s\" is not in the vocabulary (needed for a character "
                 "the vocabulary lacks)", t->path, t->model_unk ? t->model_unk : "");
}

/* Id of the character w[i, i + l) with the affixes its position gives it, or -1. */
static int32_t char_id(const xpi_tokenizer *t, const char *w, size_t i, size_t l, size_t n, tok_buf *tmp,
                       const char **s, size_t *sl, xpi_status *st) {
  int pre = t->prefix && i > 0, suf = t->suffix && i + l == n;
  *s = w + i;
  *sl = l;
  if (!pre && !suf) return tok_strmap_get(&t->vocab, w + i, l);
  tmp->len = 0;
  if ((pre && (*st = tok_buf_put(tmp, t->prefix, t->prefix_len))) || (*st = tok_buf_put(tmp, w + i, l)) ||
      (suf && (*st = tok_buf_put(tmp, t->suffix, t->suffix_len))))
    return -1;
  *s = tmp->p;
  *sl = tmp->len;
  return tok_strmap_get(&t->vocab, tmp->p, tmp->len);
}

/* A character without a vocabulary entry: its byte tokens (byte_fallback), else <unk> (fused or not). The
 * pending unk run goes in and out by value so that the callers' loops keep it in registers. */
typedef struct { int32_t unk; size_t unk_len; xpi_status st; } unk_run;

static unk_run missing_char(const xpi_tokenizer *t, syms *s, const unsigned char *cs, size_t cl, size_t l, unk_run r) {
  if (t->byte_fallback) { /* the bytes of the character with its affixes, as tokenizers does */
    int all = 1;
    for (size_t k = 0; k < cl; k++) all &= t->byte_ids[cs[k]] >= 0;
    if (all) {
      /* as tokenizers: a pending unk is not flushed before the byte tokens */
      for (size_t k = 0; !r.st && k < cl; k++) r.st = sym_add(s, t->byte_ids[cs[k]], 1);
      return r;
    }
  }
  if (t->unk_id == -2) {
    r.st = unk_missing(t);
  } else if (t->unk_id >= 0) {
    if (r.unk >= 0 && t->fuse_unk) {
      r.unk_len += l;
    } else {
      if (r.unk >= 0) r.st = sym_add(s, r.unk, r.unk_len);
      r.unk = t->unk_id;
      r.unk_len = l;
    }
  }
  return r;
}

/* The characters of a pre-token with continuing_subword_prefix / end_of_word_suffix. */
static xpi_status affix_syms(const xpi_tokenizer *t, const char *w, size_t n, syms *s, unk_run *r) {
  const unsigned char *u = (const unsigned char *)w;
  tok_buf tmp = {0};
  for (size_t i = 0; !r->st && i < n;) {
    size_t l = tok_utf8_valid_len(u + i, n - i);
    if (!l) l = 1;
    const char *cs;
    size_t cl;
    xpi_status st = XPI_OK;
    int32_t id = char_id(t, w, i, l, n, &tmp, &cs, &cl, &st);
    if ((r->st = st)) break;
    if (id >= 0) {
      if (r->unk >= 0) { r->st = sym_add(s, r->unk, r->unk_len); r->unk = -1; }
      if (!r->st) r->st = sym_add(s, id, l);
    } else {
      *r = missing_char(t, s, (const unsigned char *)cs, cl, l, *r);
    }
    i += l;
  }
  free(tmp.p);
  return r->st;
}

xpi_status tok_bpe_word(const xpi_tokenizer *t, const char *w, size_t n, tok_ids *out) {
  if (!n) return XPI_OK;
  if (t->ignore_merges) {
    int32_t id = tok_strmap_get(&t->vocab, w, n);
    if (id >= 0) return tok_ids_add(out, id);
  }
  syms s = {0};
  xpi_status st = XPI_OK;
  unk_run r = {-1, 0, XPI_OK}; /* pending unknown run (fuse_unk) */
  const unsigned char *u = (const unsigned char *)w;
  if (t->prefix || t->suffix) {
    st = affix_syms(t, w, n, &s, &r);
  } else { /* the hot path: each character looked up as it is */
    for (size_t i = 0; !st && i < n;) {
      size_t l = tok_utf8_valid_len(u + i, n - i);
      if (!l) l = 1; /* cannot happen: pieces are valid UTF-8 */
      int32_t id = tok_strmap_get(&t->vocab, w + i, l);
      if (id >= 0) {
        if (r.unk >= 0) { st = sym_add(&s, r.unk, r.unk_len); r.unk = -1; }
        if (!st) st = sym_add(&s, id, l);
      } else {
        r = missing_char(t, &s, u + i, l, l, r);
        st = r.st;
      }
      i += l;
    }
  }
  if (!st && r.unk >= 0) st = sym_add(&s, r.unk, r.unk_len);
  if (!st && s.n) s.v[s.n - 1].next = -1;
  if (!st) st = merge_all(t, &s);
  for (size_t i = 0; !st && i < s.n; i++)
    if (s.v[i].len) st = tok_ids_add(out, s.v[i].id);
  free(s.v);
  return st;
}
