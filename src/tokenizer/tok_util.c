/* Growable containers of the tokenizer: byte buffers, piece lists, id lists, string lists. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

static xpi_status oom(void) { return xpi_err(XPI_ERR_OUT_OF_MEMORY, "tokenizer: out of memory"); }

/* ---------------------------------------------------------------- buffers */
xpi_status tok_buf_put(tok_buf *b, const void *data, size_t n) {
  if (n > SIZE_MAX / 2 - b->len - 1) return oom();
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return oom();
    b->p = p;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->len, data, n);
  b->len += n;
  b->p[b->len] = 0;
  return XPI_OK;
}

xpi_status tok_buf_puts(tok_buf *b, const char *s) { return tok_buf_put(b, s, strlen(s)); }

void tok_buf_free(tok_buf *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}

/* ---------------------------------------------------------------- pieces, ids, string lists */
xpi_status tok_pieces_add(tok_pieces *p, const char *s, size_t n, int at_start) {
  if (!n) return XPI_OK; /* empty splits are dropped, as tokenizers does */
  if (p->n == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 16;
    tok_span *v = realloc(p->v, cap * sizeof *v);
    if (!v) return oom();
    p->v = v;
    p->cap = cap;
  }
  size_t off = p->text.len;
  XPI_TRY(tok_buf_put(&p->text, s, n));
  p->v[p->n++] = (tok_span){off, n, at_start};
  return XPI_OK;
}

void tok_pieces_free(tok_pieces *p) {
  tok_buf_free(&p->text);
  free(p->v);
  memset(p, 0, sizeof *p);
}

xpi_status tok_ids_add(tok_ids *ids, int32_t id) {
  if (ids->n == ids->cap) {
    size_t cap = ids->cap ? ids->cap * 2 : 64;
    int32_t *v = realloc(ids->v, cap * sizeof *v);
    if (!v) return oom();
    ids->v = v;
    ids->cap = cap;
  }
  ids->v[ids->n++] = id;
  return XPI_OK;
}

xpi_status tok_strs_add(tok_strs *s, const char *p, size_t n) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 16;
    tok_buf *v = realloc(s->v, cap * sizeof *v);
    if (!v) return oom();
    s->v = v;
    s->cap = cap;
  }
  tok_buf *b = &s->v[s->n++];
  memset(b, 0, sizeof *b);
  return tok_buf_put(b, p, n);
}

void tok_strs_free(tok_strs *s) {
  for (size_t i = 0; i < s->n; i++) tok_buf_free(&s->v[i]);
  free(s->v);
  memset(s, 0, sizeof *s);
}

char *tok_path_child(const char *what, const char *key, long i) {
  size_t n = strlen(what) + strlen(key) + 32;
  char *p = malloc(n);
  if (!p) return NULL;
  if (i >= 0) snprintf(p, n, "%s.%s[%ld]", what, key, i);
  else snprintf(p, n, "%s.%s", what, key);
  return p;
}

xpi_status tok_buf_replace(tok_buf *b, const char *from, const char *to) {
  size_t fl = strlen(from);
  if (!fl) { /* as Rust's str::replace: an empty pattern matches at every character boundary */
    tok_buf r = {0};
    xpi_status st = tok_buf_puts(&r, to);
    for (size_t i = 0; !st && i < b->len;) {
      size_t l = tok_utf8_valid_len((const unsigned char *)b->p + i, b->len - i);
      if (!l) l = 1;
      st = tok_buf_put(&r, b->p + i, l);
      if (!st) st = tok_buf_puts(&r, to);
      i += l;
    }
    if (st) { tok_buf_free(&r); return st; }
    tok_buf_free(b);
    *b = r;
    return XPI_OK;
  }
  if (!b->len || !memmem(b->p, b->len, from, fl)) return XPI_OK;
  tok_buf r = {0};
  size_t pos = 0;
  xpi_status st = tok_buf_put(&r, "", 0);
  while (!st && pos < b->len) {
    const char *hit = memmem(b->p + pos, b->len - pos, from, fl);
    size_t end = hit ? (size_t)(hit - b->p) : b->len;
    st = tok_buf_put(&r, b->p + pos, end - pos);
    if (!st && hit) st = tok_buf_puts(&r, to);
    pos = hit ? end + fl : b->len;
  }
  if (st) { tok_buf_free(&r); return st; }
  tok_buf_free(b);
  *b = r;
  return XPI_OK;
}
