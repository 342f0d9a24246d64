/* Helpers for the XPU tests: a CPU oracle and an XPU backend side by side, buffers on both, comparisons. */
#ifndef XPI_XPU_TEST_UTIL_H
#define XPI_XPU_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops/cpu/quant.h"
#include "ops/half.h"
#include "ops/ops.h"
#include "ops/backend_xpu.h"

/* Creates the XPU backend, or tells why the test cannot run: returns 77 (ctest SKIP_RETURN_CODE) when the
 * software device is not built into this tree (XPI_XPU_TEST_SKIP set by tests.cmake), else fails. */
static inline int xt_open_xpu(const char *device, xpi_backend **xpu) {
  const char *skip = getenv("XPI_XPU_TEST_SKIP");
  if (skip && *skip) {
    printf("SKIPPED: %s\n", skip);
    return 77;
  }
  xpi_backend_config c = {.device = device, .n_threads = 1, .use_kernels = 1};
  xpi_status s = xpi_backend_xpu_create(&c, xpu);
  CHECK(s == XPI_OK, "xpi_backend_xpu_create(%s): %s", device, xpi_last_error());
  return s == XPI_OK ? 0 : 1;
}

static uint64_t xt_rng = 0x9e3779b97f4a7c15ull;
/* Uniform in [-1, 1). */
static inline float xt_rand(void) {
  xt_rng = xt_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((xt_rng >> 40) & 0xffffff) / (float)(1 << 23) - 1.0f;
}
static inline float *xt_randv(size_t n) {
  float *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = xt_rand();
  return v;
}

/* bytes on the backend holding a copy of host (NULL host: uninitialized). */
static inline void *xt_up(xpi_backend *be, const void *host, size_t bytes) {
  void *p = be->ops->alloc(be, bytes);
  CHECK(p != NULL, "alloc %zu on %s: %s", bytes, be->device, xpi_last_error());
  if (p && host) CHECK_OK(be->ops->write(be, p, host, bytes));
  return p;
}
static inline void xt_down(xpi_backend *be, void *host, const void *dev, size_t bytes) {
  CHECK_OK(be->ops->read(be, host, dev, bytes));
}

/* |a - b| <= atol + rtol * |b| everywhere (b the reference); reports the worst element. */
static inline void xt_close(const char *what, const float *a, const float *b, size_t n, float atol, float rtol) {
  size_t bad = 0, worst = 0;
  double werr = -1;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)a[i] - (double)b[i]);
    double lim = atol + rtol * fabs((double)b[i]);
    if (!(e <= lim)) bad++;
    if (!(e <= werr)) {
      werr = e;
      worst = i;
    }
  }
  CHECK(bad == 0, "%s: %zu of %zu elements differ; worst [%zu] xpu %.9g cpu %.9g", what, bad, n, worst,
        (double)a[worst], (double)b[worst]);
}

/* The n floats at a (on backend ba: the tuned kernel) and b (on bb: the portable one) are the same bits. */
static inline void xt_same_bits(const char *what, xpi_backend *ba, const void *a, xpi_backend *bb, const void *b,
                                size_t n) {
  float *ha = malloc(n * 4), *hb = malloc(n * 4);
  xt_down(ba, ha, a, n * 4);
  xt_down(bb, hb, b, n * 4);
  size_t diff = 0, first = 0;
  for (size_t i = 0; i < n; i++)
    if (memcmp(&ha[i], &hb[i], 4) != 0 && diff++ == 0) first = i;
  CHECK(diff == 0, "%s: %zu of %zu outputs differ from the portable kernel's bits; first [%zu] tuned %.9g portable "
        "%.9g", what, diff, n, first, (double)ha[first], (double)hb[first]);
  free(ha), free(hb);
}

/* A host copy of v[n] in dtype dt (f32, f16 or bf16), to pass as weight source; free() it. */
static inline void *xt_host_weight(const float *v, size_t n, xpi_dtype dt) {
  if (dt == XPI_DT_F32) {
    void *p = malloc(n * 4);
    memcpy(p, v, n * 4);
    return p;
  }
  uint16_t *h = malloc(n * 2);
  for (size_t i = 0; i < n; i++) h[i] = dt == XPI_DT_BF16 ? xpi_f32_to_bf16(v[i]) : xpi_f32_to_f16(v[i]);
  return h;
}

/* The CPU oracle and the XPU backend of an op test (cpu: the scalar kernels, 2 threads). Returns as xt_open_xpu:
 * 77 when the software device is not in this tree, 1 on failure (both NULL), else 0. */
static inline int xt_open_pair(xpi_backend **cpu, xpi_backend **xpu) {
  *cpu = NULL;
  int rc = xt_open_xpu("xpu:0", xpu);
  if (rc) return rc;
  xpi_backend_config cc = {.device = "cpu", .n_threads = 2, .use_kernels = 0};
  CHECK_OK(xpi_backend_cpu_create(&cc, cpu));
  if (*cpu) return 0;
  (*xpu)->ops->destroy(*xpu);
  *xpu = NULL;
  return 1;
}

/* Launches of kernel `name` in a performance-model report (xpi_xpu_perf_begin .. end): which kernels an op took. */
static inline int64_t xt_launches_of(const xpi_perf_report *r, const char *name) {
  for (int k = 0; k < r->n_kernels; k++)
    if (!strcmp(r->kernels[k].name, name)) return r->kernels[k].launches;
  return 0;
}

/* Destroys the pair of xt_open_pair; the test's exit code. */
static inline int xt_close_pair(xpi_backend *cpu, xpi_backend *xpu) {
  cpu->ops->destroy(cpu);
  xpu->ops->destroy(xpu);
  return xpi_test_done();
}

/* Bound on how far a q8/q4 matmul output y = x . W[r] may differ between the XPU and the CPU oracle. Both compute
 * y = sum over blocks b of d_b * dx_b * s_b with the same exact int32 block dots s_b (the same weight quants;
 * activation quants made by the same arithmetic, both divisions correctly rounded: tests/xpu/test_xpu_quant.c
 * checks it); the oracle sums in double, the XPU in f32 in another order, with d*dx*s two roundings per term. So
 * |y_xpu - y_cpu| <= (nb + 3) u S, S = sum_b |d_b dx_b s_b| <= sum_c |d q_c| |dx xq_c|: this returns that bound,
 * from the dequantized operands of row r of w (placed on the CPU) and the activation row x[w->cols]. One
 * activation quant off by one moves y by d |q| dx, orders of magnitude above it. */
static inline double xt_q_bound(const xpi_weight *w, int64_t r, const float *x) {
  const int64_t cols = w->cols, nb = xpi_q_nblocks(cols);
  float *wr = malloc(sizeof(float) * (size_t)cols), *dx = malloc(sizeof(float) * (size_t)nb);
  float *sx = malloc(sizeof(float) * (size_t)nb);
  int8_t *xq = malloc((size_t)nb * XPI_QK);
  xpi_quantize_act_scalar(xq, dx, sx, x, cols);
  xpi_dequantize_row(w->dtype, wr, w->data, w->aux, r, cols);
  double s = 0;
  for (int64_t c = 0; c < cols; c++) s += fabs((double)wr[c]) * fabsf(dx[c / XPI_QK] * (float)xq[c]);
  free(wr), free(dx), free(sx), free(xq);
  return (double)(nb + 3) * 5.96e-8 * s;
}

#endif
