/* Every case of the op-case list (op_cases.c) on one backend under test against the reference, the CPU
 * backend's plain path (use_kernels 0: the scalar table, unfused steps; itself checked against double precision
 * by test_cpu_ops.c and test_moe_ops.c). Both get the same inputs (a generator seeded per case); each output
 * is held to the case's tolerance, whose reason the failure prints. Fused ops are also held to the same
 * backend's composition of the separate ops (tol2). An op the backend lacks (xpi_backend_supports) is skipped
 * with the reason printed.
 *
 * The backend under test: argv[1] or XPI_TEST_BACKEND, "cpu" (the auto table), "cpu:<table>" (scalar, avx2,
 * avxvnni, avx512, amx: XPI_CPU_ISA forces it; a table this CPU lacks skips the test, exit 77), "xpu" or
 * "xpu:<tier>" (portable: XPI_XPU_TIER forces it; tuned: fails unless the device selected it; dpas: skips where the
 * device could not build it; dpas-emu16, dpas-emu8: the tuned tier with the DPAS kernels of that sub-group size,
 * their matrix builtins emulated (tests/xpu_intel/dpas_emu.h), where no runtime has the builtins).
 * XPI_OP_FILTER=text runs only the cases whose description contains text.
 *
 * That it finds at least what the hand-written tests find was shown by breaking kernels on purpose (scratch
 * changes, reverted):
 *   - the AVX2 RMSNorm's scalar tail one element short (kernels_avx2.c, `i + 1 < d`): test_cpu_ops fails; here the
 *     auto and avx2 entries fail 24 rmsnorm cases (d = 67, 37) and the 10 matmul_multi cases with the input's norm
 *     whose reference differs; the scalar entry passes (its table is intact);
 *   - a wrong constant in the OpenCL gelu (kernels/common/xpi_cl.h, sqrt(2/pi) as 0.898): test_xpu_ops fails its
 *     geglu check; xpu/test_backend_ops_portable fails the geglu case;
 *   - a wrong fused op (the CPU's matmul_glu running swiglu for geglu on its kernel path): no hand-written test
 *     fails; every CPU entry here fails the 24 geglu matmul_glu cases against its own composition.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../xpu/xpu_test_util.h"
#include "check.h"
#include "op_cases.h"
#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/quant.h"
#include "ops/half.h"
#include "ops/ops.h"
#include "ops/backend_xpu.h"
#if XPI_TEST_HAVE_XPU
#include "../xpu_intel/dpas_emu.h"
#include "ops/xpu/xpu_backend.h"
#endif

/* ------------------------------------------------------------------ inputs, buffers, results */

static uint64_t g_rng;
static float frand(void) { /* uniform in [-1, 1) */
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((g_rng >> 40) & 0xffffff) / (float)(1 << 23) - 1.0f;
}

enum { A_MAIN, A_AUX, A_INT, A_SELF, A_QB };

typedef struct arr {
  const char *name;
  int kind;
  float *v; /* A_INT: int32 */
  size_t n;
} arr;

/* One backend's run of a case: what it allocated (freed at the end) and what it read back. */
typedef struct ctx {
  xpi_backend *be;
  int ref;
  void *dev[64];
  int ndev;
  xpi_weight *w[24];
  int nw;
  xpi_experts *ex[3];
  int nex;
  xpi_kv *kv;
  void *host[96];
  int nhost;
  arr a[8];
  int na;
  const char *skip; /* a reason the backend cannot run this case */
} ctx;

static void *hkeep(ctx *cx, void *p) {
  if (cx->nhost < 96) cx->host[cx->nhost++] = p;
  return p;
}
static float *randv(ctx *cx, size_t n, float scale) {
  float *v = hkeep(cx, malloc(n * sizeof *v + 4));
  for (size_t i = 0; i < n; i++) v[i] = frand() * scale;
  return v;
}
/* Backend memory holding bytes of host (NULL: zeros). */
static void *dbuf(ctx *cx, const void *host, size_t bytes) {
  void *p = xt_up(cx->be, NULL, bytes ? bytes : 4);
  if (!p) return NULL;
  if (cx->ndev < 64) cx->dev[cx->ndev++] = p;
  if (host) CHECK_OK(cx->be->ops->write(cx->be, p, host, bytes));
  else {
    void *z = calloc(1, bytes ? bytes : 4);
    CHECK_OK(cx->be->ops->write(cx->be, p, z, bytes ? bytes : 4));
    free(z);
  }
  return p;
}
/* A weight [rows, cols] of dtype dt from random values times scale (q8/q4: placed from bf16). */
static xpi_weight *weight(ctx *cx, xpi_dtype dt, int64_t rows, int64_t cols, float scale) {
  const xpi_dtype sdt = dt == XPI_DT_Q8 || dt == XPI_DT_Q4 ? XPI_DT_BF16 : dt;
  float *v = randv(cx, (size_t)(rows * cols), scale);
  void *src = hkeep(cx, xt_host_weight(v, (size_t)(rows * cols), sdt));
  xpi_weight *w = hkeep(cx, calloc(1, sizeof *w));
  CHECK_OK(cx->be->ops->weight_create(cx->be, w, src, sdt, rows, cols, dt));
  if (cx->nw < 24) cx->w[cx->nw++] = w;
  return w;
}
static xpi_experts *experts(ctx *cx, xpi_dtype dt, int n, int64_t rows, int64_t cols, float scale) {
  const xpi_dtype sdt = dt == XPI_DT_Q8 || dt == XPI_DT_Q4 ? XPI_DT_BF16 : dt;
  const void *src[16];
  for (int x = 0; x < n; x++)
    src[x] = hkeep(cx, xt_host_weight(randv(cx, (size_t)(rows * cols), scale), (size_t)(rows * cols), sdt));
  xpi_experts *e = hkeep(cx, calloc(1, sizeof *e));
  CHECK_OK(xpi_experts_create(cx->be, e, src, sdt, n, rows, cols, dt));
  if (cx->nex < 3) cx->ex[cx->nex++] = e;
  return e;
}
/* Reads count floats (or int32) at dev into a new result array. */
static float *keep(ctx *cx, const char *name, int kind, const void *dev, size_t count) {
  float *h = calloc(count + 1, 4);
  if (dev) xt_down(cx->be, h, dev, count * 4);
  if (cx->na < 8) cx->a[cx->na++] = (arr){name, kind, h, count};
  else free(h);
  return h;
}
static void ctx_free(ctx *cx) {
  xpi_backend *be = cx->be;
  for (int i = 0; i < cx->ndev; i++) be->ops->free(be, cx->dev[i]);
  for (int i = 0; i < cx->nw; i++) be->ops->weight_free(be, cx->w[i]);
  for (int i = 0; i < cx->nex; i++) xpi_experts_free(be, cx->ex[i]);
  if (cx->kv) be->ops->kv_free(be, cx->kv);
  for (int i = 0; i < cx->nhost; i++) free(cx->host[i]);
  for (int i = 0; i < cx->na; i++) free(cx->a[i].v);
}

/* The q8/q4 bound of every output y[t, r] = x[t] . w[r] (the reference's placement: quant.h's plain layout). */
static void keep_qbound(ctx *cx, const xpi_weight *w, const float *x, int n, int64_t rows, int in_stride_rows) {
  float *b = keep(cx, "qbound", A_QB, NULL, (size_t)n * (size_t)rows);
  for (int t = 0; t < n; t++)
    for (int64_t r = 0; r < rows; r++) b[(size_t)t * rows + r] = (float)xt_q_bound(w, r, x + (size_t)t * in_stride_rows * w->cols);
}

static int is_q(xpi_dtype dt) { return dt == XPI_DT_Q8 || dt == XPI_DT_Q4; }

/* ------------------------------------------------------------------ one runner per op */

static void run_embed(ctx *cx, const op_case *c) {
  static const int32_t ids[7] = {0, 36, 5, 5, 17, 1, 30};
  xpi_weight *t = weight(cx, c->dt, c->rows, c->cols, 1);
  void *di = dbuf(cx, ids, sizeof ids), *out = dbuf(cx, NULL, (size_t)c->n * c->cols * 4);
  CHECK_OK(cx->be->ops->embed(cx->be, out, t, di, c->n));
  keep(cx, "out", A_MAIN, out, (size_t)c->n * c->cols);
}

static void run_rmsnorm(ctx *cx, const op_case *c) {
  const size_t cnt = (size_t)c->n * c->cols;
  float *x = randv(cx, cnt, 1), *r = randv(cx, cnt, 1);
  xpi_weight *w = weight(cx, c->dt, 1, c->cols, 1);
  void *dx = dbuf(cx, x, cnt * 4), *dr = dbuf(cx, r, cnt * 4), *out = dbuf(cx, NULL, cnt * 4);
  CHECK_OK(cx->be->ops->rmsnorm(cx->be, out, dx, c->flags & OPC_RESIDUAL ? dr : NULL, w, c->n, c->cols, 1e-6f));
  keep(cx, "out", A_MAIN, out, cnt);
  keep(cx, "residual stream", A_AUX, dx, cnt);
}

static void run_matmul(ctx *cx, const op_case *c) {
  xpi_weight *w = weight(cx, c->dt, c->rows, c->cols, 1), *b = weight(cx, XPI_DT_BF16, 1, c->rows, 1);
  float *x = randv(cx, (size_t)c->n * c->cols, 1);
  for (int k = 0; is_q(c->dt) && k < c->n * c->cols; k++) x[k] *= (float)(1 + k % c->cols / 32 % 7); /* block scales differ */
  void *dx = dbuf(cx, x, (size_t)c->n * c->cols * 4), *out = dbuf(cx, NULL, (size_t)c->n * c->rows * 4);
  CHECK_OK(cx->be->ops->matmul(cx->be, out, dx, w, c->flags & OPC_BIAS ? b : NULL, c->n));
  keep(cx, "out", A_MAIN, out, (size_t)c->n * c->rows);
  if (cx->ref && is_q(c->dt)) keep_qbound(cx, w, x, c->n, c->rows, 1);
}

/* x += in @ w^T (+ b) fused, then the same as matmul and add */
static void run_matmul_add(ctx *cx, const op_case *c) {
  xpi_weight *w = weight(cx, c->dt, c->rows, c->cols, 1), *b = weight(cx, XPI_DT_BF16, 1, c->rows, 1);
  const size_t no = (size_t)c->n * c->rows;
  float *x = randv(cx, (size_t)c->n * c->cols, 1), *x0 = randv(cx, no, 1);
  const xpi_weight *bias = c->flags & OPC_BIAS ? b : NULL;
  void *dx = dbuf(cx, x, (size_t)c->n * c->cols * 4), *o = dbuf(cx, x0, no * 4), *tmp = dbuf(cx, NULL, no * 4);
  void *o2 = dbuf(cx, x0, no * 4), *t2 = dbuf(cx, NULL, no * 4);
  CHECK_OK(cx->be->ops->matmul_add(cx->be, o, tmp, dx, w, bias, c->n));
  keep(cx, "out", A_MAIN, o, no);
  CHECK_OK(cx->be->ops->matmul(cx->be, t2, dx, w, bias, c->n));
  CHECK_OK(cx->be->ops->add(cx->be, o2, t2, (int64_t)no));
  keep(cx, "composition matmul + add", A_SELF, o2, no);
}

/* h = x, or rmsnorm(x) into hbuf: the separate ops' input of the fused forms */
static const float *sep_input(ctx *cx, const op_case *c, const float *dx, float *hbuf, const xpi_weight *nw) {
  if (!(c->flags & OPC_NORM)) return dx;
  CHECK_OK(cx->be->ops->rmsnorm(cx->be, hbuf, (float *)dx, NULL, nw, c->n, c->cols, 1e-6f));
  return hbuf;
}

static void run_matmul_multi(ctx *cx, const op_case *c) {
  const int rows[3] = {c->rows, 19, 19}, n = c->n, cols = c->cols;
  xpi_weight *w[3], *b[3];
  for (int j = 0; j < 3; j++) w[j] = weight(cx, c->dt, rows[j], cols, 1), b[j] = weight(cx, XPI_DT_BF16, 1, rows[j], 1);
  xpi_weight *nw = weight(cx, is_q(c->dt) ? XPI_DT_BF16 : c->dt, 1, cols, 1); /* norm weights stay float */
  float *x = randv(cx, (size_t)n * cols, 1);
  void *dx = dbuf(cx, x, (size_t)n * cols * 4), *h = dbuf(cx, NULL, (size_t)n * cols * 4);
  float *outs[3], *seps[3];
  size_t tot = 0;
  for (int j = 0; j < 3; j++) {
    outs[j] = dbuf(cx, NULL, (size_t)n * rows[j] * 4), seps[j] = dbuf(cx, NULL, (size_t)n * rows[j] * 4);
    tot += (size_t)n * rows[j];
  }
  const xpi_weight *ws[3] = {w[0], w[1], w[2]}, *bs[3] = {b[0], b[1], b[2]};
  CHECK_OK(cx->be->ops->matmul_multi(cx->be, 3, outs, dx, c->flags & OPC_NORM ? nw : NULL, 1e-6f, h, ws,
                                     c->flags & OPC_BIAS ? bs : NULL, n));
  float *fused = keep(cx, "out", A_MAIN, NULL, tot);
  for (int j = 0, o = 0; j < 3; o += n * rows[j], j++) xt_down(cx->be, fused + o, outs[j], (size_t)n * rows[j] * 4);
  void *h2 = dbuf(cx, NULL, (size_t)n * cols * 4);
  const float *in = sep_input(cx, c, dx, h2, nw);
  for (int j = 0; j < 3; j++) CHECK_OK(cx->be->ops->matmul(cx->be, seps[j], in, w[j], c->flags & OPC_BIAS ? b[j] : NULL, n));
  float *comp = keep(cx, "composition rmsnorm + matmul x3", A_SELF, NULL, tot);
  for (int j = 0, o = 0; j < 3; o += n * rows[j], j++) xt_down(cx->be, comp + o, seps[j], (size_t)n * rows[j] * 4);
}

static void run_matmul_glu(ctx *cx, const op_case *c) {
  const int n = c->n, cols = c->cols, f = c->rows;
  xpi_weight *gate = weight(cx, c->dt, f, cols, 4), *up = weight(cx, c->dt, f, cols, 1);
  xpi_weight *nw = weight(cx, is_q(c->dt) ? XPI_DT_BF16 : c->dt, 1, cols, 1); /* norm weights stay float */
  float *x = randv(cx, (size_t)n * cols, 1);
  const xpi_glu_act act = c->flags & OPC_GELU ? XPI_GLU_GELU_TANH : XPI_GLU_SILU;
  void *dx = dbuf(cx, x, (size_t)n * cols * 4), *h = dbuf(cx, NULL, (size_t)n * cols * 4);
  void *out = dbuf(cx, NULL, (size_t)n * f * 4), *tmp = dbuf(cx, NULL, (size_t)n * f * 4);
  CHECK_OK(cx->be->ops->matmul_glu(cx->be, out, tmp, dx, c->flags & OPC_NORM ? nw : NULL, 1e-6f, h, gate, up, act, n));
  keep(cx, "out", A_MAIN, out, (size_t)n * f);
  void *h2 = dbuf(cx, NULL, (size_t)n * cols * 4), *g = dbuf(cx, NULL, (size_t)n * f * 4), *u = dbuf(cx, NULL, (size_t)n * f * 4);
  const float *in = sep_input(cx, c, dx, h2, nw);
  CHECK_OK(cx->be->ops->matmul(cx->be, g, in, gate, NULL, n));
  CHECK_OK(cx->be->ops->matmul(cx->be, u, in, up, NULL, n));
  if (act == XPI_GLU_GELU_TANH) CHECK_OK(cx->be->ops->geglu(cx->be, g, g, u, n, f));
  else CHECK_OK(cx->be->ops->swiglu(cx->be, g, g, u, n, f));
  keep(cx, "composition matmul x2 + glu", A_SELF, g, (size_t)n * f);
}

static void run_rope(ctx *cx, const op_case *c) {
  static const int32_t pos[7] = {0, 1, 2, 1000, 4097, 7, 4095}, sel[7] = {1, 0, 0, 1, 1, 0, 1};
  const int n = c->n, hq = c->hq, hk = c->hk, hd = c->hd;
  xpi_rope_params rp = {.type = XPI_ROPE_DEFAULT, .theta = hd == 10 ? 1e4f : 1e6f, .head_dim = hd};
  float inv[128];
  xpi_rope_inv_freq(&rp, inv);
  for (int i = 0; i < hd / 2; i++) inv[hd / 2 + i] = inv[i] / (float)(1 + i); /* longrope's second table */
  xpi_weight *qn = weight(cx, XPI_DT_BF16, 1, hd, 1), *kn = weight(cx, XPI_DT_F32, 1, hd, 1);
  float *q = randv(cx, (size_t)n * hq * hd, 1), *k = randv(cx, (size_t)n * hk * hd, 1);
  void *dq = dbuf(cx, q, (size_t)n * hq * hd * 4), *dk = dbuf(cx, k, (size_t)n * hk * hd * 4);
  void *dpos = dbuf(cx, pos, sizeof pos), *dsel = dbuf(cx, sel, sizeof sel), *dinv = dbuf(cx, inv, (size_t)hd * 4);
  if (c->flags & OPC_LONG) rp.long_sel = dsel;
  const int norm = c->flags & OPC_NORM;
  CHECK_OK(cx->be->ops->rope(cx->be, dq, dk, dpos, n, hq, hk, &rp, dinv, norm ? qn : NULL, norm ? kn : NULL, 1e-6f));
  keep(cx, "q", A_MAIN, dq, (size_t)n * hq * hd);
  keep(cx, "k", A_MAIN, dk, (size_t)n * hk * hd);
}

/* Three sequences in a paged cache (blocks of 16 in scrambled order, layer 1 of 2): step 1 prefills 7 tokens of
 * sequence 0 and 3 of sequence 1; step 2 decodes one token of each and prefills 20 of sequence 2 (listed first).
 * The reference runs eager. */
static void run_attention_steps(ctx *cx, const op_case *c) {
  enum { MB = 3, NB = 9 };
  const int hq = c->hq, hk = c->hk, hd = c->hd;
  static const int32_t tables[3 * MB] = {4, 8, 1, 0, 6, 3, 7, 2, 5};
  static const int32_t pos1[10] = {0, 1, 2, 3, 4, 5, 6, 0, 1, 2}, seq1[10] = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1};
  int32_t pos2[22], seq2[22];
  for (int i = 0; i < 20; i++) pos2[i] = i, seq2[i] = 2;
  pos2[20] = 7, seq2[20] = 0, pos2[21] = 3, seq2[21] = 1;
  CHECK_OK(cx->be->ops->kv_create(cx->be, 2, NB, 16, hk, hd, c->dt, &cx->kv));
  if (!cx->kv) return;
  void *dtab = dbuf(cx, tables, sizeof tables);
  const xpi_attn_params ap = {1.0f / sqrtf((float)hd), c->softcap, c->window, cx->ref ? XPI_ATTN_EAGER : c->impl};
  float *all = keep(cx, "out", A_MAIN, NULL, (size_t)32 * hq * hd);
  for (int step = 0, o = 0; step < 2; step++) {
    const int n = step == 0 ? 10 : 22;
    float *q = randv(cx, (size_t)n * hq * hd, c->qscale), *k = randv(cx, (size_t)n * hk * hd, 1);
    float *v = randv(cx, (size_t)n * hk * hd, 1);
    void *dq = dbuf(cx, q, (size_t)n * hq * hd * 4), *dk = dbuf(cx, k, (size_t)n * hk * hd * 4);
    void *dv = dbuf(cx, v, (size_t)n * hk * hd * 4), *out = dbuf(cx, NULL, (size_t)n * hq * hd * 4);
    void *dp = dbuf(cx, step ? pos2 : pos1, (size_t)n * 4), *ds = dbuf(cx, step ? seq2 : seq1, (size_t)n * 4);
    const xpi_kv_map map = {dp, ds, dtab, MB};
    CHECK_OK(cx->be->ops->attention(cx->be, out, dq, dk, dv, cx->kv, 1, &map, n, hq, hk, hd, &ap));
    xt_down(cx->be, all + o, out, (size_t)n * hq * hd * 4);
    o += n * hq * hd;
  }
}

/* Decode steps at positions P and P + 1 over a cache of P positions (256 blocks of 16, scrambled; entries before
 * a sliding window -1), filled first by one step of all P tokens with a window of 1 (stores the keys and values at
 * linear cost). The reference runs eager, the backend its default (sdpa: the split-K decode kernel on an XPU). */
static void run_attention_decode(ctx *cx, const op_case *c) {
  enum { BS = 16, MB = 256, NB = MB + 1 };
  const int hq = c->hq, hk = c->hk, hd = c->hd, P = c->pos, win = c->window;
  int32_t full[MB], cut[MB];
  for (int b = 0; b < MB; b++) {
    full[b] = (b * 7 + 3) % NB;
    cut[b] = win > 0 && b * BS + BS - 1 < P - win + 1 ? -1 : full[b];
  }
  CHECK_OK(cx->be->ops->kv_create(cx->be, 1, NB, BS, hk, hd, c->dt, &cx->kv));
  if (!cx->kv) return;
  void *dfull = dbuf(cx, full, sizeof full), *dcut = dbuf(cx, cut, sizeof cut);
  { /* the fill: P tokens of sequence 0, one query head a KV head, each attending to itself only */
    int32_t *pos = hkeep(cx, malloc((size_t)P * 4)), *seq = hkeep(cx, calloc((size_t)P, 4));
    for (int i = 0; i < P; i++) pos[i] = i;
    float *k = randv(cx, (size_t)P * hk * hd, 1), *v = randv(cx, (size_t)P * hk * hd, 1);
    void *dq = dbuf(cx, NULL, (size_t)P * hk * hd * 4), *dk = dbuf(cx, k, (size_t)P * hk * hd * 4);
    void *dv = dbuf(cx, v, (size_t)P * hk * hd * 4), *out = dbuf(cx, NULL, (size_t)P * hk * hd * 4);
    void *dp = dbuf(cx, pos, (size_t)P * 4), *ds = dbuf(cx, seq, (size_t)P * 4);
    const xpi_kv_map map = {dp, ds, dfull, MB};
    const xpi_attn_params ap = {1.0f, 0, 1, XPI_ATTN_SDPA};
    CHECK_OK(cx->be->ops->attention(cx->be, out, dq, dk, dv, cx->kv, 0, &map, P, hk, hk, hd, &ap));
  }
  const xpi_attn_params ap = {1.0f / sqrtf((float)hd), c->softcap, win, cx->ref ? XPI_ATTN_EAGER : c->impl};
  float *all = keep(cx, "out", A_MAIN, NULL, (size_t)2 * hq * hd);
  for (int step = 0; step < 2; step++) {
    const int32_t pos = P + step, seq = 0;
    float *q = randv(cx, (size_t)hq * hd, c->qscale), *k = randv(cx, (size_t)hk * hd, 1), *v = randv(cx, (size_t)hk * hd, 1);
    void *dq = dbuf(cx, q, (size_t)hq * hd * 4), *dk = dbuf(cx, k, (size_t)hk * hd * 4), *dv = dbuf(cx, v, (size_t)hk * hd * 4);
    void *dp = dbuf(cx, &pos, 4), *ds = dbuf(cx, &seq, 4), *out = dbuf(cx, NULL, (size_t)hq * hd * 4);
    const xpi_kv_map map = {dp, ds, dcut, MB};
    CHECK_OK(cx->be->ops->attention(cx->be, out, dq, dk, dv, cx->kv, 0, &map, 1, hq, hk, hd, &ap));
    xt_down(cx->be, all + (size_t)step * hq * hd, out, (size_t)hq * hd * 4);
  }
}

static void run_elementwise(ctx *cx, const op_case *c) {
  const size_t cnt = (size_t)c->n * c->cols;
  float *g = randv(cx, cnt, 8), *u = randv(cx, cnt, 1); /* g over [-8, 8]: the activations' curved range */
  void *dg = dbuf(cx, g, cnt * 4), *du = dbuf(cx, u, cnt * 4), *out = dbuf(cx, NULL, cnt * 4);
  xpi_backend *be = cx->be;
  switch (c->op) {
    case XPI_OP_SWIGLU: CHECK_OK(be->ops->swiglu(be, out, dg, du, c->n, c->cols)); break;
    case XPI_OP_GEGLU: CHECK_OK(be->ops->geglu(be, out, dg, du, c->n, c->cols)); break;
    case XPI_OP_SOFTCAP: CHECK_OK(be->ops->softcap(be, dg, (int64_t)cnt, c->softcap)); break;
    case XPI_OP_SCALE: CHECK_OK(be->ops->scale(be, dg, (int64_t)cnt, 0.37f)); break;
    default: CHECK_OK(be->ops->add(be, dg, du, (int64_t)cnt)); break;
  }
  if (c->op != XPI_OP_SWIGLU && c->op != XPI_OP_GEGLU) out = dg; /* the in-place ops */
  keep(cx, "out", A_MAIN, out, cnt);
}

/* argmax/topk inputs: ties across and inside blocks (lowest index wins), the first and last columns, and rows
 * holding NaN / +-inf */
static float *sampling_input(ctx *cx, const op_case *c) {
  const int R = c->n, C = c->cols;
  float *x = randv(cx, (size_t)R * C, 1);
  if (C == 5) { /* a short row: ties of the maximum, all equal, the last column */
    static const float s[15] = {1, 5, 5, 2, 0, -1, -2, -3, -1, -4, 0, 0, 0, 0, 7};
    memcpy(x, s, sizeof s);
  } else if (c->op == XPI_OP_TOPK && (c->flags & OPC_TIES)) {
    for (size_t i = 0; i < (size_t)R * C; i++) x[i] = roundf(x[i] * 40) / 8; /* many equal values */
  } else if (c->flags & OPC_TIES) {
    x[17] = x[C - 99] = 3.0f;                              /* row 0: a tie across blocks */
    x[(size_t)C + C - 1] = 2.5f;                           /* row 1: the last column */
    x[2 * (size_t)C] = 2.0f, x[2 * (size_t)C + 9] = x[2 * (size_t)C + 3] = 1.5f; /* row 2: the first column */
    if (R > 3) x[3 * (size_t)C + C - 2] = x[3 * (size_t)C + C - 3] = x[3 * (size_t)C + 5] = 2.0f;
  }
  if (c->flags & OPC_NONFINITE) {
    if (R > 3) x[3 * (size_t)C + 77777 % C] = NAN;
    else {
      x[C - 2] = NAN, x[(size_t)C + 64] = INFINITY;
      if (R > 2) x[2 * (size_t)C + 1] = -INFINITY;
    }
  }
  return x;
}

static void run_argmax(ctx *cx, const op_case *c) {
  float *x = sampling_input(cx, c);
  void *dx = dbuf(cx, x, (size_t)c->n * c->cols * 4), *out = dbuf(cx, NULL, (size_t)c->n * 4);
  CHECK_OK(cx->be->ops->argmax(cx->be, out, dx, c->n, c->cols));
  keep(cx, "ids", A_INT, out, (size_t)c->n);
}

static void run_topk(ctx *cx, const op_case *c) {
  const int R = c->n, K = c->k;
  float *x = sampling_input(cx, c);
  void *dx = dbuf(cx, x, (size_t)R * c->cols * 4), *ids = dbuf(cx, NULL, (size_t)R * K * 4);
  void *vals = dbuf(cx, NULL, (size_t)R * K * 4), *norm = dbuf(cx, NULL, (size_t)R * 8);
  CHECK_OK(cx->be->ops->topk(cx->be, ids, vals, norm, dx, R, c->cols, K));
  int32_t *hi = (int32_t *)keep(cx, "ids", A_INT, ids, (size_t)R * K);
  float *hv = keep(cx, "values", A_AUX, vals, (size_t)R * K), *hn = keep(cx, "normaliser", A_MAIN, norm, (size_t)R * 2);
  for (int r = 0; r < R; r++) /* a non-finite row's values and normaliser are undefined */
    if (hi[r * K] < 0) memset(hv + r * K, 0, (size_t)K * 4), hn[2 * r] = hn[2 * r + 1] = 0;
}

static void run_moe_route(ctx *cx, const op_case *c) {
  const int N = c->n, NE = c->hq, K = c->k;
  float *x = randv(cx, (size_t)N * NE, 3);
  x[2 * NE + 3] = x[2 * NE + 5] = 9; /* a tie: the lower id ranks first */
  if (c->flags & OPC_NONFINITE) x[5 * NE + 1] = INFINITY, x[NE + 2] = NAN;
  void *dx = dbuf(cx, x, (size_t)N * NE * 4), *ids = dbuf(cx, NULL, (size_t)N * K * 4), *w = dbuf(cx, NULL, (size_t)N * K * 4);
  CHECK_OK(cx->be->ops->moe_route(cx->be, ids, w, dx, N, NE, K, (c->flags & OPC_NORM_TOPK) != 0));
  int32_t *hi = (int32_t *)keep(cx, "ids", A_INT, ids, (size_t)N * K);
  float *hw = keep(cx, "weights", A_MAIN, w, (size_t)N * K);
  for (int i = 0; i < N * K; i++)
    if (hi[i] < 0) hw[i] = 0; /* undefined in a non-finite row */
}

/* Slots' experts of n tokens, top-2 over 5: decode (3, 1); prefill uses every expert but 4, one slot -1 and one
 * 9 (out of range: a zero row); n 40+: expert 2 in two 16-slot tiles, others fewer, 4 none. */
static void moe_ids(int32_t *ids, int n, int E, int K) {
  static const int32_t pre[14] = {0, 2, 2, 0, 3, 1, 0, 3, -1, 2, 1, 0, 3, 9};
  if (n == 1) ids[0] = 3, ids[1] = 1;
  else if (n <= 7) memcpy(ids, pre, (size_t)n * K * sizeof *ids);
  else
    for (int s = 0; s < n * K; s++) ids[s] = s == 17 ? E : s % 3 == 0 ? 1 + 2 * (s % 2) : s % 3 == 1 ? 2 : 0;
}

static void run_moe_matmul(ctx *cx, const op_case *c) {
  const int n = c->n, K = c->k, ik = c->hk, E = c->hq;
  xpi_experts *e = experts(cx, c->dt, E, c->rows, c->cols, 1);
  int32_t *ids = hkeep(cx, malloc((size_t)n * K * 4));
  moe_ids(ids, n, E, K);
  float *in = randv(cx, (size_t)n * ik * c->cols, 1);
  void *din = dbuf(cx, in, (size_t)n * ik * c->cols * 4), *dids = dbuf(cx, ids, (size_t)n * K * 4);
  void *out = dbuf(cx, NULL, (size_t)n * K * c->rows * 4);
  CHECK_OK(cx->be->ops->moe_matmul(cx->be, out, din, ik, e, dids, n, K));
  keep(cx, "out", A_MAIN, out, (size_t)n * K * c->rows);
  if (cx->ref && is_q(c->dt)) {
    float *b = keep(cx, "qbound", A_QB, NULL, (size_t)n * K * c->rows);
    for (int s = 0; s < n * K; s++)
      for (int r = 0; r < c->rows && ids[s] >= 0 && ids[s] < E; r++)
        b[(size_t)s * c->rows + r] = (float)xt_q_bound(&e->w[ids[s]], r, in + (size_t)(ik == 1 ? s / K : s) * c->cols);
  }
}

static void run_moe_combine(ctx *cx, const op_case *c) {
  const int N = c->n, K = c->k, D = c->cols;
  float *y = randv(cx, (size_t)N * K * D, 1), *w = randv(cx, (size_t)N * K, 1), *sh = randv(cx, (size_t)N * D, 1);
  float *g = randv(cx, (size_t)N, 4);
  int32_t *pos = hkeep(cx, malloc((size_t)N * K * 4));
  for (int s = 0; s < N * K; s++) pos[s] = N * K - 1 - s;
  void *dy = dbuf(cx, y, (size_t)N * K * D * 4), *dw = dbuf(cx, w, (size_t)N * K * 4), *ds = dbuf(cx, sh, (size_t)N * D * 4);
  void *dg = dbuf(cx, g, (size_t)N * 4), *dp = dbuf(cx, pos, (size_t)N * K * 4), *out = dbuf(cx, NULL, (size_t)N * D * 4);
  const int shd = (c->flags & OPC_SHARED) != 0;
  CHECK_OK(cx->be->ops->moe_combine(cx->be, out, dy, c->flags & OPC_POS ? dp : NULL, dw, shd ? ds : NULL,
                                    shd ? dg : NULL, N, K, D));
  keep(cx, "out", A_MAIN, out, (size_t)N * D);
}

static void run_moe_mlp(ctx *cx, const op_case *c) {
  const int N = c->n, K = c->k, EM = c->hq, I = c->rows, H = c->cols, S = N * K;
  xpi_experts *eg = experts(cx, c->dt, EM, I, H, 0.2f), *eu = experts(cx, c->dt, EM, I, H, 0.2f);
  xpi_experts *ed = experts(cx, c->dt, EM, H, I, 0.2f);
  int32_t *ids = hkeep(cx, malloc((size_t)S * 4));
  const int cnt[7] = {0, 1, 3, 5, 20, 70, S - 99 - 2};
  int s = 0;
  for (int x = 0; x < EM && x < 7; x++)
    for (int i = 0; i < cnt[x]; i++) ids[s++] = x;
  ids[s++] = -1, ids[s++] = EM;
  for (int i = S - 1; i > 0; i--) { /* shuffled */
    const int j = (int)((frand() + 1) * 0.5f * (float)(i + 1)) % (i + 1), t = ids[i];
    ids[i] = ids[j], ids[j] = t;
  }
  float *in = randv(cx, (size_t)N * H, 1);
  void *din = dbuf(cx, in, (size_t)N * H * 4), *dids = dbuf(cx, ids, (size_t)S * 4);
  void *out = dbuf(cx, NULL, (size_t)S * H * 4), *pos = dbuf(cx, NULL, (size_t)S * 4);
  void *g = dbuf(cx, NULL, (size_t)S * I * 4), *u = dbuf(cx, NULL, (size_t)S * I * 4);
  CHECK_OK(cx->be->ops->moe_mlp(cx->be, out, pos, g, u, din, eg, eu, ed, dids, N, K));
  float *rows = keep(cx, "out (slot order)", A_MAIN, NULL, (size_t)S * H), *ho = malloc((size_t)S * H * 4);
  int32_t *hp = malloc((size_t)S * 4);
  char *seen = calloc((size_t)S, 1);
  xt_down(cx->be, ho, out, (size_t)S * H * 4);
  xt_down(cx->be, hp, pos, (size_t)S * 4);
  int perm = 1;
  for (int i = 0; i < S; i++) {
    if (hp[i] < 0 || hp[i] >= S || seen[hp[i]]++) {
      perm = 0;
      break;
    }
    memcpy(rows + (size_t)i * H, ho + (size_t)hp[i] * H, (size_t)H * 4);
  }
  CHECK(perm, "%s: moe_mlp's positions are not a permutation of the %d rows", cx->be->device, S);
  free(ho), free(hp), free(seen);
  void *ref = dbuf(cx, NULL, (size_t)S * H * 4);
  CHECK_OK(cx->be->ops->moe_matmul(cx->be, g, din, 1, eg, dids, N, K));
  CHECK_OK(cx->be->ops->moe_matmul(cx->be, u, din, 1, eu, dids, N, K));
  CHECK_OK(cx->be->ops->swiglu(cx->be, g, g, u, S, I));
  CHECK_OK(cx->be->ops->moe_matmul(cx->be, ref, g, K, ed, dids, N, K));
  keep(cx, "composition moe_matmul x2 + swiglu + moe_matmul", A_SELF, ref, (size_t)S * H);
}

/* embed -> matmul recorded once and replayed with new ids in the same buffer, against direct execution; the
 * reference (no capture) runs the ops directly. */
static void run_capture(ctx *cx, const op_case *c) {
  static const int32_t ids[3] = {3, 28, 11};
  xpi_backend *be = cx->be;
  xpi_weight *emb = weight(cx, XPI_DT_BF16, c->rows, c->cols, 1), *w = weight(cx, c->dt, 37, c->cols, 1);
  void *di = dbuf(cx, ids, 4), *x = dbuf(cx, NULL, (size_t)c->cols * 4), *y = dbuf(cx, NULL, 37 * 4);
  float *rep = keep(cx, "replayed", A_MAIN, NULL, 3 * 37), *dir = NULL;
  void *graph = NULL;
  const int cap = !cx->ref;
  if (cap) {
    dir = keep(cx, "direct", A_SELF, NULL, 3 * 37);
    CHECK_OK(be->ops->capture_begin(be));
    CHECK_OK(be->ops->embed(be, x, emb, di, 1));
    CHECK_OK(be->ops->matmul(be, y, x, w, NULL, 1));
    CHECK_OK(be->ops->capture_end(be, &graph));
    if (!graph) return;
  }
  for (int i = 0; i < 3; i++) {
    CHECK_OK(be->ops->write(be, di, &ids[i], 4));
    if (cap) {
      CHECK_OK(be->ops->replay(be, graph));
      xt_down(be, rep + i * 37, y, 37 * 4);
    }
    CHECK_OK(be->ops->embed(be, x, emb, di, 1));
    CHECK_OK(be->ops->matmul(be, y, x, w, NULL, 1));
    xt_down(be, cap ? dir + i * 37 : rep + i * 37, y, 37 * 4);
  }
  if (graph) be->ops->graph_free(be, graph);
}

static void run(ctx *cx, const op_case *c) {
  switch (c->op) {
    case XPI_OP_EMBED: run_embed(cx, c); break;
    case XPI_OP_RMSNORM: run_rmsnorm(cx, c); break;
    case XPI_OP_MATMUL: run_matmul(cx, c); break;
    case XPI_OP_MATMUL_ADD: run_matmul_add(cx, c); break;
    case XPI_OP_MATMUL_MULTI: run_matmul_multi(cx, c); break;
    case XPI_OP_MATMUL_GLU: run_matmul_glu(cx, c); break;
    case XPI_OP_ROPE: run_rope(cx, c); break;
    case XPI_OP_ATTENTION: (c->flags & OPC_DECODE ? run_attention_decode : run_attention_steps)(cx, c); break;
    case XPI_OP_SWIGLU: case XPI_OP_GEGLU: case XPI_OP_SOFTCAP: case XPI_OP_SCALE: case XPI_OP_ADD:
      run_elementwise(cx, c);
      break;
    case XPI_OP_ARGMAX: run_argmax(cx, c); break;
    case XPI_OP_TOPK: run_topk(cx, c); break;
    case XPI_OP_MOE_ROUTE: run_moe_route(cx, c); break;
    case XPI_OP_MOE_MATMUL: run_moe_matmul(cx, c); break;
    case XPI_OP_MOE_COMBINE: run_moe_combine(cx, c); break;
    case XPI_OP_MOE_MLP: run_moe_mlp(cx, c); break;
    case XPI_OP_CAPTURE: run_capture(cx, c); break;
    default: CHECK(0, "no runner for op %s", xpi_op_name(c->op)); break;
  }
}

/* ------------------------------------------------------------------ comparison */

static const arr *find(const ctx *cx, int kind, int nth) {
  for (int i = 0; i < cx->na; i++)
    if (cx->a[i].kind == kind && nth-- == 0) return &cx->a[i];
  return NULL;
}

/* got against want under tol (qb: the per-output q8/q4 bounds or NULL); prints the worst element on failure. */
static int compare(const char *what, const char *name, const arr *got, const arr *want, const op_tol *tol,
                   const arr *qb, const char *who) {
  if (!got || !want || got->n != want->n) {
    CHECK(0, "%s: %s: no result to compare (%s)", what, name, who);
    return 0;
  }
  size_t bad = 0, worst = 0;
  double wr = -1;
  for (size_t i = 0; i < got->n; i++) {
    double e, lim;
    if (got->kind == A_INT) {
      int32_t a, b;
      memcpy(&a, &got->v[i], 4), memcpy(&b, &want->v[i], 4);
      e = a != b, lim = 0;
    } else if (tol->atol == 0 && tol->rtol == 0 && !(qb && tol->qb > 0)) {
      e = memcmp(&got->v[i], &want->v[i], 4) != 0, lim = 0; /* bit-identical (NaN included) */
    } else {
      e = fabs((double)got->v[i] - (double)want->v[i]);
      lim = tol->atol + tol->rtol * fabs((double)want->v[i]) + (qb && i < qb->n ? tol->qb * qb->v[i] : 0);
      if (isnan(got->v[i]) && isnan(want->v[i])) e = 0;
    }
    if (!(e <= lim)) bad++;
    const double r = lim > 0 ? e / lim : e > 0 ? INFINITY : 0;
    if (!(r <= wr)) wr = r, worst = i;
  }
  if (bad) {
    if (got->kind == A_INT) {
      int32_t a, b;
      memcpy(&a, &got->v[worst], 4), memcpy(&b, &want->v[worst], 4);
      CHECK(0, "%s: %s: %zu of %zu differ; first [%zu] %d, %s %d", what, name, bad, got->n, worst, a, who, b);
    } else
      CHECK(0, "%s: %s: %zu of %zu beyond the tolerance (%s); worst [%zu] %.9g, %s %.9g", what, name, bad, got->n,
            tol->why, worst, (double)got->v[worst], who, (double)want->v[worst]);
    return 0;
  }
  xpi_test_passed++;
  return 1;
}

/* ------------------------------------------------------------------ backends */

typedef struct target {
  const char *spec; /* as asked: "cpu", "cpu:avx2", "xpu:tuned" */
  char variant[64]; /* what runs: "cpu:auto", "cpu:avx2", "xpu:portable", "xpu:tuned+dpas" */
  xpi_backend *be;
#if XPI_TEST_HAVE_XPU
  xt_dpas_emu emu; /* the emulated DPAS kernels a dpas-emu target installed */
#endif
} target;

/* 0: ready; 77: skip (printed); 1: failure */
static int open_target(target *t) {
  const char *spec = t->spec;
  if (!strncmp(spec, "cpu", 3)) {
    const char *isa = spec[3] == ':' ? spec + 4 : "";
    if (*isa) {
      int found = -1;
      for (int i = 0; i < XPI_ISA_COUNT; i++)
        if (!strcmp(isa, xpi_cpu_isa_name((xpi_cpu_isa)i))) found = i;
      if (found < 0) {
        fprintf(stderr, "unknown CPU table '%s' (scalar, avx2, avxvnni, avx512, amx)\n", isa);
        return 1;
      }
      if (!xpi_cpu_has((xpi_cpu_isa)found)) {
        printf("SKIPPED: this CPU (or its OS) lacks the %s kernel table\n", isa);
        return 77;
      }
      setenv("XPI_CPU_ISA", isa, 1);
    }
    snprintf(t->variant, sizeof t->variant, "cpu:%s", *isa ? isa : "auto");
    xpi_backend_config cfg = {"cpu", 3, 1}; /* three threads: uneven splits of rows and tokens */
    CHECK_OK(xpi_backend_cpu_create(&cfg, &t->be));
    return t->be ? 0 : 1;
  }
  if (strncmp(spec, "xpu", 3) != 0) {
    fprintf(stderr, "unknown backend '%s' (cpu, cpu:<table>, xpu, xpu:<tier>)\n", spec);
    return 1;
  }
#if XPI_TEST_HAVE_XPU
  const char *tier = spec[3] == ':' ? spec + 4 : "";
  if (!strcmp(tier, "portable")) setenv("XPI_XPU_TIER", "portable", 1);
  int rc = xt_open_xpu("xpu:0", &t->be);
  if (rc) return rc;
  const int emu_sg = !strcmp(tier, "dpas-emu16") ? 16 : !strcmp(tier, "dpas-emu8") ? 8 : 0;
  if (emu_sg) { /* on the tuned tier (Intel's CPU runtime honours sub-group sizes 16 and 8) */
    if (strcmp(xpi_xpu_tier(t->be), "tuned") != 0) {
      CHECK(0, "%s needs the tuned tier under it, the device selected %s", tier, xpi_xpu_tier(t->be));
      return 1;
    }
    if (!xt_dpas_emu_install(t->be, emu_sg, &t->emu)) return 1;
    tier = emu_sg == 8 ? "tuned+dpas8" : "tuned+dpas";
  }
  const char *got = xpi_xpu_tier(t->be);
  printf("xpu:0 kernel tier: %s\n", got);
  snprintf(t->variant, sizeof t->variant, "xpu:%s", got);
  if (!strcmp(tier, "dpas") && !strstr(got, "dpas")) { /* an optimization the device may not build */
    printf("SKIPPED: the DPAS tier was asked for, the device selected %s (no CPU OpenCL runtime has the matrix "
           "builtins; see the log above)\n", got);
    t->be->ops->destroy(t->be);
    return 77;
  }
  if (*tier && strcmp(tier, "dpas") && strcmp(got, tier) != 0) {
    CHECK(0, "the %s tier was asked for, the device selected %s", tier, got);
    return 1;
  }
  return 0;
#else
  printf("SKIPPED: this build has no XPU backend (XPUINFER_XPU=OFF)\n");
  return 77;
#endif
}

int main(int argc, char **argv) {
  target t;
  memset(&t, 0, sizeof t);
  t.spec = argc > 1 ? argv[1] : getenv("XPI_TEST_BACKEND") ? getenv("XPI_TEST_BACKEND") : "cpu";
  const int rc = open_target(&t);
  if (rc) return rc == 77 ? 77 : (xpi_test_done(), 1);
  xpi_backend_config rcfg = {"cpu", 2, 0};
  xpi_backend *ref = NULL;
  CHECK_OK(xpi_backend_cpu_create(&rcfg, &ref));
  if (!ref) return xpi_test_done();
  const char *filter = getenv("XPI_OP_FILTER");
  int count = 0, ran[XPI_OP_COUNT] = {0}, failed[XPI_OP_COUNT] = {0}, skipped[XPI_OP_COUNT] = {0};
  double secs[XPI_OP_COUNT] = {0};
  const op_case *cases = op_cases(&count);
  CHECK(count > 0, "the op-case list is empty or overflowed its table (op_cases.c, MAXC)");
  for (int i = 0; i < count; i++) {
    const op_case *c = &cases[i];
    char what[256];
    op_case_describe(c, what, sizeof what);
    if (filter && *filter && !strstr(what, filter)) continue;
    const int32_t hd = c->op == XPI_OP_ROPE || c->op == XPI_OP_ATTENTION ? c->hd : 0;
    const xpi_op_desc d = {c->op, c->dt, c->rows, c->cols, c->n, hd};
    if (!xpi_backend_supports(t.be, &d)) {
      if (!skipped[c->op]++)
        printf("skip: %s on %s: the backend does not support %s (%s)\n", what, t.spec, xpi_op_name(c->op),
               xpi_dtype_name(c->dt));
      continue;
    }
    ctx cr = {.be = ref, .ref = 1}, ct = {.be = t.be, .ref = 0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    g_rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)(i + 1) * 0x100000001b3ull;
    run(&cr, c);
    g_rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)(i + 1) * 0x100000001b3ull;
    run(&ct, c);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    secs[c->op] += (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    const int f0 = xpi_test_failed;
    const arr *qb = find(&cr, A_QB, 0);
    for (int j = 0; j < ct.na; j++) {
      const arr *a = &ct.a[j];
      if (a->kind == A_SELF) {
        compare(what, a->name, find(&ct, A_MAIN, 0), a, op_case_tol2(c, t.variant), NULL,
                "the same backend's composition");
        continue;
      }
      /* the reference's array of the same kind and rank */
      int nth = 0;
      for (int m = 0; m < j; m++) nth += ct.a[m].kind == a->kind;
      compare(what, a->name, a, find(&cr, a->kind, nth), a->kind == A_AUX ? &c->tol2 : &c->tol,
              a->kind == A_MAIN ? qb : NULL, "reference");
    }
    ran[c->op]++;
    failed[c->op] += xpi_test_failed > f0;
    ctx_free(&cr);
    ctx_free(&ct);
  }
  printf("%-14s %6s %6s %6s %8s  (%s against the CPU reference)\n", "op", "cases", "failed", "skip", "seconds",
         t.variant);
  for (int op = 0; op < XPI_OP_COUNT; op++)
    if (ran[op] || skipped[op])
      printf("%-14s %6d %6d %6d %8.2f\n", xpi_op_name((xpi_op)op), ran[op], failed[op], skipped[op], secs[op]);
  ref->ops->destroy(ref);
#if XPI_TEST_HAVE_XPU
  if (t.emu.mod) xt_dpas_emu_remove(t.be, &t.emu);
#endif
  t.be->ops->destroy(t.be);
  return xpi_test_done();
}
