/* The recorded decode step ("XPU graph"): a CPU backend wrapped with capture_begin/capture_end/replay that
 * records every op (arguments by value, buffers by address) and replays the recording. Decoding through it
 * must give exactly the logits of the plain backend, which proves the graph reads ids and positions from
 * backend buffers at run time instead of baking them into the recorded step. */
#include "check.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/graph.h"
#include "model/weights.h"

enum { OP_EMBED, OP_RMSNORM, OP_MATMUL, OP_ROPE, OP_ATTN, OP_SWIGLU, OP_ADD };
typedef struct rec {
  int kind;
  float *out, *x;
  const float *a, *b, *c;
  const xpi_weight *w, *w2;
  const int32_t *ids;
  int32_t n, i1, i2, i3;
  int64_t count;
  float f;
  xpi_kv *kv;
  xpi_rope_params rp;
  xpi_attn_impl impl;
} rec;

static const xpi_backend_ops *g_cpu;
static rec g_recs[4096];
static int g_n, g_recording, g_replays;

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
                         int32_t layer, const int32_t *pos, int32_t n, int32_t hq, int32_t hk, int32_t hd, float scale,
                         xpi_attn_impl impl) {
  RECORD(.kind = OP_ATTN, .out = out, .a = q, .b = k, .c = v, .kv = kv, .count = layer, .ids = pos, .n = n, .i1 = hq,
         .i2 = hk, .i3 = hd, .f = scale, .impl = impl);
  return g_cpu->attention(be, out, q, k, v, kv, layer, pos, n, hq, hk, hd, scale, impl);
}
static xpi_status w_swiglu(xpi_backend *be, float *out, const float *g, const float *u, int32_t n, int32_t f) {
  RECORD(.kind = OP_SWIGLU, .out = out, .a = g, .b = u, .n = n, .i1 = f);
  return g_cpu->swiglu(be, out, g, u, n, f);
}
static xpi_status w_add(xpi_backend *be, float *x, const float *y, int64_t count) {
  RECORD(.kind = OP_ADD, .x = x, .a = y, .count = count);
  return g_cpu->add(be, x, y, count);
}
static xpi_status cap_begin(xpi_backend *be) { (void)be; g_recording = 1; g_n = 0; return XPI_OK; }
static xpi_status cap_end(xpi_backend *be, void **graph) { (void)be; g_recording = 0; *graph = g_recs; return XPI_OK; }
static void graph_free(xpi_backend *be, void *graph) { (void)be; (void)graph; }
static xpi_status replay(xpi_backend *be, void *graph) {
  (void)graph;
  g_replays++;
  for (int i = 0; i < g_n; i++) {
    rec *r = &g_recs[i];
    xpi_status s = XPI_OK;
    switch (r->kind) {
      case OP_EMBED: s = g_cpu->embed(be, r->out, r->w, r->ids, r->n); break;
      case OP_RMSNORM: s = g_cpu->rmsnorm(be, r->out, r->x, r->a, r->w, r->n, r->i1, r->f); break;
      case OP_MATMUL: s = g_cpu->matmul(be, r->out, r->a, r->w, r->w2, r->n); break;
      case OP_ROPE: s = g_cpu->rope(be, r->out, r->x, r->ids, r->n, r->i1, r->i2, &r->rp, r->a, r->w, r->w2, r->f); break;
      case OP_ATTN:
        s = g_cpu->attention(be, r->out, r->a, r->b, r->c, r->kv, (int32_t)r->count, r->ids, r->n, r->i1, r->i2, r->i3, r->f, r->impl);
        break;
      case OP_SWIGLU: s = g_cpu->swiglu(be, r->out, r->a, r->b, r->n, r->i1); break;
      case OP_ADD: s = g_cpu->add(be, r->x, r->a, r->count); break;
    }
    if (s != XPI_OK) return s;
  }
  return XPI_OK;
}

/* Decodes ids one at a time (after a 3-token prefill) on be; last-position logits of every step into out. */
static void decode(xpi_backend *be, const xpi_config *cfg, const xpi_safetensors *st, const int32_t *ids, int n, float *out) {
  xpi_backend *layer_be[64];
  for (int l = 0; l < cfg->n_layers; l++) layer_be[l] = be;
  xpi_model_weights w;
  CHECK_OK(xpi_weights_load(cfg, st, layer_be, -1, &w));
  xpi_graph g = {.cfg = cfg, .w = &w, .backends = {be}, .n_backends = 1, .layer_dev = {0, cfg->n_layers},
                 .attn = XPI_ATTN_SDPA, .kv_dtype = XPI_DT_F32};
  CHECK_OK(xpi_graph_init(&g));
  xpi_graph_state *gs = NULL;
  CHECK_OK(xpi_graph_state_create(&g, 64, &gs));
  CHECK_OK(xpi_graph_forward(&g, gs, ids, 3, 0, 0, out));
  for (int i = 3; i < n; i++) CHECK_OK(xpi_graph_forward(&g, gs, ids + i, 1, i, 0, out + (size_t)(i - 2) * cfg->vocab_size));
  xpi_graph_state_free(gs);
  xpi_graph_release(&g);
  xpi_weights_free(&w);
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
  ops.swiglu = w_swiglu, ops.add = w_add;
  ops.capture_begin = cap_begin, ops.capture_end = cap_end, ops.replay = replay, ops.graph_free = graph_free;
  wrapped->ops = &ops;
  enum { N = 12 };
  const int32_t ids[N] = {313, 2897, 286, 652, 300, 466, 1382, 1289, 389, 300, 258, 293};
  size_t sz = (size_t)(N - 2) * cfg.vocab_size;
  float *a = calloc(sz, sizeof *a), *b = calloc(sz, sizeof *b);
  decode(plain, &cfg, st, ids, N, a);
  decode(wrapped, &cfg, st, ids, N, b);
  CHECK(g_replays == N - 3, "decode steps replayed: %d of %d", g_replays, N - 3);
  CHECK(g_n > 4 * cfg.n_layers, "recorded %d ops", g_n);
  CHECK(memcmp(a, b, sz * sizeof *a) == 0, "replayed decode differs from the plain one");
  free(a);
  free(b);
  wrapped->ops = g_cpu;
  plain->ops->destroy(plain);
  wrapped->ops->destroy(wrapped);
  xpi_st_close(st);
  free(dir);
  return xpi_test_done();
}
