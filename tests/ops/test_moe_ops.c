/* The CPU backend's mixture-of-experts ops (moe_route, moe_matmul, moe_combine) against a plain double
 * reference, for use_kernels 0 and every ISA table (XPI_CPU_ISA) with 1 and 3 threads, experts f32/f16/bf16
 * and q8/q4, decode (n = 1), a small batch (n = 3: experts chosen by two tokens, one dispatch for all) and prefill (n = 7: an
 * expert chosen by 4 tokens, one by none), inputs shared
 * by a token's slots (in_k = 1, gate/up) and per slot (in_k = k, down), and out-of-range ids.
 *
 * Tolerances: the backend computes in f32. A dot of C <= 67 terms has an f32 rounding error below
 * ~C * 2^-24 * sum|terms|; TOL = 2e-5 of sum|terms| (at least 1) covers it, while a wrong expert or row is off
 * by O(1). Router weights are one exp and a division in f32: 1e-6. q8/q4 experts are checked against the
 * backend's own matmul of the same quantized expert (same kernels, same integer sums: 1e-5), the quantization
 * itself being the quant tests' business. moe_mlp (the experts' SwiGLU MLP in one op) must equal the composition
 * moe_matmul, moe_matmul, swiglu, moe_matmul of the same backend bit for bit (moe_mlp_cpu.c says why it can):
 * a prefill whose experts get 0, 1, 3, 5, 20 and 70+ tokens (every kernel choice: GEMV, small-n, GEMM), with
 * intermediate sizes 48 (the fused path; that it ran is checked on the best table) and 40 (the composition), each
 * slot's row read through the positions moe_mlp returns (a permutation of the rows, checked). moe_combine is
 * checked with and without positions (a shuffled permutation). That unselected experts are never read is checked
 * by giving them NULL data: a read would crash the test. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "core/threadpool.h"
#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/moe_cpu.h"
#include "ops/half.h"
#include "ops/ops.h"

#define TOL 2e-5
#define E 5
#define K 2
#define ROWS 13
#define COLS 67

static uint64_t g_rng = 777;
static float frand(void) {
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static float round_to(xpi_dtype dt, float x) {
  if (dt == XPI_DT_BF16) return xpi_bf16_to_f32(xpi_f32_to_bf16(x));
  if (dt == XPI_DT_F16) return xpi_f16_to_f32(xpi_f32_to_f16(x));
  return x;
}

static void *pack(xpi_dtype dt, const float *v, size_t n) {
  unsigned char *p = malloc(n * 4);
  for (size_t i = 0; i < n; i++) {
    if (dt == XPI_DT_F32) memcpy(p + 4 * i, &v[i], 4);
    else {
      uint16_t h = dt == XPI_DT_BF16 ? xpi_f32_to_bf16(v[i]) : xpi_f32_to_f16(v[i]);
      memcpy(p + 2 * i, &h, 2);
    }
  }
  return p;
}

static void test_route(xpi_backend *be) {
  enum { N = 9, NE = 7 };
  float x[N * NE];
  for (int i = 0; i < N * NE; i++) x[i] = 3 * frand();
  x[2 * NE + 3] = x[2 * NE + 5] = 9; /* a tie: the lower id ranks first */
  for (int norm = 0; norm < 2; norm++)
    for (int k = 1; k <= 3; k++) {
      int32_t ids[N * 3];
      float w[N * 3];
      CHECK_OK(be->ops->moe_route(be, ids, w, x, N, NE, k, norm));
      for (int t = 0; t < N; t++) {
        const float *r = x + t * NE;
        double mx = r[0], sum = 0, top = 0, p[NE];
        for (int e = 0; e < NE; e++) mx = r[e] > mx ? r[e] : mx;
        for (int e = 0; e < NE; e++) sum += p[e] = exp(r[e] - mx);
        int used[NE] = {0}, want[3];
        for (int j = 0; j < k; j++) { /* selection by rank */
          int b = -1;
          for (int e = 0; e < NE; e++)
            if (!used[e] && (b < 0 || r[e] > r[b])) b = e;
          used[b] = 1, want[j] = b, top += p[b] / sum;
        }
        for (int j = 0; j < k; j++) {
          double ww = p[want[j]] / sum / (norm ? top : 1);
          CHECK(ids[t * k + j] == want[j], "route norm %d k %d token %d rank %d: expert %d, want %d", norm, k, t, j,
                ids[t * k + j], want[j]);
          CHECK(fabs(w[t * k + j] - ww) <= 1e-6, "route norm %d k %d token %d rank %d: weight %g, want %g", norm, k, t,
                j, (double)w[t * k + j], ww);
        }
      }
    }
  x[NE + 2] = NAN;
  int32_t ids[N * 2];
  float w[N * 2];
  CHECK_OK(be->ops->moe_route(be, ids, w, x, N, NE, 2, 1));
  CHECK(ids[2] == -1 && ids[3] == -1 && ids[0] >= 0 && ids[4] >= 0, "route: a NaN row gets ids -1 (%d %d), others not",
        ids[2], ids[3]);
  CHECK(be->ops->moe_route(be, ids, w, x, N, NE, NE + 1, 1) != XPI_OK, "route: k > experts is refused");
}

/* Slots' experts for n tokens: decode picks (3, 1); prefill uses every expert but 4, one slot gets -1 and
 * one gets 9 (out of range). */
static void make_ids(int32_t *ids, int n) {
  static const int32_t pre[7 * K] = {0, 2, 2, 0, 3, 1, 0, 3, -1, 2, 1, 0, 3, 9};
  if (n == 1) ids[0] = 3, ids[1] = 1;
  else memcpy(ids, pre, sizeof pre);
}

static void test_matmul_dt(xpi_backend *be, xpi_dtype dt) {
  const int quant = dt == XPI_DT_Q8 || dt == XPI_DT_Q4;
  const xpi_dtype src_dt = quant ? XPI_DT_BF16 : dt;
  float *W = malloc(sizeof(float) * E * ROWS * COLS);
  for (int i = 0; i < E * ROWS * COLS; i++) W[i] = round_to(src_dt, frand());
  void *src[E];
  for (int x = 0; x < E; x++) src[x] = pack(src_dt, W + x * ROWS * COLS, ROWS * COLS);
  xpi_experts ex;
  CHECK_OK(xpi_experts_create(be, &ex, (const void *const *)src, src_dt, E, ROWS, COLS, dt));
  CHECK(ex.dtype == dt && ex.n == E && ex.rows == ROWS && ex.cols == COLS, "experts: %s [%lld, %lld] x %d",
        xpi_dtype_name(ex.dtype), (long long)ex.rows, (long long)ex.cols, ex.n);
  for (int n = 1; n <= 7; n += n == 1 ? 2 : 4) /* 1: decode; 3: fused GEMVs of gathered rows; 7: GEMMs */
    for (int ik = 1; ik <= K; ik += K - 1) {
      int32_t ids[7 * K];
      make_ids(ids, n);
      float in[7 * K * COLS], out[7 * K * ROWS];
      for (int i = 0; i < n * ik * COLS; i++) in[i] = frand();
      for (int i = 0; i < n * K * ROWS; i++) out[i] = NAN;
      /* the experts no slot chose have no data: reading them would crash */
      xpi_experts sparse = ex;
      xpi_weight ws[E];
      memcpy(ws, ex.w, sizeof ws);
      sparse.w = ws;
      for (int x = 0; x < E; x++) {
        int chosen = 0;
        for (int s = 0; s < n * K; s++) chosen |= ids[s] == x;
        if (!chosen) ws[x].data = NULL, ws[x].aux = NULL;
      }
      CHECK_OK(be->ops->moe_matmul(be, out, in, ik, &sparse, ids, n, K));
      for (int s = 0; s < n * K; s++) {
        const float *xr = in + (ik == 1 ? s / K : s) * COLS;
        if (ids[s] < 0 || ids[s] >= E) {
          for (int r = 0; r < ROWS; r++) CHECK(out[s * ROWS + r] == 0, "%s: slot %d (id %d) row %d = %g, want 0",
                                               xpi_dtype_name(dt), s, ids[s], r, (double)out[s * ROWS + r]);
          continue;
        }
        float ref[ROWS];
        if (quant) CHECK_OK(be->ops->matmul(be, ref, xr, &ex.w[ids[s]], NULL, 1));
        for (int r = 0; r < ROWS; r++) {
          const float *wr = W + ((size_t)ids[s] * ROWS + r) * COLS;
          double want = 0, mag = 0;
          for (int c = 0; c < COLS; c++) want += (double)xr[c] * wr[c], mag += fabs((double)xr[c] * wr[c]);
          if (quant) want = ref[r], mag = fabs(want);
          double tol = (quant ? 1e-5 : TOL) * (mag > 1 ? mag : 1);
          CHECK(fabs(out[s * ROWS + r] - want) <= tol, "%s n %d in_k %d slot %d (expert %d) row %d: %g, want %g",
                xpi_dtype_name(dt), n, ik, s, ids[s], r, (double)out[s * ROWS + r], want);
        }
      }
    }
  xpi_experts_free(be, &ex);
  for (int x = 0; x < E; x++) free(src[x]);
  free(W);
}

/* moe_mlp against the composition of the separate ops, bit for bit, for N tokens of top-KM over EM experts. */
enum { EM = 7, KM = 3, NM = 120, HM = 96 };

/* Slot counts per expert 0, 1, 3, 5, 20, 70 and the rest (259: more than moe_mlp_cpu.c's largest chunk, so that
 * expert is cut into token chunks at any thread count) less two slots with ids -1 and EM (out of range), dealt to
 * the slots in a shuffled order. */
static void make_mlp_ids(int32_t *ids) {
  static const int cnt[EM] = {0, 1, 3, 5, 20, 70, NM * KM - 99 - 2};
  int s = 0;
  for (int x = 0; x < EM; x++)
    for (int i = 0; i < cnt[x]; i++) ids[s++] = x;
  ids[s++] = -1, ids[s++] = EM;
  for (int i = NM * KM - 1; i > 0; i--) {
    const int j = (int)((frand() + 1) * 0.5 * (i + 1)) % (i + 1), t = ids[i];
    ids[i] = ids[j], ids[j] = t;
  }
}

/* src[EM]: the host matrices, which the experts may use in place (the caller frees them after the experts) */
static void make_experts(xpi_backend *be, xpi_experts *ex, void **src, xpi_dtype dt, int64_t rows, int64_t cols) {
  const int quant = dt == XPI_DT_Q8 || dt == XPI_DT_Q4;
  const xpi_dtype src_dt = quant ? XPI_DT_BF16 : dt;
  float *W = malloc(sizeof(float) * EM * (size_t)(rows * cols));
  for (int64_t i = 0; i < EM * rows * cols; i++) W[i] = round_to(src_dt, frand() * 0.2f);
  for (int x = 0; x < EM; x++) src[x] = pack(src_dt, W + x * rows * cols, (size_t)(rows * cols));
  CHECK_OK(xpi_experts_create(be, ex, (const void *const *)src, src_dt, EM, rows, cols, dt));
  free(W);
}

/* out's row pos[s] is ref's row s bit for bit, pos a permutation of the n rows */
static void check_mlp_rows(const char *what, xpi_dtype dt, int64_t I, const float *out, const int32_t *pos,
                           const float *ref, const int32_t *ids, int n) {
  char seen[NM * KM] = {0};
  int bad = 0;
  for (int s = 0; s < n && bad < 5; s++) {
    if (pos[s] < 0 || pos[s] >= n || seen[pos[s]]++) {
      bad++;
      CHECK(0, "%s %s I %lld slot %d: position %d is not a free row of %d", what, xpi_dtype_name(dt), (long long)I,
            s, pos[s], n);
      continue;
    }
    for (int c = 0; c < HM; c++)
      if (memcmp(&out[pos[s] * HM + c], &ref[s * HM + c], sizeof *out)) {
        bad++;
        CHECK(0, "%s %s I %lld slot %d (expert %d) row %d: %.9g, the composition %.9g", what, xpi_dtype_name(dt),
              (long long)I, s, ids[s], c, (double)out[pos[s] * HM + c], (double)ref[s * HM + c]);
        break;
      }
  }
}

static void test_mlp_dt(xpi_backend *be, xpi_dtype dt, int64_t I, int want_fused) {
  xpi_experts eg, eu, ed;
  void *src[3][EM];
  make_experts(be, &eg, src[0], dt, I, HM);
  make_experts(be, &eu, src[1], dt, I, HM);
  make_experts(be, &ed, src[2], dt, HM, I);
  int32_t ids[NM * KM];
  make_mlp_ids(ids);
  float *in = malloc(sizeof(float) * NM * HM), *g = malloc(sizeof(float) * NM * KM * (size_t)I);
  float *u = malloc(sizeof(float) * NM * KM * (size_t)I), *ref = malloc(sizeof(float) * NM * KM * HM);
  float *out = malloc(sizeof(float) * NM * KM * HM);
  int32_t pos[NM * KM];
  for (int i = 0; i < NM * HM; i++) in[i] = frand();
  CHECK_OK(be->ops->moe_matmul(be, g, in, 1, &eg, ids, NM, KM));
  CHECK_OK(be->ops->moe_matmul(be, u, in, 1, &eu, ids, NM, KM));
  CHECK_OK(be->ops->swiglu(be, g, g, u, NM * KM, (int32_t)I));
  CHECK_OK(be->ops->moe_matmul(be, ref, g, KM, &ed, ids, NM, KM));
  for (int i = 0; i < NM * KM * HM; i++) out[i] = NAN;
  CHECK(be->ops->moe_mlp != NULL, "cpu: no moe_mlp");
  for (int s = 0; s < NM * KM; s++) pos[s] = -1;
  CHECK_OK(be->ops->moe_mlp(be, out, pos, g, u, in, &eg, &eu, &ed, ids, NM, KM));
  check_mlp_rows("moe_mlp", dt, I, out, pos, ref, ids, NM * KM);
  if (want_fused >= 0) { /* the fused path itself on the best table, 3 threads, no workspace */
    xpi_pool *pool = NULL;
    CHECK_OK(xpi_pool_create(3, &pool));
    int done = -1;
    for (int i = 0; i < NM * KM * HM; i++) out[i] = NAN;
    for (int s = 0; s < NM * KM; s++) pos[s] = -1;
    CHECK_OK(xpi_cpu_moe_mlp(pool, NULL, xpi_cpu_kernels_best(), out, pos, g, u, in, &eg, &eu, &ed, ids, NM, KM,
                             &done));
    CHECK(done == want_fused, "moe_mlp %s I %lld: fused %d, want %d", xpi_dtype_name(dt), (long long)I, done,
          want_fused);
    xpi_pool_free(pool);
  }
  xpi_experts_free(be, &eg), xpi_experts_free(be, &eu), xpi_experts_free(be, &ed);
  for (int m = 0; m < 3; m++)
    for (int x = 0; x < EM; x++) free(src[m][x]);
  free(in), free(g), free(u), free(ref), free(out);
}

static void test_combine(xpi_backend *be) {
  enum { N = 7, D = 19 };
  float y[N * K * D], w[N * K], sh[N * D], g[N], out[N * D];
  int32_t pos[N * K];
  for (int i = 0; i < N * K * D; i++) y[i] = frand();
  for (int i = 0; i < N * K; i++) w[i] = frand();
  for (int i = 0; i < N * D; i++) sh[i] = frand();
  for (int i = 0; i < N; i++) g[i] = 4 * frand();
  for (int s = 0; s < N * K; s++) pos[s] = s;
  for (int s = N * K - 1; s > 0; s--) { /* a shuffled permutation */
    const int j = (int)((frand() + 1) * 0.5 * (s + 1)) % (s + 1), t = pos[s];
    pos[s] = pos[j], pos[j] = t;
  }
  for (int perm = 0; perm < 2; perm++)
    for (int with = 0; with < 2; with++) {
      CHECK_OK(be->ops->moe_combine(be, out, y, perm ? pos : NULL, w, with ? sh : NULL, with ? g : NULL, N, K, D));
      for (int t = 0; t < N; t++)
        for (int c = 0; c < D; c++) {
          double want = 0;
          for (int j = 0; j < K; j++) {
            const int s = t * K + j;
            want += (double)w[s] * y[(perm ? pos[s] : s) * D + c];
          }
          if (with) want += 1 / (1 + exp(-(double)g[t])) * sh[t * D + c];
          CHECK(fabs(out[t * D + c] - want) <= 1e-6, "combine positions %d shared %d token %d col %d: %g, want %g",
                perm, with, t, c, (double)out[t * D + c], want);
        }
    }
}

int main(void) {
  static const char *isas[] = {"scalar", "avx2", "avxvnni", "avx512", "amx"};
  for (int v = 0; v < 6; v++)
    for (int th = 1; th <= 3; th += 2) {
      if (v > 0) setenv("XPI_CPU_ISA", isas[v - 1], 1); /* tables this CPU lacks fall back to the best below */
      xpi_backend_config cfg = {"cpu", th, v > 0};
      xpi_backend *be = NULL;
      CHECK_OK(xpi_backend_cpu_create(&cfg, &be));
      if (!be) continue;
      test_route(be);
      static const xpi_dtype dts[] = {XPI_DT_F32, XPI_DT_F16, XPI_DT_BF16, XPI_DT_Q8, XPI_DT_Q4};
      for (int d = 0; d < 5; d++) test_matmul_dt(be, dts[d]);
      for (int d = 0; d < 5; d++)
        for (int64_t I = 48; I >= 40; I -= 8) test_mlp_dt(be, dts[d], I, v == 0 && th == 3 ? I == 48 : -1);
      test_combine(be);
      be->ops->destroy(be);
    }
  return xpi_test_done();
}
