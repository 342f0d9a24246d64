/* CPU causal attention over a paged KV cache (attention_cpu.h).
 *
 * sdpa / flash: the work is cut into units of (query tile, KV head, key range), over every sequence of the
 * step at once. A query tile is up to XPI_CPU_ATTN_ROWS rows of one run of a sequence's consecutive tokens
 * and one KV head's GQA group: row rho is token rho / grp of the run, q head g*grp + rho % grp, so every K/V
 * row a tile reads serves all the q heads of the group and several tokens. Prefill is parallel across query
 * tiles and heads; decode of many sequences across sequences and heads; a single decoding sequence has few
 * tiles (hk of them), so the key range of each may be split in nsplit pieces whose partial (max, sum, acc)
 * are merged at the end. Units are taken from a shared counter, the most expensive (longest key range)
 * first, which balances causal prefill, sequences of different lengths and a machine shared with other work.
 * A sliding window shrinks a tile's key range to [first key of its rows' windows, last position + 1): the keys
 * before it (their blocks) are never read, so a windowed decode costs the window, not the depth.
 * eager: the reference of transformers' eager_attention_forward (softcap after the scaling, then the causal
 * and sliding-window masks), kept plain on purpose. */
#include "ops/cpu/attention_cpu.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

/* ------------------------------------------------------------------ tiled (sdpa, flash) */

/* Query tile: rows [r0, r0 + nq) of one sequence run's rows (row rho: token t0 + rho / grp, q head
 * g * grp + rho % grp of KV head g), seeing keys [lo, len) of its sequence (lo > 0: a sliding window). */
typedef struct {
  int32_t t0, r0, nq, lo, len, seq;
} qtile;

typedef struct {
  const xpi_cpu_kernels *k;
  float *out;
  const float *q;
  const xpi_cpu_kv_layer *kv;
  const xpi_cpu_attn_batch *b;
  const qtile *tiles;  /* longest key range first */
  int32_t hq, grp, ntiles, nsplit, window;
  int64_t hdp, units;
  float scale, softcap;
  atomic_llong next;   /* next unit to take */
  float *part;         /* nsplit > 1: per unit XPI_CPU_ATTN_ROWS x (hdp + 2): acc rows, then m[], l[] */
  float *scratch;      /* per thread: scratch_per floats (tile scratch, m, l, acc) */
  size_t scratch_per;
} tiled_job;

/* The first key position p attends to: p - window + 1 (transformers: kv_idx > q_idx - window), or 0. */
static int32_t first_key(int32_t p, int32_t window) { return window > 0 && p >= window ? p - window + 1 : 0; }

static size_t part_per(const tiled_job *j) { return (size_t)XPI_CPU_ATTN_ROWS * (size_t)(j->hdp + 2); }

/* Unit u -> tile ti, KV head g, key piece sp (tiles in the job's order: the most expensive first). */
static void unit_coords(const tiled_job *j, int64_t u, int32_t *ti, int32_t *g, int32_t *sp) {
  const int64_t per_tile = (int64_t)j->kv->hk * j->nsplit;
  *ti = (int32_t)(u / per_tile);
  *g = (int32_t)(u % per_tile / j->nsplit);
  *sp = (int32_t)(u % j->nsplit);
}

static int64_t unit_index(const tiled_job *j, int32_t ti, int32_t g, int32_t sp) {
  return ((int64_t)ti * j->kv->hk + g) * j->nsplit + sp;
}

/* Row rho of a tile's run (KV head g) -> offset of its [hd] row in q and out. */
static size_t row_off(const tiled_job *j, const qtile *tl, int32_t g, int64_t rho) {
  const int64_t t = tl->t0 + rho / j->grp, h = (int64_t)g * j->grp + rho % j->grp;
  return (size_t)(t * j->hq + h) * (size_t)j->kv->hd;
}

static void tiled_run(void *ctx, int ith, int nth) {
  (void)nth;
  tiled_job *j = ctx;
  const xpi_cpu_kv_layer *kv = j->kv;
  const int32_t hd = kv->hd;
  float *ts = j->scratch + (size_t)ith * j->scratch_per;
  float *m = ts + xpi_cpu_attn_scratch_floats(hd), *l = m + XPI_CPU_ATTN_ROWS, *acc = l + XPI_CPU_ATTN_ROWS;
  const size_t esz = xpi_dtype_size(kv->dtype);
  for (;;) {
    const int64_t u = atomic_fetch_add(&j->next, 1);
    if (u >= j->units) break;
    int32_t ti, g, sp;
    unit_coords(j, u, &ti, &g, &sp);
    const qtile *tl = &j->tiles[ti];
    xpi_cpu_attn_tile t;
    t.nq = tl->nq;
    for (int32_t r = 0; r < t.nq; r++) {
      t.q[r] = j->q + row_off(j, tl, g, tl->r0 + r);
      t.last[r] = j->b->pos[tl->t0 + (tl->r0 + r) / j->grp];
      t.first[r] = first_key(t.last[r], j->window);
      m[r] = -INFINITY;
      l[r] = 0;
    }
    memset(acc, 0, (size_t)t.nq * (size_t)j->hdp * sizeof *acc);
    t.hd = hd;
    t.k = (const unsigned char *)kv->k + (size_t)g * (size_t)kv->head_stride * esz;
    t.v = (const unsigned char *)kv->v + (size_t)g * (size_t)kv->head_stride * esz;
    t.ld = kv->slot_stride;
    t.blk = j->b->tables + (size_t)tl->seq * (size_t)j->b->max_blocks;
    t.bshift = kv->block_shift;
    t.bstride = kv->block_stride;
    t.dt = kv->dtype;
    t.s0 = tl->lo + (int32_t)((int64_t)(tl->len - tl->lo) * sp / j->nsplit);
    t.s1 = tl->lo + (int32_t)((int64_t)(tl->len - tl->lo) * (sp + 1) / j->nsplit);
    t.scale = j->scale;
    t.softcap = j->softcap;
    t.m = m;
    t.l = l;
    t.acc = acc;
    t.scratch = ts;
    j->k->attn_tile(&t);
    if (j->nsplit == 1) {
      for (int32_t r = 0; r < t.nq; r++) {
        float *o = j->out + row_off(j, tl, g, tl->r0 + r);
        const float inv = 1.0f / l[r];
        for (int32_t i = 0; i < hd; i++) o[i] = acc[r * j->hdp + i] * inv;
      }
    } else {
      float *p = j->part + (size_t)u * part_per(j);
      memcpy(p, acc, (size_t)t.nq * (size_t)j->hdp * sizeof *p);
      memcpy(p + XPI_CPU_ATTN_ROWS * j->hdp, m, (size_t)t.nq * sizeof *p);
      memcpy(p + XPI_CPU_ATTN_ROWS * j->hdp + XPI_CPU_ATTN_ROWS, l, (size_t)t.nq * sizeof *p);
    }
  }
}

/* Combines the key pieces of every row: out = sum_sp e^(m_sp - M) acc_sp / sum_sp e^(m_sp - M) l_sp with
 * M the largest m_sp (pieces a row sees no key of have m = -inf and weigh 0). */
static void merge_pieces(tiled_job *j) {
  const int32_t hd = j->kv->hd;
  for (int32_t ti = 0; ti < j->ntiles; ti++)
    for (int32_t g = 0; g < j->kv->hk; g++) {
      const qtile *tl = &j->tiles[ti];
      for (int32_t r = 0; r < tl->nq; r++) {
        float mx = -INFINITY, l = 0;
        for (int32_t sp = 0; sp < j->nsplit; sp++) {
          const float *p = j->part + (size_t)unit_index(j, ti, g, sp) * part_per(j);
          const float ms = p[XPI_CPU_ATTN_ROWS * j->hdp + r];
          mx = ms > mx ? ms : mx;
        }
        float *o = j->out + row_off(j, tl, g, tl->r0 + r);
        memset(o, 0, (size_t)hd * sizeof *o);
        for (int32_t sp = 0; sp < j->nsplit; sp++) {
          const float *p = j->part + (size_t)unit_index(j, ti, g, sp) * part_per(j);
          const float ms = p[XPI_CPU_ATTN_ROWS * j->hdp + r];
          if (ms == -INFINITY) continue;
          const float w = expf(ms - mx);
          l += w * p[XPI_CPU_ATTN_ROWS * j->hdp + XPI_CPU_ATTN_ROWS + r];
          for (int32_t i = 0; i < hd; i++) o[i] += w * p[r * j->hdp + i];
        }
        const float inv = 1.0f / l;
        for (int32_t i = 0; i < hd; i++) o[i] *= inv;
      }
    }
}

/* Pieces per tile: enough units for every thread to take many (a thread of a shared machine may be
 * descheduled while it holds one; decode depth 4096 measured ~15% faster with 4 pieces per head than 1), but
 * pieces of at least MIN_PIECE keys so the merge and per-unit setup stay negligible. */
#define MIN_PIECE 512
static int32_t choose_nsplit(int64_t base_units, int32_t max_len, int nth) {
  const int64_t want = 16 * (int64_t)nth;
  if (base_units >= want) return 1;
  int64_t s = (want + base_units - 1) / base_units, cap = max_len / MIN_PIECE;
  if (s > cap) s = cap;
  return s < 1 ? 1 : (int32_t)s;
}

static int cmp_tile_len_desc(const void *a, const void *b) {
  const qtile *x = a, *y = b;
  if (x->len - x->lo != y->len - y->lo) return x->len - x->lo > y->len - y->lo ? -1 : 1;
  return x->t0 != y->t0 ? (x->t0 < y->t0 ? -1 : 1) : (x->r0 > y->r0) - (x->r0 < y->r0);
}

/* The tiles of every run of consecutive tokens of one sequence, the longest key ranges first; max_len: the
 * longest key range. */
static xpi_status make_tiles(const xpi_cpu_attn_batch *b, int32_t n, int32_t grp, int32_t window, qtile **out,
                             int32_t *ntiles, int32_t *max_len) {
  int64_t count = 0;
  for (int32_t a = 0, e; a < n; a = e) {
    for (e = a + 1; e < n && b->seq[e] == b->seq[a]; e++) {}
    count += ((int64_t)(e - a) * grp + XPI_CPU_ATTN_ROWS - 1) / XPI_CPU_ATTN_ROWS;
  }
  qtile *tiles = malloc((size_t)count * sizeof *tiles);
  if (!tiles) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "attention: out of memory for %lld query tiles", (long long)count);
  int32_t nt = 0, mx = 0;
  for (int32_t a = 0, e; a < n; a = e) {
    for (e = a + 1; e < n && b->seq[e] == b->seq[a]; e++) {}
    const int32_t rows = (e - a) * grp;
    for (int32_t r0 = 0; r0 < rows; r0 += XPI_CPU_ATTN_ROWS) {
      qtile *t = &tiles[nt++];
      t->t0 = a;
      t->r0 = r0;
      t->nq = rows - r0 < XPI_CPU_ATTN_ROWS ? rows - r0 : XPI_CPU_ATTN_ROWS;
      t->seq = b->seq[a];
      t->len = 0;
      t->lo = INT32_MAX;
      for (int32_t r = r0; r < r0 + t->nq; r++) {
        const int32_t p = b->pos[a + r / grp], f = first_key(p, window);
        t->len = p + 1 > t->len ? p + 1 : t->len;
        t->lo = f < t->lo ? f : t->lo;
      }
      mx = t->len - t->lo > mx ? t->len - t->lo : mx;
    }
  }
  qsort(tiles, (size_t)nt, sizeof *tiles, cmp_tile_len_desc); /* units taken longest first balance the pool */
  *out = tiles;
  *ntiles = nt;
  *max_len = mx;
  return XPI_OK;
}

static xpi_status tiled(xpi_pool *pool, const xpi_cpu_kernels *k, float *out, const float *q,
                        const xpi_cpu_kv_layer *kv, const xpi_cpu_attn_batch *b, int32_t n, int32_t hq,
                        const xpi_attn_params *ap, int32_t nsplit) {
  const int nth = xpi_pool_size(pool);
  tiled_job j = {.k = k, .out = out, .q = q, .kv = kv, .b = b, .hq = hq, .grp = hq / kv->hk,
                 .hdp = XPI_CPU_ATTN_HDP(kv->hd), .scale = ap->scale, .softcap = ap->softcap, .window = ap->window};
  qtile *tiles = NULL;
  int32_t max_len = 0;
  XPI_TRY(make_tiles(b, n, j.grp, ap->window, &tiles, &j.ntiles, &max_len));
  j.tiles = tiles;
  const int64_t base = (int64_t)j.ntiles * kv->hk;
  j.nsplit = nsplit > 0 ? nsplit : choose_nsplit(base, max_len, nth);
  j.units = base * j.nsplit;
  atomic_init(&j.next, 0);
  /* per thread: tile scratch, m, l, acc; a multiple of 8 floats so every thread's part stays 32-byte aligned */
  j.scratch_per = (xpi_cpu_attn_scratch_floats(kv->hd) + 2 * XPI_CPU_ATTN_ROWS +
                   (size_t)XPI_CPU_ATTN_ROWS * (size_t)j.hdp + 7) & ~(size_t)7;
  /* head_dim and the unit count are bounded by the model's shape, but check the products anyway */
  if (kv->hd > (1 << 20) || nth > (1 << 16) || j.units > ((int64_t)1 << 30)) {
    free(tiles);
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "attention: head_dim %d, %d threads, %lld work units are too large",
                   kv->hd, nth, (long long)j.units);
  }
  j.scratch = aligned_alloc(64, ((size_t)nth * j.scratch_per * sizeof(float) + 63) & ~(size_t)63);
  if (j.nsplit > 1) j.part = malloc((size_t)j.units * part_per(&j) * sizeof(float));
  if (!j.scratch || (j.nsplit > 1 && !j.part)) {
    free(j.scratch);
    free(j.part);
    free(tiles);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "attention: out of memory for scratch (%d threads, head_dim %d)", nth,
                   kv->hd);
  }
  xpi_pool_run(pool, tiled_run, &j);
  if (j.nsplit > 1) merge_pieces(&j);
  free(j.scratch);
  free(j.part);
  free(tiles);
  return XPI_OK;
}

/* ------------------------------------------------------------------ eager (reference) */

typedef struct {
  float *out;
  const float *q;
  const int32_t *pos;
  int32_t n, hq, hd, L, window, w0; /* the L positions w0.. of the run's keys */
  float scale, softcap;
  const float *kx, *vx; /* [hq, L, hd]: each q head's own copy of its KV head */
  float *scores;        /* [n, hq, L] */
} eager_job;

static void eager_run(void *ctx, int ith, int nth) {
  eager_job *ej = ctx;
  const int32_t L = ej->L, hd = ej->hd;
  int64_t b, e;
  xpi_pool_range((int64_t)ej->n * ej->hq, ith, nth, 1, &b, &e);
  for (int64_t it = b; it < e; it++) {
    const int32_t t = (int32_t)(it / ej->hq), h = (int32_t)(it % ej->hq);
    const float *q = ej->q + ((size_t)t * ej->hq + h) * hd;
    float *row = ej->scores + (size_t)it * L;
    for (int32_t s = 0; s < L; s++) {
      float accf = 0; /* plain reference: f32 products summed in order */
      for (int32_t i = 0; i < hd; i++) accf += q[i] * ej->kx[((size_t)h * L + s) * hd + i];
      float sc = accf * ej->scale;
      if (ej->softcap > 0) sc = ej->softcap * tanhf(sc / ej->softcap); /* Gemma 2: after scaling, before the mask */
      /* the causal mask and the sliding window's (transformers: kv_idx > q_idx - window) */
      const int32_t p = ej->w0 + s;
      const int seen = p <= ej->pos[t] && (ej->window <= 0 || p > ej->pos[t] - ej->window);
      row[s] = seen ? sc : -INFINITY;
    }
    float m = -INFINITY, sum = 0;
    for (int32_t s = 0; s < L; s++) m = row[s] > m ? row[s] : m;
    for (int32_t s = 0; s < L; s++) sum += (row[s] = expf(row[s] - m));
    for (int32_t s = 0; s < L; s++) row[s] /= sum;
    float *o = ej->out + ((size_t)t * ej->hq + h) * hd;
    for (int32_t i = 0; i < hd; i++) {
      float a = 0;
      for (int32_t s = 0; s < L; s++) a += row[s] * ej->vx[((size_t)h * L + s) * hd + i];
      o[i] = a;
    }
  }
}

/* One run of consecutive tokens [a, e) of one sequence, as transformers' eager attention: its positions
 * gathered through the block table and repeated per q head, full score rows, softmax, P @ V. The positions
 * are 0..max pos, or with a sliding window from the first any of the run's windows holds (the scores before
 * it would all be masked: leaving them out changes nothing and keeps the op from reading them). */
static xpi_status eager_run_of(xpi_pool *pool, float *out, const float *q, const xpi_cpu_kv_layer *kv,
                               const xpi_cpu_attn_batch *b, int32_t a, int32_t e, int32_t hq,
                               const xpi_attn_params *ap) {
  int32_t L = 0;
  int32_t w0 = INT32_MAX;
  for (int32_t t = a; t < e; t++) {
    L = b->pos[t] + 1 > L ? b->pos[t] + 1 : L;
    w0 = first_key(b->pos[t], ap->window) < w0 ? first_key(b->pos[t], ap->window) : w0;
  }
  L -= w0;
  const int32_t hd = kv->hd, grp = hq / kv->hk, n = e - a;
  const int32_t *tbl = b->tables + (size_t)b->seq[a] * (size_t)b->max_blocks;
  size_t kvn = (size_t)hq * (size_t)L * (size_t)hd, scn = (size_t)n * (size_t)hq * (size_t)L;
  float *kx = malloc(kvn * sizeof *kx), *vx = malloc(kvn * sizeof *vx), *scores = malloc(scn * sizeof *scores);
  if (!kx || !vx || !scores) {
    free(kx);
    free(vx);
    free(scores);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "eager attention: out of memory for %d x %d scores", n * hq, L);
  }
  const int32_t mask = (1 << kv->block_shift) - 1;
  for (int32_t h = 0; h < hq; h++) /* repeat_kv: each query head gets its own copy of its KV head */
    for (int32_t s = 0; s < L; s++) {
      const int32_t p = w0 + s;
      const int64_t src = (int64_t)tbl[p >> kv->block_shift] * kv->block_stride + (int64_t)(p & mask) * kv->slot_stride +
                          (int64_t)(h / grp) * kv->head_stride;
      float *kd = kx + ((size_t)h * L + s) * hd, *vd = vx + ((size_t)h * L + s) * hd;
      for (int32_t i = 0; i < hd; i++) {
        kd[i] = xpi_cpu_load_elem(kv->k, kv->dtype, src + i);
        vd[i] = xpi_cpu_load_elem(kv->v, kv->dtype, src + i);
      }
    }
  eager_job ej = {out + (size_t)a * hq * hd, q + (size_t)a * hq * hd, b->pos + a, n, hq, hd, L, ap->window, w0,
                  ap->scale, ap->softcap, kx, vx, scores};
  xpi_pool_run(pool, eager_run, &ej);
  free(kx);
  free(vx);
  free(scores);
  return XPI_OK;
}

xpi_status xpi_cpu_attention(xpi_pool *pool, const xpi_cpu_kernels *k, float *out, const float *q,
                             const xpi_cpu_kv_layer *kv, const xpi_cpu_attn_batch *b, int32_t n, int32_t hq,
                             const xpi_attn_params *ap, int32_t nsplit) {
  if (ap->window < 0 || !(ap->softcap >= 0))
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "attention: window %d / softcap %g must be >= 0", ap->window,
                   (double)ap->softcap);
  if (n <= 0) return XPI_OK;
  if (ap->impl != XPI_ATTN_EAGER) return tiled(pool, k, out, q, kv, b, n, hq, ap, nsplit);
  for (int32_t a = 0, e; a < n; a = e) {
    for (e = a + 1; e < n && b->seq[e] == b->seq[a]; e++) {}
    XPI_TRY(eager_run_of(pool, out, q, kv, b, a, e, hq, ap));
  }
  return XPI_OK;
}
