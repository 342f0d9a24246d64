/* Sampling processors with transformers' semantics (see sampler.h). */
#include "generate/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

/* ------------------------------------------------------------------ PRNG: xoshiro256** seeded by splitmix64 */

static uint64_t splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next_u64(uint64_t *s) {
  uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return r;
}

static double uniform01(uint64_t *s) { return (double)(next_u64(s) >> 11) * (1.0 / 9007199254740992.0); }

/* ------------------------------------------------------------------ setup */

xpi_status xpi_sampler_init(xpi_sampler *s, const xpi_gen_options *o, int32_t vocab) {
  memset(s, 0, sizeof *s);
  if (!(o->temperature == o->temperature) || isinf(o->temperature))
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "temperature must be a finite number");
  if (o->top_k < 0) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "top_k = %d must be >= 0 (0 turns it off)", o->top_k);
  if (!(o->top_p > 0 && o->top_p <= 1)) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "top_p = %g must be in (0, 1]", o->top_p);
  if (!(o->min_p >= 0 && o->min_p <= 1)) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "min_p = %g must be in [0, 1]", o->min_p);
  if (!(o->repetition_penalty > 0) || isinf(o->repetition_penalty))
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "repetition_penalty = %g must be > 0 (1 turns it off)", o->repetition_penalty);
  s->greedy = o->greedy || o->temperature <= 0;
  s->temperature = o->temperature;
  s->top_k = o->top_k;
  s->top_p = o->top_p;
  s->min_p = o->min_p;
  s->penalty = o->repetition_penalty;
  s->vocab = vocab;
  uint64_t x = o->seed;
  for (int i = 0; i < 4; i++) s->rng[i] = splitmix(&x);
  /* scratch only where the options use it: an engine keeps a sampler per sequence, mostly greedy */
  if (!s->greedy) s->cand = malloc((size_t)vocab * sizeof *s->cand);
  if (!s->greedy) s->p = malloc((size_t)vocab * sizeof *s->p);
  if (s->penalty != 1.0f) s->seen = calloc((size_t)vocab, 1);
  if ((!s->greedy && (!s->cand || !s->p)) || (s->penalty != 1.0f && !s->seen)) {
    xpi_sampler_free(s);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory for the sampler");
  }
  return XPI_OK;
}

void xpi_sampler_free(xpi_sampler *s) {
  free(s->cand);
  free(s->p);
  free(s->seen);
  memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------------ processors */

/* RepetitionPenaltyLogitsProcessor: every id present in the context once: l < 0 ? l * p : l / p. */
void xpi_sample_repetition_penalty(float *l, int32_t vocab, const int32_t *ids, int32_t n, float p,
                                   unsigned char *seen) {
  for (int32_t i = 0; i < n; i++) {
    int32_t id = ids[i];
    if (id < 0 || id >= vocab || seen[id]) continue;
    seen[id] = 1;
    l[id] = l[id] < 0 ? l[id] * p : l[id] / p;
  }
  for (int32_t i = 0; i < n; i++)
    if (ids[i] >= 0 && ids[i] < vocab) seen[ids[i]] = 0;
}

void xpi_sample_temperature(float *l, int32_t vocab, float t) {
  for (int32_t i = 0; i < vocab; i++) l[i] = l[i] / t;
}

static int cmp_desc(const void *a, const void *b) {
  const xpi_cand *x = a, *y = b;
  if (x->v != y->v) return x->v > y->v ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* Sorts the ids with a finite logit, best first (lower id first on ties). Returns their count. */
static int32_t sort_candidates(const float *l, int32_t vocab, xpi_cand *c) {
  int32_t n = 0;
  for (int32_t i = 0; i < vocab; i++)
    if (l[i] > -INFINITY) c[n].v = l[i], c[n++].id = i;
  qsort(c, (size_t)n, sizeof *c, cmp_desc);
  return n;
}

/* TopKLogitsWarper: remove every logit below the k-th largest (ties with the k-th stay). */
void xpi_sample_top_k(float *l, int32_t vocab, int32_t k, xpi_cand *c) {
  if (k <= 0 || k >= vocab) return;
  int32_t n = sort_candidates(l, vocab, c);
  if (k >= n) return;
  float kth = c[k - 1].v;
  for (int32_t i = 0; i < vocab; i++)
    if (l[i] < kth) l[i] = -INFINITY;
}

/* TopPLogitsWarper over candidates sorted best first (finite values): how many stay. In ascending order, tokens
 * whose cumulative probability is <= 1 - top_p go; the most likely token always stays. */
static int32_t top_p_keep(const xpi_cand *c, int32_t n, float top_p, double *p) {
  double m = c[0].v, sum = 0;
  for (int32_t i = 0; i < n; i++) sum += (p[i] = exp((double)c[i].v - m));
  double cum = 0, thr = 1.0 - (double)top_p;
  for (int32_t i = n - 1; i >= 1; i--) { /* ascending cumulative sum, from the least likely */
    cum += p[i] / sum;
    if (!(cum <= thr)) return i + 1;
  }
  return 1;
}

void xpi_sample_top_p(float *l, int32_t vocab, float top_p, xpi_cand *c, double *p) {
  if (top_p >= 1.0f) return;
  int32_t n = sort_candidates(l, vocab, c);
  if (n == 0) return;
  for (int32_t i = top_p_keep(c, n, top_p, p); i < n; i++) l[c[i].id] = -INFINITY;
}

/* MinPLogitsWarper: remove tokens whose probability is below min_p times the top probability. */
void xpi_sample_min_p(float *l, int32_t vocab, float min_p) {
  if (min_p <= 0) return;
  float m = -INFINITY;
  int32_t best = 0;
  for (int32_t i = 0; i < vocab; i++)
    if (l[i] > m) m = l[i], best = i;
  if (m == -INFINITY) return;
  double sum = 0;
  for (int32_t i = 0; i < vocab; i++) sum += exp((double)l[i] - m);
  double top = 1.0 / sum, thr = (double)min_p * top;
  for (int32_t i = 0; i < vocab; i++)
    if (i != best && exp((double)l[i] - m) / sum < thr) l[i] = -INFINITY;
}

static int32_t argmax(const float *l, int32_t vocab) {
  int32_t b = 0;
  for (int32_t i = 1; i < vocab; i++)
    if (l[i] > l[b]) b = i;
  return b;
}

int32_t xpi_sampler_sample(xpi_sampler *s, float *l, const int32_t *history, int32_t n_history) {
  int32_t V = s->vocab;
  if (s->penalty != 1.0f) xpi_sample_repetition_penalty(l, V, history, n_history, s->penalty, s->seen);
  if (s->greedy) return argmax(l, V);
  if (s->temperature != 1.0f) xpi_sample_temperature(l, V, s->temperature);
  xpi_sample_top_k(l, V, s->top_k, s->cand);
  xpi_sample_top_p(l, V, s->top_p, s->cand, s->p);
  xpi_sample_min_p(l, V, s->min_p);
  /* softmax over the survivors, then one uniform draw walked along the cumulative distribution */
  float m = l[argmax(l, V)];
  double sum = 0;
  for (int32_t i = 0; i < V; i++) sum += l[i] > -INFINITY ? exp((double)l[i] - m) : 0.0;
  double u = uniform01(s->rng) * sum, c = 0;
  int32_t last = argmax(l, V);
  for (int32_t i = 0; i < V; i++) {
    if (!(l[i] > -INFINITY)) continue;
    c += exp((double)l[i] - m);
    last = i;
    if (u < c) return i;
  }
  return last;
}

double xpi_logprobs_top(const float *l, int32_t vocab, int32_t n, xpi_logprob *out) {
  double m = -INFINITY, sum = 0;
  for (int32_t i = 0; i < vocab; i++) m = l[i] > m ? l[i] : m;
  for (int32_t i = 0; i < vocab; i++) sum += exp((double)l[i] - m);
  double lse = m + log(sum);
  if (n > vocab) n = vocab;
  int32_t have = 0;
  for (int32_t i = 0; i < vocab; i++) { /* insertion into the best n by raw logit (ties: lower id first) */
    if (have == n && !(l[i] > l[out[n - 1].id])) continue;
    int32_t j = have < n ? have++ : n - 1;
    while (j > 0 && l[i] > l[out[j - 1].id]) {
      out[j] = out[j - 1];
      j--;
    }
    out[j].id = i;
  }
  for (int32_t j = 0; j < n; j++) out[j].logprob = (float)((double)l[out[j].id] - lse);
  return lse;
}

/* ------------------------------------------------------------------ from the row's best logits (device top-k)
 * The same processors and draw as xpi_sampler_sample, on the top_k survivors only: temperature on each value,
 * top-p over them sorted best first, then min-p and the draw in id order, where the whole row's removed
 * (-inf) entries would only have added exact zeros to the double sums. Same operations on the same values in
 * the same order: the same id, bit for bit. */

int xpi_sampler_topk_usable(const xpi_sampler *s, int32_t cap) {
  return !s->greedy && s->penalty == 1.0f && s->top_k > 0 && s->top_k <= cap && s->top_k < s->vocab;
}

static float tempered(const xpi_sampler *s, float v) { return s->temperature != 1.0f ? v / s->temperature : v; }

int xpi_sampler_topk_exact(const xpi_sampler *s, const float *vals, int32_t n) {
  const int32_t k = s->top_k;
  if (n <= k) return 0;
  const float first = tempered(s, vals[0]), kth = tempered(s, vals[k - 1]), next = tempered(s, vals[k]);
  /* a tie with the k-th (raw, or made by the division) keeps more than k; an overflow breaks the softmax */
  return first - first == 0 && kth - kth == 0 && next < kth;
}

static int cmp_id(const void *a, const void *b) {
  const xpi_cand *x = a, *y = b;
  return x->id < y->id ? -1 : x->id > y->id;
}

int32_t xpi_sampler_sample_topk(xpi_sampler *s, const int32_t *ids, const float *vals, int32_t n) {
  int32_t k = s->top_k < n ? s->top_k : n;
  xpi_cand *c = s->cand;
  for (int32_t i = 0; i < k; i++) c[i].v = tempered(s, vals[i]), c[i].id = ids[i];
  qsort(c, (size_t)k, sizeof *c, cmp_desc); /* the division may tie values the raw order had apart */
  if (s->top_p < 1.0f) k = top_p_keep(c, k, s->top_p, s->p);
  qsort(c, (size_t)k, sizeof *c, cmp_id);
  float m = -INFINITY;
  int32_t best = 0;
  for (int32_t i = 0; i < k; i++)
    if (c[i].v > m) m = c[i].v, best = i;
  if (s->min_p > 0) { /* as xpi_sample_min_p */
    double sum = 0;
    for (int32_t i = 0; i < k; i++) sum += exp((double)c[i].v - m);
    double thr = (double)s->min_p * (1.0 / sum);
    int32_t n_keep = 0;
    for (int32_t i = 0; i < k; i++)
      if (i == best || !(exp((double)c[i].v - m) / sum < thr)) c[n_keep++] = c[i];
    k = n_keep;
  }
  double sum = 0;
  for (int32_t i = 0; i < k; i++) sum += exp((double)c[i].v - m);
  double u = uniform01(s->rng) * sum, cum = 0;
  for (int32_t i = 0; i < k; i++) {
    cum += exp((double)c[i].v - m);
    if (u < cum) return c[i].id;
  }
  return c[k - 1].id;
}
