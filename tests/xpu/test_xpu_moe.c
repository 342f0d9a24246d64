/* The XPU mixture-of-experts ops against the CPU backend (the oracle, itself checked against a plain reference
 * by tests/ops/test_moe_ops) on the software device: moe_route, moe_matmul (f32/f16/bf16 and q8/q4 experts,
 * decode and prefill: q8/q4's per-slot GEMV at n <= 4 and its expert-grouped GEMM beyond, with more than one
 * 16-slot round of an expert and partial 16-row tiles; in_k 1 and k, out-of-range ids, experts nobody chose
 * given a NULL table entry so that a read would fault), moe_combine with and without the shared expert and with
 * and without row positions (a reversed permutation, as the CPU's moe_mlp returns its own order), and a
 * recorded route + matmul (bf16, q8, q4) replayed after the router's input changed (the experts are chosen on
 * the device at replay time).
 *
 * Tolerances: router weights and combine are the same f32 operations in the same order on both (exp may differ
 * by an ulp or two): 1e-6 absolute on values <= 4. Float expert rows are dots of C terms summed in another
 * order: at most ~2 C u sum|terms| (Higham), 2 * 67 * 6e-8 ~ 8e-6 of the terms' magnitude (<= 67): atol 1e-4,
 * rtol 1e-5. q8/q4 expert rows: both sides quantize the activations identically and sum the same exact int32
 * block dots, so they differ by f32 summation order only: (nb + 3) u S per output (xt_q_bound,
 * xpu_test_util.h), S the output's sum of |dequantized products|; one activation quant off by one, a wrong
 * scale or a wrong expert would be orders of magnitude beyond it. */
#include "xpu_test_util.h"

#define E 5
#define K 2
#define ROWS 37 /* two 16-row tiles and a partial one */
#define COLS 67 /* a partial last 32-block */
#define NMAX 150 /* 300 slots: more than one 256-id scan of the grouped q8/q4 GEMM */

static xpi_backend *cpu, *xpu;
static double g_worst_q; /* largest |xpu - cpu| / bound of the q8/q4 experts (printed) */

static int is_q(xpi_dtype dt) { return dt == XPI_DT_Q8 || dt == XPI_DT_Q4; }

/* out (xpu) against oc (cpu) for slots n*K of ROWS: float tolerance, or the q8/q4 bound per output. */
static void compare_slots(const char *what, const float *ox, const float *oc, const xpi_experts *ec, const int32_t *ids,
                          const float *in, int ik, int n) {
  if (!is_q(ec->dtype)) {
    xt_close(what, ox, oc, (size_t)n * K * ROWS, 1e-4f, 1e-5f);
    return;
  }
  size_t bad = 0, worst = 0;
  double wr = 0;
  for (int s = 0; s < n * K; s++)
    for (int r = 0; r < ROWS; r++) {
      const size_t i = (size_t)s * ROWS + r;
      const int x = ids[s];
      const double tol = (x >= 0 && x < E ? xt_q_bound(&ec->w[x], r, in + (size_t)(ik == 1 ? s / K : s) * COLS) : 0) +
                         1e-30;
      const double e = fabs((double)ox[i] - (double)oc[i]);
      if (!(e <= tol)) bad++;
      if (!(e / tol <= wr)) wr = e / tol, worst = i;
    }
  g_worst_q = wr > g_worst_q ? wr : g_worst_q;
  CHECK(bad == 0, "%s: %zu of %d outputs beyond the bound; worst [%zu] xpu %.9g cpu %.9g (%.2f x bound)", what, bad,
        n * K * ROWS, worst, (double)ox[worst], (double)oc[worst], wr);
}

static void test_route(void) {
  enum { N = 9, NE = 7 };
  float x[N * NE];
  for (int i = 0; i < N * NE; i++) x[i] = 3 * xt_rand();
  x[2 * NE + 3] = x[2 * NE + 5] = 9; /* a tie */
  x[5 * NE + 1] = INFINITY;          /* a non-finite row */
  void *dx = xt_up(xpu, x, sizeof x), *di = xt_up(xpu, NULL, N * 3 * 4), *dw = xt_up(xpu, NULL, N * 3 * 4);
  for (int norm = 0; norm < 2; norm++)
    for (int k = 1; k <= 3; k++) {
      int32_t ic[N * 3], ix[N * 3];
      float wc[N * 3], wx[N * 3];
      CHECK_OK(cpu->ops->moe_route(cpu, ic, wc, x, N, NE, k, norm));
      CHECK_OK(xpu->ops->moe_route(xpu, di, dw, dx, N, NE, k, norm));
      xt_down(xpu, ix, di, (size_t)N * k * 4);
      xt_down(xpu, wx, dw, (size_t)N * k * 4);
      CHECK(!memcmp(ic, ix, (size_t)N * k * 4), "route norm %d k %d: expert ids differ from the CPU's", norm, k);
      for (int i = 0; i < N * k; i++)
        if (ic[i] < 0) wc[i] = wx[i] = 0; /* weights of a non-finite row are undefined */
      xt_close("route weights", wx, wc, (size_t)N * k, 1e-6f, 0);
    }
  xpu->ops->free(xpu, dx), xpu->ops->free(xpu, di), xpu->ops->free(xpu, dw);
}

static void make_ids(int32_t *ids, int n) {
  static const int32_t pre[7 * K] = {0, 2, 2, 0, 3, 1, 0, 3, -1, 2, 1, 0, 3, 9};
  if (n == 1) ids[0] = 3, ids[1] = 1;
  else if (n <= 7) memcpy(ids, pre, (size_t)n * K * sizeof *ids);
  else /* n 40: expert 2: 27 slots (two 16-slot tiles), 0: 25, 1: 14, 3: 13, 4: none; slot 17 out of range */
    for (int s = 0; s < n * K; s++) ids[s] = s == 17 ? E : s % 3 == 0 ? 1 + 2 * (s % 2) : s % 3 == 1 ? 2 : 0;
}

/* Experts placed from src_dt as want on both backends, compared at decode and prefill sizes. */
static void test_matmul(xpi_dtype src_dt, xpi_dtype want) {
  float *W = xt_randv((size_t)E * ROWS * COLS);
  void *src[E];
  for (int x = 0; x < E; x++) src[x] = xt_host_weight(W + (size_t)x * ROWS * COLS, ROWS * COLS, src_dt);
  xpi_experts ec, ex;
  CHECK_OK(xpi_experts_create(cpu, &ec, (const void *const *)src, src_dt, E, ROWS, COLS, want));
  CHECK_OK(xpi_experts_create(xpu, &ex, (const void *const *)src, src_dt, E, ROWS, COLS, want));
  CHECK(ex.dtype == want && ex.bytes == ec.bytes, "%s experts placed as %s, %llu bytes (cpu %llu)",
        xpi_dtype_name(want), xpi_dtype_name(ex.dtype), (unsigned long long)ex.bytes, (unsigned long long)ec.bytes);
  /* 1: decode; 3: the CPU's fused GEMVs of gathered rows, q8/q4's per-slot GEMV; 7, 40, 150: GEMMs */
  static const int ns[] = {1, 3, 7, 40, NMAX};
  for (int ni = 0; ni < 5; ni++)
    for (int ik = 1; ik <= K; ik += K - 1) {
      const int n = ns[ni];
      int32_t ids[NMAX * K];
      make_ids(ids, n);
      float *in = xt_randv((size_t)n * ik * COLS);
      float *oc = malloc(sizeof(float) * n * K * ROWS), *ox = malloc(sizeof(float) * n * K * ROWS);
      /* unchosen experts get address 0 in the XPU's table (their data and, q8/q4, their scales) */
      const void *tab[2 * E];
      for (int x = 0; x < E; x++) {
        int chosen = 0;
        for (int s = 0; s < n * K; s++) chosen |= ids[s] == x;
        tab[x] = chosen ? ex.w[x].data : NULL;
        tab[E + x] = chosen ? ex.w[x].aux : NULL;
      }
      xpi_experts sparse = ex;
      sparse.table = xt_up(xpu, tab, sizeof tab);
      void *din = xt_up(xpu, in, (size_t)n * ik * COLS * 4), *dids = xt_up(xpu, ids, (size_t)n * K * 4);
      void *dout = xt_up(xpu, NULL, (size_t)n * K * ROWS * 4);
      CHECK_OK(cpu->ops->moe_matmul(cpu, oc, in, ik, &ec, ids, n, K));
      CHECK_OK(xpu->ops->moe_matmul(xpu, dout, din, ik, &sparse, dids, n, K));
      xt_down(xpu, ox, dout, (size_t)n * K * ROWS * 4);
      char *what = xpi_test_strf("moe_matmul %s (from %s) n %d in_k %d", xpi_dtype_name(want), xpi_dtype_name(src_dt),
                                 n, ik);
      compare_slots(what, ox, oc, &ec, ids, in, ik, n);
      free(what), free(in), free(oc), free(ox);
      xpu->ops->free(xpu, (void *)sparse.table), xpu->ops->free(xpu, din), xpu->ops->free(xpu, dids);
      xpu->ops->free(xpu, dout);
    }
  xpi_experts_free(cpu, &ec);
  xpi_experts_free(xpu, &ex);
  for (int x = 0; x < E; x++) free(src[x]);
  free(W);
}

static void test_combine(void) {
  enum { N = 7, D = 19 };
  float *y = xt_randv(N * K * D), *w = xt_randv(N * K), *sh = xt_randv(N * D), *g = xt_randv(N);
  void *dy = xt_up(xpu, y, N * K * D * 4), *dw = xt_up(xpu, w, N * K * 4), *ds = xt_up(xpu, sh, N * D * 4);
  void *dg = xt_up(xpu, g, N * 4), *dout = xt_up(xpu, NULL, N * D * 4);
  int32_t pos[N * K];
  for (int s = 0; s < N * K; s++) pos[s] = N * K - 1 - s;
  void *dpos = xt_up(xpu, pos, sizeof pos);
  for (int perm = 0; perm < 2; perm++)
    for (int with = 0; with < 2; with++) {
      float oc[N * D], ox[N * D];
      CHECK_OK(cpu->ops->moe_combine(cpu, oc, y, perm ? pos : NULL, w, with ? sh : NULL, with ? g : NULL, N, K, D));
      CHECK_OK(xpu->ops->moe_combine(xpu, dout, dy, perm ? dpos : NULL, dw, with ? ds : NULL, with ? dg : NULL, N, K,
                                     D));
      xt_down(xpu, ox, dout, sizeof ox);
      char *what = xpi_test_strf("combine positions %d shared %d", perm, with);
      xt_close(what, ox, oc, N * D, 1e-6f, 0);
      free(what);
    }
  free(y), free(w), free(sh), free(g);
  void *all[] = {dy, dw, ds, dg, dout, dpos};
  for (int i = 0; i < 6; i++) xpu->ops->free(xpu, all[i]);
}

/* route -> matmul recorded once, replayed with new router logits: the replay picks the new experts (q8/q4: the
 * recorded activation quantization runs again too). */
static void test_replay(xpi_dtype want) {
  enum { NE = E, N = 1 };
  float *W = xt_randv((size_t)E * ROWS * COLS), *in = xt_randv(COLS);
  void *src[E];
  for (int x = 0; x < E; x++) src[x] = xt_host_weight(W + (size_t)x * ROWS * COLS, ROWS * COLS, XPI_DT_BF16);
  xpi_experts ec, ex;
  CHECK_OK(xpi_experts_create(cpu, &ec, (const void *const *)src, XPI_DT_BF16, E, ROWS, COLS, want));
  CHECK_OK(xpi_experts_create(xpu, &ex, (const void *const *)src, XPI_DT_BF16, E, ROWS, COLS, want));
  float logits[2][NE] = {{3, 0, 2, 0, 0}, {0, 0, 0, 5, 4}};
  void *dl = xt_up(xpu, logits[0], sizeof logits[0]), *di = xt_up(xpu, NULL, K * 4), *dw = xt_up(xpu, NULL, K * 4);
  void *din = xt_up(xpu, in, COLS * 4), *dout = xt_up(xpu, NULL, K * ROWS * 4);
  void *graph = NULL;
  CHECK_OK(xpu->ops->capture_begin(xpu));
  CHECK_OK(xpu->ops->moe_route(xpu, di, dw, dl, N, NE, K, 1));
  CHECK_OK(xpu->ops->moe_matmul(xpu, dout, din, 1, &ex, di, N, K));
  CHECK_OK(xpu->ops->capture_end(xpu, &graph));
  for (int round = 0; round < 2 && graph; round++) {
    if (round) { /* a new input too: the replay quantizes it again */
      for (int c = 0; c < COLS; c++) in[c] = xt_rand();
      CHECK_OK(xpu->ops->write(xpu, din, in, COLS * 4));
    }
    CHECK_OK(xpu->ops->write(xpu, dl, logits[round], sizeof logits[round]));
    CHECK_OK(xpu->ops->replay(xpu, graph));
    int32_t ic[K], ix[K];
    float wc[K], oc[K * ROWS], ox[K * ROWS];
    CHECK_OK(cpu->ops->moe_route(cpu, ic, wc, logits[round], N, NE, K, 1));
    CHECK_OK(cpu->ops->moe_matmul(cpu, oc, in, 1, &ec, ic, N, K));
    xt_down(xpu, ix, di, sizeof ix);
    xt_down(xpu, ox, dout, sizeof ox);
    CHECK(ix[0] == ic[0] && ix[1] == ic[1] && ic[0] == (round ? 3 : 0), "replay %d: experts %d %d, want %d %d",
          round, ix[0], ix[1], ic[0], ic[1]);
    char *what = xpi_test_strf("replayed %s moe_matmul%s", xpi_dtype_name(want), round ? ", new experts" : "");
    compare_slots(what, ox, oc, &ec, ic, in, 1, N);
    free(what);
  }
  if (graph) xpu->ops->graph_free(xpu, graph);
  void *all[] = {dl, di, dw, din, dout};
  for (int i = 0; i < 5; i++) xpu->ops->free(xpu, all[i]);
  xpi_experts_free(cpu, &ec);
  xpi_experts_free(xpu, &ex);
  for (int x = 0; x < E; x++) free(src[x]);
  free(W), free(in);
}

int main(void) {
  int rc = xt_open_pair(&cpu, &xpu);
  if (rc) return rc == 77 ? 77 : xpi_test_done();
  test_route();
  static const xpi_dtype dts[] = {XPI_DT_F32, XPI_DT_F16, XPI_DT_BF16};
  for (int d = 0; d < 3; d++) test_matmul(dts[d], dts[d]);
  test_matmul(XPI_DT_BF16, XPI_DT_Q8);
  test_matmul(XPI_DT_F32, XPI_DT_Q4);
  test_matmul(XPI_DT_F16, XPI_DT_Q8);
  test_combine();
  test_replay(XPI_DT_BF16);
  test_replay(XPI_DT_Q8);
  test_replay(XPI_DT_Q4);
  printf("q8/q4 experts: largest |xpu - cpu| / bound %.3g\n", g_worst_q);
  return xt_close_pair(cpu, xpu);
}
