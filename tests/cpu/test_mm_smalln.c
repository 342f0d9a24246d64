/* The small-n matmuls (src/ops/cpu/mm_smalln_avx512.c and mm_smalln_avx2.c: batched decode, 4..64 tokens), as
 * each kernel table this CPU can run holds them (and the "auto" table), against the scalar table's GEMV, for f32/f16/bf16 weights at awkward sizes: every (rows, tokens) block shape and its tails (rows not a
 * multiple of 4, tokens not a multiple of 6), columns not a multiple of 16, unaligned weights and activations,
 * row slices, ldy > rows. Tolerance: two f32 sums of the same m products in different orders each differ from
 * the exact sum by at most gamma_m * sum|w x| (Higham 3.1), so they differ by at most 2 gamma_m sum|w x|. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/half.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float frand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((rng >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}

static const xpi_cpu_kernels *g_k; /* the table under test */

static double gamma_m(int64_t m) {
  double u = m * ldexp(1.0, -24);
  return u / (1 - u);
}

static void one(xpi_dtype dt, int64_t rows, int64_t cols, int32_t n, int64_t r0, int64_t r1) {
  const size_t esz = dt == XPI_DT_F32 ? 4 : 2, ldy = (size_t)rows + 3;
  unsigned char *wbuf = malloc((size_t)rows * (size_t)cols * esz + 8), *w = wbuf + 2; /* unaligned */
  float *xbuf = malloc(sizeof(float) * ((size_t)n * (size_t)cols + 1)), *x = xbuf + 1;
  float *y = malloc(sizeof(float) * ldy * (size_t)n), *yr = malloc(sizeof(float) * ldy * (size_t)n);
  for (int64_t i = 0; i < rows * cols; i++) {
    float f = frand();
    if (dt == XPI_DT_F32) memcpy(w + 4 * i, &f, 4);
    else {
      uint16_t h = dt == XPI_DT_BF16 ? xpi_f32_to_bf16(f) : xpi_f32_to_f16(f);
      memcpy(w + 2 * i, &h, 2);
    }
  }
  for (int64_t i = 0; i < n * cols; i++) x[i] = frand();
  memset(y, 0, sizeof(float) * ldy * (size_t)n);
  memset(yr, 0, sizeof(float) * ldy * (size_t)n);
  g_k->smalln[dt](y, (int64_t)ldy, x, n, w, NULL, r0, r1, cols);
  xpi_cpu_kernels_scalar()->gemv[dt](yr, (int64_t)ldy, x, n, w, NULL, r0, r1, cols);
  int bad = 0;
  for (int32_t t = 0; t < n && !bad; t++)
    for (int64_t r = 0; r < rows && !bad; r++) {
      const size_t i = (size_t)t * ldy + (size_t)r;
      if (r < r0 || r >= r1) { /* outside the slice: untouched */
        bad = y[i] != 0;
        CHECK(!bad, "%s %s rows %lld cols %lld n %d: row %lld outside [%lld, %lld) was written", g_k->isa, xpi_dtype_name(dt),
              (long long)rows, (long long)cols, n, (long long)r, (long long)r0, (long long)r1);
        continue;
      }
      double sabs = 0;
      for (int64_t c = 0; c < cols; c++) sabs += fabs((double)xpi_cpu_load_elem(w, dt, r * cols + c) * x[t * cols + c]);
      const double tol = 2 * gamma_m(cols) * sabs + 1e-30;
      bad = !(fabs((double)y[i] - yr[i]) <= tol);
      CHECK(!bad, "%s %s rows %lld cols %lld n %d: [%d][%lld] %.9g vs scalar %.9g (tol %g)", g_k->isa, xpi_dtype_name(dt),
            (long long)rows, (long long)cols, n, t, (long long)r, y[i], yr[i], tol);
    }
  free(wbuf);
  free(xbuf);
  free(y);
  free(yr);
}

int main(void) {
  const xpi_dtype dts[3] = {XPI_DT_F32, XPI_DT_F16, XPI_DT_BF16};
  const int32_t ns[] = {4, 5, 6, 7, 8, 12, 13, 32, 64};
  const int64_t shapes[][2] = {{1, 16}, {3, 37}, {5, 1}, {9, 48}, {67, 1024}, {8, 15}};
  int ran = 0;
  for (int isa = XPI_ISA_AVX2; isa <= XPI_ISA_COUNT; isa++) { /* XPI_ISA_COUNT: the "auto" table */
    g_k = isa == XPI_ISA_COUNT ? xpi_cpu_kernels_best() : xpi_cpu_kernels_for((xpi_cpu_isa)isa);
    if (!g_k || !g_k->smalln[XPI_DT_F32]) continue;
    for (int d = 0; d < 3; d++)
      CHECK(g_k->smalln_max[dts[d]] >= XPI_CPU_GEMM_MIN_N, "%s: small-n kernel for at most %d tokens", g_k->isa,
            g_k->smalln_max[dts[d]]);
    ran++;
    for (int d = 0; d < 3; d++)
      for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
          const int64_t rows = shapes[si][0], cols = shapes[si][1];
          one(dts[d], rows, cols, ns[ni], 0, rows);
          if (rows > 4) one(dts[d], rows, cols, ns[ni], 1, rows - 2); /* a row slice */
        }
  }
  if (!ran) {
    printf("SKIPPED: this CPU has neither AVX2 + FMA + F16C nor AVX-512\n");
    return 77;
  }
  return xpi_test_done();
}
