/* Mixture of experts on the CPU. moe_matmul groups the step's slots (token, choice) by expert and runs each
 * selected expert once over its gathered rows with the ordinary matmul driver, so a decode step streams only
 * the k chosen experts' weights, prefill reads every expert once for all its tokens, and q8/q4 experts use the
 * same quantized kernels as any matrix. */
#include "ops/cpu/moe_cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

xpi_status xpi_cpu_moe_route(int32_t *ids, float *wts, const float *logits, int32_t n, int32_t n_experts, int32_t k,
                             int norm_topk) {
  if (k <= 0 || k > n_experts) return xpi_err(XPI_ERR_INTERNAL, "cpu: moe_route: top-%d of %d experts", k, n_experts);
  for (int32_t t = 0; t < n; t++) {
    const float *x = logits + (size_t)t * (size_t)n_experts;
    int32_t *id = ids + (size_t)t * (size_t)k;
    float *w = wts + (size_t)t * (size_t)k;
    float mx = x[0];
    int finite = 1;
    for (int32_t e = 0; e < n_experts; e++) finite &= x[e] - x[e] == 0, mx = x[e] > mx ? x[e] : mx;
    if (!finite) {
      for (int32_t j = 0; j < k; j++) id[j] = -1, w[j] = 0;
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
    for (int32_t j = 0; j < k; j++) w[j] = expf(x[id[j]] - mx) / sum, top += w[j];
    if (norm_topk)
      for (int32_t j = 0; j < k; j++) w[j] /= top;
  }
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
  /* slots sorted by expert (counting sort): order[start[x] .. start[x+1]) are expert x's */
  int32_t *start = calloc((size_t)e->n + 1, sizeof *start), *order = malloc((size_t)S * sizeof *order);
  if (!start || !order) {
    free(start), free(order);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "cpu: moe_matmul: out of memory");
  }
  int32_t most = 0;
  for (int64_t s = 0; s < S; s++) {
    if (ids[s] >= 0 && ids[s] < e->n) start[ids[s] + 1]++;
    else memset(out + s * R, 0, (size_t)R * sizeof *out);
  }
  for (int32_t x = 0; x < e->n; x++) most = start[x + 1] > most ? start[x + 1] : most, start[x + 1] += start[x];
  int32_t *fill = malloc((size_t)e->n * sizeof *fill);
  float *X = most > 1 ? malloc((size_t)most * (size_t)C * sizeof *X) : NULL;
  float *Y = most > 1 ? malloc((size_t)most * (size_t)R * sizeof *Y) : NULL;
  if (!fill || (most > 1 && (!X || !Y))) {
    free(start), free(order), free(fill), free(X), free(Y);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "cpu: moe_matmul: out of memory for %d rows", most);
  }
  memcpy(fill, start, (size_t)e->n * sizeof *fill);
  for (int64_t s = 0; s < S; s++)
    if (ids[s] >= 0 && ids[s] < e->n) order[fill[ids[s]]++] = (int32_t)s;
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
  free(start), free(order), free(fill), free(X), free(Y);
  return XPI_OK;
}

xpi_status xpi_cpu_moe_combine(float *out, const float *y, const float *wts, const float *shared,
                               const float *shared_gate, int32_t n, int32_t k, int32_t d) {
  for (int32_t t = 0; t < n; t++) {
    float *o = out + (size_t)t * (size_t)d;
    for (int32_t c = 0; c < d; c++) o[c] = 0;
    for (int32_t j = 0; j < k; j++) {
      const float w = wts[(size_t)t * k + j], *r = y + ((size_t)t * k + j) * (size_t)d;
      for (int32_t c = 0; c < d; c++) o[c] += w * r[c];
    }
    if (shared) {
      const float g = 1.0f / (1.0f + expf(-shared_gate[t])), *r = shared + (size_t)t * (size_t)d;
      for (int32_t c = 0; c < d; c++) o[c] += g * r[c];
    }
  }
  return XPI_OK;
}
