/* The CPU backend: every op of ops.h over the kernel table (cpu_kernels.h), parallel on the thread pool.
 * Memory is host memory, so read/write are copies and weights borrow the mmapped file when their dtype is
 * one the kernels take. use_kernels = 0 selects the scalar table and unfused steps (the reference path). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/status.h"
#include "core/threadpool.h"
#include "ops/cpu/attention_cpu.h"
#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/matmul_cpu.h"
#include "ops/cpu/moe_cpu.h"
#include "ops/cpu/quant_weight.h"
#include "ops/cpu/weight_arena.h"
#include "ops/half.h"
#include "ops/ops.h"

typedef struct cpu_impl {
  xpi_pool *pool;
  const xpi_cpu_kernels *k;
  xpi_cpu_mm_ws *ws; /* matmul buffers, reused (NULL: allocated per matmul) */
} cpu_impl;

struct xpi_kv {
  xpi_dtype dtype;                /* f32, bf16 or f16 */
  int32_t n_layers, n_blocks, block_size, block_shift, hk, hd;
  void *k, *v;                    /* [n_layers][n_blocks][hk][block_size][hd] each: a block's rows of one head
                                   * are contiguous (4-8 KiB runs at head_dim 128) */
};

static cpu_impl *impl_of(xpi_backend *be) { return (cpu_impl *)be->impl; }

/* ------------------------------------------------------------------ helpers */

static void store_elems(const xpi_cpu_kernels *k, void *dst, xpi_dtype dt, const float *src, int64_t n) {
  if (dt == XPI_DT_F32) memcpy(dst, src, (size_t)n * 4);
  else k->to_half((uint16_t *)dst, src, n, dt);
}

static void load_elems(float *dst, const void *src, xpi_dtype dt, int64_t n) {
  if (dt == XPI_DT_F32) {
    memcpy(dst, src, (size_t)n * 4);
    return;
  }
  for (int64_t i = 0; i < n; i++) dst[i] = xpi_cpu_load_elem(src, dt, i);
}

static int is_float_dtype(xpi_dtype dt) { return dt == XPI_DT_F32 || dt == XPI_DT_F16 || dt == XPI_DT_BF16; }

/* ------------------------------------------------------------------ memory */

static void *cpu_alloc(xpi_backend *be, size_t bytes) {
  (void)be;
  size_t sz = (bytes + 63) & ~(size_t)63;
  if (sz < bytes) {
    xpi_err(XPI_ERR_OUT_OF_MEMORY, "cpu: allocation of %zu bytes overflows", bytes);
    return NULL;
  }
  void *p = aligned_alloc(64, sz ? sz : 64);
  if (!p) xpi_err(XPI_ERR_OUT_OF_MEMORY, "cpu: out of memory allocating %zu bytes", bytes);
  return p;
}

static void cpu_free(xpi_backend *be, void *p) {
  (void)be;
  free(p);
}

static xpi_status cpu_write(xpi_backend *be, void *dst, const void *src, size_t bytes) {
  (void)be;
  if (bytes) memmove(dst, src, bytes);
  return XPI_OK;
}

static xpi_status cpu_read(xpi_backend *be, void *dst, const void *src, size_t bytes) {
  (void)be;
  if (bytes) memmove(dst, src, bytes);
  return XPI_OK;
}

static xpi_status cpu_sync(xpi_backend *be) {
  (void)be;
  return XPI_OK;
}

/* MemAvailable of /proc/meminfo: the kernel's estimate of what can be allocated without swapping. */
static xpi_status cpu_free_memory(xpi_backend *be, uint64_t *bytes) {
  (void)be;
  *bytes = 0;
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return xpi_err(XPI_ERR_IO, "cpu: cannot read /proc/meminfo for the free memory");
  char line[256];
  unsigned long long kb = 0;
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) found = sscanf(line, "MemAvailable: %llu kB", &kb) == 1;
  fclose(f);
  if (!found) return xpi_err(XPI_ERR_IO, "cpu: /proc/meminfo has no MemAvailable line");
  *bytes = (uint64_t)kb * 1024;
  return XPI_OK;
}

/* ------------------------------------------------------------------ weights */

static xpi_status cpu_weight_create(xpi_backend *be, xpi_weight *w, const void *src, xpi_dtype src_dtype,
                                    int64_t rows, int64_t cols, xpi_dtype want) {
  (void)be;
  memset(w, 0, sizeof *w);
  if (want == XPI_DT_Q8 || want == XPI_DT_Q4) /* perf: block quantization at load (quant_format.h, quant_weight.c) */
    return xpi_cpu_quantize_weight(impl_of(be)->pool, w, src, src_dtype, rows, cols, want);
  if (!is_float_dtype(src_dtype) || !is_float_dtype(want))
    return xpi_err(XPI_ERR_UNSUPPORTED, "cpu: weights of dtype %s -> %s are not supported",
                   xpi_dtype_name(src_dtype), xpi_dtype_name(want));
  if (rows <= 0 || cols <= 0 || rows > INT64_MAX / cols || rows * cols > (int64_t)(SIZE_MAX / 4))
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "cpu: bad weight shape [%lld, %lld]", (long long)rows, (long long)cols);
  size_t count = (size_t)(rows * cols);
  w->rows = rows;
  w->cols = cols;
  w->dtype = want;
  w->bytes = count * xpi_dtype_size(want);
  if (want == src_dtype) { /* used in place from the mapping */
    w->data = src;
    return XPI_OK;
  }
  void *buf = cpu_alloc(be, w->bytes);
  if (!buf) return XPI_ERR_OUT_OF_MEMORY;
  float tmp[256];
  for (size_t i = 0; i < count; i += 256) {
    int64_t m = (int64_t)(count - i < 256 ? count - i : 256);
    load_elems(tmp, (const unsigned char *)src + i * xpi_dtype_size(src_dtype), src_dtype, m);
    store_elems(impl_of(be)->k, (unsigned char *)buf + i * xpi_dtype_size(want), want, tmp, m);
  }
  w->data = buf;
  w->owned = buf;
  return XPI_OK;
}

static void cpu_weight_free(xpi_backend *be, xpi_weight *w) {
  if (!w) return;
  if (w->dtype == XPI_DT_Q8 || w->dtype == XPI_DT_Q4) xpi_cpu_wfree(w->owned); /* quant_weight.c: the arena */
  else cpu_free(be, w->owned);
  memset(w, 0, sizeof *w);
}

/* ------------------------------------------------------------------ KV cache */

static xpi_status cpu_kv_create(xpi_backend *be, int32_t n_layers, int32_t n_blocks, int32_t block_size, int32_t hk,
                                int32_t hd, xpi_dtype dtype, xpi_kv **out) {
  (void)be;
  *out = NULL;
  if (!is_float_dtype(dtype))
    return xpi_err(XPI_ERR_UNSUPPORTED, "cpu: KV cache dtype %s is not supported (f32, bf16, f16)", xpi_dtype_name(dtype));
  if (n_layers <= 0 || n_blocks <= 0 || hk <= 0 || hd <= 0 || block_size <= 0 || block_size > (1 << 16) ||
      (block_size & (block_size - 1)))
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "cpu: bad KV cache shape (block size %d must be a power of two)", block_size);
  size_t esz = xpi_dtype_size(dtype);
  size_t per = (size_t)n_layers * (size_t)n_blocks, row = (size_t)block_size * (size_t)hk * (size_t)hd * esz;
  if (per / (size_t)n_blocks != (size_t)n_layers || per > SIZE_MAX / 2 / row)
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "cpu: KV cache of %d layers x %d blocks is too large", n_layers, n_blocks);
  size_t bytes = per * row;
  xpi_kv *kv = calloc(1, sizeof *kv);
  if (!kv) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "cpu: out of memory");
  kv->dtype = dtype;
  kv->n_layers = n_layers;
  kv->n_blocks = n_blocks;
  kv->block_size = block_size;
  while ((1 << kv->block_shift) < block_size) kv->block_shift++;
  kv->hk = hk;
  kv->hd = hd;
  /* Not cleared: a slot is always written before it is read. Large pools come from mmap, so pages the engine
   * never hands out cost no memory. */
  kv->k = malloc(bytes);
  kv->v = malloc(bytes);
  if (!kv->k || !kv->v) {
    free(kv->k);
    free(kv->v);
    free(kv);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "cpu: out of memory for a KV cache of %zu MiB", 2 * bytes >> 20);
  }
  *out = kv;
  return XPI_OK;
}

static void cpu_kv_free(xpi_backend *be, xpi_kv *kv) {
  (void)be;
  if (!kv) return;
  free(kv->k);
  free(kv->v);
  free(kv);
}

/* ------------------------------------------------------------------ embed */

static xpi_status cpu_embed(xpi_backend *be, float *out, const xpi_weight *table, const int32_t *ids, int32_t n) {
  (void)be;
  for (int32_t i = 0; i < n; i++) {
    if (ids[i] < 0 || ids[i] >= table->rows)
      return xpi_err(XPI_ERR_INVALID_ARGUMENT, "token id %d is out of range [0, %lld)", ids[i],
                     (long long)table->rows);
    size_t esz = xpi_dtype_size(table->dtype);
    load_elems(out + (size_t)i * (size_t)table->cols,
               (const unsigned char *)table->data + (size_t)ids[i] * (size_t)table->cols * esz, table->dtype,
               table->cols);
  }
  return XPI_OK;
}

/* ------------------------------------------------------------------ rmsnorm */

typedef struct {
  const xpi_cpu_kernels *k;
  float *out, *x;
  const float *res;
  const xpi_weight *w;
  int32_t n, d;
  float eps;
  int fused;
} rms_job;

/* x += r, four at a time where SSE2 is there: GCC's -O2 left the plain loop scalar, ~0.6% of a MoE prefill (whose
 * layers add their experts' sum here). Same sums. */
static void add_row(float *restrict x, const float *restrict r, int32_t d) {
  int32_t i = 0;
#if defined(__SSE2__)
  for (; i + 4 <= d; i += 4) _mm_storeu_ps(x + i, _mm_add_ps(_mm_loadu_ps(x + i), _mm_loadu_ps(r + i)));
#endif
  for (; i < d; i++) x[i] += r[i];
}

static void rms_run(void *ctx, int ith, int nth) {
  rms_job *j = ctx;
  int64_t b, e;
  xpi_pool_range(j->n, ith, nth, 1, &b, &e);
  for (int64_t t = b; t < e; t++) {
    float *x = j->x + t * j->d;
    if (j->res && j->fused) add_row(x, j->res + t * j->d, j->d);
    j->k->rmsnorm_row(j->out + t * j->d, x, j->w->data, j->w->dtype, j->d, j->eps);
  }
}

static xpi_status cpu_add(xpi_backend *be, float *x, const float *y, int64_t count);

static xpi_status cpu_rmsnorm(xpi_backend *be, float *out, float *x, const float *residual, const xpi_weight *w,
                              int32_t n, int32_t d, float eps) {
  if (w->cols != d) return xpi_err(XPI_ERR_INTERNAL, "rmsnorm: weight has %lld elements, rows have %d", (long long)w->cols, d);
  if (residual && !be->use_kernels) XPI_TRY(cpu_add(be, x, residual, (int64_t)n * d)); /* unfused reference */
  rms_job j = {impl_of(be)->k, out, x, residual, w, n, d, eps, be->use_kernels};
  xpi_pool_run_n(impl_of(be)->pool, rms_run, &j, n); /* a row each at most: decode runs on the caller alone */
  return XPI_OK;
}

/* ------------------------------------------------------------------ matmul */

/* out[t, :] += bias for n tokens, the bias widened to f32 once and the rows split over the pool: a serial add
 * with a per-element dtype switch cost Qwen2's q/k/v biases ~20% of a 16-thread prefill. */
typedef struct {
  float *out;
  const float *b;
  int64_t rows;
  int32_t n;
} bias_job;

static void bias_run(void *ctx, int ith, int nth) {
  const bias_job *j = ctx;
  int64_t t0, t1;
  xpi_pool_range(j->n, ith, nth, 1, &t0, &t1);
  for (int64_t t = t0; t < t1; t++) {
    float *o = j->out + t * j->rows;
    for (int64_t r = 0; r < j->rows; r++) o[r] += j->b[r];
  }
}

static xpi_status add_bias(xpi_pool *pool, float *out, const xpi_weight *bias, int32_t n) {
  /* f32 used in place only where aligned: a safetensors tensor may start at any byte */
  const int in_place = bias->dtype == XPI_DT_F32 && (uintptr_t)bias->data % sizeof(float) == 0;
  float *b = in_place ? NULL : malloc((size_t)bias->cols * sizeof *b);
  if (!in_place) {
    if (!b) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "matmul: out of memory widening a bias of %lld elements",
                           (long long)bias->cols);
    for (int64_t r = 0; r < bias->cols; r++) b[r] = xpi_cpu_load_elem(bias->data, bias->dtype, r);
  }
  bias_job j = {out, b ? b : (const float *)bias->data, bias->cols, n};
  xpi_pool_run_n(pool, bias_run, &j, n); /* a token each at most: decode runs on the caller alone */
  free(b);
  return XPI_OK;
}

static xpi_status cpu_matmul(xpi_backend *be, float *out, const float *in, const xpi_weight *w, const xpi_weight *bias,
                             int32_t n) {
  const cpu_impl *im = impl_of(be);
  if (w->dtype < 0 || w->dtype >= 8 || !im->k->gemv[w->dtype])
    return xpi_err(XPI_ERR_UNSUPPORTED, "cpu: no matmul kernel for %s weights", xpi_dtype_name(w->dtype));
  if (bias && bias->cols != w->rows)
    return xpi_err(XPI_ERR_INTERNAL, "matmul: bias has %lld elements, weight %lld rows", (long long)bias->cols,
                   (long long)w->rows);
  xpi_cpu_matmul(im->pool, im->ws, im->k, w->dtype, out, w->rows, in, n, w->data, w->aux, 0, w->rows, w->cols);
  return bias ? add_bias(im->pool, out, bias, n) : XPI_OK;
}

/* ------------------------------------------------------------------ rope (+ q/k norm) */

typedef struct {
  const xpi_cpu_kernels *k;
  float *q, *kk;
  const int32_t *pos;
  int32_t n, hq, hk, hd;
  const float *inv_freq;
  const xpi_weight *qn, *kn;
  float eps;
  int do_norm, do_rope;
  const int32_t *long_sel;
} rope_job;

/* rotate_half convention: x1 = x[:hd/2], x2 = x[hd/2:]; out = (x1*cos - x2*sin, x2*cos + x1*sin). */
static void rope_head(float *x, const float *cs, const float *sn, int32_t half) {
  for (int32_t i = 0; i < half; i++) {
    float x1 = x[i], x2 = x[i + half];
    float a = x1 * cs[i], b = x2 * sn[i];
    float c = x2 * cs[i], d = x1 * sn[i];
    x[i] = a - b;
    x[i + half] = c + d;
  }
}

static void rope_run(void *ctx, int ith, int nth) {
  rope_job *j = ctx;
  int32_t half = j->hd / 2;
  float cs[512], sn[512]; /* hd <= 1024 checked by the caller */
  int64_t b, e;
  xpi_pool_range(j->n, ith, nth, 1, &b, &e);
  for (int64_t t = b; t < e; t++) {
    float *q = j->q + t * j->hq * j->hd, *k = j->kk + t * j->hk * j->hd;
    if (j->do_norm) {
      if (j->qn)
        for (int32_t h = 0; h < j->hq; h++) j->k->rmsnorm_row(q + h * j->hd, q + h * j->hd, j->qn->data, j->qn->dtype, j->hd, j->eps);
      if (j->kn)
        for (int32_t h = 0; h < j->hk; h++) j->k->rmsnorm_row(k + h * j->hd, k + h * j->hd, j->kn->data, j->kn->dtype, j->hd, j->eps);
    }
    if (!j->do_rope) continue;
    /* As transformers: angle = f32(pos * inv_freq), then cos/sin of it (computed in double, rounded). */
    float p = (float)j->pos[t];
    const float *inv_freq = j->inv_freq + (j->long_sel && j->long_sel[t] ? half : 0);
    for (int32_t i = 0; i < half; i++) {
      float ang = p * inv_freq[i];
      cs[i] = (float)cos((double)ang);
      sn[i] = (float)sin((double)ang);
    }
    for (int32_t h = 0; h < j->hq; h++) rope_head(q + h * j->hd, cs, sn, half);
    for (int32_t h = 0; h < j->hk; h++) rope_head(k + h * j->hd, cs, sn, half);
  }
}

static xpi_status cpu_rope(xpi_backend *be, float *q, float *k, const int32_t *pos, int32_t n, int32_t hq, int32_t hk,
                           const xpi_rope_params *rp, const float *inv_freq, const xpi_weight *q_norm,
                           const xpi_weight *k_norm, float eps) {
  int32_t hd = rp->head_dim;
  if (hd <= 0 || hd % 2 || hd > 1024) return xpi_err(XPI_ERR_UNSUPPORTED, "rope: head_dim %d is not supported (even, <= 1024)", hd);
  if ((q_norm && q_norm->cols != hd) || (k_norm && k_norm->cols != hd))
    return xpi_err(XPI_ERR_INTERNAL, "rope: q/k norm weight size differs from head_dim %d", hd);
  rope_job j = {impl_of(be)->k, q, k, pos, n, hq, hk, hd, inv_freq, q_norm, k_norm, eps, 1, 1, rp->long_sel};
  if (!be->use_kernels && (q_norm || k_norm)) { /* reference: norm pass, then rotary pass */
    j.do_rope = 0;
    xpi_pool_run_n(impl_of(be)->pool, rope_run, &j, n);
    j.do_rope = 1;
    j.do_norm = 0;
  }
  xpi_pool_run_n(impl_of(be)->pool, rope_run, &j, n);
  return XPI_OK;
}

/* ------------------------------------------------------------------ attention */

/* Element offset of (layer, block, head h, row r) in kv->k / kv->v. */
static size_t kv_off(const xpi_kv *kv, int32_t layer, int32_t block, int32_t h, int32_t r) {
  return ((((size_t)layer * (size_t)kv->n_blocks + (size_t)block) * (size_t)kv->hk + (size_t)h) *
              (size_t)kv->block_size + (size_t)r) * (size_t)kv->hd;
}

/* The map is built by the engine; check it anyway (a bad block id would write outside the pool). Only the
 * blocks the step reads: with a sliding window, the entries before a token's window may be stale. */
static xpi_status check_map(const xpi_kv *kv, const xpi_kv_map *map, int32_t n, int32_t window) {
  const int64_t max_pos = (int64_t)map->max_blocks * kv->block_size;
  int32_t run_first = 0; /* the first key of the run's first token (positions rise along a run) */
  for (int32_t t = 0; t < n; t++) {
    if (map->pos[t] < 0 || map->pos[t] >= max_pos || map->seq[t] < 0)
      return xpi_err(XPI_ERR_CONTEXT_LENGTH, "position %d is outside the KV block table (%lld positions)", map->pos[t],
                     (long long)max_pos);
    if (t == 0 || map->seq[t - 1] != map->seq[t] || map->pos[t - 1] > map->pos[t])
      run_first = window > 0 && map->pos[t] >= window ? map->pos[t] - window + 1 : 0;
    /* the blocks token t reads: its sequence's from its window's first up to its position (checked once per run
     * of tokens) */
    if (t + 1 < n && map->seq[t + 1] == map->seq[t] && map->pos[t + 1] >= map->pos[t]) continue;
    const int32_t *tbl = map->tables + (size_t)map->seq[t] * (size_t)map->max_blocks;
    for (int32_t b = run_first >> kv->block_shift; b <= map->pos[t] >> kv->block_shift; b++)
      if (tbl[b] < 0 || tbl[b] >= kv->n_blocks)
        return xpi_err(XPI_ERR_INTERNAL, "attention: block %d of sequence row %d is %d, outside the pool of %d", b,
                       map->seq[t], tbl[b], kv->n_blocks);
  }
  return XPI_OK;
}

static xpi_status cpu_attention(xpi_backend *be, float *out, const float *q, const float *k, const float *v, xpi_kv *kv,
                                int32_t layer, const xpi_kv_map *map, int32_t n, int32_t hq, int32_t hk, int32_t hd,
                                const xpi_attn_params *ap) {
  if (ap->window < 0 || !(ap->softcap >= 0)) /* before anything is stored */
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "attention: window %d / softcap %g must be >= 0", ap->window,
                   (double)ap->softcap);
  if (hk <= 0 || hq % hk || hk != kv->hk || hd != kv->hd || layer < 0 || layer >= kv->n_layers)
    return xpi_err(XPI_ERR_INTERNAL, "attention: shape (hq %d, hk %d, hd %d, layer %d) does not match the KV cache", hq,
                   hk, hd, layer);
  XPI_TRY(check_map(kv, map, n, ap->window));
  const xpi_cpu_kernels *ks = impl_of(be)->k;
  const size_t esz = xpi_dtype_size(kv->dtype);
  const int32_t mask = kv->block_size - 1;
  for (int32_t t = 0; t < n; t++) { /* store this step's keys and values at their slots */
    const int32_t p = map->pos[t], blk = map->tables[(size_t)map->seq[t] * (size_t)map->max_blocks + (size_t)(p >> kv->block_shift)];
    for (int32_t h = 0; h < hk; h++) {
      const size_t off = kv_off(kv, layer, blk, h, p & mask) * esz;
      store_elems(ks, (unsigned char *)kv->k + off, kv->dtype, k + ((size_t)t * hk + h) * hd, hd);
      store_elems(ks, (unsigned char *)kv->v + off, kv->dtype, v + ((size_t)t * hk + h) * hd, hd);
    }
  }
  const size_t l0 = kv_off(kv, layer, 0, 0, 0) * esz;
  const xpi_cpu_kv_layer layer_kv = {(unsigned char *)kv->k + l0, (unsigned char *)kv->v + l0, kv->dtype, hk, hd,
                                     (int64_t)kv->block_size * hd, hd, (int64_t)hk * kv->block_size * hd,
                                     kv->block_shift};
  const xpi_cpu_attn_batch batch = {map->pos, map->seq, map->tables, map->max_blocks};
  return xpi_cpu_attention(impl_of(be)->pool, impl_of(be)->k, out, q, &layer_kv, &batch, n, hq, ap, 0);
}

/* ------------------------------------------------------------------ elementwise */

/* out = act(gate) * up, elementwise: the kernel table's swiglu or geglu, called once per thread's range. */
typedef void (*glu_fn)(float *out, const float *gate, const float *up, int64_t n);

typedef struct {
  glu_fn fn;
  float *out;
  const float *a, *b;
  int64_t count;
} glu_job;

static void glu_run(void *ctx, int ith, int nth) {
  glu_job *j = ctx;
  int64_t b, e;
  xpi_pool_range(j->count, ith, nth, 16, &b, &e);
  if (b < e) j->fn(j->out + b, j->a + b, j->b + b, e - b);
}

static xpi_status cpu_glu(xpi_backend *be, glu_fn fn, float *out, const float *gate, const float *up, int32_t n,
                          int32_t f) {
  if (n <= 0 || f <= 0) return XPI_OK;
  glu_job j = {fn, out, gate, up, (int64_t)n * f};
  /* at least 2048 elements a thread (a few microseconds): fewer would cost more in waiting than they save */
  xpi_pool_run_n(impl_of(be)->pool, glu_run, &j, (int)(j.count / 2048 + 1));
  return XPI_OK;
}

static xpi_status cpu_swiglu(xpi_backend *be, float *out, const float *gate, const float *up, int32_t n, int32_t f) {
  return cpu_glu(be, impl_of(be)->k->swiglu, out, gate, up, n, f);
}

static xpi_status cpu_geglu(xpi_backend *be, float *out, const float *gate, const float *up, int32_t n, int32_t f) {
  return cpu_glu(be, impl_of(be)->k->geglu, out, gate, up, n, f);
}

typedef struct {
  const xpi_cpu_kernels *k;
  float *x;
  int64_t count;
  float a;
} inplace_job;

static void softcap_run(void *ctx, int ith, int nth) {
  inplace_job *j = ctx;
  int64_t b, e;
  xpi_pool_range(j->count, ith, nth, 16, &b, &e);
  if (b < e) j->k->softcap(j->x + b, e - b, j->a);
}

static void scale_run(void *ctx, int ith, int nth) {
  inplace_job *j = ctx;
  int64_t b, e;
  xpi_pool_range(j->count, ith, nth, 16, &b, &e);
  if (b < e) j->k->scale(j->x + b, j->a, e - b);
}

/* Over the logits once a step (a Gemma vocabulary is 256k: worth the vector tanh and the pool). */
static xpi_status cpu_softcap(xpi_backend *be, float *x, int64_t count, float cap) {
  if (!(cap > 0)) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "softcap %g must be > 0", (double)cap);
  if (count <= 0) return XPI_OK;
  inplace_job j = {impl_of(be)->k, x, count, cap};
  xpi_pool_run_n(impl_of(be)->pool, softcap_run, &j, (int)(count / 2048 + 1)); /* as the GLUs */
  return XPI_OK;
}

static xpi_status cpu_scale(xpi_backend *be, float *x, int64_t count, float s) {
  if (count <= 0) return XPI_OK;
  inplace_job j = {impl_of(be)->k, x, count, s};
  xpi_pool_run_n(impl_of(be)->pool, scale_run, &j, (int)(count / 8192 + 1)); /* one multiply an element */
  return XPI_OK;
}

static xpi_status cpu_add(xpi_backend *be, float *x, const float *y, int64_t count) {
  (void)be;
  for (int64_t i = 0; i < count; i++) x[i] += y[i];
  return XPI_OK;
}

typedef struct {
  int32_t *out;
  const float *x;
  int32_t rows, cols;
} argmax_job;

static void argmax_run(void *ctx, int ith, int nth) {
  argmax_job *j = ctx;
  int64_t b, e;
  xpi_pool_range(j->rows, ith, nth, 1, &b, &e);
  for (int64_t r = b; r < e; r++) {
    const float *p = j->x + (size_t)r * (size_t)j->cols;
    int32_t best = 0, finite = 1;
    for (int32_t c = 0; c < j->cols; c++) {
      finite &= p[c] - p[c] == 0; /* false for NaN and infinities */
      if (p[c] > p[best]) best = c;
    }
    j->out[r] = finite ? best : -1;
  }
}

/* Rows in parallel (a batched decode step takes one per sequence). */
static xpi_status cpu_argmax(xpi_backend *be, int32_t *out, const float *x, int32_t rows, int32_t cols) {
  argmax_job j = {out, x, rows, cols};
  if (rows == 1) argmax_run(&j, 0, 1);
  else xpi_pool_run(impl_of(be)->pool, argmax_run, &j);
  return XPI_OK;
}

typedef struct {
  int32_t *ids;
  float *vals, *norm;
  const float *x;
  int32_t rows, cols, k;
} topk_job;

static void topk_run(void *ctx, int ith, int nth) {
  topk_job *j = ctx;
  const int32_t k = j->k;
  int64_t b, e;
  xpi_pool_range(j->rows, ith, nth, 1, &b, &e);
  for (int64_t r = b; r < e; r++) {
    const float *p = j->x + (size_t)r * (size_t)j->cols;
    int32_t *ids = j->ids + (size_t)r * (size_t)k, have = 0, finite = 1;
    float *vals = j->vals + (size_t)r * (size_t)k;
    for (int32_t c = 0; c < j->cols; c++) { /* insertion into the best k; an equal value goes after (lower id first) */
      const float v = p[c];
      finite &= v - v == 0;
      if (have == k && !(v > vals[k - 1])) continue;
      int32_t i = have < k ? have++ : k - 1;
      for (; i > 0 && v > vals[i - 1]; i--) vals[i] = vals[i - 1], ids[i] = ids[i - 1];
      vals[i] = v, ids[i] = c;
    }
    if (!finite) {
      for (int32_t i = 0; i < k; i++) ids[i] = -1;
      continue;
    }
    double sum = 0; /* in index order, as the host's logprobs (xpi_logprobs_top) */
    for (int32_t c = 0; c < j->cols; c++) sum += exp((double)p[c] - vals[0]);
    j->norm[2 * r] = vals[0];
    j->norm[2 * r + 1] = (float)sum;
  }
}

static xpi_status cpu_topk(xpi_backend *be, int32_t *ids, float *vals, float *norm, const float *x, int32_t rows,
                           int32_t cols, int32_t k) {
  if (rows <= 0) return XPI_OK;
  if (k <= 0 || k > cols) return xpi_err(XPI_ERR_INTERNAL, "cpu: top-%d of %d values", k, cols);
  topk_job j = {ids, vals, norm, x, rows, cols, k};
  if (rows == 1) topk_run(&j, 0, 1);
  else xpi_pool_run(impl_of(be)->pool, topk_run, &j);
  return XPI_OK;
}

/* ------------------------------------------------------------------ mixture of experts (moe_cpu.c) */

static xpi_status cpu_moe_route(xpi_backend *be, int32_t *ids, float *wts, const float *logits, int32_t n,
                                int32_t n_experts, int32_t k, int norm_topk) {
  return xpi_cpu_moe_route(impl_of(be)->pool, ids, wts, logits, n, n_experts, k, norm_topk);
}

static xpi_status cpu_moe_matmul(xpi_backend *be, float *out, const float *in, int32_t in_k, const xpi_experts *e,
                                 const int32_t *ids, int32_t n, int32_t k) {
  const cpu_impl *im = impl_of(be);
  return xpi_cpu_moe_matmul(im->pool, im->ws, im->k, out, in, in_k, e, ids, n, k);
}

/* The fused form where moe_cpu.c has one (prefill), else the composition it equals bit for bit. */
static xpi_status cpu_moe_mlp(xpi_backend *be, float *out, int32_t *pos, float *g, float *u, const float *in,
                              const xpi_experts *gate, const xpi_experts *up, const xpi_experts *down,
                              const int32_t *ids, int32_t n, int32_t k) {
  cpu_impl *im = impl_of(be);
  int done = 0;
  if (be->use_kernels)
    XPI_TRY(xpi_cpu_moe_mlp(im->pool, im->ws, im->k, out, pos, g, u, in, gate, up, down, ids, n, k, &done));
  if (done) return XPI_OK;
  for (int64_t s = 0; s < (int64_t)n * k; s++) pos[s] = (int32_t)s;
  XPI_TRY(cpu_moe_matmul(be, g, in, 1, gate, ids, n, k));
  XPI_TRY(cpu_moe_matmul(be, u, in, 1, up, ids, n, k));
  XPI_TRY(cpu_swiglu(be, g, g, u, n * k, (int32_t)gate->rows));
  return cpu_moe_matmul(be, out, g, k, down, ids, n, k);
}

static xpi_status cpu_moe_combine(xpi_backend *be, float *out, const float *y, const int32_t *pos, const float *wts,
                                  const float *shared, const float *shared_gate, int32_t n, int32_t k, int32_t d) {
  return xpi_cpu_moe_combine(impl_of(be)->pool, out, y, pos, wts, shared, shared_gate, n, k, d);
}

/* ------------------------------------------------------------------ construction */

static void cpu_destroy(xpi_backend *be) {
  if (!be) return;
  if (be->impl) {
    xpi_pool_free(impl_of(be)->pool);
    xpi_cpu_mm_ws_free(impl_of(be)->ws);
  }
  free(be->impl);
  free(be);
}

static void cpu_describe(const xpi_backend *be, xpi_dtype wdt, char *out, size_t cap) {
  const xpi_cpu_kernels *k = ((const cpu_impl *)be->impl)->k;
  if (wdt < 0 || wdt >= 8 || !k->gemv[wdt]) {
    snprintf(out, cap, "%s", k->isa);
    return;
  }
  char batched[48] = "";
  if (k->smalln[wdt])
    snprintf(batched, sizeof batched, ", %d-%d tokens %s", XPI_CPU_GEMM_MIN_N, k->smalln_max[wdt], k->smalln_isa);
  snprintf(out, cap, "%s (%s: decode %s%s, prefill %s)", k->isa, xpi_dtype_name(wdt), k->gemv_isa[wdt], batched,
           k->gemm[wdt] ? k->gemm[wdt]->name : k->gemv_isa[wdt]);
}

/* The fused ops as their composition: the reference the XPU's one-launch forms are tested against. */

/* h of the fused matmuls: in itself, or rmsnorm(in) in hbuf (rmsnorm writes x only with a residual). */
static xpi_status cpu_fused_in(xpi_backend *be, const float *in, const xpi_weight *norm, float eps, float *hbuf,
                               int64_t cols, int32_t n, const float **h) {
  *h = in;
  if (!norm) return XPI_OK;
  XPI_TRY(cpu_rmsnorm(be, hbuf, (float *)in, NULL, norm, n, (int32_t)cols, eps));
  *h = hbuf;
  return XPI_OK;
}

static xpi_status cpu_matmul_multi(xpi_backend *be, int count, float *const *outs, const float *in,
                                   const xpi_weight *norm, float eps, float *hbuf, const xpi_weight *const *ws,
                                   const xpi_weight *const *biases, int32_t n) {
  if (count < 1 || count > 3) return xpi_err(XPI_ERR_INTERNAL, "cpu: matmul_multi over %d weights (1..3)", count);
  const float *h;
  XPI_TRY(cpu_fused_in(be, in, norm, eps, hbuf, ws[0]->cols, n, &h));
  for (int j = 0; j < count; j++) XPI_TRY(cpu_matmul(be, outs[j], h, ws[j], biases ? biases[j] : NULL, n));
  return XPI_OK;
}

static xpi_status cpu_matmul_glu(xpi_backend *be, float *out, float *tmp, const float *in, const xpi_weight *norm,
                                 float eps, float *hbuf, const xpi_weight *gate, const xpi_weight *up, xpi_glu_act act,
                                 int32_t n) {
  const float *h;
  XPI_TRY(cpu_fused_in(be, in, norm, eps, hbuf, gate->cols, n, &h));
  XPI_TRY(cpu_matmul(be, out, h, gate, NULL, n));
  XPI_TRY(cpu_matmul(be, tmp, h, up, NULL, n));
  int32_t f = (int32_t)gate->rows;
  return act == XPI_GLU_GELU_TANH ? cpu_geglu(be, out, out, tmp, n, f) : cpu_swiglu(be, out, out, tmp, n, f);
}

static xpi_status cpu_matmul_add(xpi_backend *be, float *x, float *tmp, const float *in, const xpi_weight *w,
                                 const xpi_weight *bias, int32_t n) {
  XPI_TRY(cpu_matmul(be, tmp, in, w, bias, n));
  return cpu_add(be, x, tmp, (int64_t)n * w->rows);
}

/* What the CPU runs (ops.h: supports): matmuls and experts of the dtypes its kernel table has a GEMV for,
 * embeddings and norms of float weights, rope of an even head_dim up to 1024 (cpu_rope). */
static int cpu_supports(const xpi_backend *be, const xpi_op_desc *d) {
  const cpu_impl *im = (const cpu_impl *)be->impl;
  const int flt = d->wdtype == XPI_DT_F32 || d->wdtype == XPI_DT_F16 || d->wdtype == XPI_DT_BF16;
  switch (d->op) {
    case XPI_OP_MATMUL: case XPI_OP_MATMUL_MULTI: case XPI_OP_MATMUL_GLU: case XPI_OP_MATMUL_ADD:
    case XPI_OP_MOE_MATMUL: case XPI_OP_MOE_MLP:
      return d->wdtype >= 0 && d->wdtype < 8 && im->k->gemv[d->wdtype] != NULL;
    case XPI_OP_EMBED: case XPI_OP_RMSNORM: return flt;
    case XPI_OP_ROPE: return d->head_dim == 0 || (d->head_dim > 0 && d->head_dim % 2 == 0 && d->head_dim <= 1024);
    default: return 1;
  }
}

static const xpi_backend_ops k_cpu_ops = {
  .name = "cpu",
  .destroy = cpu_destroy,
  .alloc = cpu_alloc,
  .free = cpu_free,
  .write = cpu_write,
  .read = cpu_read,
  .weight_create = cpu_weight_create,
  .weight_free = cpu_weight_free,
  .kv_create = cpu_kv_create,
  .kv_free = cpu_kv_free,
  .embed = cpu_embed,
  .rmsnorm = cpu_rmsnorm,
  .matmul = cpu_matmul,
  .rope = cpu_rope,
  .attention = cpu_attention,
  .swiglu = cpu_swiglu,
  .geglu = cpu_geglu,
  .softcap = cpu_softcap,
  .scale = cpu_scale,
  .add = cpu_add,
  .argmax = cpu_argmax,
  .topk = cpu_topk,
  .moe_route = cpu_moe_route,
  .moe_matmul = cpu_moe_matmul,
  .moe_combine = cpu_moe_combine,
  .moe_mlp = cpu_moe_mlp,
  .capture_begin = NULL,
  .capture_end = NULL,
  .replay = NULL,
  .graph_free = NULL,
  .sync = cpu_sync,
  .free_memory = cpu_free_memory,
  .supports = cpu_supports,
  .matmul_multi = cpu_matmul_multi,
  .matmul_glu = cpu_matmul_glu,
  .matmul_add = cpu_matmul_add,
};

xpi_status xpi_backend_cpu_create(const xpi_backend_config *cfg, xpi_backend **out) {
  *out = NULL;
  xpi_backend *be = calloc(1, sizeof *be);
  cpu_impl *im = calloc(1, sizeof *im);
  if (!be || !im) {
    free(be);
    free(im);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "cpu backend: out of memory");
  }
  be->ops = &k_cpu_ops;
  be->impl = im;
  be->use_kernels = cfg ? cfg->use_kernels : 1;
  be->describe = cpu_describe;
  snprintf(be->device, sizeof be->device, "cpu");
  im->k = be->use_kernels ? xpi_cpu_kernels_best() : xpi_cpu_kernels_scalar();
  im->ws = xpi_cpu_mm_ws_create(); /* may be NULL: then each matmul allocates its own */
  xpi_status s = xpi_pool_create(cfg ? cfg->n_threads : 0, &im->pool);
  if (s != XPI_OK) {
    cpu_destroy(be);
    return s;
  }
  *out = be;
  return XPI_OK;
}
