/* q8/q4 weights on the XPU against the CPU backend's scalar reference (src/ops/cpu/quant.c, the oracle of
 * quant.h's semantics): the placed quants and scales are the CPU's bit for bit, and matmuls at decode (n = 1)
 * and prefill (n = 7, 33: partial 16-token tiles) shapes, rows 37 (a partial 16-row tile) and 300, cols 67 and
 * 1000 (a partial last block), 32, 256 and 2048, with and without bias, equal the CPU's up to f32 summation order.
 *
 * Tolerance. Both sides compute y = sum over blocks b of d_b * dx_b * s_b with the same exact int32 block dots
 * s_b (same weight quants, activation quants made by the same arithmetic: quant.h's rounding, both divisions
 * correctly rounded); the CPU oracle sums in double, the XPU in f32 in another order, with d*dx*s two roundings
 * per term. So |y_xpu - y_cpu| <= (nb + 3) u S, S = sum_b |d_b dx_b s_b| <= sum_c |d q_c| |dx xq_c| (xt_q_bound,
 * xpu_test_util.h, per output from the dequantized operands), + u |bias| for the bias add. One activation quant
 * off by one would move y by d |q| dx ~ 1e-2 here, two to three orders above this bound: the test also checks
 * that the device quantizes activations exactly as the CPU does. */
#include "ops/cpu/quant.h"
#include "ops/half.h"
#include "ops/xpu/xpu_backend.h"
#include "xpu_test_util.h"

#define U 5.96e-8

static xpi_backend *cpu, *xpu;
static double g_worst; /* largest |xpu - cpu| / bound over every output (printed) */

static void check_matmul(xpi_dtype dt, int rows, int cols, int n, int bias, xpi_dtype sdt) {
  const size_t nw = (size_t)rows * cols;
  float *wv = xt_randv(nw), *x = xt_randv((size_t)n * cols), *bv = xt_randv(rows);
  /* magnitudes that differ by block (and a zero block): every scale of both operands is exercised */
  for (size_t i = 0; i < nw; i++) wv[i] *= (float)(1 + (i / 32) % 5) * 0.05f;
  for (int t = 0; t < n; t++)
    for (int c = 0; c < cols; c++) x[(size_t)t * cols + c] *= c / 32 == 1 ? 0.0f : (float)(1 + (t + c / 32) % 7);
  void *src = malloc(nw * 4);
  if (sdt == XPI_DT_F32) memcpy(src, wv, nw * 4);
  else
    for (size_t i = 0; i < nw; i++) ((uint16_t *)src)[i] = xpi_f32_to_bf16(wv[i]);
  uint16_t *bsrc = malloc((size_t)rows * 2);
  for (int r = 0; r < rows; r++) bsrc[r] = xpi_f32_to_bf16(bv[r]);
  xpi_weight wc, wx, bc, bx;
  CHECK_OK(cpu->ops->weight_create(cpu, &wc, src, sdt, rows, cols, dt));
  CHECK_OK(xpu->ops->weight_create(xpu, &wx, src, sdt, rows, cols, dt));
  CHECK_OK(cpu->ops->weight_create(cpu, &bc, bsrc, XPI_DT_BF16, 1, rows, XPI_DT_BF16));
  CHECK_OK(xpu->ops->weight_create(xpu, &bx, bsrc, XPI_DT_BF16, 1, rows, XPI_DT_BF16));
  const char *what = xpi_test_strf("%s [%d x %d] n=%d bias=%d from %s", xpi_dtype_name(dt), rows, cols, n, bias,
                                   xpi_dtype_name(sdt));
  /* the placement: the CPU's quants and scales, bit for bit, and the same byte count */
  const int64_t qb = (int64_t)rows * xpi_q_row_bytes(dt, cols), db = (int64_t)rows * xpi_q_nblocks(cols) * 2;
  CHECK(wx.dtype == dt && wx.bytes == wc.bytes && wx.bytes == (size_t)(qb + db), "%s: placed %zu bytes, cpu %zu",
        what, wx.bytes, wc.bytes);
  unsigned char *hq = malloc((size_t)qb), *hd = malloc((size_t)db);
  xt_down(xpu, hq, wx.data, (size_t)qb);
  xt_down(xpu, hd, wx.aux, (size_t)db);
  CHECK(memcmp(hq, wc.data, (size_t)qb) == 0 && memcmp(hd, wc.aux, (size_t)db) == 0,
        "%s: quants/scales on the device differ from the CPU's", what);
  void *xc = xt_up(cpu, x, (size_t)n * cols * 4), *xx = xt_up(xpu, x, (size_t)n * cols * 4);
  void *oc = xt_up(cpu, NULL, (size_t)n * rows * 4), *ox = xt_up(xpu, NULL, (size_t)n * rows * 4);
  CHECK_OK(cpu->ops->matmul(cpu, oc, xc, &wc, bias ? &bc : NULL, n));
  CHECK_OK(xpu->ops->matmul(xpu, ox, xx, &wx, bias ? &bx : NULL, n));
  float *yc = malloc((size_t)n * rows * 4), *yx = malloc((size_t)n * rows * 4);
  xt_down(cpu, yc, oc, (size_t)n * rows * 4);
  xt_down(xpu, yx, ox, (size_t)n * rows * 4);
  size_t bad = 0, worst = 0;
  double wratio = 0;
  for (int t = 0; t < n; t++)
    for (int r = 0; r < rows; r++) {
      const size_t i = (size_t)t * rows + r;
      const double tol = xt_q_bound(&wc, r, x + (size_t)t * cols) + (bias ? 2 * U * (fabs(yc[i]) + 1) : 0) + 1e-30;
      const double e = fabs((double)yx[i] - (double)yc[i]);
      if (!(e <= tol)) bad++;
      if (!(e / tol <= wratio)) wratio = e / tol, worst = i;
    }
  if (wratio > g_worst) g_worst = wratio;
  CHECK(bad == 0, "%s: %zu of %zu outputs beyond the bound; worst [%zu] xpu %.9g cpu %.9g (%.2f x bound)", what, bad,
        (size_t)n * rows, worst, (double)yx[worst], (double)yc[worst], wratio);
  free(yc), free(yx), free(hq), free(hd), free(wv), free(x), free(bv), free(src), free(bsrc);
  free((void *)what);
  cpu->ops->free(cpu, xc), cpu->ops->free(cpu, oc), xpu->ops->free(xpu, xx), xpu->ops->free(xpu, ox);
  cpu->ops->weight_free(cpu, &wc), cpu->ops->weight_free(cpu, &bc);
  xpu->ops->weight_free(xpu, &wx), xpu->ops->weight_free(xpu, &bx);
}

static void test_matmul(void) {
  const xpi_dtype dts[2] = {XPI_DT_Q8, XPI_DT_Q4};
  const struct { int rows, cols; } shapes[] = {{37, 67}, {37, 32}, {37, 256}, {300, 1000}, {16, 2048}, {8, 4096},
                                               {128, 1000}, {256, 768}};
  const int ns[3] = {1, 7, 33};
  for (int di = 0; di < 2; di++)
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
      for (int ni = 0; ni < 3; ni++)
        check_matmul(dts[di], shapes[si].rows, shapes[si].cols, ns[ni], (int)(si + ni) % 2,
                     (si + ni) % 3 ? XPI_DT_BF16 : XPI_DT_F32);
}

/* Device memory a weight takes (the backend's accounting of its allocations), per weight, for a [1024, 2048]
 * matrix: bf16 2, q8 34/32, q4 18/32 (quants + half scales; the scales start 64-byte aligned). */
static void test_bytes(void) {
  const int rows = 1024, cols = 2048;
  uint16_t *src = calloc((size_t)rows * cols, 2);
  for (size_t i = 0; i < (size_t)rows * cols; i++) src[i] = xpi_f32_to_bf16(xt_rand());
  const xpi_dtype dts[3] = {XPI_DT_BF16, XPI_DT_Q8, XPI_DT_Q4};
  const double want[3] = {2.0, 34.0 / 32, 18.0 / 32};
  for (int i = 0; i < 3; i++) {
    uint64_t before = 0, after = 0;
    xpi_weight w;
    CHECK_OK(xpi_xpu_free_memory(0, &before));
    CHECK_OK(xpu->ops->weight_create(xpu, &w, src, XPI_DT_BF16, rows, cols, dts[i]));
    CHECK_OK(xpi_xpu_free_memory(0, &after));
    const double per = (double)(before - after) / ((double)rows * cols);
    printf("xpu:0 bytes per weight, %s: %.4f\n", xpi_dtype_name(dts[i]), per);
    CHECK(fabs(per - want[i]) < 1e-4, "%s: %.5f bytes per weight on the device, expected %.5f",
          xpi_dtype_name(dts[i]), per, want[i]);
    xpu->ops->weight_free(xpu, &w);
  }
  free(src);
}

/* Bad inputs come back as a status naming the problem, nothing placed. */
static void test_errors(void) {
  int32_t ints[64] = {0};
  xpi_weight w;
  xpi_status s = xpu->ops->weight_create(xpu, &w, ints, XPI_DT_I32, 2, 32, XPI_DT_Q8);
  CHECK(s == XPI_ERR_UNSUPPORTED && strstr(xpi_last_error(), "i32"), "i32 -> q8: %d %s", s, xpi_last_error());
  CHECK(w.data == NULL, "nothing placed");
  float bad[64];
  for (int i = 0; i < 64; i++) bad[i] = 1.0f;
  bad[40] = NAN;
  s = xpu->ops->weight_create(xpu, &w, bad, XPI_DT_F32, 2, 32, XPI_DT_Q4);
  CHECK(s == XPI_ERR_INVALID_ARGUMENT && strstr(xpi_last_error(), "not finite"), "NaN weight: %d %s", s,
        xpi_last_error());
}

/* The fused decode ops with q8/q4 weights (matmul_multi: q|k|v, matmul_glu: gate|up + activation, both with the
 * input's RMSNorm optionally inside; matmul_add: the residual add) bit for bit against the XPU's own separate ops
 * (rmsnorm, then quant_act + GEMV per matrix, then the GLU / add), which check_matmul holds to the CPU oracle: the
 * fused kernels quantize the input in every work-group by the same arithmetic and sum in the separate kernels'
 * order. Shapes: rows 37 / 19 / 19, cols 67 (a partial last block), 256 and 2048; n = 1 (the fused forms). */
static void check_fused(xpi_dtype dt, int cols, int bias, int norm) {
  const int rows[3] = {37, 19, 19};
  xpi_weight w[3], b[3], gate, nw;
  void *o[3], *sep[3];
  float *x = xt_randv((size_t)cols), *nv = xt_randv((size_t)cols);
  for (int c = 0; c < cols; c++) x[c] *= (float)(1 + c / 32 % 7); /* block scales differ */
  for (int j = 0; j < 3; j++) {
    float *wv = xt_randv((size_t)rows[j] * cols), *bv = xt_randv(rows[j]);
    CHECK_OK(xpu->ops->weight_create(xpu, &w[j], wv, XPI_DT_F32, rows[j], cols, dt));
    CHECK_OK(xpu->ops->weight_create(xpu, &b[j], bv, XPI_DT_F32, 1, rows[j], XPI_DT_BF16));
    o[j] = xt_up(xpu, NULL, (size_t)rows[0] * 4), sep[j] = xt_up(xpu, NULL, (size_t)rows[0] * 4);
    free(wv), free(bv);
  }
  float *gv = xt_randv((size_t)rows[0] * cols);
  for (size_t i = 0; i < (size_t)rows[0] * cols; i++) gv[i] *= 4.0f; /* the activation over a wider range */
  CHECK_OK(xpu->ops->weight_create(xpu, &gate, gv, XPI_DT_F32, rows[0], cols, dt));
  CHECK_OK(xpu->ops->weight_create(xpu, &nw, nv, XPI_DT_F32, 1, cols, XPI_DT_BF16));
  void *xx = xt_up(xpu, x, (size_t)cols * 4), *hx = xt_up(xpu, NULL, (size_t)cols * 4);
  const xpi_weight *nrm = norm ? &nw : NULL, *ws[3] = {&w[0], &w[1], &w[2]}, *bs[3] = {&b[0], &b[1], &b[2]};
  const float *in = xx;
  if (norm) { /* the separate path's input */
    CHECK_OK(xpu->ops->rmsnorm(xpu, hx, xx, NULL, &nw, 1, cols, 1e-6f));
    in = hx;
  }
  char *what = xpi_test_strf("fused %s cols %d bias %d norm %d", xpi_dtype_name(dt), cols, bias, norm);
  float *a = malloc((size_t)rows[0] * 4), *c = malloc((size_t)rows[0] * 4);
  /* q|k|v */
  float *oo[3] = {o[0], o[1], o[2]};
  CHECK_OK(xpu->ops->matmul_multi(xpu, 3, oo, xx, nrm, 1e-6f, hx, ws, bias ? bs : NULL, 1));
  for (int j = 0; j < 3; j++) {
    CHECK_OK(xpu->ops->matmul(xpu, sep[j], in, ws[j], bias ? bs[j] : NULL, 1));
    xt_down(xpu, a, o[j], (size_t)rows[j] * 4);
    xt_down(xpu, c, sep[j], (size_t)rows[j] * 4);
    CHECK(!memcmp(a, c, (size_t)rows[j] * 4), "%s: matmul_multi matrix %d: not the separate ops' bits", what, j);
  }
  /* gate|up + activation */
  for (int act = 0; act < 2; act++) {
    CHECK_OK(xpu->ops->matmul_glu(xpu, o[0], o[1], xx, nrm, 1e-6f, hx, &gate, &w[0], (xpi_glu_act)act, 1));
    CHECK_OK(xpu->ops->matmul(xpu, sep[0], in, &gate, NULL, 1));
    CHECK_OK(xpu->ops->matmul(xpu, sep[1], in, &w[0], NULL, 1));
    if (act) CHECK_OK(xpu->ops->geglu(xpu, sep[0], sep[0], sep[1], 1, rows[0]));
    else CHECK_OK(xpu->ops->swiglu(xpu, sep[0], sep[0], sep[1], 1, rows[0]));
    xt_down(xpu, a, o[0], (size_t)rows[0] * 4);
    xt_down(xpu, c, sep[0], (size_t)rows[0] * 4);
    CHECK(!memcmp(a, c, (size_t)rows[0] * 4), "%s: matmul_glu act %d: not the separate ops' bits", what, act);
  }
  /* x += in @ w^T (+ b), no norm: x starts at the same random values on both sides */
  float *x0 = xt_randv(rows[0]);
  CHECK_OK(xpu->ops->write(xpu, o[0], x0, (size_t)rows[0] * 4));
  CHECK_OK(xpu->ops->write(xpu, sep[0], x0, (size_t)rows[0] * 4));
  CHECK_OK(xpu->ops->matmul_add(xpu, o[0], o[1], xx, &w[0], bias ? &b[0] : NULL, 1));
  CHECK_OK(xpu->ops->matmul(xpu, sep[1], xx, &w[0], bias ? &b[0] : NULL, 1));
  CHECK_OK(xpu->ops->add(xpu, sep[0], sep[1], rows[0]));
  xt_down(xpu, a, o[0], (size_t)rows[0] * 4);
  xt_down(xpu, c, sep[0], (size_t)rows[0] * 4);
  CHECK(!memcmp(a, c, (size_t)rows[0] * 4), "%s: matmul_add: not the separate ops' bits", what);
  free(x0), free(a), free(c), free(x), free(nv), free(gv), free(what);
  for (int j = 0; j < 3; j++) {
    xpu->ops->weight_free(xpu, &w[j]), xpu->ops->weight_free(xpu, &b[j]);
    xpu->ops->free(xpu, o[j]), xpu->ops->free(xpu, sep[j]);
  }
  xpu->ops->weight_free(xpu, &gate), xpu->ops->weight_free(xpu, &nw);
  xpu->ops->free(xpu, xx), xpu->ops->free(xpu, hx);
}

static void test_fused(void) {
  const xpi_dtype dts[2] = {XPI_DT_Q8, XPI_DT_Q4};
  const int col_list[3] = {67, 256, 2048};
  for (int di = 0; di < 2; di++)
    for (int ci = 0; ci < 3; ci++)
      for (int v = 0; v < 4; v++) check_fused(dts[di], col_list[ci], v & 1, v >> 1);
}

/* Split-K with q8/q4 weights (xpu_splitk.c) splits the unsplit GEMV's lanes, so its output must be that GEMV's
 * bits (XPI_XPU_SPLITK=0), as matmul and as matmul_add, while taking one launch (the split kernel quantizes the
 * input itself) where the unsplit path takes two (quant_act + GEMV). Shapes for zesim's 1024 hardware threads: 8 x
 * 4096 (16 splits), 128 x 1000 (a partial last block; 8), 256 x 768 (tinyfortunes' down: 8, 24 blocks, so most
 * lanes idle), 300 x 2500 (2), 1024 x 2048 (the 0.6B model's o_proj: 2), and 37 x 67 (too few columns: unsplit).
 * check_matmul holds the same shapes' results to the CPU. */
static void test_splitk(void) {
  const struct { int rows, cols, splits; } shapes[] = {{8, 4096, 16}, {128, 1000, 8}, {256, 768, 8}, {300, 2500, 2},
                                                      {1024, 2048, 2}, {37, 67, 0}};
  const xpi_dtype dts[2] = {XPI_DT_Q8, XPI_DT_Q4};
  for (int di = 0; di < 2; di++)
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
      for (int add = 0; add < 2; add++) {
        const int rows = shapes[si].rows, cols = shapes[si].cols, bias = (int)(si + add) % 2;
        float *wv = xt_randv((size_t)rows * cols), *x = xt_randv((size_t)cols), *bv = xt_randv(rows);
        float *x0 = xt_randv(rows), *a = malloc((size_t)rows * 4), *c = malloc((size_t)rows * 4);
        for (int k = 0; k < cols; k++) x[k] *= (float)(1 + k / 32 % 7); /* block scales differ */
        xpi_weight w, b;
        CHECK_OK(xpu->ops->weight_create(xpu, &w, wv, XPI_DT_F32, rows, cols, dts[di]));
        CHECK_OK(xpu->ops->weight_create(xpu, &b, bv, XPI_DT_F32, 1, rows, XPI_DT_BF16));
        void *xx = xt_up(xpu, x, (size_t)cols * 4), *o = xt_up(xpu, NULL, (size_t)rows * 4);
        void *tmp = xt_up(xpu, NULL, (size_t)rows * 4);
        char *what = xpi_test_strf("split-K %s %s [%d x %d] bias %d", add ? "matmul_add" : "matmul",
                                   xpi_dtype_name(dts[di]), rows, cols, bias);
        char *kname = xpi_test_strf("xpi_gemv_splitk_%s", xpi_dtype_name(dts[di]));
        for (int split = 1; split >= 0; split--) {
          if (!split) setenv("XPI_XPU_SPLITK", "0", 1);
          CHECK_OK(xpu->ops->write(xpu, o, x0, (size_t)rows * 4));
          xpi_perf_report r = {.struct_size = sizeof r};
          CHECK_OK(xpi_xpu_perf_begin(xpu, &r));
          if (add) CHECK_OK(xpu->ops->matmul_add(xpu, o, tmp, xx, &w, bias ? &b : NULL, 1));
          else CHECK_OK(xpu->ops->matmul(xpu, o, xx, &w, bias ? &b : NULL, 1));
          xpi_xpu_perf_end(xpu);
          const int taken = split && shapes[si].splits > 0;
          CHECK(xt_launches_of(&r, kname) == taken && r.launches == (taken || add ? 1 : 2),
                "%s (split-K %s): %lld launches, %lld of %s", what, split ? "on" : "off", (long long)r.launches,
                (long long)xt_launches_of(&r, kname), kname);
          xt_down(xpu, split ? a : c, o, (size_t)rows * 4);
          unsetenv("XPI_XPU_SPLITK");
        }
        CHECK(!memcmp(a, c, (size_t)rows * 4), "%s: not the unsplit GEMV's bits", what);
        free(what), free(kname), free(wv), free(x), free(bv), free(x0), free(a), free(c);
        xpu->ops->weight_free(xpu, &w), xpu->ops->weight_free(xpu, &b);
        xpu->ops->free(xpu, xx), xpu->ops->free(xpu, o), xpu->ops->free(xpu, tmp);
      }
}

int main(void) {
  int rc = xt_open_pair(&cpu, &xpu); /* the CPU's scalar kernels: the reference */
  if (rc) return rc == 77 ? 77 : xpi_test_done();
  printf("xpu:0 kernel tier: %s\n", xpi_xpu_tier(xpu));
  test_matmul();
  test_fused();
  test_splitk();
  test_errors();
  test_bytes();
  printf("largest |xpu - cpu| / bound: %.3g\n", g_worst);
  return xt_close_pair(cpu, xpu);
}
