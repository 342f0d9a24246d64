/* A model that does not fit on its devices says so before loading. With only planned kinds (the XPUs), a plan:
 * weights per layer at their placed size, the KV pools for the context as the graph state allocates them
 * (model/graph.c: sliding layers in the window pool where that is smaller) and the step buffers, with the layers
 * placed by it (the context reduced with a notice where needed, the load refused with the numbers where even a
 * short one does not fit). Device maps mixing in the CPU: each XPU's share of the weights against its free
 * memory. Free memory, placed sizes and fit checks come from the backend table (ops/backend_registry.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/placement.h"

#include "core/status.h"
#include "ops/backend_registry.h"

#define FIT_MAX 64

typedef struct {
  xpi_backend *be[FIT_MAX];
  uint64_t need[FIT_MAX];
  int32_t first_layer[FIT_MAX], last_layer[FIT_MAX];
  int n;
} fit_table;

static void add(fit_table *t, xpi_backend *be, uint64_t bytes) {
  for (int i = 0; i < t->n; i++)
    if (t->be[i] == be) {
      t->need[i] += bytes;
      return;
    }
  if (t->n == FIT_MAX) return;
  t->be[t->n] = be;
  t->need[t->n] = bytes;
  t->n++;
}

static uint64_t placed_matrix_bytes(const xpi_backend_kind *k, const xpi_st_tensor *t, int want);
static uint64_t placed_layer_bytes(const xpi_backend_kind *k, const xpi_st_tensor *t, int want);

xpi_status xpi_xpu_fit_check(const xpi_config *cfg, const xpi_safetensors *st, xpi_backend *const *layer_be, int want) {
  int32_t nl = cfg->n_layers;
  if (nl <= 0) return XPI_OK;
  xpi_backend *first = layer_be[0], *last = layer_be[nl - 1];
  fit_table t = {0};
  const xpi_backend_kind *kf = xpi_backend_kind_of(first), *kl = xpi_backend_kind_of(last);
  for (size_t i = 0; i < xpi_st_count(st); i++) {
    const xpi_st_tensor *ts = xpi_st_at(st, i);
    int layer = -1;
    if (sscanf(ts->name, "model.layers.%d.", &layer) == 1) {
      if (layer >= 0 && layer < nl)
        add(&t, layer_be[layer], placed_layer_bytes(xpi_backend_kind_of(layer_be[layer]), ts, want));
    } else if (!strcmp(ts->name, "model.embed_tokens.weight")) {
      add(&t, first, placed_matrix_bytes(kf, ts, want == XPI_DT_Q8 || want == XPI_DT_Q4 ? -1 : want)); /* gathered */
      if (cfg->tie_word_embeddings && last != first) /* the tied head is placed again */
        add(&t, last, placed_matrix_bytes(kl, ts, want));
    } else if (!strcmp(ts->name, "model.norm.weight") || !strcmp(ts->name, "lm_head.weight")) {
      add(&t, last, placed_matrix_bytes(kl, ts, want));
    }
  }
  for (int i = 0; i < t.n; i++) {
    const xpi_backend_kind *k = xpi_backend_kind_of(t.be[i]);
    if (!k || !k->check_fit) continue;
    int lo = -1, hi = -1;
    for (int32_t l = 0; l < nl; l++)
      if (layer_be[l] == t.be[i]) {
        if (lo < 0) lo = l;
        hi = l;
      }
    char what[96];
    snprintf(what, sizeof what, "the weights for layers %d-%d of %d", lo, hi, nl);
    XPI_TRY(k->check_fit(xpi_backend_index(t.be[i]), t.need[i], what));
  }
  return XPI_OK;
}

/* ------------------------------------------------------------------ the plan (every backend an XPU) */

#define PLAN_RESERVE_SHIFT 6 /* 1/64 of each device's free memory stays free: RoPE tables, page rounding of
                              * allocations, the eager attention's scores, what the driver allocates itself */

/* Bytes of tensor t once placed with `want` on a backend of kind k: matrices converted or quantized (the block
 * formats of ops/quant_format.h: 32 weights a block, Q8 34 bytes, Q4 18 bytes, the last block of a row padded),
 * vectors as stored (model/weights.c converts matrices only). */
static uint64_t placed_matrix_bytes(const xpi_backend_kind *k, const xpi_st_tensor *t, int want) {
  if (t->ndim != 2 || want < 0 || !k) return t->nbytes;
  uint64_t b = k->placed_bytes(t->shape[0], t->shape[1], (xpi_dtype)want);
  return b ? b : t->nbytes;
}

/* A layer tensor's placed bytes. Under q8/q4 the mixture-of-experts router and the shared expert's gate stay
 * as stored (model/moe.c loads them with xpi_load_matrix_float: they decide which experts run), every other
 * matrix, the experts included, in the block format. */
static uint64_t placed_layer_bytes(const xpi_backend_kind *k, const xpi_st_tensor *t, int want) {
  static const char *const as_stored[] = {".mlp.gate.weight", ".mlp.shared_expert_gate.weight"};
  const size_t nl = strlen(t->name);
  if (want == XPI_DT_Q8 || want == XPI_DT_Q4)
    for (size_t i = 0; i < sizeof as_stored / sizeof as_stored[0]; i++) {
      const size_t sl = strlen(as_stored[i]);
      if (nl >= sl && !strcmp(t->name + nl - sl, as_stored[i])) return placed_matrix_bytes(k, t, -1);
    }
  return placed_matrix_bytes(k, t, want);
}

typedef struct plan_in {
  int n;                          /* devices */
  int32_t nl;
  uint64_t *layer;                /* [nl] weight bytes of each layer */
  uint64_t layer_max;
  uint64_t embed, head_alone, head_shared, norm; /* head_shared: on the embedding's device (tied, unquantized) */
  const xpi_graph *g;             /* the KV dtype and the layers' windows */
  int32_t block;                  /* pool block size */
  int32_t max_win;                /* the window pool's most blocks (lim->max_win_blocks; 0: no window pool) */
  uint64_t step, step_last;       /* step buffers of a device, of the last device */
} plan_in;

/* KV bytes of layers [l0, l1) for a context of ctx positions: what the graph state allocates for a main pool of
 * ctx positions (the default pool is at least the planned context), the sliding layers in the window pool where
 * that is smaller. */
static uint64_t kv_bytes_for(const plan_in *in, int32_t ctx, int32_t l0, int32_t l1) {
  return xpi_graph_kv_pool_bytes(in->g, l0, l1, (ctx + in->block - 1) / in->block, in->max_win, in->block);
}

/* Fixed bytes of device d when lo/hi are the first/last devices with layers. */
static uint64_t fixed_bytes(const plan_in *in, const xpi_mem_plan *p, int d, int lo, int hi) {
  uint64_t b = p->reserve[d] + (d == hi ? in->step_last : in->step);
  if (d == lo) b += in->embed;
  if (d == hi) b += in->norm + (lo == hi ? in->head_shared : in->head_alone);
  return b;
}

/* Layers per device for a context of ctx positions, counting `cost` bytes a layer while splitting: 1 when they
 * fit (p->first set), 0 when not. */
static int assign_at(const plan_in *in, xpi_mem_plan *p, int32_t ctx, uint64_t cost) {
  int lo = 0, hi = in->n - 1;
  int64_t m[XPI_MAX_BACKENDS], share[XPI_MAX_BACKENDS];
  for (int iter = 0; iter < 4 * in->n + 4; iter++) {
    int64_t sum = 0;
    for (int d = 0; d < in->n; d++) {
      uint64_t f = fixed_bytes(in, p, d, lo, hi);
      if (p->free[d] < f) {
        if (d < lo || d > hi || (lo == hi)) return 0; /* not even its step buffers, or the only device */
        m[d] = 0;
      } else {
        m[d] = d < lo || d > hi ? 0 : (int64_t)((p->free[d] - f) / cost);
      }
      if (m[d] > in->nl) m[d] = in->nl;
      sum += m[d];
    }
    if (m[lo] == 0 && lo < hi) { lo++; continue; } /* the embedding's device holds no layer: the next one */
    if (m[hi] == 0 && hi > lo) { hi--; continue; }
    if (sum < in->nl || sum == 0) return 0;
    /* in proportion to what each holds, boundaries at the rounded cumulative share, then capped */
    int64_t cum = 0, prev = 0;
    for (int d = 0; d < in->n; d++) {
      cum += m[d];
      int64_t b = (int64_t)((double)in->nl * (double)cum / (double)sum + 0.5);
      share[d] = b - prev;
      prev = b;
    }
    for (int d = 0; d + 1 < in->n; d++)
      if (share[d] > m[d]) share[d + 1] += share[d] - m[d], share[d] = m[d];
    for (int d = in->n - 1; d > 0; d--)
      if (share[d] > m[d]) share[d - 1] += share[d] - m[d], share[d] = m[d];
    int nlo = -1, nhi = -1;
    for (int d = 0; d < in->n; d++)
      if (share[d] > 0) {
        if (nlo < 0) nlo = d;
        nhi = d;
      }
    if (nlo < 0) return 0;
    if (nlo != lo || nhi != hi) { /* a device at an end got none: charge the ends again */
      lo = nlo;
      hi = nhi;
      continue;
    }
    p->first[0] = 0;
    for (int d = 0; d < in->n; d++) p->first[d + 1] = p->first[d] + (int32_t)share[d];
    /* the exact bytes (each layer's own size) */
    for (int d = 0; d < in->n; d++) {
      uint64_t w = 0;
      for (int32_t l = p->first[d]; l < p->first[d + 1]; l++) w += in->layer[l];
      if (d == lo) w += in->embed;
      if (d == hi) w += in->norm + (lo == hi ? in->head_shared : in->head_alone);
      p->weights[d] = w;
      p->kv[d] = kv_bytes_for(in, ctx, p->first[d], p->first[d + 1]);
      p->step[d] = d == hi ? in->step_last : in->step;
      if (p->weights[d] + p->kv[d] + p->step[d] + p->reserve[d] > p->free[d]) return 0;
    }
    p->ctx = ctx;
    return 1;
  }
  return 0;
}

/* The split charges each layer the largest layer's weights and the mean KV of a layer (sliding layers may keep
 * less than the others); where that split does not fit (a device got more than its share of the larger ones),
 * again with the largest layer KV. Without sliding layers both are the same. */
static int assign(const plan_in *in, xpi_mem_plan *p, int32_t ctx) {
  uint64_t kv_max = 0, kv_all = kv_bytes_for(in, ctx, 0, in->nl);
  for (int32_t l = 0; l < in->nl; l++) {
    uint64_t b = kv_bytes_for(in, ctx, l, l + 1);
    if (b > kv_max) kv_max = b;
  }
  uint64_t mean = (kv_all + (uint64_t)in->nl - 1) / (uint64_t)in->nl;
  return assign_at(in, p, ctx, in->layer_max + mean) || (mean < kv_max && assign_at(in, p, ctx, in->layer_max + kv_max));
}

/* The longest context in [min_ctx, ctx_wanted] (whole blocks below ctx_wanted) that fits, 0 if none. */
static int32_t longest_ctx(const plan_in *in, xpi_mem_plan *p, int32_t ctx_wanted, int32_t min_ctx) {
  if (assign(in, p, ctx_wanted)) return ctx_wanted;
  if (!assign(in, p, min_ctx)) return 0;
  int32_t good = min_ctx, bad = ctx_wanted;
  while (bad - good > in->block) {
    int32_t mid = good + (bad - good) / 2 / in->block * in->block;
    if (mid <= good) mid = good + in->block;
    if (assign(in, p, mid)) good = mid;
    else bad = mid;
  }
  return good;
}

static double mib(uint64_t b) { return (double)b / 1048576.0; }

xpi_status xpi_xpu_plan(const xpi_config *cfg, const xpi_safetensors *st, xpi_graph *g, int want,
                        const xpi_graph_limits *lim, int32_t ctx_wanted, int32_t min_ctx, xpi_mem_plan *plan) {
  memset(plan, 0, sizeof *plan);
  int32_t nl = cfg->n_layers;
  int n = g->n_backends, idx[XPI_MAX_BACKENDS];
  if (nl <= 0 || n <= 0) return XPI_OK;
  for (int d = 0; d < n; d++) {
    const xpi_backend_kind *k = xpi_backend_kind_of(g->backends[d]);
    if (!k || !k->planned || !g->backends[d]->ops->free_memory) return XPI_OK;
    idx[d] = xpi_backend_index(g->backends[d]);
  }
  const xpi_backend_kind *kind = xpi_backend_kind_of(g->backends[0]);
  xpi_mem_plan p = {0};
  p.n_dev = n;
  p.ctx_wanted = ctx_wanted;
  for (int d = 0; d < n; d++) {
    XPI_TRY(g->backends[d]->ops->free_memory(g->backends[d], &p.free[d]));
    p.reserve[d] = p.free[d] >> PLAN_RESERVE_SHIFT;
  }
  plan_in in = {0};
  in.n = n;
  in.nl = nl;
  in.layer = calloc((size_t)nl, sizeof *in.layer);
  if (!in.layer) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  int quant = want == XPI_DT_Q8 || want == XPI_DT_Q4;
  for (size_t i = 0; i < xpi_st_count(st); i++) { /* the tensors model/weights.c places */
    const xpi_st_tensor *ts = xpi_st_at(st, i);
    int layer = -1;
    if (sscanf(ts->name, "model.layers.%d.", &layer) == 1) {
      if (layer >= 0 && layer < nl) in.layer[layer] += placed_layer_bytes(kind, ts, want);
    } else if (!strcmp(ts->name, "model.embed_tokens.weight")) {
      in.embed = placed_matrix_bytes(kind, ts, quant ? -1 : want); /* gathered rows: never quantized */
      if (cfg->tie_word_embeddings) {
        in.head_alone = placed_matrix_bytes(kind, ts, want);
        in.head_shared = quant ? in.head_alone : 0; /* unquantized and tied on one device: the same tensor */
      }
    } else if (!strcmp(ts->name, "lm_head.weight") && !cfg->tie_word_embeddings) {
      in.head_alone = in.head_shared = placed_matrix_bytes(kind, ts, want);
    } else if (!strcmp(ts->name, "model.norm.weight")) {
      in.norm = placed_matrix_bytes(kind, ts, want);
    }
  }
  for (int32_t l = 0; l < nl; l++)
    if (in.layer[l] > in.layer_max) in.layer_max = in.layer[l];
  in.g = g;
  in.block = lim->block_size;
  in.max_win = lim->max_win_blocks;
  in.step = xpi_graph_step_bytes(cfg, lim, 0);
  in.step_last = xpi_graph_step_bytes(cfg, lim, 1);
  if (min_ctx > ctx_wanted) min_ctx = ctx_wanted;
  int32_t ctx = longest_ctx(&in, &p, ctx_wanted, min_ctx);
  const xpi_st_tensor *et = xpi_st_find(st, "model.embed_tokens.weight");
  if (ctx < ctx_wanted && et && et->dtype != XPI_DT_Q8 && et->dtype != XPI_DT_Q4) {
    /* the embedding table in host memory (only the step's rows go to the device), a tied lm_head placed alone */
    plan_in h = in;
    h.embed = 0;
    h.head_shared = h.head_alone;
    xpi_mem_plan ph = p;
    int32_t ctx_h = longest_ctx(&h, &ph, ctx_wanted, min_ctx);
    if (ctx_h > ctx) {
      ctx = ctx_h;
      p = ph;
      p.embed_on_host = 1;
      in = h;
    }
  }
  int ok = ctx > 0 && assign(&in, &p, ctx);
  if (!ok) {
    uint64_t tot_free = 0, tot_w = in.embed + in.norm + (n > 1 ? in.head_alone : in.head_shared), kv = 0;
    for (int d = 0; d < n; d++) tot_free += p.free[d];
    for (int32_t l = 0; l < nl; l++) tot_w += in.layer[l];
    kv = kv_bytes_for(&in, min_ctx, 0, nl);
    char devs[96];
    if (n == 1) snprintf(devs, sizeof devs, "%s", g->backends[0]->device);
    else snprintf(devs, sizeof devs, "%s-%d", g->backends[0]->device, idx[n - 1]);
    free(in.layer);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY,
                   "the model does not fit on %s (%.1f MiB free in all): weights %.1f MiB (%d layers of up to "
                   "%.1f MiB, embedding %.1f MiB, lm_head %.1f MiB), a KV cache of at least %d positions %.1f MiB, "
                   "step buffers %.1f MiB per device (%.1f on the last) and a reserve of %.1f MiB per device; use a "
                   "smaller dtype or --quant, a device map over more XPUs (--device-map auto), or the CPU",
                   devs, mib(tot_free), mib(tot_w), nl, mib(in.layer_max), mib(in.embed),
                   mib(n > 1 ? in.head_alone : in.head_shared), min_ctx, mib(kv), mib(in.step), mib(in.step_last),
                   mib(p.reserve[0]));
  }
  free(in.layer);
  if (p.embed_on_host)
    xpi_log(2, "memory plan: the embedding table (%.1f MiB) stays in host memory; each step writes its tokens' rows "
               "to the device", mib(et ? et->nbytes : 0));
  uint64_t kv_max = 0;
  for (int d = 0; d < n; d++)
    if (p.kv[d] > kv_max) kv_max = p.kv[d];
  if (p.ctx < ctx_wanted)
    xpi_log(2,
            "memory plan: a KV cache of %d positions does not fit next to the weights on %s%s; requests default "
            "to a context of %d positions (%.1f MiB of KV per device at most)",
            ctx_wanted, g->backends[0]->device, n > 1 ? " and the other devices of the map" : "", p.ctx, mib(kv_max));
  for (int d = 0; d <= n; d++) g->layer_dev[d] = p.first[d];
  g->kv_plan_tokens = p.ctx;
  *plan = p;
  return XPI_OK;
}
