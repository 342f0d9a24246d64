/* Token selection as transformers' generate() does it: logits processors in its order (repetition penalty,
 * then temperature, top-k, top-p, min-p), softmax, one draw from a seeded PRNG (same seed, same tokens). */
#ifndef XPI_GENERATE_SAMPLER_H
#define XPI_GENERATE_SAMPLER_H

#include <stdint.h>
#include "xpuinfer.h"

typedef struct xpi_cand { float v; int32_t id; } xpi_cand;

typedef struct xpi_sampler {
  int greedy;
  float temperature, top_p, min_p, penalty;
  int32_t top_k, vocab;
  uint64_t rng[4];
  xpi_cand *cand;        /* [vocab] candidates, sorted best first (NULL when greedy) */
  double *p;             /* [vocab] their probabilities (NULL when greedy) */
  unsigned char *seen;   /* [vocab] repetition-penalty marks (NULL without a penalty) */
} xpi_sampler;

/* Checks the options (clear messages for out-of-range values) and allocates scratch for vocab ids. */
xpi_status xpi_sampler_init(xpi_sampler *s, const xpi_gen_options *o, int32_t vocab);
void xpi_sampler_free(xpi_sampler *s);

/* Picks the next id. logits[vocab] is modified (processors applied in place). history: ids in the context. */
int32_t xpi_sampler_sample(xpi_sampler *s, float *logits, const int32_t *history, int32_t n_history);

/* Sampling from the row's best logits instead of the whole row (device top-k, src/engine/step.c).
 * usable: the options are ones the best top_k + 1 logits decide: sampled (not greedy), no repetition penalty
 * (it moves ids from below the top k into it), top_k in [1, cap] and below the vocabulary; temperature, top_p
 * and min_p any. exact: given the row's n best raw logits, best first (vals), nothing past the k-th survives
 * top-k (no tie with it, raw or made by the temperature's division) and nothing overflows. Then
 * xpi_sampler_sample_topk(ids, vals) returns the id xpi_sampler_sample would return for the whole row, from
 * the same PRNG state (one draw). The row's normaliser is not needed for the draw (only for logprobs). */
int xpi_sampler_topk_usable(const xpi_sampler *s, int32_t cap);
int xpi_sampler_topk_exact(const xpi_sampler *s, const float *vals, int32_t n);
int32_t xpi_sampler_sample_topk(xpi_sampler *s, const int32_t *ids, const float *vals, int32_t n);

/* The processors on their own (exposed for tests). Removed tokens become -INFINITY. */
void xpi_sample_repetition_penalty(float *logits, int32_t vocab, const int32_t *ids, int32_t n, float penalty,
                                   unsigned char *seen /* [vocab] zeroed scratch, left zeroed */);
void xpi_sample_temperature(float *logits, int32_t vocab, float t);
/* These need scratch cand[vocab] (and p[vocab]). */
void xpi_sample_top_k(float *logits, int32_t vocab, int32_t k, xpi_cand *cand);
void xpi_sample_top_p(float *logits, int32_t vocab, float top_p, xpi_cand *cand, double *p);
void xpi_sample_min_p(float *logits, int32_t vocab, float min_p);

/* The n best log-softmax values of raw logits, best first (lower id first on ties). Returns the log-sum-exp of
 * the logits (any id's log-probability is its logit minus it). */
double xpi_logprobs_top(const float *logits, int32_t vocab, int32_t n, xpi_logprob *out);

#endif
