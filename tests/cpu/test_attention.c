/* CPU attention (src/ops/cpu/attention_cpu.c): the tiled sdpa and flash paths of every kernel table (scalar
 * oracle, AVX2, AVX-512 where the CPU has it) against the eager reference (KV heads copied per q head, full
 * score rows, products summed in order) on synthetic caches at awkward sizes: head_dim 64/80/128 and 36
 * (not a multiple of 8), GQA groups 1/2/4/7, contexts of 1..1100 keys (tails of the 4-key, 8-lane and 32-key
 * blocks), one token and several tokens at causal positions that do not start at 0 (more rows than one
 * tile), f32/bf16/f16 caches, and key ranges split into pieces that are merged (nsplit 1, 3 and auto).
 *
 * Tolerance, per output element i, from the reference's own softmax weights p_j and values v_j:
 *   both sides compute the same math in different f32 orders. A score q.k (hd products) summed in two
 *   orders differs by at most 2*gamma_hd*sum|q k| (Higham 3.1, gamma_m = m u/(1 - m u), u = 2^-24), times
 *   the scale; subtracting the max adds u*|s|. A score error e_s changes every normalized weight by a factor
 *   within exp(+-2 e_s). exp itself (expf, or the AVX2 polynomial, ~2 ulp) adds 4u per weight, the sums over
 *   L keys 2*gamma_L, the division u. So |o_i - ref_i| <= (2 e_s + 4u + 2 gamma_L + u) * sum_j p_j |v_ji|,
 *   and the test allows twice that plus 1e-30 for denormal noise. A real indexing or masking bug moves the
 *   output by O(|v|) and fails by orders of magnitude.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/threadpool.h"
#include "ops/cpu/attention_cpu.h"
#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/half.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) { /* uniform in [-1, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((rng >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}

static double gamma_m(int64_t m) {
  double u = m * ldexp(1.0, -24);
  return u / (1 - u);
}

static void store(void *dst, xpi_dtype dt, int64_t i, float f) {
  if (dt == XPI_DT_F32) memcpy((char *)dst + 4 * i, &f, 4);
  else {
    uint16_t h = dt == XPI_DT_BF16 ? xpi_f32_to_bf16(f) : xpi_f32_to_f16(f);
    memcpy((char *)dst + 2 * i, &h, 2);
  }
}

static const char *dt_name(xpi_dtype dt) { return dt == XPI_DT_F32 ? "f32" : dt == XPI_DT_F16 ? "f16" : "bf16"; }

/* Per output element: the allowed difference (see the top comment), from the cache as the kernels see it. */
static void bounds(double *tol, const float *q, const xpi_cpu_kv_layer *kv, const int32_t *pos, int32_t n, int32_t hq,
                   float scale) {
  const int32_t hd = kv->hd, grp = hq / kv->hk;
  const double u = ldexp(1.0, -24);
  for (int32_t t = 0; t < n; t++)
    for (int32_t h = 0; h < hq; h++) {
      const int32_t L = pos[t] + 1, g = h / grp;
      const float *qr = q + ((size_t)t * hq + h) * hd;
      double *s = malloc(sizeof(double) * (size_t)L), es = 0, mx = -INFINITY, sum = 0;
      for (int32_t j = 0; j < L; j++) {
        double d = 0, a = 0;
        for (int32_t i = 0; i < hd; i++) {
          double kk = xpi_cpu_load_elem(kv->k, kv->dtype, j * kv->slot_stride + g * kv->head_stride + i);
          d += qr[i] * kk;
          a += fabs(qr[i] * kk);
        }
        s[j] = d * scale;
        double e = 2 * gamma_m(hd) * a * scale + u * fabs(s[j]);
        es = e > es ? e : es;
        mx = s[j] > mx ? s[j] : mx;
      }
      for (int32_t j = 0; j < L; j++) sum += (s[j] = exp(s[j] - mx));
      const double rel = 2 * es + 4 * u + 2 * gamma_m(L) + u;
      for (int32_t i = 0; i < hd; i++) {
        double b = 0;
        for (int32_t j = 0; j < L; j++)
          b += s[j] / sum * fabs(xpi_cpu_load_elem(kv->v, kv->dtype, j * kv->slot_stride + g * kv->head_stride + i));
        tol[((size_t)t * hq + h) * hd + i] = 2 * rel * b + 1e-30;
      }
      free(s);
    }
}

/* One shape: all tables x {sdpa, flash} x nsplit against eager. */
static void attn_case(xpi_pool *pool, xpi_dtype dt, int32_t hd, int32_t grp, int32_t L, int32_t n) {
  const int32_t hk = 2, hq = hk * grp;
  const float scale = 1.0f / sqrtf((float)hd);
  const size_t esz = dt == XPI_DT_F32 ? 4 : 2, kvn = (size_t)L * hk * hd, qn = (size_t)n * hq * hd;
  /* exactly L slots: a read past the last visible key is caught by the sanitizer build */
  void *kc = malloc(kvn * esz), *vc = malloc(kvn * esz);
  float *q = malloc(qn * sizeof *q), *ref = malloc(qn * sizeof *ref), *out = malloc(qn * sizeof *out);
  double *tol = malloc(qn * sizeof *tol);
  int32_t *pos = malloc(sizeof(int32_t) * (size_t)n);
  /* larger q for some shapes: scores spread over several units, exercising the running max */
  const float qmul = (L % 2) ? 4.0f : 1.0f;
  for (size_t i = 0; i < kvn; i++) {
    store(kc, dt, (int64_t)i, frand());
    store(vc, dt, (int64_t)i, frand());
  }
  for (size_t i = 0; i < qn; i++) q[i] = frand() * qmul;
  for (int32_t t = 0; t < n; t++) pos[t] = L - n + t; /* the last n tokens of the context */
  /* both layouts: head-major (the backend's) and slot-major */
  const xpi_cpu_kv_layer kv = (L + n + hd) % 2 ? (xpi_cpu_kv_layer){kc, vc, dt, hk, hd, (int64_t)L * hd, hd}
                                                : (xpi_cpu_kv_layer){kc, vc, dt, hk, hd, hd, (int64_t)hk * hd};
  CHECK_OK(xpi_cpu_attention(pool, xpi_cpu_kernels_scalar(), ref, q, &kv, pos, n, hq, scale, XPI_ATTN_EAGER, 0));
  bounds(tol, q, &kv, pos, n, hq, scale);
  for (int isa = XPI_ISA_SCALAR; isa <= XPI_ISA_AVX512; isa++) {
    const xpi_cpu_kernels *k = xpi_cpu_kernels_for((xpi_cpu_isa)isa);
    if (!k) continue;
    for (int impl = 0; impl < 2; impl++)
      for (int32_t nsplit = 0; nsplit <= 3; nsplit += (nsplit == 1 ? 2 : 1)) {
        /* the scalar table is slow (element-wise half conversion): one split setting per impl keeps the
         * sanitizer run short; the vector tables run every combination */
        if (isa == XPI_ISA_SCALAR && nsplit != (impl ? 3 : 0)) continue;
        memset(out, 0xff, qn * sizeof *out); /* NaN: every element must be written */
        CHECK_OK(xpi_cpu_attention(pool, k, out, q, &kv, pos, n, hq, scale, impl ? XPI_ATTN_FLASH : XPI_ATTN_SDPA,
                                   nsplit));
        size_t bad = 0, worst = 0;
        double worst_r = 0;
        for (size_t i = 0; i < qn; i++) {
          double d = fabs((double)out[i] - ref[i]);
          if (!(d <= tol[i])) bad++;
          if (!(d <= worst_r * tol[i])) {
            worst_r = d / tol[i];
            worst = i;
          }
        }
        CHECK(bad == 0,
              "%s %s %s hd %d grp %d L %d n %d nsplit %d: %zu of %zu outside tolerance, worst [%zu] %.9g vs %.9g "
              "(tol %.3g)",
              k->isa, impl ? "flash" : "sdpa", dt_name(dt), hd, grp, L, n, nsplit, bad, qn, worst, out[worst],
              ref[worst], tol[worst]);
      }
  }
  free(kc);
  free(vc);
  free(q);
  free(ref);
  free(out);
  free(tol);
  free(pos);
}

int main(void) {
  xpi_pool *pool = NULL;
  CHECK_OK(xpi_pool_create(2, &pool));
  if (!pool) return xpi_test_done();
  const xpi_dtype dts[] = {XPI_DT_F32, XPI_DT_BF16, XPI_DT_F16};
  const int32_t hds[] = {64, 80, 128, 36}, grps[] = {1, 2, 4, 7}, Ls[] = {1, 2, 7, 31, 33, 100, 1100};
  for (int d = 0; d < 3; d++)
    for (int a = 0; a < 4; a++)
      for (int b = 0; b < 4; b++)
        for (int c = 0; c < 7; c++) {
          const int32_t L = Ls[c];
          /* long context (sanitizer time): groups 2 and 7, head_dim 128 and 80 suffice */
          if (L >= 1000 && (grps[b] == 1 || grps[b] == 4 || hds[a] == 64 || hds[a] == 36)) continue;
          attn_case(pool, dts[d], hds[a], grps[b], L, 1); /* decode */
          /* prefill chunk continuing a context: up to 19 tokens (several tiles), fewer for the long context */
          const int32_t n = L >= 1000 ? 3 : L < 19 ? L : 19;
          if (n > 1) attn_case(pool, dts[d], hds[a], grps[b], L, n);
        }
  xpi_pool_free(pool);
  return xpi_test_done();
}
