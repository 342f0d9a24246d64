/* The performance model's cost table: for each kernel xpu_launch appends, the bytes it must read and write in
 * device memory and its FLOPs, from the launch's own arguments and grid (the argument order of xpu_ops.c and
 * the kernels in kernels/). Not a second implementation: only sizes are computed.
 *
 * What counts as moved: every byte an operand streams from device memory, once per work-group that streams it
 * (K/V rows read again for each query head of a GQA group, as the eager kernel does, are read again), except small operands every
 * work-group shares (a GEMV's input vector, a norm's weight: at most a few KiB, served by the caches after the
 * first read) which count once. f32 activations; weights and KV in the dtype of the launch. Each kernel's row in
 * xpu_kernel_table.h names its cost function here and its argument count; a launch whose argument count differs
 * from the row's fails the count (its layout changed: update the row). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "ops/quant_format.h" /* XPI_QK: the block formats every backend shares */
#include "ops/xpu/xpu_internal.h"
#include "ops/backend_xpu.h"

#define I32(k) (*(const int *)args[k].value)
#define U64(k) (*(const uint64_t *)args[k].value)
#define PTR(k) (*(const void *const *)args[k].value)

static double dsize(int dt) {
  size_t s = xpi_dtype_size((xpi_dtype)dt);
  return s ? (double)s : 4.0;
}

/* Positions each query token attends to (pos + 1, at most the sliding window when there is one), read back from
 * the launch's positions argument (the performance model's step only; off every other path). tok[] gets n
 * entries. */
static xpi_status attended(xpi_backend *be, const void *pos, int n, int window, int *tok) {
  XPI_TRY(xpu_read_uncounted(be, tok, pos, (size_t)n * sizeof *tok));
  for (int i = 0; i < n; i++) {
    tok[i] += 1;
    if (window > 0 && tok[i] > window) tok[i] = window;
  }
  return XPI_OK;
}

#define PERF_MAX_TOKENS 4096 /* positions read back per attention launch in the model's step */

/* One launch as the cost functions see it, and what they find: bytes read and written, FLOPs. */
typedef struct cost_in {
  xpi_backend *be;
  xpu_kid kid;
  uint32_t gx, gy, gz;
  const xpu_arg *args;
  int nargs;
  double wbytes; /* the row's weight element bytes */
  double rd, wr, fl;
} cost_in;

/* A cost function's opening (the launch's fields as locals, the sums at 0) and its end (the sums stored). */
#define COST_BEGIN                                                                                             \
  xpi_backend *be = ci->be;                                                                                  \
  const xpu_kid kid = ci->kid;                                                                               \
  const uint32_t gx = ci->gx, gy = ci->gy, gz = ci->gz;                                                      \
  const xpu_arg *args = ci->args;                                                                            \
  const int nargs = ci->nargs;                                                                               \
  const double wsize = ci->wbytes;                                                                           \
  double rd = 0, wr = 0, fl = 0;                                                                             \
  (void)be, (void)kid, (void)gx, (void)gy, (void)gz, (void)args, (void)nargs, (void)wsize
#define COST_END                                                                                               \
  ci->rd = rd, ci->wr = wr, ci->fl = fl;                                                                     \
  return XPI_OK

/* gathers gy rows of d */
static xpi_status cost_embed(cost_in *ci) {
  COST_BEGIN;
  double n = gy, d = I32(5);
  rd = n * d * dsize(I32(2)) + n * 4, wr = n * d * 4;
  COST_END;
}

static xpi_status cost_add(cost_in *ci) {
  COST_BEGIN;
  double c = (double)U64(2);
  rd = 8 * c, wr = 4 * c, fl = c;
  COST_END;
}

static xpi_status cost_glu_act(cost_in *ci) {
  COST_BEGIN;
  double c = (double)U64(3);
  rd = 8 * c, wr = 4 * c, fl = 6 * c;
  COST_END;
}

static xpi_status cost_scale(cost_in *ci) {
  COST_BEGIN;
  double c = (double)U64(1);
  rd = 4 * c, wr = 4 * c, fl = c;
  COST_END;
}

static xpi_status cost_convert(cost_in *ci) {
  COST_BEGIN;
  double c = (double)U64(4);
  rd = c * dsize(I32(3)), wr = c * dsize(I32(1));
  COST_END;
}

/* blocks of a row, then (blocks > 1) their (value, index, bad) out and back */
static xpi_status cost_argmax(cost_in *ci) {
  COST_BEGIN;
  double blocks = I32(3), rows = gx / blocks, cols = I32(2), pb = blocks > 1 ? rows * blocks * 12 : 0;
  rd = rows * cols * 4 + pb, wr = rows * 4 + pb, fl = rows * cols;
  COST_END;
}

/* k passes over the row (kernels/portable/sampling.cl) */
static xpi_status cost_topk(cost_in *ci) {
  COST_BEGIN;
  double rows = gx, cols = I32(4), k = I32(5);
  rd = rows * cols * 4 * k, wr = rows * (k * 8 + 8), fl = rows * cols * (k + 2);
  COST_END;
}

/* x (+ residual, then x written back), weight once */
static xpi_status cost_rmsnorm(cost_in *ci) {
  COST_BEGIN;
  double n = gx, d = I32(6), res = I32(3);
  rd = n * d * 4 * (1 + res) + d * dsize(I32(5)), wr = n * d * 4 * (1 + res), fl = n * d * (4 + res);
  COST_END;
}

/* q and k rows in place, with the optional per-head norms */
static xpi_status cost_rope(cost_in *ci) {
  COST_BEGIN;
  double heads = gx, hd = I32(5);
  rd = heads * hd * 4 + hd / 2 * 4 + hd * 2 * 4, wr = heads * hd * 4;
  fl = heads * hd * (6 + 4 * (I32(9) || I32(12)));
  COST_END;
}

static xpi_status cost_gemv(cost_in *ci) {
  COST_BEGIN;
  double rows = I32(6), cols = I32(7), bias = I32(5) ? rows * dsize(I32(4)) : 0;
  rd = rows * cols * wsize + cols * 4 + bias, wr = rows * 4, fl = 2 * rows * cols;
  COST_END;
}

static xpi_status cost_gemm(cost_in *ci) {
  COST_BEGIN;
  /* tiles: every column tile (gy) streams the weight rows of its row tile, every row tile (gx) the inputs */
  double rows = I32(6), cols = I32(7), n = I32(8), bias = I32(5) ? rows * dsize(I32(4)) : 0;
  rd = rows * cols * wsize * gy + n * cols * 4 * gx + bias, wr = rows * n * 4, fl = 2 * rows * cols * n;
  COST_END;
}

/* n rows of ne router logits -> k ids and weights each */
static xpi_status cost_moe_route(cost_in *ci) {
  COST_BEGIN;
  double n = I32(3), ne = I32(4), k = I32(5);
  rd = n * ne * 4, wr = n * k * 8, fl = n * ne * (k + 4);
  COST_END;
}

/* every slot reads its chosen expert's rows once (slots on one expert re-read them);
 * each work-group scans the slots' ids */
static xpi_status cost_moe_matmul(cost_in *ci) {
  COST_BEGIN;
  double rows = I32(6), cols = I32(7), slots = I32(9), ne = I32(5);
  rd = slots * rows * cols * dsize(I32(4)) + slots * cols * 4 + rows * ne * slots * 4;
  wr = slots * rows * 4, fl = 2 * slots * rows * cols;
  COST_END;
}

/* out[count] from k expert rows (+ the shared expert) and the weights (+ each slot's
 * row position, read by every element) */
static xpi_status cost_moe_combine(cost_in *ci) {
  COST_BEGIN;
  double c = (double)U64(10), k = I32(8), sh = I32(7);
  rd = c * (k + sh + 1) * 4 + (I32(3) ? c * k * 4 : 0), wr = c * 4, fl = c * 2 * (k + sh);
  COST_END;
}

static xpi_status cost_gemv3(cost_in *ci) {
  COST_BEGIN;
  /* up to three projections of one row (+ its RMSNorm weight, + the output read back when accumulating) */
  double rows = (double)I32(12) + I32(13) + I32(14), cols = I32(15);
  double bias = I32(11) ? rows * dsize(I32(10)) : 0, norm = I32(18) ? cols * dsize(I32(17)) : 0;
  rd = rows * cols * wsize + cols * 4 + bias + norm + (I32(20) ? rows * 4 : 0), wr = rows * 4;
  fl = 2 * rows * cols;
  COST_END;
}

/* gate and up rows, one output */
static xpi_status cost_gemv_glu(cost_in *ci) {
  COST_BEGIN;
  int sg = nargs == 11;
  double rows = sg ? (double)I32(4) : (double)gx, cols = I32(sg ? 5 : 4), norm = I32(sg ? 9 : 8) ? cols * dsize(I32(sg ? 8 : 7)) : 0;
  rd = 2 * rows * cols * wsize + cols * 4 + norm, wr = rows * 4, fl = 4 * rows * cols;
  COST_END;
}

/* gy rows of cols f32 -> int8 quants + one f32 scale per 32-block */
static xpi_status cost_quant_act(cost_in *ci) {
  COST_BEGIN;
  double n = gy, cols = I32(3), nb = I32(4);
  rd = n * cols * 4, wr = n * nb * (XPI_QK + 4), fl = n * cols * 3;
  COST_END;
}

static xpi_status cost_matmul_q(cost_in *ci) {
  COST_BEGIN;
  /* per 32-weight block: the quants (32 or 16 bytes) and a half scale; activations as int8 blocks + f32 scales.
   * The GEMMs' column tiles (gy: 16 tokens portable, 8 DPAS and tuned) each stream the weight rows of their
   * row tile, their row tiles (gx: 16 rows portable and tuned, the sub-group size DPAS) the inputs */
  const int gemm = kid == XK_GEMM_Q8 || kid == XK_GEMM_Q4 || kid == XK_GEMM_DPAS_Q8 || kid == XK_GEMM_DPAS_Q4 ||
                   kid == XK_GEMM_SG_Q8 || kid == XK_GEMM_SG_Q4;
  const int q4 = kid == XK_GEMV_Q4 || kid == XK_GEMM_Q4 || kid == XK_GEMV_SG_Q4 || kid == XK_GEMM_DPAS_Q4 ||
                 kid == XK_GEMM_SG_Q4;
  double rows = I32(8), cols = I32(9), nb = (double)((I32(9) + XPI_QK - 1) / XPI_QK), n = gemm ? I32(10) : 1;
  double wrow = nb * ((q4 ? XPI_QK / 2 : XPI_QK) + 2), xrow = nb * (XPI_QK + 4);
  double bias = I32(7) ? rows * dsize(I32(6)) : 0;
  rd = rows * wrow * (gemm ? gy : 1) + n * xrow * (gemm ? gx : 1) + bias, wr = rows * n * 4;
  fl = 2 * rows * cols * n;
  COST_END;
}

static xpi_status cost_moe_gemv_q(cost_in *ci) {
  COST_BEGIN;
  /* group (r, s): row r of slot s's expert (quants + half scales per block), the slot's int8 activation row
   * (shared by the row's groups: once per slot) and its id */
  const int q4 = kid == XK_MOE_GEMV_Q4;
  double rows = I32(5), cols = I32(6), slots = gy, nb = (double)((I32(6) + XPI_QK - 1) / XPI_QK);
  double wrow = nb * ((q4 ? XPI_QK / 2 : XPI_QK) + 2), xrow = nb * (XPI_QK + 4);
  rd = slots * rows * wrow + slots * xrow + slots * rows * 4, wr = slots * rows * 4;
  fl = 2 * slots * rows * cols;
  COST_END;
}

static xpi_status cost_moe_gemm_q(cost_in *ci) {
  COST_BEGIN;
  /* group (rt, x): its 16 rows of expert x once per 16 of x's slots, those slots' activation rows once per
   * row tile (gx), and one scan of the ids; the slots per expert are read back from the launch's ids */
  const int q4 = kid == XK_MOE_GEMM_Q4, ne = I32(4), slots = I32(8);
  double rows = I32(5), cols = I32(6), nb = (double)((I32(6) + XPI_QK - 1) / XPI_QK);
  double wrow = nb * ((q4 ? XPI_QK / 2 : XPI_QK) + 2), xrow = nb * (XPI_QK + 4);
  int *id = slots > 0 ? malloc((size_t)slots * sizeof *id) : NULL;
  int *per = ne > 0 ? calloc((size_t)ne, sizeof *per) : NULL;
  xpi_status st = id && per ? xpu_read_uncounted(be, id, PTR(7), (size_t)slots * sizeof *id)
                            : xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: performance model: out of memory", be->device);
  double tiles = 0, chosen = 0;
  for (int i = 0; st == XPI_OK && i < slots; i++)
    if (id[i] >= 0 && id[i] < ne) per[id[i]]++, chosen++;
  for (int x = 0; st == XPI_OK && x < ne; x++) tiles += (per[x] + 15) / 16;
  free(id), free(per);
  XPI_TRY(st);
  rd = tiles * rows * wrow + chosen * xrow * gx + (double)gx * gy * slots * 4, wr = slots * rows * 4;
  fl = 2 * chosen * rows * cols;
  COST_END;
}

static xpi_status cost_fused_q(cost_in *ci) {
  COST_BEGIN;
  /* the quantized GEMV's weight bytes (quants + half scales) for up to three matrices, or gate and up; the f32
   * input row (+ its RMSNorm weight) once, quantized in every work-group's local memory; the output read
   * back when accumulating */
  const int glu = kid == XK_GEMV_GLU_Q8 || kid == XK_GEMV_GLU_Q4 || kid == XK_GEMV_GLU_SG_Q8 || kid == XK_GEMV_GLU_SG_Q4;
  const int q4 = kid == XK_GEMV3_Q4 || kid == XK_GEMV_GLU_Q4 || kid == XK_GEMV3_SG_Q4 || kid == XK_GEMV_GLU_SG_Q4;
  double rows = glu ? (double)I32(6) : (double)I32(15) + I32(16) + I32(17), cols = I32(glu ? 7 : 18);
  double nb = (double)((I32(glu ? 7 : 18) + XPI_QK - 1) / XPI_QK), wrow = nb * ((q4 ? XPI_QK / 2 : XPI_QK) + 2);
  double norm = I32(glu ? 11 : 21) ? cols * dsize(I32(glu ? 10 : 20)) : 0;
  double bias = !glu && I32(14) ? rows * dsize(I32(13)) : 0, acc = !glu && I32(23) ? rows * 4 : 0;
  rd = (glu ? 2 : 1) * rows * wrow + cols * 4 + norm + bias + acc, wr = rows * 4;
  fl = (glu ? 4 : 2) * rows * cols;
  COST_END;
}

static xpi_status cost_splitk(cost_in *ci) {
  COST_BEGIN;
  /* the GEMV's weight bytes (q8/q4: quants + half scales) and input row (f32; the q8/q4 kernels quantize
   * their chunk in local memory), plus each row's partial sums out and back (rows x splits f32) and the output
   * read back when accumulating (o_proj/down's residual add) */
  const int q4 = kid == XK_GEMV_SPLITK_Q4, q = q4 || kid == XK_GEMV_SPLITK_Q8;
  double rows = I32(q ? 7 : 6), cols = I32(q ? 8 : 7), splits = I32(9);
  double nb = (double)((I32(q ? 8 : 7) + XPI_QK - 1) / XPI_QK);
  double wbytes = q ? rows * nb * ((q4 ? XPI_QK / 2 : XPI_QK) + 2) : rows * cols * wsize;
  double bias = I32(q ? 6 : 5) ? rows * dsize(I32(q ? 5 : 4)) : 0, acc = I32(10) ? rows * 4 : 0;
  rd = wbytes + cols * 4 + bias + acc + rows * splits * 4, wr = rows * 4 + rows * splits * 4;
  fl = 2 * rows * cols + rows * splits;
  COST_END;
}

/* k and v rows of gz tokens into the cache (f32 in, KV dtype out) */
static xpi_status cost_kv_store(cost_in *ci) {
  COST_BEGIN;
  double n = gz, hk = I32(11), hd = I32(12);
  rd = 2 * n * hk * hd * 4 + n * 8, wr = 2 * n * hk * hd * dsize(I32(2));
  COST_END;
}

static xpi_status cost_attention(cost_in *ci) {
  COST_BEGIN;
  int hq = I32(kid == XK_FLASH ? 11 : 10), hk = I32(kid == XK_FLASH ? 12 : 11), hd = I32(kid == XK_FLASH ? 13 : 12);
  int hc = (hq / hk + 7) / 8, splits = kid == XK_SDPA ? I32(20) : 1; /* xpi_sdpa: chunks of 8 heads, splits */
  int n = kid == XK_FLASH  ? I32(10)
          : kid == XK_SDPA ? (int)(gx / ((uint32_t)hk * hc * splits))
                           : (int)(gx / (uint32_t)hq);
  if (n <= 0 || n > PERF_MAX_TOKENS)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: performance model: attention over %d tokens in one launch",
                   be->device, n);
  int tok[PERF_MAX_TOKENS];
  XPI_TRY(attended(be, PTR(5), n, I32(kid == XK_FLASH ? 15 : 14), tok));
  double kv = 2.0 * hd * dsize(I32(4)), per_head = 0, groups = 0;
  for (int i = 0; i < n; i++) per_head += tok[i];
  if (kid == XK_FLASH) { /* a work-group: up to 4 query rows of one KV head, K/V read once for its longest */
    int g = hq / hk;
    for (int w = 0; w < (int)gx; w++) {
      int longest = 0;
      for (int rr = w * 4; rr < w * 4 + 4 && rr < n * g; rr++)
        if (tok[rr / g] > longest) longest = tok[rr / g];
      groups += longest;
    }
    rd = groups * hk * kv;
  } else if (kid == XK_SDPA) { /* a work-group per (token, KV head, 8 query heads, split): each K/V row once
                                * per chunk of 8 heads; the splits' states (m, l, acc) out and back */
    rd = per_head * hk * hc * kv;
    if (splits > 1) rd += (double)n * hq * splits * (hd + 2) * 4, wr += (double)n * hq * splits * (hd + 2) * 4;
  } else { /* a work-group per (token, query head): its K/V rows, read again for every head of a group */
    rd = per_head * hq * kv + per_head * hq * 4, wr += per_head * hq * 4; /* the scores, out and back */
  }
  rd += (double)n * hq * hd * 4, wr += (double)n * hq * hd * 4, fl = per_head * hq * hd * 4;
  if (kid == XK_SDPA && I32(16)) /* a decode step's sdpa stores its token's K/V itself */
    rd += 2.0 * n * hk * hd * 4, wr += 2.0 * n * hk * hd * dsize(I32(4));
  COST_END;
}

/* Arguments and cost function of each kernel, from its row (xpu_kernel_table.h). */
static const struct {
  int nargs;
  double wbytes;
  xpi_status (*cost)(cost_in *ci);
} k_cost[XK_COUNT] = {
#define XPU_COST_ROW(id, name, tier, args, wbytes, indirect, cost) [XK_##id] = {args, wbytes, cost},
  XPU_KERNELS(XPU_COST_ROW)
#undef XPU_COST_ROW
};

xpi_status xpu_perf_count(xpi_backend *be, xpu_kid kid, uint32_t gx, uint32_t gy, uint32_t gz, const xpu_arg *args,
                          int nargs) {
  xpi_perf_report *r = im_of(be)->perf;
  if (k_cost[kid].nargs != nargs)
    return xpi_err(XPI_ERR_INTERNAL, "%s: performance model: kernel %s has %d arguments, its cost table entry %d",
                   be->device, xpu_kernel_name(kid), nargs, k_cost[kid].nargs);
  cost_in ci = {be, kid, gx, gy, gz, args, nargs, k_cost[kid].wbytes, 0, 0, 0};
  XPI_TRY(k_cost[kid].cost(&ci));
  const double rd = ci.rd, wr = ci.wr, fl = ci.fl;
  const char *name = xpu_kernel_name(kid);
  int k = 0;
  while (k < r->n_kernels && strcmp(r->kernels[k].name, name)) k++;
  if (k == r->n_kernels) {
    if (k == XPI_PERF_MAX_KERNELS) return xpi_err(XPI_ERR_INTERNAL, "performance model: more than %d kernels", k);
    snprintf(r->kernels[k].name, sizeof r->kernels[k].name, "%s", name);
    r->n_kernels++;
  }
  xpi_perf_kernel *e = &r->kernels[k];
  e->launches++, e->bytes_read += rd, e->bytes_written += wr, e->flops += fl;
  r->launches++, r->bytes_read += rd, r->bytes_written += wr, r->flops += fl;
  return XPI_OK;
}

xpi_status xpi_xpu_perf_begin(xpi_backend *be, xpi_perf_report *acc) {
  if (!be || strcmp(be->ops->name, "xpu"))
    return xpi_err(XPI_ERR_UNSUPPORTED, "the performance model counts XPU launches; device '%s' is not an XPU",
                   be ? be->device : "?");
  im_of(be)->perf = acc;
  return XPI_OK;
}

void xpi_xpu_perf_end(xpi_backend *be) {
  if (be && !strcmp(be->ops->name, "xpu")) im_of(be)->perf = NULL;
}
