/* Hot loops of the CPU backend behind one table, so the backend's op code is written once and the ISA
 * (scalar reference, AVX2+FMA, AVX-512/BF16/VNNI) is chosen at run time. The scalar table is the oracle
 * every faster table is tested against. */
#ifndef XPI_CPU_KERNELS_H
#define XPI_CPU_KERNELS_H

#include <stdint.h>
#include <string.h>
#include "ops/half.h"
#include "ops/ops.h"

/* Matrix product over a slice of weight rows:
 *   Y[t*ldy + r] = sum_c X[t*cols + c] * W[r, c]     for t < n, r0 <= r < r1
 * W is the weight's data in its dtype (rows of cols elements; block types per their layout), aux its
 * scales or NULL. X is f32 and may be unaligned. Accumulation in f32 (or exact int32 for quantized dots). */
typedef void (*xpi_cpu_mm_fn)(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux,
                              int64_t r0, int64_t r1, int64_t cols);

/* ---- attention tile (attention_cpu.c drives it; attn_tile_scalar.c is the oracle, attn_tile_avx2.c).
 * Causal attention of up to XPI_CPU_ATTN_ROWS query rows that share one KV head (the q heads of a GQA group,
 * for one or more tokens) against keys [s0, s1) of that head, as one step of an online softmax: per row r,
 *   s_j = cap(scale * q_r . K_j)  for s0 <= j < s1 and first[r] <= j <= last[r] (other keys are masked;
 *         first[r] > 0 is a sliding window), cap(x) = softcap * tanh(x / softcap), or x when softcap is 0,
 *   m' = max(m, max_j s_j),  l' = l*exp(m - m') + sum_j exp(s_j - m'),
 *   acc' = acc*exp(m - m') + sum_j exp(s_j - m') V_j.
 * Start from m = -INFINITY, l = 0, acc = 0; the attention output is acc / l. Tiles over disjoint key ranges
 * of the same rows merge exactly like two steps (attention_cpu.c). Each K/V row is read once per tile for
 * all its rows, which is what makes decode stream the cache at memory bandwidth. A row none of whose keys
 * lie in [s0, s1) keeps its state (m, l, acc untouched). Keys before every row's first are not read. */
#define XPI_CPU_ATTN_ROWS 16 /* query rows per tile */
#define XPI_CPU_ATTN_KEYS 32 /* keys per block inside a tile (scores and converted K/V rows stay in L1) */
#define XPI_CPU_ATTN_HDP(hd) (((int64_t)(hd) + 7) & ~(int64_t)7) /* acc row stride: hd rounded up to 8 */

typedef struct xpi_cpu_attn_tile {
  const float *q[XPI_CPU_ATTN_ROWS]; /* query rows, hd floats each */
  int32_t last[XPI_CPU_ATTN_ROWS];   /* row r sees keys j <= last[r] (its position) */
  int32_t first[XPI_CPU_ATTN_ROWS];  /* ... and j >= first[r] (0, or the start of its sliding window) */
  int32_t nq, hd;                    /* 1 <= nq <= XPI_CPU_ATTN_ROWS */
  const void *k, *v;                 /* element 0 of this KV head's row 0 in block 0, in dt (f32/bf16/f16) */
  int64_t ld;                        /* elements from a row to the next inside a block */
  const int32_t *blk;                /* block table: key j is row j & (2^bshift - 1) of block blk[j >> bshift] */
  int32_t bshift;                    /* 30 with blk = {0}: one contiguous run of rows */
  int64_t bstride;                   /* elements from block b's rows to block b+1's */
  xpi_dtype dt;
  int32_t s0, s1;                    /* keys [s0, s1) */
  float scale;
  float softcap;                     /* > 0: scores capped (see above); 0: not */
  float *m, *l;                      /* [nq] running max and sum, updated in place */
  float *acc;                        /* [nq][XPI_CPU_ATTN_HDP(hd)] running output, updated in place */
  float *scratch;                    /* xpi_cpu_attn_scratch_floats(hd) floats, 32-byte aligned */
} xpi_cpu_attn_tile;

/* Offset in elements from t->k (or t->v) to key j's row. */
static inline int64_t xpi_cpu_attn_row(const xpi_cpu_attn_tile *t, int32_t j) {
  return (int64_t)t->blk[j >> t->bshift] * t->bstride + (int64_t)(j & ((1 << t->bshift) - 1)) * t->ld;
}

/* Keys j..(returned - 1) are consecutive rows of one block (at most up to end). */
static inline int32_t xpi_cpu_attn_run_end(const xpi_cpu_attn_tile *t, int32_t j, int32_t end) {
  const int64_t e = (((int64_t)j >> t->bshift) + 1) << t->bshift;
  return e < end ? (int32_t)e : end;
}

/* Scratch one attn_tile call needs: query rows, one block of converted K or V rows, and the scores. */
static inline size_t xpi_cpu_attn_scratch_floats(int32_t hd) {
  return (size_t)XPI_CPU_ATTN_HDP(hd) * (XPI_CPU_ATTN_ROWS + XPI_CPU_ATTN_KEYS) +
         (size_t)XPI_CPU_ATTN_ROWS * XPI_CPU_ATTN_KEYS;
}

void xpi_cpu_attn_tile_scalar(const xpi_cpu_attn_tile *t);
void xpi_cpu_attn_tile_avx2(const xpi_cpu_attn_tile *t); /* AVX2 + FMA + F16C; the AVX-512 table shares it */

/* A per-row form of a GEMM's activations (its rounding or quantization done, not yet in the packed layout), for
 * rows packed more than once: a MoE layer packs each token's row for each of its k experts. form turns n rows of X
 * into row_bytes(cols) bytes each at F (row t at F + t * row_bytes); pack packs token t from form row rows[t], the
 * same bytes as the GEMM's pack_rows over X. */
typedef struct xpi_cpu_form {
  size_t (*row_bytes)(int64_t cols);
  void (*form)(void *F, const float *X, int32_t n, int64_t cols);
  void (*pack)(void *P, const void *F, const int32_t *rows, int32_t n, int64_t cols, int32_t t0, int32_t t1);
} xpi_cpu_form;

/* Prefill GEMM (n >= XPI_CPU_GEMM_MIN_N tokens) in phases, so that a matmul packs its activations once, into one
 * buffer all threads share, and its product can be split over rows and tokens (matmul_cpu.c drives it):
 *   pack(P, X, n, cols, t0, t1)     writes tokens [t0, t1) of X (n x cols f32) into P (pack_bytes(n, cols) bytes,
 *                                   64-byte aligned); disjoint token ranges may be packed in parallel;
 *   run(..., r0, r1, t0, t1, S)     Y[t*ldy + r] for r0 <= r < r1, t0 <= t < t1 from P, with S the calling
 *                                   thread's scratch (scratch_bytes(cols) bytes, 64-byte aligned).
 * Range starts are multiples of row_align / tok_align (ends may be ragged at rows / n). Results are the same
 * for any such split (each output is one sum over the columns in a fixed order, which may depend on n and on the
 * token's place: the AMX bf16 GEMM sums a last tile of 1-10 tokens in its own order, amx_layout.h). */
typedef struct xpi_cpu_gemm {
  const char *name;          /* what it computes with, e.g. "amx-bf16" (reports, benchmarks) */
  int32_t tok_align, row_align;
  size_t (*pack_bytes)(int32_t n, int64_t cols);
  void (*pack)(void *P, const float *X, int32_t n, int64_t cols, int32_t t0, int32_t t1);
  size_t (*scratch_bytes)(int64_t cols);
  void (*run)(float *Y, int64_t ldy, const void *P, int32_t n, const void *W, const void *aux, int64_t cols,
              int64_t r0, int64_t r1, int32_t t0, int32_t t1, void *scratch);
  /* 0: the activations are used as given (f32; q8/q4: quant_format.h's int8 blocks, as every path). Else each
   * activation is first rounded to this many significant bits (bf16 terms: 8 per term), which moves each output
   * by at most 2^-act_bits * sum_c |x_c W[r, c]| more. */
  int act_bits;
  /* Optional (NULL: gather, then pack): pack with token t read from row rows[t] of X, the same bytes as pack of
   * the gathered rows. */
  void (*pack_rows)(void *P, const float *X, const int32_t *rows, int32_t n, int64_t cols, int32_t t0, int32_t t1);
  const xpi_cpu_form *form; /* optional (NULL: none; then pack_rows) */
} xpi_cpu_gemm;

typedef struct xpi_cpu_kernels {
  const char *isa;             /* "scalar", "avx2", "avxvnni", "avx512", "amx"; "auto" for the per-kernel choice */
  /* Per weight dtype (indexed by xpi_dtype; NULL where unsupported): the decode GEMV, correct for any n but made
   * for n < XPI_CPU_GEMM_MIN_N, and the prefill GEMM (NULL: the GEMV serves every n). gemv_isa / gemm names
   * say which table each came from (the "auto" table mixes them). */
  xpi_cpu_mm_fn gemv[8];
  const xpi_cpu_gemm *gemm[8];
  const char *gemv_isa[8];
  /* Per weight dtype: the batched-decode matmul for XPI_CPU_GEMM_MIN_N..smalln_max[dt] tokens (one token per
   * decoding sequence), run over row slices like the GEMV; NULL: the GEMM serves those tokens. Float weights:
   * the small-n kernel; q8/q4 (AMX table): the decode GEMV itself. mm_smalln.h says why and where each limit
   * comes from. */
  xpi_cpu_mm_fn smalln[8];
  int32_t smalln_max[8];
  const char *smalln_isa;
  float (*dot)(const float *a, const float *b, int64_t n);
  void (*axpy)(float *y, float a, const float *x, int64_t n);           /* y += a*x */
  void (*scale)(float *y, float a, int64_t n);                          /* y *= a */
  /* out = x * rsqrt(mean(x^2)+eps) * w, w in wdt (f32/bf16/f16) */
  void (*rmsnorm_row)(float *out, const float *x, const void *w, xpi_dtype wdt, int64_t d, float eps);
  void (*swiglu)(float *out, const float *gate, const float *up, int64_t n);
  /* out = gelu_tanh(gate) * up: 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))) u, torch's approximate="tanh" */
  void (*geglu)(float *out, const float *gate, const float *up, int64_t n);
  void (*softcap)(float *x, int64_t n, float cap);                      /* x = cap * tanh(x / cap); NaN stays */
  /* dst[i] = src[i] in dt (XPI_DT_F16 or XPI_DT_BF16), bit for bit as xpi_f32_to_f16 / xpi_f32_to_bf16 (NaN
   * payloads aside): the KV cache store */
  void (*to_half)(uint16_t *dst, const float *src, int64_t n, xpi_dtype dt);
  void (*attn_tile)(const xpi_cpu_attn_tile *t); /* causal attention, see above */
} xpi_cpu_kernels;

/* Element i of an f32/bf16/f16 array as f32; the pointer may be unaligned (weights live in the file mapping). */
static inline float xpi_cpu_load_elem(const void *p, xpi_dtype dt, int64_t i) {
  const unsigned char *b = (const unsigned char *)p;
  if (dt == XPI_DT_F32) {
    float f;
    memcpy(&f, b + 4 * i, 4);
    return f;
  }
  uint16_t h;
  memcpy(&h, b + 2 * i, 2);
  return dt == XPI_DT_BF16 ? xpi_bf16_to_f32(h) : xpi_f16_to_f32(h);
}

const xpi_cpu_kernels *xpi_cpu_kernels_scalar(void);
/* The table to use (dispatch.c): by default "auto", each kernel taken from the table known fastest for it on
 * this CPU; XPI_CPU_ISA=scalar|avx2|avxvnni|avx512|amx forces one whole table (tests, benchmarks). */
const xpi_cpu_kernels *xpi_cpu_kernels_best(void);

#endif
