/* Buffer layouts of the AMX prefill GEMMs (kernels_amx.c), with plain-C reference packers (amx_layout.c) that
 * define them: the AMX kernels' own packers are checked against these byte for byte, and the GEMM bodies
 * (amx_gemm.h) run on an emulation of the tile instructions in the tests, so the layout logic is tested on any
 * CPU.
 *
 * Tiles (Intel SDM, AMX): an A tile is 16 rows of up to 64 bytes, a B tile K/4 rows of 64 bytes holding 16
 * columns of 4 bytes ("VNNI" order: the 4 bytes of a column are 4 int8 along K, or 2 bf16 along K), C 16 rows of
 * 16 f32/int32. Here A = 16 weight rows, B = 16 tokens, C[weight row][token].
 *
 * bf16 activations, for token panel p (16 tokens), term s, column pair kk, token t, element e (0, 1):
 *   P[p][s][kk][t][e] = term s of x[16p + t][2kk + e] as bf16        (columns padded to kp = 32k, tokens to
 *                                                                     a multiple of 32, with zeros)
 * so the B tile of 32 columns at column 32j is 1 KiB contiguous at P[p][s][16j]. The last panel, when it holds
 * 1-10 tokens (n % 16; MoE experts' counts end anywhere), is compact instead: B tile slot
 * q < xpi_amx_bf16_tail_slots(n) holds 5 tokens' terms side by side,
 *   P[p][q][kk][3i + s][e] = term s of x[16p + 5q + i][2kk + e]       (i < 5; column 15 and slot 2 zero)
 * so one tile product per slot covers all three terms, 2 or 4 products per k step where a padded 16-token tile
 * takes 6. A tile product costs the same whatever its shape (bench/2026-12-02-amx-expert-gemm.md), so this is
 * what saves a tail's padding; the GEMM then adds each token's three sums (amx_gemm.h). Weight panels of 32 rows
 * are read in place (A tiles of 16 rows at the row stride) when whole; ragged ones (fewer rows, or columns not a
 * multiple of 32) are copied in tile order with zero padding (xpi_amx_bf16_weights). Copying every panel was
 * faster while the GEMM waited on memory for each panel's first reads (strided tile loads, all 16 lines in 2 of
 * L1's 64 sets at 2 KiB rows, missed one by one); with the next panel prefetched into L2 during the current one
 * (amx_gemm.h), the in-place reads are 4-8% faster on a Xeon (bench/2026-12-02-moe-xeon2-tokblocks.md).
 * Terms: x = sum of the
 * XPI_AMX_BF16_TERMS terms up to 2^-(8 * terms) |x|: h_0 = bf16(x), h_1 = bf16(x - h_0), ... (round to
 * nearest even; x - h_0 is exact in f32). Three terms hold x exactly (24 bits; 8 per term; only values below
 * bf16's normal range, 2^-126, are lost), so each product w * h_s is exact and the GEMM is f32 math in another
 * summation order. Two terms keep 16 significant bits. One term (bf16 activations,
 * as llama.cpp's BF16 and torch's bf16 matmuls) moved the tiny goldens' logits by up to 1.48e-3 against
 * transformers' f32 math on the same bf16 weights, beyond their 1e-3 tolerance; two terms by 6.5e-6, but the
 * trained tinyfortunes model's logits by 2.0e-4 between a chunked and a whole prompt (decode's GEMV is exact f32),
 * where f32 GEMMs differ by 1.1-1.6e-5; three terms: 5.1e-6 and 1.1e-5, the f32 figures
 * (bench/2026-12-01-cpu-xeon-tables.md). Each term is one more tile product with the same weight tiles.
 *
 * int8 activations (quant_format.h's per-32-column blocks), for token panel p, block b, 4-column group g, token t:
 *   P[p][b][g][t][0..4) = xq[16p + t][32b + 4g .. 32b + 4g + 4)      (512 bytes per B tile)
 *   then, after all panels (64-byte aligned): dx[p][b][t] floats.
 * Weights: q8 rows are used as stored (A tile = 16 rows x 32 bytes of one block, stride = row bytes); q4 rows
 * (and ragged q8 panels) are unpacked per panel of 32 rows to pw[b][row][32] int8 (q4: quant - 8), their scales
 * to D[b][row] f32. */
#ifndef XPI_CPU_AMX_LAYOUT_H
#define XPI_CPU_AMX_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "ops/ops.h"

#define XPI_AMX_TR 16         /* weight rows per A tile */
#define XPI_AMX_TT 16         /* tokens per B tile */
#define XPI_AMX_BF16_TERMS 3  /* bf16 terms per activation (see above) */
#define XPI_AMX_STR_(x) #x
#define XPI_AMX_STR(x) XPI_AMX_STR_(x)
#define XPI_AMX_TERMS_STR XPI_AMX_STR(XPI_AMX_BF16_TERMS)

static inline int64_t xpi_amx_kp(int64_t cols) { return (cols + 31) & ~(int64_t)31; }
/* tokens padded to two B tiles (the kernels' 2 x 2 blocking) */
static inline int64_t xpi_amx_np(int32_t n) { return ((int64_t)n + 31) & ~(int64_t)31; }

/* ---- bf16 */
size_t xpi_amx_bf16_pack_bytes(int32_t n, int64_t cols);
static inline const uint16_t *xpi_amx_bf16_panel(const void *P, int64_t cols, int64_t p) {
  return (const uint16_t *)P + p * XPI_AMX_BF16_TERMS * xpi_amx_kp(cols) * XPI_AMX_TT;
}
/* Tokens per compact tail slot, and the slots of n tokens' compact last panel (0: none, the panel is padded). */
#define XPI_AMX_BF16_TAIL_PER 5
static inline int xpi_amx_bf16_tail_slots(int32_t n) {
  const int r = (int)(n % XPI_AMX_TT);
  return r >= 1 && r <= 2 * XPI_AMX_BF16_TAIL_PER ? (r + XPI_AMX_BF16_TAIL_PER - 1) / XPI_AMX_BF16_TAIL_PER : 0;
}
/* In a compact tail, the slot and the B tile column of term s of the panel's token i (i < 10). */
static inline int xpi_amx_bf16_tail_slot(int64_t i) { return (int)(i / XPI_AMX_BF16_TAIL_PER); }
static inline int xpi_amx_bf16_tail_col(int64_t i, int s) {
  return XPI_AMX_BF16_TERMS * (int)(i % XPI_AMX_BF16_TAIL_PER) + s;
}
/* Where term s of token t's column pair kk goes: the uint32 (bf16 pair) index in P. */
static inline int64_t xpi_amx_bf16_at(int32_t n, int64_t cols, int64_t t, int s, int64_t kk) {
  const int64_t p = t / XPI_AMX_TT, i = t % XPI_AMX_TT, kp2 = xpi_amx_kp(cols) / 2;
  const int64_t base = p * XPI_AMX_BF16_TERMS * kp2 * XPI_AMX_TT;
  if (p == n / XPI_AMX_TT && xpi_amx_bf16_tail_slots(n))
    return base + (xpi_amx_bf16_tail_slot(i) * kp2 + kk) * XPI_AMX_TT + xpi_amx_bf16_tail_col(i, s);
  return base + (s * kp2 + kk) * XPI_AMX_TT + i;
}
/* Tokens [t0, t1) of X (t0 a multiple of 16, t1 one too or n), and the zero padding after n when t1 == n. */
void xpi_amx_bf16_pack_ref(void *P, const float *X, int32_t n, int64_t cols, int32_t t0, int32_t t1);
/* Rows [r, r+nr) of the bf16 weight matrix in tile order, pad[k][32 rows][32 columns] for each 32-column chunk k
 * (an A tile is then 1 KiB contiguous), zero padded past nr rows and cols columns. */
void xpi_amx_bf16_weights(uint16_t *pad, const void *W, int64_t r, int nr, int64_t cols);

/* ---- int8 */
size_t xpi_amx_i8_pack_bytes(int32_t n, int64_t cols);
static inline const int8_t *xpi_amx_i8_panel(const void *P, int64_t cols, int64_t p) {
  return (const int8_t *)P + p * ((cols + 31) / 32) * 512;
}
static inline const float *xpi_amx_i8_dx(const void *P, int32_t n, int64_t cols, int64_t p) {
  const int64_t nb = (cols + 31) / 32;
  return (const float *)((const char *)P + ((xpi_amx_np(n) * nb * 32 + 63) & ~(int64_t)63)) + p * nb * XPI_AMX_TT;
}
void xpi_amx_i8_pack_ref(void *P, const float *X, int32_t n, int64_t cols, int32_t t0, int32_t t1);
/* Rows [r, r+nr) of q8/q4 weights (nb blocks) into pw[b][32][32] int8 (q4: quant - 8), zero padded. */
void xpi_amx_i8_weights_ref(xpi_dtype dt, int8_t *pw, const void *W, int64_t r, int nr, int64_t nb);
/* Their scales (halves d[row][b]) into D[b][32] f32, zero padded. */
void xpi_amx_i8_scales(float *D, const void *d, int64_t r, int nr, int64_t nb);

/* ---- the packers the AMX and AVX-512 GEMMs run (kernels_avx512.c; call only where the CPU has AVX-512):
 * the same bytes as the references above, except that bf16 rounding flushes f32 subnormals to zero */
void xpi_amx_bf16_pack(void *P, const float *X, int32_t n, int64_t cols, int32_t t0, int32_t t1);
/* The same with token t read from row rows[t] of X (gathered while packing: MoE experts' tokens). */
void xpi_amx_bf16_pack_rows(void *P, const float *X, const int32_t *rows, int32_t n, int64_t cols, int32_t t0,
                            int32_t t1);
void xpi_amx_i8_pack(void *P, const float *X, int32_t n, int64_t cols, int32_t t0, int32_t t1);
void xpi_amx_i8_pack_rows(void *P, const float *X, const int32_t *rows, int32_t n, int64_t cols, int32_t t0,
                          int32_t t1);
/* The int8 packer's per-row form (cpu_kernels.h): a row's quants (kp bytes) then its block scales (f32), in 64-byte
 * multiples. */
extern const struct xpi_cpu_form xpi_amx_i8_form;

#endif
