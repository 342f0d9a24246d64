/* The engine's memory: an arena per parse and per render (freed at once, so error paths that longjmp out leak
 * nothing), with a ceiling on the total, and malloc'd growable buffers for output and string building. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jj_internal.h"

void jj_throw(jj_err *e, int status, uint32_t line, uint32_t col, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  e->status = status;
  e->line = line;
  e->col = col;
  longjmp(e->jb, 1);
}

#define CHUNK 65536

void *jj_alloc(jj_arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (n == 0) n = 16;
  jj_chunk *h = a->head;
  if (!h || h->cap - h->used < n) {
    size_t cap = n > CHUNK / 2 ? n : CHUNK;
    if (cap > SIZE_MAX - sizeof(jj_chunk) - 16 || a->total + cap > a->limit) {
      a->err->limit = 1;
      jj_throw(a->err, XPI_ERR_INVALID_ARGUMENT, 0, 0, "the template needs more than %zu MiB of memory",
               a->limit >> 20);
    }
    jj_chunk *c = malloc(sizeof(jj_chunk) + 16 + cap);
    if (!c) jj_throw(a->err, XPI_ERR_OUT_OF_MEMORY, 0, 0, "out of memory");
    a->total += cap;
    c->cap = cap;
    c->used = 0;
    if (h && n > CHUNK / 2) { /* a big block goes behind the current chunk, which keeps its free space */
      c->next = h->next;
      h->next = c;
      c->used = n;
      return (char *)c + ((sizeof(jj_chunk) + 15) & ~(size_t)15);
    }
    c->next = h;
    a->head = h = c;
  }
  void *p = (char *)h + ((sizeof(jj_chunk) + 15) & ~(size_t)15) + h->used;
  h->used += n;
  return p;
}

void *jj_zalloc(jj_arena *a, size_t n) {
  void *p = jj_alloc(a, n);
  memset(p, 0, n);
  return p;
}

void *jj_alloc_array(jj_arena *a, size_t n, size_t size) {
  if (size && n > SIZE_MAX / size / 2) {
    a->err->limit = 1;
    jj_throw(a->err, XPI_ERR_INVALID_ARGUMENT, 0, 0, "the template needs more than %zu MiB of memory",
             a->limit >> 20);
  }
  return jj_alloc(a, n * size);
}

char *jj_strndup(jj_arena *a, const char *s, size_t n) {
  char *p = jj_alloc(a, n + 1);
  if (n) memcpy(p, s, n);
  p[n] = 0;
  return p;
}

void jj_arena_free(jj_arena *a) {
  for (jj_chunk *c = a->head, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  a->head = NULL;
  a->total = 0;
}

/* ---------------------------------------------------------------- buffers */
static void buf_grow(jj_buf *b, size_t add) {
  if (add > b->limit || b->len > b->limit - add) {
    b->err->limit = 1;
    jj_throw(b->err, XPI_ERR_INVALID_ARGUMENT, 0, 0, "the template builds text longer than %zu MiB (the output limit)",
             b->limit >> 20);
  }
  size_t need = b->len + add + 1;
  if (need <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  char *p = realloc(b->p, cap);
  if (!p) jj_throw(b->err, XPI_ERR_OUT_OF_MEMORY, 0, 0, "out of memory");
  b->p = p;
  b->cap = cap;
}

void jj_buf_put(jj_buf *b, const char *s, size_t n) {
  if (!n) return;
  buf_grow(b, n);
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
}

void jj_buf_putc(jj_buf *b, char c) {
  buf_grow(b, 1);
  b->p[b->len++] = c;
  b->p[b->len] = 0;
}

void jj_buf_puts(jj_buf *b, const char *s) { jj_buf_put(b, s, strlen(s)); }

void jj_buf_printf(jj_buf *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0) jj_buf_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

void jj_buf_cp(jj_buf *b, uint32_t cp) {
  char t[4];
  jj_buf_put(b, t, jj_u8_enc(cp, t));
}
