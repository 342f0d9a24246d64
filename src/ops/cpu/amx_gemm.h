/* The AMX GEMMs' bodies (kernels_amx.c), written over tile-operation macros so that the tests can run them on an
 * emulation of the tile instructions (tests/cpu/test_amx_layout.c) on any CPU. The includer defines:
 *   AMX_CONFIG(a_colsb, b_rows)  tiles 0-3: 16 x 64 bytes (results), 4-5: 16 x a_colsb (weights),
 *                                6-7: b_rows x 64 (activations)
 *   AMX_ZERO(t), AMX_LOAD(t, ptr, stride), AMX_STORE(t, ptr, stride), AMX_DPBF16(c, a, b), AMX_DPBSSD(c, a, b),
 *   AMX_RELEASE()                the tile instructions (tile numbers are literals)
 *   AMX_SCALE(S, C, D, dx)       S[r*32 + t] += D[r] * dx[t] * C[r*16 + t] for r, t < 16, as D[r] * (dx[t] * C) rounded in that order
 *   AMX_BF16_WEIGHTS, AMX_I8_WEIGHTS, AMX_I8_SCALES   the panel preparers (amx_layout.h signatures)
 *   AMX_STORE_BLOCK(Y, ldy, C, ldc, nr, nt)   Y[t*ldy + r] = C[r*ldc + t] for r < nr, t < nt (a transpose)
 *   AMX_PREFETCH(p)              a hint that the cache line at p is read soon (no effect on results)
 * and gets amx_bf16_run and amx_i8_run (cpu_kernels.h's xpi_cpu_gemm run contract, i8 with the dtype first).
 * Layouts: amx_layout.h. Blocking: 2 x 2 result tiles (32 weight rows x 32 tokens) in tiles 0-3. */
#include <stdint.h>
#include <string.h>

#include "ops/cpu/amx_layout.h"
#include "ops/cpu/quant.h"

/* The 2 x 2 blocks of 16 x 16 results (weight rows x tokens) into Y: block (i, j) at C + i * bo + j * bt, its
 * rows ldc apart; the first nr rows and nt tokens are valid. */
static void amx_store_2x2(float *Y, int64_t ldy, const float *C, int ldc, int bo, int bt, int nr, int nt) {
  for (int q = 0; q < 4; q++) {
    const int i = q >> 1, j = q & 1, vr = nr - 16 * i < 16 ? nr - 16 * i : 16, vt = nt - 16 * j < 16 ? nt - 16 * j : 16;
    if (vr > 0 && vt > 0) AMX_STORE_BLOCK(Y + (int64_t)(16 * j) * ldy + 16 * i, ldy, C + i * bo + j * bt, ldc, vr, vt);
  }
}

/* The next weight panel's bytes (rows [r + 32, r + 64) of the call's [r, r1), rb bytes a row, contiguous), a few
 * cache lines per k step of this panel's tile products (steps in all): the panel copy or direct tile loads then
 * find them in L2 instead of waiting on memory. Without it, a 2-core Xeon VM spent 16% of the bf16 GEMM's
 * samples on the panel copy's first loads, and MoE experts, whose panels serve 30-60 tokens, waited most; with
 * it, reading whole bf16 panels in place beat copying them (bench/2026-12-02-moe-xeon2-tokblocks.md). */
typedef struct {
  const char *p;
  int64_t left, per;
} amx_pf;

static inline amx_pf amx_pf_next(const void *W, int64_t rb, int64_t r, int64_t r1, int64_t steps) {
  amx_pf f = {NULL, 0, 0};
  const int64_t nr = r1 - r - 2 * XPI_AMX_TR; /* rows after this panel */
  if (nr <= 0 || steps <= 0) return f;
  f.p = (const char *)W + (r + 2 * XPI_AMX_TR) * rb;
  f.left = ((nr < 2 * XPI_AMX_TR ? nr : 2 * XPI_AMX_TR) * rb + 63) / 64;
  f.per = (f.left + steps - 1) / steps;
  return f;
}

static inline void amx_pf_step(amx_pf *f) {
  for (int64_t q = 0; q < f->per && f->left > 0; q++, f->left--, f->p += 64) AMX_PREFETCH(f->p);
}

/* Y rows of a compact tail's tokens (amx_layout.h): token i's three sums, the columns 3i..3i+2 of its slot's
 * result tile (C + 256 (2 w + q) for weight tile w, slot q), added in term order. */
static void amx_bf16_tail_store(float *Y, int64_t ldy, const float *C, int nr, int nt) {
  for (int i = 0; i < nt; i++) {
    const int q = xpi_amx_bf16_tail_slot(i), col = xpi_amx_bf16_tail_col(i, 0);
    for (int w = 0; w < nr; w++) {
      const float *c = C + 256 * (2 * (w / 16) + q) + 16 * (w % 16) + col;
      Y[(int64_t)i * ldy + w] = (c[0] + c[1]) + c[2];
    }
  }
}

/* Blocks of the token loop from t0 (a multiple of 32): two padded token tiles at once, one alone (before the
 * compact tail, or at the end), or the compact tail (panel tail, or -1). */
static inline int32_t amx_bf16_block_end(int32_t t, int32_t t1, int64_t tail) {
  const int64_t p = t / XPI_AMX_TT;
  return p == tail || t1 - t <= XPI_AMX_TT || p + 1 == tail ? t + XPI_AMX_TT : t + 2 * XPI_AMX_TT;
}

/* scratch: the weight panel in tile order (32 rows x kp bf16) and the four result tiles (f32) */
static size_t amx_bf16_scratch_bytes(int64_t cols) {
  return (size_t)2 * XPI_AMX_TR * (size_t)xpi_amx_kp(cols) * 2 + 4 * 256 * sizeof(float);
}

static void amx_bf16_run(float *Y, int64_t ldy, const void *P, int32_t n, const void *W, const void *aux,
                         int64_t cols, int64_t r0, int64_t r1, int32_t t0, int32_t t1, void *scratch) {
  (void)aux;
  const int64_t kp = xpi_amx_kp(cols), kc = kp / 32;
  const int ns = xpi_amx_bf16_tail_slots(n); /* slots of a compact last panel (amx_layout.h) */
  const int64_t tail = ns ? n / XPI_AMX_TT : -1;
  int64_t blocks = 0;
  for (int32_t t = t0; t < t1; t = amx_bf16_block_end(t, t1, tail)) blocks++;
  uint16_t *pad = scratch;
  float *C = (float *)(pad + 2 * XPI_AMX_TR * kp);
  AMX_CONFIG(64, 16);
  for (int64_t r = r0; r < r1; r += 2 * XPI_AMX_TR) {
    const int nr = r1 - r < 2 * XPI_AMX_TR ? (int)(r1 - r) : 2 * XPI_AMX_TR;
    /* whole panels are read in place (A tiles of 16 rows x 64 bytes at the row stride, the same bytes as the
     * copy's); ragged ones are copied in tile order, zero padded (amx_layout.h) */
    const int direct = nr == 2 * XPI_AMX_TR && cols % 32 == 0;
    const uint16_t *wr = (const uint16_t *)W + r * cols;
    const int64_t ws = direct ? cols * 2 : 64; /* A tile row stride in bytes */
    if (!direct) AMX_BF16_WEIGHTS(pad, W, r, nr, cols);
    amx_pf pf = amx_pf_next(W, cols * 2, r, r1, kc * blocks);
/* k step k's prefetches and weight tiles (4, 5: rows 0-15, 16-31 of the panel) */
#define AMX_BF16_STEP(k)                                                                            \
  do {                                                                                              \
    amx_pf_step(&pf);                                                                               \
    AMX_LOAD(4, direct ? wr + (k) * 32 : pad + (k) * 2 * XPI_AMX_TR * 32, ws);                      \
    AMX_LOAD(5, direct ? wr + 16 * cols + (k) * 32 : pad + ((k) * 2 * XPI_AMX_TR + 16) * 32, ws); \
  } while (0)
    for (int32_t t = t0, te; t < t1; t = te) {
      te = amx_bf16_block_end(t, t1, tail);
      const uint16_t *b0 = xpi_amx_bf16_panel(P, cols, t / XPI_AMX_TT);
      const uint16_t *b1 = xpi_amx_bf16_panel(P, cols, t / XPI_AMX_TT + 1);
      AMX_ZERO(0);
      AMX_ZERO(2);
      if (t / XPI_AMX_TT == tail) { /* the compact tail: one product per weight tile and slot, all terms in it */
        if (ns > 1) {
          AMX_ZERO(1);
          AMX_ZERO(3);
        }
        for (int64_t k = 0; k < kc; k++) {
          AMX_BF16_STEP(k);
          AMX_LOAD(6, b0 + k * 16 * 32, 64);
          AMX_DPBF16(0, 4, 6);
          AMX_DPBF16(2, 5, 6);
          if (ns > 1) {
            AMX_LOAD(7, b0 + (kc + k) * 16 * 32, 64);
            AMX_DPBF16(1, 4, 7);
            AMX_DPBF16(3, 5, 7);
          }
        }
        AMX_STORE(0, C, 64);
        AMX_STORE(2, C + 512, 64);
        if (ns > 1) {
          AMX_STORE(1, C + 256, 64);
          AMX_STORE(3, C + 768, 64);
        }
        amx_bf16_tail_store(Y + (int64_t)t * ldy + r, ldy, C, nr, (n < t1 ? n : t1) - t);
        continue;
      }
      if (te - t > XPI_AMX_TT) { /* both token tiles */
        AMX_ZERO(1);
        AMX_ZERO(3);
        for (int64_t k = 0; k < kc; k++) {
          AMX_BF16_STEP(k);
          for (int s = 0; s < XPI_AMX_BF16_TERMS; s++) {
            AMX_LOAD(6, b0 + (s * kc + k) * 16 * 32, 64);
            AMX_LOAD(7, b1 + (s * kc + k) * 16 * 32, 64);
            AMX_DPBF16(0, 4, 6);
            AMX_DPBF16(1, 4, 7);
            AMX_DPBF16(2, 5, 6);
            AMX_DPBF16(3, 5, 7);
          }
        }
        AMX_STORE(1, C + 256, 64);
        AMX_STORE(3, C + 768, 64);
      } else /* one token tile: before the compact tail, or a last tile of 11-16 tokens (the second tile would be
              * all padding; computing it cost up to half of a small expert's products) */
        for (int64_t k = 0; k < kc; k++) {
          AMX_BF16_STEP(k);
          for (int s = 0; s < XPI_AMX_BF16_TERMS; s++) {
            AMX_LOAD(6, b0 + (s * kc + k) * 16 * 32, 64);
            AMX_DPBF16(0, 4, 6);
            AMX_DPBF16(2, 5, 6);
          }
        }
      AMX_STORE(0, C, 64);
      AMX_STORE(2, C + 512, 64);
      /* tile q at C + 256 q */
      amx_store_2x2(Y + (int64_t)t * ldy + r, ldy, C, 16, 512, 256, nr, (te < t1 ? te : t1) - t);
    }
  }
  AMX_RELEASE();
#undef AMX_BF16_STEP
}

/* scratch: the weight panel as int8 ([b][32][32]) and its scales ([b][32] f32), the f32 sums (32 x 32) and the
 * int32 staging of four result tiles */
static size_t amx_i8_scratch_bytes(int64_t cols) {
  const size_t nb = (size_t)xpi_q_nblocks(cols);
  return nb * 2 * XPI_AMX_TR * XPI_QK + nb * 2 * XPI_AMX_TR * sizeof(float) + 2 * 4 * 256 * sizeof(float);
}

static void amx_i8_run(xpi_dtype dt, float *Y, int64_t ldy, const void *P, int32_t n, const void *W,
                       const void *aux, int64_t cols, int64_t r0, int64_t r1, int32_t t0, int32_t t1, void *scratch) {
  const int64_t nb = xpi_q_nblocks(cols), rb = xpi_q_row_bytes(dt, cols);
  int8_t *pw = scratch;
  float *D = (float *)(pw + nb * 2 * XPI_AMX_TR * XPI_QK);
  float *S = D + nb * 2 * XPI_AMX_TR; /* [32 rows][32 tokens], 64-byte aligned (nb * 32 * 4 bytes before) */
  int32_t *C = (int32_t *)(S + 32 * 32);
  AMX_CONFIG(32, 8);
  for (int64_t r = r0; r < r1; r += 2 * XPI_AMX_TR) {
    const int nr = r1 - r < 2 * XPI_AMX_TR ? (int)(r1 - r) : 2 * XPI_AMX_TR;
    AMX_I8_SCALES(D, aux, r, nr, nb);
    /* q8 full panels are read in place (A tiles of 16 rows x 32 bytes at the row stride); q4 and ragged
     * panels are unpacked or copied once into pw */
    const int direct = dt == XPI_DT_Q8 && nr == 2 * XPI_AMX_TR;
    if (!direct) AMX_I8_WEIGHTS(dt, pw, W, r, nr, nb);
    amx_pf pf = amx_pf_next(W, rb, r, r1, nb * ((t1 - t0 + 2 * XPI_AMX_TT - 1) / (2 * XPI_AMX_TT)));
    for (int32_t t = t0; t < t1; t += 2 * XPI_AMX_TT) {
      const int8_t *b0 = xpi_amx_i8_panel(P, cols, t / XPI_AMX_TT), *b1 = xpi_amx_i8_panel(P, cols, t / XPI_AMX_TT + 1);
      const float *dx0 = xpi_amx_i8_dx(P, n, cols, t / XPI_AMX_TT), *dx1 = xpi_amx_i8_dx(P, n, cols, t / XPI_AMX_TT + 1);
      const int two = t1 - t > XPI_AMX_TT;
      memset(S, 0, 32 * 32 * sizeof(float));
      for (int64_t b = 0; b < nb; b++) {
        amx_pf_step(&pf);
        if (direct) {
          const int8_t *w = (const int8_t *)W + r * rb + b * XPI_QK;
          AMX_LOAD(4, w, rb);
          AMX_LOAD(5, w + 16 * rb, rb);
        } else {
          AMX_LOAD(4, pw + b * 2 * XPI_AMX_TR * XPI_QK, XPI_QK);
          AMX_LOAD(5, pw + (b * 2 * XPI_AMX_TR + 16) * XPI_QK, XPI_QK);
        }
        AMX_LOAD(6, b0 + b * 512, 64);
        AMX_ZERO(0);
        AMX_ZERO(2);
        AMX_DPBSSD(0, 4, 6);
        AMX_DPBSSD(2, 5, 6);
        AMX_STORE(0, C, 64);
        AMX_STORE(2, C + 512, 64);
        const float *db = D + b * 2 * XPI_AMX_TR;
        AMX_SCALE(S, C, db, dx0 + b * 16);
        AMX_SCALE(S + 16 * 32, C + 512, db + 16, dx0 + b * 16);
        if (two) { /* the second token tile (a tail of <= 16 tokens has none: as the bf16 GEMM) */
          AMX_LOAD(7, b1 + b * 512, 64);
          AMX_ZERO(1);
          AMX_ZERO(3);
          AMX_DPBSSD(1, 4, 7);
          AMX_DPBSSD(3, 5, 7);
          AMX_STORE(1, C + 256, 64);
          AMX_STORE(3, C + 768, 64);
          AMX_SCALE(S + 16, C + 256, db, dx1 + b * 16);
          AMX_SCALE(S + 16 * 32 + 16, C + 768, db + 16, dx1 + b * 16);
        }
      }
      amx_store_2x2(Y + (int64_t)t * ldy + r, ldy, S, 32, 16 * 32, 16, nr, t1 - t);
    }
  }
  AMX_RELEASE();
}
