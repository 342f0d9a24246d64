/* Small building blocks of the tokenizer: byte buffers, UTF-8, hash maps, piece lists. */
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

/* ---------------------------------------------------------------- UTF-8 */
size_t tok_utf8_valid_len(const unsigned char *s, size_t n) {
  if (!n) return 0;
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) need = 1;
  else if (c == 0xE0) { need = 2; lo = 0xA0; }
  else if (c == 0xED) { need = 2; hi = 0x9F; }
  else if (c >= 0xE1 && c <= 0xEF) need = 2;
  else if (c == 0xF0) { need = 3; lo = 0x90; }
  else if (c == 0xF4) { need = 3; hi = 0x8F; }
  else if (c >= 0xF1 && c <= 0xF3) need = 3;
  else return 0;
  if (n < need + 1) return 0;
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i <= need; i++)
    if (s[i] < 0x80 || s[i] > 0xBF) return 0;
  return need + 1;
}

size_t tok_utf8_check(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    size_t l = tok_utf8_valid_len(u + i, n - i);
    if (!l) return i;
    i += l;
  }
  return n;
}

int32_t tok_utf8_cp(const unsigned char *s, size_t len) {
  switch (len) {
    case 1: return s[0];
    case 2: return ((s[0] & 0x1F) << 6) | (s[1] & 0x3F);
    case 3: return ((s[0] & 0x0F) << 12) | ((s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    default: return ((s[0] & 0x07) << 18) | ((s[1] & 0x3F) << 12) | ((s[2] & 0x3F) << 6) | (s[3] & 0x3F);
  }
}

size_t tok_utf8_put(int32_t cp, char out[4]) {
  if (cp < 0x80) { out[0] = (char)cp; return 1; }
  if (cp < 0x800) { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12)); out[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | (cp >> 18)); out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Maximal-subpart replacement: an invalid sequence's longest valid prefix becomes one U+FFFD. */
xpi_status tok_utf8_lossy(tok_buf *out, const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0, run = 0;
  while (i < n) {
    size_t l = tok_utf8_valid_len(u + i, n - i);
    if (l) { i += l; continue; }
    XPI_TRY(tok_buf_put(out, s + run, i - run));
    /* length of the valid prefix of the broken sequence */
    unsigned char c = u[i];
    size_t need = 0, k = 1;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c == 0xE0) { need = 2; lo = 0xA0; }
    else if (c == 0xED) { need = 2; hi = 0x9F; }
    else if (c >= 0xE1 && c <= 0xEF) need = 2;
    else if (c == 0xF0) { need = 3; lo = 0x90; }
    else if (c == 0xF4) { need = 3; hi = 0x8F; }
    else if (c >= 0xF1 && c <= 0xF3) need = 3;
    if (need && i + 1 < n && u[i + 1] >= lo && u[i + 1] <= hi) {
      k = 2;
      while (k <= need && i + k < n && u[i + k] >= 0x80 && u[i + k] <= 0xBF) k++;
    }
    XPI_TRY(tok_buf_put(out, "\xEF\xBF\xBD", 3));
    i += k;
    run = i;
  }
  return tok_buf_put(out, s + run, n - run);
}

int tok_is_whitespace(int32_t c) {
  return (c >= 9 && c <= 13) || c == 32 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* ---------------------------------------------------------------- string map */
/* FNV-1a, then a full avalanche: FNV's low bits depend only on the bytes' low bits, and the table is
 * indexed by the low bits. */
static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ULL; }
  h ^= h >> 33; h *= 0xff51afd7ed558ccdULL; h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ULL; h ^= h >> 33;
  return h;
}

static xpi_status strmap_rehash(tok_strmap *m, size_t nslots) {
  uint32_t *slots = calloc(nslots, sizeof *slots);
  if (!slots) return oom();
  for (size_t e = 0; e < m->n; e++) {
    size_t i = hash_bytes(m->keys[e], m->klens[e]) & (nslots - 1);
    while (slots[i]) i = (i + 1) & (nslots - 1);
    slots[i] = (uint32_t)(e + 1);
  }
  free(m->slots);
  m->slots = slots;
  m->mask = nslots - 1;
  return XPI_OK;
}

xpi_status tok_strmap_init(tok_strmap *m, size_t expected) {
  memset(m, 0, sizeof *m);
  size_t ns = 16;
  while (ns < expected * 2) ns *= 2;
  m->cap = expected ? expected : 8;
  m->keys = malloc(m->cap * sizeof *m->keys);
  m->klens = malloc(m->cap * sizeof *m->klens);
  m->vals = malloc(m->cap * sizeof *m->vals);
  if (!m->keys || !m->klens || !m->vals) { tok_strmap_free(m); return oom(); }
  xpi_status s = strmap_rehash(m, ns);
  if (s) tok_strmap_free(m);
  return s;
}

static size_t strmap_find(const tok_strmap *m, const char *key, size_t klen, size_t *slot) {
  size_t i = hash_bytes(key, klen) & m->mask;
  while (m->slots[i]) {
    size_t e = m->slots[i] - 1;
    if (m->klens[e] == klen && !memcmp(m->keys[e], key, klen)) { *slot = i; return e; }
    i = (i + 1) & m->mask;
  }
  *slot = i;
  return SIZE_MAX;
}

xpi_status tok_strmap_put(tok_strmap *m, const char *key, size_t klen, int32_t val, int32_t *old) {
  size_t slot, e = strmap_find(m, key, klen, &slot);
  if (old) *old = e == SIZE_MAX ? -1 : m->vals[e];
  if (e != SIZE_MAX) { m->vals[e] = val; return XPI_OK; }
  if (m->n == m->cap) {
    size_t cap = m->cap * 2;
    const char **k = realloc(m->keys, cap * sizeof *k);
    if (!k) return oom();
    m->keys = k;
    size_t *kl = realloc(m->klens, cap * sizeof *kl);
    if (!kl) return oom();
    m->klens = kl;
    int32_t *v = realloc(m->vals, cap * sizeof *v);
    if (!v) return oom();
    m->vals = v;
    m->cap = cap;
  }
  m->keys[m->n] = key; m->klens[m->n] = klen; m->vals[m->n] = val;
  m->slots[slot] = (uint32_t)(m->n + 1);
  m->n++;
  if (m->n * 2 > m->mask + 1) return strmap_rehash(m, (m->mask + 1) * 2);
  return XPI_OK;
}

int32_t tok_strmap_get(const tok_strmap *m, const char *key, size_t klen) {
  if (!m->slots) return -1;
  size_t slot, e = strmap_find(m, key, klen, &slot);
  return e == SIZE_MAX ? -1 : m->vals[e];
}

void tok_strmap_free(tok_strmap *m) {
  free(m->slots); free(m->keys); free(m->klens); free(m->vals);
  memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------- pair map */
static uint64_t mix64(uint64_t x) {
  x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;
  return x;
}

xpi_status tok_pairmap_init(tok_pairmap *m, size_t expected) {
  memset(m, 0, sizeof *m);
  size_t ns = 16;
  while (ns < expected * 2) ns *= 2;
  m->keys = malloc(ns * sizeof *m->keys);
  m->a = malloc(ns * sizeof *m->a);
  m->b = malloc(ns * sizeof *m->b);
  if (!m->keys || !m->a || !m->b) { tok_pairmap_free(m); return oom(); }
  memset(m->keys, 0xFF, ns * sizeof *m->keys);
  m->mask = ns - 1;
  return XPI_OK;
}

static xpi_status pairmap_grow(tok_pairmap *m) {
  tok_pairmap g;
  XPI_TRY(tok_pairmap_init(&g, (m->mask + 1)));
  for (size_t i = 0; i <= m->mask; i++)
    if (m->keys[i] != UINT64_MAX) {
      xpi_status s = tok_pairmap_put(&g, m->keys[i], m->a[i], m->b[i]);
      if (s) { tok_pairmap_free(&g); return s; }
    }
  tok_pairmap_free(m);
  *m = g;
  return XPI_OK;
}

xpi_status tok_pairmap_put(tok_pairmap *m, uint64_t key, int32_t a, int32_t b) {
  size_t i = mix64(key) & m->mask;
  while (m->keys[i] != UINT64_MAX && m->keys[i] != key) i = (i + 1) & m->mask;
  if (m->keys[i] == UINT64_MAX) m->n++;
  m->keys[i] = key; m->a[i] = a; m->b[i] = b;
  if (m->n * 2 > m->mask + 1) return pairmap_grow(m);
  return XPI_OK;
}

int tok_pairmap_get(const tok_pairmap *m, uint64_t key, int32_t *a, int32_t *b) {
  size_t i = mix64(key) & m->mask;
  while (m->keys[i] != UINT64_MAX) {
    if (m->keys[i] == key) { *a = m->a[i]; *b = m->b[i]; return 1; }
    i = (i + 1) & m->mask;
  }
  return 0;
}

void tok_pairmap_free(tok_pairmap *m) {
  free(m->keys); free(m->a); free(m->b);
  memset(m, 0, sizeof *m);
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
