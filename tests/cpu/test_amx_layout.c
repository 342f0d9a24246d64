/* The AMX GEMMs' layout logic on any CPU: the GEMM bodies of amx_gemm.h run here on an emulation of the tile
 * instructions (tile configuration, loads and stores with strides, tdpbf16ps and tdpbssd as the Intel SDM
 * defines them), fed by the reference packers of amx_layout.c, and are compared with the scalar oracle on
 * ragged shapes (rows, columns and tokens that do not fill tiles) and split ranges (tiles of rows x tokens, as
 * the threads of matmul_cpu.c run them). The emulation also checks every tile operation's shapes against the
 * configuration (a product whose A columns do not match B's rows is a layout bug) and counts the bf16 tile
 * products (a compact tail must take 1 or 2 where a padded tile takes 3). Where the CPU has AVX-512,
 * the AMX table's own packers must give the reference's bytes (and their pack_rows those of pack over the
 * rows gathered); where it has AMX, the real tile unit must give the emulation's q8/q4 results bit for bit
 * (exact int32 sums, the same f32 scaling) and bf16 within rounding.
 *
 * Tolerances against the scalar oracle (f32 sums in another order, as test_kernels.c):
 *  - bf16: activations as XPI_AMX_BF16_TERMS bf16 terms lose at most 2^-(8 terms) |x| each (amx_layout.h), so
 *    |y - y_ref| <= (2^-(8 terms) + 2 gamma_(terms cols)) sum |w x|;
 *  - q8/q4: the same exact block sums, scaled and added in f32: 2 gamma_(cols + 8) times the sum of the
 *    magnitudes of the scaled block products (|d| |dx| sum |q| |xq|, bounded by sum |w| |x| + the rounding
 *    terms of quant.h). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops/cpu/amx_layout.h"
#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/matmul_cpu.h"
#include "ops/cpu/quant.h"
#include "ops/half.h"

/* ------------------------------------------------------------------ tile emulation */
typedef struct {
  int rows, colsb;
  uint8_t d[16][64];
} tile;
static tile g_t[8];
static int g_configured, g_bad_ops;

static void emu_config(int a_colsb, int b_rows) {
  for (int t = 0; t < 4; t++) g_t[t].rows = 16, g_t[t].colsb = 64;
  for (int t = 4; t < 6; t++) g_t[t].rows = 16, g_t[t].colsb = a_colsb;
  for (int t = 6; t < 8; t++) g_t[t].rows = b_rows, g_t[t].colsb = 64;
  g_configured = 1;
}
static void emu_zero(int t) {
  g_bad_ops += !g_configured;
  memset(g_t[t].d, 0, sizeof g_t[t].d);
}
static void emu_load(int t, const void *p, int64_t stride) {
  g_bad_ops += !g_configured;
  for (int r = 0; r < g_t[t].rows; r++) memcpy(g_t[t].d[r], (const char *)p + r * stride, (size_t)g_t[t].colsb);
}
static void emu_store(int t, void *p, int64_t stride) {
  g_bad_ops += !g_configured;
  for (int r = 0; r < g_t[t].rows; r++) memcpy((char *)p + r * stride, g_t[t].d[r], (size_t)g_t[t].colsb);
}
/* shapes as the SDM requires: C rows = A rows, C bytes per row = B bytes per row, B rows = A bytes per row / 4 */
static int shapes_ok(int c, int a, int b) {
  return g_configured && g_t[c].rows == g_t[a].rows && g_t[c].colsb == g_t[b].colsb && g_t[b].rows * 4 == g_t[a].colsb;
}
static float bf16_daz(const uint8_t *p) { /* a bf16, subnormals read as zero */
  uint16_t h;
  memcpy(&h, p, 2);
  return (h & 0x7f80) ? xpi_bf16_to_f32(h) : 0.0f;
}
static int64_t g_dpbf16; /* tile products run */
static void emu_dpbf16(int c, int a, int b) { /* C[m][n] += sum_k A[m][2k] B[k][2n] + A[m][2k+1] B[k][2n+1] */
  if (!shapes_ok(c, a, b)) { g_bad_ops++; return; }
  g_dpbf16++;
  for (int m = 0; m < g_t[a].rows; m++)
    for (int n = 0; n < g_t[b].colsb / 4; n++) {
      float acc;
      memcpy(&acc, g_t[c].d[m] + 4 * n, 4);
      for (int k = 0; k < g_t[a].colsb / 4; k++) {
        acc += bf16_daz(g_t[a].d[m] + 4 * k) * bf16_daz(g_t[b].d[k] + 4 * n);
        acc += bf16_daz(g_t[a].d[m] + 4 * k + 2) * bf16_daz(g_t[b].d[k] + 4 * n + 2);
      }
      memcpy(g_t[c].d[m] + 4 * n, &acc, 4);
    }
}
static void emu_dpbssd(int c, int a, int b) { /* C[m][n] += sum_k sum_j A[m][4k+j] B[k][4n+j], int8 x int8 */
  if (!shapes_ok(c, a, b)) { g_bad_ops++; return; }
  for (int m = 0; m < g_t[a].rows; m++)
    for (int n = 0; n < g_t[b].colsb / 4; n++) {
      int32_t acc;
      memcpy(&acc, g_t[c].d[m] + 4 * n, 4);
      for (int k = 0; k < g_t[a].colsb / 4; k++)
        for (int j = 0; j < 4; j++) acc += (int8_t)g_t[a].d[m][4 * k + j] * (int8_t)g_t[b].d[k][4 * n + j];
      memcpy(g_t[c].d[m] + 4 * n, &acc, 4);
    }
}
static void emu_scale(float *S, const int32_t *C, const float *D, const float *dx) {
  for (int r = 0; r < 16; r++)
    for (int t = 0; t < 16; t++) S[r * 32 + t] = fmaf(D[r], (float)C[r * 16 + t] * dx[t], S[r * 32 + t]);
}
static void emu_store_block(float *Y, int64_t ldy, const float *C, int ldc, int nr, int nt) {
  for (int t = 0; t < nt; t++)
    for (int r = 0; r < nr; r++) Y[t * ldy + r] = C[r * ldc + t];
}

/* Prefetches: each must fall in the rows [lo, hi) of the current call that follow its first panel, and together
 * they must cover every cache line of those rows (counted in g_pf_lines). */
static const char *g_pf_lo, *g_pf_hi;
static int64_t g_pf_lines, g_pf_bad;
static const char *g_pf_last;
static void emu_prefetch(const void *p) {
  const char *c = p;
  if (c < g_pf_lo || c >= g_pf_hi || (g_pf_last && c != g_pf_last + 64 && c != g_pf_lo)) g_pf_bad++;
  g_pf_last = c, g_pf_lines++;
}

#define AMX_CONFIG(a, b) emu_config(a, b)
#define AMX_PREFETCH(p) emu_prefetch(p)
#define AMX_ZERO(t) emu_zero(t)
#define AMX_LOAD(t, p, s) emu_load(t, p, s)
#define AMX_STORE(t, p, s) emu_store(t, p, s)
#define AMX_DPBF16(c, a, b) emu_dpbf16(c, a, b)
#define AMX_DPBSSD(c, a, b) emu_dpbssd(c, a, b)
#define AMX_RELEASE() (g_configured = 0)
#define AMX_SCALE(S, C, D, dx) emu_scale(S, C, D, dx)
#define AMX_STORE_BLOCK emu_store_block
#define AMX_BF16_WEIGHTS xpi_amx_bf16_weights
#define AMX_I8_WEIGHTS xpi_amx_i8_weights_ref
#define AMX_I8_SCALES xpi_amx_i8_scales
#include "ops/cpu/amx_gemm.h"

/* ------------------------------------------------------------------ cases */
static uint64_t rng = 0x2545f4914f6cdd1dull;
static float frand(void) {
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (float)((rng >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}
static double gamma_m(int64_t m) { double u = m * ldexp(1.0, -24); return u / (1 - u); }
static const char *dt_name(xpi_dtype dt) { return dt == XPI_DT_BF16 ? "bf16" : dt == XPI_DT_Q8 ? "q8" : "q4"; }

/* One shape: emulated GEMM (over a grid of pr x pt tiles, packed in two token ranges) vs the scalar oracle. */
static void gemm_case(xpi_dtype dt, int64_t rows, int64_t cols, int32_t n, int pr, int pt) {
  const int is_q = dt != XPI_DT_BF16;
  float *wv = malloc(sizeof(float) * (size_t)(rows * cols)), *X = malloc(sizeof(float) * (size_t)(n * cols));
  for (int64_t i = 0; i < rows * cols; i++) wv[i] = frand() * 0.1f;
  for (int64_t i = 0; i < n * cols; i++) X[i] = frand();
  const int64_t nb = xpi_q_nblocks(cols);
  unsigned char *W = malloc((size_t)(rows * cols * 2 + 64));
  uint16_t *dq = malloc(sizeof(uint16_t) * (size_t)(rows * nb));
  if (is_q) CHECK_OK(xpi_quantize_rows(dt, W, dq, wv, XPI_DT_F32, rows, cols));
  else
    for (int64_t i = 0; i < rows * cols; i++) {
      const uint16_t h = xpi_f32_to_bf16(wv[i]);
      memcpy(W + 2 * i, &h, 2);
    }
  const size_t pbytes = is_q ? xpi_amx_i8_pack_bytes(n, cols) : xpi_amx_bf16_pack_bytes(n, cols);
  const size_t sbytes = is_q ? amx_i8_scratch_bytes(cols) : amx_bf16_scratch_bytes(cols);
  void *P = aligned_alloc(64, (pbytes + 63) & ~(size_t)63), *S = aligned_alloc(64, (sbytes + 63) & ~(size_t)63);
  memset(P, 0xa5, pbytes); /* garbage: every byte read must have been packed */
  const int32_t split = n > 32 ? 32 : n; /* two pack calls, the first ending at a multiple of 32 */
  if (is_q) xpi_amx_i8_pack_ref(P, X, n, cols, 0, split), xpi_amx_i8_pack_ref(P, X, n, cols, split, n);
  else xpi_amx_bf16_pack_ref(P, X, n, cols, 0, split), xpi_amx_bf16_pack_ref(P, X, n, cols, split, n);

  const int64_t ldy = rows + 5;
  float *Y = malloc(sizeof(float) * (size_t)(n * ldy)), *Yr = malloc(sizeof(float) * (size_t)(n * ldy));
  for (int64_t i = 0; i < n * ldy; i++) Y[i] = Yr[i] = 12345.0f;
  g_bad_ops = 0;
  for (int i = 0; i < pr; i++)
    for (int j = 0; j < pt; j++) {
      int64_t rb, re, tb, te;
      xpi_pool_range(rows, i, pr, 2 * XPI_AMX_TR, &rb, &re);
      xpi_pool_range(n, j, pt, 2 * XPI_AMX_TT, &tb, &te);
      if (rb >= re || tb >= te) continue;
      const int64_t rowb = is_q ? xpi_q_row_bytes(dt, cols) : cols * 2;
      g_pf_lo = (const char *)W + (rb + 2 * XPI_AMX_TR) * rowb, g_pf_hi = (const char *)W + re * rowb;
      g_pf_lines = g_pf_bad = 0, g_pf_last = NULL, g_dpbf16 = 0;
      if (is_q) amx_i8_run(dt, Y, ldy, P, n, W, dq, cols, rb, re, (int32_t)tb, (int32_t)te, S);
      else amx_bf16_run(Y, ldy, P, n, W, NULL, cols, rb, re, (int32_t)tb, (int32_t)te, S);
      if (!is_q) { /* per 32-row panel and k step: 2 weight tiles x (3 terms per padded token tile, or one product
                    * per slot of a compact tail of 1-10 tokens: 1 for 1-5, 2 for 6-10) */
        const int64_t tail = n / XPI_AMX_TT, r = n % XPI_AMX_TT, ns = r >= 1 && r <= 10 ? (r + 4) / 5 : 0;
        int64_t per = 0;
        for (int64_t p = tb / XPI_AMX_TT; p * XPI_AMX_TT < te; p++) per += p == tail && ns ? ns : XPI_AMX_BF16_TERMS;
        const int64_t want_dp = (re - rb + 31) / 32 * ((cols + 31) / 32) * 2 * per;
        CHECK(g_dpbf16 == want_dp, "bf16 %lldx%lld n=%d tokens [%lld, %lld): %lld tile products, want %lld",
              (long long)rows, (long long)cols, n, (long long)tb, (long long)te, (long long)g_dpbf16,
              (long long)want_dp);
      }
      /* lines of each later panel: ceil(panel bytes / 64), panels prefetched in row order */
      int64_t want = 0;
      for (int64_t r = rb + 2 * XPI_AMX_TR; r < re; r += 2 * XPI_AMX_TR)
        want += ((re - r < 2 * XPI_AMX_TR ? re - r : 2 * XPI_AMX_TR) * rowb + 63) / 64;
      CHECK(g_pf_bad == 0 && g_pf_lines == want, "%s rows [%lld, %lld): %lld prefetches outside the later panels or "
            "out of order, %lld lines of %lld", dt_name(dt), (long long)rb, (long long)re, (long long)g_pf_bad,
            (long long)g_pf_lines, (long long)want);
    }
  CHECK(g_bad_ops == 0, "%s %lldx%lld n=%d: %d tile operations on unconfigured or mismatched tiles", dt_name(dt),
        (long long)rows, (long long)cols, n, g_bad_ops);
  CHECK(!g_configured, "%s: tiles left configured (no release)", dt_name(dt));
  xpi_cpu_matmul(NULL, NULL, xpi_cpu_kernels_scalar(), dt, Yr, ldy, X, n, W, dq, 0, rows, cols);

  int8_t *xq = malloc((size_t)nb * XPI_QK);
  float *dx = malloc(sizeof(float) * (size_t)nb), *sx = malloc(sizeof(float) * (size_t)nb), *deq = malloc(sizeof(float) * (size_t)cols);
  double *tols = malloc(sizeof(double) * (size_t)(n * ldy));
  for (int64_t i = 0; i < n * ldy; i++) tols[i] = 0;
  int bad = 0;
  for (int32_t t = 0; t < n && !bad; t++) {
    if (is_q) xpi_quantize_act_scalar(xq, dx, sx, X + t * cols, cols);
    for (int64_t r = 0; r < ldy && !bad; r++) {
      const float y = Y[t * ldy + r], yr = Yr[t * ldy + r];
      if (r >= rows) { bad = y != 12345.0f; CHECK(!bad, "%s: column %lld past the rows written", dt_name(dt), (long long)r); continue; }
      double mag = 0, tol;
      if (is_q) {
        xpi_dequantize_row(dt, deq, W, dq, r, cols);
        for (int64_t c = 0; c < cols; c++) mag += fabs((double)deq[c] * dx[c / XPI_QK] * xq[c]);
        if (dt == XPI_DT_Q4) /* the oracle sums unsigned quants and subtracts 8 * sum(xq) per block */
          for (int64_t c = 0; c < cols; c++) mag += 16 * fabs(xpi_f16_to_f32(dq[r * nb + c / XPI_QK]) * dx[c / XPI_QK] * xq[c]);
        tol = 2 * gamma_m(cols + 8) * mag + 1e-30;
      } else {
        for (int64_t c = 0; c < cols; c++) {
          uint16_t h;
          memcpy(&h, W + 2 * (r * cols + c), 2);
          mag += fabs((double)xpi_bf16_to_f32(h) * X[t * cols + c]);
        }
        tol = (ldexp(1.0, -8 * XPI_AMX_BF16_TERMS) + 2 * gamma_m(XPI_AMX_BF16_TERMS * cols)) * mag + 1e-30;
      }
      tols[t * ldy + r] = tol;
      bad = !(fabs((double)y - yr) <= tol);
      CHECK(!bad, "%s %lldx%lld n=%d grid %dx%d: Y[%d][%lld] = %.9g, oracle %.9g (tol %g)", dt_name(dt), (long long)rows,
            (long long)cols, n, pr, pt, t, (long long)r, y, yr, tol);
    }
  }

  /* the AMX table's own packers: the reference's bytes */
  if (xpi_cpu_has(XPI_ISA_AVX512)) {
    void *Pf = aligned_alloc(64, (pbytes + 63) & ~(size_t)63);
    memset(Pf, 0xa5, pbytes);
    if (is_q) xpi_amx_i8_pack(Pf, X, n, cols, 0, split), xpi_amx_i8_pack(Pf, X, n, cols, split, n);
    else xpi_amx_bf16_pack(Pf, X, n, cols, 0, split), xpi_amx_bf16_pack(Pf, X, n, cols, split, n);
    CHECK(memcmp(P, Pf, pbytes) == 0, "%s %lldx%lld n=%d: the AVX-512 packer differs from the reference", dt_name(dt),
          (long long)rows, (long long)cols, n);
    /* pack_rows (MoE experts gather their tokens while packing): tokens read through a row list (reversed, every
     * third row repeated) give the bytes of pack over those rows gathered */
    int32_t *rl = malloc(sizeof(int32_t) * (size_t)n);
    float *Xg = malloc(sizeof(float) * (size_t)(n * cols));
    for (int32_t t = 0; t < n; t++) {
      rl[t] = t % 3 == 2 ? rl[t - 1] : n - 1 - t;
      memcpy(Xg + (int64_t)t * cols, X + (int64_t)rl[t] * cols, sizeof(float) * (size_t)cols);
    }
    void *Pg = aligned_alloc(64, (pbytes + 63) & ~(size_t)63), *Pr = aligned_alloc(64, (pbytes + 63) & ~(size_t)63);
    memset(Pg, 0x5a, pbytes), memset(Pr, 0x5a, pbytes);
    if (is_q) xpi_amx_i8_pack(Pg, Xg, n, cols, 0, split), xpi_amx_i8_pack(Pg, Xg, n, cols, split, n);
    else xpi_amx_bf16_pack(Pg, Xg, n, cols, 0, split), xpi_amx_bf16_pack(Pg, Xg, n, cols, split, n);
    if (is_q) xpi_amx_i8_pack_rows(Pr, X, rl, n, cols, 0, split), xpi_amx_i8_pack_rows(Pr, X, rl, n, cols, split, n);
    else xpi_amx_bf16_pack_rows(Pr, X, rl, n, cols, 0, split), xpi_amx_bf16_pack_rows(Pr, X, rl, n, cols, split, n);
    CHECK(memcmp(Pg, Pr, pbytes) == 0, "%s %lldx%lld n=%d: pack_rows differs from pack of the gathered rows",
          dt_name(dt), (long long)rows, (long long)cols, n);
    /* the int8 per-row form (MoE layers quantize each token once for its k experts): packing the rows' forms
     * through the same row list gives pack_rows' bytes */
    if (is_q) {
      const xpi_cpu_form *fm = &xpi_amx_i8_form;
      const size_t fb = fm->row_bytes(cols);
      CHECK(fb % 64 == 0, "%s cols=%lld: form rows of %zu bytes", dt_name(dt), (long long)cols, fb);
      unsigned char *F = aligned_alloc(64, fb * (size_t)n);
      memset(F, 0x77, fb * (size_t)n);
      fm->form(F, X, n, cols);
      memset(Pr, 0x5a, pbytes);
      fm->pack(Pr, F, rl, n, cols, 0, split), fm->pack(Pr, F, rl, n, cols, split, n);
      CHECK(memcmp(Pg, Pr, pbytes) == 0, "%s %lldx%lld n=%d: packing the form differs from pack_rows", dt_name(dt),
            (long long)rows, (long long)cols, n);
      free(F);
    }
    free(rl), free(Xg), free(Pg), free(Pr);
    free(Pf);
  }
  /* the tile unit itself: q8/q4 bit for bit, bf16 within the same bound of the oracle (the order of its f32
   * sums is its own) */
  const xpi_cpu_kernels *amx = xpi_cpu_kernels_for(XPI_ISA_AMX);
  if (amx) {
    float *Ya = malloc(sizeof(float) * (size_t)(n * ldy));
    for (int64_t i = 0; i < n * ldy; i++) Ya[i] = 12345.0f;
    xpi_cpu_kernels gemm_only = *amx; /* the tile GEMM at every n: the table runs small batches elsewhere */
    memset(gemm_only.smalln, 0, sizeof gemm_only.smalln);
    xpi_cpu_matmul(NULL, NULL, &gemm_only, dt, Ya, ldy, X, n, W, dq, 0, rows, cols);
    if (is_q && n >= XPI_CPU_GEMM_MIN_N) {
      CHECK(memcmp(Ya, Y, sizeof(float) * (size_t)(n * ldy)) == 0, "%s %lldx%lld n=%d: AMX differs from the emulation",
            dt_name(dt), (long long)rows, (long long)cols, n);
    } else { /* bf16; and below XPI_CPU_GEMM_MIN_N tokens, where the table runs its decode GEMV (its own f32 order
                of the block sums: 1 ulp from the tiles' on q4 1x33 here), within the oracle's bound */
      int64_t worst = -1;
      for (int64_t i = 0; i < n * ldy && worst < 0; i++)
        if (!(fabs((double)Ya[i] - Yr[i]) <= tols[i])) worst = i;
      CHECK(worst < 0, "%s %lldx%lld n=%d: AMX Y[%lld] = %.9g, oracle %.9g, beyond the bound", dt_name(dt),
            (long long)rows, (long long)cols, n, (long long)worst, worst < 0 ? 0.0 : Ya[worst],
            worst < 0 ? 0.0 : Yr[worst]);
    }
    free(Ya);
  }
  free(xq); free(dx); free(sx); free(deq); free(tols);
  free(wv); free(X); free(W); free(dq); free(P); free(S); free(Y); free(Yr);
}

/* bf16 inputs whose every partial sum is exact in f32, so that any summation order gives the exact result: weights
 * 2^(r % 3), activations 2^(t % 4) (1 + 2^-9 + 2^-17), whose three terms are 1, 2^-9 and 2^-17 (1 + 2^-8 ties to
 * even: 1). y = 2^(r % 3 + t % 4) (cols + cols 2^-9 + cols 2^-17) exactly; a term lost or misplaced shows (the
 * random cases' worst-case bound is looser than the third term). On the emulation, the AMX table and the AVX-512
 * table's bf16 GEMM (same layout). */
static void exact_case(int64_t rows, int32_t n) {
  enum { COLS = 64 };
  uint16_t *W = malloc(sizeof(uint16_t) * (size_t)(rows * COLS));
  float *X = malloc(sizeof(float) * (size_t)n * COLS), *Y = malloc(sizeof(float) * (size_t)(n * rows));
  for (int64_t r = 0; r < rows; r++)
    for (int c = 0; c < COLS; c++) W[r * COLS + c] = xpi_f32_to_bf16(ldexpf(1.0f, (int)(r % 3)));
  for (int32_t t = 0; t < n; t++)
    for (int c = 0; c < COLS; c++) X[t * COLS + c] = ldexpf(1.0f + 0x1p-9f + 0x1p-17f, t % 4);
  const size_t pbytes = xpi_amx_bf16_pack_bytes(n, COLS);
  void *P = aligned_alloc(64, (pbytes + 63) & ~(size_t)63);
  void *S = aligned_alloc(64, (amx_bf16_scratch_bytes(COLS) + 63) & ~(size_t)63);
  xpi_amx_bf16_pack_ref(P, X, n, COLS, 0, n);
  for (int v = 0; v < 3; v++) {
    const xpi_cpu_kernels *k = v == 1   ? xpi_cpu_kernels_for(XPI_ISA_AMX)
                               : v == 2 ? xpi_cpu_kernels_for(XPI_ISA_AVX512)
                                        : NULL;
    if (v && !k) continue;
    for (int64_t i = 0; i < n * rows; i++) Y[i] = -1;
    if (!v) amx_bf16_run(Y, rows, P, n, W, NULL, COLS, 0, rows, 0, n, S);
    else {
      xpi_cpu_kernels gemm_only = *k;
      memset(gemm_only.smalln, 0, sizeof gemm_only.smalln);
      xpi_cpu_matmul(NULL, NULL, &gemm_only, XPI_DT_BF16, Y, rows, X, n, W, NULL, 0, rows, COLS);
    }
    int64_t bad = 0;
    for (int32_t t = 0; t < n; t++)
      for (int64_t r = 0; r < rows; r++)
        bad += Y[t * rows + r] != ldexpf(COLS + COLS * 0x1p-9f + COLS * 0x1p-17f, (int)(r % 3 + t % 4));
    CHECK(bad == 0, "bf16 exact %lldx%d n=%d (%s): %lld outputs not exact", (long long)rows, COLS, n,
          v == 0 ? "emulation" : v == 1 ? "amx" : "avx512", (long long)bad);
  }
  free(W), free(X), free(Y), free(P), free(S);
}

int main(void) {
  for (int32_t n = 2; n <= 70; n += n < 20 ? 1 : 7) exact_case(48, n); /* every tail size, compact or not */
  static const xpi_dtype dts[] = {XPI_DT_BF16, XPI_DT_Q8, XPI_DT_Q4};
  for (int di = 0; di < 3; di++) {
    const xpi_dtype dt = dts[di];
    gemm_case(dt, 32, 64, 32, 1, 1);   /* exactly one 2 x 2 block of tiles */
    gemm_case(dt, 70, 96, 45, 1, 1);   /* ragged rows (a panel of 6) and tokens (13 past 32) */
    gemm_case(dt, 70, 96, 45, 3, 2);   /* the same on a grid of tiles */
    gemm_case(dt, 17, 40, 5, 1, 1);    /* cols not a multiple of 32 (bf16 pads, q pads the last block) */
    gemm_case(dt, 33, 200, 67, 2, 3);  /* several column blocks, ragged everything */
    gemm_case(dt, 1, 33, 1, 1, 1);     /* one row, one token */
    gemm_case(dt, 40, 1100, 20, 1, 1); /* over the int8 packer's 1024-column chunk, a partial block after it */
    /* bf16 compact tails (amx_layout.h): 2 tokens after a pair of tiles, 10 after three tiles (two slots, the
     * tail second in its pair), 6 alone, 11 (padded, not compact), 1 after a tile, on grids */
    gemm_case(dt, 64, 96, 34, 1, 1);
    gemm_case(dt, 48, 64, 58, 2, 2);
    gemm_case(dt, 32, 40, 6, 1, 1);
    gemm_case(dt, 32, 64, 43, 1, 2);
    gemm_case(dt, 96, 128, 17, 3, 1);
  }
  printf("AMX on this CPU: %s; AVX-512 packers checked: %s\n", xpi_cpu_has(XPI_ISA_AMX) ? "yes (checked too)" : "no",
         xpi_cpu_has(XPI_ISA_AVX512) ? "yes" : "no");
  return xpi_test_done();
}
