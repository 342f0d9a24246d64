/* KV block pool bookkeeping and prefix cache (kv_blocks.h). */
#include "engine/kv_blocks.h"

#include <stdlib.h>
#include <string.h>

#include "core/status.h"

struct xpi_kv_blocks {
  int32_t n, bs, caching;
  int32_t *ref;              /* references per block */
  int32_t *free_stack, n_free; /* empty blocks; the last released is reused first (its pages are warm) */
  /* published blocks */
  uint8_t *published;
  uint64_t *hash, *prev;
  int32_t *tokens;           /* [n][bs] ids of each published block */
  int32_t *chain;            /* next block in the same hash bucket */
  int32_t *buckets;          /* [n_buckets] first block, -1 empty */
  uint64_t bucket_mask;
  /* cached blocks (published, no reference): a doubly linked list, least recently released at head */
  int32_t *lru_prev, *lru_next, lru_head, lru_tail, n_cached, n_used;
};

xpi_status xpi_kv_blocks_create(int32_t n_blocks, int32_t block_size, int prefix_caching, xpi_kv_blocks **out) {
  *out = NULL;
  if (n_blocks <= 0 || block_size <= 0) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "KV pool of %d blocks", n_blocks);
  xpi_kv_blocks *bm = calloc(1, sizeof *bm);
  if (!bm) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  bm->n = n_blocks;
  bm->bs = block_size;
  bm->caching = prefix_caching != 0;
  size_t n = (size_t)n_blocks;
  uint64_t nb = 1;
  while (nb < 2 * n) nb <<= 1;
  bm->bucket_mask = nb - 1;
  bm->ref = calloc(n, sizeof *bm->ref);
  bm->free_stack = malloc(n * sizeof *bm->free_stack);
  bm->published = calloc(n, 1);
  bm->hash = calloc(n, sizeof *bm->hash);
  bm->prev = calloc(n, sizeof *bm->prev);
  bm->chain = malloc(n * sizeof *bm->chain);
  bm->lru_prev = malloc(n * sizeof *bm->lru_prev);
  bm->lru_next = malloc(n * sizeof *bm->lru_next);
  bm->buckets = malloc(nb * sizeof *bm->buckets);
  if (bm->caching && (size_t)block_size <= SIZE_MAX / sizeof(int32_t) / n)
    bm->tokens = malloc(n * (size_t)block_size * sizeof *bm->tokens);
  if (!bm->ref || !bm->free_stack || !bm->published || !bm->hash || !bm->prev || !bm->chain || !bm->lru_prev ||
      !bm->lru_next || !bm->buckets || (bm->caching && !bm->tokens)) {
    xpi_kv_blocks_free(bm);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory for the bookkeeping of %d KV blocks", n_blocks);
  }
  for (int32_t i = 0; i < n_blocks; i++) bm->free_stack[i] = n_blocks - 1 - i; /* block 0 first */
  bm->n_free = n_blocks;
  for (uint64_t i = 0; i < nb; i++) bm->buckets[i] = -1;
  bm->lru_head = bm->lru_tail = -1;
  *out = bm;
  return XPI_OK;
}

void xpi_kv_blocks_free(xpi_kv_blocks *bm) {
  if (!bm) return;
  free(bm->ref);
  free(bm->free_stack);
  free(bm->published);
  free(bm->hash);
  free(bm->prev);
  free(bm->tokens);
  free(bm->chain);
  free(bm->buckets);
  free(bm->lru_prev);
  free(bm->lru_next);
  free(bm);
}

int32_t xpi_kv_blocks_total(const xpi_kv_blocks *bm) { return bm->n; }
int32_t xpi_kv_blocks_used(const xpi_kv_blocks *bm) { return bm->n_used; }
int32_t xpi_kv_blocks_cached(const xpi_kv_blocks *bm) { return bm->n_cached; }
int32_t xpi_kv_blocks_available(const xpi_kv_blocks *bm) { return bm->n_free + bm->n_cached; }
int32_t xpi_kv_blocks_refs(const xpi_kv_blocks *bm, int32_t b) { return b >= 0 && b < bm->n ? bm->ref[b] : 0; }

static void lru_remove(xpi_kv_blocks *bm, int32_t b) {
  int32_t p = bm->lru_prev[b], q = bm->lru_next[b];
  if (p >= 0) bm->lru_next[p] = q;
  else bm->lru_head = q;
  if (q >= 0) bm->lru_prev[q] = p;
  else bm->lru_tail = p;
  bm->n_cached--;
}

static void lru_append(xpi_kv_blocks *bm, int32_t b) {
  bm->lru_prev[b] = bm->lru_tail;
  bm->lru_next[b] = -1;
  if (bm->lru_tail >= 0) bm->lru_next[bm->lru_tail] = b;
  else bm->lru_head = b;
  bm->lru_tail = b;
  bm->n_cached++;
}

static void unpublish(xpi_kv_blocks *bm, int32_t b) {
  int32_t *link = &bm->buckets[bm->hash[b] & bm->bucket_mask];
  while (*link != b) link = &bm->chain[*link];
  *link = bm->chain[b];
  bm->published[b] = 0;
}

int32_t xpi_kv_blocks_alloc(xpi_kv_blocks *bm) {
  int32_t b;
  if (bm->n_free > 0) {
    b = bm->free_stack[--bm->n_free];
  } else if (bm->lru_head >= 0) { /* evict the least recently released cached prefix */
    b = bm->lru_head;
    lru_remove(bm, b);
    unpublish(bm, b);
  } else {
    return -1;
  }
  bm->ref[b] = 1;
  bm->n_used++;
  return b;
}

void xpi_kv_blocks_release(xpi_kv_blocks *bm, int32_t b) {
  if (b < 0 || b >= bm->n || bm->ref[b] <= 0) return;
  if (--bm->ref[b] > 0) return;
  bm->n_used--;
  if (bm->published[b]) lru_append(bm, b);
  else bm->free_stack[bm->n_free++] = b;
}

uint64_t xpi_kv_blocks_hash(uint64_t prev, const int32_t *ids, int32_t block_size) {
  /* 64-bit multiply-xorshift mixing of the previous hash and every id (any bijective mixer would do: hits
   * are verified against the stored ids) */
  uint64_t h = prev ^ 0x9e3779b97f4a7c15ull;
  for (int32_t i = 0; i < block_size; i++) {
    h ^= (uint64_t)(uint32_t)ids[i] + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  }
  return h ? h : 1; /* 0 means "no previous block" */
}

int32_t xpi_kv_blocks_find(const xpi_kv_blocks *bm, uint64_t hash, uint64_t prev, const int32_t *ids) {
  if (!bm->caching) return -1;
  for (int32_t b = bm->buckets[hash & bm->bucket_mask]; b >= 0; b = bm->chain[b])
    if (bm->hash[b] == hash && bm->prev[b] == prev &&
        !memcmp(bm->tokens + (size_t)b * (size_t)bm->bs, ids, (size_t)bm->bs * sizeof *ids))
      return b;
  return -1;
}

int32_t xpi_kv_blocks_lookup(xpi_kv_blocks *bm, uint64_t hash, uint64_t prev, const int32_t *ids) {
  const int32_t b = xpi_kv_blocks_find(bm, hash, prev, ids);
  if (b >= 0 && bm->ref[b]++ == 0) {
    lru_remove(bm, b);
    bm->n_used++;
  }
  return b;
}

int xpi_kv_blocks_publish(xpi_kv_blocks *bm, int32_t b, uint64_t hash, uint64_t prev, const int32_t *ids) {
  if (!bm->caching || b < 0 || b >= bm->n || bm->published[b] || bm->ref[b] <= 0) return 0;
  uint64_t bi = hash & bm->bucket_mask;
  for (int32_t o = bm->buckets[bi]; o >= 0; o = bm->chain[o])
    if (bm->hash[o] == hash && bm->prev[o] == prev &&
        !memcmp(bm->tokens + (size_t)o * (size_t)bm->bs, ids, (size_t)bm->bs * sizeof *ids))
      return 0; /* the same prefix was computed by another sequence meanwhile */
  bm->published[b] = 1;
  bm->hash[b] = hash;
  bm->prev[b] = prev;
  memcpy(bm->tokens + (size_t)b * (size_t)bm->bs, ids, (size_t)bm->bs * sizeof *ids);
  bm->chain[b] = bm->buckets[bi];
  bm->buckets[bi] = b;
  return 1;
}
