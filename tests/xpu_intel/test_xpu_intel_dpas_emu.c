/* The DPAS GEMMs' indexing and operand layouts without a GPU: kernels/common/xpi_gemm_dpas.h (bf16) and
 * xpi_gemm_dpas_q.h (q8/q4, int8 DPAS) built with the matrix builtins replaced by emulations written with
 * sub-group shuffles (the dpas_emu / dpas8_emu modules of kernels/CMakeLists.txt, same A/B/C layouts as the
 * builtins) run on zesim over Intel's CPU OpenCL runtime, which honours the sub-group sizes 16 and 8. Each variant
 * is put in the device's DPAS slots, so the backend's own dispatch (grid, work-group = sub-group size) launches it
 * (checked through the performance model's launch count), and compared with the portable GEMM on the same device
 * at shapes with edge tiles: rows % 16 and rows % 8 not 0, n % 8 not 0, fewer rows than one tile; q8/q4 also
 * with a partial last 32-block. The tuned tier's q8/q4 GEMM (no builtin to emulate) runs at the same shapes.
 * The q8/q4 kernels must give the portable q8/q4 GEMM's bits: both sum the same
 * exact int32 block dots scaled by the same f32 operations in the same order (xpi_gemm_dpas_q.h). A lane holding
 * the wrong weight row, a token's quants in the wrong A row or column, or a q4 nibble unpacked to the wrong K
 * changes integer dots, so it cannot pass. */
#include "ops/half.h"
#include "ops/xpu/xpu_backend.h"
#include "ops/xpu/xpu_internal.h"
#include "ops/xpu/xpu_spirv.h"
#include "runtime/ze/ze_memory.h"
#include "../xpu/xpu_test_util.h"
#include "dpas_emu.h"

#define U 5.96e-8 /* unit roundoff of f32 */

static xpi_backend *xpu;

/* Kernel name's entry in the performance model's report r, NULL if it was not launched. */
static const xpi_perf_kernel *entry(const xpi_perf_report *r, const char *name) {
  for (int i = 0; i < r->n_kernels; i++)
    if (!strcmp(r->kernels[i].name, name)) return &r->kernels[i];
  return NULL;
}
static int64_t launches(const xpi_perf_report *r, const char *name) {
  const xpi_perf_kernel *e = entry(r, name);
  return e ? e->launches : 0;
}

/* out = in @ W^T (+ bias) through xpu_matmul: the DPAS kernel when installed (n > 1, bf16, cols % 16 == 0),
 * else the portable tiled GEMM. */
static float *run(const xpi_weight *w, const xpi_weight *b, const float *x, int n, int rows, int cols) {
  void *xd = xt_up(xpu, x, (size_t)n * cols * 4), *od = xt_up(xpu, NULL, (size_t)n * rows * 4);
  CHECK_OK(xpu->ops->matmul(xpu, od, xd, w, b, n));
  float *h = malloc((size_t)n * rows * 4);
  xt_down(xpu, h, od, (size_t)n * rows * 4);
  xpu->ops->free(xpu, xd), xpu->ops->free(xpu, od);
  return h;
}

static void check_shape(int sg, int rows, int cols, int n, xpi_dtype bias_dt) {
  xpu_device *d = im_of(xpu)->d;
  float *wv = xt_randv((size_t)rows * cols), *x = xt_randv((size_t)n * cols), *bv = xt_randv((size_t)rows);
  uint16_t *wb = malloc((size_t)rows * cols * 2), *bb = malloc((size_t)rows * 2);
  for (size_t i = 0; i < (size_t)rows * cols; i++) wb[i] = xpi_f32_to_bf16(wv[i]);
  for (int i = 0; i < rows; i++) bb[i] = xpi_f32_to_bf16(bv[i]);
  xpi_weight w, b;
  CHECK_OK(xpu->ops->weight_create(xpu, &w, wb, XPI_DT_BF16, rows, cols, XPI_DT_BF16));
  const void *bsrc = bias_dt == XPI_DT_BF16 ? (const void *)bb : (const void *)bv;
  int has_bias = bias_dt != (xpi_dtype)-1;
  if (has_bias) CHECK_OK(xpu->ops->weight_create(xpu, &b, bsrc, bias_dt, 1, rows, bias_dt));
  float *dp = run(&w, has_bias ? &b : NULL, x, n, rows, cols);
  ze_kernel_handle_t k = d->k[XK_GEMM_DPAS_BF16];
  d->k[XK_GEMM_DPAS_BF16] = NULL; /* the portable GEMM for the reference */
  float *ref = run(&w, has_bias ? &b : NULL, x, n, rows, cols);
  d->k[XK_GEMM_DPAS_BF16] = k;
  /* Per output, with S = sum_k |x_k w_k|: the DPAS path splits x into bf16 hi + lo (|x - hi - lo| <= 2^-16 |x|;
   * products of bf16 are exact in f32) and sums 2 cols products in f32 (<= 2 (2 cols) u S), the portable GEMM
   * sums cols products in f32 (<= cols u S); the bias add rounds each once. */
  size_t bad = 0, worst = 0;
  double werr = 0;
  for (int t = 0; t < n; t++)
    for (int r = 0; r < rows; r++) {
      double s = 0;
      for (int c = 0; c < cols; c++) s += fabs((double)x[(size_t)t * cols + c] * xpi_bf16_to_f32(wb[(size_t)r * cols + c]));
      size_t i = (size_t)t * rows + r;
      double e = fabs((double)dp[i] - ref[i]), lim = s * (0x1p-16 + 5.0 * cols * U) + 4 * U * (fabs(ref[i]) + 1);
      if (!(e <= lim)) bad++, worst = i;
      if (e > werr) werr = e;
    }
  CHECK(bad == 0, "dpas sg%d [%d x %d] n=%d bias %s: %zu of %d outputs differ from the portable GEMM; e.g. "
        "[token %zu, row %zu] dpas %.9g portable %.9g", sg, rows, cols, n,
        has_bias ? xpi_dtype_name(bias_dt) : "none", bad, n * rows, worst / rows, worst % rows, (double)dp[worst],
        (double)ref[worst]);
  printf("dpas sg%-2d [%3d x %3d] n=%2d bias %-4s: max |dpas - portable| %.3g\n", sg, rows, cols, n,
         has_bias ? xpi_dtype_name(bias_dt) : "none", werr);
  xpu->ops->weight_free(xpu, &w);
  if (has_bias) xpu->ops->weight_free(xpu, &b);
  free(wv), free(x), free(bv), free(wb), free(bb), free(dp), free(ref);
}

/* out = in @ W^T through xpu_matmul with a q8/q4 weight, counting launches: expect names the GEMM that must run. */
static float *run_q(const xpi_weight *w, const xpi_weight *b, const float *x, int n, int rows, int cols,
                    const char *expect) {
  xpi_perf_report rep;
  memset(&rep, 0, sizeof rep);
  CHECK_OK(xpi_xpu_perf_begin(xpu, &rep));
  float *h = run(w, b, x, n, rows, cols);
  xpi_xpu_perf_end(xpu);
  CHECK(launches(&rep, expect) == 1 && launches(&rep, "xpi_quant_act") == 1,
        "[%d x %d] n=%d: expected one xpi_quant_act and one %s launch, got %lld and %lld", rows, cols, n, expect,
        (long long)launches(&rep, "xpi_quant_act"), (long long)launches(&rep, expect));
  /* the cost table counts it as a GEMM of n tokens (2 FLOPs a weight a token), not as a GEMV */
  const xpi_perf_kernel *e = entry(&rep, expect);
  CHECK(e && e->flops == 2.0 * rows * cols * n, "%s: performance model FLOPs %g, expected %g", expect,
        e ? e->flops : -1.0, 2.0 * rows * cols * n);
  return h;
}

/* Outputs of a and ref[n] that differ in any bit (CHECK fails on any), reported with the largest difference. */
static void same_bits(const char *what, const float *a, const float *ref, int n, int rows) {
  size_t bad = 0, worst = 0;
  double werr = 0;
  for (size_t i = 0; i < (size_t)n * rows; i++) {
    double e = fabs((double)a[i] - ref[i]);
    if (memcmp(&a[i], &ref[i], sizeof a[i])) bad++, worst = i;
    if (!(e <= werr)) werr = e;
  }
  CHECK(bad == 0, "%s: %zu of %d outputs differ from the portable GEMM's bits; e.g. [token %zu, row %zu] %.9g "
        "portable %.9g", what, bad, n * rows, worst / rows, worst % rows, (double)a[worst], (double)ref[worst]);
  printf("%s: %zu outputs differ from the portable GEMM (max |d| %.3g)\n", what, bad, werr);
}

/* The int8 DPAS GEMM (installed) and the tuned tier's register GEMM (kernels/tuned/gemm_q_sg.cl, built natively
 * by this runtime) against the portable q8/q4 GEMM: bit for bit. Activations span magnitudes per block (a token
 * of zeros included: scale 0) so the scales differ from block to block. */
static void check_q_shape(int sg, xpi_dtype dt, int rows, int cols, int n, xpi_dtype bias_dt) {
  xpu_device *d = im_of(xpu)->d;
  const int q4 = dt == XPI_DT_Q4;
  const xpu_kid dk = q4 ? XK_GEMM_DPAS_Q4 : XK_GEMM_DPAS_Q8, tk = q4 ? XK_GEMM_SG_Q4 : XK_GEMM_SG_Q8;
  CHECK(d->k[tk] != NULL, "the tuned q8/q4 GEMM %s was not built", xpu_kernel_name(tk));
  float *wv = xt_randv((size_t)rows * cols), *x = xt_randv((size_t)n * cols), *bv = xt_randv((size_t)rows);
  for (int t = 0; t < n; t++)
    for (int c = 0; c < cols; c++) x[(size_t)t * cols + c] *= t == n / 2 ? 0.0f : (float)(1 + (c / 32 + t) % 5) * 3.0f;
  xpi_weight w, b;
  CHECK_OK(xpu->ops->weight_create(xpu, &w, wv, XPI_DT_F32, rows, cols, dt));
  const int has_bias = bias_dt != (xpi_dtype)-1;
  void *bh = has_bias ? xt_host_weight(bv, (size_t)rows, bias_dt) : NULL;
  if (has_bias) CHECK_OK(xpu->ops->weight_create(xpu, &b, bh, bias_dt, 1, rows, bias_dt));
  const xpi_weight *bp = has_bias ? &b : NULL;
  float *dp = run_q(&w, bp, x, n, rows, cols, xpu_kernel_name(dk));
  ze_kernel_handle_t kd = d->k[dk], kt = d->k[tk];
  d->k[dk] = NULL; /* then the tuned GEMM */
  float *tp = run_q(&w, bp, x, n, rows, cols, xpu_kernel_name(tk));
  d->k[tk] = NULL; /* then the portable GEMM, the reference */
  float *ref = run_q(&w, bp, x, n, rows, cols, q4 ? "xpi_gemm_q4" : "xpi_gemm_q8");
  d->k[dk] = kd, d->k[tk] = kt;
  char what[128];
  snprintf(what, sizeof what, "dpas sg%-2d %s [%3d x %3d] n=%2d bias %-4s", sg, xpi_dtype_name(dt), rows, cols, n,
           has_bias ? xpi_dtype_name(bias_dt) : "none");
  same_bits(what, dp, ref, n, rows);
  snprintf(what, sizeof what, "tuned    %s [%3d x %3d] n=%2d bias %-4s", xpi_dtype_name(dt), rows, cols, n,
           has_bias ? xpi_dtype_name(bias_dt) : "none");
  same_bits(what, tp, ref, n, rows);
  xpu->ops->weight_free(xpu, &w);
  if (has_bias) xpu->ops->weight_free(xpu, &b);
  free(wv), free(x), free(bv), free(bh), free(dp), free(tp), free(ref);
}

/* Installs the emulated variant of sub-group size sg as the device's DPAS kernels (what device_create does
 * with the real module), runs the shapes, and takes them out again. */
static void check_variant(int sg) {
  xt_dpas_emu emu;
  if (xt_dpas_emu_install(xpu, sg, &emu)) {
    CHECK(strcmp(xpi_xpu_tier(xpu), sg == 8 ? "tuned+dpas8" : "tuned+dpas") == 0, "tier %s", xpi_xpu_tier(xpu));
    /* rows: 37 (neither % 16 nor % 8), 40 (% 8 but not % 16), 64 (whole tiles), 5 (under one tile);
     * n: 13 (% 8 = 5), 8 (one tile), 17 (% 8 = 1), 2; cols: 1, 3, 10 K steps of 16. */
    check_shape(sg, 37, 48, 13, XPI_DT_F32);
    check_shape(sg, 40, 160, 17, XPI_DT_BF16);
    check_shape(sg, 64, 16, 8, (xpi_dtype)-1);
    check_shape(sg, 5, 32, 2, XPI_DT_F32);
    check_shape(sg, 129, 64, 9, (xpi_dtype)-1);
    /* q8/q4: the same tile edges; cols 96 (3 blocks), 80 (a partial last block: zero-padded quants on both
     * sides), 32 (one block), 160 */
    for (int q = 0; q < 2; q++) {
      const xpi_dtype dt = q ? XPI_DT_Q4 : XPI_DT_Q8;
      check_q_shape(sg, dt, 37, 96, 13, XPI_DT_F32);
      check_q_shape(sg, dt, 40, 80, 17, XPI_DT_BF16);
      check_q_shape(sg, dt, 64, 32, 8, (xpi_dtype)-1);
      check_q_shape(sg, dt, 5, 160, 2, XPI_DT_F32);
      check_q_shape(sg, dt, 129, 64, 9, (xpi_dtype)-1);
    }
  }
  xt_dpas_emu_remove(xpu, &emu);
}

int main(void) {
  int rc = xt_open_xpu("xpu:0", &xpu);
  if (rc) return rc == 77 ? 77 : xpi_test_done();
  CHECK(strcmp(xpi_xpu_tier(xpu), "tuned") == 0, "xpu:0 tier %s, expected tuned (Intel's CPU runtime)",
        xpi_xpu_tier(xpu));
  check_variant(16);
  check_variant(8);
  xpu->ops->destroy(xpu);
  return xpi_test_done();
}
