/* CPU attention (src/ops/cpu/attention_cpu.c) over paged KV caches: the tiled sdpa and flash paths of every
 * kernel table (scalar oracle, AVX2, AVX-512 where the CPU has it) and the eager path reading through block
 * tables, against the eager reference run on each sequence's own contiguous copy of its cache (KV heads
 * copied per q head, full score rows, products summed in order), at awkward sizes: head_dim 64/80/128 and 36
 * (not a multiple of 8), GQA groups 1/2/4/7, contexts of 1..1100 keys (tails of the 4-key, 8-lane and 32-key
 * blocks), one token and several tokens at causal positions that do not start at 0 (more rows than one
 * tile), f32/bf16/f16 caches, key ranges split into pieces that are merged (nsplit 1, 3 and auto), blocks
 * of 16 and 32 positions in scrambled order in a shared pool (two layouts inside a block) or one contiguous
 * block, and batches of several sequences of different lengths, decode and prefill mixed, with a
 * sequence's tokens split in two runs (as the engine orders output rows last).
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

/* Per output element: the allowed difference (see the top comment), from the cache as the kernels see it,
 * and the exact (double) output, with the sliding window and the softcap of ap. */
static void bounds(double *tol, double *exact, const float *q, const xpi_cpu_kv_layer *kv, const int32_t *pos,
                   int32_t n, int32_t hq, const xpi_attn_params *ap) {
  const int32_t hd = kv->hd, grp = hq / kv->hk;
  const double u = ldexp(1.0, -24), cap = ap->softcap;
  for (int32_t t = 0; t < n; t++)
    for (int32_t h = 0; h < hq; h++) {
      const int32_t L = pos[t] + 1, g = h / grp;
      const int32_t j0 = ap->window > 0 && L > ap->window ? L - ap->window : 0; /* kv_idx > q_idx - window */
      const float *qr = q + ((size_t)t * hq + h) * hd;
      double *s = malloc(sizeof(double) * (size_t)L), es = 0, mx = -INFINITY, sum = 0;
      for (int32_t j = j0; j < L; j++) {
        double d = 0, a = 0;
        for (int32_t i = 0; i < hd; i++) {
          double kk = xpi_cpu_load_elem(kv->k, kv->dtype, j * kv->slot_stride + g * kv->head_stride + i);
          d += qr[i] * kk;
          a += fabs(qr[i] * kk);
        }
        s[j] = d * ap->scale;
        /* the softcap's slope is at most 1, so it carries a score's error over unchanged, and adds its own:
         * the division and tanh (tanhf ~2 ulp, the AVX2 form ~4 u absolutely), times the cap: 8 u cap */
        double e = 2 * gamma_m(hd) * a * ap->scale + (cap > 0 ? 8 * u * cap : 0);
        if (cap > 0) s[j] = cap * tanh(s[j] / cap);
        e += u * fabs(s[j]);
        es = e > es ? e : es;
        mx = s[j] > mx ? s[j] : mx;
      }
      for (int32_t j = j0; j < L; j++) sum += (s[j] = exp(s[j] - mx));
      const double rel = 2 * es + 4 * u + 2 * gamma_m(L - j0) + u;
      for (int32_t i = 0; i < hd; i++) {
        double b = 0, o = 0;
        for (int32_t j = j0; j < L; j++) {
          const double vv = xpi_cpu_load_elem(kv->v, kv->dtype, j * kv->slot_stride + g * kv->head_stride + i);
          b += s[j] / sum * fabs(vv);
          o += s[j] / sum * vv;
        }
        tol[((size_t)t * hq + h) * hd + i] = 2 * rel * b + 1e-30;
        exact[((size_t)t * hq + h) * hd + i] = o;
      }
      free(s);
    }
}

/* A batch of sequences: sequence s has L[s] positions and its last n[s] tokens run in the step. The cache is
 * a pool of blocks of 2^bshift positions (bshift 30: one contiguous block per sequence), blocks handed out in
 * scrambled order; slot_major lays a block out [row][head][hd] instead of [head][row][hd]. Every table x
 * {sdpa, flash} x nsplit, and the paged eager path, against eager on each sequence's contiguous copy (itself
 * checked against the exact double output). window / softcap: the sliding window and logit softcap; then
 * the pool's rows before every window of the step are overwritten with NaN, so any read of them (a V row
 * times a zero weight is NaN too) fails the comparison. qmul: q's magnitude (0: the default). */
static void attn_batch_w(xpi_pool *pool, xpi_dtype dt, int32_t hd, int32_t grp, int nseq, const int32_t *L,
                         const int32_t *n, int32_t bshift, int slot_major, int32_t window, float softcap, float qmul_in) {
  const int32_t hk = 2, hq = hk * grp;
  const float scale = 1.0f / sqrtf((float)hd);
  const xpi_attn_params ape = {scale, softcap, window, XPI_ATTN_EAGER};
  const size_t esz = dt == XPI_DT_F32 ? 4 : 2;
  int32_t ntok = 0, maxL = 0;
  for (int s = 0; s < nseq; s++) ntok += n[s], maxL = L[s] > maxL ? L[s] : maxL;
  const int32_t bs = bshift >= 30 ? maxL : 1 << bshift, max_blocks = (maxL + bs - 1) / bs;
  int32_t n_blocks = 0;
  for (int s = 0; s < nseq; s++) n_blocks += (L[s] + bs - 1) / bs;
  n_blocks += 3; /* blocks no sequence uses */
  const size_t blk_elems = (size_t)bs * hk * hd, qn = (size_t)ntok * hq * hd;
  void *kp = malloc((size_t)n_blocks * blk_elems * esz), *vp = malloc((size_t)n_blocks * blk_elems * esz);
  int32_t *tables = malloc(sizeof(int32_t) * (size_t)nseq * (size_t)max_blocks);
  int32_t *perm = malloc(sizeof(int32_t) * (size_t)n_blocks);
  for (int32_t i = 0; i < n_blocks; i++) perm[i] = i;
  for (int32_t i = n_blocks - 1; i > 0; i--) { /* scrambled block ids */
    int32_t j = (int32_t)((rng >> 20) % (uint64_t)(i + 1)), t = perm[i];
    frand();
    perm[i] = perm[j];
    perm[j] = t;
  }
  const int64_t head_stride = slot_major ? hd : (int64_t)bs * hd, slot_stride = slot_major ? (int64_t)hk * hd : hd;
  const xpi_cpu_kv_layer kv = {kp, vp, dt, hk, hd, head_stride, slot_stride, (int64_t)blk_elems,
                               bshift >= 30 ? 30 : bshift};
  float *q = malloc(qn * sizeof *q), *ref = malloc(qn * sizeof *ref), *out = malloc(qn * sizeof *out);
  double *tol = malloc(qn * sizeof *tol), *exact = malloc(qn * sizeof *exact);
  int32_t *pos = malloc(sizeof(int32_t) * (size_t)ntok), *seq = malloc(sizeof(int32_t) * (size_t)ntok);
  int32_t *order = malloc(sizeof(int32_t) * (size_t)ntok); /* batch row -> (sequence-major) reference row */
  /* larger q for some shapes: scores spread over several units, exercising the running max */
  const float qmul = qmul_in > 0 ? qmul_in : (maxL % 2) ? 4.0f : 1.0f;
  for (size_t i = 0; i < qn; i++) q[i] = frand() * qmul;
  /* batch rows: each sequence's tokens in order, except that the first sequence with several tokens has its
   * last one moved to the end of the batch */
  int moved = -1;
  for (int s = 0; s < nseq && moved < 0; s++)
    if (n[s] > 1 && nseq > 1) moved = s;
  int32_t row = 0, ref_row = 0, moved_row = -1;
  for (int s = 0; s < nseq; s++)
    for (int32_t t = 0; t < n[s]; t++, ref_row++) {
      if (s == moved && t == n[s] - 1) {
        moved_row = ref_row;
        continue;
      }
      order[row] = ref_row, pos[row] = L[s] - n[s] + t, seq[row] = s, row++;
    }
  if (moved >= 0) order[row] = moved_row, pos[row] = L[moved] - 1, seq[row] = moved, row++;
  int32_t next_block = 0;
  ref_row = 0;
  for (int s = 0; s < nseq; s++) {
    /* the sequence's own contiguous cache [L][hk][hd]: exactly L slots, so a read past the last visible key
     * is caught by the sanitizer build */
    const size_t kvn = (size_t)L[s] * hk * hd;
    void *kc = malloc(kvn * esz), *vc = malloc(kvn * esz);
    int32_t *tbl = tables + (size_t)s * max_blocks;
    for (int32_t b = 0; b * bs < L[s]; b++) tbl[b] = perm[next_block++];
    for (int32_t j = 0; j < L[s]; j++)
      for (int32_t h = 0; h < hk; h++)
        for (int32_t i = 0; i < hd; i++) {
          const float kf = frand(), vf = frand();
          const int64_t c = ((int64_t)j * hk + h) * hd + i;
          const int64_t p = (int64_t)tbl[j / bs] * (int64_t)blk_elems + (int64_t)(j % bs) * slot_stride +
                            (int64_t)h * head_stride + i;
          store(kc, dt, c, kf), store(vc, dt, c, vf), store(kp, dt, p, kf), store(vp, dt, p, vf);
        }
    const xpi_cpu_kv_layer one = {kc, vc, dt, hk, hd, hd, (int64_t)hk * hd, 0, 30};
    const int32_t zero = 0;
    int32_t *p1 = malloc(sizeof(int32_t) * (size_t)n[s]), *s1 = calloc((size_t)n[s], sizeof(int32_t));
    for (int32_t t = 0; t < n[s]; t++) p1[t] = L[s] - n[s] + t;
    const xpi_cpu_attn_batch b1 = {p1, s1, &zero, 1};
    const size_t off = (size_t)ref_row * hq * hd;
    CHECK_OK(xpi_cpu_attention(pool, xpi_cpu_kernels_scalar(), ref + off, q + off, &one, &b1, n[s], hq, &ape, 0));
    bounds(tol + off, exact + off, q + off, &one, p1, n[s], hq, &ape);
    size_t bad = 0;
    for (size_t e = off; e < off + (size_t)n[s] * hq * hd; e++) bad += !(fabs(ref[e] - exact[e]) <= tol[e]);
    CHECK(bad == 0, "eager reference vs double (window %d softcap %g): %zu elements outside tolerance", window,
          (double)softcap, bad);
    if (window > 0) { /* NaN over the pool's rows before the first key any of this step's windows holds */
      const int32_t p0 = L[s] - n[s], first = p0 >= window ? p0 - window + 1 : 0;
      for (int32_t j = 0; j < first; j++)
        for (int32_t h = 0; h < hk; h++)
          for (int32_t i = 0; i < hd; i++) {
            const int64_t p = (int64_t)tbl[j / bs] * (int64_t)blk_elems + (int64_t)(j % bs) * slot_stride +
                              (int64_t)h * head_stride + i;
            store(kp, dt, p, NAN), store(vp, dt, p, NAN);
          }
    }
    ref_row += n[s];
    free(p1);
    free(s1);
    free(kc);
    free(vc);
  }
  /* the batch's q rows in batch order */
  float *qb = malloc(qn * sizeof *qb);
  const size_t rl = (size_t)hq * hd;
  for (int32_t r = 0; r < ntok; r++) memcpy(qb + (size_t)r * rl, q + (size_t)order[r] * rl, rl * sizeof *qb);
  const xpi_cpu_attn_batch batch = {pos, seq, tables, max_blocks};
  char what[160];
  snprintf(what, sizeof what, "%s hd %d grp %d seqs %d (L0 %d n0 %d) block 2^%d%s", dt_name(dt), hd, grp, nseq, L[0],
           n[0], bshift, slot_major ? " slot-major" : "");
  for (int isa = XPI_ISA_SCALAR - 1; isa <= XPI_ISA_AVX512; isa++) {
    const xpi_cpu_kernels *k = xpi_cpu_kernels_for((xpi_cpu_isa)(isa < 0 ? 0 : isa));
    if (!k) continue;
    for (int impl = 0; impl < 2; impl++)
      for (int32_t nsplit = 0; nsplit <= 3; nsplit += (nsplit == 1 ? 2 : 1)) {
        /* isa -1: the paged eager path once; the scalar table is slow (element-wise half conversion): one split
         * setting per impl keeps the sanitizer run short; the vector tables run every combination */
        if (isa < 0 && (impl || nsplit)) continue;
        if (isa == XPI_ISA_SCALAR && nsplit != (impl ? 3 : 0)) continue;
        memset(out, 0xff, qn * sizeof *out); /* NaN: every element must be written */
        const xpi_attn_impl im = isa < 0 ? XPI_ATTN_EAGER : impl ? XPI_ATTN_FLASH : XPI_ATTN_SDPA;
        const xpi_attn_params ap = {scale, softcap, window, im};
        CHECK_OK(xpi_cpu_attention(pool, k, out, qb, &kv, &batch, ntok, hq, &ap, nsplit));
        size_t bad = 0, worst = 0;
        double worst_r = 0;
        for (int32_t r = 0; r < ntok; r++)
          for (size_t e = 0; e < rl; e++) {
            const size_t i = (size_t)r * rl + e, ri = (size_t)order[r] * rl + e;
            double d = fabs((double)out[i] - ref[ri]);
            if (!(d <= tol[ri])) bad++;
            if (!(d <= worst_r * tol[ri])) {
              worst_r = d / tol[ri];
              worst = i;
            }
          }
        CHECK(bad == 0,
              "%s %s %s window %d softcap %g nsplit %d: %zu of %zu outside tolerance, worst [%zu] %.9g (tol ratio %.3g)",
              isa < 0 ? "paged-eager" : k->isa, im == XPI_ATTN_FLASH ? "flash" : im == XPI_ATTN_SDPA ? "sdpa" : "eager",
              what, window, (double)softcap, nsplit, bad, qn, worst, out[worst], worst_r);
      }
  }
  free(kp);
  free(vp);
  free(tables);
  free(perm);
  free(q);
  free(qb);
  free(ref);
  free(out);
  free(tol);
  free(exact);
  free(pos);
  free(seq);
  free(order);
}

static void attn_batch(xpi_pool *pool, xpi_dtype dt, int32_t hd, int32_t grp, int nseq, const int32_t *L,
                       const int32_t *n, int32_t bshift, int slot_major) {
  attn_batch_w(pool, dt, hd, grp, nseq, L, n, bshift, slot_major, 0, 0, 0);
}

int main(void) {
  xpi_pool *pool = NULL;
  CHECK_OK(xpi_pool_create(2, &pool));
  if (!pool) return xpi_test_done();
  const xpi_dtype dts[] = {XPI_DT_F32, XPI_DT_BF16, XPI_DT_F16};
  const int32_t hds[] = {64, 80, 128, 36}, grps[] = {1, 2, 4, 7}, Ls[] = {1, 2, 7, 31, 33, 100, 1100};
  int variant = 0;
  for (int d = 0; d < 3; d++)
    for (int a = 0; a < 4; a++)
      for (int b = 0; b < 4; b++)
        for (int c = 0; c < 7; c++) {
          const int32_t L = Ls[c];
          /* long context (sanitizer time): groups 2 and 7, head_dim 128 and 80 suffice */
          if (L >= 1000 && (grps[b] == 1 || grps[b] == 4 || hds[a] == 64 || hds[a] == 36)) continue;
          /* one sequence, cycling through the cache layouts: contiguous, 16- and 32-position blocks, slot-major */
          const int32_t shifts[4] = {30, 4, 5, 4};
          const int v = variant++ % 4;
          const int32_t one = 1;
          attn_batch(pool, dts[d], hds[a], grps[b], 1, &L, &one, shifts[v], v == 3); /* decode */
          /* prefill chunk continuing a context: up to 19 tokens (several tiles), fewer for the long context */
          const int32_t n = L >= 1000 ? 3 : L < 19 ? L : 19;
          if (n > 1) attn_batch(pool, dts[d], hds[a], grps[b], 1, &L, &n, shifts[v], v == 3);
        }
  /* several sequences in one step: a decode batch of different lengths, and decode mixed with prefill */
  const int32_t dl[4] = {1, 33, 100, 64}, dn[4] = {1, 1, 1, 1};
  const int32_t ml[3] = {40, 7, 100}, mn[3] = {19, 1, 5};
  for (int d = 0; d < 3; d++)
    for (int b = 1; b < 4; b += 2) {
      attn_batch(pool, dts[d], 128, grps[b], 4, dl, dn, 4, 0);
      attn_batch(pool, dts[d], 64, grps[b], 3, ml, mn, 5, d == 1);
      attn_batch(pool, dts[d], 80, grps[b], 3, ml, mn, 4, 0);
    }
  /* Sliding windows (blocks of 16 and 32, contiguous, slot-major): smaller than the context and crossing block
   * boundaries (20, 7), of one key, equal to and larger than the context, decode and prefill chunks continuing
   * a cached prefix (their rows' windows start at different keys), a long context split in pieces, mixed
   * batches; with and without the softcap. */
  const int32_t wins[5] = {20, 7, 1, 100, 300};
  for (int d = 0; d < 3; d++)
    for (int w = 0; w < 5; w++) {
      const int32_t L = 100, one = 1, n19 = 19, shifts[4] = {4, 5, 30, 4};
      const float cap = w % 2 ? 0 : 30;
      attn_batch_w(pool, dts[d], 64, 2, 1, &L, &one, shifts[w % 4], w % 4 == 3, wins[w], cap, 0);
      attn_batch_w(pool, dts[d], 80, 4, 1, &L, &n19, shifts[(w + 1) % 4], (w + 1) % 4 == 3, wins[w], cap, 0);
      attn_batch_w(pool, dts[d], 128, 1, 1, &L, &n19, 4, 0, wins[w], 0, 0);
      /* a two-row tile of two tokens (AVX2 direct path) whose windows start at different keys: 18 tokens of
       * group 1 leave a last tile of two, and a 2-token step */
      const int32_t n18 = 18, n2 = 2;
      attn_batch_w(pool, dts[d], 64, 1, 1, &L, &n18, 4, 0, wins[w], cap, 0);
      attn_batch_w(pool, dts[d], 64, 1, 1, &L, &n2, 5, 0, wins[w], 0, 0);
    }
  for (int d = 0; d < 3; d++) {
    const int32_t L = 1100, one = 1, three = 3;
    attn_batch_w(pool, dts[d], 128, 2, 1, &L, &one, 4, 0, 512, 0, 0);
    attn_batch_w(pool, dts[d], 80, 7, 1, &L, &three, 5, 0, 64, 50, 0);
    attn_batch_w(pool, dts[d], 128, 2, 4, dl, dn, 4, 0, 33, 0, 0);
    attn_batch_w(pool, dts[d], 64, 2, 3, ml, mn, 5, d == 1, 16, 30, 0);
    attn_batch_w(pool, dts[d], 36, 4, 3, ml, mn, 4, 0, 9, 0, 0);
  }
  /* the softcap with large logits (|q| up to 40: raw scores far beyond the cap, capped near +-10), with and
   * without a window, decode (direct path) and prefill (buffered) */
  for (int d = 0; d < 3; d++) {
    const int32_t L = 77, one = 1, n9 = 9;
    attn_batch_w(pool, dts[d], 64, 1, 1, &L, &one, 4, 0, 0, 10, 40);
    attn_batch_w(pool, dts[d], 64, 2, 1, &L, &n9, 4, 0, 0, 10, 40);
    attn_batch_w(pool, dts[d], 80, 4, 3, ml, mn, 4, 0, 25, 10, 40);
  }
  xpi_pool_free(pool);
  return xpi_test_done();
}
