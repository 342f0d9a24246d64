/* AMX (Sapphire Rapids and later Xeons): the prefill GEMMs of bf16 and q8/q4 weights on the tile unit; the rest
 * is the AVX-512 table's. The GEMM bodies are amx_gemm.h's (also run on an emulation of the tile instructions by
 * the tests), the layouts amx_layout.h's; this file maps the tile operations to the instructions. The activations
 * are packed by kernels_avx512.c's AVX-512 packers (the reference packers in amx_layout.c are plain C, too slow
 * for the product's once-per-matmul packing: they are the tests' oracle for those).
 *
 * bf16: tdpbf16ps multiplies bf16 pairs and accumulates in f32. The weight rows are the A tiles, read straight
 * from a copy of each 32-row weight panel in tile order; each activation is XPI_AMX_BF16_TERMS bf16 terms
 * (three: exact, amx_layout.h says why), each a B tile multiplied by the same weight tiles.
 *
 * q8/q4: tdpbssd multiplies int8 and sums exactly in int32, as the AVX2 and VNNI GEMMs (quant_format.h's semantics).
 * One tile product covers one 32-column block, whose scales differ per block, so after each block the int32
 * tiles are stored and scaled into f32 sums by AVX-512: sum += d_w * dx * isum. q8 weight rows are the A tiles
 * as stored; q4 rows are unpacked to int8 (quant - 8) once per panel, so no offset correction is needed. */
#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/amx_layout.h"
#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/quant.h"
#include "ops/cpu/simd_avx512.h"

/* Tile configuration (palette 1). */
typedef struct {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} __attribute__((packed, aligned(64))) tilecfg;

static void amx_config(int a_colsb, int b_rows) {
  tilecfg c;
  memset(&c, 0, sizeof c);
  c.palette = 1;
  for (int t = 0; t < 4; t++) c.rows[t] = 16, c.colsb[t] = 64;
  for (int t = 4; t < 6; t++) c.rows[t] = 16, c.colsb[t] = (uint16_t)a_colsb;
  for (int t = 6; t < 8; t++) c.rows[t] = (uint8_t)b_rows, c.colsb[t] = 64;
  /* not _tile_loadconfig: GCC 12 does not see that its builtin reads the whole 64 bytes, and drops the stores
   * of rows and colsb above (the tiles then stay unconfigured: tilezero raises #UD) */
  __asm__ volatile("ldtilecfg %0" : : "m"(c));
}

/* S[r][t] += D[r] * (dx[t] * C[r][t]) over a 16 x 16 tile (C int32 rows of 16, S f32 rows of 32), rounded as the
 * VNNI/AVX2 int8 GEMM's xpi_gq_scale (the product dx * isum, then one fma with the weight scale, blocks in order),
 * so that for q8 the AMX and the other tables' GEMMs give the same bits: the int8 activation rounding downstream
 * turns last-bit differences into flips of whole quanta (test_quant_model.c). Same instruction count as
 * (dx * D) * C. */
static inline void amx_scale(float *S, const int32_t *C, const float *D, const float *dx) {
  const __m512 vdx = _mm512_loadu_ps(dx);
  for (int r = 0; r < 16; r++) {
    const __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512((const void *)(C + r * 16))), vdx);
    _mm512_store_ps(S + r * 32, _mm512_fmadd_ps(_mm512_set1_ps(D[r]), v, _mm512_load_ps(S + r * 32)));
  }
}

/* q4 (or ragged q8) panel rows [r, r+nr) into pw[b][32][32] int8, zero padded (amx_layout.h). */
static void amx_i8_weights(xpi_dtype dt, int8_t *pw, const void *W, int64_t r, int nr, int64_t nb) {
  const int64_t rb = xpi_q_row_bytes(dt, nb * XPI_QK);
  const __m128i m4 = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
  for (int i = 0; i < 2 * XPI_AMX_TR; i++) {
    const uint8_t *row = (const uint8_t *)W + (r + i) * rb;
    for (int64_t b = 0; b < nb; b++) {
      int8_t *o = pw + (b * 2 * XPI_AMX_TR + i) * XPI_QK;
      if (i >= nr) memset(o, 0, XPI_QK);
      else if (dt == XPI_DT_Q8) memcpy(o, row + b * XPI_QK, XPI_QK);
      else {
        const __m128i v = _mm_loadu_si128((const __m128i *)(row + b * 16));
        _mm_storeu_si128((__m128i *)o, _mm_sub_epi8(_mm_and_si128(v, m4), eight));
        _mm_storeu_si128((__m128i *)(o + 16), _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(v, 4), m4), eight));
      }
    }
  }
}

/* amx_layout.h's tile-order bf16 weight panel (as xpi_amx_bf16_weights), a 64-byte chunk per zmm: row by row, so
 * that each row is read as one sequential stream (memcpy per chunk cost 12% of a 1-thread bf16 prefill). */
static void amx_bf16_weights(uint16_t *pad, const void *W, int64_t r, int nr, int64_t cols) {
  const int64_t kc = xpi_amx_kp(cols) / 32;
  for (int i = 0; i < 2 * XPI_AMX_TR; i++) {
    const uint16_t *row = (const uint16_t *)W + (r + (i < nr ? i : 0)) * cols; /* rows past nr: zeros */
    for (int64_t k = 0; k < kc; k++) {
      const int64_t m = i < nr ? (cols - k * 32 < 32 ? cols - k * 32 : 32) : 0;
      const __mmask32 mk = m >= 32 ? 0xffffffffu : (__mmask32)((1u << m) - 1);
      _mm512_store_si512((void *)(pad + (k * 2 * XPI_AMX_TR + i) * 32),
                         _mm512_maskz_loadu_epi16(mk, row + (m > 0 ? k * 32 : 0)));
    }
  }
}

/* Scales of rows [r, r+nr) into D[b][32] f32: 16 rows x 16 blocks at a time, each row's halves loaded whole,
 * converted, and transposed in registers (gathering them one by one cost ~1 ns each, 1,024 a panel). */
static void amx_i8_scales(float *D, const void *d, int64_t r, int nr, int64_t nb) {
  const uint16_t *h = d;
  for (int g = 0; g < 2; g++)
    for (int64_t b0 = 0; b0 < nb; b0 += 16) {
      const int nk = nb - b0 < 16 ? (int)(nb - b0) : 16;
      const __mmask16 km = (__mmask16)((1u << nk) - 1);
      __m512 v[16];
      for (int i = 0; i < 16; i++)
        v[i] = g * 16 + i < nr ? _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(km, h + (r + g * 16 + i) * nb + b0))
                               : _mm512_setzero_ps();
      xpi_tr16(v); /* v[j]: block b0 + j of the 16 rows */
      for (int j = 0; j < nk; j++) _mm512_storeu_ps(D + (b0 + j) * 2 * XPI_AMX_TR + g * 16, v[j]);
    }
}

/* Y[t*ldy + r] = C[r*ldc + t] for r < nr, t < nt (nr, nt <= 16): a full block by a 16 x 16 transpose in
 * registers (scalar stores of 256 results cost more than a third of the int8 tile products they follow). */
static void amx_store_block(float *Y, int64_t ldy, const float *C, int ldc, int nr, int nt) {
  if (nr < 16 || nt < 16) {
    for (int t = 0; t < nt; t++)
      for (int r = 0; r < nr; r++) Y[t * ldy + r] = C[r * ldc + t];
    return;
  }
  __m512 v[16];
  for (int r = 0; r < 16; r++) v[r] = _mm512_loadu_ps(C + r * ldc);
  xpi_tr16(v);
  for (int t = 0; t < 16; t++) _mm512_storeu_ps(Y + t * ldy, v[t]);
}

#define AMX_PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T1) /* to L2: the panel is 32-64 KiB */
#define AMX_STORE_BLOCK amx_store_block
#define AMX_CONFIG(a, b) amx_config(a, b)
#define AMX_ZERO(t) _tile_zero(t)
#define AMX_LOAD(t, p, s) _tile_loadd(t, p, s)
#define AMX_STORE(t, p, s) _tile_stored(t, p, s)
#define AMX_DPBF16(c, a, b) _tile_dpbf16ps(c, a, b)
#define AMX_DPBSSD(c, a, b) _tile_dpbssd(c, a, b)
#define AMX_RELEASE() _tile_release()
#define AMX_SCALE(S, C, D, dx) amx_scale(S, C, D, dx)
#define AMX_BF16_WEIGHTS amx_bf16_weights
#define AMX_I8_WEIGHTS amx_i8_weights
#define AMX_I8_SCALES amx_i8_scales
#include "ops/cpu/amx_gemm.h"
#include "ops/cpu/mm_smalln.h"

/* ------------------------------------------------------------------ descriptors and table */

static void q8_run(float *Y, int64_t ldy, const void *P, int32_t n, const void *W, const void *aux, int64_t cols,
                   int64_t r0, int64_t r1, int32_t t0, int32_t t1, void *scratch) {
  amx_i8_run(XPI_DT_Q8, Y, ldy, P, n, W, aux, cols, r0, r1, t0, t1, scratch);
}
static void q4_run(float *Y, int64_t ldy, const void *P, int32_t n, const void *W, const void *aux, int64_t cols,
                   int64_t r0, int64_t r1, int32_t t0, int32_t t1, void *scratch) {
  amx_i8_run(XPI_DT_Q4, Y, ldy, P, n, W, aux, cols, r0, r1, t0, t1, scratch);
}

static const xpi_cpu_gemm gemm_bf16 = {"amx-bf16x" XPI_AMX_TERMS_STR, 2 * XPI_AMX_TT, 2 * XPI_AMX_TR,
                                       xpi_amx_bf16_pack_bytes, xpi_amx_bf16_pack, amx_bf16_scratch_bytes, amx_bf16_run,
                                       8 * XPI_AMX_BF16_TERMS, xpi_amx_bf16_pack_rows, NULL};
static const xpi_cpu_gemm gemm_q8 = {"amx-int8", 2 * XPI_AMX_TT, 2 * XPI_AMX_TR, xpi_amx_i8_pack_bytes,
                                     xpi_amx_i8_pack, amx_i8_scratch_bytes, q8_run, 0, xpi_amx_i8_pack_rows,
                                     &xpi_amx_i8_form};
static const xpi_cpu_gemm gemm_q4 = {"amx-int8", 2 * XPI_AMX_TT, 2 * XPI_AMX_TR, xpi_amx_i8_pack_bytes,
                                     xpi_amx_i8_pack, amx_i8_scratch_bytes, q4_run, 0, xpi_amx_i8_pack_rows,
                                     &xpi_amx_i8_form};

static xpi_cpu_kernels k_amx;
static pthread_once_t k_once = PTHREAD_ONCE_INIT;

static void build_table(void) {
  xpi_cpu_kernels k = *xpi_cpu_kernels_avx512();
  k.isa = "amx";
  k.gemm[XPI_DT_BF16] = &gemm_bf16;
  k.gemm[XPI_DT_Q8] = &gemm_q8;
  k.gemm[XPI_DT_Q4] = &gemm_q4;
  k.smalln_max[XPI_DT_BF16] = XPI_CPU_SMALLN_MAX_AMX_BF16; /* the AVX-512 small-n kernel, up to where the GEMM wins */
  k.smalln[XPI_DT_Q4] = k.gemv[XPI_DT_Q4], k.smalln_max[XPI_DT_Q4] = XPI_CPU_GEMV_MAX_AMX_Q4; /* mm_smalln.h */
  k.smalln[XPI_DT_Q8] = k.gemv[XPI_DT_Q8], k.smalln_max[XPI_DT_Q8] = XPI_CPU_GEMV_MAX_AMX_Q8;
  k_amx = k;
}

const xpi_cpu_kernels *xpi_cpu_kernels_amx(void) {
  pthread_once(&k_once, build_table);
  return &k_amx;
}
