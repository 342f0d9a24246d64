/* CPU causal attention over one layer of the KV cache (attention_cpu.c), called by backend_cpu.c after it
 * stored the step's keys and values. Split out so tests and benchmarks can drive it on synthetic caches. */
#ifndef XPI_ATTENTION_CPU_H
#define XPI_ATTENTION_CPU_H

#include <stdint.h>

#include "core/threadpool.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/ops.h"

/* One layer of a KV cache: the row (hd elements) of slot s, KV head g starts g*head_stride + s*slot_stride
 * elements after k (and v). The CPU backend stores each head's slots contiguously (slot_stride = hd), so a
 * decode step streams every head's K and V sequentially. */
typedef struct xpi_cpu_kv_layer {
  const void *k, *v;
  xpi_dtype dtype; /* f32, bf16 or f16 */
  int32_t hk, hd;
  int64_t head_stride, slot_stride;
} xpi_cpu_kv_layer;

/* out[n, hq, hd] = softmax(q[n, hq, hd] . K[0..pos[i], h/(hq/hk)] * scale) @ V[...] (causal, GQA).
 * sdpa and flash run the tiled online-softmax kernel k->attn_tile, each KV row read once per tile for all
 * the q heads of its group; eager is the plain reference (KV heads copied per q head, full score rows).
 * nsplit: key-range pieces per tile, merged at the end (0 = chosen from the shape and the pool size; tests
 * force other values). Errors: out of memory for scratch. */
xpi_status xpi_cpu_attention(xpi_pool *pool, const xpi_cpu_kernels *k, float *out, const float *q,
                             const xpi_cpu_kv_layer *kv, const int32_t *pos, int32_t n, int32_t hq, float scale,
                             xpi_attn_impl impl, int32_t nsplit);

#endif
