/* The experts' MLP of a MoE prefill on the CPU (ops.h moe_mlp, moe_cpu.h): down(silu(x W_g^T) * (x W_u^T)) for
 * every slot, in four pool dispatches per group of experts instead of the composition's two (pack, tiles) per
 * expert and projection:
 *   1. each expert's gathered tokens packed once (the prefill GEMM's layout), for gate and up both;
 *   2. (expert, block of rows) units: gate and up rows of the block over all the expert's tokens, and the
 *      SwiGLU of the block as their epilogue while it is in L1, into g (slots sorted by expert);
 *   3. each expert's SwiGLU rows packed for down (contiguous in g: no gather);
 *   4. (expert, block of down rows) units, written to out in the same order (grouped by expert): pos[s] tells
 *      moe_combine which row holds slot s, so no row is copied to its slot (that scatter, 128 or 512 bytes at a
 *      time, was ~5% of a MoE prefill).
 * Threads claim units in turn (an atomic counter), so both stay busy to the end of a phase whatever the tokens
 * per expert; at ~64 tokens an expert, the composition's per-expert phases (pack, then tiles of one matrix)
 * left a thread waiting at each of ~400 barriers a layer.
 *
 * Bit for bit the composition (moe_matmul gate, up; swiglu; moe_matmul down): each expert runs the kernel
 * xpi_cpu_matmul would pick for its token count (GEMV, small-n, or the GEMM, whose outputs are one sum each in a
 * fixed order for any split of rows and tokens, cpu_kernels.h), and SwiGLU sees whole 16-element runs on both
 * paths (intermediate sizes that are multiples of 16 only; others take the composition). */
#include "ops/cpu/moe_cpu.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "ops/cpu/cpu_isa.h"

/* Prepared inputs of one group of experts stay under this (the packed bf16 terms of a token are 6 bytes a
 * column: 512 tokens x top-8 x 1024 columns would be 25 MB at once); more experts take more groups. */
#define MOE_MLP_GROUP_BYTES ((size_t)8 << 20)
#define MOE_MLP_ROWS 32 /* rows per unit: the AMX GEMM's panel (2 x 16), a multiple of every table's row_align */
#define MOE_MLP_DOWN_ROWS (4 * MOE_MLP_ROWS) /* fewer, longer units for down (measured: less claiming) */

enum { K_GEMV, K_SMALLN, K_GEMM };

typedef struct {
  const xpi_cpu_kernels *kt;
  const xpi_cpu_gemm *gm;
  xpi_dtype dt;
  const xpi_experts *gate, *up, *down;
  const float *in;
  float *out, *g, *u; /* out [S, H], g, u [S, I]: row i the slot order[i] (sorted by expert) */
  int32_t k;
  int64_t H, I;
  const int32_t *start, *order;
  const int32_t *ex; /* the group's experts (with tokens) */
  const size_t *off; /* each one's prepared input in P (gate/up phase, then reused by the down phase) */
  int32_t nex;
  char *P;
  float *X;                   /* per thread: [most, H] gathered rows (phase 1) */
  size_t x_stride, s_stride; /* floats per thread of X; bytes per thread of scratch */
  char *scratch;
  atomic_int next;
} mlp_job;

static int kind_of(const xpi_cpu_kernels *kt, xpi_dtype dt, int32_t m) {
  if (m < XPI_CPU_GEMM_MIN_N) return K_GEMV;
  if (kt->smalln[dt] && m <= kt->smalln_max[dt]) return K_SMALLN;
  return kt->gemm[dt] ? K_GEMM : K_GEMV;
}

static xpi_cpu_mm_fn rows_fn(const mlp_job *j, int kind) {
  return kind == K_SMALLN ? j->kt->smalln[j->dt] : j->kt->gemv[j->dt];
}

static size_t up64(size_t b) { return (b + 63) & ~(size_t)63; }

/* Bytes of an expert's prepared input of cols columns: packed for the GEMM, gathered f32 rows for the others
 * (phase 1; phase 3's row kernels read g in place). */
static size_t prep_bytes(const xpi_cpu_kernels *kt, xpi_dtype dt, int32_t m, int64_t cols, int gathered) {
  const int kind = kind_of(kt, dt, m);
  if (kind == K_GEMM) return up64(kt->gemm[dt]->pack_bytes(m, cols));
  return gathered ? up64((size_t)m * (size_t)cols * sizeof(float)) : 0;
}

/* Phase 1: expert ex[i]'s tokens gathered (and packed for the GEMM). */
static void prep_in_run(void *ctx, int ith, int nth) {
  (void)nth;
  mlp_job *j = ctx;
  for (int i; (i = atomic_fetch_add(&j->next, 1)) < j->nex;) {
    const int32_t x = j->ex[i], m = j->start[x + 1] - j->start[x], *sl = j->order + j->start[x];
    const int kind = kind_of(j->kt, j->dt, m);
    if (kind == K_GEMM && j->gm->pack_rows) { /* gathered while packing */
      int32_t *rows = (int32_t *)(j->X + (size_t)ith * j->x_stride);
      for (int32_t t = 0; t < m; t++) rows[t] = sl[t] / j->k;
      j->gm->pack_rows(j->P + j->off[i], j->in, rows, m, j->H, 0, m);
      continue;
    }
    float *X = kind == K_GEMM ? j->X + (size_t)ith * j->x_stride : (float *)(j->P + j->off[i]);
    for (int32_t t = 0; t < m; t++)
      memcpy(X + (size_t)t * (size_t)j->H, j->in + (int64_t)(sl[t] / j->k) * j->H, (size_t)j->H * sizeof *X);
    if (kind == K_GEMM) j->gm->pack(j->P + j->off[i], X, m, j->H, 0, m);
  }
}

/* Phase 2: gate and up rows [r0, r1) of expert ex[i] over its tokens, then g = silu(g) * u there. */
static void gate_up_run(void *ctx, int ith, int nth) {
  (void)nth;
  mlp_job *j = ctx;
  const int32_t nb = (int32_t)((j->I + MOE_MLP_ROWS - 1) / MOE_MLP_ROWS);
  void *S = j->scratch + (size_t)ith * j->s_stride;
  for (int q; (q = atomic_fetch_add(&j->next, 1)) < j->nex * nb;) {
    const int32_t i = q / nb, x = j->ex[i], m = j->start[x + 1] - j->start[x];
    const int64_t r0 = (int64_t)(q % nb) * MOE_MLP_ROWS, r1 = r0 + MOE_MLP_ROWS < j->I ? r0 + MOE_MLP_ROWS : j->I;
    float *G = j->g + (int64_t)j->start[x] * j->I, *U = j->u + (int64_t)j->start[x] * j->I;
    const xpi_weight *wg = &j->gate->w[x], *wu = &j->up->w[x];
    const void *P = j->P + j->off[i];
    const int kind = kind_of(j->kt, j->dt, m);
    if (kind == K_GEMM) {
      /* up's rows (contiguous) on their way into the caches while gate's run: each expert's weights come from
       * memory once a step, and the GEMM's panel copy would otherwise wait for them */
      const size_t es = xpi_dtype_size(j->dt);
      if (es)
        for (size_t b = 0, nb = (size_t)(r1 - r0) * (size_t)j->H * es; b < nb; b += 64)
          __builtin_prefetch((const char *)wu->data + (size_t)r0 * (size_t)j->H * es + b, 0, 2);
      j->gm->run(G, j->I, P, m, wg->data, wg->aux, j->H, r0, r1, 0, m, S);
      j->gm->run(U, j->I, P, m, wu->data, wu->aux, j->H, r0, r1, 0, m, S);
    } else {
      rows_fn(j, kind)(G, j->I, P, m, wg->data, wg->aux, r0, r1, j->H);
      rows_fn(j, kind)(U, j->I, P, m, wu->data, wu->aux, r0, r1, j->H);
    }
    for (int32_t t = 0; t < m; t++) {
      float *gr = G + (int64_t)t * j->I + r0;
      j->kt->swiglu(gr, gr, U + (int64_t)t * j->I + r0, r1 - r0);
    }
  }
}

/* Phase 3: expert ex[i]'s SwiGLU rows packed for down (GEMM experts only). */
static void prep_down_run(void *ctx, int ith, int nth) {
  (void)ith, (void)nth;
  mlp_job *j = ctx;
  for (int i; (i = atomic_fetch_add(&j->next, 1)) < j->nex;) {
    const int32_t x = j->ex[i], m = j->start[x + 1] - j->start[x];
    if (kind_of(j->kt, j->dt, m) == K_GEMM) j->gm->pack(j->P + j->off[i], j->g + (int64_t)j->start[x] * j->I, m, j->I, 0, m);
  }
}

/* Phase 4: down rows [r0, r1) of expert ex[i] over its tokens, into its rows of out (sorted order). */
static void down_run(void *ctx, int ith, int nth) {
  (void)nth;
  mlp_job *j = ctx;
  const int32_t nb = (int32_t)((j->H + MOE_MLP_DOWN_ROWS - 1) / MOE_MLP_DOWN_ROWS);
  void *S = j->scratch + (size_t)ith * j->s_stride;
  for (int q; (q = atomic_fetch_add(&j->next, 1)) < j->nex * nb;) {
    const int32_t i = q / nb, x = j->ex[i], m = j->start[x + 1] - j->start[x];
    const int64_t r0 = (int64_t)(q % nb) * MOE_MLP_DOWN_ROWS;
    const int64_t r1 = r0 + MOE_MLP_DOWN_ROWS < j->H ? r0 + MOE_MLP_DOWN_ROWS : j->H;
    const xpi_weight *w = &j->down->w[x];
    float *Y = j->out + (int64_t)j->start[x] * j->H;
    const int kind = kind_of(j->kt, j->dt, m);
    if (kind == K_GEMM) j->gm->run(Y, j->H, j->P + j->off[i], m, w->data, w->aux, j->I, r0, r1, 0, m, S);
    else rows_fn(j, kind)(Y, j->H, j->g + (int64_t)j->start[x] * j->I, m, w->data, w->aux, r0, r1, j->I);
  }
}

static void phase(xpi_pool *pool, xpi_pool_fn fn, mlp_job *j, int64_t units) {
  const int nth = xpi_pool_size(pool);
  atomic_store(&j->next, 0);
  xpi_pool_run_n(pool, fn, j, (int)(units < nth ? units : nth));
}

xpi_status xpi_cpu_moe_mlp(xpi_pool *pool, xpi_cpu_mm_ws *ws, const xpi_cpu_kernels *kt, float *out, int32_t *pos,
                           float *g, float *u, const float *in, const xpi_experts *gate, const xpi_experts *up,
                           const xpi_experts *down, const int32_t *ids, int32_t n, int32_t k, int *done) {
  *done = 0;
  const xpi_dtype dt = gate->w[0].dtype;
  const int64_t S = (int64_t)n * k, H = gate->cols, I = gate->rows;
  if (S <= 0 || dt < 0 || dt >= 8 || !kt->gemm[dt] || !kt->gemv[dt] || up->w[0].dtype != dt ||
      down->w[0].dtype != dt || up->n != gate->n || down->n != gate->n || up->rows != I || up->cols != H ||
      down->rows != H || down->cols != I || I % 16 != 0 || MOE_MLP_ROWS % kt->gemm[dt]->row_align != 0)
    return XPI_OK;
  int32_t *start, *order, most;
  XPI_TRY(xpi_cpu_moe_sort(ids, S, gate->n, &start, &order, &most));
  if (kind_of(kt, dt, most) != K_GEMM) { /* decode and small batches: the composition's fused GEMVs */
    free(start), free(order);
    return XPI_OK;
  }
  const int nth = xpi_pool_size(pool);
  int32_t *ex = malloc((size_t)gate->n * sizeof *ex);
  size_t *off = malloc((size_t)gate->n * sizeof *off);
  /* room for a group's prepared inputs: all of them, or the cap (at least the largest expert's) */
  size_t all = 0, big = 0;
  for (int32_t x = 0; x < gate->n; x++) {
    const int32_t m = start[x + 1] - start[x];
    const size_t b = m ? prep_bytes(kt, dt, m, H, 1) : 0, bd = m ? prep_bytes(kt, dt, m, I, 0) : 0;
    all += b > bd ? b : bd, big = b > big ? b : bd > big ? bd : big;
  }
  const size_t pbytes = all < MOE_MLP_GROUP_BYTES ? all : big > MOE_MLP_GROUP_BYTES ? big : MOE_MLP_GROUP_BYTES;
  const size_t sc = kt->gemm[dt]->scratch_bytes(H), sd = kt->gemm[dt]->scratch_bytes(I);
  mlp_job j = {.kt = kt, .gm = kt->gemm[dt], .dt = dt, .gate = gate, .up = up, .down = down, .in = in, .out = out,
               .g = g, .u = u, .k = k, .H = H, .I = I, .start = start, .order = order, .ex = ex, .off = off};
  j.x_stride = up64((size_t)most * (size_t)H * sizeof(float)) / sizeof(float);
  j.s_stride = up64(sc > sd ? sc : sd);
  const size_t total = pbytes + (size_t)nth * (j.x_stride * sizeof(float) + j.s_stride);
  char *buf = NULL, *own = NULL;
  if (ex && off) buf = ws ? xpi_cpu_mm_ws_lock(ws, total) : (own = aligned_alloc(64, up64(total)));
  if (!buf) {
    free(start), free(order), free(ex), free(off);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "cpu: moe_mlp: out of memory for %zu bytes of buffers", total);
  }
  j.P = buf, j.X = (float *)(buf + pbytes), j.scratch = buf + pbytes + (size_t)nth * j.x_stride * sizeof(float);
  /* slot order[i] in row i; the slots of no expert (a NaN router row) after them, as zero rows */
  for (int32_t i = 0; i < start[gate->n]; i++) pos[order[i]] = i;
  for (int64_t s = 0, r = start[gate->n]; s < S; s++)
    if (ids[s] < 0 || ids[s] >= gate->n) pos[s] = (int32_t)r, memset(out + r++ * H, 0, (size_t)H * sizeof *out);
  for (int32_t x0 = 0; x0 < gate->n;) { /* groups of experts whose prepared inputs fit pbytes */
    size_t at = 0, atd = 0;
    j.nex = 0;
    int32_t x = x0;
    for (; x < gate->n; x++) {
      const int32_t m = start[x + 1] - start[x];
      if (!m) continue;
      const size_t b = prep_bytes(kt, dt, m, H, 1), bd = prep_bytes(kt, dt, m, I, 0);
      if (j.nex && (at + b > pbytes || atd + bd > pbytes)) break;
      ex[j.nex] = x, off[j.nex++] = at, at += b, atd += bd;
    }
    x0 = x;
    if (!j.nex) continue;
    phase(pool, prep_in_run, &j, j.nex);
    phase(pool, gate_up_run, &j, (int64_t)j.nex * ((I + MOE_MLP_ROWS - 1) / MOE_MLP_ROWS));
    /* down's packed inputs in the same space, at their own offsets */
    atd = 0;
    for (int32_t i = 0; i < j.nex; i++) {
      off[i] = atd;
      atd += prep_bytes(kt, dt, start[ex[i] + 1] - start[ex[i]], I, 0);
    }
    phase(pool, prep_down_run, &j, j.nex);
    phase(pool, down_run, &j, (int64_t)j.nex * ((H + MOE_MLP_DOWN_ROWS - 1) / MOE_MLP_DOWN_ROWS));
  }
  if (ws) xpi_cpu_mm_ws_unlock(ws);
  free(own), free(start), free(order), free(ex), free(off);
  *done = 1;
  return XPI_OK;
}
