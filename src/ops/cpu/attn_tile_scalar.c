/* The scalar attention tile (cpu_kernels.h): plain C, the oracle the vector tiles are tested against and
 * the kernel of the reference path (use_kernels = 0). Rows are found through the block table one key at a
 * time; each row walks only its own keys [max(first, s0), min(last + 1, s1)). Per row and block of
 * XPI_CPU_ATTN_KEYS keys: scores (capped with tanhf),
 * block max, rescale of the running sum and output, then exp-weighted sum of V rows, all in key order. */
#include <math.h>
#include <stdint.h>

#include "ops/cpu/cpu_kernels.h"

/* q . K_j with the K row read element by element in its dtype; four accumulators as kernels_scalar's dot. */
static float dot_row(const float *q, const void *k, xpi_dtype dt, int64_t off, int32_t hd) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int32_t i = 0;
  for (; i + 4 <= hd; i += 4) {
    s0 += q[i] * xpi_cpu_load_elem(k, dt, off + i);
    s1 += q[i + 1] * xpi_cpu_load_elem(k, dt, off + i + 1);
    s2 += q[i + 2] * xpi_cpu_load_elem(k, dt, off + i + 2);
    s3 += q[i + 3] * xpi_cpu_load_elem(k, dt, off + i + 3);
  }
  for (; i < hd; i++) s0 += q[i] * xpi_cpu_load_elem(k, dt, off + i);
  return (s0 + s1) + (s2 + s3);
}

void xpi_cpu_attn_tile_scalar(const xpi_cpu_attn_tile *t) {
  const int64_t hdp = XPI_CPU_ATTN_HDP(t->hd);
  float *sc = t->scratch; /* one row's scores for one block */
  for (int32_t r = 0; r < t->nq; r++) {
    float *acc = t->acc + r * hdp, m = t->m[r], l = t->l[r];
    const int32_t end = t->last[r] + 1 < t->s1 ? t->last[r] + 1 : t->s1;
    const int32_t start = t->first[r] > t->s0 ? t->first[r] : t->s0;
    for (int32_t b0 = start; b0 < end; b0 += XPI_CPU_ATTN_KEYS) {
      const int32_t b1 = b0 + XPI_CPU_ATTN_KEYS < end ? b0 + XPI_CPU_ATTN_KEYS : end;
      float bm = -INFINITY;
      for (int32_t j = b0; j < b1; j++) {
        float s = dot_row(t->q[r], t->k, t->dt, xpi_cpu_attn_row(t, j), t->hd) * t->scale;
        if (t->softcap > 0) s = t->softcap * tanhf(s / t->softcap);
        sc[j - b0] = s;
        bm = s > bm ? s : bm;
      }
      const float mn = bm > m ? bm : m;
      const float corr = expf(m - mn); /* 0 on the first block (m = -inf) */
      l *= corr;
      for (int32_t i = 0; i < t->hd; i++) acc[i] *= corr;
      for (int32_t j = b0; j < b1; j++) {
        const float p = expf(sc[j - b0] - mn);
        l += p;
        const int64_t off = xpi_cpu_attn_row(t, j);
        for (int32_t i = 0; i < t->hd; i++) acc[i] += p * xpi_cpu_load_elem(t->v, t->dt, off + i);
      }
      m = mn;
    }
    t->m[r] = m;
    t->l[r] = l;
  }
}
