/* The AVX2 + FMA + F16C attention tile (cpu_kernels.h), two paths:
 *  - direct (one or two query rows, head_dim a multiple of 8: decode with a GQA group of <= 2): K and V rows
 *    are converted in registers (f16 via vcvtph2ps, bf16 by a 16-bit shift) as the FMAs consume them, read
 *    as alternating long runs (DKEYS keys of K, then the same keys of V; their row addresses looked up in the
 *    block table once per step) and software-prefetched PF_KEYS keys ahead along that chain, so the cache
 *    streams at close to memory bandwidth;
 *  - buffered (everything else: prefill tiles of up to XPI_CPU_ATTN_ROWS rows, larger groups): per block of
 *    XPI_CPU_ATTN_KEYS keys the K rows are converted once into an f32 buffer in L1 (zero-padded to a multiple
 *    of 8 floats) and shared by all rows of the tile, scores computed three rows x four keys at a time
 *    (twelve FMA chains, the four dot products reduced together by a hadd tree; leftover rows in a pair
 *    or alone), then the V rows likewise (three rows x 32 floats). Three rows measured ~10% less CPU
 *    time than two on a prefill chunk.
 * Both: start at the first key any row's window holds (blocks before it are never touched); per row and
 * block the optional softcap (vector tanh), the block max over the row's keys [first, last], one expf for the
 * rescale factor, vector exp of the scores, and the accumulators rescaled as they are loaded for the P.V
 * update. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/simd_avx2.h"

#define KEYS XPI_CPU_ATTN_KEYS
#define PF_KEYS 64 /* software prefetch distance in keys: the next block streams in while this one computes */



/* [sum(a0), sum(a1), sum(a2), sum(a3)] */
static inline __m128 hsum4x8(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* dst[j][0..hdp) = key j0+j's row of src (found through the tile's block table) as f32, zero-padded past hd;
 * j < nk. Rows PF_KEYS keys ahead (below pf_end) are prefetched. */
static void load_rows(float *dst, const xpi_cpu_attn_tile *t, const void *src, xpi_dtype dt, int32_t j0, int32_t nk,
                      int32_t hd, int64_t hdp, int32_t pf_end) {
  const size_t esz = dt == XPI_DT_F32 ? 4 : 2, rowb = (size_t)hd * esz;
  for (int32_t j = 0; j < nk; j++) {
    const unsigned char *row = (const unsigned char *)src + (size_t)xpi_cpu_attn_row(t, j0 + j) * esz;
    if (j0 + j + PF_KEYS < pf_end) {
      const char *pf = (const char *)src + (size_t)xpi_cpu_attn_row(t, j0 + j + PF_KEYS) * esz;
      for (size_t b = 0; b < rowb; b += 64) _mm_prefetch(pf + b, _MM_HINT_T0);
    }
    float *d = dst + (int64_t)j * hdp;
    int32_t i = 0;
    if (dt == XPI_DT_F16) {
      for (; i + 16 <= hd; i += 16) {
        _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + 2 * i))));
        _mm256_storeu_ps(d + i + 8, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + 2 * i + 16))));
      }
      for (; i + 8 <= hd; i += 8)
        _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + 2 * i))));
    } else if (dt == XPI_DT_BF16) {
      for (; i + 8 <= hd; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(row + 2 * i));
        _mm256_storeu_ps(d + i, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
      }
    } else {
      for (; i + 8 <= hd; i += 8) _mm256_storeu_ps(d + i, _mm256_loadu_ps((const float *)(row + 4 * i)));
    }
    for (; i < hd; i++) d[i] = xpi_cpu_load_elem(row, dt, i);
    for (; i < hdp; i++) d[i] = 0;
  }
}

/* Scores of query rows qa, qb against keys 0..nk4 (multiple of 4) of kb, times scale, into sa, sb. */
static void scores2(float *sa, float *sb, const float *qa, const float *qb, const float *kb, int64_t hdp, int32_t nk4,
                    float scale) {
  const __m256 vs = _mm256_set1_ps(scale);
  for (int32_t j = 0; j < nk4; j += 4) {
    const float *k0 = kb + j * hdp, *k1 = k0 + hdp, *k2 = k1 + hdp, *k3 = k2 + hdp;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    for (int64_t i = 0; i < hdp; i += 8) {
      const __m256 x = _mm256_loadu_ps(qa + i), y = _mm256_loadu_ps(qb + i);
      __m256 k = _mm256_loadu_ps(k0 + i);
      a0 = _mm256_fmadd_ps(x, k, a0);
      b0 = _mm256_fmadd_ps(y, k, b0);
      k = _mm256_loadu_ps(k1 + i);
      a1 = _mm256_fmadd_ps(x, k, a1);
      b1 = _mm256_fmadd_ps(y, k, b1);
      k = _mm256_loadu_ps(k2 + i);
      a2 = _mm256_fmadd_ps(x, k, a2);
      b2 = _mm256_fmadd_ps(y, k, b2);
      k = _mm256_loadu_ps(k3 + i);
      a3 = _mm256_fmadd_ps(x, k, a3);
      b3 = _mm256_fmadd_ps(y, k, b3);
    }
    _mm_storeu_ps(sa + j, _mm_mul_ps(hsum4x8(a0, a1, a2, a3), _mm256_castps256_ps128(vs)));
    _mm_storeu_ps(sb + j, _mm_mul_ps(hsum4x8(b0, b1, b2, b3), _mm256_castps256_ps128(vs)));
  }
}

static void scores1(float *sa, const float *qa, const float *kb, int64_t hdp, int32_t nk4, float scale) {
  for (int32_t j = 0; j < nk4; j += 4) {
    const float *k0 = kb + j * hdp, *k1 = k0 + hdp, *k2 = k1 + hdp, *k3 = k2 + hdp;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < hdp; i += 8) {
      const __m256 x = _mm256_loadu_ps(qa + i);
      a0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k0 + i), a0);
      a1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k1 + i), a1);
      a2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k2 + i), a2);
      a3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k3 + i), a3);
    }
    _mm_storeu_ps(sa + j, _mm_mul_ps(hsum4x8(a0, a1, a2, a3), _mm_set1_ps(scale)));
  }
}

/* acc_a = acc_a*ca + sum_j pa[j] V_j (and likewise b), j < nk; V rows hdp floats apart in vb. */
static void pv2(float *acca, float *accb, const float *pa, const float *pb, float ca, float cb, const float *vb,
                int64_t hdp, int32_t nk) {
  const __m256 vca = _mm256_set1_ps(ca), vcb = _mm256_set1_ps(cb);
  int64_t i = 0;
  for (; i + 32 <= hdp; i += 32) {
    __m256 a0 = _mm256_mul_ps(_mm256_loadu_ps(acca + i), vca), a1 = _mm256_mul_ps(_mm256_loadu_ps(acca + i + 8), vca);
    __m256 a2 = _mm256_mul_ps(_mm256_loadu_ps(acca + i + 16), vca), a3 = _mm256_mul_ps(_mm256_loadu_ps(acca + i + 24), vca);
    __m256 b0 = _mm256_mul_ps(_mm256_loadu_ps(accb + i), vcb), b1 = _mm256_mul_ps(_mm256_loadu_ps(accb + i + 8), vcb);
    __m256 b2 = _mm256_mul_ps(_mm256_loadu_ps(accb + i + 16), vcb), b3 = _mm256_mul_ps(_mm256_loadu_ps(accb + i + 24), vcb);
    for (int32_t j = 0; j < nk; j++) {
      const float *v = vb + j * hdp + i;
      const __m256 wa = _mm256_broadcast_ss(pa + j), wb = _mm256_broadcast_ss(pb + j);
      __m256 x = _mm256_loadu_ps(v);
      a0 = _mm256_fmadd_ps(wa, x, a0);
      b0 = _mm256_fmadd_ps(wb, x, b0);
      x = _mm256_loadu_ps(v + 8);
      a1 = _mm256_fmadd_ps(wa, x, a1);
      b1 = _mm256_fmadd_ps(wb, x, b1);
      x = _mm256_loadu_ps(v + 16);
      a2 = _mm256_fmadd_ps(wa, x, a2);
      b2 = _mm256_fmadd_ps(wb, x, b2);
      x = _mm256_loadu_ps(v + 24);
      a3 = _mm256_fmadd_ps(wa, x, a3);
      b3 = _mm256_fmadd_ps(wb, x, b3);
    }
    _mm256_storeu_ps(acca + i, a0);
    _mm256_storeu_ps(acca + i + 8, a1);
    _mm256_storeu_ps(acca + i + 16, a2);
    _mm256_storeu_ps(acca + i + 24, a3);
    _mm256_storeu_ps(accb + i, b0);
    _mm256_storeu_ps(accb + i + 8, b1);
    _mm256_storeu_ps(accb + i + 16, b2);
    _mm256_storeu_ps(accb + i + 24, b3);
  }
  for (; i < hdp; i += 8) {
    __m256 a0 = _mm256_mul_ps(_mm256_loadu_ps(acca + i), vca), b0 = _mm256_mul_ps(_mm256_loadu_ps(accb + i), vcb);
    __m256 a1 = _mm256_setzero_ps(), b1 = a1; /* second chain per row: even and odd keys */
    int32_t j = 0;
    for (; j + 2 <= nk; j += 2) {
      const __m256 x0 = _mm256_loadu_ps(vb + j * hdp + i), x1 = _mm256_loadu_ps(vb + (j + 1) * hdp + i);
      a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(pa + j), x0, a0);
      b0 = _mm256_fmadd_ps(_mm256_broadcast_ss(pb + j), x0, b0);
      a1 = _mm256_fmadd_ps(_mm256_broadcast_ss(pa + j + 1), x1, a1);
      b1 = _mm256_fmadd_ps(_mm256_broadcast_ss(pb + j + 1), x1, b1);
    }
    if (j < nk) {
      const __m256 x0 = _mm256_loadu_ps(vb + j * hdp + i);
      a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(pa + j), x0, a0);
      b0 = _mm256_fmadd_ps(_mm256_broadcast_ss(pb + j), x0, b0);
    }
    _mm256_storeu_ps(acca + i, _mm256_add_ps(a0, a1));
    _mm256_storeu_ps(accb + i, _mm256_add_ps(b0, b1));
  }
}

static void pv1(float *acca, const float *pa, float ca, const float *vb, int64_t hdp, int32_t nk) {
  const __m256 vca = _mm256_set1_ps(ca);
  int64_t i = 0;
  for (; i + 32 <= hdp; i += 32) {
    __m256 a0 = _mm256_mul_ps(_mm256_loadu_ps(acca + i), vca), a1 = _mm256_mul_ps(_mm256_loadu_ps(acca + i + 8), vca);
    __m256 a2 = _mm256_mul_ps(_mm256_loadu_ps(acca + i + 16), vca), a3 = _mm256_mul_ps(_mm256_loadu_ps(acca + i + 24), vca);
    for (int32_t j = 0; j < nk; j++) {
      const float *v = vb + j * hdp + i;
      const __m256 wa = _mm256_broadcast_ss(pa + j);
      a0 = _mm256_fmadd_ps(wa, _mm256_loadu_ps(v), a0);
      a1 = _mm256_fmadd_ps(wa, _mm256_loadu_ps(v + 8), a1);
      a2 = _mm256_fmadd_ps(wa, _mm256_loadu_ps(v + 16), a2);
      a3 = _mm256_fmadd_ps(wa, _mm256_loadu_ps(v + 24), a3);
    }
    _mm256_storeu_ps(acca + i, a0);
    _mm256_storeu_ps(acca + i + 8, a1);
    _mm256_storeu_ps(acca + i + 16, a2);
    _mm256_storeu_ps(acca + i + 24, a3);
  }
  for (; i < hdp; i += 8) {
    __m256 a0 = _mm256_mul_ps(_mm256_loadu_ps(acca + i), vca);
    for (int32_t j = 0; j < nk; j++)
      a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(pa + j), _mm256_loadu_ps(vb + j * hdp + i), a0);
    _mm256_storeu_ps(acca + i, a0);
  }
}

/* Three query rows at a time (prefill): twelve independent FMA chains instead of eight keep both FMA pipes
 * busy through their 4-cycle latency, and each K/V vector loaded feeds three FMAs. */
static void scores3(float *sa, float *sb, float *sc_, const float *qa, const float *qb, const float *qc,
                    const float *kb, int64_t hdp, int32_t nk4, float scale) {
  const __m128 vs = _mm_set1_ps(scale);
  for (int32_t j = 0; j < nk4; j += 4) {
    const float *k0 = kb + j * hdp, *k1 = k0 + hdp, *k2 = k1 + hdp, *k3 = k2 + hdp;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    __m256 c0 = a0, c1 = a0, c2 = a0, c3 = a0;
    for (int64_t i = 0; i < hdp; i += 8) {
      const __m256 x = _mm256_loadu_ps(qa + i), y = _mm256_loadu_ps(qb + i), z = _mm256_loadu_ps(qc + i);
      __m256 k = _mm256_loadu_ps(k0 + i);
      a0 = _mm256_fmadd_ps(x, k, a0);
      b0 = _mm256_fmadd_ps(y, k, b0);
      c0 = _mm256_fmadd_ps(z, k, c0);
      k = _mm256_loadu_ps(k1 + i);
      a1 = _mm256_fmadd_ps(x, k, a1);
      b1 = _mm256_fmadd_ps(y, k, b1);
      c1 = _mm256_fmadd_ps(z, k, c1);
      k = _mm256_loadu_ps(k2 + i);
      a2 = _mm256_fmadd_ps(x, k, a2);
      b2 = _mm256_fmadd_ps(y, k, b2);
      c2 = _mm256_fmadd_ps(z, k, c2);
      k = _mm256_loadu_ps(k3 + i);
      a3 = _mm256_fmadd_ps(x, k, a3);
      b3 = _mm256_fmadd_ps(y, k, b3);
      c3 = _mm256_fmadd_ps(z, k, c3);
    }
    _mm_storeu_ps(sa + j, _mm_mul_ps(hsum4x8(a0, a1, a2, a3), vs));
    _mm_storeu_ps(sb + j, _mm_mul_ps(hsum4x8(b0, b1, b2, b3), vs));
    _mm_storeu_ps(sc_ + j, _mm_mul_ps(hsum4x8(c0, c1, c2, c3), vs));
  }
}

static void pv3(float *acca, float *accb, float *accc, const float *pa, const float *pb, const float *pc, float ca,
                float cb, float cc, const float *vb, int64_t hdp, int32_t nk) {
  const __m256 vca = _mm256_set1_ps(ca), vcb = _mm256_set1_ps(cb), vcc = _mm256_set1_ps(cc);
  int64_t i = 0;
  for (; i + 32 <= hdp; i += 32) {
    __m256 a0 = _mm256_mul_ps(_mm256_loadu_ps(acca + i), vca), a1 = _mm256_mul_ps(_mm256_loadu_ps(acca + i + 8), vca);
    __m256 a2 = _mm256_mul_ps(_mm256_loadu_ps(acca + i + 16), vca), a3 = _mm256_mul_ps(_mm256_loadu_ps(acca + i + 24), vca);
    __m256 b0 = _mm256_mul_ps(_mm256_loadu_ps(accb + i), vcb), b1 = _mm256_mul_ps(_mm256_loadu_ps(accb + i + 8), vcb);
    __m256 b2 = _mm256_mul_ps(_mm256_loadu_ps(accb + i + 16), vcb), b3 = _mm256_mul_ps(_mm256_loadu_ps(accb + i + 24), vcb);
    __m256 c0 = _mm256_mul_ps(_mm256_loadu_ps(accc + i), vcc), c1 = _mm256_mul_ps(_mm256_loadu_ps(accc + i + 8), vcc);
    __m256 c2 = _mm256_mul_ps(_mm256_loadu_ps(accc + i + 16), vcc), c3 = _mm256_mul_ps(_mm256_loadu_ps(accc + i + 24), vcc);
    for (int32_t j = 0; j < nk; j++) {
      const float *v = vb + j * hdp + i;
      const __m256 wa = _mm256_broadcast_ss(pa + j), wb = _mm256_broadcast_ss(pb + j), wc = _mm256_broadcast_ss(pc + j);
      __m256 x = _mm256_loadu_ps(v);
      a0 = _mm256_fmadd_ps(wa, x, a0);
      b0 = _mm256_fmadd_ps(wb, x, b0);
      c0 = _mm256_fmadd_ps(wc, x, c0);
      x = _mm256_loadu_ps(v + 8);
      a1 = _mm256_fmadd_ps(wa, x, a1);
      b1 = _mm256_fmadd_ps(wb, x, b1);
      c1 = _mm256_fmadd_ps(wc, x, c1);
      x = _mm256_loadu_ps(v + 16);
      a2 = _mm256_fmadd_ps(wa, x, a2);
      b2 = _mm256_fmadd_ps(wb, x, b2);
      c2 = _mm256_fmadd_ps(wc, x, c2);
      x = _mm256_loadu_ps(v + 24);
      a3 = _mm256_fmadd_ps(wa, x, a3);
      b3 = _mm256_fmadd_ps(wb, x, b3);
      c3 = _mm256_fmadd_ps(wc, x, c3);
    }
    _mm256_storeu_ps(acca + i, a0);
    _mm256_storeu_ps(acca + i + 8, a1);
    _mm256_storeu_ps(acca + i + 16, a2);
    _mm256_storeu_ps(acca + i + 24, a3);
    _mm256_storeu_ps(accb + i, b0);
    _mm256_storeu_ps(accb + i + 8, b1);
    _mm256_storeu_ps(accb + i + 16, b2);
    _mm256_storeu_ps(accb + i + 24, b3);
    _mm256_storeu_ps(accc + i, c0);
    _mm256_storeu_ps(accc + i + 8, c1);
    _mm256_storeu_ps(accc + i + 16, c2);
    _mm256_storeu_ps(accc + i + 24, c3);
  }
  for (; i < hdp; i += 8) { /* the last 8..24 floats (head_dim not a multiple of 32) */
    __m256 a0 = _mm256_mul_ps(_mm256_loadu_ps(acca + i), vca), b0 = _mm256_mul_ps(_mm256_loadu_ps(accb + i), vcb);
    __m256 c0 = _mm256_mul_ps(_mm256_loadu_ps(accc + i), vcc);
    for (int32_t j = 0; j < nk; j++) {
      const __m256 x = _mm256_loadu_ps(vb + j * hdp + i);
      a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(pa + j), x, a0);
      b0 = _mm256_fmadd_ps(_mm256_broadcast_ss(pb + j), x, b0);
      c0 = _mm256_fmadd_ps(_mm256_broadcast_ss(pc + j), x, c0);
    }
    _mm256_storeu_ps(acca + i, a0);
    _mm256_storeu_ps(accb + i, b0);
    _mm256_storeu_ps(accc + i, c0);
  }
}

/* Row r's scores s[0..nk8) -> probabilities for keys lo <= j <= lim (others exactly 0; at least one key is in
 * range), after the softcap when cap > 0; updates m, l; returns the factor the row's accumulator must be
 * rescaled by. */
static float softmax_block(float *s, int32_t nk8, int32_t lo, int32_t lim, float cap, float *m, float *l) {
  const __m256i step = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), end = _mm256_set1_epi32(lim + 1);
  const __m256i beg = _mm256_set1_epi32(lo - 1);
  const __m256 ninf = _mm256_set1_ps(-INFINITY);
  if (cap > 0) {
    const __m256 vc = _mm256_set1_ps(cap);
    for (int32_t j = 0; j < nk8; j += 8)
      _mm256_storeu_ps(s + j, _mm256_mul_ps(vc, xpi_tanh8(_mm256_div_ps(_mm256_loadu_ps(s + j), vc))));
  }
#define IN_RANGE(j)                                                                                            \
  _mm256_castsi256_ps(_mm256_and_si256(_mm256_cmpgt_epi32(end, _mm256_add_epi32(step, _mm256_set1_epi32(j))), \
                                       _mm256_cmpgt_epi32(_mm256_add_epi32(step, _mm256_set1_epi32(j)), beg)))
  __m256 vm = ninf;
  for (int32_t j = 0; j < nk8; j += 8) {
    const __m256 ok = IN_RANGE(j);
    vm = _mm256_max_ps(vm, _mm256_blendv_ps(ninf, _mm256_loadu_ps(s + j), ok));
  }
  const float bm = xpi_hmax8(vm), mn = bm > *m ? bm : *m, corr = expf(*m - mn);
  const __m256 vmn = _mm256_set1_ps(mn);
  __m256 vl = _mm256_setzero_ps();
  for (int32_t j = 0; j < nk8; j += 8) {
    const __m256 ok = IN_RANGE(j);
    const __m256 p = _mm256_and_ps(ok, xpi_exp8(_mm256_sub_ps(_mm256_loadu_ps(s + j), vmn)));
    vl = _mm256_add_ps(vl, p);
    _mm256_storeu_ps(s + j, p);
  }
  *l = *l * corr + xpi_hsum8(vl);
  *m = mn;
  return corr;
}
#undef IN_RANGE

/* ---- direct path (one or two query rows, hd a multiple of 8: decode): K and V rows are converted in
 * registers as the FMAs consume them, so loads from memory interleave with the arithmetic and nothing is
 * stored and reloaded; a buffered copy would be used once anyway. Specialized per dtype (always_inline). */
#define ALWAYS_INLINE inline __attribute__((always_inline))

static ALWAYS_INLINE __m256 ld8(const void *p, int64_t i, xpi_dtype dt) {
  if (dt == XPI_DT_F16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
  if (dt == XPI_DT_BF16)
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i))), 16));
  return _mm256_loadu_ps((const float *)p + i);
}

static ALWAYS_INLINE void prefetch_row(const void *row, size_t bytes) {
  for (size_t b = 0; b < bytes; b += 64) _mm_prefetch((const char *)row + b, _MM_HINT_T0);
}

/* Prefetch along the chain of streams the direct path walks: row jj of the current run of rows (cur, nk of
 * them), or past it, row jj - nk of the run read next (nxt, nnk rows). */
static ALWAYS_INLINE void prefetch_chain(const unsigned char *const *cur, const unsigned char *const *nxt, int32_t jj,
                                         int32_t nk, int32_t nnk, size_t rowb) {
  if (jj < nk) prefetch_row(cur[jj], rowb);
  else if (jj - nk < nnk) prefetch_row(nxt[jj - nk], rowb);
}

/* Scores of rows qa, qb against the nk K rows kr[], times scale; prefetches PF_KEYS rows ahead, continuing
 * into the nnk rows nxt[] (the V rows of this step). */
static ALWAYS_INLINE void scores2_direct(float *sa, float *sb, const float *qa, const float *qb,
                                         const unsigned char *const *kr, int32_t nk, int32_t hd, float scale,
                                         const unsigned char *const *nxt, int32_t nnk, xpi_dtype dt) {
  const size_t esz = dt == XPI_DT_F32 ? 4 : 2, rowb = (size_t)hd * esz;
  int32_t j = 0;
  for (; j + 4 <= nk; j += 4) {
    const unsigned char *k0 = kr[j], *k1 = kr[j + 1], *k2 = kr[j + 2], *k3 = kr[j + 3];
    for (int d = 0; d < 4; d++) prefetch_chain(kr, nxt, j + PF_KEYS + d, nk, nnk, rowb);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    for (int32_t i = 0; i < hd; i += 8) {
      const __m256 x = _mm256_loadu_ps(qa + i), y = _mm256_loadu_ps(qb + i);
      __m256 kk = ld8(k0, i, dt);
      a0 = _mm256_fmadd_ps(x, kk, a0);
      b0 = _mm256_fmadd_ps(y, kk, b0);
      kk = ld8(k1, i, dt);
      a1 = _mm256_fmadd_ps(x, kk, a1);
      b1 = _mm256_fmadd_ps(y, kk, b1);
      kk = ld8(k2, i, dt);
      a2 = _mm256_fmadd_ps(x, kk, a2);
      b2 = _mm256_fmadd_ps(y, kk, b2);
      kk = ld8(k3, i, dt);
      a3 = _mm256_fmadd_ps(x, kk, a3);
      b3 = _mm256_fmadd_ps(y, kk, b3);
    }
    _mm_storeu_ps(sa + j, _mm_mul_ps(hsum4x8(a0, a1, a2, a3), _mm_set1_ps(scale)));
    _mm_storeu_ps(sb + j, _mm_mul_ps(hsum4x8(b0, b1, b2, b3), _mm_set1_ps(scale)));
  }
  for (; j < nk; j++) {
    const unsigned char *k0 = kr[j];
    prefetch_chain(kr, nxt, j + PF_KEYS, nk, nnk, rowb);
    __m256 a0 = _mm256_setzero_ps(), b0 = a0;
    for (int32_t i = 0; i < hd; i += 8) {
      const __m256 kk = ld8(k0, i, dt);
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(qa + i), kk, a0);
      b0 = _mm256_fmadd_ps(_mm256_loadu_ps(qb + i), kk, b0);
    }
    sa[j] = xpi_hsum8(a0) * scale;
    sb[j] = xpi_hsum8(b0) * scale;
  }
}

/* acc_a = acc_a*ca + sum_j pa[j] V_j (and b) over the nk V rows vr[], read in place; prefetches as
 * scores2_direct, continuing into the nnk rows nxt[] (the K rows of the next step). */
static ALWAYS_INLINE void pv2_direct(float *acca, float *accb, const float *pa, const float *pb, float ca, float cb,
                                     const unsigned char *const *vr, int32_t nk, int32_t hd,
                                     const unsigned char *const *nxt, int32_t nnk, xpi_dtype dt) {
  const size_t esz = dt == XPI_DT_F32 ? 4 : 2, rowb = (size_t)hd * esz;
  const __m256 vca = _mm256_set1_ps(ca), vcb = _mm256_set1_ps(cb);
  /* the rows PF_KEYS keys ahead are prefetched one per key during the first 32-float pass, not in one burst
   * (a burst of 128 lines overflows the outstanding-miss queue and the excess is dropped) */
  int32_t i = 0;
  for (; i + 32 <= hd; i += 32) {
    __m256 a0 = _mm256_mul_ps(_mm256_loadu_ps(acca + i), vca), a1 = _mm256_mul_ps(_mm256_loadu_ps(acca + i + 8), vca);
    __m256 a2 = _mm256_mul_ps(_mm256_loadu_ps(acca + i + 16), vca), a3 = _mm256_mul_ps(_mm256_loadu_ps(acca + i + 24), vca);
    __m256 b0 = _mm256_mul_ps(_mm256_loadu_ps(accb + i), vcb), b1 = _mm256_mul_ps(_mm256_loadu_ps(accb + i + 8), vcb);
    __m256 b2 = _mm256_mul_ps(_mm256_loadu_ps(accb + i + 16), vcb), b3 = _mm256_mul_ps(_mm256_loadu_ps(accb + i + 24), vcb);
    for (int32_t j = 0; j < nk; j++) {
      const unsigned char *row = vr[j];
      if (i == 0) prefetch_chain(vr, nxt, j + PF_KEYS, nk, nnk, rowb);
      const __m256 wa = _mm256_broadcast_ss(pa + j), wb = _mm256_broadcast_ss(pb + j);
      __m256 x = ld8(row, i, dt);
      a0 = _mm256_fmadd_ps(wa, x, a0);
      b0 = _mm256_fmadd_ps(wb, x, b0);
      x = ld8(row, i + 8, dt);
      a1 = _mm256_fmadd_ps(wa, x, a1);
      b1 = _mm256_fmadd_ps(wb, x, b1);
      x = ld8(row, i + 16, dt);
      a2 = _mm256_fmadd_ps(wa, x, a2);
      b2 = _mm256_fmadd_ps(wb, x, b2);
      x = ld8(row, i + 24, dt);
      a3 = _mm256_fmadd_ps(wa, x, a3);
      b3 = _mm256_fmadd_ps(wb, x, b3);
    }
    _mm256_storeu_ps(acca + i, a0);
    _mm256_storeu_ps(acca + i + 8, a1);
    _mm256_storeu_ps(acca + i + 16, a2);
    _mm256_storeu_ps(acca + i + 24, a3);
    _mm256_storeu_ps(accb + i, b0);
    _mm256_storeu_ps(accb + i + 8, b1);
    _mm256_storeu_ps(accb + i + 16, b2);
    _mm256_storeu_ps(accb + i + 24, b3);
  }
  for (; i < hd; i += 8) {
    __m256 a0 = _mm256_mul_ps(_mm256_loadu_ps(acca + i), vca), b0 = _mm256_mul_ps(_mm256_loadu_ps(accb + i), vcb);
    for (int32_t j = 0; j < nk; j++) {
      const __m256 x = ld8(vr[j], i, dt);
      a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(pa + j), x, a0);
      b0 = _mm256_fmadd_ps(_mm256_broadcast_ss(pb + j), x, b0);
    }
    _mm256_storeu_ps(acca + i, a0);
    _mm256_storeu_ps(accb + i, b0);
  }
}

/* The whole tile on the direct path, DKEYS keys per step: all their scores from K, then all their V rows, so
 * memory sees 64 KiB runs (f16, head_dim 128) rather than K and V alternating every 8 KiB, and the prefetch
 * chain crosses from one run to the next. On the 2-core Zen 3 VM decode at depth 4096 measured +3% to +12%
 * against 32-key steps in three of four whole-process A/B runs (-3% in the fourth, within its noise). One row
 * runs as a pair with itself into a dummy row (memory-bound: the duplicate FMAs cost nothing measurable). */
#define DKEYS (XPI_CPU_ATTN_ROWS * XPI_CPU_ATTN_KEYS / 2) /* scratch: 2*DKEYS scores + one hdp row fit in
                                                           * xpi_cpu_attn_scratch_floats() for any hd */
static ALWAYS_INLINE void tile_direct(const xpi_cpu_attn_tile *t, int32_t start, int32_t end, xpi_dtype dt) {
  const int64_t hdp = XPI_CPU_ATTN_HDP(t->hd);
  const size_t esz = dt == XPI_DT_F32 ? 4 : 2;
  float *sc = t->scratch, *dummy_acc = sc + 2 * DKEYS, dummy_m = -INFINITY, dummy_l = 0;
  const int two = t->nq == 2;
  const float *qa = t->q[0], *qb = two ? t->q[1] : t->q[0];
  float *acca = t->acc, *accb = two ? t->acc + hdp : dummy_acc;
  float *ma = &t->m[0], *la = &t->l[0], *mb = two ? &t->m[1] : &dummy_m, *lb = two ? &t->l[1] : &dummy_l;
  const int32_t lasta = t->last[0], lastb = two ? t->last[1] : t->last[0];
  const int32_t firsta = t->first[0], firstb = two ? t->first[1] : t->first[0];
  /* the rows of this step's keys (K, V) and of the next step's K, found through the block table once */
  const unsigned char *rows[3][DKEYS], **kr = rows[0], **vr = rows[1], **kn = rows[2];
  if (!two) memset(dummy_acc, 0, (size_t)hdp * sizeof *dummy_acc);
  int32_t nk = end - start < DKEYS ? end - start : DKEYS;
  for (int32_t j = 0; j < nk; j++) kr[j] = (const unsigned char *)t->k + (size_t)xpi_cpu_attn_row(t, start + j) * esz;
  for (int32_t b0 = start; b0 < end; b0 += DKEYS) {
    const int32_t nk8 = (nk + 7) & ~7;
    const int32_t nnk = end - b0 - nk < DKEYS ? end - b0 - nk : DKEYS; /* keys of the next step */
    for (int32_t j = 0; j < nk; j++) vr[j] = (const unsigned char *)t->v + (size_t)xpi_cpu_attn_row(t, b0 + j) * esz;
    for (int32_t j = 0; j < nnk; j++)
      kn[j] = (const unsigned char *)t->k + (size_t)xpi_cpu_attn_row(t, b0 + nk + j) * esz;
    const int acta = lasta >= b0 && firsta < b0 + nk, actb = lastb >= b0 && firstb < b0 + nk;
    scores2_direct(sc, sc + DKEYS, qa, qb, kr, nk, t->hd, t->scale, vr, nk, dt);
    if (nk8 > nk) {
      memset(sc + nk, 0, (size_t)(nk8 - nk) * sizeof *sc);
      memset(sc + DKEYS + nk, 0, (size_t)(nk8 - nk) * sizeof *sc);
    }
    float ca = 1, cb = 1;
    if (acta) ca = softmax_block(sc, nk8, firsta - b0, lasta - b0 < nk - 1 ? lasta - b0 : nk - 1, t->softcap, ma, la);
    else memset(sc, 0, (size_t)nk8 * sizeof *sc);
    if (actb)
      cb = softmax_block(sc + DKEYS, nk8, firstb - b0, lastb - b0 < nk - 1 ? lastb - b0 : nk - 1, t->softcap, mb, lb);
    else memset(sc + DKEYS, 0, (size_t)nk8 * sizeof *sc);
    pv2_direct(acca, accb, sc, sc + DKEYS, ca, cb, vr, nk, t->hd, kn, nnk, dt);
    const unsigned char **sw = kr; /* the next step's K rows become this step's */
    kr = kn;
    kn = sw;
    nk = nnk;
  }
}

static void tile_direct_f16(const xpi_cpu_attn_tile *t, int32_t s, int32_t e) { tile_direct(t, s, e, XPI_DT_F16); }
static void tile_direct_bf16(const xpi_cpu_attn_tile *t, int32_t s, int32_t e) { tile_direct(t, s, e, XPI_DT_BF16); }
static void tile_direct_f32(const xpi_cpu_attn_tile *t, int32_t s, int32_t e) { tile_direct(t, s, e, XPI_DT_F32); }

void xpi_cpu_attn_tile_avx2(const xpi_cpu_attn_tile *t) {
  const int64_t hdp = XPI_CPU_ATTN_HDP(t->hd);
  float *qbuf = t->scratch, *kv = qbuf + XPI_CPU_ATTN_ROWS * hdp, *sc = kv + KEYS * hdp;
  /* keys past every row's last, and before every row's first (a sliding window), are not read at all */
  int32_t end = t->s0, start = t->s1;
  for (int32_t r = 0; r < t->nq; r++) {
    const int32_t e = t->last[r] + 1 < t->s1 ? t->last[r] + 1 : t->s1;
    end = e > end ? e : end;
    start = t->first[r] < start ? t->first[r] : start;
  }
  start = start > t->s0 ? start : t->s0;
  if (start >= end) return;
  if (t->nq <= 2 && t->hd % 8 == 0) {
    if (t->dt == XPI_DT_F16) tile_direct_f16(t, start, end);
    else if (t->dt == XPI_DT_BF16) tile_direct_bf16(t, start, end);
    else tile_direct_f32(t, start, end);
    return;
  }
  for (int32_t r = 0; r < t->nq; r++) {
    memcpy(qbuf + r * hdp, t->q[r], (size_t)t->hd * sizeof(float));
    memset(qbuf + r * hdp + t->hd, 0, (size_t)(hdp - t->hd) * sizeof(float));
  }
  for (int32_t b0 = start; b0 < end; b0 += KEYS) {
    const int32_t nk = end - b0 < KEYS ? end - b0 : KEYS, nk4 = (nk + 3) & ~3, nk8 = (nk + 7) & ~7;
    int32_t act[XPI_CPU_ATTN_ROWS], na = 0;
    float corr[XPI_CPU_ATTN_ROWS];
    for (int32_t r = 0; r < t->nq; r++) /* rows with a key in this block */
      if (t->last[r] >= b0 && t->first[r] < b0 + nk) act[na++] = r;
    if (na == 0) continue;
    load_rows(kv, t, t->k, t->dt, b0, nk, t->hd, hdp, end);
    memset(kv + nk * hdp, 0, (size_t)(nk4 - nk) * (size_t)hdp * sizeof(float)); /* keys scored but masked */
    int32_t i = 0;
    for (; i + 3 <= na; i += 3)
      scores3(sc + act[i] * KEYS, sc + act[i + 1] * KEYS, sc + act[i + 2] * KEYS, qbuf + act[i] * hdp,
              qbuf + act[i + 1] * hdp, qbuf + act[i + 2] * hdp, kv, hdp, nk4, t->scale);
    for (; i + 2 <= na; i += 2)
      scores2(sc + act[i] * KEYS, sc + act[i + 1] * KEYS, qbuf + act[i] * hdp, qbuf + act[i + 1] * hdp, kv, hdp, nk4,
              t->scale);
    if (i < na) scores1(sc + act[i] * KEYS, qbuf + act[i] * hdp, kv, hdp, nk4, t->scale);
    for (i = 0; i < na; i++) {
      const int32_t r = act[i], lim = t->last[r] - b0 < nk - 1 ? t->last[r] - b0 : nk - 1;
      if (nk8 > nk4) memset(sc + r * KEYS + nk4, 0, (size_t)(nk8 - nk4) * sizeof(float));
      corr[i] = softmax_block(sc + r * KEYS, nk8, t->first[r] - b0, lim, t->softcap, &t->m[r], &t->l[r]);
    }
    load_rows(kv, t, t->v, t->dt, b0, nk, t->hd, hdp, end);
    for (i = 0; i + 3 <= na; i += 3)
      pv3(t->acc + act[i] * hdp, t->acc + act[i + 1] * hdp, t->acc + act[i + 2] * hdp, sc + act[i] * KEYS,
          sc + act[i + 1] * KEYS, sc + act[i + 2] * KEYS, corr[i], corr[i + 1], corr[i + 2], kv, hdp, nk);
    for (; i + 2 <= na; i += 2)
      pv2(t->acc + act[i] * hdp, t->acc + act[i + 1] * hdp, sc + act[i] * KEYS, sc + act[i + 1] * KEYS, corr[i],
          corr[i + 1], kv, hdp, nk);
    if (i < na) pv1(t->acc + act[i] * hdp, sc + act[i] * KEYS, corr[i], kv, hdp, nk);
  }
}
