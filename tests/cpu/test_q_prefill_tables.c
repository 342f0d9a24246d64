/* Every CPU kernel table's q8 and q4 matmul (xpi_cpu_matmul: the decode GEMV, the batched-decode GEMV and the
 * prefill GEMM, whichever the table picks for n) at every prefill size n = 1..40 against the scalar oracle, on
 * row counts and columns with tails: rows not a multiple of the AMX and VNNI panels (16/32 rows), columns not a
 * multiple of 32 (a ragged last block), of 8 blocks (the GEMVs' groups) or of 16 blocks (the AVX-512 GEMV's
 * transposed groups), and a row slice. n = 17..40 runs the AMX int8 GEMM on the real tile unit where the CPU has
 * it (test_amx_layout.c runs its body on an emulation), with token counts that do not fill its 32-token blocks.
 *
 * Tolerance: every path computes the same exact int32 block dots of the same int8 activations (quant.h: the
 * per-32-block rounding of xpi_quantize_act_scalar, which the AVX2 quantizer reproduces bit for bit) and differs
 * only in how it adds the n_b = ceil(cols/32) scaled block sums d * dx * isum in f32: each product d * dx * isum
 * is rounded at most twice (relative 2u, u = 2^-24), then summed in some order (gamma_(n_b) relative to the sum of
 * the magnitudes, Higham 3.1). So |y - y_ref| <= 2 * (gamma_(n_b + 2)) * S with S = sum_b |d dx isum|_abs, the
 * sum of the block products' magnitudes (sum over the block of |d q| |dx xq|), and for q4 (whose kernels may sum
 * unsigned quants and subtract 8 * d * sx per block) S also counts 8 |d| |sx|-scale terms: 16 |d| dx sum |xq|.
 * The scalar oracle is in f32 too, hence the factor 2. This is about 1e-6 of S: a kernel that mixes blocks, scales
 * or tokens, rounds activations another way (one quantum of one activation moves y by |d q dx|) or misses a tail
 * misses it by orders of magnitude. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/matmul_cpu.h"
#include "ops/cpu/quant.h"
#include "ops/half.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) { /* uniform in [-1, 1) */
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (float)((rng >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}
static double gamma_m(int64_t m) { const double u = m * ldexp(1.0, -24); return u / (1 - u); }

static xpi_pool *g_pool;
static xpi_cpu_mm_ws *g_ws;

/* The magnitude sum S of the tolerance above, for weight row r and one token's quantized activations. */
static double block_mag(xpi_dtype dt, const void *W, const uint16_t *d, int64_t r, int64_t cols, const int8_t *xq,
                        const float *dx) {
  const int64_t nb = xpi_q_nblocks(cols), rb = xpi_q_row_bytes(dt, cols);
  const uint8_t *row = (const uint8_t *)W + r * rb;
  double s = 0;
  for (int64_t b = 0; b < nb; b++) {
    const double db = fabs(xpi_f16_to_f32(d[r * nb + b])) * dx[b];
    double m = 0, ax = 0;
    for (int j = 0; j < XPI_QK; j++) {
      const int q = dt == XPI_DT_Q8 ? (int8_t)row[b * 32 + j]
                                    : (j < 16 ? row[b * 16 + j] & 15 : row[b * 16 + j - 16] >> 4) - 8;
      m += abs(q) * abs(xq[b * 32 + j]);
      ax += abs(xq[b * 32 + j]);
    }
    s += db * (m + (dt == XPI_DT_Q4 ? 16 * ax : 0));
  }
  return s;
}

/* Rows [r0, rows) of a rows x cols weight in dt times n tokens: table k against the scalar oracle. Returns the
 * largest |y - y_ref| / tolerance seen (<= 1 passes). */
static double q_case(const xpi_cpu_kernels *k, xpi_dtype dt, int64_t rows, int64_t cols, int32_t n) {
  const int64_t nb = xpi_q_nblocks(cols), ldy = rows + 1, r0 = rows > 20 ? 5 : 0;
  float *wv = malloc(sizeof(float) * (size_t)(rows * cols)), *X = malloc(sizeof(float) * (size_t)(n * cols));
  for (int64_t i = 0; i < rows * cols; i++) wv[i] = frand() * 0.1f;
  for (int64_t i = 0; i < n * cols; i++) X[i] = frand() * (i % 97 == 3 ? 8.0f : 1.0f); /* a few outliers */
  void *W = malloc((size_t)(rows * xpi_q_row_bytes(dt, cols)));
  uint16_t *d = malloc(sizeof(uint16_t) * (size_t)(rows * nb));
  CHECK_OK(xpi_quantize_rows(dt, W, d, wv, XPI_DT_F32, rows, cols));
  float *Y = malloc(sizeof(float) * (size_t)(n * ldy)), *Yr = malloc(sizeof(float) * (size_t)(n * ldy));
  for (int64_t i = 0; i < n * ldy; i++) Y[i] = Yr[i] = 12345.0f;
  xpi_cpu_matmul(g_pool, g_ws, k, dt, Y, ldy, X, n, W, d, r0, rows, cols);
  xpi_cpu_matmul(NULL, NULL, xpi_cpu_kernels_scalar(), dt, Yr, ldy, X, n, W, d, r0, rows, cols);
  int8_t *xq = malloc((size_t)nb * XPI_QK);
  float *dx = malloc(sizeof(float) * (size_t)nb), *sx = malloc(sizeof(float) * (size_t)nb);
  double worst = 0;
  for (int32_t t = 0; t < n; t++) {
    xpi_quantize_act_scalar(xq, dx, sx, X + (int64_t)t * cols, cols);
    for (int64_t r = 0; r < ldy; r++) {
      const float y = Y[t * ldy + r], yr = Yr[t * ldy + r];
      if (r < r0 || r >= rows) {
        CHECK(y == 12345.0f, "%s %s n=%d: row %lld outside the slice was written", k->isa,
              dt == XPI_DT_Q8 ? "q8" : "q4", n, (long long)r);
        continue;
      }
      const double tol = 2 * gamma_m(nb + 2) * block_mag(dt, W, d, r, cols, xq, dx) + 1e-30;
      const double e = fabs((double)y - yr) / tol;
      if (!(e <= 1.0)) {
        CHECK(0, "%s %s rows=%lld cols=%lld n=%d r=%lld t=%d: %.9g vs scalar %.9g (tol %.3g)", k->isa,
              dt == XPI_DT_Q8 ? "q8" : "q4", (long long)rows, (long long)cols, n, (long long)r, t, y, yr, tol);
        worst = INFINITY;
        goto done;
      }
      if (e > worst) worst = e;
    }
  }
done:
  free(wv); free(X); free(W); free(d); free(Y); free(Yr); free(xq); free(dx); free(sx);
  return worst;
}

/* q8 prefill GEMMs give the same bits on every table: the AVX2, AVX-VNNI, AVX-512 VNNI and AMX GEMMs all sum the
 * exact block dots in block order as f = fma(d, dx * isum, f) (gemm_q.h's xpi_gq_scale, kernels_amx.c's
 * amx_scale). Bits matter there, not only the bound above: the next matmul rounds its activations to int8 per
 * block, so a last-bit difference can flip one activation by a whole quantum (test_quant_model.c), and with this
 * the tables' prefill logits agree exactly. n = 33..40 takes the GEMM on every table (the GEMVs serve up to 32). */
static void q8_gemm_bits_case(int64_t rows, int64_t cols, int32_t n) {
  const xpi_cpu_kernels *ref = xpi_cpu_kernels_for(XPI_ISA_AVX2);
  if (!ref) return;
  const int64_t nb = xpi_q_nblocks(cols);
  float *wv = malloc(sizeof(float) * (size_t)(rows * cols)), *X = malloc(sizeof(float) * (size_t)(n * cols));
  for (int64_t i = 0; i < rows * cols; i++) wv[i] = frand() * 0.1f;
  for (int64_t i = 0; i < n * cols; i++) X[i] = frand();
  void *W = malloc((size_t)(rows * xpi_q_row_bytes(XPI_DT_Q8, cols)));
  uint16_t *d = malloc(sizeof(uint16_t) * (size_t)(rows * nb));
  CHECK_OK(xpi_quantize_rows(XPI_DT_Q8, W, d, wv, XPI_DT_F32, rows, cols));
  float *Y = malloc(sizeof(float) * (size_t)(n * rows)), *Yr = malloc(sizeof(float) * (size_t)(n * rows));
  xpi_cpu_matmul(g_pool, g_ws, ref, XPI_DT_Q8, Yr, rows, X, n, W, d, 0, rows, cols);
  for (int isa = XPI_ISA_AVX2 + 1; isa < XPI_ISA_COUNT; isa++) {
    const xpi_cpu_kernels *k = xpi_cpu_kernels_for((xpi_cpu_isa)isa);
    if (!k || !k->gemm[XPI_DT_Q8]) continue;
    xpi_cpu_matmul(g_pool, g_ws, k, XPI_DT_Q8, Y, rows, X, n, W, d, 0, rows, cols);
    int64_t i = 0;
    while (i < n * rows && memcmp(&Y[i], &Yr[i], sizeof(float)) == 0) i++;
    CHECK(i == n * rows, "q8 %s GEMM rows=%lld cols=%lld n=%d: token %lld row %lld %.9g, the avx2 GEMM %.9g", k->isa,
          (long long)rows, (long long)cols, n, (long long)(i / rows), (long long)(i % rows), Y[i < n * rows ? i : 0],
          Yr[i < n * rows ? i : 0]);
  }
  free(wv); free(X); free(W); free(d); free(Y); free(Yr);
}

int main(void) {
  CHECK_OK(xpi_pool_create(2, &g_pool));
  g_ws = xpi_cpu_mm_ws_create();
  CHECK(g_ws != NULL, "no matmul workspace");
  /* rows: 33 (one AMX panel of 32 + 1), 47 (16-row panels + 15); cols: 31 (one ragged block), 264 (8 blocks +
   * 8 columns), 520 (16 blocks + 8 columns: one transposed group of the AVX-512 GEMV and a tail), 776 (24 blocks
   * + 8: a group of 16, one of 8, a tail; tinyfortunes' 768 plus a ragged block) */
  static const int64_t rows_s[] = {33, 47};
  static const int64_t cols_s[] = {31, 264, 520, 776};
  for (int isa = XPI_ISA_SCALAR + 1; isa < XPI_ISA_COUNT; isa++) {
    const xpi_cpu_kernels *k = xpi_cpu_kernels_for((xpi_cpu_isa)isa);
    if (!k) {
      printf("note: this CPU lacks %s; its cases are skipped\n", xpi_cpu_isa_name((xpi_cpu_isa)isa));
      continue;
    }
    for (int dt = XPI_DT_Q8; dt <= XPI_DT_Q4; dt++) {
      double worst = 0;
      for (int32_t n = 1; n <= 40; n++)
        for (size_t ri = 0; ri < 2; ri++)
          for (size_t ci = 0; ci < 4; ci++) {
            const double w = q_case(k, (xpi_dtype)dt, rows_s[ri], cols_s[ci], n);
            if (w > worst) worst = w;
          }
      printf("%s %s (prefill %s): n = 1..40, largest |y - y_scalar| / tolerance %.3g\n", k->isa,
             dt == XPI_DT_Q8 ? "q8" : "q4", k->gemm[dt] ? k->gemm[dt]->name : "-", worst);
    }
  }
  for (int32_t n = 33; n <= 40; n++)
    for (size_t ri = 0; ri < 2; ri++)
      for (size_t ci = 0; ci < 4; ci++) q8_gemm_bits_case(rows_s[ri], cols_s[ci], n);
  xpi_cpu_mm_ws_free(g_ws);
  xpi_pool_free(g_pool);
  return xpi_test_done();
}
