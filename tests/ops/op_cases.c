/* The op-case list (op_cases.h): shapes are the awkward ones the backends' kernels branch on (odd dims, n = 1
 * and n = 7, GQA ratios 1..16, columns that are and are not multiples of the GEMVs' 128-column steps, rows too
 * few for the device's threads: split-K), dtypes f32/f16/bf16 and q8/q4 where the op takes weights. Inputs are
 * uniform in [-1, 1) unless a case says otherwise, which the bounds below assume. */
#include "op_cases.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define U OPC_U
#define MAXC 1200 /* rows the list may hold */

static op_case g_cases[MAXC];
static int g_n;

static const op_tol k_exact_gather = {0, 0, 0, "bit-identical: a gather plus an exact widening conversion"};
static const op_tol k_exact_add = {0, 0, 0, "bit-identical: one f32 add (or product) per element"};
static const op_tol k_exact_select = {0, 0, 0, "bit-identical: a selection of input values, no arithmetic"};
static const op_tol k_exact_fused = {0, 0, 0,
                                     "bit-identical: the fused form sums in the separate ops' order by construction "
                                     "(so model goldens do not depend on which a backend runs)"};
static const op_tol k_exact_replay = {0, 0, 0, "bit-identical: the same kernels on the same inputs"};

static op_case *add(xpi_op op, xpi_dtype dt) {
  op_case *c = &g_cases[g_n < MAXC ? g_n++ : MAXC - 1];
  memset(c, 0, sizeof *c);
  c->op = op, c->dt = dt, c->qscale = 1;
  return c;
}

/* A dot of cols terms |x|, |w| <= 1 summed in another order: <= 2 cols u sum|x w| <= 2 cols^2 u, plus the bias. */
static op_tol dot_tol(int cols) {
  return (op_tol){2.0 * cols * U * cols + 4 * U, 0, 0,
                  "f32 reassociation: a dot of cols terms in another order, 2 cols u sum|x w| (Higham 3.1), "
                  "sum|x w| <= cols"};
}

static const op_tol k_q8 = {0, 0, 2,
                            "q8/q4: the same weight quants and int8 activation codes (quant.h; every table and tier "
                            "reproduces xpi_quantize_act_scalar), exact int32 block dots, f32 block sums in another "
                            "order on both sides: 2 (nb + 3) u S"};
static const op_tol k_q4 = {0, 0, 10,
                            "q4: as q8, and q4 kernels may sum unsigned quants and take 8 d sx per block off, which "
                            "adds 16 |d| dx sum|xq| to S (test_q_prefill_tables.c)"};

static void matmul_rows(void) {
  /* 37 rows: the two-rows-a-sub-group GEMV's odd last row; 256 / 384 columns: an even / odd count of its 128-column
   * steps (67 and 16 take the portable GEMV); 13 x 37: the CPU kernels' row and column tails */
  static const int cols[] = {67, 256, 16, 384, 37};
  static const xpi_dtype dts[] = {XPI_DT_F32, XPI_DT_F16, XPI_DT_BF16};
  for (int ci = 0; ci < 5; ci++)
    for (int n = 1; n <= 7; n += 6)
      for (int di = 0; di < 3; di++)
        for (int bias = 0; bias < 2; bias++) {
          op_case *c = add(XPI_OP_MATMUL, dts[di]);
          c->n = n, c->rows = ci == 4 ? 13 : 37, c->cols = cols[ci], c->flags = bias ? OPC_BIAS : 0;
          c->tol = dot_tol(c->cols);
        }
  /* split-K decode shapes: too few rows for a device's hardware threads (and one with enough) */
  static const struct { int rows, cols; } sk[] = {{8, 4096}, {128, 1000}, {300, 2500}, {1024, 2048}, {4096, 256}};
  for (int si = 0; si < 5; si++)
    for (int di = 0; di < 3; di++)
      for (int op = 0; op < 2; op++) {
        op_case *c = add(op ? XPI_OP_MATMUL_ADD : XPI_OP_MATMUL, dts[di]);
        c->n = 1, c->rows = sk[si].rows, c->cols = sk[si].cols, c->flags = (si + di) % 2 ? OPC_BIAS : 0;
        c->tol = dot_tol(c->cols);
        c->tol.atol += 4 * U; /* matmul_add: the residual add */
        c->tol2 = k_exact_fused;
      }
  /* q8/q4: the GEMV (n 1), the batched decode GEMV (7) and the GEMM (33) over ragged and split-K shapes */
  static const struct { int rows, cols; } qs[] = {{37, 67}, {37, 32}, {37, 256}, {300, 1000}, {8, 4096}, {256, 768}};
  static const int qn[] = {1, 7, 33};
  for (int q = 0; q < 2; q++)
    for (int si = 0; si < 6; si++)
      for (int ni = 0; ni < 3; ni++) {
        op_case *c = add(XPI_OP_MATMUL, q ? XPI_DT_Q4 : XPI_DT_Q8);
        c->n = qn[ni], c->rows = qs[si].rows, c->cols = qs[si].cols, c->flags = (si + ni) % 2 ? OPC_BIAS : 0;
        c->tol = q ? k_q4 : k_q8;
        c->tol.atol = 4 * U; /* the bias add */
      }
}

/* matmul_multi (3 weights of 37/19/19 rows), matmul_glu (gate and up of 37 rows, weights times 4), matmul_add:
 * with and without the input's norm and biases; against the reference's composition, and bit for bit against
 * the same backend's separate ops. */
static void fused_rows(void) {
  static const int cols[] = {67, 384};
  static const xpi_dtype dts[] = {XPI_DT_F32, XPI_DT_F16, XPI_DT_BF16};
  for (int ci = 0; ci < 2; ci++)
    for (int n = 1; n <= 7; n += 6)
      for (int di = 0; di < 3; di++)
        for (int bias = 0; bias < 2; bias++)
          for (int norm = 0; norm < 2; norm++) {
            const double C = cols[ci], hs = norm ? sqrt(C) : 1.0;
            /* |h| <= |x| sqrt(cols) |nw| after the norm: the matmul bound scaled by sqrt(cols), plus the norm's */
            const double tol = (2 * C * U * C + 4 * U) * hs + (norm ? 8 * U * C * hs : 0);
            const unsigned f = (bias ? OPC_BIAS : 0) | (norm ? OPC_NORM : 0);
            op_case *c = add(XPI_OP_MATMUL_MULTI, dts[di]);
            c->n = n, c->rows = 37, c->cols = cols[ci], c->k = 3, c->flags = f;
            c->tol = (op_tol){tol, 0, 0,
                              "f32 reassociation of the dot (2 cols u sum|x w|), scaled by |h| <= sqrt(cols) after "
                              "the norm, plus the norm's own 8 cols u"};
            c->tol2 = k_exact_fused;
            for (int act = 0; act < 2 && !bias; act++) {
              /* gate within 4 tol (weights x4), |g| <= G = 4 cols hs, up within tol; activation slopes < 1.2 and
               * |act(g)| <= |g|, plus the element-wise ops' 32 u on values up to G cols hs */
              const double G = 4 * C * hs;
              c = add(XPI_OP_MATMUL_GLU, dts[di]);
              c->n = n, c->rows = 37, c->cols = cols[ci], c->flags = (norm ? OPC_NORM : 0) | (act ? OPC_GELU : 0);
              c->tol = (op_tol){1.2 * 4 * tol * C * hs + G * tol + 32 * U * G * C * hs, 0, 0,
                                "the gate's and up's dot bounds carried through the activation (slope < 1.2) and "
                                "the product, plus the element-wise op's 32 u"};
              c->tol2 = k_exact_fused;
            }
            if (!norm) {
              c = add(XPI_OP_MATMUL_ADD, dts[di]);
              c->n = n, c->rows = 37, c->cols = cols[ci], c->flags = f;
              c->tol = dot_tol(c->cols);
              c->tol.atol += 4 * U;
              c->tol2 = k_exact_fused;
            }
          }
}

/* The q8/q4 fused decode forms (n = 1; cols with a partial last block, 256 and 2048): bit for bit the same
 * backend's separate ops (rmsnorm, activation quantization + GEMV per matrix, the GLU or add), and against the
 * reference's composition within quant.h's activation-rounding bound on both sides. */
static void fused_q_rows(void) {
  static const int cols[] = {67, 256, 2048};
  for (int q = 0; q < 2; q++)
    for (int ci = 0; ci < 3; ci++)
      for (int v = 0; v < 4; v++) {
        const int bias = v & 1, norm = v >> 1;
        const double C = cols[ci], hs = norm ? sqrt(C) : 1.0;
        /* each side within sum_b (dx_b / 2) sum |d q| <= cols / 254 * |h| of the exact product of the quantized
         * weights (|w| <= 1, dx <= max|h| / 127): the norm's ulps may round an activation code the other way */
        const double tq = 2 * C / 254 * hs * (1 + 0x1p-10) + (2 * C * U * C + 4 * U) * hs;
        const op_tol tol = {tq, 0, 0,
                            "q8/q4: both sides within quant.h's activation-rounding bound (cols/254 |h|) of the exact "
                            "product, as the input's norm may round an int8 code the other way, plus the dot bound"};
        const xpi_dtype dt = q ? XPI_DT_Q4 : XPI_DT_Q8;
        op_case *c = add(XPI_OP_MATMUL_MULTI, dt);
        c->n = 1, c->rows = 37, c->cols = cols[ci], c->k = 3;
        c->flags = (bias ? OPC_BIAS : 0) | (norm ? OPC_NORM : 0), c->tol = tol, c->tol2 = k_exact_fused;
        if (!bias)
          for (int act = 0; act < 2; act++) {
            const double G = 4 * C * hs;
            c = add(XPI_OP_MATMUL_GLU, dt);
            c->n = 1, c->rows = 37, c->cols = cols[ci], c->flags = (norm ? OPC_NORM : 0) | (act ? OPC_GELU : 0);
            c->tol = (op_tol){1.2 * 4 * tq * C * hs + G * tq + 32 * U * G * C * hs, 0, 0,
                              "q8/q4: the bound above for gate (x4) and up, carried through the activation and the "
                              "product as in the f32 rows"};
            c->tol2 = k_exact_fused;
          }
        if (!norm) {
          c = add(XPI_OP_MATMUL_ADD, dt);
          c->n = 1, c->rows = 37, c->cols = cols[ci], c->flags = bias ? OPC_BIAS : 0;
          c->tol = tol, c->tol.atol += 4 * U, c->tol2 = k_exact_fused;
        }
      }
}

static void norm_rows(void) {
  static const xpi_dtype dts[] = {XPI_DT_F32, XPI_DT_F16, XPI_DT_BF16};
  static const int d[] = {67, 1024, 37};
  for (int di = 0; di < 3; di++) {
    op_case *c = add(XPI_OP_EMBED, dts[di]);
    c->n = 7, c->rows = 37, c->cols = 67, c->tol = k_exact_gather;
    for (int a = 0; a < 3; a++)
      for (int n = 1; n <= 7; n += 6)
        for (int res = 0; res < 2; res++) {
          c = add(XPI_OP_RMSNORM, dts[di]);
          c->n = n, c->cols = d[a], c->flags = res ? OPC_RESIDUAL : 0;
          c->tol = (op_tol){1e-6, 2.0 * d[a] * U + 4 * U, 0,
                            "f32 reassociation: the mean of squares summed in another order, 2 d u of the scale"};
          c->tol2 = k_exact_add;
        }
  }
}

static void rope_rows(void) {
  static const int hd[] = {64, 34, 10};
  for (int hi = 0; hi < 3; hi++)
    for (int n = 1; n <= 7; n += 6)
      for (int norm = 0; norm < 2; norm++)
        for (int lng = 0; lng < 2; lng++) {
          op_case *c = add(XPI_OP_ROPE, XPI_DT_F32);
          c->n = n, c->hq = hi == 2 ? 3 : 6, c->hk = hi == 2 ? 1 : 2, c->hd = hd[hi];
          c->flags = (norm ? OPC_NORM : 0) | (lng ? OPC_LONG : 0);
          c->tol = (op_tol){2e-5, 1e-5, 0,
                            "cos/sin of the same f32 angle: the CPU rounds double results, OpenCL's f32 cos/sin are "
                            "within 4 ulp; values O(1), up to ~8 after the head norms"};
        }
}

static op_tol attn_tol(int hd, double qm, double cap, int decode) {
  /* scores |q.k| <= hd: error <= 2 hd u hd scale; softmax is 1-Lipschitz to its weights' sum and outputs are convex
   * combinations of |v| <= 1; the softcap carries the error with slope <= 1 and adds its own (division and tanh,
   * <= 5 ulp): 16 u cap; a split-K decode merges 16 rescaled partial sums: 18 u more */
  return (op_tol){2.0 * hd * U * hd * qm / sqrt(hd) + 64 * U + 16 * U * cap + (decode ? 18 * U : 0), 0, 0,
                  "f32 reassociation of the scores (2 hd u hd scale) through softmax (1-Lipschitz) into convex "
                  "combinations of |v| <= 1, plus the softcap's and the split merge's own rounding"};
}

static void attention_rows(void) {
  static const xpi_attn_impl impls[] = {XPI_ATTN_SDPA, XPI_ATTN_EAGER, XPI_ATTN_FLASH};
  static const xpi_dtype kv[] = {XPI_DT_F32, XPI_DT_F16, XPI_DT_BF16};
  /* sliding windows 5 and 7 (inside the 20-token prefill, across its block boundary, and over a decode's cached
   * prefix), 20 (across the step's block boundary), 100 (beyond every context); softcaps 0.5 and 2 on q x 8 (scores
   * of several units, heavily capped) and 30 */
  static const int wins[] = {0, 5, 100, 7, 0, 20, 0};
  static const float caps[] = {0, 0, 0, 0.5f, 2.0f, 0, 30}, qms[] = {1, 1, 1, 8, 8, 1, 8};
  static const int hds[] = {64, 40};
  for (int vi = 0; vi < 7; vi++)
    for (int hi = 0; hi < 2; hi++)
      for (int ki = 0; ki < 3; ki++)
        for (int ii = 0; ii < 3; ii++) {
          if (ki == 2 && hi == 1) continue; /* bf16 caches at one head size */
          op_case *c = add(XPI_OP_ATTENTION, kv[ki]);
          c->hq = 6, c->hk = 2, c->hd = hds[hi], c->impl = impls[ii];
          c->window = wins[vi], c->softcap = caps[vi], c->qscale = qms[vi];
          c->tol = attn_tol(c->hd, qms[vi], caps[vi], 0);
        }
  /* decode (the split-K sdpa over a long context) at GQA ratios 1..16, with a window, a softcap, bf16 KV, and a
   * short context where most splits get no key */
  static const struct { int p, window; float cap, qm; xpi_dtype dt; } dc[] = {
      {4094, 0, 0, 1, XPI_DT_F32}, {4094, 1000, 0, 1, XPI_DT_F32}, {4094, 0, 2.0f, 8, XPI_DT_BF16},
      {100, 0, 0, 1, XPI_DT_F32}};
  for (int ci = 0; ci < 4; ci++)
    for (int r = 1; r <= 16; r *= 2) {
      op_case *c = add(XPI_OP_ATTENTION, dc[ci].dt);
      c->n = 1, c->hq = 2 * r, c->hk = 2, c->hd = 64, c->impl = XPI_ATTN_SDPA, c->pos = dc[ci].p;
      c->window = dc[ci].window, c->softcap = dc[ci].cap, c->qscale = dc[ci].qm, c->flags = OPC_DECODE;
      c->tol = attn_tol(64, dc[ci].qm, dc[ci].cap, 1);
    }
}

static void elementwise_rows(void) {
  op_case *c = add(XPI_OP_SWIGLU, XPI_DT_F32);
  c->n = 7, c->cols = 67;
  c->tol = (op_tol){1e-7, 16 * U, 0, "exp within 3 ulp (OpenCL) plus a division and two products: < 16 u relative"};
  c = add(XPI_OP_GEGLU, XPI_DT_F32);
  c->n = 7, c->cols = 67;
  c->tol = (op_tol){32 * 9 * U, 0, 0,
                    "tanh within 5 ulp (OpenCL) carried through 0.5 g (1 + t) u: 32 u (1 + |g|) |u|, |g| <= 8"};
  c = add(XPI_OP_SOFTCAP, XPI_DT_F32);
  c->n = 7, c->cols = 67, c->softcap = 5;
  c->tol = (op_tol){16 * 5 * U, 0, 0, "a division and tanh (<= 5 ulp) each side, times cap 5: 16 u cap"};
  c = add(XPI_OP_SCALE, XPI_DT_F32);
  c->n = 7, c->cols = 67, c->tol = k_exact_add;
  c = add(XPI_OP_ADD, XPI_DT_F32);
  c->n = 7, c->cols = 67, c->tol = k_exact_add;
}

static void sampling_rows(void) {
  static const struct { int rows, cols; unsigned f; } am[] = {
      {3, 4099, OPC_TIES}, {3, 4099, OPC_NONFINITE}, {4, 151936, OPC_TIES | OPC_NONFINITE}, {3, 5, OPC_TIES}};
  for (int i = 0; i < 4; i++) {
    op_case *c = add(XPI_OP_ARGMAX, XPI_DT_F32);
    c->n = am[i].rows, c->cols = am[i].cols, c->flags = am[i].f, c->tol = k_exact_select;
  }
  static const int ks[] = {5, 1, 300};
  for (int i = 0; i < 4; i++) {
    op_case *c = add(XPI_OP_TOPK, XPI_DT_F32);
    c->n = 3, c->cols = i < 3 ? 4099 : 301, c->k = i < 3 ? ks[i] : 37, c->flags = OPC_TIES;
    c->tol = (op_tol){0, 1e-6, 0,
                      "the normaliser's sum of exp: exp within 3 ulp, a compensated sum per work-item and 6 pairwise "
                      "levels: < 12 u relative (the max is a selection: exact within it)"};
    c->tol2 = k_exact_select;
  }
  op_case *c = add(XPI_OP_TOPK, XPI_DT_F32);
  c->n = 3, c->cols = 4099, c->k = 5, c->flags = OPC_NONFINITE, c->tol = (op_tol){0, 1e-6, 0, "as above"};
  c->tol2 = k_exact_select;
}

static const op_tol k_moe_float = {1e-4, 1e-5, 0,
                                   "expert rows are dots of 67 terms in another order: 2 C u sum|terms| ~ 8e-6 of "
                                   "the terms' magnitude (<= 67)"};

static void moe_rows(void) {
  for (int norm = 0; norm < 2; norm++)
    for (int k = 1; k <= 3; k++)
      for (int nf = 0; nf < 2; nf++) {
        op_case *c = add(XPI_OP_MOE_ROUTE, XPI_DT_F32);
        c->n = 9, c->hq = 7, c->k = k, c->flags = (norm ? OPC_NORM_TOPK : 0) | (nf ? OPC_NONFINITE : 0) | OPC_TIES;
        c->tol = (op_tol){1e-6, 0, 0, "the same f32 softmax in the same order; exp may differ by an ulp or two"};
      }
  static const xpi_dtype dts[] = {XPI_DT_F32, XPI_DT_F16, XPI_DT_BF16, XPI_DT_Q8, XPI_DT_Q4};
  static const int ns[] = {1, 3, 7, 40, 150};
  for (int di = 0; di < 5; di++)
    for (int ni = 0; ni < 5; ni++)
      for (int ik = 1; ik <= 2; ik++) {
        op_case *c = add(XPI_OP_MOE_MATMUL, dts[di]);
        c->n = ns[ni], c->rows = 37, c->cols = 67, c->hq = 5, c->k = 2, c->hk = ik;
        c->tol = di < 3 ? k_moe_float : di == 3 ? k_q8 : k_q4;
      }
  for (int perm = 0; perm < 2; perm++)
    for (int sh = 0; sh < 2; sh++) {
      op_case *c = add(XPI_OP_MOE_COMBINE, XPI_DT_F32);
      c->n = 7, c->k = 2, c->cols = 19, c->flags = (perm ? OPC_POS : 0) | (sh ? OPC_SHARED : 0);
      c->tol = (op_tol){1e-6, 0, 0, "the same f32 weighted sum in the same order, a sigmoid within an ulp or two"};
    }
  /* moe_mlp: 120 tokens of top-3 over 7 experts whose slot counts are 0, 1, 3, 5, 20, 70 and the rest (every
   * kernel choice: GEMV, small-n, GEMM, token chunks), intermediate sizes 48 and 40 */
  for (int di = 0; di < 5; di++)
    for (int I = 48; I >= 40; I -= 8) {
      op_case *c = add(XPI_OP_MOE_MLP, dts[di]);
      c->n = 120, c->hq = 7, c->k = 3, c->rows = I, c->cols = 96;
      c->tol = di < 3 ? (op_tol){2e-4, 1e-4, 0,
                                 "two layers of f32 dots (96 and <= 48 terms, weights <= 0.2) in another order, "
                                 "through silu: 2 (96 + 48) u of the magnitudes (< 20)"}
                      : (op_tol){5e-3, 0, 0,
                                 "q8/q4: the down projection quantizes the swiglu output, which differs by f32 "
                                 "reassociation, so an int8 code may round the other way (quant.h): |w| dx <= "
                                 "0.2 * amax/127 per flip, a few flips per row"};
      c->tol2 = k_exact_fused;
    }
}

static void capture_rows(void) {
  op_case *c = add(XPI_OP_CAPTURE, XPI_DT_BF16);
  c->n = 1, c->rows = 29, c->cols = 48;
  c->tol = dot_tol(48); /* the replay against the reference's direct ops */
  c->tol2 = k_exact_replay;
}

const op_case *op_cases(int *count) {
  if (!g_n) {
    norm_rows();
    matmul_rows();
    fused_rows();
    fused_q_rows();
    rope_rows();
    attention_rows();
    elementwise_rows();
    sampling_rows();
    moe_rows();
    capture_rows();
  }
  *count = g_n < MAXC ? g_n : 0; /* a full table dropped rows: MAXC must grow */
  return g_cases;
}

const op_tol *op_case_tol2(const op_case *c, const char *variant) {
  return c->except && !strncmp(variant, c->except, strlen(c->except)) ? &c->tol2x : &c->tol2;
}

void op_case_describe(const op_case *c, char *out, size_t cap) {
  int w = snprintf(out, cap, "%s %s n=%d", xpi_op_name(c->op), xpi_dtype_name(c->dt), c->n);
  if (w < 0 || (size_t)w >= cap) return;
  out += w, cap -= (size_t)w;
  if (c->rows || c->cols) w = snprintf(out, cap, " [%d x %d]", c->rows, c->cols);
  else w = 0;
  if (w < 0 || (size_t)w >= cap) return;
  out += w, cap -= (size_t)w;
  if (c->hq) w = snprintf(out, cap, " hq=%d hk=%d hd=%d", c->hq, c->hk, c->hd);
  else w = 0;
  if (w < 0 || (size_t)w >= cap) return;
  out += w, cap -= (size_t)w;
  snprintf(out, cap, "%s%s%s%s%s%s%s%s%s%s k=%d window=%d softcap=%g impl=%d pos=%d",
           c->flags & OPC_BIAS ? " bias" : "", c->flags & OPC_NORM ? " norm" : "",
           c->flags & OPC_RESIDUAL ? " residual" : "", c->flags & OPC_LONG ? " long_sel" : "",
           c->flags & OPC_NONFINITE ? " nonfinite" : "", c->flags & OPC_NORM_TOPK ? " norm_topk" : "",
           c->flags & OPC_SHARED ? " shared" : "", c->flags & OPC_POS ? " positions" : "",
           c->flags & OPC_GELU ? " gelu" : "", c->flags & OPC_DECODE ? " decode" : "", c->k, c->window,
           (double)c->softcap, (int)c->impl, c->pos);
}
