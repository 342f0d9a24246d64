/* Mixture of experts on the CPU. moe_matmul groups the step's slots (token, choice) by expert and runs each
 * selected expert once over its gathered rows with the ordinary matmul driver, so a decode step streams only
 * the k chosen experts' weights, prefill reads every expert once for all its tokens, and q8/q4 experts use the
 * same quantized kernels as any matrix. When every chosen expert has fewer tokens than the prefill GEMM takes
 * (decode, small batches), all of their GEMVs run in one pool dispatch over the concatenated rows instead of one
 * dispatch per expert: a decode step of k experts x 3 projections would otherwise synchronize the threads 3k
 * times a layer. */
#include "ops/cpu/moe_cpu.h"
#include "ops/cpu/cpu_isa.h"

#include <math.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

typedef struct {
  int32_t *ids;
  float *wts;
  const float *logits;
  int32_t n, n_experts, k, norm_topk;
} route_job;

/* Tokens [b, e): softmax over the experts, the top k (ties to the lower id), their weights (renormalized). */
static void route_run(void *ctx, int ith, int nth) {
  const route_job *j = ctx;
  int64_t b, e;
  xpi_pool_range(j->n, ith, nth, 1, &b, &e);
  const int32_t n_experts = j->n_experts, k = j->k;
  for (int64_t t = b; t < e; t++) {
    const float *x = j->logits + (size_t)t * (size_t)n_experts;
    int32_t *id = j->ids + (size_t)t * (size_t)k;
    float *w = j->wts + (size_t)t * (size_t)k;
    float mx = x[0];
    int finite = 1;
    for (int32_t e = 0; e < n_experts; e++) finite &= x[e] - x[e] == 0, mx = x[e] > mx ? x[e] : mx;
    if (!finite) {
      for (int32_t i = 0; i < k; i++) id[i] = -1, w[i] = 0;
      continue;
    }
    float sum = 0;
    for (int32_t e = 0; e < n_experts; e++) sum += expf(x[e] - mx);
    int32_t have = 0; /* insertion into the best k by logit (softmax is monotonic); equal goes after */
    for (int32_t e = 0; e < n_experts; e++) {
      if (have == k && !(x[e] > x[id[k - 1]])) continue;
      int32_t i = have < k ? have++ : k - 1;
      for (; i > 0 && x[e] > x[id[i - 1]]; i--) id[i] = id[i - 1];
      id[i] = e;
    }
    float top = 0;
    for (int32_t i = 0; i < k; i++) w[i] = expf(x[id[i]] - mx) / sum, top += w[i];
    if (j->norm_topk)
      for (int32_t i = 0; i < k; i++) w[i] /= top;
  }
}

xpi_status xpi_cpu_moe_route(xpi_pool *pool, int32_t *ids, float *wts, const float *logits, int32_t n,
                             int32_t n_experts, int32_t k, int norm_topk) {
  if (k <= 0 || k > n_experts) return xpi_err(XPI_ERR_INTERNAL, "cpu: moe_route: top-%d of %d experts", k, n_experts);
  route_job j = {ids, wts, logits, n, n_experts, k, norm_topk};
  /* a thread per 16 tokens at least (~1k exponentials at 64 experts): a decode step's one token stays on the caller */
  xpi_pool_run_n(pool, route_run, &j, n / 16 + 1);
  return XPI_OK;
}

xpi_status xpi_cpu_moe_sort(const int32_t *ids, int64_t S, int32_t n_experts, int32_t **start_out,
                            int32_t **order_out, int32_t *most_out) {
  /* counting sort: order[start[x] .. start[x+1]) are expert x's slots, ascending */
  int32_t *start = calloc((size_t)n_experts + 1, sizeof *start), *order = malloc((size_t)(S ? S : 1) * sizeof *order);
  int32_t *fill = malloc((size_t)n_experts * sizeof *fill);
  if (!start || !order || !fill) {
    free(start), free(order), free(fill);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "cpu: moe: out of memory for %lld slots", (long long)S);
  }
  int32_t most = 0;
  for (int64_t s = 0; s < S; s++)
    if (ids[s] >= 0 && ids[s] < n_experts) start[ids[s] + 1]++;
  for (int32_t x = 0; x < n_experts; x++) most = start[x + 1] > most ? start[x + 1] : most, start[x + 1] += start[x];
  memcpy(fill, start, (size_t)n_experts * sizeof *fill);
  for (int64_t s = 0; s < S; s++)
    if (ids[s] >= 0 && ids[s] < n_experts) order[fill[ids[s]]++] = (int32_t)s;
  free(fill);
  *start_out = start, *order_out = order, *most_out = most;
  return XPI_OK;
}

/* One expert's share of a fused decode dispatch: Y[i*R + r] = X[i] . W[r] for its m rows of X. */
typedef struct {
  const void *W, *aux;
  const float *X;
  float *Y;
  int32_t m;
} moe_seg;

typedef struct {
  xpi_cpu_mm_fn gemv;
  const moe_seg *seg;
  int32_t nseg;
  int64_t R, C;
} moe_gemv_job;

/* Rows [b, e) of the concatenation of the segments' R rows each, split across threads in multiples of 8. */
static void moe_gemv_run(void *ctx, int ith, int nth) {
  const moe_gemv_job *j = ctx;
  int64_t b, e;
  xpi_pool_range((int64_t)j->nseg * j->R, ith, nth, 8, &b, &e);
  for (int64_t at = b; at < e;) {
    const int64_t x = at / j->R, r0 = at % j->R, r1 = e - x * j->R < j->R ? e - x * j->R : j->R;
    const moe_seg *sg = &j->seg[x];
    j->gemv(sg->Y, j->R, sg->X, sg->m, sg->W, sg->aux, r0, r1, j->C);
    at = x * j->R + r1;
  }
}

/* Every chosen expert with fewer than XPI_CPU_GEMM_MIN_N slots: one dispatch for all their GEMVs. */
static xpi_status moe_matmul_fused(xpi_pool *pool, const xpi_cpu_kernels *kt, float *out, const float *in,
                                   int32_t in_k, const xpi_experts *e, int32_t k, const int32_t *start,
                                   const int32_t *order, int64_t S) {
  const int64_t R = e->rows, C = e->cols;
  int32_t nseg = 0, gathered = 0;
  for (int32_t x = 0; x < e->n; x++) {
    const int32_t m = start[x + 1] - start[x];
    nseg += m > 0;
    gathered += m > 1 ? m : 0;
  }
  moe_seg *seg = malloc((size_t)(nseg ? nseg : 1) * sizeof *seg);
  float *X = gathered ? malloc((size_t)gathered * (size_t)C * sizeof *X) : NULL;
  float *Y = gathered ? malloc((size_t)gathered * (size_t)R * sizeof *Y) : NULL;
  if (!seg || (gathered && (!X || !Y))) {
    free(seg), free(X), free(Y);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "cpu: moe_matmul: out of memory for %lld slots", (long long)S);
  }
  int32_t g = 0, i = 0;
  for (int32_t x = 0; x < e->n; x++) {
    const int32_t m = start[x + 1] - start[x], *sl = order + start[x];
    if (m == 0) continue; /* never read */
    moe_seg *sg = &seg[i++];
    sg->W = e->w[x].data, sg->aux = e->w[x].aux, sg->m = m;
    if (m == 1) { /* the slot's input row in place, its output row directly */
      sg->X = in + (in_k == 1 ? sl[0] / k : sl[0]) * C, sg->Y = out + (int64_t)sl[0] * R;
      continue;
    }
    for (int32_t t = 0; t < m; t++)
      memcpy(X + (size_t)(g + t) * (size_t)C, in + (in_k == 1 ? sl[t] / k : sl[t]) * C, (size_t)C * sizeof *X);
    sg->X = X + (size_t)g * (size_t)C, sg->Y = Y + (size_t)g * (size_t)R;
    g += m;
  }
  moe_gemv_job j = {kt->gemv[e->w[0].dtype], seg, nseg, R, C};
  const int64_t units = ((int64_t)nseg * R + 7) / 8;
  const int nth = xpi_pool_size(pool);
  xpi_pool_run_n(pool, moe_gemv_run, &j, (int)(units < nth ? units : nth));
  for (int32_t x = 0, gi = 0; x < e->n; x++) { /* scatter the gathered experts' rows */
    const int32_t m = start[x + 1] - start[x], *sl = order + start[x];
    if (m < 2) continue;
    for (int32_t t = 0; t < m; t++)
      memcpy(out + (int64_t)sl[t] * R, Y + (size_t)(gi + t) * (size_t)R, (size_t)R * sizeof *Y);
    gi += m;
  }
  free(seg), free(X), free(Y);
  return XPI_OK;
}

xpi_status xpi_cpu_moe_matmul(xpi_pool *pool, xpi_cpu_mm_ws *ws, const xpi_cpu_kernels *kt, float *out,
                              const float *in, int32_t in_k, const xpi_experts *e, const int32_t *ids, int32_t n,
                              int32_t k) {
  if (in_k != 1 && in_k != k) return xpi_err(XPI_ERR_INTERNAL, "cpu: moe_matmul: in_k %d with k %d", in_k, k);
  if (e->w[0].dtype < 0 || e->w[0].dtype >= 8 || !kt->gemv[e->w[0].dtype])
    return xpi_err(XPI_ERR_UNSUPPORTED, "cpu: no matmul kernel for %s experts", xpi_dtype_name(e->w[0].dtype));
  const int64_t S = (int64_t)n * k, R = e->rows, C = e->cols;
  if (S <= 0) return XPI_OK;
  int32_t *start, *order, most;
  XPI_TRY(xpi_cpu_moe_sort(ids, S, e->n, &start, &order, &most));
  for (int64_t s = 0; s < S; s++)
    if (ids[s] < 0 || ids[s] >= e->n) memset(out + s * R, 0, (size_t)R * sizeof *out);
  if (most < XPI_CPU_GEMM_MIN_N) {
    xpi_status st = moe_matmul_fused(pool, kt, out, in, in_k, e, k, start, order, S);
    free(start), free(order);
    return st;
  }
  /* prefill: each chosen expert's GEMM over its gathered tokens */
  float *X = malloc((size_t)most * (size_t)C * sizeof *X), *Y = malloc((size_t)most * (size_t)R * sizeof *Y);
  if (!X || !Y) {
    free(start), free(order), free(X), free(Y);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "cpu: moe_matmul: out of memory for %d rows", most);
  }
  for (int32_t x = 0; x < e->n; x++) {
    const int32_t m = start[x + 1] - start[x];
    const xpi_weight *w = &e->w[x];
    if (m == 0) continue; /* never read */
    const int32_t *sl = order + start[x];
    if (m == 1) { /* decode: the slot's input row in place, its output row directly */
      const int64_t s = sl[0], row = in_k == 1 ? s / k : s;
      xpi_cpu_matmul(pool, ws, kt, w->dtype, out + s * R, R, in + row * C, 1, w->data, w->aux, 0, R, C);
      continue;
    }
    for (int32_t i = 0; i < m; i++) {
      const int64_t row = in_k == 1 ? sl[i] / k : sl[i];
      memcpy(X + (size_t)i * (size_t)C, in + row * C, (size_t)C * sizeof *X);
    }
    xpi_cpu_matmul(pool, ws, kt, w->dtype, Y, R, X, m, w->data, w->aux, 0, R, C);
    for (int32_t i = 0; i < m; i++) memcpy(out + (int64_t)sl[i] * R, Y + (size_t)i * (size_t)R, (size_t)R * sizeof *Y);
  }
  free(start), free(order), free(X), free(Y);
  return XPI_OK;
}

typedef struct {
  float *out;
  const float *y;
  const int32_t *pos;
  const float *wts, *shared, *shared_gate;
  int32_t n, k, d;
} combine_job;

/* o += w * r, a product then a sum per element (no fused multiply-add: the XPU kernel and test_xpu_moe's 1e-6 bound
 * expect these roundings), four at a time where SSE2 is there: GCC's -O2 left the plain loop scalar, and it took
 * 3% of a 2-thread MoE prefill. */
static void axpy_unfused(float *restrict o, float w, const float *restrict r, int32_t d) {
  int32_t c = 0;
#if defined(__SSE2__)
  const __m128 vw = _mm_set1_ps(w);
  for (; c + 4 <= d; c += 4) _mm_storeu_ps(o + c, _mm_add_ps(_mm_loadu_ps(o + c), _mm_mul_ps(vw, _mm_loadu_ps(r + c))));
#endif
  for (; c < d; c++) o[c] += w * r[c];
}

/* Tokens split over the threads; each token's sum in the same order as on one thread (same bits). */
static void combine_run(void *ctx, int ith, int nth) {
  const combine_job *j = ctx;
  int64_t b, e;
  xpi_pool_range(j->n, ith, nth, 1, &b, &e);
  const int32_t k = j->k, d = j->d;
  for (int64_t t = b; t < e; t++) {
    float *o = j->out + (size_t)t * (size_t)d;
    for (int32_t c = 0; c < d; c++) o[c] = 0;
    for (int32_t i = 0; i < k; i++) {
      const size_t s = (size_t)t * k + i;
      axpy_unfused(o, j->wts[s], j->y + (j->pos ? (size_t)j->pos[s] : s) * (size_t)d, d);
    }
    if (j->shared)
      axpy_unfused(o, 1.0f / (1.0f + expf(-j->shared_gate[t])), j->shared + (size_t)t * (size_t)d, d);
  }
}

xpi_status xpi_cpu_moe_combine(xpi_pool *pool, float *out, const float *y, const int32_t *pos, const float *wts,
                               const float *shared, const float *shared_gate, int32_t n, int32_t k, int32_t d) {
  combine_job j = {out, y, pos, wts, shared, shared_gate, n, k, d};
  /* a thread per 8 tokens at least (~64k multiply-adds at Qwen3-30B-A3B's width): fewer cost more to wake */
  xpi_pool_run_n(pool, combine_run, &j, n / 8 + 1);
  return XPI_OK;
}
