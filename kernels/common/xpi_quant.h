/* The q8/q4 block formats on the device (src/ops/quant_format.h, the CPU's row-major layout): 32 weights a block,
 * quants qs[rows][nb*32] (q8, int8) or [rows][nb*16] (q4, byte j = element j low nibble, element 16+j high
 * nibble, value nibble - 8), one half scale d[rows][nb]; activations as int8 blocks xq[t][nb*32] with one f32
 * scale dx[t][nb] (xpi_quant_act, kernels/portable/matmul_q.cl). Shared by the dense q8/q4 matmuls and the
 * quantized mixture-of-experts kernels (kernels/portable/moe.cl) so that both sum the same exact int32 block
 * dots and scale them the same way. */
#ifndef XPI_QUANT_H
#define XPI_QUANT_H

#include "xpi_cl.h" /* xpi_load */

#define XPI_QK 32

/* The activation codes of a block of largest magnitude amax: round_even(x * s * id), id = xpi_act_inv(amax, s),
 * s = xpi_act_prescale(amax), saturated: the CPU's rule (src/ops/quant_format.h, xpi_quant_act_prescale), the
 * quotient correctly rounded (xpi_div_rn). s = 2^64 below amax 2^-64, where 127 / amax could overflow, else 1;
 * scaling by a power of two is exact, so it changes no code where 127 / amax is finite. (A device that flushes
 * f32 denormals reads denormal inputs as 0: such blocks are the CPU's only where it does not.) */
static inline float xpi_act_prescale(float amax) { return amax < 0x1p-64f ? 0x1p64f : 1.0f; }
static inline float xpi_act_inv(float amax, float s) { return amax > 0.0f ? xpi_div_rn(127.0f, amax * s) : 0.0f; }

/* Integer dot of one weight block with an activation block (both 32 quants): xpi_qdot_q8/q4 with the activation
 * quants in global memory, xpi_qdotl_q8/q4 in local memory (OpenCL C 1.2 has no generic address space). */
#define XPI_QDOT(SUF, AS)                                                                                      \
  static inline int xpi_qdot##SUF##_q8(const global char *w, const AS char *x) {                               \
    int s = 0;                                                                                                 \
    for (int j = 0; j < XPI_QK; j += 16) {                                                                     \
      const int16 p = convert_int16(vload16(0, w + j)) * convert_int16(vload16(0, x + j));                     \
      s += p.s0 + p.s1 + p.s2 + p.s3 + p.s4 + p.s5 + p.s6 + p.s7 + p.s8 + p.s9 + p.sa + p.sb + p.sc + p.sd +   \
           p.se + p.sf;                                                                                        \
    }                                                                                                          \
    return s;                                                                                                  \
  }                                                                                                            \
  static inline int xpi_qdot##SUF##_q4(const global uchar *w, const AS char *x) {                              \
    const int16 v = convert_int16(vload16(0, w));                                                              \
    const int16 p =                                                                                            \
        ((v & 15) - 8) * convert_int16(vload16(0, x)) + ((v >> 4) - 8) * convert_int16(vload16(0, x + 16));    \
    return p.s0 + p.s1 + p.s2 + p.s3 + p.s4 + p.s5 + p.s6 + p.s7 + p.s8 + p.s9 + p.sa + p.sb + p.sc + p.sd +   \
           p.se + p.sf;                                                                                        \
  }
XPI_QDOT(, global)
XPI_QDOT(l, local)

/* One work-item's share of a GEMV row: blocks b = first, first + step, ... < nb of weight row wr (scales dr)
 * against activation row xt (scales dxt), each block acc = fma(d * dx, (float)(exact int32 dot), acc): written as
 * the fma so that no compiler contracts it otherwise (every q8/q4 GEMV row sum of both tiers has this form). */
#define XPI_QROW_PART(SUFFIX, BS, WT)                                                                         \
  static inline float xpi_qrow_part_##SUFFIX(const global WT *wr, const global half *dr, const global char *xt, \
                                             const global float *dxt, int nb, int first, int step) {           \
    float acc = 0.0f;                                                                                        \
    for (int b = first; b < nb; b += step)                                                                   \
      acc = fma(vload_half(b, dr) * dxt[b], (float)xpi_qdot_##SUFFIX(wr + b * (BS), xt + b * XPI_QK), acc);   \
    return acc;                                                                                              \
  }
XPI_QROW_PART(q8, XPI_QK, char)
XPI_QROW_PART(q4, XPI_QK / 2, uchar)

/* A weight block's 32 quants as signed int8, 4 a dword in element order (dword i: elements 4i .. 4i+3, low
 * first), in registers: the B operand of the int8 DPAS GEMM and the tuned GEMM's weight tile. q8: the 32 bytes
 * as stored (blocks are 32-byte aligned: rows of nb * 32 bytes in a 64-byte aligned allocation). q4: 16 bytes
 * (16-byte aligned), element j the low nibble of byte j, element 16 + j its high nibble; nibble - 8 stays within
 * a char. */
static inline int8 xpi_qb_q8(const global char *wq) { return as_int8(*(const global uint8 *)wq); }
static inline int8 xpi_qb_q4(const global uchar *wq) {
  const uchar16 v = *(const global uchar16 *)wq;
  const char16 lo = as_char16(v & (uchar)15) - (char)8, hi = as_char16(v >> (uchar)4) - (char)8;
  return (int8)(as_int4(lo), as_int4(hi));
}

/* The epilogue of the one-row-per-lane q8/q4 prefill GEMMs (kernels/tuned/gemm_q_sg.cl, xpi_gemm_dpas_q.h): lane
 * row r's sums of tokens t0 .. t0 + 7 (those < n) plus its bias into out[t][r]. */
static inline void xpi_qtile8_store(global float *out, float8 acc, const global void *bias, int bdt, int has_bias,
                                    int r, int t0, int n, int rows) {
  const float bv = has_bias ? xpi_load(bias, bdt, r) : 0.0f;
  float res[8];
  vstore8(acc, 0, res);
  for (int m = 0; m < 8; m++)
    if (t0 + m < n) out[(ulong)(t0 + m) * rows + r] = res[m] + bv;
}

/* One weight quant (signed) of a staged block: q8 element j; q4 byte j % 16, low nibble for j < 16. */
static inline char xpi_wq_q8(const global char *w, int j) { return w[j]; }
static inline char xpi_wq_q4(const global uchar *w, int j) {
  const uchar v = w[j & 15];
  return (char)((j < 16 ? (v & 15) : (v >> 4)) - 8);
}

/* One 32-column block of a 16 x 16 output tile (local size (16, 16)): work-item (lx, ly) stages half of block
 * xb of its token row ly and of block wb of its weight row ly (q4 unpacked to signed int8) with their scales,
 * then returns wd[lx] * xd[ly] * (exact int32 dot of weight row lx with token row ly). A token or row that is
 * not there (tok_ok / row_ok 0) stages zeros and is never read. Every work-item of the group must call it. */
#define XPI_QTILE_LD (XPI_QK + 4) /* padded: the 16 rows of a tile fall in different banks */
#define XPI_QTILE_BLOCK(SUFFIX, WT)                                                                           \
  static inline float xpi_qtile_block_##SUFFIX(local char (*xs)[XPI_QTILE_LD], local char (*ws)[XPI_QTILE_LD],   \
                                               local float *xd, local float *wd, int lx, int ly, int tok_ok,   \
                                               const global char *xb, const global float *xdp, int row_ok,     \
                                               const global WT *wb, const global half *wdp) {                  \
    xs[ly][lx] = tok_ok ? xb[lx] : (char)0;                                                                  \
    xs[ly][lx + 16] = tok_ok ? xb[lx + 16] : (char)0;                                                        \
    ws[ly][lx] = row_ok ? xpi_wq_##SUFFIX(wb, lx) : (char)0;                                                 \
    ws[ly][lx + 16] = row_ok ? xpi_wq_##SUFFIX(wb, lx + 16) : (char)0;                                       \
    if (lx == 0) {                                                                                           \
      xd[ly] = tok_ok ? *xdp : 0.0f;                                                                         \
      wd[ly] = row_ok ? vload_half(0, wdp) : 0.0f;                                                           \
    }                                                                                                        \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                            \
    int s = 0;                                                                                               \
    for (int k = 0; k < XPI_QK; k++) s += (int)ws[lx][k] * (int)xs[ly][k];                                   \
    const float v = wd[lx] * xd[ly] * (float)s;                                                              \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                            \
    return v;                                                                                                \
  }
XPI_QTILE_BLOCK(q8, char)
XPI_QTILE_BLOCK(q4, uchar)

/* Sum of v over a work-group of n (a power of two) work-items, through local red[n]; every work-item gets it. */
static inline float xpi_wg_sum(local float *red, float v, int lid, int n) {
  red[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = n / 2; s > 0; s >>= 1) {
    if (lid < s) red[lid] += red[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE); /* red may be reused at once */
  return r;
}

#endif
