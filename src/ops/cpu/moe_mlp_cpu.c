/* The experts' MLP of a MoE prefill on the CPU (ops.h moe_mlp, moe_cpu.h): down(silu(x W_g^T) * (x W_u^T)) for
 * every slot, in one pool dispatch of jobs, each an expert's whole MLP over its tokens (or a chunk of them) on one
 * thread:
 *   gather + pack its tokens (the prefill GEMM's layout) -> gate, up -> their SwiGLU -> pack the SwiGLU rows for
 *   down -> down, into out's rows of those slots.
 * Where the GEMM has a per-row form of its activations (cpu_kernels.h), every token's input row is rounded or
 * quantized into it once, in a dispatch before the jobs, instead of once for each of its k experts: the jobs' packs
 * then only gather and lay out bytes.
 * All of a job's activations (packed input, SwiGLU rows, packed down input: ~0.5 MB at 64 tokens and 1024
 * columns) stay in its thread's L2; only the expert's weights come from memory, once per step. The previous form
 * (phases over all experts, each a dispatch of (expert, row block) units) wrote every packed input to memory and
 * read it back from other cores: measured on the 16-core host, its two packing phases took longer at 16 threads
 * than at 2 (bench/2026-12-02-moe-cpu-jobs.md).
 * Jobs run largest first and threads claim them in turn (an atomic counter); experts with more tokens than a
 * thread's share of the step are cut into token chunks (each reads the expert's weights again: see the bounds).
 * Output rows are grouped by expert: pos[s] tells moe_combine which row holds slot s (copying rows to their slots
 * was ~5% of a prefill).
 *
 * Bit for bit the composition (moe_matmul gate, up; swiglu; moe_matmul down): each expert runs the kernel
 * xpi_cpu_matmul would pick for its token count (GEMV, small-n, or the GEMM, whose outputs are one sum each in a
 * fixed order for any split of rows and of tokens at its tok_align, cpu_kernels.h, so token chunks cut there
 * change nothing), and SwiGLU sees whole 16-element runs on both paths (intermediate sizes that are multiples of
 * 16 only; others take the composition). */
#include "ops/cpu/moe_cpu.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "ops/cpu/cpu_isa.h"

/* Experts are cut into chunks of at most a thread's share of the slots (S / threads), but no fewer than MIN tokens
 * and no more than MAX. A chunk reads all of its expert's weights (~25 tokens' work at 1024 x 384, 16-core host),
 * so cuts cost: simulated with that cost, largest-first scheduling of 64 experts at 64 +- 25 tokens ends within
 * 3% of an even split uncut and 17% past it with chunks of 64; with routers that send most tokens to a few
 * experts (log-normal counts, sigma 1-1.5), these bounds stay within 6% where uncut experts reach 26-58%. */
#define MOE_MLP_MIN_CHUNK 128
#define MOE_MLP_MAX_CHUNK 256 /* also bounds each thread's buffers (~3 MB at 2048 columns) */

enum { K_GEMV, K_SMALLN, K_GEMM };

typedef struct {
  int32_t x, t0, m; /* expert, its first token (in order[start[x]..]) and the chunk's count */
  int kind;         /* of the expert's whole count: the composition's choice */
} mlp_chunk;

typedef struct {
  const xpi_cpu_kernels *kt;
  const xpi_cpu_gemm *gm;
  xpi_dtype dt;
  const xpi_experts *gate, *up, *down;
  const float *in;
  const void *form; /* NULL, or in's rows in the GEMM's form (cpu_kernels.h), made once for the k experts */
  float *out;       /* [S, H]: row i the slot order[i] (sorted by expert) */
  int32_t k;
  int64_t H, I;
  const int32_t *start, *order;
  const mlp_chunk *jobs;
  int32_t njobs;
  char *buf;         /* per thread: buf + ith * stride, carved as below */
  size_t stride;
  size_t o_x, o_p, o_g, o_u, o_p2, o_s; /* offsets: rows (int32) / gathered X, P, G, U, P2, GEMM scratch */
  atomic_int next;
} mlp_job;

static int kind_of(const xpi_cpu_kernels *kt, xpi_dtype dt, int32_t m) {
  if (m < XPI_CPU_GEMM_MIN_N) return K_GEMV;
  if (kt->smalln[dt] && m <= kt->smalln_max[dt]) return K_SMALLN;
  return kt->gemm[dt] ? K_GEMM : K_GEMV;
}

static xpi_cpu_mm_fn rows_fn(const mlp_job *j, int kind) {
  return kind == K_SMALLN ? j->kt->smalln[j->dt] : j->kt->gemv[j->dt];
}

static size_t up64(size_t b) { return (b + 63) & ~(size_t)63; }

/* X [m, H] = the chunk's tokens' input rows (slot s reads token s / k). */
static void gather(const mlp_job *j, float *X, const int32_t *sl, int32_t m) {
  for (int32_t t = 0; t < m; t++)
    memcpy(X + (size_t)t * (size_t)j->H, j->in + (int64_t)(sl[t] / j->k) * j->H, (size_t)j->H * sizeof *X);
}

/* One chunk: its tokens gathered (and packed), gate and up with their SwiGLU, down into out. */
static void chunk_run(const mlp_job *j, const mlp_chunk *c, char *B) {
  const int64_t H = j->H, I = j->I;
  const int32_t m = c->m, *sl = j->order + j->start[c->x] + c->t0;
  const xpi_weight *wg = &j->gate->w[c->x], *wu = &j->up->w[c->x], *wd = &j->down->w[c->x];
  float *G = (float *)(B + j->o_g), *U = (float *)(B + j->o_u), *X = (float *)(B + j->o_x);
  float *Y = j->out + (int64_t)(j->start[c->x] + c->t0) * H;
  void *S = B + j->o_s;
  if (c->kind != K_GEMM) { /* a few tokens: the row kernels over gathered f32 rows */
    gather(j, X, sl, m);
    rows_fn(j, c->kind)(G, I, X, m, wg->data, wg->aux, 0, I, H);
    rows_fn(j, c->kind)(U, I, X, m, wu->data, wu->aux, 0, I, H);
    for (int32_t t = 0; t < m; t++) j->kt->swiglu(G + (int64_t)t * I, G + (int64_t)t * I, U + (int64_t)t * I, I);
    rows_fn(j, c->kind)(Y, H, G, m, wd->data, wd->aux, 0, H, I);
    return;
  }
  void *P = B + j->o_p, *P2 = B + j->o_p2;
  if (j->gm->pack_rows) { /* gathered while packing */
    int32_t *rows = (int32_t *)X;
    for (int32_t t = 0; t < m; t++) rows[t] = sl[t] / j->k;
    if (j->form) j->gm->form->pack(P, j->form, rows, m, H, 0, m);
    else j->gm->pack_rows(P, j->in, rows, m, H, 0, m);
  } else {
    gather(j, X, sl, m);
    j->gm->pack(P, X, m, H, 0, m);
  }
  /* gate, then up, each over all its rows in one call: the GEMM prefetches each weight panel while the one before
   * runs (amx_gemm.h), which calls of one 32-row panel each gave it no room for */
  j->gm->run(G, I, P, m, wg->data, wg->aux, H, 0, I, 0, m, S);
  j->gm->run(U, I, P, m, wu->data, wu->aux, H, 0, I, 0, m, S);
  for (int32_t t = 0; t < m; t++) j->kt->swiglu(G + (int64_t)t * I, G + (int64_t)t * I, U + (int64_t)t * I, I);
  j->gm->pack(P2, G, m, I, 0, m);
  j->gm->run(Y, H, P2, m, wd->data, wd->aux, I, 0, H, 0, m, S);
}

static void jobs_run(void *ctx, int ith, int nth) {
  (void)nth;
  mlp_job *j = ctx;
  char *B = j->buf + (size_t)ith * j->stride;
  for (int q; (q = atomic_fetch_add(&j->next, 1)) < j->njobs;) chunk_run(j, &j->jobs[q], B);
}

typedef struct {
  const xpi_cpu_form *f;
  void *F;
  const float *in;
  int32_t n;
  int64_t H;
} form_job;

static void form_run(void *ctx, int ith, int nth) {
  const form_job *j = ctx;
  int64_t b, e;
  xpi_pool_range(j->n, ith, nth, 1, &b, &e);
  if (e > b) j->f->form((char *)j->F + (size_t)b * j->f->row_bytes(j->H), j->in + b * j->H, (int32_t)(e - b), j->H);
}

static int by_size_desc(const void *a, const void *b) {
  const mlp_chunk *x = a, *y = b;
  return x->m != y->m ? (x->m < y->m) - (x->m > y->m) : (x->x > y->x) - (x->x < y->x);
}

xpi_status xpi_cpu_moe_mlp(xpi_pool *pool, xpi_cpu_mm_ws *ws, const xpi_cpu_kernels *kt, float *out, int32_t *pos,
                           float *g, float *u, const float *in, const xpi_experts *gate, const xpi_experts *up,
                           const xpi_experts *down, const int32_t *ids, int32_t n, int32_t k, int *done) {
  (void)g, (void)u; /* the composition's buffers: each job's rows stay in its thread's own */
  *done = 0;
  const xpi_dtype dt = gate->w[0].dtype;
  const int64_t S = (int64_t)n * k, H = gate->cols, I = gate->rows;
  if (S <= 0 || dt < 0 || dt >= 8 || !kt->gemm[dt] || !kt->gemv[dt] || up->w[0].dtype != dt ||
      down->w[0].dtype != dt || up->n != gate->n || down->n != gate->n || up->rows != I || up->cols != H ||
      down->rows != H || down->cols != I || I % 16 != 0)
    return XPI_OK;
  int32_t *start, *order, most;
  XPI_TRY(xpi_cpu_moe_sort(ids, S, gate->n, &start, &order, &most));
  if (kind_of(kt, dt, most) != K_GEMM) { /* decode and small batches: the composition's fused GEMVs */
    free(start), free(order);
    return XPI_OK;
  }
  const int nth = xpi_pool_size(pool);
  /* the chunks: experts with tokens, cut where they exceed the share */
  int64_t placed = start[gate->n];
  int32_t share = (int32_t)(placed / nth);
  share = share < MOE_MLP_MIN_CHUNK ? MOE_MLP_MIN_CHUNK : share > MOE_MLP_MAX_CHUNK ? MOE_MLP_MAX_CHUNK : share;
  int32_t njobs = 0, mc = 1, mg = 0; /* the largest chunk; the largest gathered as f32 rows */
  for (int32_t x = 0; x < gate->n; x++) {
    const int32_t m = start[x + 1] - start[x];
    if (m) njobs += kind_of(kt, dt, m) == K_GEMM ? (m + share - 1) / share : 1;
  }
  mlp_chunk *jobs = malloc((size_t)(njobs ? njobs : 1) * sizeof *jobs);
  if (!jobs) {
    free(start), free(order);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "cpu: moe_mlp: out of memory for %d jobs", njobs);
  }
  njobs = 0;
  for (int32_t x = 0; x < gate->n; x++) {
    const int32_t m = start[x + 1] - start[x], kind = m ? kind_of(kt, dt, m) : K_GEMV;
    const int32_t parts = !m ? 0 : kind == K_GEMM ? (m + share - 1) / share : 1;
    /* near-equal chunks, cut at the GEMM's tok_align: its last tile may have its own arithmetic (amx_layout.h's
     * compact tail), so only the expert's last chunk may end inside a tile */
    for (int32_t p = 0, t0 = 0; p < parts; p++) {
      const int32_t ta = kt->gemm[dt]->tok_align, c1 = (int32_t)((int64_t)m * (p + 1) / parts);
      const int32_t t1 = p + 1 < parts ? c1 / ta * ta : m;
      jobs[njobs++] = (mlp_chunk){x, t0, t1 - t0, kind};
      mc = t1 - t0 > mc ? t1 - t0 : mc;
      if (kind != K_GEMM || !kt->gemm[dt]->pack_rows) mg = t1 - t0 > mg ? t1 - t0 : mg;
      t0 = t1;
    }
  }
  qsort(jobs, (size_t)njobs, sizeof *jobs, by_size_desc);
  /* each thread's buffers for the largest chunk */
  const xpi_cpu_gemm *gm = kt->gemm[dt];
  mlp_job j = {.kt = kt, .gm = gm, .dt = dt, .gate = gate, .up = up, .down = down, .in = in, .out = out, .k = k,
               .H = H, .I = I, .start = start, .order = order, .jobs = jobs, .njobs = njobs};
  /* each token's input rounded or quantized once for its k experts (the form), when the GEMM has one: each chunk
   * then only gathers and lays out its tokens' bytes */
  const xpi_cpu_form *fm = k > 1 && gm->pack_rows ? gm->form : NULL;
  const size_t fbytes = fm ? up64((size_t)n * fm->row_bytes(H)) : 0;
  size_t at = 0;
  const size_t xb = (size_t)mg * (size_t)H * sizeof(float), rb = (size_t)mc * sizeof(int32_t); /* X or rows */
  j.o_x = at, at += up64(xb > rb ? xb : rb);
  j.o_p = at, at += up64(gm->pack_bytes(mc, H));
  j.o_g = at, at += up64((size_t)mc * (size_t)I * sizeof(float));
  j.o_u = at, at += up64((size_t)mc * (size_t)I * sizeof(float));
  j.o_p2 = at, at += up64(gm->pack_bytes(mc, I));
  const size_t sc = gm->scratch_bytes(H), sd = gm->scratch_bytes(I);
  j.o_s = at, at += up64(sc > sd ? sc : sd);
  j.stride = at;
  const int workers = njobs < nth ? njobs : nth;
  const size_t total = fbytes + j.stride * (size_t)(workers ? workers : 1); /* the form, then each thread's */
  char *own = NULL;
  j.buf = ws ? xpi_cpu_mm_ws_lock(ws, total) : (own = aligned_alloc(64, up64(total)));
  if (!j.buf) {
    free(start), free(order), free(jobs);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "cpu: moe_mlp: out of memory for %zu bytes of buffers", total);
  }
  /* slot order[i] in row i; the slots of no expert (a NaN router row) after them, as zero rows */
  for (int32_t i = 0; i < start[gate->n]; i++) pos[order[i]] = i;
  for (int64_t s = 0, r = start[gate->n]; s < S; s++)
    if (ids[s] < 0 || ids[s] >= gate->n) pos[s] = (int32_t)r, memset(out + r++ * H, 0, (size_t)H * sizeof *out);
  if (fm) {
    form_job f = {fm, j.buf, in, n, H};
    j.form = j.buf, j.buf += fbytes;
    xpi_pool_run_n(pool, form_run, &f, nth);
  }
  atomic_store(&j.next, 0);
  xpi_pool_run_n(pool, jobs_run, &j, workers);
  if (ws) xpi_cpu_mm_ws_unlock(ws);
  free(own), free(start), free(order), free(jobs);
  *done = 1;
  return XPI_OK;
}
