/* CPU causal attention over one layer of a paged KV cache (attention_cpu.c), called by backend_cpu.c after it
 * stored the step's keys and values. Split out so tests and benchmarks can drive it on synthetic caches. */
#ifndef XPI_ATTENTION_CPU_H
#define XPI_ATTENTION_CPU_H

#include <stdint.h>

#include "core/threadpool.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/ops.h"

/* One layer of a paged KV cache. Position j of a sequence with block table tbl lives in block
 * b = tbl[j >> block_shift], row r = j & ((1 << block_shift) - 1); the row (hd elements) of KV head g starts
 * b*block_stride + g*head_stride + r*slot_stride elements after k (and v). The CPU backend keeps a block's rows
 * of one head contiguous (slot_stride = hd), so decode streams each head's K and V a block at a time. A
 * contiguous (unpaged) cache is one block: block_shift 30, a table {0}. */
typedef struct xpi_cpu_kv_layer {
  const void *k, *v;
  xpi_dtype dtype; /* f32, bf16 or f16 */
  int32_t hk, hd;
  int64_t head_stride, slot_stride, block_stride;
  int32_t block_shift;
} xpi_cpu_kv_layer;

/* The step's tokens (host memory): token i is at position pos[i] of the sequence whose block table is row
 * seq[i] of tables (max_blocks entries a row). Tokens of one sequence should be consecutive, as the engine
 * builds its batches: each run of them forms query tiles that share their key reads. */
typedef struct xpi_cpu_attn_batch {
  const int32_t *pos, *seq, *tables;
  int32_t max_blocks;
} xpi_cpu_attn_batch;

/* out[n, hq, hd] = softmax(cap(q[n, hq, hd] . K_s[w0..pos[i], h/(hq/hk)] * ap->scale)) @ V_s[...] (causal,
 * GQA, per sequence; w0 = 0, or pos[i] - ap->window + 1 for a sliding window; cap the ap->softcap of
 * ops.h). A query tile's key range starts at the first key of its rows' windows: a windowed decode reads
 * the window's blocks only, whatever the depth. sdpa and flash run the tiled online-softmax kernel k->attn_tile, each KV row read once per tile
 * for all the q rows of its group; the units of work (query tile x KV head x key range) of every sequence run
 * in parallel, prefill and decode alike. eager is the plain reference (KV heads copied per q head, full score
 * rows). nsplit: key-range pieces per tile, merged at the end (0 = chosen from the shape and the pool size;
 * tests force other values). Errors: out of memory for scratch. */
xpi_status xpi_cpu_attention(xpi_pool *pool, const xpi_cpu_kernels *k, float *out, const float *q,
                             const xpi_cpu_kv_layer *kv, const xpi_cpu_attn_batch *b, int32_t n, int32_t hq,
                             const xpi_attn_params *ap, int32_t nsplit);

#endif
