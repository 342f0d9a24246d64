/* Sampler processors on constructed logits, with transformers' semantics (the expected values are worked out
 * from the transformers code quoted in each comment), seeded determinism, and the sampled distribution. */
#include <math.h>

#include "check.h"
#include "generate/sampler.h"

#define V 5

static int masked(const float *l, int i) { return l[i] == -INFINITY; }

int main(void) {
  xpi_cand cand[V];
  double p[V];
  unsigned char seen[V] = {0};

  /* RepetitionPenaltyLogitsProcessor: score = where(score < 0, score * penalty, score / penalty), once per id */
  float l[V] = {2.0f, -1.0f, 0.5f, 3.0f, -0.25f};
  int32_t hist[] = {0, 1, 1, 4, 1};
  xpi_sample_repetition_penalty(l, V, hist, 5, 2.0f, seen);
  CHECK(l[0] == 1.0f && l[1] == -2.0f && l[2] == 0.5f && l[3] == 3.0f && l[4] == -0.5f,
        "repetition penalty: %g %g %g %g %g", l[0], l[1], l[2], l[3], l[4]);
  int clean = 1;
  for (int i = 0; i < V; i++) clean &= seen[i] == 0;
  CHECK(clean, "scratch left zeroed");

  /* TopKLogitsWarper: remove scores < the k-th largest; ties with the k-th stay */
  float a[V] = {1, 5, 3, 5, 3};
  xpi_sample_top_k(a, V, 2, cand);
  CHECK(masked(a, 0) && !masked(a, 1) && masked(a, 2) && !masked(a, 3) && masked(a, 4), "top-k 2");
  float b[V] = {1, 5, 3, 5, 3};
  xpi_sample_top_k(b, V, 3, cand);
  CHECK(masked(b, 0) && !masked(b, 1) && !masked(b, 2) && !masked(b, 3) && !masked(b, 4), "top-k 3 keeps ties");

  /* TopPLogitsWarper: ascending cumulative probs <= 1 - top_p are removed; probs 0.5 0.3 0.15 0.05 (0) */
  const float pr[V] = {0.5f, 0.3f, 0.15f, 0.05f, 0.0f};
  float c[V], d[V], e[V], f[V];
  for (int i = 0; i < V; i++) c[i] = d[i] = e[i] = f[i] = pr[i] > 0 ? logf(pr[i]) : -INFINITY;
  xpi_sample_top_p(c, V, 0.75f, cand, p); /* cum 0.05, 0.20 <= 0.25 removed; 0.50 stays */
  CHECK(!masked(c, 0) && !masked(c, 1) && masked(c, 2) && masked(c, 3), "top-p 0.75");
  xpi_sample_top_p(d, V, 0.9f, cand, p); /* only 0.05 <= 0.1 removed */
  CHECK(!masked(d, 0) && !masked(d, 1) && !masked(d, 2) && masked(d, 3), "top-p 0.9");
  float g[V] = {0, -50, -60, -70, -80};
  xpi_sample_top_p(g, V, 0.01f, cand, p); /* the most likely token always stays */
  CHECK(!masked(g, 0) && masked(g, 1), "top-p keeps one");

  /* MinPLogitsWarper: remove probs < min_p * max prob */
  xpi_sample_min_p(e, V, 0.2f); /* 0.1 threshold: 0.05 removed */
  CHECK(!masked(e, 0) && !masked(e, 1) && !masked(e, 2) && masked(e, 3), "min-p 0.2");
  xpi_sample_min_p(f, V, 0.5f); /* 0.25 threshold */
  CHECK(!masked(f, 0) && !masked(f, 1) && masked(f, 2) && masked(f, 3), "min-p 0.5");

  /* TemperatureLogitsWarper: scores / t */
  float t[V] = {1, 2, -3, 4, 0};
  xpi_sample_temperature(t, V, 0.5f);
  CHECK(t[0] == 2 && t[1] == 4 && t[2] == -6 && t[3] == 8 && t[4] == 0, "temperature");

  /* logprobs: log-softmax, best first, lower id on ties */
  float lp[V] = {1, 3, 3, -1, 0};
  xpi_logprob top[3];
  xpi_logprobs_top(lp, V, 3, top);
  double lse = log(exp(1.0) + 2 * exp(3.0) + exp(-1.0) + 1.0);
  CHECK(top[0].id == 1 && top[1].id == 2 && top[2].id == 0, "logprob order %d %d %d", top[0].id, top[1].id, top[2].id);
  CHECK(fabs(top[0].logprob - (3 - lse)) < 1e-6 && fabs(top[2].logprob - (1 - lse)) < 1e-6, "logprob values");

  /* sampling: same seed, same ids; the draws follow the distribution (20000 draws: std of a frequency
   * is <= 0.0036, so 0.02 is > 5 sigma) */
  xpi_gen_options o;
  xpi_gen_options_default(&o);
  o.seed = 42;
  xpi_sampler s1, s2;
  CHECK_OK(xpi_sampler_init(&s1, &o, V));
  CHECK_OK(xpi_sampler_init(&s2, &o, V));
  int count[V] = {0}, same = 1;
  for (int i = 0; i < 20000; i++) {
    float x1[V], x2[V];
    for (int k = 0; k < V; k++) x1[k] = x2[k] = pr[k] > 0 ? logf(pr[k]) : -INFINITY;
    int32_t id1 = xpi_sampler_sample(&s1, x1, NULL, 0), id2 = xpi_sampler_sample(&s2, x2, NULL, 0);
    same &= id1 == id2;
    if (id1 >= 0 && id1 < V) count[id1]++;
  }
  CHECK(same, "same seed, same draws");
  for (int k = 0; k < V; k++)
    CHECK(fabs(count[k] / 20000.0 - pr[k]) < 0.02, "token %d drawn %d times of 20000 (p = %g)", k, count[k], pr[k]);
  xpi_sampler_free(&s1);
  xpi_sampler_free(&s2);

  /* greedy applies the repetition penalty first, as transformers does with do_sample=False */
  o.greedy = 1;
  o.repetition_penalty = 4.0f;
  CHECK_OK(xpi_sampler_init(&s1, &o, V));
  float gl[V] = {2.0f, 1.0f, 0, 0, 0};
  int32_t h0 = 0;
  CHECK(xpi_sampler_sample(&s1, gl, &h0, 1) == 1, "greedy after penalty");
  xpi_sampler_free(&s1);

  /* bad options */
  xpi_gen_options_default(&o);
  o.top_p = 0;
  CHECK_ERR(xpi_sampler_init(&s1, &o, V), XPI_ERR_INVALID_ARGUMENT, "top_p");
  xpi_gen_options_default(&o);
  o.top_k = -1;
  CHECK_ERR(xpi_sampler_init(&s1, &o, V), XPI_ERR_INVALID_ARGUMENT, "top_k");
  xpi_gen_options_default(&o);
  o.repetition_penalty = 0;
  CHECK_ERR(xpi_sampler_init(&s1, &o, V), XPI_ERR_INVALID_ARGUMENT, "repetition_penalty");
  xpi_gen_options_default(&o);
  o.min_p = 2;
  CHECK_ERR(xpi_sampler_init(&s1, &o, V), XPI_ERR_INVALID_ARGUMENT, "min_p");
  return xpi_test_done();
}
