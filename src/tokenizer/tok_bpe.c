/* The BPE model on one pre-token: characters to ids (byte_fallback / unk), then merges applied lowest rank
 * first through a heap, as tokenizers' Word::merge_all: O(n log n) in the pre-token length. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

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

xpi_status tok_bpe_word(const xpi_tokenizer *t, const char *w, size_t n, tok_ids *out) {
  if (t->ignore_merges) {
    int32_t id = tok_strmap_get(&t->vocab, w, n);
    if (id >= 0) return tok_ids_add(out, id);
  }
  syms s = {0};
  xpi_status st = XPI_OK;
  int32_t unk = -1; /* pending unknown run (fuse_unk) */
  size_t unk_len = 0;
  const unsigned char *u = (const unsigned char *)w;
  for (size_t i = 0; !st && i < n;) {
    size_t l = tok_utf8_valid_len(u + i, n - i);
    if (!l) l = 1; /* cannot happen: pieces are valid UTF-8 */
    int32_t id = tok_strmap_get(&t->vocab, w + i, l);
    if (id >= 0) {
      if (unk >= 0) { st = sym_add(&s, unk, unk_len); unk = -1; }
      if (!st) st = sym_add(&s, id, l);
    } else {
      int done = 0;
      if (t->byte_fallback) {
        int all = 1;
        for (size_t k = 0; k < l; k++) all &= t->byte_ids[u[i + k]] >= 0;
        if (all) {
          /* as tokenizers: a pending unk is not flushed before the byte tokens */
          for (size_t k = 0; !st && k < l; k++) st = sym_add(&s, t->byte_ids[u[i + k]], 1);
          done = 1;
        }
      }
      if (!done && t->unk_id >= 0) {
        if (unk >= 0 && t->fuse_unk) unk_len += l;
        else {
          if (unk >= 0) st = sym_add(&s, unk, unk_len);
          unk = t->unk_id;
          unk_len = l;
        }
      }
    }
    i += l;
  }
  if (!st && unk >= 0) st = sym_add(&s, unk, unk_len);
  if (!st && s.n) s.v[s.n - 1].next = -1;
  if (!st) st = merge_all(t, &s);
  for (size_t i = 0; !st && i < s.n; i++)
    if (s.v[i].len) st = tok_ids_add(out, s.v[i].id);
  free(s.v);
  return st;
}
