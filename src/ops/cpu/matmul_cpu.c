/* The CPU matmul driver (matmul_cpu.h): decode runs the table's GEMV over row slices (a batched decode of float
 * weights its small-n kernel), prefill its phased GEMM:
 * the activations packed once (threads packing disjoint token ranges), then tiles of rows x tokens.
 *
 * Why tiles: with rows alone, a matrix of few row panels leaves threads idle (1024 rows are 64 panels of 16,
 * so 4 per thread at 16 threads, and fewer past that), and a thread's share cannot shrink below one panel.
 * Cutting tokens too keeps every thread busy; the price is that a weight panel a tile converts (q4 unpacking,
 * the AVX2 GEMM's f32 panels) is converted once per token part, so tokens are cut only where that evens the
 * load (xpi_cpu_mm_grid).
 *
 * A tile's tokens run in blocks whose packed activations fit in 3/4 of the L2 cache: the GEMMs stream all of a
 * call's token panels once per weight panel, and past L2 they come from L3. On a 2-core Xeon VM (2 MiB L2), 512
 * tokens of Qwen3-0.6B-shaped bf16 terms (3 MiB) made the MoE models' attention projections and Qwen2-MoE's
 * shared expert 8-15% slower than in the dense models' 256-token steps (bench/2026-12-02-moe-xeon2-tokblocks.md);
 * blocks cost one more weight-panel preparation each, as a shorter step would. */
#include "ops/cpu/matmul_cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops/cpu/cpu_isa.h"

struct xpi_cpu_mm_ws {
  pthread_mutex_t m;
  void *pack, *scratch, *own;
  size_t pack_cap, scratch_cap, own_cap;
};

xpi_cpu_mm_ws *xpi_cpu_mm_ws_create(void) {
  xpi_cpu_mm_ws *ws = calloc(1, sizeof *ws);
  if (ws) pthread_mutex_init(&ws->m, NULL);
  return ws;
}

void xpi_cpu_mm_ws_free(xpi_cpu_mm_ws *ws) {
  if (!ws) return;
  free(ws->pack);
  free(ws->scratch);
  free(ws->own);
  pthread_mutex_destroy(&ws->m);
  free(ws);
}

/* A 64-byte aligned buffer of at least `bytes` in *buf (capacity *cap), reusing it when large enough. */
static void *grow(void **buf, size_t *cap, size_t bytes) {
  bytes = (bytes + 63) & ~(size_t)63;
  if (bytes == 0) bytes = 64;
  if (*cap >= bytes) return *buf;
  void *p = aligned_alloc(64, bytes);
  if (!p) return NULL;
  free(*buf);
  *buf = p;
  *cap = bytes;
  return p;
}

void *xpi_cpu_mm_ws_lock(xpi_cpu_mm_ws *ws, size_t bytes) {
  pthread_mutex_lock(&ws->m);
  void *p = grow(&ws->own, &ws->own_cap, bytes);
  if (!p) pthread_mutex_unlock(&ws->m);
  return p;
}

void xpi_cpu_mm_ws_unlock(xpi_cpu_mm_ws *ws) { pthread_mutex_unlock(&ws->m); }

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Makespan of a grid: rounds of tiles per thread times the largest tile, whose cost is its row units times its
 * token units plus one (preparing a tile's weight panels costs about one token unit's products). */
static int64_t grid_cost(int64_t ur, int64_t ut, int nth, int64_t pr, int64_t pt) {
  return ceil_div(pr * pt, nth) * ceil_div(ur, pr) * (ceil_div(ut, pt) + 1);
}

void xpi_cpu_mm_grid(int64_t ur, int64_t ut, int nth, int64_t *pr, int64_t *pt) {
  *pr = ur < nth ? ur : nth, *pt = 1;
  if (ur <= 0 || ut <= 0 || nth <= 1 || ur >= 4 * (int64_t)nth) return; /* rows alone: within 25% of even */
  int64_t best = grid_cost(ur, ut, nth, *pr, *pt);
  const int64_t max_pt = ut < 4 * (int64_t)nth ? ut : 4 * (int64_t)nth;
  for (int64_t t = 1; t <= max_pt; t++)
    for (int64_t q = ur; q >= 1; q--) { /* q = row units per tile; r = the fewest row parts that give it */
      const int64_t r = ceil_div(ur, q), c = grid_cost(ur, ut, nth, r, t);
      if (c < best) best = c, *pr = r, *pt = t;
    }
}

/* ------------------------------------------------------------------ jobs */

typedef struct {
  const xpi_cpu_kernels *k;
  xpi_dtype dt;
  float *Y;
  int64_t ldy;
  const float *X;
  int32_t n;
  const void *W, *aux;
  int64_t r0, r1, cols;
  /* prefill */
  const xpi_cpu_gemm *g;
  void *P;
  char *scratch;
  size_t scratch_stride;
  int64_t pr, pt; /* tile grid */
  int64_t tb;     /* tokens per run call (a multiple of tok_align) */
  xpi_cpu_mm_fn rows; /* decode: the GEMV or the small-n kernel, over row slices */
} mm_job;

static void gemv_run(void *ctx, int ith, int nth) {
  const mm_job *j = ctx;
  int64_t b, e;
  xpi_pool_range(j->r1 - j->r0, ith, nth, 8, &b, &e);
  if (b < e) j->rows(j->Y, j->ldy, j->X, j->n, j->W, j->aux, j->r0 + b, j->r0 + e, j->cols);
}

static void pack_run(void *ctx, int ith, int nth) {
  const mm_job *j = ctx;
  int64_t b, e;
  xpi_pool_range(j->n, ith, nth, j->g->tok_align, &b, &e);
  if (b < e) j->g->pack(j->P, j->X, j->n, j->cols, (int32_t)b, (int32_t)e);
}

static void tiles_run(void *ctx, int ith, int nth) {
  const mm_job *j = ctx;
  const int64_t ra = j->g->row_align, ta = j->g->tok_align;
  void *S = j->scratch + (size_t)ith * j->scratch_stride;
  for (int64_t tile = ith; tile < j->pr * j->pt; tile += nth) {
    int64_t rb, re, tb, te;
    xpi_pool_range(j->r1 - j->r0, (int)(tile % j->pr), (int)j->pr, ra, &rb, &re);
    xpi_pool_range(j->n, (int)(tile / j->pr), (int)j->pt, ta, &tb, &te);
    if (rb < re)
      for (int64_t b = tb; b < te; b += j->tb)
        j->g->run(j->Y, j->ldy, j->P, j->n, j->W, j->aux, j->cols, j->r0 + rb, j->r0 + re, (int32_t)b,
                  (int32_t)(te - b < j->tb ? te : b + j->tb), S);
  }
}

static size_t l2_budget = 1 << 20; /* bytes of packed activations per run call; 1 MiB where L2 is not reported */
static pthread_once_t l2_once = PTHREAD_ONCE_INIT;
static void l2_read(void) {
#ifdef _SC_LEVEL2_CACHE_SIZE
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE); /* glibc: from CPUID; 0 or -1 where unknown */
  if (l2 >= 256 * 1024) l2_budget = (size_t)l2 / 4 * 3;
#endif
}

/* Tokens per run call: the most, in whole tok_align units (at least one), whose packed activations fit the budget. */
static int64_t token_block(const xpi_cpu_gemm *g, int64_t cols, int32_t n) {
  pthread_once(&l2_once, l2_read);
  const int64_t ta = g->tok_align, probe = 16 * ta;
  const size_t per = g->pack_bytes((int32_t)probe, cols) / (size_t)probe; /* bytes per token */
  int64_t tb = per ? (int64_t)(l2_budget / per) / ta * ta : n;
  return tb < ta ? ta : tb;
}

void xpi_cpu_matmul(xpi_pool *pool, xpi_cpu_mm_ws *ws, const xpi_cpu_kernels *k, xpi_dtype dt, float *Y,
                    int64_t ldy, const float *X, int32_t n, const void *W, const void *aux, int64_t r0, int64_t r1,
                    int64_t cols) {
  const int nth = xpi_pool_size(pool);
  mm_job j = {k, dt, Y, ldy, X, n, W, aux, r0, r1, cols, k->gemm[dt], NULL, NULL, 0, 1, 1, 0, k->gemv[dt]};
  const int smalln = n >= XPI_CPU_GEMM_MIN_N && k->smalln[dt] && n <= k->smalln_max[dt];
  if (smalln) j.rows = k->smalln[dt];
  if (n < XPI_CPU_GEMM_MIN_N || smalln || !j.g || r1 <= r0) {
    xpi_pool_run_n(pool, gemv_run, &j, (int)(r1 - r0 < nth ? (r1 - r0 > 0 ? r1 - r0 : 1) : nth));
    return;
  }
  const int64_t ur = ceil_div(r1 - r0, j.g->row_align), ut = ceil_div(n, j.g->tok_align);
  xpi_cpu_mm_grid(ur, ut, nth, &j.pr, &j.pt);
  j.tb = token_block(j.g, cols, n);
  const int64_t tiles = j.pr * j.pt, workers = tiles < nth ? tiles : nth;
  j.scratch_stride = (j.g->scratch_bytes(cols) + 63) & ~(size_t)63;
  const size_t pbytes = j.g->pack_bytes(n, cols), sbytes = j.scratch_stride * (size_t)workers;
  void *own_p = NULL, *own_s = NULL;
  if (ws) {
    pthread_mutex_lock(&ws->m);
    j.P = grow(&ws->pack, &ws->pack_cap, pbytes);
    j.scratch = grow(&ws->scratch, &ws->scratch_cap, sbytes);
  } else {
    j.P = own_p = aligned_alloc(64, (pbytes + 63) & ~(size_t)63);
    j.scratch = own_s = aligned_alloc(64, sbytes ? sbytes : 64);
  }
  if (j.P && j.scratch && pbytes != (size_t)-1 && sbytes / (workers ? (size_t)workers : 1) == j.scratch_stride) {
    xpi_pool_run_n(pool, pack_run, &j, (int)(ut < nth ? ut : nth));
    xpi_pool_run_n(pool, tiles_run, &j, (int)workers);
  } else { /* out of memory for the buffers: the GEMV, a few tokens at a time */
    for (int32_t t = 0; t < n; t += XPI_CPU_GEMM_MIN_N - 1) {
      mm_job c = j;
      c.Y = Y + (int64_t)t * ldy, c.X = X + (int64_t)t * cols;
      c.n = n - t < XPI_CPU_GEMM_MIN_N - 1 ? n - t : XPI_CPU_GEMM_MIN_N - 1;
      xpi_pool_run(pool, gemv_run, &c);
    }
  }
  if (ws) pthread_mutex_unlock(&ws->m);
  free(own_p);
  free(own_s);
}
