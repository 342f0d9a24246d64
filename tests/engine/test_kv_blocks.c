/* The KV pool's bookkeeping (src/engine/kv_blocks.c): allocation never exceeds the pool, references, the prefix
 * cache (publish, lookup with the ids verified, find without a reference, a duplicate prefix not published
 * twice), and eviction of unreferenced cached blocks in least-recently-released order only once no empty block
 * is left. */
#include "check.h"
#include "engine/kv_blocks.h"

enum { N = 6, BS = 4 };

int main(void) {
  xpi_kv_blocks *bm = NULL;
  CHECK_OK(xpi_kv_blocks_create(N, BS, 1, &bm));
  if (!bm) return xpi_test_done();
  int32_t held[N + 1];
  for (int i = 0; i < N; i++) held[i] = xpi_kv_blocks_alloc(bm);
  CHECK(xpi_kv_blocks_alloc(bm) == -1 && xpi_kv_blocks_used(bm) == N && xpi_kv_blocks_available(bm) == 0,
        "a full pool gives no block");
  int distinct = 1;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < i; j++) distinct &= held[i] != held[j] && held[i] >= 0 && held[i] < N;
  CHECK(distinct, "every block handed out once");
  /* publish a chain of three blocks: a -> b -> c */
  const int32_t ta[BS] = {1, 2, 3, 4}, tb[BS] = {5, 6, 7, 8}, tc[BS] = {9, 9, 9, 9};
  uint64_t ha = xpi_kv_blocks_hash(0, ta, BS), hb = xpi_kv_blocks_hash(ha, tb, BS), hc = xpi_kv_blocks_hash(hb, tc, BS);
  CHECK(ha != hb && hb != hc && xpi_kv_blocks_hash(0, tb, BS) != hb, "hashes depend on the prefix");
  CHECK(xpi_kv_blocks_publish(bm, held[0], ha, 0, ta) == 1, "publish a");
  CHECK(xpi_kv_blocks_publish(bm, held[1], hb, ha, tb) == 1, "publish b");
  CHECK(xpi_kv_blocks_publish(bm, held[2], hc, hb, tc) == 1, "publish c");
  CHECK(xpi_kv_blocks_publish(bm, held[3], ha, 0, ta) == 0, "the same prefix is not published twice");
  /* a lookup shares a held block */
  CHECK(xpi_kv_blocks_lookup(bm, hb, ha, tb) == held[1] && xpi_kv_blocks_used(bm) == N, "lookup of a held block");
  int32_t other[BS] = {5, 6, 7, 0};
  CHECK(xpi_kv_blocks_lookup(bm, hb, ha, other) == -1, "same hash, other ids: no hit");
  CHECK(xpi_kv_blocks_lookup(bm, hb, 12345, tb) == -1, "same ids after another prefix: no hit");
  xpi_kv_blocks_release(bm, held[1]); /* the lookup's reference */
  /* release: published blocks become cached, the others empty */
  xpi_kv_blocks_release(bm, held[2]); /* c first (least recently released) */
  xpi_kv_blocks_release(bm, held[1]);
  xpi_kv_blocks_release(bm, held[0]);
  xpi_kv_blocks_release(bm, held[3]);
  CHECK(xpi_kv_blocks_cached(bm) == 3 && xpi_kv_blocks_used(bm) == 2 && xpi_kv_blocks_available(bm) == 4,
        "cached %d used %d available %d", xpi_kv_blocks_cached(bm), xpi_kv_blocks_used(bm),
        xpi_kv_blocks_available(bm));
  /* find (the prefix cache's check across pools) takes no reference and leaves the eviction order alone */
  CHECK(xpi_kv_blocks_find(bm, hb, ha, tb) == held[1] && xpi_kv_blocks_find(bm, hb, ha, other) == -1 &&
            xpi_kv_blocks_cached(bm) == 3 && xpi_kv_blocks_refs(bm, held[1]) == 0,
        "find of a cached block: refs %d, cached %d", xpi_kv_blocks_refs(bm, held[1]), xpi_kv_blocks_cached(bm));
  /* a cached block comes back by lookup */
  CHECK(xpi_kv_blocks_lookup(bm, ha, 0, ta) == held[0] && xpi_kv_blocks_cached(bm) == 2, "hit on a cached block");
  xpi_kv_blocks_release(bm, held[0]); /* now the most recently released */
  /* allocation takes the empty block first, then evicts c, then b, then a */
  CHECK(xpi_kv_blocks_alloc(bm) == held[3] && xpi_kv_blocks_cached(bm) == 3, "the empty block first");
  CHECK(xpi_kv_blocks_alloc(bm) == held[2], "then the least recently released cached block (c)");
  CHECK(xpi_kv_blocks_lookup(bm, hc, hb, tc) == -1, "an evicted block is no longer found");
  CHECK(xpi_kv_blocks_alloc(bm) == held[1], "then b");
  CHECK(xpi_kv_blocks_lookup(bm, ha, 0, ta) == held[0], "a is still cached");
  CHECK(xpi_kv_blocks_alloc(bm) == -1 && xpi_kv_blocks_used(bm) == N, "full again");
  xpi_kv_blocks_free(bm);
  /* without prefix caching nothing is published or found */
  CHECK_OK(xpi_kv_blocks_create(2, BS, 0, &bm));
  if (bm) {
    int32_t b = xpi_kv_blocks_alloc(bm);
    CHECK(xpi_kv_blocks_publish(bm, b, ha, 0, ta) == 0 && xpi_kv_blocks_lookup(bm, ha, 0, ta) == -1, "caching off");
    xpi_kv_blocks_release(bm, b);
    CHECK(xpi_kv_blocks_cached(bm) == 0 && xpi_kv_blocks_available(bm) == 2, "released to empty");
    xpi_kv_blocks_free(bm);
  }
  CHECK_ERR(xpi_kv_blocks_create(0, BS, 1, &bm), XPI_ERR_INVALID_ARGUMENT, "KV pool of 0 blocks");
  return xpi_test_done();
}
