/* Sampler processors on constructed logits, with transformers' semantics (the expected values are worked out
 * from the transformers code quoted in each comment), seeded determinism, and the sampled distribution. */
#include <math.h>

#include "check.h"
#include "generate/sampler.h"
#include "ops/ops.h"

#define V 5

static int masked(const float *l, int i) { return l[i] == -INFINITY; }

/* Device top-k sampling (xpi_sampler_sample_topk over the topk op's output, the CPU backend here; the same op
 * on xpu:0 in tests/xpu/test_xpu_ops.c) gives the id the whole-row path gives, for the same seed and options,
 * over many seeds and option sets; rows are rounded to 1/1024 so raw ties occur, and temperatures above 1 make
 * ties by division: where xpi_sampler_topk_exact says no, the engine reads the row (counted, not compared). */
static void test_topk_equality(void) {
  enum { VOC = 2000, NV = 257, DRAWS = 4 };
  xpi_backend_config cfg = {"cpu", 1, 1};
  xpi_backend *be = NULL;
  CHECK_OK(xpi_backend_cpu_create(&cfg, &be));
  if (!be) return;
  static float row[VOC], whole[VOC], vals[NV], norm[2];
  static int32_t ids[NV];
  const float temps[] = {0.3f, 0.7f, 1.0f, 1.3f, 2.5f}, tops_p[] = {1.0f, 0.9f, 0.5f}, mins_p[] = {0, 0.05f, 0.3f};
  const int32_t ks[] = {1, 2, 5, 40, 256};
  uint64_t r = 7;
  int compared = 0, inexact = 0, differ = 0;
  for (int trial = 0; trial < 600; trial++) {
    xpi_gen_options o;
    xpi_gen_options_default(&o);
    o.temperature = temps[trial % 5];
    o.top_k = ks[(trial / 5) % 5];
    o.top_p = tops_p[(trial / 25) % 3];
    o.min_p = mins_p[(trial / 75) % 3];
    o.seed = 1000 + (uint64_t)trial;
    xpi_sampler a, b;
    CHECK_OK(xpi_sampler_init(&a, &o, VOC));
    CHECK_OK(xpi_sampler_init(&b, &o, VOC));
    CHECK(xpi_sampler_topk_usable(&a, 256), "trial %d: usable", trial);
    const float scale = trial % 2 ? 4.0f : 12.0f; /* flat and peaked rows */
    for (int d = 0; d < DRAWS; d++) {
      for (int i = 0; i < VOC; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        row[i] = roundf((float)((double)(r >> 11) / 9007199254740992.0) * scale * 1024) / 1024;
      }
      CHECK_OK(be->ops->topk(be, ids, vals, norm, row, 1, VOC, o.top_k + 1));
      memcpy(whole, row, sizeof row);
      int32_t want = xpi_sampler_sample(&a, whole, NULL, 0);
      if (!xpi_sampler_topk_exact(&b, vals, o.top_k + 1)) { /* the engine samples the whole row instead */
        inexact++;
        memcpy(whole, row, sizeof row);
        xpi_sampler_sample(&b, whole, NULL, 0);
        continue;
      }
      int32_t got = xpi_sampler_sample_topk(&b, ids, vals, o.top_k + 1);
      compared++;
      differ += got != want;
      CHECK(got == want, "trial %d draw %d (t %g, top_k %d, top_p %g, min_p %g, seed %llu): top-k %d, whole row %d",
            trial, d, o.temperature, o.top_k, o.top_p, o.min_p, (unsigned long long)o.seed, got, want);
    }
    xpi_sampler_free(&a);
    xpi_sampler_free(&b);
  }
  printf("device top-k sampling: %d draws equal to the whole row's, %d differ, %d left to the whole row\n", compared,
         differ, inexact);
  CHECK(compared > 2000 && inexact > 0, "coverage: %d compared, %d inexact", compared, inexact);
  /* what the sampler cannot decide from the top k */
  xpi_gen_options o;
  xpi_gen_options_default(&o);
  xpi_sampler c;
  o.top_k = 0; /* top-p/min-p alone need the whole row */
  CHECK_OK(xpi_sampler_init(&c, &o, VOC));
  CHECK(!xpi_sampler_topk_usable(&c, 256), "top_k 0 is not usable");
  xpi_sampler_free(&c);
  o.top_k = 40, o.repetition_penalty = 1.1f;
  CHECK_OK(xpi_sampler_init(&c, &o, VOC));
  CHECK(!xpi_sampler_topk_usable(&c, 256), "a repetition penalty is not usable");
  xpi_sampler_free(&c);
  o.top_k = 300, o.repetition_penalty = 1;
  CHECK_OK(xpi_sampler_init(&c, &o, VOC));
  CHECK(!xpi_sampler_topk_usable(&c, 256) && xpi_sampler_topk_usable(&c, 300), "top_k above the cap");
  const float tie[3] = {3, 2, 2};
  o.top_k = 2;
  xpi_sampler_free(&c);
  CHECK_OK(xpi_sampler_init(&c, &o, VOC));
  CHECK(!xpi_sampler_topk_exact(&c, tie, 3) && !xpi_sampler_topk_exact(&c, tie, 2), "a tie with the k-th, or too few values");
  xpi_sampler_free(&c);
  be->ops->destroy(be);
}

int main(void) {
  test_topk_equality();
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
