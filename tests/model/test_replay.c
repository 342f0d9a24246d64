/* The recorded decode step ("XPU graph"): a CPU backend wrapped with capture_begin/capture_end/replay that
 * records every op (arguments by value, buffers by address) and replays the recording. Decoding through it
 * must give exactly the logits of the plain backend, which proves the graph reads ids, positions, sequence
 * rows and block tables from backend buffers at run time instead of baking them into the recorded step.
 * Then batches: five sequences of different lengths prefilled in one step, then decoded together, which
 * replays the recording of the 8-sequence bucket (three padding tokens that write to the spare block): the
 * logits must match the plain backend running the same five-token steps, and one recording per bucket; at
 * every other step two rows ask for their top-k instead (after the replay; one of them for its whole row
 * too): checked against the row, with the bytes read back. */
#include <math.h>

#include "check.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/graph.h"
#include "model/weights.h"

enum { OP_EMBED, OP_RMSNORM, OP_MATMUL, OP_ROPE, OP_ATTN, OP_SWIGLU, OP_GEGLU, OP_SOFTCAP, OP_SCALE, OP_ADD, OP_ARGMAX };
typedef struct rec {
  int kind;
  float *out, *x;
  const float *a, *b, *c;
  const xpi_weight *w, *w2;
  const int32_t *ids;
  int32_t *iout;
  int32_t n, i1, i2, i3;
  int64_t count;
  float f;
  xpi_kv *kv;
  xpi_kv_map map;
  xpi_rope_params rp;
  xpi_attn_params ap;
} rec;

typedef struct recording {
  rec *ops;
  int n;
} recording;

static const xpi_backend_ops *g_cpu;
static rec g_recs[4096];
static int g_n, g_recording, g_replays, g_recordings;

#define RECORD(...) do { if (g_recording) { if (g_n < 4096) g_recs[g_n++] = (rec){__VA_ARGS__}; return XPI_OK; } } while (0)

static xpi_status w_embed(xpi_backend *be, float *out, const xpi_weight *t, const int32_t *ids, int32_t n) {
  RECORD(.kind = OP_EMBED, .out = out, .w = t, .ids = ids, .n = n);
  return g_cpu->embed(be, out, t, ids, n);
}
static xpi_status w_rmsnorm(xpi_backend *be, float *out, float *x, const float *res, const xpi_weight *w, int32_t n,
                            int32_t d, float eps) {
  RECORD(.kind = OP_RMSNORM, .out = out, .x = x, .a = res, .w = w, .n = n, .i1 = d, .f = eps);
  return g_cpu->rmsnorm(be, out, x, res, w, n, d, eps);
}
static xpi_status w_matmul(xpi_backend *be, float *out, const float *in, const xpi_weight *w, const xpi_weight *b, int32_t n) {
  RECORD(.kind = OP_MATMUL, .out = out, .a = in, .w = w, .w2 = b, .n = n);
  return g_cpu->matmul(be, out, in, w, b, n);
}
static xpi_status w_rope(xpi_backend *be, float *q, float *k, const int32_t *pos, int32_t n, int32_t hq, int32_t hk,
                         const xpi_rope_params *rp, const float *inv, const xpi_weight *qn, const xpi_weight *kn, float eps) {
  RECORD(.kind = OP_ROPE, .out = q, .x = k, .ids = pos, .n = n, .i1 = hq, .i2 = hk, .rp = *rp, .a = inv, .w = qn, .w2 = kn, .f = eps);
  return g_cpu->rope(be, q, k, pos, n, hq, hk, rp, inv, qn, kn, eps);
}
static xpi_status w_attn(xpi_backend *be, float *out, const float *q, const float *k, const float *v, xpi_kv *kv,
                         int32_t layer, const xpi_kv_map *map, int32_t n, int32_t hq, int32_t hk, int32_t hd,
                         const xpi_attn_params *ap) {
  RECORD(.kind = OP_ATTN, .out = out, .a = q, .b = k, .c = v, .kv = kv, .count = layer, .map = *map, .n = n, .i1 = hq,
         .i2 = hk, .i3 = hd, .ap = *ap);
  return g_cpu->attention(be, out, q, k, v, kv, layer, map, n, hq, hk, hd, ap);
}
static xpi_status w_swiglu(xpi_backend *be, float *out, const float *g, const float *u, int32_t n, int32_t f) {
  RECORD(.kind = OP_SWIGLU, .out = out, .a = g, .b = u, .n = n, .i1 = f);
  return g_cpu->swiglu(be, out, g, u, n, f);
}
static xpi_status w_geglu(xpi_backend *be, float *out, const float *g, const float *u, int32_t n, int32_t f) {
  RECORD(.kind = OP_GEGLU, .out = out, .a = g, .b = u, .n = n, .i1 = f);
  return g_cpu->geglu(be, out, g, u, n, f);
}
static xpi_status w_softcap(xpi_backend *be, float *x, int64_t count, float cap) {
  RECORD(.kind = OP_SOFTCAP, .x = x, .count = count, .f = cap);
  return g_cpu->softcap(be, x, count, cap);
}
static xpi_status w_scale(xpi_backend *be, float *x, int64_t count, float s) {
  RECORD(.kind = OP_SCALE, .x = x, .count = count, .f = s);
  return g_cpu->scale(be, x, count, s);
}
static xpi_status w_add(xpi_backend *be, float *x, const float *y, int64_t count) {
  RECORD(.kind = OP_ADD, .x = x, .a = y, .count = count);
  return g_cpu->add(be, x, y, count);
}
static xpi_status w_argmax(xpi_backend *be, int32_t *out, const float *x, int32_t rows, int32_t cols) {
  RECORD(.kind = OP_ARGMAX, .iout = out, .a = x, .n = rows, .i1 = cols);
  return g_cpu->argmax(be, out, x, rows, cols);
}
static xpi_status cap_begin(xpi_backend *be) { (void)be; g_recording = 1; g_n = 0; return XPI_OK; }
static xpi_status cap_end(xpi_backend *be, void **graph) {
  (void)be;
  g_recording = 0;
  recording *r = malloc(sizeof *r);
  r->ops = malloc(sizeof(rec) * (size_t)g_n);
  memcpy(r->ops, g_recs, sizeof(rec) * (size_t)g_n);
  r->n = g_n;
  *graph = r;
  g_recordings++;
  return XPI_OK;
}
static void graph_free(xpi_backend *be, void *graph) {
  (void)be;
  recording *r = graph;
  free(r->ops);
  free(r);
}
static xpi_status replay(xpi_backend *be, void *graph) {
  const recording *g = graph;
  g_replays++;
  for (int i = 0; i < g->n; i++) {
    const rec *r = &g->ops[i];
    xpi_status s = XPI_OK;
    switch (r->kind) {
      case OP_EMBED: s = g_cpu->embed(be, r->out, r->w, r->ids, r->n); break;
      case OP_RMSNORM: s = g_cpu->rmsnorm(be, r->out, r->x, r->a, r->w, r->n, r->i1, r->f); break;
      case OP_MATMUL: s = g_cpu->matmul(be, r->out, r->a, r->w, r->w2, r->n); break;
      case OP_ROPE: s = g_cpu->rope(be, r->out, r->x, r->ids, r->n, r->i1, r->i2, &r->rp, r->a, r->w, r->w2, r->f); break;
      case OP_ATTN:
        s = g_cpu->attention(be, r->out, r->a, r->b, r->c, r->kv, (int32_t)r->count, &r->map, r->n, r->i1, r->i2, r->i3,
                             &r->ap);
        break;
      case OP_SWIGLU: s = g_cpu->swiglu(be, r->out, r->a, r->b, r->n, r->i1); break;
      case OP_GEGLU: s = g_cpu->geglu(be, r->out, r->a, r->b, r->n, r->i1); break;
      case OP_SOFTCAP: s = g_cpu->softcap(be, r->x, r->count, r->f); break;
      case OP_SCALE: s = g_cpu->scale(be, r->x, r->count, r->f); break;
      case OP_ADD: s = g_cpu->add(be, r->x, r->a, r->count); break;
      case OP_ARGMAX: s = g_cpu->argmax(be, r->iout, r->a, r->n, r->i1); break;
    }
    if (s != XPI_OK) return s;
  }
  return XPI_OK;
}

typedef struct model_on {
  xpi_model_weights w;
  xpi_graph g;
} model_on;

static void model_load(model_on *m, xpi_backend *be, const xpi_config *cfg, const xpi_safetensors *st) {
  xpi_backend *layer_be[64];
  for (int l = 0; l < cfg->n_layers; l++) layer_be[l] = be;
  CHECK_OK(xpi_weights_load(cfg, st, layer_be, -1, &m->w));
  m->g = (xpi_graph){.cfg = cfg, .w = &m->w, .backends = {be}, .n_backends = 1, .layer_dev = {0, cfg->n_layers},
                     .attn = XPI_ATTN_SDPA, .kv_dtype = XPI_DT_F32};
  CHECK_OK(xpi_graph_init(&m->g));
}

static void model_free(model_on *m) {
  xpi_graph_release(&m->g);
  xpi_weights_free(&m->w);
}

/* Decodes ids one at a time (after a 3-token prefill) on be; last-position logits of every step into out. */
static void decode(xpi_backend *be, const xpi_config *cfg, const xpi_safetensors *st, const int32_t *ids, int n, float *out) {
  model_on m;
  model_load(&m, be, cfg, st);
  xpi_graph_state *gs = NULL;
  CHECK_OK(xpi_graph_state_create_single(&m.g, 64, &gs));
  CHECK_OK(xpi_graph_forward(&m.g, gs, ids, 3, 0, 0, out));
  for (int i = 3; i < n; i++) CHECK_OK(xpi_graph_forward(&m.g, gs, ids + i, 1, i, 0, out + (size_t)(i - 2) * cfg->vocab_size));
  xpi_graph_state_free(gs);
  model_free(&m);
}

enum { NS = 5, BS = 16, MAXB = 4, STEPS = 6 };

/* Five sequences: prompts of different lengths in one prefill step, then STEPS decode steps of all five
 * (teacher-forced with the ids in feed[step][seq], so both backends see the same inputs); the logits of
 * every decode step into out[step][seq][vocab]. Block tables interleave the sequences' blocks. */
enum { TK = 9 }; /* top-k rows of the batch: row 1 wants 6 values, row 3 wants 9 and its whole row too */

static int tk_full(void *user, int32_t r, const int32_t *ids, const float *vals, int32_t n) {
  (void)user, (void)ids, (void)vals, (void)n;
  return r == 3;
}

/* The top-k outputs of a decode step against the whole row 3 (read as well, the same device buffer: exact),
 * row 1's logits left unread, and the bytes the step read back. */
static void check_topk(const int32_t *tid, const float *tval, const float *tnorm, const unsigned char *full,
                       const float *row1, const float *row3, int32_t V, uint64_t bytes) {
  CHECK(full[1] == 0 && full[3] == 1 && row1[0] == -12345.0f, "top-k rows: full %d %d, row 1 read: %d", full[1],
        full[3], row1[0] != -12345.0f);
  int32_t prev = -1;
  for (int j = 0; j < TK; j++) { /* row 3: the j-th best of its row, larger value first, lower id on ties */
    int32_t best = -1;
    for (int32_t c = 0; c < V; c++) {
      if (prev >= 0 && !(row3[c] < row3[prev] || (row3[c] == row3[prev] && c > prev))) continue;
      if (best < 0 || row3[c] > row3[best]) best = c;
    }
    CHECK(tid[3 * TK + j] == best && tval[3 * TK + j] == row3[best], "top-k row 3 rank %d: %d want %d", j,
          tid[3 * TK + j], best);
    prev = best;
  }
  double sum = 0;
  for (int32_t c = 0; c < V; c++) sum += exp((double)row3[c] - row3[tid[3 * TK]]);
  CHECK(tnorm[6] == row3[tid[3 * TK]] && fabs(tnorm[7] - sum) <= 1e-7 * sum, "top-k row 3 normaliser %g %g want %g",
        (double)tnorm[6], (double)tnorm[7], sum);
  for (int j = 1; j < 6; j++) CHECK(tval[TK + j] <= tval[TK + j - 1], "top-k row 1 in order at %d", j);
  /* rows 0, 2, 4 and 3 whole; 6 and 9 ids and values and two normalisers */
  const uint64_t want = 4 * (uint64_t)V * 4 + (6 + 9) * 8 + 2 * 8;
  CHECK(bytes == want, "a top-k decode step read %llu bytes back, want %llu", (unsigned long long)bytes,
        (unsigned long long)want);
}

static void decode_batch(xpi_backend *be, const xpi_config *cfg, const xpi_safetensors *st, const int32_t *prompt,
                         const int32_t feed[STEPS][NS], float *out) {
  model_on m;
  model_load(&m, be, cfg, st);
  const int32_t plen[NS] = {3, 5, 2, 7, 4}, V = cfg->vocab_size;
  xpi_graph_limits lim = {32, 8, MAXB, NS * MAXB, 0, BS, 8, TK, 0, 0};
  xpi_graph_state *gs = NULL;
  CHECK_OK(xpi_graph_state_create(&m.g, &lim, &gs));
  int32_t tables[NS * MAXB], ids[32], pos[32], seq[32], n = 0;
  for (int s = 0; s < NS; s++)
    for (int b = 0; b < MAXB; b++) tables[s * MAXB + b] = b * NS + (NS - 1 - s);
  for (int s = 0; s < NS; s++)
    for (int i = 0; i < plen[s]; i++) ids[n] = prompt[(s * 7 + i) % 12], pos[n] = i, seq[n] = s, n++;
  xpi_graph_batch pre = {.n = n, .ids = ids, .pos = pos, .seq = seq, .n_rows = NS, .tables = tables};
  if (gs) CHECK_OK(xpi_graph_step(&m.g, gs, &pre));
  float *rows[NS];
  for (int step = 0; step < STEPS && gs; step++) {
    for (int s = 0; s < NS; s++) {
      ids[s] = feed[step][s];
      pos[s] = plen[s] + step;
      seq[s] = s;
      rows[s] = out + ((size_t)step * NS + (size_t)s) * (size_t)V;
    }
    xpi_graph_batch b = {.n = NS, .ids = ids, .pos = pos, .seq = seq, .n_rows = NS, .tables = tables, .n_out = NS,
                         .logits = rows, .decode = 1};
    /* odd steps: rows 1 and 3 ask for their top-k instead (row 1's logits stay unread, as the engine's do) */
    int32_t tk_n[NS] = {0, 6, 0, 9, 0}, tid[NS * TK];
    float tval[NS * TK], tnorm[2 * NS], row1[1] = {-12345.0f};
    unsigned char full[NS];
    float *row1_real = rows[1];
    if (step % 2) {
      rows[1] = row1;
      b.topk_n = tk_n, b.topk_ids = tid, b.topk_vals = tval, b.topk_norm = tnorm, b.topk_full = tk_full, b.full = full;
    }
    uint64_t before = xpi_graph_state_bytes_read(gs);
    CHECK_OK(xpi_graph_step(&m.g, gs, &b));
    if (step % 2) {
      check_topk(tid, tval, tnorm, full, row1, rows[3], V, xpi_graph_state_bytes_read(gs) - before);
      for (int32_t c = 0; c < V; c++) row1_real[c] = c == tid[TK] ? tval[TK] : 0; /* compared by the caller */
    }
  }
  xpi_graph_state_free(gs);
  model_free(&m);
}

int main(void) {
  char *dir = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
  xpi_config cfg;
  xpi_safetensors *st = NULL;
  CHECK_OK(xpi_config_load(dir, &cfg));
  CHECK_OK(xpi_st_open_dir(dir, &st));
  xpi_backend_config bc = {"cpu", 2, 1};
  xpi_backend *plain = NULL, *wrapped = NULL;
  CHECK_OK(xpi_backend_cpu_create(&bc, &plain));
  CHECK_OK(xpi_backend_cpu_create(&bc, &wrapped));
  if (!st || !plain || !wrapped) return xpi_test_done();
  static xpi_backend_ops ops;
  g_cpu = wrapped->ops;
  ops = *wrapped->ops;
  ops.embed = w_embed, ops.rmsnorm = w_rmsnorm, ops.matmul = w_matmul, ops.rope = w_rope, ops.attention = w_attn;
  ops.swiglu = w_swiglu, ops.geglu = w_geglu, ops.softcap = w_softcap, ops.scale = w_scale, ops.add = w_add;
  ops.argmax = w_argmax;
  /* the fused ops are optional (NULL: the blocks run the separate ops above, which this wrapper records); the CPU's
   * composition of them would run at capture time instead of being recorded */
  ops.matmul_multi = NULL, ops.matmul_glu = NULL, ops.matmul_add = NULL;
  ops.capture_begin = cap_begin, ops.capture_end = cap_end, ops.replay = replay, ops.graph_free = graph_free;
  wrapped->ops = &ops;
  enum { N = 12 };
  const int32_t ids[N] = {313, 2897, 286, 652, 300, 466, 1382, 1289, 389, 300, 258, 293};
  size_t sz = (size_t)(N - 2) * cfg.vocab_size;
  float *a = calloc(sz, sizeof *a), *b = calloc(sz, sizeof *b);
  decode(plain, &cfg, st, ids, N, a);
  decode(wrapped, &cfg, st, ids, N, b);
  CHECK(g_replays == N - 3, "decode steps replayed: %d of %d", g_replays, N - 3);
  CHECK(g_recordings == 1 && g_n > 4 * cfg.n_layers, "recorded %d ops in %d recordings", g_n, g_recordings);
  CHECK(memcmp(a, b, sz * sizeof *a) == 0, "replayed decode differs from the plain one");
  free(a);
  free(b);

  /* batches: the 8-sequence bucket with three padding tokens */
  int32_t feed[STEPS][NS];
  for (int s = 0; s < STEPS; s++)
    for (int q = 0; q < NS; q++) feed[s][q] = ids[(s * 5 + q * 3) % N];
  size_t bsz = (size_t)STEPS * NS * (size_t)cfg.vocab_size;
  a = calloc(bsz, sizeof *a);
  b = calloc(bsz, sizeof *b);
  g_replays = g_recordings = 0;
  decode_batch(plain, &cfg, st, ids, feed, a);
  decode_batch(wrapped, &cfg, st, ids, feed, b);
  CHECK(g_replays == STEPS && g_recordings == 1, "batched decode: %d replays, %d recordings", g_replays, g_recordings);
  /* the replayed step runs 8 rows where the plain one runs 5: the matmuls may block them differently, so the
   * logits agree to rounding (a wrong position, sequence or block moves them by far more) */
  double worst = 0;
  for (size_t i = 0; i < bsz; i++) worst = fmax(worst, fabs((double)a[i] - b[i]));
  CHECK(worst < 1e-4, "batched replayed decode differs from the plain one by %g", worst);
  free(a);
  free(b);

  wrapped->ops = g_cpu;
  plain->ops->destroy(plain);
  wrapped->ops->destroy(wrapped);
  xpi_st_close(st);
  free(dir);
  return xpi_test_done();
}
