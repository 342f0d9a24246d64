/* Every CPU backend op against a plain double-precision reference, at awkward sizes (odd d, n = 1 and 7,
 * hq/hk = 3), for use_kernels 0 and 1, weights f32/f16/bf16, the three attention implementations and the
 * three KV cache dtypes.
 *
 * Tolerance: the backend computes in f32. A dot product of length d <= 64 over values of magnitude <= 1 has
 * an f32 rounding error below d * 2^-24 * sum|terms| ~ 4e-6 * scale; exp/rsqrt add a few ulps. TOL = 2e-5
 * relative to the magnitude of the sum of |terms| (at least 1) covers that while a wrong index, a dropped
 * term or a wrong softmax is off by > 1e-2. Inputs are rounded to the weight/cache dtype first, so the
 * reference sees exactly the values the backend sees. */
#include <math.h>

#include "check.h"
#include "ops/half.h"
#include "ops/ops.h"

#define TOL 2e-5

static uint64_t g_rng = 12345;
static float frand(void) { /* uniform in [-1, 1) */
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static float round_to(xpi_dtype dt, float x) {
  if (dt == XPI_DT_BF16) return xpi_bf16_to_f32(xpi_f32_to_bf16(x));
  if (dt == XPI_DT_F16) return xpi_f16_to_f32(xpi_f32_to_f16(x));
  return x;
}

/* A host tensor in dtype dt holding round_to(dt, vals). */
static void *pack(xpi_dtype dt, const float *vals, size_t n) {
  void *p = malloc(n * 4 + 1);
  unsigned char *b = (unsigned char *)p + 1; /* deliberately unaligned, like tensors inside a safetensors file */
  for (size_t i = 0; i < n; i++) {
    if (dt == XPI_DT_F32) memcpy(b + 4 * i, &vals[i], 4);
    else {
      uint16_t h = dt == XPI_DT_BF16 ? xpi_f32_to_bf16(vals[i]) : xpi_f32_to_f16(vals[i]);
      memcpy(b + 2 * i, &h, 2);
    }
  }
  return p;
}

static int close_to(double got, double want, double scale) { return fabs(got - want) <= TOL * (scale > 1 ? scale : 1); }

static void rnd(float *x, size_t n, xpi_dtype dt) {
  for (size_t i = 0; i < n; i++) x[i] = round_to(dt, frand());
}

static const xpi_dtype k_dts[] = {XPI_DT_F32, XPI_DT_F16, XPI_DT_BF16};

static void test_matmul(xpi_backend *be) {
  const int rows = 13, cols = 37;
  for (int di = 0; di < 3; di++)
    for (int n = 1; n <= 7; n += 6) {
      xpi_dtype dt = k_dts[di];
      float W[13 * 37], B[13], X[7 * 37], Y[7 * 13];
      rnd(W, sizeof W / 4, dt);
      rnd(B, 13, dt);
      rnd(X, sizeof X / 4, XPI_DT_F32);
      void *wp = pack(dt, W, sizeof W / 4), *bp = pack(dt, B, 13);
      xpi_weight w, b;
      CHECK_OK(be->ops->weight_create(be, &w, (unsigned char *)wp + 1, dt, rows, cols, dt));
      CHECK_OK(be->ops->weight_create(be, &b, (unsigned char *)bp + 1, dt, 1, rows, dt));
      for (int withb = 0; withb < 2; withb++) {
        CHECK_OK(be->ops->matmul(be, Y, X, &w, withb ? &b : NULL, n));
        for (int t = 0; t < n; t++)
          for (int r = 0; r < rows; r++) {
            double s = withb ? B[r] : 0, sc = fabs(s);
            for (int c = 0; c < cols; c++) s += (double)X[t * cols + c] * W[r * cols + c], sc += fabs(X[t * cols + c] * W[r * cols + c]);
            CHECK(close_to(Y[t * rows + r], s, sc), "matmul %s n=%d bias=%d [%d,%d]: %g vs %g", xpi_dtype_name(dt), n,
                  withb, t, r, Y[t * rows + r], s);
          }
      }
      /* converted placement (stored f32 -> dt) must equal the direct one */
      if (dt != XPI_DT_F32) {
        void *wf = pack(XPI_DT_F32, W, sizeof W / 4);
        xpi_weight w2;
        float Y2[7 * 13];
        CHECK_OK(be->ops->weight_create(be, &w2, (unsigned char *)wf + 1, XPI_DT_F32, rows, cols, dt));
        CHECK_OK(be->ops->matmul(be, Y, X, &w, NULL, n));
        CHECK_OK(be->ops->matmul(be, Y2, X, &w2, NULL, n));
        CHECK(memcmp(Y, Y2, sizeof(float) * (size_t)(n * rows)) == 0, "converted weight %s differs", xpi_dtype_name(dt));
        be->ops->weight_free(be, &w2);
        free(wf);
      }
      be->ops->weight_free(be, &w);
      be->ops->weight_free(be, &b);
      free(wp);
      free(bp);
    }
}

static void test_embed_rmsnorm(xpi_backend *be) {
  const int V = 11, d = 37;
  for (int di = 0; di < 3; di++) {
    xpi_dtype dt = k_dts[di];
    float T[11 * 37], Wn[37], out[7 * 37], x[7 * 37], res[7 * 37], x0[7 * 37];
    rnd(T, sizeof T / 4, dt);
    rnd(Wn, d, dt);
    void *tp = pack(dt, T, sizeof T / 4), *np = pack(dt, Wn, d);
    xpi_weight tw, nw;
    CHECK_OK(be->ops->weight_create(be, &tw, (unsigned char *)tp + 1, dt, V, d, dt));
    CHECK_OK(be->ops->weight_create(be, &nw, (unsigned char *)np + 1, dt, 1, d, dt));
    int32_t ids[7] = {3, 0, 10, 3, 7, 1, 9};
    CHECK_OK(be->ops->embed(be, out, &tw, ids, 7));
    CHECK(memcmp(out + 2 * d, T + 10 * d, (size_t)d * 4) == 0 && memcmp(out + 6 * d, T + 9 * d, (size_t)d * 4) == 0,
          "embed %s", xpi_dtype_name(dt));
    int32_t bad = 11;
    CHECK_ERR(be->ops->embed(be, out, &tw, &bad, 1), XPI_ERR_INVALID_ARGUMENT, "out of range");
    for (int n = 1; n <= 7; n += 6)
      for (int withr = 0; withr < 2; withr++) {
        rnd(x, sizeof x / 4, XPI_DT_F32);
        rnd(res, sizeof res / 4, XPI_DT_F32);
        memcpy(x0, x, sizeof x);
        CHECK_OK(be->ops->rmsnorm(be, out, x, withr ? res : NULL, &nw, n, d, 1e-6f));
        for (int t = 0; t < n; t++) {
          double xs[37], ss = 0;
          for (int i = 0; i < d; i++) {
            xs[i] = (double)x0[t * d + i] + (withr ? res[t * d + i] : 0);
            ss += xs[i] * xs[i];
            CHECK(close_to(x[t * d + i], xs[i], fabs(xs[i])), "rmsnorm residual stream");
          }
          double rr = 1.0 / sqrt(ss / d + 1e-6);
          for (int i = 0; i < d; i++)
            CHECK(close_to(out[t * d + i], xs[i] * rr * Wn[i], 3), "rmsnorm %s n=%d res=%d [%d,%d]: %g vs %g",
                  xpi_dtype_name(dt), n, withr, t, i, out[t * d + i], xs[i] * rr * Wn[i]);
        }
      }
    be->ops->weight_free(be, &tw);
    be->ops->weight_free(be, &nw);
    free(tp);
    free(np);
  }
}

static void ref_rope(double *x, int hd, int pos, const float *inv) {
  double y[64];
  for (int i = 0; i < hd / 2; i++) {
    double a = (double)(float)((float)pos * inv[i]), c = cos(a), s = sin(a);
    y[i] = x[i] * c - x[i + hd / 2] * s;
    y[i + hd / 2] = x[i + hd / 2] * c + x[i] * s;
  }
  memcpy(x, y, sizeof(double) * (size_t)hd);
}

static void test_rope(xpi_backend *be) {
  enum { HQ = 3, HK = 1, HD = 10, N = 7 };
  xpi_rope_params rp = {.type = XPI_ROPE_DEFAULT, .theta = 10000.0f, .head_dim = HD};
  float inv[HD / 2];
  xpi_rope_inv_freq(&rp, inv);
  int32_t pos[N] = {0, 1, 5, 9, 100, 4095, 3};
  float qn[HD], kn[HD];
  rnd(qn, HD, XPI_DT_BF16);
  rnd(kn, HD, XPI_DT_BF16);
  void *qp = pack(XPI_DT_BF16, qn, HD), *kp = pack(XPI_DT_BF16, kn, HD);
  xpi_weight qw, kw;
  CHECK_OK(be->ops->weight_create(be, &qw, (unsigned char *)qp + 1, XPI_DT_BF16, 1, HD, XPI_DT_BF16));
  CHECK_OK(be->ops->weight_create(be, &kw, (unsigned char *)kp + 1, XPI_DT_BF16, 1, HD, XPI_DT_BF16));
  for (int norm = 0; norm < 2; norm++)
    for (int n = 1; n <= N; n += 6) {
      float q[N * HQ * HD], k[N * HK * HD], q0[N * HQ * HD], k0[N * HK * HD];
      rnd(q, sizeof q / 4, XPI_DT_F32);
      rnd(k, sizeof k / 4, XPI_DT_F32);
      memcpy(q0, q, sizeof q);
      memcpy(k0, k, sizeof k);
      CHECK_OK(be->ops->rope(be, q, k, pos, n, HQ, HK, &rp, inv, norm ? &qw : NULL, norm ? &kw : NULL, 1e-6f));
      for (int t = 0; t < n; t++)
        for (int h = 0; h < HQ + HK; h++) {
          int isq = h < HQ;
          const float *src = isq ? q0 + (t * HQ + h) * HD : k0 + (t * HK + h - HQ) * HD;
          const float *got = isq ? q + (t * HQ + h) * HD : k + (t * HK + h - HQ) * HD;
          double x[HD], ss = 0;
          for (int i = 0; i < HD; i++) ss += (double)src[i] * src[i];
          for (int i = 0; i < HD; i++)
            x[i] = norm ? src[i] / sqrt(ss / HD + 1e-6) * (isq ? qn[i] : kn[i]) : src[i];
          ref_rope(x, HD, pos[t], inv);
          for (int i = 0; i < HD; i++)
            CHECK(close_to(got[i], x[i], 3), "rope norm=%d n=%d t=%d h=%d i=%d: %g vs %g", norm, n, t, h, i, got[i], x[i]);
        }
    }
  be->ops->weight_free(be, &qw);
  be->ops->weight_free(be, &kw);
  free(qp);
  free(kp);
}

/* Two sequences in one paged cache (blocks of 16 in scrambled order), each step running tokens of both:
 * prefill of 7 tokens (and 4 of the other), one decode token (and 5), then 37 tokens (and 1), each impl and
 * cache dtype, vs a double reference per sequence; without and with sliding windows (20: crossing block
 * boundaries, 5, 100: beyond the context) and logit softcaps (30, and 0.5 on scores of a few units: heavily
 * capped). The tolerance (3 TOL): scores of 10 products of values <= 1, f32 sums, softmax of exp within a
 * few ulp and a weighted mean of |v| <= 1: errors of a few 1e-7, far below TOL = 2e-5; a wrong mask or cap
 * moves outputs by O(0.1). */
static void test_attention(xpi_backend *be) {
  enum { HQ = 6, HK = 2, HD = 10, CTX = 45, BS = 16, MB = 3, NB = 8 };
  const xpi_attn_impl impls[] = {XPI_ATTN_SDPA, XPI_ATTN_EAGER, XPI_ATTN_FLASH};
  const int32_t tables[2][MB] = {{5, 1, 6}, {2, 7, 0}};
  const int32_t wins[5] = {0, 20, 5, 100, 0};
  const float caps[5] = {0, 0, 30, 0, 0.5f};
  for (int vi = 0; vi < 5; vi++)
  for (int ci = 0; ci < 3; ci++)
    for (int ii = 0; ii < 3; ii++) {
      const int32_t win = wins[vi];
      const double cap = caps[vi];
      xpi_dtype kdt = k_dts[ci];
      xpi_kv *kv = NULL;
      CHECK_OK(be->ops->kv_create(be, 2, NB, BS, HK, HD, kdt, &kv));
      if (!kv) continue;
      /* all keys/values for positions 0..CTX-1 of each sequence (rounded to the cache dtype for the reference) */
      static float K[2][CTX * HK * HD], Vv[2][CTX * HK * HD], Q[2][CTX * HQ * HD], O[2 * CTX * HQ * HD];
      static float qs[2 * CTX * HQ * HD], ks[2 * CTX * HK * HD], vs[2 * CTX * HK * HD];
      for (int sq = 0; sq < 2; sq++) {
        rnd(K[sq], CTX * HK * HD, kdt);
        rnd(Vv[sq], CTX * HK * HD, kdt);
        rnd(Q[sq], CTX * HQ * HD, XPI_DT_F32);
      }
      float scale = 1.0f / sqrtf((float)HD);
      const xpi_attn_params ap = {scale, caps[vi], win, impls[ii]};
      /* steps: (first position, tokens) of sequence 0, then of sequence 1 */
      int steps[3][2][2] = {{{0, 7}, {0, 4}}, {{7, 1}, {4, 5}}, {{8, 37}, {9, 1}}};
      for (int st = 0; st < 3; st++) {
        int32_t pos[64], seq[64], n = 0;
        for (int sq = 0; sq < 2; sq++) /* the batch: sequence 1's tokens first, then sequence 0's */
          for (int i = 0; i < steps[st][1 - sq][1]; i++, n++) {
            int p = steps[st][1 - sq][0] + i;
            pos[n] = p;
            seq[n] = 1 - sq;
            memcpy(qs + n * HQ * HD, Q[1 - sq] + p * HQ * HD, sizeof(float) * HQ * HD);
            memcpy(ks + n * HK * HD, K[1 - sq] + p * HK * HD, sizeof(float) * HK * HD);
            memcpy(vs + n * HK * HD, Vv[1 - sq] + p * HK * HD, sizeof(float) * HK * HD);
          }
        const xpi_kv_map map = {pos, seq, &tables[0][0], MB};
        CHECK_OK(be->ops->attention(be, O, qs, ks, vs, kv, 1, &map, n, HQ, HK, HD, &ap));
        for (int t = 0; t < n; t++)
          for (int h = 0; h < HQ; h++) {
            const int sq = seq[t], g = h / (HQ / HK), L = pos[t] + 1;
            const int j0 = win > 0 && L > win ? L - win : 0; /* transformers: kv_idx > q_idx - window */
            double sc[CTX], m = -1e300, sum = 0;
            for (int s2 = j0; s2 < L; s2++) {
              double a = 0;
              for (int i = 0; i < HD; i++) a += (double)Q[sq][(pos[t] * HQ + h) * HD + i] * K[sq][(s2 * HK + g) * HD + i];
              sc[s2] = a * scale;
              if (cap > 0) sc[s2] = cap * tanh(sc[s2] / cap);
              m = sc[s2] > m ? sc[s2] : m;
            }
            for (int s2 = j0; s2 < L; s2++) sum += (sc[s2] = exp(sc[s2] - m));
            for (int i = 0; i < HD; i++) {
              double o = 0;
              for (int s2 = j0; s2 < L; s2++) o += sc[s2] / sum * Vv[sq][(s2 * HK + g) * HD + i];
              CHECK(close_to(O[(t * HQ + h) * HD + i], o, 3),
                    "attention impl %d kv %s window %d softcap %g step %d seq %d pos %d h=%d i=%d: %g vs %g", ii,
                    xpi_dtype_name(kdt), win, cap, st, sq, pos[t], h, i, O[(t * HQ + h) * HD + i], o);
            }
          }
      }
      if (win > 0 && win <= BS) { /* the entries before the window's block are never read: -1 there is fine */
        int32_t p44 = CTX - 1, s0 = 0;
        const int32_t stale[MB] = {-1, -1, tables[0][2]};
        const xpi_kv_map full = {&p44, &s0, &tables[0][0], MB}, cut = {&p44, &s0, stale, MB};
        static float O2[HQ * HD];
        memcpy(qs, Q[0] + p44 * HQ * HD, sizeof(float) * HQ * HD);
        memcpy(ks, K[0] + p44 * HK * HD, sizeof(float) * HK * HD);
        memcpy(vs, Vv[0] + p44 * HK * HD, sizeof(float) * HK * HD);
        CHECK_OK(be->ops->attention(be, O, qs, ks, vs, kv, 1, &full, 1, HQ, HK, HD, &ap));
        CHECK_OK(be->ops->attention(be, O2, qs, ks, vs, kv, 1, &cut, 1, HQ, HK, HD, &ap));
        CHECK(memcmp(O, O2, sizeof O2) == 0, "window %d: stale table entries before the window changed the output",
              win);
      }
      int32_t far = MB * BS, zero = 0;
      const xpi_kv_map bad = {&far, &zero, &tables[0][0], MB};
      CHECK_ERR(be->ops->attention(be, O, qs, ks, vs, kv, 1, &bad, 1, HQ, HK, HD, &ap),
                XPI_ERR_CONTEXT_LENGTH, "outside the KV block table");
      const int32_t wild[MB] = {1, 9, 2}, p20 = 20;
      const xpi_kv_map bad2 = {&p20, &zero, wild, MB};
      CHECK_ERR(be->ops->attention(be, O, qs, ks, vs, kv, 1, &bad2, 1, HQ, HK, HD, &ap),
                XPI_ERR_INTERNAL, "outside the pool");
      const xpi_attn_params neg = {scale, 0, -1, impls[ii]}, negcap = {scale, -1, 0, impls[ii]};
      const xpi_kv_map one = {&zero, &zero, &tables[0][0], MB};
      CHECK_ERR(be->ops->attention(be, O, qs, ks, vs, kv, 1, &one, 1, HQ, HK, HD, &neg), XPI_ERR_INVALID_ARGUMENT,
                "window");
      CHECK_ERR(be->ops->attention(be, O, qs, ks, vs, kv, 1, &one, 1, HQ, HK, HD, &negcap), XPI_ERR_INVALID_ARGUMENT,
                "softcap");
      be->ops->kv_free(be, kv);
    }
}

static void test_elementwise(xpi_backend *be) {
  float g[7 * 37], u[7 * 37], o[7 * 37], a[7 * 37];
  rnd(g, sizeof g / 4, XPI_DT_F32);
  rnd(u, sizeof u / 4, XPI_DT_F32);
  CHECK_OK(be->ops->swiglu(be, o, g, u, 7, 37));
  for (int i = 0; i < 7 * 37; i++) {
    double want = g[i] / (1 + exp(-(double)g[i])) * u[i];
    CHECK(close_to(o[i], want, 1), "swiglu %d: %g vs %g", i, o[i], want);
  }
  /* geglu over [-8, 8] and the saturated tails (+-20, where 1 + tanh rounds to 0 or 2), against double. Error:
   * inner has a few u relative error, tanh moves it by (1 - t^2) <= 1 times that (and (1 - t^2) |inner| <= 0.45)
   * plus its own ~2 u, 1 + t then carries that absolute error, times 0.5 |g| |u|: 16 u (1 + |g|) |u| bounds it. */
  for (int i = 0; i < 7 * 37; i++) a[i] = g[i] * 8;
  a[0] = 20, a[1] = -20, a[2] = 0;
  CHECK_OK(be->ops->geglu(be, o, a, u, 7, 37));
  for (int i = 0; i < 7 * 37; i++) {
    const double x = a[i], want = 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))) * u[i];
    CHECK(fabs(o[i] - want) <= 16 * 0x1p-24 * (1 + fabs(x)) * fabs(u[i]), "geglu %d (g %g): %.9g vs %.9g", i, x, o[i],
          want);
  }
  /* softcap 30 over [-200, 200] and +-inf: cap * tanh(x / cap), the division and tanh a few u each, times cap */
  const float cap = 30;
  for (int i = 0; i < 7 * 37; i++) o[i] = a[i] = g[i] * 200;
  o[3] = a[3] = INFINITY, o[4] = a[4] = -INFINITY, o[5] = a[5] = NAN;
  CHECK_OK(be->ops->softcap(be, o, 7 * 37, cap));
  CHECK(isnan(o[5]), "softcap of NaN: %g (broken logits must stay visible to argmax)", o[5]);
  for (int i = 0; i < 7 * 37; i++) {
    if (i == 5) continue;
    const double want = cap * tanh((double)a[i] / cap);
    CHECK(fabs(o[i] - want) <= 8 * 0x1p-24 * cap, "softcap %d (x %g): %.9g vs %.9g", i, a[i], o[i], want);
  }
  CHECK_ERR(be->ops->softcap(be, o, 1, 0.0f), XPI_ERR_INVALID_ARGUMENT, "softcap");
  /* scale: one f32 product, exact */
  memcpy(o, g, sizeof g);
  CHECK_OK(be->ops->scale(be, o, 7 * 37, 0.37f));
  for (int i = 0; i < 7 * 37; i++) CHECK(o[i] == g[i] * 0.37f, "scale %d", i);
  memcpy(a, g, sizeof g);
  CHECK_OK(be->ops->add(be, a, u, 7 * 37));
  for (int i = 0; i < 7 * 37; i++) CHECK(a[i] == g[i] + u[i], "add %d", i);
  float x[3 * 5] = {1, 5, 5, 2, 0, -1, -2, -3, -1, -4, 0, 0, 0, 0, 7};
  int32_t am[3];
  CHECK_OK(be->ops->argmax(be, am, x, 3, 5));
  CHECK(am[0] == 1 && am[1] == 0 && am[2] == 4, "argmax %d %d %d (lowest index on ties)", am[0], am[1], am[2]);
  x[2] = NAN, x[9] = INFINITY, x[10] = -INFINITY; /* a non-finite value anywhere in a row: -1 */
  CHECK_OK(be->ops->argmax(be, am, x, 3, 5));
  CHECK(am[0] == -1 && am[1] == -1 && am[2] == -1, "argmax of non-finite rows %d %d %d", am[0], am[1], am[2]);
}

static int cmp_vid(const void *a, const void *b) {
  const float *x = a, *y = b; /* {value, id} pairs: larger value first, lower id on ties */
  if (x[0] != y[0]) return x[0] > y[0] ? -1 : 1;
  return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* top-k against a full sort, with ties (values rounded to 1/8) at k = 1, a middle k and k = cols; the
 * normaliser against a double sum; a non-finite row. */
static void test_topk(xpi_backend *be) {
  enum { R = 3, C = 301 };
  static float x[R * C], pairs[C][2], vals[R * C], norm[2 * R];
  static int32_t ids[R * C];
  for (int i = 0; i < R * C; i++) x[i] = roundf(frand() * 40) / 8;
  const int ks[3] = {1, 37, C};
  for (int t = 0; t < 3; t++) {
    const int k = ks[t];
    CHECK_OK(be->ops->topk(be, ids, vals, norm, x, R, C, k));
    for (int r = 0; r < R; r++) {
      const float *row = x + r * C;
      double sum = 0;
      for (int c = 0; c < C; c++) pairs[c][0] = row[c], pairs[c][1] = (float)c;
      qsort(pairs, C, sizeof pairs[0], cmp_vid);
      for (int c = 0; c < C; c++) sum += exp((double)row[c] - pairs[0][0]);
      for (int j = 0; j < k; j++)
        CHECK(ids[r * k + j] == (int32_t)pairs[j][1] && vals[r * k + j] == pairs[j][0], "topk k=%d row %d rank %d: %d (%g) want %d (%g)",
              k, r, j, ids[r * k + j], (double)vals[r * k + j], (int)pairs[j][1], (double)pairs[j][0]);
      CHECK(norm[2 * r] == pairs[0][0] && fabs(norm[2 * r + 1] - sum) <= 6e-8 * sum, "topk row %d norm %g %g want %g %g", r,
            (double)norm[2 * r], (double)norm[2 * r + 1], (double)pairs[0][0], sum);
    }
  }
  x[C + 7] = NAN, x[2 * C + 300] = INFINITY;
  CHECK_OK(be->ops->topk(be, ids, vals, norm, x, R, C, 5));
  CHECK(ids[0] >= 0, "topk: the finite row %d", ids[0]);
  for (int j = 5; j < 15; j++) CHECK(ids[j] == -1, "topk of a non-finite row: id %d at %d", ids[j], j);
  CHECK(be->ops->topk(be, ids, vals, norm, x, R, C, C + 1) != XPI_OK, "topk: k > cols is refused");
}

int main(void) {
  for (int uk = 0; uk < 2; uk++)
    for (int th = 1; th <= 3; th += 2) {
      xpi_backend_config cfg = {"cpu", th, uk};
      xpi_backend *be = NULL;
      CHECK_OK(xpi_backend_cpu_create(&cfg, &be));
      if (!be) continue;
      test_matmul(be);
      test_embed_rmsnorm(be);
      test_rope(be);
      test_attention(be);
      test_elementwise(be);
      test_topk(be);
      be->ops->destroy(be);
    }
  return xpi_test_done();
}
