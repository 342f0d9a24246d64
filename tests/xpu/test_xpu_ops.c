/* Every XPU op against the CPU backend (the oracle) through the stock Level Zero loader and the software
 * device (zesim), at awkward sizes: odd dims, n = 1 and n = 7, GQA ratio 3, f32/f16/bf16 weights, and
 * a recorded step replayed at new positions against direct execution. */
#include <pthread.h>

#include "ops/half.h"
#include "ops/xpu/xpu_backend.h"
#include "ops/xpu/xpu_internal.h"
#include "runtime/xpu.h"
#include "runtime/ze/ze_devices.h"
#include "xpu_test_util.h"

static xpi_backend *cpu, *xpu;

/* Unit roundoff of f32. A dot product of k terms summed in any order (and with or without fma) differs from
 * another order by at most ~2 k u sum|x_i w_i| (Higham, 3.1): the matmul/attention bounds below use it. */
#define U 5.96e-8f

static const xpi_dtype k_dts[3] = {XPI_DT_F32, XPI_DT_F16, XPI_DT_BF16};

typedef struct {
  xpi_weight c, x;
} wpair;

static void wpair_make(wpair *w, const void *src, xpi_dtype sdt, int64_t rows, int64_t cols, xpi_dtype want) {
  CHECK_OK(cpu->ops->weight_create(cpu, &w->c, src, sdt, rows, cols, want));
  CHECK_OK(xpu->ops->weight_create(xpu, &w->x, src, sdt, rows, cols, want));
}
static void wpair_free(wpair *w) {
  cpu->ops->weight_free(cpu, &w->c);
  xpu->ops->weight_free(xpu, &w->x);
}

/* The same host data on both backends. */
typedef struct {
  void *c, *x;
  size_t bytes;
} bpair;
static bpair bp(const void *host, size_t bytes) {
  bpair b = {xt_up(cpu, host, bytes), xt_up(xpu, host, bytes), bytes};
  return b;
}
static void bp_free(bpair *b) {
  cpu->ops->free(cpu, b->c);
  xpu->ops->free(xpu, b->x);
}
/* Reads both: *hc from the CPU, *hx from the XPU (malloc'd floats). */
static void bp_get(const bpair *b, float **hc, float **hx) {
  *hc = malloc(b->bytes);
  *hx = malloc(b->bytes);
  xt_down(cpu, *hc, b->c, b->bytes);
  xt_down(xpu, *hx, b->x, b->bytes);
}

static void test_embed(void) {
  const int rows = 37, d = 67, n = 7;
  float *tab = xt_randv((size_t)rows * d);
  int32_t ids[7] = {0, 36, 5, 5, 17, 1, 30};
  for (int di = 0; di < 3; di++) {
    void *src = xt_host_weight(tab, (size_t)rows * d, k_dts[di]);
    wpair w;
    wpair_make(&w, src, k_dts[di], rows, d, k_dts[di]);
    bpair bid = bp(ids, sizeof ids), out = bp(NULL, (size_t)n * d * 4);
    CHECK_OK(cpu->ops->embed(cpu, out.c, &w.c, bid.c, n));
    CHECK_OK(xpu->ops->embed(xpu, out.x, &w.x, bid.x, n));
    float *hc, *hx;
    bp_get(&out, &hc, &hx);
    /* a gather plus an exact widening conversion: bit-identical */
    xt_close(xpi_dtype_name(k_dts[di]), hx, hc, (size_t)n * d, 0, 0);
    free(hc), free(hx), free(src);
    bp_free(&bid), bp_free(&out), wpair_free(&w);
  }
  free(tab);
}

static void test_rmsnorm(void) {
  const int d_list[2] = {67, 1024}, n_list[2] = {1, 7};
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++)
      for (int di = 0; di < 3; di++)
        for (int res = 0; res < 2; res++) {
          int d = d_list[a], n = n_list[b];
          size_t cnt = (size_t)n * d;
          float *x = xt_randv(cnt), *r = xt_randv(cnt), *wv = xt_randv((size_t)d);
          void *src = xt_host_weight(wv, (size_t)d, k_dts[di]);
          wpair w;
          wpair_make(&w, src, k_dts[di], 1, d, k_dts[di]);
          bpair bx = bp(x, cnt * 4), br = bp(r, cnt * 4), out = bp(NULL, cnt * 4);
          CHECK_OK(cpu->ops->rmsnorm(cpu, out.c, bx.c, res ? br.c : NULL, &w.c, n, d, 1e-6f));
          CHECK_OK(xpu->ops->rmsnorm(xpu, out.x, bx.x, res ? br.x : NULL, &w.x, n, d, 1e-6f));
          float *hc, *hx;
          bp_get(&out, &hc, &hx);
          char *what = xpi_test_strf("rmsnorm d=%d n=%d %s residual=%d", d, n, xpi_dtype_name(k_dts[di]), res);
          /* the mean of squares is summed in another order: relative error <= 2 d u of the scale factor */
          xt_close(what, hx, hc, cnt, 1e-6f, 2.0f * (float)d * U + 4 * U);
          free(hc), free(hx);
          bp_get(&bx, &hc, &hx);
          xt_close("rmsnorm residual stream x += residual", hx, hc, cnt, 0, 0); /* one f32 add: exact */
          free(hc), free(hx), free(what), free(x), free(r), free(wv), free(src);
          bp_free(&bx), bp_free(&br), bp_free(&out), wpair_free(&w);
        }
}

static void test_matmul(void) {
  /* 37 rows: the two-rows-a-sub-group GEMV's odd last row; 256 / 384: an even / odd count of its unrolled
   * 128-column steps (67 and 16 take the portable GEMV: cols % 128 != 0) */
  const int rows = 37, col_list[4] = {67, 256, 16, 384}, n_list[2] = {1, 7};
  for (int ci = 0; ci < 4; ci++)
    for (int ni = 0; ni < 2; ni++)
      for (int di = 0; di < 3; di++)
        for (int bias = 0; bias < 2; bias++) {
          int cols = col_list[ci], n = n_list[ni];
          float *wv = xt_randv((size_t)rows * cols), *x = xt_randv((size_t)n * cols), *bv = xt_randv(rows);
          void *src = xt_host_weight(wv, (size_t)rows * cols, k_dts[di]);
          void *bsrc = xt_host_weight(bv, rows, XPI_DT_BF16);
          wpair w, wb;
          wpair_make(&w, src, k_dts[di], rows, cols, k_dts[di]);
          wpair_make(&wb, bsrc, XPI_DT_BF16, 1, rows, XPI_DT_BF16);
          bpair bx = bp(x, (size_t)n * cols * 4), out = bp(NULL, (size_t)n * rows * 4);
          CHECK_OK(cpu->ops->matmul(cpu, out.c, bx.c, &w.c, bias ? &wb.c : NULL, n));
          CHECK_OK(xpu->ops->matmul(xpu, out.x, bx.x, &w.x, bias ? &wb.x : NULL, n));
          float *hc, *hx;
          bp_get(&out, &hc, &hx);
          /* |x|, |w| <= 1, so sum|x w| <= cols: absolute bound 2 cols u cols (+ the bias add) */
          float tol = 2.0f * (float)cols * U * (float)cols + 4 * U;
          char *what = xpi_test_strf("matmul [%d x %d] n=%d %s bias=%d", rows, cols, n, xpi_dtype_name(k_dts[di]), bias);
          xt_close(what, hx, hc, (size_t)n * rows, tol, 0);
          free(what), free(hc), free(hx), free(wv), free(x), free(bv), free(src), free(bsrc);
          bp_free(&bx), bp_free(&out), wpair_free(&w), wpair_free(&wb);
        }
}

/* Split-K decode GEMV (xpu_splitk.c): matrices with too few rows for zesim's 1024 hardware threads (16 subslices x 8
 * EUs x 8 threads) against the CPU, as matmul (n = 1) and as matmul_add (the merge adds into x): 8 rows of 4096
 * columns (16 splits), 128 x 1000 (2 splits of 512, the second 488 columns), 300 x 2500 (a short last split:
 * 2500 = 4 x 512 + 452), 1024 x 2048 (the 0.6B model's o_proj: 2 splits). The launch is checked to be the
 * split-K kernel (and a 4096-row matrix the unsplit GEMV), its result bit for bit the same on a second run (the merge adds the splits
 * in a fixed order whichever work-group arrives last), and within the matmul bound of the CPU: the bound
 * 2 cols u sum|x w| holds for any summation order, chunk partials then their sum included. */
static void test_splitk(void) {
  const struct { int rows, cols, split; } shapes[] = {{8, 4096, 1}, {128, 1000, 1}, {300, 2500, 1}, {1024, 2048, 1},
                                                      {4096, 256, 0}};
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
    for (int di = 0; di < 3; di++)
      for (int add = 0; add < 2; add++) {
        const int rows = shapes[si].rows, cols = shapes[si].cols, bias = (int)(si + di) % 2;
        float *wv = xt_randv((size_t)rows * cols), *x = xt_randv((size_t)cols), *bv = xt_randv(rows);
        float *x0 = xt_randv(rows);
        void *src = xt_host_weight(wv, (size_t)rows * cols, k_dts[di]);
        void *bsrc = xt_host_weight(bv, rows, XPI_DT_BF16);
        wpair w, wb;
        wpair_make(&w, src, k_dts[di], rows, cols, k_dts[di]);
        wpair_make(&wb, bsrc, XPI_DT_BF16, 1, rows, XPI_DT_BF16);
        bpair bx = bp(x, (size_t)cols * 4), out = bp(x0, (size_t)rows * 4), tmp = bp(NULL, (size_t)rows * 4);
        const xpi_weight *bc = bias ? &wb.c : NULL, *bxp = bias ? &wb.x : NULL;
        if (add) CHECK_OK(cpu->ops->matmul_add(cpu, out.c, tmp.c, bx.c, &w.c, bc, 1));
        else CHECK_OK(cpu->ops->matmul(cpu, out.c, bx.c, &w.c, bc, 1));
        xpi_perf_report r = {.struct_size = sizeof r};
        CHECK_OK(xpi_xpu_perf_begin(xpu, &r));
        if (add) CHECK_OK(xpu->ops->matmul_add(xpu, out.x, tmp.x, bx.x, &w.x, bxp, 1));
        else CHECK_OK(xpu->ops->matmul(xpu, out.x, bx.x, &w.x, bxp, 1));
        xpi_xpu_perf_end(xpu);
        char *what = xpi_test_strf("split-K %s [%d x %d] %s bias=%d", add ? "matmul_add" : "matmul", rows, cols,
                                   xpi_dtype_name(k_dts[di]), bias);
        char *kname = xpi_test_strf("xpi_gemv_splitk_%s", xpi_dtype_name(k_dts[di]));
        CHECK(r.launches == 1 && xt_launches_of(&r, kname) == shapes[si].split, "%s: %lld launches, %lld of %s",
              what, (long long)r.launches, (long long)xt_launches_of(&r, kname), kname);
        float *hc, *hx, *again = malloc((size_t)rows * 4);
        bp_get(&out, &hc, &hx);
        /* |x|, |w| <= 1, so sum|x w| <= cols: absolute bound 2 cols u cols (+ the bias and residual adds) */
        xt_close(what, hx, hc, (size_t)rows, 2.0f * (float)cols * U * (float)cols + 8 * U, 0);
        CHECK_OK(xpu->ops->write(xpu, out.x, x0, (size_t)rows * 4));
        if (add) CHECK_OK(xpu->ops->matmul_add(xpu, out.x, tmp.x, bx.x, &w.x, bxp, 1));
        else CHECK_OK(xpu->ops->matmul(xpu, out.x, bx.x, &w.x, bxp, 1));
        xt_down(xpu, again, out.x, (size_t)rows * 4);
        CHECK(!memcmp(again, hx, (size_t)rows * 4), "%s: a second run gives other bits", what);
        free(what), free(kname), free(hc), free(hx), free(again), free(wv), free(x), free(bv), free(x0), free(src);
        free(bsrc);
        bp_free(&bx), bp_free(&out), bp_free(&tmp), wpair_free(&w), wpair_free(&wb);
      }
}

/* The fused decode ops (matmul_multi: q|k|v in one launch; matmul_glu: gate|up + activation in one launch; both
 * with the input's RMSNorm optionally inside; matmul_add: the residual add as the projection's epilogue) against
 * the CPU's composition (the matmul bound), and bit for bit against the XPU's own separate ops: the fused kernels
 * sum in the separate kernels' order, which keeps the model goldens on xpu:0 exact. */
typedef struct {
  int cols, n, di, bias, norm;
  bpair x, h;   /* input [n, cols]; scratch for the normalised input */
  wpair nw;     /* the norm weight [cols] */
} fused_case;

/* The XPU's separate ops' input: x, or rmsnorm(x) into h. */
static const float *sep_input(fused_case *fc) {
  if (!fc->norm) return fc->x.x;
  CHECK_OK(xpu->ops->rmsnorm(xpu, fc->h.x, fc->x.x, NULL, &fc->nw.x, fc->n, fc->cols, 1e-6f));
  return fc->h.x;
}

/* Compares an output against the CPU (tol) and against the separate XPU ops' bits (sep, XPU memory). */
static void fused_compare(const char *op, fused_case *fc, bpair *out, const float *sep, int rows, float tol) {
  size_t used = (size_t)fc->n * rows * 4; /* out holds up to 37 rows a token; rows of them written */
  float *hc, *hx, *hs = malloc(out->bytes);
  bp_get(out, &hc, &hx);
  xt_down(xpu, hs, sep, out->bytes);
  char *what = xpi_test_strf("%s [%d x %d] n=%d %s bias=%d norm=%d", op, rows, fc->cols, fc->n,
                             xpi_dtype_name(k_dts[fc->di]), fc->bias, fc->norm);
  xt_close(what, hx, hc, (size_t)fc->n * rows, tol, 0);
  CHECK(!memcmp(hx, hs, used), "%s: not the bits of the separate XPU ops", what);
  free(what), free(hc), free(hx), free(hs);
}

static void test_fused_case(fused_case *fc) {
  const int rows[3] = {37, 19, 19}, cols = fc->cols, n = fc->n;
  const xpi_dtype dt = k_dts[fc->di];
  wpair w[3], wb[3], wu;
  bpair out[3], sep[3];
  void *src[3], *bsrc[3];
  for (int j = 0; j < 3; j++) {
    float *wv = xt_randv((size_t)rows[j] * cols), *bv = xt_randv(rows[j]);
    if (j == 2) /* the gate of the GLU cases: the activation over a wider range */
      for (size_t i = 0; i < (size_t)rows[j] * cols; i++) wv[i] *= 4.0f;
    src[j] = xt_host_weight(wv, (size_t)rows[j] * cols, dt);
    bsrc[j] = xt_host_weight(bv, rows[j], XPI_DT_BF16);
    wpair_make(&w[j], src[j], dt, rows[j], cols, dt);
    wpair_make(&wb[j], bsrc[j], XPI_DT_BF16, 1, rows[j], XPI_DT_BF16);
    out[j] = bp(NULL, (size_t)n * rows[0] * 4);
    sep[j] = bp(NULL, (size_t)n * rows[0] * 4);
    free(wv), free(bv);
  }
  const xpi_weight *nc = fc->norm ? &fc->nw.c : NULL, *nx = fc->norm ? &fc->nw.x : NULL;
  /* |h| <= |x| * sqrt(cols) * |nw| after the norm (nw in [-1, 1]): the matmul bound scaled by sqrt(cols) */
  float hs = fc->norm ? sqrtf((float)cols) : 1.0f;
  float tol = (2.0f * (float)cols * U * (float)cols + 4 * U) * hs + (fc->norm ? 8 * U * (float)cols * hs : 0.0f);
  {
    float *oc[3] = {out[0].c, out[1].c, out[2].c}, *ox[3] = {out[0].x, out[1].x, out[2].x};
    const xpi_weight *wc[3] = {&w[0].c, &w[1].c, &w[2].c}, *wx[3] = {&w[0].x, &w[1].x, &w[2].x};
    const xpi_weight *bc[3] = {&wb[0].c, &wb[1].c, &wb[2].c}, *bx[3] = {&wb[0].x, &wb[1].x, &wb[2].x};
    CHECK_OK(cpu->ops->matmul_multi(cpu, 3, oc, fc->x.c, nc, 1e-6f, fc->h.c, wc, fc->bias ? bc : NULL, n));
    CHECK_OK(xpu->ops->matmul_multi(xpu, 3, ox, fc->x.x, nx, 1e-6f, fc->h.x, wx, fc->bias ? bx : NULL, n));
    const float *in = sep_input(fc);
    for (int j = 0; j < 3; j++) CHECK_OK(xpu->ops->matmul(xpu, sep[j].x, in, wx[j], fc->bias ? bx[j] : NULL, n));
    for (int j = 0; j < 3; j++) fused_compare("matmul_multi", fc, &out[j], sep[j].x, rows[j], tol);
  }
  /* gate w[2]-like values of w[0]'s shape: a fresh weight times 4, up w[0] */
  float *uv = xt_randv((size_t)rows[0] * cols);
  for (size_t i = 0; i < (size_t)rows[0] * cols; i++) uv[i] *= 4.0f;
  void *usrc = xt_host_weight(uv, (size_t)rows[0] * cols, dt);
  wpair_make(&wu, usrc, dt, rows[0], cols, dt);
  for (int act = 0; act < 2; act++) {
    CHECK_OK(cpu->ops->matmul_glu(cpu, out[0].c, out[1].c, fc->x.c, nc, 1e-6f, fc->h.c, &wu.c, &w[0].c,
                                  (xpi_glu_act)act, n));
    CHECK_OK(xpu->ops->matmul_glu(xpu, out[0].x, out[1].x, fc->x.x, nx, 1e-6f, fc->h.x, &wu.x, &w[0].x,
                                  (xpi_glu_act)act, n));
    const float *in = sep_input(fc);
    CHECK_OK(xpu->ops->matmul(xpu, sep[0].x, in, &wu.x, NULL, n));
    CHECK_OK(xpu->ops->matmul(xpu, sep[1].x, in, &w[0].x, NULL, n));
    if (act) CHECK_OK(xpu->ops->geglu(xpu, sep[0].x, sep[0].x, sep[1].x, n, rows[0]));
    else CHECK_OK(xpu->ops->swiglu(xpu, sep[0].x, sep[0].x, sep[1].x, n, rows[0]));
    /* gate g within e = 4 tol of the CPU's (the weight times 4), |g| <= G = 4 cols hs, up u within tol, |u| <=
     * cols hs; the activations' slopes are below 1.2 and |act(g)| <= |g|: |d(act(g) u)| <= 1.2 e |u| + G tol, plus
     * the element-wise ops' own error (test_elementwise: 32 u relative) on values up to G cols hs */
    float G = 4.0f * (float)cols * hs, t2 = 1.2f * 4.0f * tol * (float)cols * hs + G * tol + 32 * U * G * (float)cols * hs;
    fused_compare(act ? "matmul_glu geglu" : "matmul_glu swiglu", fc, &out[0], sep[0].x, rows[0], t2);
  }
  { /* x += in @ w^T (+ b): x starts random on both sides */
    float *x0 = xt_randv((size_t)n * rows[0]);
    CHECK_OK(cpu->ops->write(cpu, out[0].c, x0, (size_t)n * rows[0] * 4));
    CHECK_OK(xpu->ops->write(xpu, out[0].x, x0, (size_t)n * rows[0] * 4));
    CHECK_OK(xpu->ops->write(xpu, sep[0].x, x0, (size_t)n * rows[0] * 4));
    CHECK_OK(cpu->ops->matmul_add(cpu, out[0].c, out[1].c, fc->x.c, &w[0].c, fc->bias ? &wb[0].c : NULL, n));
    CHECK_OK(xpu->ops->matmul_add(xpu, out[0].x, out[1].x, fc->x.x, &w[0].x, fc->bias ? &wb[0].x : NULL, n));
    CHECK_OK(xpu->ops->matmul(xpu, sep[1].x, fc->x.x, &w[0].x, fc->bias ? &wb[0].x : NULL, n));
    CHECK_OK(xpu->ops->add(xpu, sep[0].x, sep[1].x, (int64_t)n * rows[0]));
    int nrm = fc->norm;
    fc->norm = 0; /* matmul_add has no norm */
    fused_compare("matmul_add", fc, &out[0], sep[0].x, rows[0], 2.0f * (float)cols * U * (float)cols + 8 * U);
    fc->norm = nrm;
    free(x0);
  }
  free(uv), free(usrc);
  wpair_free(&wu);
  for (int j = 0; j < 3; j++) {
    wpair_free(&w[j]), wpair_free(&wb[j]), bp_free(&out[j]), bp_free(&sep[j]);
    free(src[j]), free(bsrc[j]);
  }
}

static void test_fused(void) {
  /* 384: three 128-column steps, so the bit-for-bit check below also covers the unrolled GEMV's remainder step */
  const int col_list[2] = {67, 384}, n_list[2] = {1, 7};
  for (int ci = 0; ci < 2; ci++)
    for (int ni = 0; ni < 2; ni++)
      for (int di = 0; di < 3; di++)
        for (int bias = 0; bias < 2; bias++)
          for (int norm = 0; norm < 2; norm++) {
            fused_case fc = {col_list[ci], n_list[ni], di, bias, norm, {0}, {0}, {{0}, {0}}};
            float *x = xt_randv((size_t)fc.n * fc.cols), *nv = xt_randv((size_t)fc.cols);
            void *nsrc = xt_host_weight(nv, (size_t)fc.cols, k_dts[di]);
            fc.x = bp(x, (size_t)fc.n * fc.cols * 4);
            fc.h = bp(NULL, (size_t)fc.n * fc.cols * 4);
            wpair_make(&fc.nw, nsrc, k_dts[di], 1, fc.cols, k_dts[di]);
            test_fused_case(&fc);
            bp_free(&fc.x), bp_free(&fc.h), wpair_free(&fc.nw);
            free(x), free(nv), free(nsrc);
          }
}

/* long: longrope's per-token choice of the second inv_freq table (here the first one / (1 + i)); the CPU's
 * tokens with long_sel set must equal a run over that table alone, and the XPU must match the CPU. */
static void test_rope(void) {
  const int hq = 6, hk = 2, hd_list[2] = {64, 34};
  int32_t pos7[7] = {0, 1, 2, 1000, 4097, 7, 31}, sel7[7] = {1, 0, 0, 1, 1, 0, 1};
  for (int hi = 0; hi < 2; hi++)
    for (int n = 1; n <= 7; n += 6)
      for (int norm = 0; norm < 2; norm++)
        for (int lng = 0; lng < 2; lng++) {
        int hd = hd_list[hi];
        xpi_rope_params rp = {.type = XPI_ROPE_DEFAULT, .theta = 1e6f, .head_dim = hd};
        float inv[128];
        xpi_rope_inv_freq(&rp, inv);
        for (int i = 0; i < hd / 2; i++) inv[hd / 2 + i] = inv[i] / (float)(1 + i);
        bpair bsel = bp(sel7, (size_t)n * 4);
        if (lng) rp.long_sel = bsel.c;
        if (lng) { /* the reference of the long tokens: the long table for every token */
          float *q0 = xt_randv((size_t)n * hq * hd), *k0 = xt_randv((size_t)n * hk * hd);
          float *q1 = malloc((size_t)n * hq * hd * 4), *k1 = malloc((size_t)n * hk * hd * 4);
          memcpy(q1, q0, (size_t)n * hq * hd * 4), memcpy(k1, k0, (size_t)n * hk * hd * 4);
          xpi_rope_params r0 = rp;
          r0.long_sel = NULL;
          CHECK_OK(cpu->ops->rope(cpu, q0, k0, pos7, n, hq, hk, &r0, inv + hd / 2, NULL, NULL, 1e-6f));
          CHECK_OK(cpu->ops->rope(cpu, q1, k1, pos7, n, hq, hk, &rp, inv, NULL, NULL, 1e-6f));
          for (int t = 0; t < n; t++)
            if (sel7[t])
              CHECK(!memcmp(q0 + (size_t)t * hq * hd, q1 + (size_t)t * hq * hd, (size_t)hq * hd * 4) &&
                        !memcmp(k0 + (size_t)t * hk * hd, k1 + (size_t)t * hk * hd, (size_t)hk * hd * 4),
                    "rope long_sel: token %d takes the long table (hd %d)", t, hd);
          free(q0), free(k0), free(q1), free(k1);
        }
        float *q = xt_randv((size_t)n * hq * hd), *k = xt_randv((size_t)n * hk * hd);
        float *qn = xt_randv(hd), *kn = xt_randv(hd);
        void *qsrc = xt_host_weight(qn, hd, XPI_DT_BF16), *ksrc = xt_host_weight(kn, hd, XPI_DT_F32);
        wpair wq, wk;
        wpair_make(&wq, qsrc, XPI_DT_BF16, 1, hd, XPI_DT_BF16);
        wpair_make(&wk, ksrc, XPI_DT_F32, 1, hd, XPI_DT_F32);
        bpair bq = bp(q, (size_t)n * hq * hd * 4), bk = bp(k, (size_t)n * hk * hd * 4), bpos = bp(pos7, (size_t)n * 4);
        bpair binv = bp(inv, (size_t)hd * 4);
        CHECK_OK(cpu->ops->rope(cpu, bq.c, bk.c, bpos.c, n, hq, hk, &rp, binv.c, norm ? &wq.c : NULL,
                                norm ? &wk.c : NULL, 1e-6f));
        if (lng) rp.long_sel = bsel.x;
        CHECK_OK(xpu->ops->rope(xpu, bq.x, bk.x, bpos.x, n, hq, hk, &rp, binv.x, norm ? &wq.x : NULL,
                                norm ? &wk.x : NULL, 1e-6f));
        float *hc, *hx;
        /* cos/sin: the CPU rounds double results, OpenCL's f32 cos/sin are within 4 ulp (spec) of the same
         * f32 angle: <= 5e-7 per factor; values are O(1) (norm weights <= 1 scale by <= ~8 for hd 64). */
        bp_get(&bq, &hc, &hx);
        char *what = xpi_test_strf("rope q hd=%d n=%d norm=%d long=%d", hd, n, norm, lng);
        xt_close(what, hx, hc, (size_t)n * hq * hd, 2e-5f, 1e-5f);
        free(hc), free(hx), free(what);
        bp_get(&bk, &hc, &hx);
        what = xpi_test_strf("rope k hd=%d n=%d norm=%d long=%d", hd, n, norm, lng);
        xt_close(what, hx, hc, (size_t)n * hk * hd, 2e-5f, 1e-5f);
        free(hc), free(hx), free(what), free(q), free(k), free(qn), free(kn), free(qsrc), free(ksrc);
        bp_free(&bq), bp_free(&bk), bp_free(&bpos), bp_free(&binv), bp_free(&bsel), wpair_free(&wq), wpair_free(&wk);
      }
}

/* The CPU cache's buffers: its struct xpi_kv (backend_cpu.c) starts as the XPU's (dtype, six ints, k, v). */
static void *kv_k(xpi_kv *kv) { return kv->k; }
static void *kv_v(xpi_kv *kv) { return kv->v; }

/* Decode steps (n = 1: the split-K sdpa, 16 key splits over a 4096-position sequence, merged by the last
 * work-group, and its fused KV store) against the CPU's eager reference, at GQA ratios 1, 2, 4, 8 and 16 (two
 * chunks of 8 heads a KV head), with a sliding window (the table entries before it are -1 and never read), softcap,
 * bf16 KV, and a short context where most splits get no key. The cache is filled on both backends with the same
 * random rows; two steps in a row (positions P and P + 1) so that the second reads the row the first stored and
 * finds the split counters reset. */
static void test_attention_decode(void) {
  enum { BS = 16, MB = 256, NB = MB + 1, HK = 2, HD = 64 };
  const int ratios[5] = {1, 2, 4, 8, 16};
  const struct { int p, window; float cap, qm; xpi_dtype dt; } cases[4] = {
    {4094, 0, 0, 1, XPI_DT_F32}, {4094, 1000, 0, 1, XPI_DT_F32}, {4094, 0, 2.0f, 8, XPI_DT_BF16},
    {100, 0, 0, 1, XPI_DT_F32}};
  for (int ci = 0; ci < 4; ci++)
    for (int ri = 0; ri < 5; ri++) {
      const int hq = HK * ratios[ri], P = cases[ci].p, win = cases[ci].window;
      const xpi_dtype dt = cases[ci].dt;
      const size_t esz = xpi_dtype_size(dt), cache = (size_t)NB * BS * HK * HD;
      int32_t tables[MB];
      for (int b = 0; b < MB; b++) /* scrambled blocks; -1 before the window's first key */
        tables[b] = win > 0 && b * BS + BS - 1 < P - win + 1 ? -1 : (b * 7 + 3) % NB;
      xpi_kv *kvc = NULL, *kvx = NULL;
      CHECK_OK(cpu->ops->kv_create(cpu, 1, NB, BS, HK, HD, dt, &kvc));
      CHECK_OK(xpu->ops->kv_create(xpu, 1, NB, BS, HK, HD, dt, &kvx));
      if (!kvc || !kvx) return;
      /* the same values in each backend's layout: XPU [block][slot][head][hd], CPU [block][head][slot][hd] */
      unsigned char *fx = malloc(cache * esz), *fc = malloc(cache * esz);
      for (int kvi = 0; kvi < 2; kvi++) {
        for (size_t e = 0; e < cache; e++) {
          const size_t d = e % HD, h = e / HD % HK, slot = e / HD / HK % BS, blk = e / HD / HK / BS;
          const size_t ec = ((blk * HK + h) * BS + slot) * HD + d;
          float f = xt_rand();
          if (dt == XPI_DT_BF16) {
            uint32_t u;
            memcpy(&u, &f, 4);
            uint16_t h16 = (uint16_t)(u >> 16);
            memcpy(fx + e * 2, &h16, 2), memcpy(fc + ec * 2, &h16, 2);
          } else {
            memcpy(fx + e * 4, &f, 4), memcpy(fc + ec * 4, &f, 4);
          }
        }
        CHECK_OK(cpu->ops->write(cpu, kvi ? kv_v(kvc) : kv_k(kvc), fc, cache * esz));
        CHECK_OK(xpu->ops->write(xpu, kvi ? kvx->v : kvx->k, fx, cache * esz));
      }
      free(fx), free(fc);
      bpair btab = bp(tables, sizeof tables);
      const float scale = 1.0f / sqrtf((float)HD);
      for (int step = 0; step < 2; step++) {
        const int32_t pos = P + step, seq = 0;
        float *q = xt_randv((size_t)hq * HD), *k = xt_randv((size_t)HK * HD), *v = xt_randv((size_t)HK * HD);
        for (int e = 0; e < hq * HD; e++) q[e] *= cases[ci].qm;
        bpair bq = bp(q, (size_t)hq * HD * 4), bk = bp(k, (size_t)HK * HD * 4), bv = bp(v, (size_t)HK * HD * 4);
        bpair bpos = bp(&pos, 4), bseq = bp(&seq, 4), out = bp(NULL, (size_t)hq * HD * 4);
        const xpi_kv_map mc = {bpos.c, bseq.c, btab.c, MB}, mx = {bpos.x, bseq.x, btab.x, MB};
        const xpi_attn_params apc = {scale, cases[ci].cap, win, XPI_ATTN_EAGER};
        const xpi_attn_params apx = {scale, cases[ci].cap, win, XPI_ATTN_SDPA};
        CHECK_OK(cpu->ops->attention(cpu, out.c, bq.c, bk.c, bv.c, kvc, 0, &mc, 1, hq, HK, HD, &apc));
        CHECK_OK(xpu->ops->attention(xpu, out.x, bq.x, bk.x, bv.x, kvx, 0, &mx, 1, hq, HK, HD, &apx));
        float *hc, *hx;
        bp_get(&out, &hc, &hx);
        /* test_attention's bound (score error through softmax, convex combinations of |v| <= 1, the softcap's own
         * error), plus the merge of the 16 splits: each output is a sum of 16 rescaled partial sums of
         * magnitude <= 1 and a division, (16 + 2) u more */
        float tol = 2.0f * HD * U * HD * scale * cases[ci].qm + 64 * U + 16 * U * cases[ci].cap + 18 * U;
        char *what = xpi_test_strf("decode attention gqa %d pos %d window %d softcap %g kv %s", ratios[ri], pos,
                                   win, (double)cases[ci].cap, xpi_dtype_name(dt));
        xt_close(what, hx, hc, (size_t)hq * HD, tol, 0);
        free(what), free(hc), free(hx), free(q), free(k), free(v);
        bp_free(&bq), bp_free(&bk), bp_free(&bv), bp_free(&bpos), bp_free(&bseq), bp_free(&out);
      }
      bp_free(&btab);
      cpu->ops->kv_free(cpu, kvc);
      xpu->ops->kv_free(xpu, kvx);
    }
}

/* Three sequences in a paged cache (blocks of 16 in scrambled order, layer 1 of 2): step 1 prefills 7
 * tokens of sequence 0 and 3 of sequence 1; step 2 decodes one token of each and prefills 20 of sequence 2
 * (the batch lists sequence 2 first). Each XPU implementation against the CPU's eager reference, with GQA
 * groups of 3 so that flash work-groups hold rows of several sequences. */
static void test_attention(void) {
  enum { MB = 3, NB = 9 };
  const int hq = 6, hk = 2, hd_list[2] = {64, 40};
  const xpi_dtype kv_dts[2] = {XPI_DT_F32, XPI_DT_F16};
  const xpi_attn_impl impls[3] = {XPI_ATTN_SDPA, XPI_ATTN_EAGER, XPI_ATTN_FLASH};
  const char *names[3] = {"sdpa", "eager", "flash_attention_2"};
  const int32_t tables[3 * MB] = {4, 8, 1, 0, 6, 3, 7, 2, 5};
  const int32_t pos1[10] = {0, 1, 2, 3, 4, 5, 6, 0, 1, 2}, seq1[10] = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1};
  int32_t pos2[22], seq2[22];
  for (int i = 0; i < 20; i++) pos2[i] = i, seq2[i] = 2;
  pos2[20] = 7, seq2[20] = 0, pos2[21] = 3, seq2[21] = 1;
  bpair btab = bp(tables, sizeof tables);
  /* sliding windows (5 and 7: smaller than the 20-token prefill, crossing its block boundary at 16, and the
   * decode of sequence 0 at position 7 over its cached prefix; 100: larger than every context) and logit
   * softcaps (0.5 and 2 on q scaled by 8: scores of several units, heavily capped) */
  const int32_t wins[5] = {0, 5, 100, 7, 0};
  const float caps[5] = {0, 0, 0, 0.5f, 2.0f}, qms[5] = {1, 1, 1, 8, 8};
  for (int vi = 0; vi < 5; vi++)
  for (int hi = 0; hi < 2; hi++)
    for (int ki = 0; ki < 2; ki++)
      for (int ii = 0; ii < 3; ii++) {
        int hd = hd_list[hi];
        float scale = 1.0f / sqrtf((float)hd);
        xpi_kv *kvc = NULL, *kvx = NULL;
        CHECK_OK(cpu->ops->kv_create(cpu, 2, NB, 16, hk, hd, kv_dts[ki], &kvc));
        CHECK_OK(xpu->ops->kv_create(xpu, 2, NB, 16, hk, hd, kv_dts[ki], &kvx));
        for (int step = 0; step < 2 && kvc && kvx; step++) {
          const int n = step == 0 ? 10 : 22;
          const int32_t *pos = step == 0 ? pos1 : pos2, *seq = step == 0 ? seq1 : seq2;
          float *q = xt_randv((size_t)n * hq * hd), *k = xt_randv((size_t)n * hk * hd), *v = xt_randv((size_t)n * hk * hd);
          for (size_t e = 0; e < (size_t)n * hq * hd; e++) q[e] *= qms[vi];
          if (step == 1 && wins[vi] > 0 && wins[vi] < 8) {
            /* NaN over the rows of sequence 0 (block 4, positions 0..6 stored by step 0) before the window of its
             * token at position 7: reading them would make its output NaN */
            const size_t esz = xpi_dtype_size(kv_dts[ki]), row = (size_t)hk * hd * esz;
            const size_t off = ((size_t)(1 * NB + 4) * 16) * row, len = (size_t)(8 - wins[vi]) * row;
            unsigned char *nan = malloc(len);
            memset(nan, 0xff, len); /* all-ones: a NaN in f32, f16 and bf16 */
            CHECK_OK(xpu->ops->write(xpu, (unsigned char *)kvx->k + off, nan, len));
            CHECK_OK(xpu->ops->write(xpu, (unsigned char *)kvx->v + off, nan, len));
            free(nan);
          }
          bpair bq = bp(q, (size_t)n * hq * hd * 4), bk = bp(k, (size_t)n * hk * hd * 4), bv = bp(v, (size_t)n * hk * hd * 4);
          bpair bpos = bp(pos, (size_t)n * 4), bseq = bp(seq, (size_t)n * 4), out = bp(NULL, (size_t)n * hq * hd * 4);
          const xpi_kv_map mc = {bpos.c, bseq.c, btab.c, MB}, mx = {bpos.x, bseq.x, btab.x, MB};
          const xpi_attn_params apc = {scale, caps[vi], wins[vi], XPI_ATTN_EAGER};
          const xpi_attn_params apx = {scale, caps[vi], wins[vi], impls[ii]};
          CHECK_OK(cpu->ops->attention(cpu, out.c, bq.c, bk.c, bv.c, kvc, 1, &mc, n, hq, hk, hd, &apc));
          CHECK_OK(xpu->ops->attention(xpu, out.x, bq.x, bk.x, bv.x, kvx, 1, &mx, n, hq, hk, hd, &apx));
          float *hc, *hx;
          bp_get(&out, &hc, &hx);
          /* scores: |q.k| <= hd, error <= 2 hd u hd * scale; softmax is 1-Lipschitz in the max-norm of the
           * scores to its weights' sum, and outputs are convex combinations of |v| <= 1 values: the output
           * error is about the score error plus a few u. q scaled by qm scales the score error; the softcap
           * carries it with slope <= 1 and adds its own (division and tanh, <= 5 ulp in OpenCL): 16 u cap. */
          float tol = 2.0f * (float)hd * U * (float)hd * scale * qms[vi] + 64 * U + 16 * U * caps[vi];
          char *what = xpi_test_strf("attention %s hd=%d kv=%s step %d window %d softcap %g", names[ii], hd,
                                     xpi_dtype_name(kv_dts[ki]), step, wins[vi], (double)caps[vi]);
          xt_close(what, hx, hc, (size_t)n * hq * hd, tol, 0);
          free(what), free(hc), free(hx), free(q), free(k), free(v);
          bp_free(&bq), bp_free(&bk), bp_free(&bv), bp_free(&bpos), bp_free(&bseq), bp_free(&out);
        }
        cpu->ops->kv_free(cpu, kvc);
        xpu->ops->kv_free(xpu, kvx);
      }
  bp_free(&btab);
  /* head_dim beyond the kernels' local-memory tile: a clear error, not a wrong answer */
  xpi_kv *kv = NULL;
  CHECK_OK(xpu->ops->kv_create(xpu, 1, 1, 4, 1, 512, XPI_DT_F32, &kv));
  const xpi_kv_map none = {NULL, NULL, NULL, 1};
  const xpi_attn_params ap1 = {1.0f, 0, 0, XPI_ATTN_SDPA};
  CHECK_ERR(xpu->ops->attention(xpu, NULL, NULL, NULL, NULL, kv, 0, &none, 1, 1, 1, 512, &ap1),
            XPI_ERR_UNSUPPORTED, "head_dim 512");
  xpu->ops->kv_free(xpu, kv);
}

static void test_elementwise(void) {
  const int n = 7, f = 67;
  size_t cnt = (size_t)n * f;
  float *g = xt_randv(cnt), *u = xt_randv(cnt);
  for (size_t i = 0; i < cnt; i++) g[i] *= 8.0f; /* silu over a wider range */
  bpair bg = bp(g, cnt * 4), bu = bp(u, cnt * 4), out = bp(NULL, cnt * 4);
  CHECK_OK(cpu->ops->swiglu(cpu, out.c, bg.c, bu.c, n, f));
  CHECK_OK(xpu->ops->swiglu(xpu, out.x, bg.x, bu.x, n, f));
  float *hc, *hx;
  bp_get(&out, &hc, &hx);
  /* exp within 3 ulp (OpenCL spec) plus a division and two products: relative error < 8 u + a bit */
  xt_close("swiglu", hx, hc, cnt, 1e-7f, 16 * U);
  free(hc), free(hx);
  /* geglu, g in [-8, 8]: both sides within ~16 u (1 + |g|) |u| of the exact value (test_cpu_ops.c says why;
   * OpenCL's tanh is allowed 5 ulp, hence 32), |g| <= 8 and |u| <= 1: 32 * 9 u absolute */
  CHECK_OK(cpu->ops->geglu(cpu, out.c, bg.c, bu.c, n, f));
  CHECK_OK(xpu->ops->geglu(xpu, out.x, bg.x, bu.x, n, f));
  bp_get(&out, &hc, &hx);
  xt_close("geglu", hx, hc, cnt, 32 * 9 * U, 0);
  free(hc), free(hx);
  /* softcap 5 over g in [-8, 8]: cap * tanh(x / cap), a division and tanh (<= 5 ulp) each side: 16 u * cap */
  bpair bs = bp(g, cnt * 4);
  CHECK_OK(cpu->ops->softcap(cpu, bs.c, (int64_t)cnt, 5.0f));
  CHECK_OK(xpu->ops->softcap(xpu, bs.x, (int64_t)cnt, 5.0f));
  bp_get(&bs, &hc, &hx);
  xt_close("softcap", hx, hc, cnt, 16 * 5 * U, 0);
  free(hc), free(hx);
  CHECK_ERR(xpu->ops->softcap(xpu, bs.x, 1, -1.0f), XPI_ERR_INVALID_ARGUMENT, "softcap");
  /* scale: one f32 product, exact (on the same inputs: the softcapped values differ by rounding) */
  bp_free(&bs);
  bs = bp(g, cnt * 4);
  CHECK_OK(cpu->ops->scale(cpu, bs.c, (int64_t)cnt, 0.37f));
  CHECK_OK(xpu->ops->scale(xpu, bs.x, (int64_t)cnt, 0.37f));
  bp_get(&bs, &hc, &hx);
  xt_close("scale", hx, hc, cnt, 0, 0);
  free(hc), free(hx);
  bp_free(&bs);
  CHECK_OK(cpu->ops->add(cpu, bg.c, bu.c, (int64_t)cnt));
  CHECK_OK(xpu->ops->add(xpu, bg.x, bu.x, (int64_t)cnt));
  bp_get(&bg, &hc, &hx);
  xt_close("add", hx, hc, cnt, 0, 0); /* one f32 add: exact */
  free(hc), free(hx), free(g), free(u);
  bp_free(&bg), bp_free(&bu), bp_free(&out);
}

static void test_sampling(void) {
  const int rows = 3, cols = 4099, k = 5;
  float *x = xt_randv((size_t)rows * cols);
  x[0 * cols + 4000] = 3.0f; /* row 0: a tie at 17 and 4000 -> 17 */
  x[0 * cols + 17] = 3.0f;
  x[1 * cols + 4098] = 2.5f; /* row 1: the last column */
  x[2 * cols + 0] = 2.0f;    /* row 2: the first column, and a tie inside the top 5 */
  x[2 * cols + 9] = 1.5f;
  x[2 * cols + 3] = 1.5f;
  bpair bx = bp(x, (size_t)rows * cols * 4), out = bp(NULL, (size_t)rows * 4);
  CHECK_OK(cpu->ops->argmax(cpu, out.c, bx.c, rows, cols));
  CHECK_OK(xpu->ops->argmax(xpu, out.x, bx.x, rows, cols));
  int32_t ac[3], ax[3];
  xt_down(cpu, ac, out.c, sizeof ac);
  xt_down(xpu, ax, out.x, sizeof ax);
  for (int r = 0; r < rows; r++) CHECK(ac[r] == ax[r], "argmax row %d: xpu %d cpu %d", r, ax[r], ac[r]);
  CHECK(ax[0] == 17 && ax[1] == 4098 && ax[2] == 0, "argmax: %d %d %d", ax[0], ax[1], ax[2]);
  { /* a NaN, +inf or -inf anywhere in a row: -1 from both backends (the greedy path's non-finite check) */
    float *y = xt_randv((size_t)rows * cols);
    y[0 * cols + 4097] = NAN;
    y[1 * cols + 64] = INFINITY;
    y[2 * cols + 1] = -INFINITY;
    bpair by = bp(y, (size_t)rows * cols * 4);
    CHECK_OK(cpu->ops->argmax(cpu, out.c, by.c, rows, cols));
    CHECK_OK(xpu->ops->argmax(xpu, out.x, by.x, rows, cols));
    xt_down(cpu, ac, out.c, sizeof ac);
    xt_down(xpu, ax, out.x, sizeof ax);
    for (int r = 0; r < rows; r++) CHECK(ac[r] == -1 && ax[r] == -1, "non-finite row %d: cpu %d xpu %d", r, ac[r], ax[r]);
    bp_free(&by);
    free(y);
  }
  { /* vocabulary rows (151936, Qwen's): 37 blocks of 4096 columns a row reduced by the last work-group. Row 0: a
     * tie across blocks (100 and 150000) -> 100; row 1: a tie inside the last block and one in the first ->
     * the first; row 2: the max in the last column; row 3: a NaN in one block only -> -1. Twice, so that the
     * second launch finds the counters reset. */
    const int R = 4, C = 151936;
    float *y = xt_randv((size_t)R * C);
    y[0 * (size_t)C + 150000] = 3.0f, y[0 * (size_t)C + 100] = 3.0f;
    y[1 * (size_t)C + 151000] = 2.0f, y[1 * (size_t)C + 151001] = 2.0f, y[1 * (size_t)C + 5] = 2.0f;
    y[2 * (size_t)C + C - 1] = 1.5f;
    y[3 * (size_t)C + 77777] = NAN;
    bpair by = bp(y, (size_t)R * C * 4), o4 = bp(NULL, (size_t)R * 4);
    for (int rep = 0; rep < 2; rep++) {
      int32_t c4[4], x4[4], stale[4] = {-2, -2, -2, -2}; /* the first launch's result must not survive */
      CHECK_OK(xpu->ops->write(xpu, o4.x, stale, sizeof stale));
      CHECK_OK(cpu->ops->argmax(cpu, o4.c, by.c, R, C));
      CHECK_OK(xpu->ops->argmax(xpu, o4.x, by.x, R, C));
      xt_down(cpu, c4, o4.c, sizeof c4);
      xt_down(xpu, x4, o4.x, sizeof x4);
      for (int r = 0; r < R; r++) CHECK(c4[r] == x4[r], "argmax vocab row %d: xpu %d cpu %d", r, x4[r], c4[r]);
      CHECK(x4[0] == 100 && x4[1] == 5 && x4[2] == C - 1 && x4[3] == -1, "argmax vocab: %d %d %d %d", x4[0], x4[1],
            x4[2], x4[3]);
    }
    bp_free(&by), bp_free(&o4);
    free(y);
  }
  /* top-k: the scalar selection below, then the CPU op (ids and values bit for bit, the normaliser's sum within
   * 1e-6 relative: exp within 3 ulp (OpenCL spec), a compensated sum per work-item, 6 pairwise levels: < 12 u) */
  const int kk[3] = {k, 1, 300};
  for (int t = 0; t < 3; t++) {
    const int K = kk[t];
    bpair ids = bp(NULL, (size_t)rows * K * 4), vals = bp(NULL, (size_t)rows * K * 4), norm = bp(NULL, (size_t)rows * 8);
    CHECK_OK(xpu->ops->topk(xpu, ids.x, vals.x, norm.x, bx.x, rows, cols, K));
    CHECK_OK(cpu->ops->topk(cpu, ids.c, vals.c, norm.c, bx.c, rows, cols, K));
    int32_t *hid = malloc((size_t)rows * K * 4), *cid = malloc((size_t)rows * K * 4);
    float *hval = malloc((size_t)rows * K * 4), *cval = malloc((size_t)rows * K * 4), hn[6], cn[6];
    xt_down(xpu, hid, ids.x, (size_t)rows * K * 4);
    xt_down(xpu, hval, vals.x, (size_t)rows * K * 4);
    xt_down(xpu, hn, norm.x, sizeof hn);
    xt_down(cpu, cid, ids.c, (size_t)rows * K * 4);
    xt_down(cpu, cval, vals.c, (size_t)rows * K * 4);
    xt_down(cpu, cn, norm.c, sizeof cn);
    for (int r = 0; r < rows; r++) {
      const float *row = x + (size_t)r * cols;
      int prev = -1;
      double sum = 0;
      for (int c = 0; c < cols; c++) sum += exp((double)row[c] - row[hid[r * K]]);
      for (int j = 0; j < K && j < 5; j++) { /* the first ranks by a plain scan */
        int best = -1;
        for (int c = 0; c < cols; c++) {
          if (prev >= 0 && !(row[c] < row[prev] || (row[c] == row[prev] && c > prev))) continue;
          if (best < 0 || row[c] > row[best]) best = c;
        }
        CHECK(hid[r * K + j] == best && hval[r * K + j] == row[best], "topk row %d rank %d: xpu %d (%g) want %d (%g)",
              r, j, hid[r * K + j], (double)hval[r * K + j], best, (double)row[best]);
        prev = best;
      }
      for (int j = 0; j < K; j++)
        CHECK(hid[r * K + j] == cid[r * K + j] && hval[r * K + j] == cval[r * K + j],
              "topk k=%d row %d rank %d: xpu %d (%g), cpu %d (%g)", K, r, j, hid[r * K + j], (double)hval[r * K + j],
              cid[r * K + j], (double)cval[r * K + j]);
      CHECK(hn[2 * r] == row[hid[r * K]] && cn[2 * r] == hn[2 * r], "topk row %d max: xpu %g cpu %g", r,
            (double)hn[2 * r], (double)cn[2 * r]);
      CHECK(fabs(hn[2 * r + 1] - sum) <= 1e-6 * sum && fabs(cn[2 * r + 1] - sum) <= 1e-7 * sum,
            "topk row %d sum of exp: xpu %.9g cpu %.9g want %.9g", r, (double)hn[2 * r + 1], (double)cn[2 * r + 1], sum);
    }
    if (K == k) CHECK(hid[2 * k + 1] == 3 && hid[2 * k + 2] == 9, "topk tie order: %d %d", hid[2 * k + 1], hid[2 * k + 2]);
    free(hid), free(cid), free(hval), free(cval);
    bp_free(&ids), bp_free(&vals), bp_free(&norm);
  }
  { /* non-finite rows: ids all -1 on both backends, the finite row untouched */
    float *y = xt_randv((size_t)rows * cols);
    y[0 * cols + 4097] = NAN;
    y[1 * cols + 64] = -INFINITY;
    bpair by = bp(y, (size_t)rows * cols * 4), ids = bp(NULL, (size_t)rows * k * 4), vals = bp(NULL, (size_t)rows * k * 4),
          norm = bp(NULL, (size_t)rows * 8);
    CHECK_OK(xpu->ops->topk(xpu, ids.x, vals.x, norm.x, by.x, rows, cols, k));
    CHECK_OK(cpu->ops->topk(cpu, ids.c, vals.c, norm.c, by.c, rows, cols, k));
    int32_t hid[15], cid[15];
    xt_down(xpu, hid, ids.x, sizeof hid);
    xt_down(cpu, cid, ids.c, sizeof cid);
    for (int j = 0; j < 2 * k; j++) CHECK(hid[j] == -1 && cid[j] == -1, "topk of a non-finite row: xpu %d cpu %d", hid[j], cid[j]);
    CHECK(hid[2 * k] >= 0 && hid[2 * k] == cid[2 * k], "topk of the finite row: xpu %d cpu %d", hid[2 * k], cid[2 * k]);
    bp_free(&by), bp_free(&ids), bp_free(&vals), bp_free(&norm);
    free(y);
  }
  bp_free(&bx), bp_free(&out);
  free(x);
}

/* Weights placed in another dtype are converted on the device: bit-identical to the host conversions. */
static void test_convert(void) {
  const int n = 1000;
  float *v = xt_randv(n);
  v[0] = 1e-41f; /* subnormal */
  v[1] = 70000.0f; /* overflows f16 */
  v[2] = 1.0f + 1.0f / 256; /* a bf16 rounding tie */
  const xpi_dtype pairs[4][2] = {{XPI_DT_F32, XPI_DT_BF16}, {XPI_DT_F32, XPI_DT_F16}, {XPI_DT_BF16, XPI_DT_F32},
                                 {XPI_DT_F16, XPI_DT_F32}};
  for (int p = 0; p < 4; p++) {
    void *src = xt_host_weight(v, n, pairs[p][0]);
    wpair w;
    wpair_make(&w, src, pairs[p][0], 1, n, pairs[p][1]);
    size_t bytes = (size_t)n * xpi_dtype_size(pairs[p][1]);
    unsigned char *hx = malloc(bytes);
    xt_down(xpu, hx, w.x.data, bytes);
    CHECK(memcmp(hx, w.c.data, bytes) == 0, "convert %s -> %s differs from the host conversion",
          xpi_dtype_name(pairs[p][0]), xpi_dtype_name(pairs[p][1]));
    free(hx), free(src);
    wpair_free(&w);
  }
  free(v);
  xpi_weight q;
  int32_t ione = 1; /* q8/q4 are placed (tests/xpu/test_xpu_quant.c); integer weights are not */
  CHECK_ERR(xpu->ops->weight_create(xpu, &q, &ione, XPI_DT_I32, 1, 1, XPI_DT_F32), XPI_ERR_UNSUPPORTED, "not supported");
}

/* Above the device's max allocation size (zesim: half its memory, as Intel's discrete GPUs) the backend
 * chains the relaxed-allocation-limits descriptor; the memory then works like any other. */
static void test_big_alloc(void) {
  const xpi_ze_device *devs = NULL;
  size_t n = 0;
  CHECK_OK(xpi_ze_devices(&devs, &n));
  if (n == 0) return;
  uint64_t max = devs[0].info.max_alloc_size;
  if (max == 0 || max > (1ull << 30)) {
    printf("big allocation test skipped: max_alloc_size %llu (ZESIM_DEVICES sets a small memory)\n",
           (unsigned long long)max);
    return;
  }
  size_t bytes = (size_t)max + (1u << 20);
  uint64_t free0 = 0, free1 = 0, free2 = 0;
  CHECK_OK(xpi_xpu_free_memory(0, &free0));
  unsigned char *p = xpu->ops->alloc(xpu, bytes);
  CHECK_OK(xpi_xpu_free_memory(0, &free1));
  CHECK(free0 - free1 >= bytes, "free memory went from %llu to %llu after allocating %zu", (unsigned long long)free0,
        (unsigned long long)free1, bytes);
  CHECK(p != NULL, "allocation of %zu bytes (max_alloc_size %llu): %s", bytes, (unsigned long long)max,
        xpi_last_error());
  if (!p) return;
  const char tail[] = "end of a relaxed allocation";
  char back[sizeof tail];
  CHECK_OK(xpu->ops->write(xpu, p + bytes - sizeof tail, tail, sizeof tail));
  xt_down(xpu, back, p + bytes - sizeof tail, sizeof back);
  CHECK(memcmp(back, tail, sizeof tail) == 0, "data at the end of the relaxed allocation");
  xpu->ops->free(xpu, p);
  CHECK_OK(xpi_xpu_free_memory(0, &free2));
  CHECK(free2 == free0, "free memory %llu after freeing, %llu before", (unsigned long long)free2,
        (unsigned long long)free0);
}

/* One decode step: embed -> rmsnorm -> q/k/v projections -> rope -> attention -> argmax, with ids and
 * positions in device buffers. */
typedef struct {
  xpi_weight emb, norm, wq, wk, wv;
  float *inv, *x, *h, *q, *k, *v, *att;
  int32_t *ids, *pos, *tok, *seq, *table;
  xpi_kv *kv;
} step_t;
enum { S_D = 48, S_HQ = 3, S_HK = 1, S_HD = 16, S_V = 29, S_CTX = 16 };

static void step_init(step_t *s, const float *emb, const float *wn, const float *wqkv) {
  memset(s, 0, sizeof *s);
  CHECK_OK(xpu->ops->weight_create(xpu, &s->emb, emb, XPI_DT_F32, S_V, S_D, XPI_DT_BF16));
  CHECK_OK(xpu->ops->weight_create(xpu, &s->norm, wn, XPI_DT_F32, 1, S_D, XPI_DT_F32));
  CHECK_OK(xpu->ops->weight_create(xpu, &s->wq, wqkv, XPI_DT_F32, S_HQ * S_HD, S_D, XPI_DT_F16));
  CHECK_OK(xpu->ops->weight_create(xpu, &s->wk, wqkv, XPI_DT_F32, S_HK * S_HD, S_D, XPI_DT_F32));
  CHECK_OK(xpu->ops->weight_create(xpu, &s->wv, wqkv + S_D, XPI_DT_F32, S_HK * S_HD, S_D, XPI_DT_BF16));
  xpi_rope_params rp = {.type = XPI_ROPE_DEFAULT, .theta = 10000.0f, .head_dim = S_HD};
  float inv[S_HD / 2];
  xpi_rope_inv_freq(&rp, inv);
  s->inv = xt_up(xpu, inv, sizeof inv);
  s->x = xt_up(xpu, NULL, S_D * 4);
  s->h = xt_up(xpu, NULL, S_D * 4);
  s->q = xt_up(xpu, NULL, S_HQ * S_HD * 4);
  s->k = xt_up(xpu, NULL, S_HK * S_HD * 4);
  s->v = xt_up(xpu, NULL, S_HK * S_HD * 4);
  s->att = xt_up(xpu, NULL, S_HQ * S_HD * 4);
  s->ids = xt_up(xpu, NULL, 4);
  s->pos = xt_up(xpu, NULL, 4);
  s->tok = xt_up(xpu, NULL, 4);
  const int32_t zero = 0;
  s->seq = xt_up(xpu, &zero, 4);
  s->table = xt_up(xpu, &zero, 4);
  CHECK_OK(xpu->ops->kv_create(xpu, 1, 1, S_CTX, S_HK, S_HD, XPI_DT_F16, &s->kv));
}

static void step_ops(step_t *s) {
  xpi_rope_params rp = {.type = XPI_ROPE_DEFAULT, .theta = 10000.0f, .head_dim = S_HD};
  CHECK_OK(xpu->ops->embed(xpu, s->x, &s->emb, s->ids, 1));
  CHECK_OK(xpu->ops->rmsnorm(xpu, s->h, s->x, NULL, &s->norm, 1, S_D, 1e-6f));
  CHECK_OK(xpu->ops->matmul(xpu, s->q, s->h, &s->wq, NULL, 1));
  CHECK_OK(xpu->ops->matmul(xpu, s->k, s->h, &s->wk, NULL, 1));
  CHECK_OK(xpu->ops->matmul(xpu, s->v, s->h, &s->wv, NULL, 1));
  CHECK_OK(xpu->ops->rope(xpu, s->q, s->k, s->pos, 1, S_HQ, S_HK, &rp, s->inv, NULL, NULL, 1e-6f));
  const xpi_kv_map map = {s->pos, s->seq, s->table, 1};
  const xpi_attn_params ap = {0.25f, 0, 0, XPI_ATTN_FLASH};
  CHECK_OK(xpu->ops->attention(xpu, s->att, s->q, s->k, s->v, s->kv, 0, &map, 1, S_HQ, S_HK, S_HD, &ap));
  CHECK_OK(xpu->ops->argmax(xpu, s->tok, s->att, 1, S_HQ * S_HD));
}

static void step_free(step_t *s) {
  xpi_weight *ws[5] = {&s->emb, &s->norm, &s->wq, &s->wk, &s->wv};
  for (int i = 0; i < 5; i++) xpu->ops->weight_free(xpu, ws[i]);
  void *bs[12] = {s->inv, s->x, s->h, s->q, s->k, s->v, s->att, s->ids, s->pos, s->tok, s->seq, s->table};
  for (int i = 0; i < 12; i++) xpu->ops->free(xpu, bs[i]);
  xpu->ops->kv_free(xpu, s->kv);
}

static void test_graph(void) {
  float *emb = xt_randv(S_V * S_D), *wn = xt_randv(S_D), *wqkv = xt_randv(S_HQ * S_HD * S_D + S_D);
  step_t direct, rec;
  step_init(&direct, emb, wn, wqkv);
  step_init(&rec, emb, wn, wqkv);
  const int32_t ids[6] = {3, 28, 0, 11, 11, 7};
  void *graph = NULL;
  CHECK_OK(xpu->ops->capture_begin(xpu));
  step_ops(&rec);
  CHECK_OK(xpu->ops->capture_end(xpu, &graph));
  CHECK(graph != NULL, "capture_end gave no graph");
  float first[S_HQ * S_HD];
  for (int32_t p = 0; p < 6 && graph; p++) {
    float a[S_HQ * S_HD], b[S_HQ * S_HD];
    int32_t ta, tb;
    CHECK_OK(xpu->ops->write(xpu, direct.ids, &ids[p], 4));
    CHECK_OK(xpu->ops->write(xpu, direct.pos, &p, 4));
    step_ops(&direct);
    xt_down(xpu, a, direct.att, sizeof a);
    xt_down(xpu, &ta, direct.tok, 4);
    CHECK_OK(xpu->ops->write(xpu, rec.ids, &ids[p], 4));
    CHECK_OK(xpu->ops->write(xpu, rec.pos, &p, 4));
    CHECK_OK(xpu->ops->replay(xpu, graph));
    xt_down(xpu, b, rec.att, sizeof b);
    xt_down(xpu, &tb, rec.tok, 4);
    char *what = xpi_test_strf("replayed step at position %d", p);
    xt_close(what, b, a, S_HQ * S_HD, 0, 0); /* same kernels, same inputs: identical */
    CHECK(ta == tb, "%s: token %d vs %d", what, tb, ta);
    free(what);
    /* the replay really saw the new position and cache length: the output moves */
    if (p == 0) memcpy(first, b, sizeof b);
    if (p == 5) CHECK(memcmp(first, b, sizeof b) != 0, "replay at position 5 gave position 0's output");
  }
  xpu->ops->graph_free(xpu, graph);
  step_free(&direct);
  step_free(&rec);
  free(emb), free(wn), free(wqkv);
}

/* Requests on several threads share a model's backends: each thread's ops, copies and recordings stay its
 * own (a recording catches only its thread's ops). Thread t adds y = t+1 into x 20 times, directly or
 * through a recorded graph replayed 20 times; every value must end at 20 * (t + 1). */
typedef struct {
  int t, use_graph, ok;
  char err[256]; /* xpi_last_error() is per thread */
} thr_arg;

static void *thr_main(void *p) {
  thr_arg *a = p;
  enum { N = 1000 };
  float *h = malloc(N * sizeof *h);
  for (int i = 0; i < N; i++) h[i] = 0;
  float *x = xpu->ops->alloc(xpu, N * 4), *y = xpu->ops->alloc(xpu, N * 4);
  a->ok = x && y && xpu->ops->write(xpu, x, h, N * 4) == XPI_OK;
  for (int i = 0; i < N; i++) h[i] = (float)(a->t + 1);
  a->ok = a->ok && xpu->ops->write(xpu, y, h, N * 4) == XPI_OK;
  void *graph = NULL;
  if (a->ok && a->use_graph) {
    a->ok = xpu->ops->capture_begin(xpu) == XPI_OK;
    a->ok = a->ok && xpu->ops->add(xpu, x, y, N) == XPI_OK;
    a->ok = xpu->ops->capture_end(xpu, &graph) == XPI_OK && a->ok;
  }
  for (int it = 0; it < 20 && a->ok; it++)
    a->ok = (a->use_graph ? xpu->ops->replay(xpu, graph) : xpu->ops->add(xpu, x, y, N)) == XPI_OK;
  a->ok = a->ok && xpu->ops->read(xpu, h, x, N * 4) == XPI_OK;
  if (!a->ok) snprintf(a->err, sizeof a->err, "%s", xpi_last_error());
  for (int i = 0; i < N && a->ok; i++)
    if (h[i] != 20.0f * (float)(a->t + 1)) {
      snprintf(a->err, sizeof a->err, "x[%d] = %g", i, (double)h[i]);
      a->ok = 0;
    }
  xpu->ops->graph_free(xpu, graph);
  xpu->ops->free(xpu, x);
  xpu->ops->free(xpu, y);
  free(h);
  return NULL;
}

static void test_threads(void) {
  pthread_t th[4];
  thr_arg args[4];
  for (int t = 0; t < 4; t++) {
    args[t] = (thr_arg){t, t % 2, 0, ""};
    pthread_create(&th[t], NULL, thr_main, &args[t]);
  }
  for (int t = 0; t < 4; t++) {
    pthread_join(th[t], NULL);
    CHECK(args[t].ok, "thread %d (%s): %s", t, args[t].use_graph ? "graph" : "direct", args[t].err);
  }
}

int main(void) {
  int rc = xt_open_pair(&cpu, &xpu); /* the CPU's scalar kernels: the reference */
  if (rc) return rc == 77 ? 77 : xpi_test_done();
  printf("xpu:0 kernel tier: %s\n", xpi_xpu_tier(xpu));
  test_embed();
  test_rmsnorm();
  test_matmul();
  test_splitk();
  test_fused();
  test_rope();
  test_attention();
  test_attention_decode();
  test_elementwise();
  test_sampling();
  test_convert();
  test_graph();
  test_big_alloc();
  test_threads();
  return xt_close_pair(cpu, xpu);
}
