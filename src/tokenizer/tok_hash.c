/* Open-addressing hash maps: token text -> id (vocabulary, added tokens) and id pair -> (rank, merged id). */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

static xpi_status oom(void) { return xpi_err(XPI_ERR_OUT_OF_MEMORY, "tokenizer: out of memory"); }

/* ---------------------------------------------------------------- string map */
/* FNV-1a, then a full avalanche: FNV's low bits depend only on the bytes' low bits, and the table is
 * indexed by the low bits. */
static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ULL; }
  h ^= h >> 33; h *= 0xff51afd7ed558ccdULL; h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ULL; h ^= h >> 33;
  return h;
}

/* A slot holds entry index + 1 (low half; 0 = empty) and the hash's top 32 bits (high half), so that probing
 * rarely touches the entries and key strings of other tokens (cache misses dominate loading). */
static uint64_t slot_of(uint64_t h, size_t e) { return (h & 0xFFFFFFFF00000000ULL) | (uint64_t)(e + 1); }

static xpi_status strmap_rehash(tok_strmap *m, size_t nslots) {
  uint64_t *slots = calloc(nslots, sizeof *slots);
  if (!slots) return oom();
  for (size_t e = 0; e < m->n; e++) {
    uint64_t h = hash_bytes(m->keys[e], m->klens[e]);
    size_t i = h & (nslots - 1);
    while (slots[i]) i = (i + 1) & (nslots - 1);
    slots[i] = slot_of(h, e);
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

static size_t strmap_find(const tok_strmap *m, const char *key, size_t klen, size_t *slot, uint64_t *hash) {
  uint64_t h = hash_bytes(key, klen), tag = h & 0xFFFFFFFF00000000ULL;
  size_t i = h & m->mask;
  *hash = h;
  while (m->slots[i]) {
    size_t e = (size_t)(m->slots[i] & 0xFFFFFFFFu) - 1;
    if ((m->slots[i] & 0xFFFFFFFF00000000ULL) == tag && m->klens[e] == klen && !memcmp(m->keys[e], key, klen)) {
      *slot = i;
      return e;
    }
    i = (i + 1) & m->mask;
  }
  *slot = i;
  return SIZE_MAX;
}

xpi_status tok_strmap_put(tok_strmap *m, const char *key, size_t klen, int32_t val, int32_t *old) {
  size_t slot;
  uint64_t h;
  size_t e = strmap_find(m, key, klen, &slot, &h);
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
  m->slots[slot] = slot_of(h, m->n);
  m->n++;
  if (m->n * 2 > m->mask + 1) return strmap_rehash(m, (m->mask + 1) * 2);
  return XPI_OK;
}

int32_t tok_strmap_get(const tok_strmap *m, const char *key, size_t klen) {
  if (!m->slots) return -1;
  size_t slot;
  uint64_t h;
  size_t e = strmap_find(m, key, klen, &slot, &h);
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
