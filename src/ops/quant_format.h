/* Weight-only block quantization (XPI_DT_Q8, XPI_DT_Q4), made at load time: the formats every backend places and
 * computes with (the CPU's kernels, the XPU's, the memory plan's byte counts).
 *
 * Formats (chosen for AVX2 maddubs / AVX-512 VNNI int8 dot products, not for GGUF compatibility):
 *   A row of `cols` weights is cut into nb = ceil(cols/32) blocks of XPI_QK = 32; the last block is
 *   zero padded. Quants and scales live in two arrays so each is read as one sequential stream:
 *     Q8: data = int8  qs[rows][nb*32],  q in [-127, 127],   w ~ d * q
 *     Q4: data = uint8 qs[rows][nb*16],  q in [0, 15],       w ~ d * (q - 8)
 *         byte j of a block holds element j in its low nibble and element 16+j in its high nibble
 *     aux = uint16 (IEEE half) d[rows][nb]
 *   Bytes per weight: Q8 34/32 = 1.0625, Q4 18/32 = 0.5625 (plus padding of the last block).
 *
 * Choice of d (stored as a half):
 *   Q8: d = amax/127 rounded UP to a half (so no quant needs clamping), q = round(w/d).
 *   Q4: d0 = -m/8, m the element of largest magnitude with its sign (as Q4_0), rounded away from zero, or
 *       the scale that minimizes the block's squared error weighted by importance (rms + |w|), searched over
 *       the least-squares scales of five quant grids around d0's (quant_format.c, q4_best_scale; as llama.cpp's
 *       k-quants search); q = clamp(round(w/d), -8, 7) + 8. Load-time only.
 * Error bounds, amax = max |w| over the block, h = 2^-24 (smallest half step):
 *   Q8, per element:  |w - d*q| <= d/2,   d <= amax/127 * (1 + 2^-10) + h   (about 0.4% of amax)
 *   Q4, per block:    RMS(w - d*(q-8)) <= |d0| <= amax/8 * (1 + 2^-10) + h   (with d0 every element is within
 *                     |d0|, and a searched scale is kept only within this bound); typically about amax/20.
 * Matmul semantics, the same for every path (the scalar reference, the decode GEMV, the prefill GEMM): the
 * activations are rounded to int8 per 32-column block (dx = amax_x/127, xq = round(x/dx) to nearest even,
 * |x - dx*xq| <= dx/2) and each output is
 *   y = sum over blocks of d * dx * (exact int32 dot of the weight quants with xq)   (Q4: quants minus 8)
 * so prefill and decode give the same logits up to f32 rounding, and to the discontinuity of the rounding: a
 * last-bit difference in one matmul's output (another summation order: another table, GEMV vs GEMM) can round an
 * activation of the next matmul to the neighbouring quant, |w| * dx per output; through a model these flips move
 * logits by up to a few percent of the largest (test_quant_model.c). The q8 prefill GEMMs of all tables round
 * alike (block order, f = fma(d, dx * isum, f)) and agree bit for bit. Against the exact product of the
 * dequantized weights with the f32 activations, for one output:
 *   |y - y_exact| <= sum over blocks of (dx/2) * sum_i |d*q_i|    (+ f32 rounding)
 * about 0.4% of the sum_i |w_i x_i|-scale terms per matmul; tests check it with these formulas. Rounding
 * the activations is what lets prefill multiply in int8 (maddubs: 32 multiply-adds an instruction, twice
 * the f32 FMA rate on AVX2), as llama.cpp's Q8_0/Q4_0 do. Through a whole model these errors add up: on
 * tinyfortunes (4 layers) the largest logit moves by ~2% of the largest |logit| against exact
 * dequantized products, and top-1 agreement with bf16 is unchanged (tests/cpu/test_quant_model.c).
 */
#ifndef XPI_OPS_QUANT_FORMAT_H
#define XPI_OPS_QUANT_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include "xpuinfer.h"
#include "ops/half.h"
#include "ops/ops.h"

#define XPI_QK 32

static inline int64_t xpi_q_nblocks(int64_t cols) { return (cols + XPI_QK - 1) / XPI_QK; }
/* Bytes of quants of one row (Q8: nb*32, Q4: nb*16). */
int64_t xpi_q_row_bytes(xpi_dtype dt, int64_t cols);

/* How a backend places a quantized [rows, cols] weight in one allocation (the CPU's arena block, the XPU's device
 * buffer): the quants (qbytes) from the start, the half scales (dbytes) from qpad, qbytes rounded up to 64. */
typedef struct xpi_q_layout {
  uint64_t qbytes, dbytes, qpad;
} xpi_q_layout;
static inline xpi_q_layout xpi_q_layout_of(xpi_dtype dt, int64_t rows, int64_t cols) {
  xpi_q_layout l;
  l.qbytes = (uint64_t)rows * (uint64_t)xpi_q_row_bytes(dt, cols);
  l.dbytes = (uint64_t)rows * (uint64_t)xpi_q_nblocks(cols) * 2;
  l.qpad = (l.qbytes + 63) & ~(uint64_t)63;
  return l;
}
/* *w: the quantized weight placed in buf as l lays it out (scales at buf + qpad; bytes: quants + scales). */
static inline void xpi_q_weight_record(xpi_weight *w, xpi_dtype dt, int64_t rows, int64_t cols, unsigned char *buf,
                                       const xpi_q_layout *l) {
  w->dtype = dt;
  w->rows = rows;
  w->cols = cols;
  w->data = buf;
  w->aux = buf + l->qpad;
  w->owned = buf;
  w->bytes = (size_t)(l->qbytes + l->dbytes);
}


/* Quantizes rows x cols weights given in src_dtype (f32/f16/bf16, unaligned ok) into qs and d (sizes as
 * above). Fails (XPI_ERR_INVALID_ARGUMENT naming row/col) on a non-finite weight or one beyond the
 * half-precision range of the scale. */
xpi_status xpi_quantize_rows(xpi_dtype dt, void *qs, uint16_t *d, const void *src, xpi_dtype src_dtype,
                             int64_t rows, int64_t cols);
/* Dequantizes one row into out[cols]. */
void xpi_dequantize_row(xpi_dtype dt, float *out, const void *qs, const uint16_t *d, int64_t row, int64_t cols);

/* Activation quantization of the matmuls: xq[nb*32] (padding zeroed), dx[nb], sx[nb] = dx * sum(xq). */
void xpi_quantize_act_scalar(int8_t *xq, float *dx, float *sx, const float *x, int64_t cols);
/* The scale s of a block's codes round_even(x * s * (127 / (amax * s))), the rule of every table and of the XPU's
 * xpi_quant_act: 2^64 below amax 2^-64, where 127 / amax could overflow (amax < 3.7e-37), else 1. Scaling by a
 * power of two is exact and commutes with the rounding, so it changes no code where 127 / amax is finite. */
static inline float xpi_quant_act_prescale(float amax) { return amax < 0x1p-64f ? 0x1p64f : 1.0f; }
/* Integer-path reference for one row: sum over blocks of d*dx*(int dot) (Q4 with its -8 offset). */
float xpi_q_dot_int_scalar(xpi_dtype dt, const void *qs, const uint16_t *d, int64_t row, const int8_t *xq,
                           const float *dx, int64_t cols);

/* The signed quant of row `row`, column c (Q4: its nibble minus 8); rb = bytes of quants per row. */
static inline int xpi_q_at(xpi_dtype dt, const void *qs, int64_t rb, int64_t row, int64_t c) {
  if (dt == XPI_DT_Q8) return ((const int8_t *)qs)[row * rb + c];
  const int64_t b = c / XPI_QK, j = c % XPI_QK;
  const uint8_t byte = ((const uint8_t *)qs)[row * rb + b * 16 + (j & 15)];
  return (j < 16 ? byte & 15 : byte >> 4) - 8;
}

/* Integer dot of row `row`'s quants in block b with an activation block's int8 quants xq[0..32). */
static inline int32_t xpi_q_block_dot(xpi_dtype dt, const void *qs, int64_t rb, int64_t row, int64_t b, const int8_t *xq) {
  int32_t s = 0;
  for (int j = 0; j < XPI_QK; j++) s += xpi_q_at(dt, qs, rb, row, b * XPI_QK + j) * xq[j];
  return s;
}

#endif
