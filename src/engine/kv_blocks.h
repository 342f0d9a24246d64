/* The KV pool's bookkeeping (host side, the same for every backend): which blocks are free, which are held
 * by how many sequences, and the prefix cache. A block id names the same block in every backend's pool.
 *
 * Prefix cache: a block that a sequence has filled completely is published under the hash of (the previous
 * block's hash, its block_size token ids), which fixes the whole prefix up to it. Another sequence whose
 * tokens give the same hash chain takes the block (reference counted) instead of computing it. A block no
 * sequence holds any more stays cached, in least-recently-released order, until an allocation finds no
 * empty block and evicts the oldest. Published blocks are never written again; a sequence always writes its
 * own blocks (the first block that differs from a cached prefix, and every later one, is a fresh block). The
 * block's tokens are kept and compared on a hit, so a hash collision can never share wrong keys. */
#ifndef XPI_ENGINE_KV_BLOCKS_H
#define XPI_ENGINE_KV_BLOCKS_H

#include <stdint.h>
#include "xpuinfer.h"

typedef struct xpi_kv_blocks xpi_kv_blocks;

xpi_status xpi_kv_blocks_create(int32_t n_blocks, int32_t block_size, int prefix_caching, xpi_kv_blocks **out);
void xpi_kv_blocks_free(xpi_kv_blocks *bm);

int32_t xpi_kv_blocks_total(const xpi_kv_blocks *bm);
int32_t xpi_kv_blocks_used(const xpi_kv_blocks *bm);      /* held by at least one sequence */
int32_t xpi_kv_blocks_cached(const xpi_kv_blocks *bm);    /* held by none, kept for the prefix cache */
int32_t xpi_kv_blocks_available(const xpi_kv_blocks *bm); /* what allocation can get: empty + cached */

/* References to block b (0: empty or cached). */
int32_t xpi_kv_blocks_refs(const xpi_kv_blocks *bm, int32_t b);

/* A block for one sequence (reference 1), empty if there is one, else the least recently released cached
 * block (evicted from the cache); -1 when every block is held. */
int32_t xpi_kv_blocks_alloc(xpi_kv_blocks *bm);
/* Drops one reference; at zero a published block becomes cached, any other block empty. */
void xpi_kv_blocks_release(xpi_kv_blocks *bm, int32_t b);

/* The hash of a block of block_size ids after a prefix with hash prev (0 for the first block). */
uint64_t xpi_kv_blocks_hash(uint64_t prev, const int32_t *ids, int32_t block_size);
/* The published block with this hash, previous hash and ids, with one more reference; -1 if none. */
int32_t xpi_kv_blocks_lookup(xpi_kv_blocks *bm, uint64_t hash, uint64_t prev, const int32_t *ids);
/* The same block as xpi_kv_blocks_lookup, but no reference taken and nothing moved (-1 if none). */
int32_t xpi_kv_blocks_find(const xpi_kv_blocks *bm, uint64_t hash, uint64_t prev, const int32_t *ids);
/* Publishes block b (held by the caller, now full with ids) under hash. Returns 0 when another block already
 * has that prefix (b then stays private). */
int xpi_kv_blocks_publish(xpi_kv_blocks *bm, int32_t b, uint64_t hash, uint64_t prev, const int32_t *ids);

#endif
