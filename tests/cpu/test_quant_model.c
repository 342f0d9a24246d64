/* --quant q8 / q4 end to end on tinyfortunes (the trained model; random weights would make agreement
 * meaningless): each quantized model is run under teacher forcing on every golden prompt followed by its
 * golden greedy continuation (5 prompts x 48 predicted tokens + the prompt positions), and compared with
 * the unquantized bf16 run position by position:
 *   top-1 agreement  = share of positions where argmax(quant) == argmax(bf16)
 *   top-5 overlap    = mean |top5(quant) & top5(bf16)| / 5
 * The free-running greedy continuation (48 tokens) is also compared and its common prefix printed.
 *
 * Thresholds, from measurements on this model (printed by the test; 185 positions):
 *   q8 measured top-1 98.4-98.9%, top-5 95.2-97.1% (kernel tables differ in summation order): q8 error (<= 0.4% of each block's max, quant.h) only flips genuine
 *      near-ties (the goldens' greedy margins go down to 0.06 logit), so require top-1 >= 95%, top-5 >= 93%.
 *   q4 measured top-1 68.6-69.2%, top-5 67.9-68.1% (67.6% and 66.5% with the unweighted least-squares scale
 *      that quant.c's importance-weighted search replaced, on the same kernels): 16 levels per block (RMS error ~ amax/20) on a 256-wide model move
 *      logits by several percent, which flips many of its close calls, so require >= 55% for both: loose,
 *      yet a broken q4 kernel or format (nibble order, scale, offset) gives < 10%.
 * Also: --no-fused (use_kernels = 0, the scalar oracle) must agree with the fast kernels on the same q8/q4
 * weights. Both round every matmul's activations to int8 per 32-block (quant.h), and that rounding is
 * discontinuous: where the two paths' f32 values differ in the last bit (fused vs unfused ops, sums in
 * another order), one activation can round the other way, which moves each output of that matmul by |w| * dx,
 * dx the block's amax/127: matmul inputs of this model reach amax 12-16 (dx ~0.1), and a flip in K/V
 * persists for the later positions. (Fast prefill against fast one-token decode, same kernels otherwise,
 * shows exactly this: 3e-6 everywhere but jumps of 0.15-0.35 logit, at one position or from one on.)
 * Measured max |fast - scalar| 1.6-1.9% of the largest |logit|; the bound is 4%. Kernel-level agreement to
 * f32 rounding is test_kernels' job.
 * The same holds between kernel tables: every table (XPI_CPU_ISA=avx2, avxvnni, avx512, amx, and auto) runs q8
 * against the scalar table's q8 under teacher forcing. Their matmuls agree with the scalar oracle to f32 rounding
 * (test_q_prefill_tables.c: within 0.3 of a 2 gamma_(nb+2) bound, n = 1..40), but those last-bit differences flip
 * near-tie activation roundings as above: measured on "The meaning of life is" (5 prompt tokens, 8 generated),
 * the AMX and AVX-512 tables' q8 logprobs move 0.03-0.17 from the scalar table's while AVX2's stay within 4e-6,
 * and a 1-ulp change of half the outputs of one matmul (layer 0's v projection, on the AVX2 path) reproduces the
 * AMX/AVX-512 numbers to 1e-6; on other prompts AVX2 is the one that moves (0.02-0.23). So the bound is the flip
 * bound, FUSED_TOL of the largest |logit|, and the share of logits within 1e-4 of the scalar table's (no flip
 * upstream) is printed. Where every matmul takes the q8 prefill GEMM (sequences longer than the GEMVs' 32
 * tokens), all tables must give the avx2 table's logits bit for bit: the GEMMs round alike (gemm_q.h, amx_scale).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops/cpu/mm_smalln.h"

#define Q8_TOP1 0.95
#define Q8_TOP5 0.93
#define Q4_TOP1 0.55
#define Q4_TOP5 0.55
#define FUSED_TOL 4e-2

typedef struct { int32_t *ids; int n_prompt, n_total; int32_t *greedy_ids; int n_greedy; } tcase;

static void top5(const float *l, int32_t V, int32_t *out) {
  for (int k = 0; k < 5; k++) out[k] = -1;
  for (int32_t i = 0; i < V; i++) {
    for (int k = 0; k < 5; k++) {
      if (out[k] < 0 || l[i] > l[out[k]]) {
        memmove(out + k + 1, out + k, sizeof(int32_t) * (size_t)(4 - k));
        out[k] = i;
        break;
      }
    }
  }
}

static xpi_model *load(const char *dir, const char *quant, int use_kernels) {
  xpi_model_options o;
  xpi_model_options_default(&o);
  o.device = "cpu";
  o.quant = quant;
  o.n_threads = 2;
  o.use_kernels = use_kernels;
  xpi_model *m = NULL;
  CHECK_OK(xpi_model_load(dir, &o, &m));
  return m;
}

/* logits[n_total, V] under teacher forcing */
static float *run_forced(xpi_model *m, const tcase *c, int32_t V) {
  float *logits = malloc(sizeof(float) * (size_t)V * (size_t)c->n_total);
  xpi_request *r = NULL;
  CHECK_OK(xpi_request_create(m, NULL, &r));
  if (r) CHECK_OK(xpi_request_eval(r, c->ids, (size_t)c->n_total, 1, logits, (size_t)V * (size_t)c->n_total));
  xpi_request_free(r);
  return logits;
}

typedef struct { int32_t *ids; int n; } collect;
static int on_token(const xpi_token_event *ev, void *user) {
  collect *c = user;
  c->ids[c->n++] = ev->id;
  return 0;
}

static int run_greedy(xpi_model *m, const tcase *c, int32_t *out) {
  xpi_request *r = NULL;
  CHECK_OK(xpi_request_create(m, NULL, &r));
  xpi_gen_options g;
  xpi_gen_options_default(&g);
  g.greedy = 1;
  g.max_new_tokens = c->n_greedy;
  g.ignore_eos = 1;
  collect col = {out, 0};
  if (r) CHECK_OK(xpi_request_generate(r, c->ids, (size_t)c->n_prompt, &g, on_token, &col, NULL));
  xpi_request_free(r);
  return col.n;
}

int main(void) {
  char *dir = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
  char *gpath = xpi_test_strf("%s/goldens/tinyfortunes.json", xpi_test_env("XPI_TEST_DATA"));
  cJSON *gold = xpi_test_load_json(gpath);
  int nc = cJSON_GetArraySize(gold);
  tcase *cs = calloc((size_t)nc, sizeof *cs);
  int i = 0;
  for (cJSON *it = gold->child; it; it = it->next, i++) {
    const cJSON *in = cJSON_GetObjectItem(it, "input_ids"), *gn = cJSON_GetObjectItem(it, "greedy_new_ids");
    cs[i].n_prompt = cJSON_GetArraySize(in);
    cs[i].n_greedy = cJSON_GetArraySize(gn);
    cs[i].n_total = cs[i].n_prompt + cs[i].n_greedy;
    cs[i].ids = malloc(sizeof(int32_t) * (size_t)cs[i].n_total);
    cs[i].greedy_ids = malloc(sizeof(int32_t) * (size_t)cs[i].n_greedy);
    for (int k = 0; k < cs[i].n_prompt; k++) cs[i].ids[k] = cJSON_GetArrayItem(in, k)->valueint;
    for (int k = 0; k < cs[i].n_greedy; k++) cs[i].ids[cs[i].n_prompt + k] = cJSON_GetArrayItem(gn, k)->valueint;
  }

  xpi_model *base = load(dir, NULL, 1);
  if (!base) return xpi_test_done();
  xpi_model_info info = {.struct_size = sizeof info};
  CHECK_OK(xpi_model_get_info(base, &info));
  const int32_t V = info.vocab_size;
  float **ref = calloc((size_t)nc, sizeof *ref);
  for (i = 0; i < nc; i++) {
    ref[i] = run_forced(base, &cs[i], V);
    run_greedy(base, &cs[i], cs[i].greedy_ids);
  }

  static const char *quants[] = {"q8", "q4"};
  for (int qi = 0; qi < 2; qi++) {
    xpi_model *m = load(dir, quants[qi], 1), *slow = load(dir, quants[qi], 0);
    if (!m || !slow) { xpi_model_free(m); xpi_model_free(slow); continue; }
    xpi_model_info qinfo = {.struct_size = sizeof qinfo};
    CHECK_OK(xpi_model_get_info(m, &qinfo));
    CHECK(strcmp(qinfo.weight_dtype, quants[qi]) == 0, "weight_dtype %s, want %s", qinfo.weight_dtype, quants[qi]);
    CHECK(qinfo.weight_bytes < info.weight_bytes, "%s weights (%llu bytes) not smaller than bf16 (%llu)", quants[qi],
          (unsigned long long)qinfo.weight_bytes, (unsigned long long)info.weight_bytes);
    int pos = 0, top1 = 0, prefix_sum = 0, greedy_total = 0;
    double overlap = 0, max_fused = 0, max_logit = 0;
    for (i = 0; i < nc; i++) {
      float *l = run_forced(m, &cs[i], V), *ls = run_forced(slow, &cs[i], V);
      for (int p = 0; p < cs[i].n_total; p++) {
        int32_t a[5], b[5];
        top5(ref[i] + (size_t)p * V, V, a);
        top5(l + (size_t)p * V, V, b);
        top1 += a[0] == b[0];
        int common = 0;
        for (int x = 0; x < 5; x++)
          for (int y = 0; y < 5; y++) common += a[x] == b[y];
        overlap += common / 5.0;
        pos++;
      }
      for (size_t k = 0; k < (size_t)V * (size_t)cs[i].n_total; k++) {
        double e = fabs((double)l[k] - ls[k]);
        if (e > max_fused) max_fused = e;
        if (fabs(ls[k]) > max_logit) max_logit = fabs(ls[k]);
      }
      int32_t g[64];
      int ng = run_greedy(m, &cs[i], g), pre = 0;
      while (pre < ng && pre < cs[i].n_greedy && g[pre] == cs[i].greedy_ids[pre]) pre++;
      prefix_sum += pre;
      greedy_total += cs[i].n_greedy;
      free(l);
      free(ls);
    }
    const double t1 = (double)top1 / pos, t5 = overlap / pos;
    printf("%s: %d positions, top-1 agreement %.1f%%, top-5 overlap %.1f%%, free-running greedy common prefix "
           "%d/%d tokens, max |fast - scalar| logit %.2g (max |logit| %.3g), weights %llu bytes (bf16 %llu)\n",
           quants[qi], pos, 100 * t1, 100 * t5, prefix_sum, greedy_total, max_fused, max_logit,
           (unsigned long long)qinfo.weight_bytes, (unsigned long long)info.weight_bytes);
    CHECK(t1 >= (qi == 0 ? Q8_TOP1 : Q4_TOP1), "%s top-1 agreement %.3f below bound", quants[qi], t1);
    CHECK(t5 >= (qi == 0 ? Q8_TOP5 : Q4_TOP5), "%s top-5 overlap %.3f below bound", quants[qi], t5);
    CHECK(max_fused <= FUSED_TOL * max_logit, "%s fast vs scalar logits differ by %g (max |logit| %g)", quants[qi],
          max_fused, max_logit);
    xpi_model_free(m);
    xpi_model_free(slow);
  }

  /* q8 on every kernel table against the scalar table's q8 (see the top) */
  {
    char *saved = getenv("XPI_CPU_ISA") ? strdup(getenv("XPI_CPU_ISA")) : NULL;
    static const char *tables[] = {"avx2", "avxvnni", "avx512", "amx", "auto"};
    setenv("XPI_CPU_ISA", "scalar", 1);
    xpi_model *sm = load(dir, "q8", 1);
    float **sl = calloc((size_t)nc, sizeof *sl), **l2 = calloc((size_t)nc, sizeof *l2);
    for (i = 0; sm && i < nc; i++) sl[i] = run_forced(sm, &cs[i], V);
    for (size_t ti = 0; sm && ti < sizeof tables / sizeof tables[0]; ti++) {
      setenv("XPI_CPU_ISA", tables[ti], 1);
      xpi_model *m = load(dir, "q8", 1);
      if (!m) continue;
      double max_d = 0, max_logit = 0;
      size_t close = 0, total = 0;
      for (i = 0; i < nc; i++) {
        float *l = run_forced(m, &cs[i], V);
        for (size_t k = 0; k < (size_t)V * (size_t)cs[i].n_total; k++) {
          const double e = fabs((double)l[k] - sl[i][k]);
          if (e > max_d) max_d = e;
          if (fabs(sl[i][k]) > max_logit) max_logit = fabs(sl[i][k]);
          close += e <= 1e-4;
          total++;
        }
        /* every matmul of a sequence longer than XPI_CPU_GEMV_MAX_AVX512_Q8 takes the q8 prefill GEMM on every
         * table, and those give the same bits (test_q_prefill_tables.c): so must the logits */
        if (ti == 0) l2[i] = l, l = NULL;
        else if (cs[i].n_total > XPI_CPU_GEMV_MAX_AVX512_Q8 && l2[i]) {
          const size_t cnt = (size_t)V * (size_t)cs[i].n_total;
          size_t k = 0;
          while (k < cnt && memcmp(&l[k], &l2[i][k], sizeof(float)) == 0) k++;
          CHECK(k == cnt, "q8 table %s, case %d (%d tokens): logit %zu is %.9g, the avx2 table's %.9g", tables[ti], i,
                cs[i].n_total, k, l[k < cnt ? k : 0], l2[i][k < cnt ? k : 0]);
        }
        free(l);
      }
      printf("q8 table %s: max |logit - scalar table| %.3g (max |logit| %.3g), %.1f%% of logits within 1e-4\n",
             tables[ti], max_d, max_logit, 100.0 * (double)close / (double)(total ? total : 1));
      CHECK(max_d <= FUSED_TOL * max_logit, "q8 table %s vs the scalar table: logits differ by %g (max |logit| %g)",
            tables[ti], max_d, max_logit);
      xpi_model_free(m);
    }
    for (i = 0; i < nc; i++) free(sl[i]), free(l2[i]);
    free(sl);
    free(l2);
    xpi_model_free(sm);
    if (saved) setenv("XPI_CPU_ISA", saved, 1);
    else unsetenv("XPI_CPU_ISA");
    free(saved);
  }

  for (i = 0; i < nc; i++) { free(cs[i].ids); free(cs[i].greedy_ids); free(ref[i]); }
  free(cs);
  free(ref);
  xpi_model_free(base);
  cJSON_Delete(gold);
  free(dir);
  free(gpath);
  return xpi_test_done();
}
