/* --quant q8 / q4 on the XPU (zesim, the software devices of tests.cmake: two for this test) against the CPU
 * with the same --quant, for tinyfortunes and the random-weight golden models (argument "moe": the Qwen3-MoE and
 * Qwen2-MoE golden models of tests/data/arch_models instead, whose q8/q4 experts run the XPU's quantized
 * moe_matmul, decode and prefill, and Qwen2-MoE's shared expert the dense q8/q4 matmul): the free-running greedy ids of
 * every golden prompt on xpu:0 and with --device-map auto over both devices equal the CPU's (or part from them
 * only where the CPU's own logits of the two ids are within NEAR_TIE: rounding activations to int8 is
 * discontinuous, so an input that differs in the last f32 bit (another rmsnorm/softmax summation order) can move
 * one quant by one step, which moves logits by ~1e-3 and decides a near tie either way), and the first
 * generated token's log-probability is within 0.02 of the CPU's (the largest difference over the
 * whole vocabulary's log-softmax is printed). Both sides quantize the same way and run the same integer
 * block dots (tests/xpu/test_xpu_quant.c), so the logits differ only by f32 summation order (~1e-5): the bound
 * has room for that and would still catch a wrong scale, quant or layout (those move logprobs by >= 0.1). */
#include <math.h>
#include <string.h>

#include "api/api_internal.h" /* the load's memory plan */
#include "check.h"
#include "ops/xpu/xpu_internal.h" /* the backend's fixed buffers */
#include "runtime/xpu.h"
#include "model_util.h"
#include "xpu_load.h"

static double g_lp_max, g_row_max;
static int g_near_ties;
/* Logit gap (CPU) under which a free-running greedy continuation may part from the CPU's. Measured: after the
 * prompt the largest log-probability difference over the vocabulary is 0.0045; free-running runs parted at gaps
 * of 0.024 and 0.030 (tinyfortunes q8 'A computer' step 10, q4 chicken prompt step 14: a flipped activation quant
 * several steps back); the CPU's own AMX and AVX2 paths differ by more (tests.cmake). A wrong scale, quant or
 * layout moves logits by >= 0.1, and the first-token bound catches it before any parting. */
#define NEAR_TIE 0.05

/* log-softmax of the last prompt position's logits. */
static float *last_logprobs(xpi_model *m, const int32_t *ids, int n, int32_t V) {
  float *l = xpi_test_eval_all(m, ids, n, V);
  float *row = malloc(sizeof(float) * (size_t)V);
  memcpy(row, l + (size_t)(n - 1) * V, sizeof(float) * (size_t)V);
  free(l);
  double mx = -INFINITY, sum = 0;
  for (int32_t i = 0; i < V; i++) mx = row[i] > mx ? row[i] : mx;
  for (int32_t i = 0; i < V; i++) sum += exp(row[i] - mx);
  for (int32_t i = 0; i < V; i++) row[i] = (float)(row[i] - mx - log(sum));
  return row;
}

/* |l[a] - l[b]| of the CPU's logits after the prompt and the CPU's first `step` greedy ids (teacher forcing). */
static double cpu_gap(xpi_model *cpu, const int32_t *prompt, int n, const collected *want, int step, int32_t other,
                      int32_t V) {
  int32_t ids[128];
  memcpy(ids, prompt, sizeof(int32_t) * (size_t)n);
  memcpy(ids + n, want->ids, sizeof(int32_t) * (size_t)step);
  float *l = malloc(sizeof(float) * (size_t)V);
  xpi_request *r = NULL;
  xpi_request_options ro;
  xpi_request_options_default(&ro);
  ro.n_ctx = 128;
  CHECK_OK(xpi_request_create(cpu, &ro, &r));
  if (r) CHECK_OK(xpi_request_eval(r, ids, (size_t)(n + step), 0, l, (size_t)V));
  xpi_request_free(r);
  const double gap = fabs((double)l[want->ids[step]] - (double)l[other]);
  free(l);
  return gap;
}

/* Every case of `cases` (input_ids, greedy_new_ids for the length) on cpu vs xpu and map (either may be NULL). */
static void compare(const char *name, const char *quant, xpi_model *cpu, xpi_model *xpu, xpi_model *map,
                    const cJSON *cases) {
  xpi_model_info info = {.struct_size = sizeof info};
  CHECK_OK(xpi_model_get_info(cpu, &info));
  const int32_t V = info.vocab_size;
  const cJSON *cs;
  int n_cases = 0;
  cJSON_ArrayForEach(cs, cases) {
#if defined(__SANITIZE_ADDRESS__)
    if (n_cases++ > 0) break; /* sanitizer builds (-O0, ~20x slower): one prompt a model, the same code paths */
#else
    n_cases++;
#endif
    const cJSON *in = cJSON_GetObjectItem(cs, "input_ids");
    int32_t ids[64];
    const int n = cJSON_GetArraySize(in);
    for (int i = 0; i < n && i < 64; i++) ids[i] = cJSON_GetArrayItem(in, i)->valueint;
    collected want = {0};
    greedy(cpu, cs, 0, &want);
    float *lc = last_logprobs(cpu, ids, n, V);
    xpi_model *ms[2] = {xpu, map};
    const char *mn[2] = {"xpu:0", "device map auto"};
    for (int k = 0; k < 2; k++) {
      if (!ms[k]) continue;
      collected got = {0};
      greedy(ms[k], cs, 0, &got);
      int same = got.n == want.n, at = -1;
      for (int i = 0; same && i < want.n; i++)
        if (got.ids[i] != want.ids[i]) same = 0, at = i;
      if (!same && at >= 0) { /* a near tie of the CPU's own logits may go either way (header) */
        const double gap = cpu_gap(cpu, ids, n, &want, at, got.ids[at], V);
        printf("%s --quant %s '%s' on %s: greedy ids part at step %d of %d where the CPU's logits of the two ids are "
               "%.4f apart (near-tie bound %.2f)\n", name, quant, cs->string, mn[k], at, want.n, gap, NEAR_TIE);
        if (gap < NEAR_TIE) same = 1, g_near_ties++;
      }
      CHECK(same, "%s --quant %s '%s' on %s: greedy ids differ from the CPU's at step %d of %d", name, quant,
            cs->string, mn[k], at, want.n);
      float *lx = last_logprobs(ms[k], ids, n, V);
      const int32_t first = want.ids[0];
      const double e = fabs((double)lx[first] - (double)lc[first]);
      double row = 0;
      for (int32_t i = 0; i < V; i++) row = fmax(row, fabs((double)lx[i] - (double)lc[i]));
      g_lp_max = fmax(g_lp_max, e), g_row_max = fmax(g_row_max, row);
      CHECK(e <= 0.02, "%s --quant %s '%s' on %s: first-token logprob %.5f, cpu %.5f", name, quant, cs->string,
            mn[k], (double)lx[first], (double)lc[first]);
      free(lx);
    }
    free(lc);
  }
}

static void run_model(const char *name, const char *dir, const cJSON *cases) {
  const char *quants[2] = {"q8", "q4"};
  for (int q = 0; q < 2; q++) {
    xpi_model *cpu = xpi_test_load(dir, "cpu", NULL, NULL, quants[q]);
    xpi_model *xpu = xpi_test_load(dir, "xpu:0", NULL, NULL, quants[q]);
    xpi_model *map = xpi_test_load(dir, "auto", "auto", NULL, quants[q]);
    if (map) {
      xpi_model_info info = {.struct_size = sizeof info};
      CHECK_OK(xpi_model_get_info(map, &info));
      CHECK(strcmp(info.device, "xpu:0-1") == 0, "%s: device map over the 2 software devices: %s", name,
            info.device);
      CHECK(strcmp(info.weight_dtype, quants[q]) == 0, "%s: weights placed as %s", name, info.weight_dtype);
    }
    if (cpu) compare(name, quants[q], cpu, xpu, map, cases);
    printf("%s --quant %s: max |first-token logprob diff| so far %.3g, max over the vocabulary %.3g\n", name,
           quants[q], g_lp_max, g_row_max);
    xpi_model_free(cpu), xpi_model_free(xpu), xpi_model_free(map);
  }
}

/* A --quant load on xpu:0 alone: the memory plan (src/model/placement.c) counted its weights exactly as the backend
 * placed them (the experts at 34 (q8) / 18 (q4) bytes per 32 weights, the router and shared-expert gate as
 * stored), and the device holds that plus only what the plan does not itemize: per placed q8/q4 matrix up to 63
 * bytes aligning its scales, per expert projection its address table, and the RoPE tables (under 64 KiB in all
 * for these models), and the backend's own fixed buffers (split counters and split-K partial sums, made with it,
 * before the plan reads the free memory). */
static void check_plan(const char *name, const char *dir, const char *quant) {
  uint64_t f0 = 0, f1 = 0;
  CHECK_OK(xpi_xpu_free_memory(0, &f0));
  xpi_model *m = xpi_test_load(dir, "xpu:0", NULL, NULL, quant);
  if (!m) return;
  CHECK_OK(xpi_xpu_free_memory(0, &f1));
  const uint64_t used = f0 - f1, planned = m->plan.weights[0];
  printf("%s --quant %s on xpu:0: the device holds %llu bytes after the load, the plan's weights %llu\n", name, quant,
         (unsigned long long)used, (unsigned long long)planned);
  CHECK(planned == m->w.bytes, "%s --quant %s: the plan counted %llu bytes of weights, the backend placed %llu", name,
        quant, (unsigned long long)planned, (unsigned long long)m->w.bytes);
  const uint64_t fixed = (uint64_t)XPU_COUNTERS * sizeof(int32_t) + (uint64_t)XPU_SPLITK_PART * sizeof(float);
  CHECK(m->plan.n_dev == 1 && used >= planned && used - planned <= 65536 + fixed,
        "%s --quant %s: xpu:0 holds %llu bytes, the plan's weights are %llu", name, quant, (unsigned long long)used,
        (unsigned long long)planned);
  xpi_model_free(m);
}

/* The mixture-of-experts golden models (tests/data/arch_models/goldens.json: models -> name -> cases). */
static void run_moe(void) {
  char *path = xpi_test_strf("%s/arch_models/goldens.json", xpi_test_env("XPI_TEST_DATA"));
  cJSON *g = xpi_test_load_json(path);
  const char *names[] = {"tiny-qwen3_moe", "tiny-qwen2_moe"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char *dir = xpi_test_strf("%s/arch_models/%s", xpi_test_env("XPI_TEST_DATA"), names[i]);
    const cJSON *cases = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(g, "models"), names[i]), "cases");
    CHECK(cases != NULL, "%s in %s", names[i], path);
    check_plan(names[i], dir, "q8");
    check_plan(names[i], dir, "q4");
    if (cases) run_model(names[i], dir, cases);
    free(dir);
  }
  cJSON_Delete(g);
  free(path);
}

/* name is one of the comma-separated entries of set (every name when set is NULL or empty). */
static int in_set(const char *set, const char *name) {
  if (!set || !*set) return 1;
  const size_t n = strlen(name);
  for (const char *p = set; (p = strstr(p, name)); p += n)
    if ((p == set || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
  return 0;
}

int main(int argc, char **argv) {
  const char *skip = getenv("XPI_XPU_TEST_SKIP");
  if (skip && *skip) {
    printf("SKIPPED: %s\n", skip);
    return 77;
  }
  if (argc > 1 && !strcmp(argv[1], "moe")) {
    run_moe();
    printf("max |first-token logprob xpu - cpu|: %.3g (bound 0.02); max over the vocabulary %.3g; greedy runs parted "
           "at a near tie: %d\n", g_lp_max, g_row_max, g_near_ties);
    return xpi_test_done();
  }
  /* XPI_QUANT_MODEL_SET: a comma-separated list of the models to run (tests.cmake runs them as several entries, in
   * parallel); unset, all */
  const char *set = getenv("XPI_QUANT_MODEL_SET");
  int ran = 0;
  if (in_set(set, "tinyfortunes")) {
    char *path = xpi_test_strf("%s/goldens/tinyfortunes.json", xpi_test_env("XPI_TEST_DATA"));
    char *dir = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
    cJSON *g = xpi_test_load_json(path);
    run_model("tinyfortunes", dir, g);
    cJSON_Delete(g);
    free(path), free(dir);
    ran++;
  }
  char *path = xpi_test_strf("%s/goldens/random_models.json", xpi_test_env("XPI_TEST_DATA"));
  cJSON *g = xpi_test_load_json(path);
  const char *names[] = {"tiny-qwen3-f32", "tiny-qwen3-bf16", "tiny-llama-bf16", "tiny-qwen2-f16"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (!in_set(set, names[i])) continue;
    char *dir = xpi_test_strf("%s/%s", xpi_test_env("XPI_MODELS_DIR"), names[i]);
    run_model(names[i], dir, cJSON_GetObjectItem(cJSON_GetObjectItem(g, names[i]), "cases"));
    free(dir);
    ran++;
  }
  cJSON_Delete(g);
  free(path);
  CHECK(ran > 0, "XPI_QUANT_MODEL_SET=%s names no model", set);
  printf("max |first-token logprob xpu - cpu|: %.3g (bound 0.02); max over the vocabulary %.3g; greedy runs parted "
         "at a near tie: %d\n", g_lp_max, g_row_max, g_near_ties);
  return xpi_test_done();
}
