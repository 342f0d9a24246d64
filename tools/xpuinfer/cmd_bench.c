/* xpuinfer bench: llama-bench-like throughput of prompt processing (ppN: one eval of N tokens) and text
 * generation (tgN: N evals of one token), at KV depths d (d tokens already in the cache), per weight
 * quantization, through the public API only (xpi_request_eval with fixed pseudo-random token ids).
 *
 * Effective bandwidth of tg = bytes read per token / seconds per token, where bytes = the matrices of all
 * layers plus the lm_head at the weight dtype's size (bf16/f16 2, f32 4, q8 34/32, q4 18/32 bytes per
 * weight; norms and the one embedding row are negligible) plus the K and V rows of every layer for the
 * average context length of the test at the KV dtype's size. A mixture-of-experts layer counts the weights a
 * token reads: the router, its n_experts_per_tok experts and the shared expert (qwen2_moe), not all experts.
 *
 * Depth: as in llama-bench, every repetition starts from an empty cache filled (untimed) with d tokens, so
 * all repetitions of a test measure the same thing. (Running them back to back from one fill would put the
 * third pp512 repetition at depth 1024.) */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"

static void bench_help(FILE *f) {
  fprintf(f,
          "usage: xpuinfer bench -m MODEL [-p 128,512] [-n 64] [-r 3] [-d 0] [--quant bf16] [-t N]\n"
          "                      [--cpu-isa auto,avx2,...] [--json]\n\n"
          "Measures prompt processing (ppN) and generation (tgN) speed like llama-bench: median tokens/s over\n"
          "the repetitions with min-max spread, and for tg the effective memory bandwidth (weights + KV read per\n"
          "token / time per token).\n\n"
          "  -m, --model PATH     model folder or Hub repo id\n"
          "  -p, --n-prompt LIST  prompt lengths, comma separated (default 128,512; 0 for none)\n"
          "  -n, --n-gen N        generated tokens per tg test (default 64; 0 for none)\n"
          "  -r, --reps N         repetitions per test (default 3)\n"
          "  -d, --depth LIST     tokens already in the KV cache, comma separated (default 0)\n"
          "  --quant LIST         weights: bf16, f16, f32 (conversion) or q8, q4 (quantization), comma\n"
          "                       separated (default: as stored)\n"
          "  --kv-dtype T         KV cache dtype f32, bf16, f16 (default: the library's)\n"
          "  -t, --threads N      CPU threads (default: all cores)\n"
          "  --cpu-isa LIST       CPU kernel tables to compare, comma separated: auto (default: each kernel\n"
          "                       from the table known fastest for it), scalar, avx2, avxvnni, avx512, amx\n"
          "                       (one whole table, as XPI_CPU_ISA; one this CPU lacks falls back to the best\n"
          "                       below it: the kernels column says what ran)\n"
          "  --device D           cpu (default), xpu, xpu:N, auto\n"
          "  --parallel LIST      batched: for each N, N sequences of each -p prompt length prefilled together,\n"
          "                       then -n tokens decoded by all N together, as llama-batched-bench (npl, npp,\n"
          "                       ntg): pp<N> and tg<N> tests with n_parallel, tok_s over all sequences\n"
          "  --kv-pool SIZE       with --parallel: the engine's KV pool in bytes (K, M, G; default: room for\n"
          "                       two repetitions' sequences)\n"
          "  --model-perf         no timing: the XPU performance model of one decode step at --ctx positions\n"
          "                       (bytes each kernel launch moves and its FLOPs, from the launch arguments),\n"
          "                       against the weights + KV a step must read, and predicted tokens/s and\n"
          "                       bandwidth share on Arc A770, Arc B580 and Data Center GPU Max 1550\n"
          "  --ctx N              with --model-perf: context positions (default 4096, at most the model's)\n"
          "  --launch-us X        with --model-perf: overhead per kernel launch in microseconds (default 5)\n"
          "  --device-map M       with --model-perf: auto, or a device list as for generate\n"
          "  --json               one JSON object per line per test instead of the table\n"
          "  -v, --verbose        print the library's warnings and notes on stderr\n"
          "  -h, --help           this help\n");
}

static int parse_list(const char *cmd, const char *opt, const char *s, long long min, long long max, long long *out,
                      int *n) {
  char buf[256];
  if (strlen(s) >= sizeof buf) return cli_usage_error(cmd, "%s: list too long", opt);
  strcpy(buf, s);
  *n = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (*n >= MAX_LIST) return cli_usage_error(cmd, "%s: at most %d values", opt, MAX_LIST);
    if (cli_parse_int(tok, min, max, &out[*n]))
      return cli_usage_error(cmd, "%s: '%s' is not an integer in [%lld, %lld]", opt, tok, min, max);
    (*n)++;
  }
  if (*n == 0) return cli_usage_error(cmd, "%s: empty list", opt);
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* bytes per weight of a weight-dtype name */
static double weight_bpe(const char *dt) {
  if (!strcmp(dt, "f32")) return 4;
  if (!strcmp(dt, "q8")) return 34.0 / 32;
  if (!strcmp(dt, "q4")) return 18.0 / 32;
  return 2;
}

typedef struct {
  xpi_model *model;
  xpi_model_info info;
  xpi_request *req;
  int32_t *ids;      /* pseudo-random ids, long enough for any single eval; new ones for every timed test */
  int32_t *fill;     /* the depth fill's ids: the same every repetition */
  float *logits;     /* one row */
  size_t ids_cap;
  uint64_t rng;
} bench_ctx;

/* New pseudo-random ids: a repetition must not find the previous one's tokens in the prefix cache. */
static void new_ids(bench_ctx *b) {
  for (size_t i = 0; i < b->ids_cap; i++) {
    b->rng = b->rng * 6364136223846793005ull + 1442695040888963407ull;
    b->ids[i] = (int32_t)((b->rng >> 33) % (uint64_t)b->info.vocab_size);
  }
}

/* Evaluates n ids of src in chunks no bigger than the ids buffer (only the depth fill is that long). */
static xpi_status eval_from(bench_ctx *b, const int32_t *src, int64_t n) {
  while (n > 0) {
    size_t m = (size_t)n < b->ids_cap ? (size_t)n : b->ids_cap;
    xpi_status s = xpi_request_eval(b->req, src, m, 0, b->logits, (size_t)b->info.vocab_size);
    if (s != XPI_OK) return s;
    n -= (int64_t)m;
  }
  return XPI_OK;
}

static xpi_status eval_n(bench_ctx *b, int64_t n) { return eval_from(b, b->ids, n); }

static xpi_status eval_tg(bench_ctx *b, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    xpi_status s = xpi_request_eval(b->req, b->ids + (i % (int64_t)b->ids_cap), 1, 0, b->logits,
                                    (size_t)b->info.vocab_size);
    if (s != XPI_OK) return s;
  }
  return XPI_OK;
}

int cmd_bench(int argc, char **argv) {
  const char *model = NULL, *quant_arg = NULL, *kv_dtype = NULL, *device = "cpu", *pp_arg = NULL, *depth_arg = NULL,
             *isa_arg = "auto";
  const char *par_arg = NULL, *kv_pool_arg = NULL, *device_map = NULL;
  int model_perf = 0;
  long long perf_ctx = 0; /* 0: min(4096, max_position_embeddings) */
  double launch_us = 5.0;
  long long pp[MAX_LIST] = {128, 512}, depth[MAX_LIST] = {0}, n_gen = 64, reps = 3, threads = 0, par[MAX_LIST];
  int n_pp = 2, n_depth = 1, json = 0, n_par = 0;
  long long kv_pool = 0;
  const cli_opt t[] = {
    {"-m", "--model", CLI_STR, &model, 0, 0, 0, 0, 0, NULL},
    {"-p", "--n-prompt", CLI_STR, &pp_arg, 0, 0, 0, 0, 0, NULL},
    {"-d", "--depth", CLI_STR, &depth_arg, 0, 0, 0, 0, 0, NULL},
    {"-n", "--n-gen", CLI_INT, &n_gen, 0, 1 << 20, 0, 0, 0, NULL},
    {"-r", "--reps", CLI_INT, &reps, 1, 1000, 0, 0, 0, NULL},
    {"-t", "--threads", CLI_INT, &threads, 0, 4096, 0, 0, 0, NULL},
    {NULL, "--quant", CLI_STR, &quant_arg, 0, 0, 0, 0, 0, NULL},
    {NULL, "--kv-dtype", CLI_STR, &kv_dtype, 0, 0, 0, 0, 0, NULL},
    {NULL, "--device", CLI_STR, &device, 0, 0, 0, 0, 0, NULL},
    {NULL, "--cpu-isa", CLI_STR, &isa_arg, 0, 0, 0, 0, 0, NULL},
    {NULL, "--json", CLI_FLAG, &json, 0, 0, 0, 0, 0, NULL},
    {NULL, "--parallel", CLI_STR, &par_arg, 0, 0, 0, 0, 0, NULL},
    {NULL, "--kv-pool", CLI_STR, &kv_pool_arg, 0, 0, 0, 0, 0, NULL},
    {NULL, "--model-perf", CLI_FLAG, &model_perf, 0, 0, 0, 0, 0, NULL},
    {NULL, "--ctx", CLI_INT, &perf_ctx, 1, 1 << 24, 0, 0, 0, NULL},
    {NULL, "--launch-us", CLI_NUM, &launch_us, 0, 0, 0, 1e6, 0, NULL},
    {NULL, "--device-map", CLI_STR, &device_map, 0, 0, 0, 0, 0, NULL},
  };
  int prc = cli_parse("bench", argc, argv, t, sizeof t / sizeof t[0], NULL, 0, NULL);
  if (prc == CLI_HELP) {
    bench_help(stdout);
    return 0;
  }
  if (prc) return prc;
  if (pp_arg && parse_list("bench", "-p", pp_arg, 0, 1 << 20, pp, &n_pp)) return 2;
  if (depth_arg && parse_list("bench", "-d", depth_arg, 0, 1 << 22, depth, &n_depth)) return 2;
  if (par_arg && parse_list("bench", "--parallel", par_arg, 1, 4096, par, &n_par)) return 2;
  if (kv_pool_arg && cli_parse_size(kv_pool_arg, &kv_pool))
    return cli_usage_error("bench", "--kv-pool: '%s' is not a size (e.g. 1G)", kv_pool_arg);
  if (!model) return cli_usage_error("bench", "-m MODEL is required");
  if (kv_pool && !n_par) return cli_usage_error("bench", "--kv-pool goes with --parallel");
  if (model_perf) {
    if (quant_arg && strchr(quant_arg, ','))
      return cli_usage_error("bench", "--model-perf takes one --quant value");
    return bench_model_perf(model, device, device_map, quant_arg, kv_dtype, perf_ctx, launch_us, json);
  }
  if (device_map) return cli_usage_error("bench", "--device-map goes with --model-perf");

  /* the --quant list; NULL entry = as stored */
  char qbuf[256];
  const char *quants[MAX_LIST] = {NULL};
  int n_q = 1;
  if (quant_arg) {
    if (strlen(quant_arg) >= sizeof qbuf) return cli_usage_error("bench", "--quant: list too long");
    strcpy(qbuf, quant_arg);
    n_q = 0;
    for (char *save = NULL, *tok = strtok_r(qbuf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      if (n_q >= MAX_LIST) return cli_usage_error("bench", "--quant: at most %d values", MAX_LIST);
      if (strcmp(tok, "bf16") && strcmp(tok, "f16") && strcmp(tok, "f32") && strcmp(tok, "q8") && strcmp(tok, "q4") &&
          strcmp(tok, "none"))
        return cli_usage_error("bench", "--quant: '%s' is not one of bf16, f16, f32, q8, q4, none", tok);
      quants[n_q++] = tok;
    }
    if (n_q == 0) return cli_usage_error("bench", "--quant: empty list");
  }
  /* the --cpu-isa list */
  char ibuf[256];
  const char *isas[MAX_LIST];
  int n_isa = 0;
  if (strlen(isa_arg) >= sizeof ibuf) return cli_usage_error("bench", "--cpu-isa: list too long");
  strcpy(ibuf, isa_arg);
  for (char *save = NULL, *tok = strtok_r(ibuf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (n_isa >= MAX_LIST) return cli_usage_error("bench", "--cpu-isa: at most %d values", MAX_LIST);
    if (strcmp(tok, "auto") && strcmp(tok, "scalar") && strcmp(tok, "avx2") && strcmp(tok, "avxvnni") &&
        strcmp(tok, "avx512") && strcmp(tok, "amx"))
      return cli_usage_error("bench", "--cpu-isa: '%s' is not one of auto, scalar, avx2, avxvnni, avx512, amx", tok);
    isas[n_isa++] = tok;
  }
  if (n_isa == 0) return cli_usage_error("bench", "--cpu-isa: empty list");
  if (n_par) {
    if (n_depth != 1 || depth[0] != 0) return cli_usage_error("bench", "--parallel runs at depth 0 (no -d)");
    bench_args ba = {model, kv_dtype, device, {0}, n_q, {0}, n_pp, n_gen, reps, threads, {0}, n_par, json, kv_pool, isas,
                     n_isa};
    memcpy(ba.quants, quants, sizeof quants);
    memcpy(ba.pp, pp, sizeof pp);
    memcpy(ba.par, par, sizeof par);
    return bench_batched(&ba);
  }
  long long max_pp = 0, max_depth = 0;
  for (int i = 0; i < n_pp; i++) if (pp[i] > max_pp) max_pp = pp[i];
  for (int i = 0; i < n_depth; i++) if (depth[i] > max_depth) max_depth = depth[i];
  const int shown_threads = threads > 0 ? (int)threads : (int)sysconf(_SC_NPROCESSORS_ONLN);

  if (!json) {
    printf("| model | quant | size (GB) | threads | test | depth | t/s (median) | min - max | GB/s | kernels |\n");
    printf("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- |\n");
    fflush(stdout);
  }
  const char *mname = strrchr(model, '/') && strrchr(model, '/')[1] ? strrchr(model, '/') + 1 : model;
  int rc = 0;
  for (int ii = 0; ii < n_isa * n_q && rc == 0; ii++) {
    const int qi = ii % n_q;
    /* the kernel table is chosen when the model's CPU backend is made (XPI_CPU_ISA, read at load) */
    if (!strcmp(isas[ii / n_q], "auto")) unsetenv("XPI_CPU_ISA");
    else setenv("XPI_CPU_ISA", isas[ii / n_q], 1);
    xpi_model_options o;
    xpi_model_options_default(&o);
    o.device = device;
    o.n_threads = (int)threads;
    o.kv_dtype = kv_dtype;
    const char *q = quants[qi];
    if (q && (!strcmp(q, "q8") || !strcmp(q, "q4"))) o.quant = q;
    else if (q && strcmp(q, "none")) o.dtype = q;
    bench_ctx b = {0};
    b.info.struct_size = sizeof b.info;
    xpi_status s = xpi_model_load(model, &o, &b.model);
    if (s == XPI_OK) s = xpi_model_get_info(b.model, &b.info);
    if (s != XPI_OK) { rc = cli_fail("bench", "loading the model", s); xpi_model_free(b.model); break; }
    const xpi_model_info *in = &b.info;
    /* every rep fits: depth + the longest test */
    long long per_rep = max_pp > n_gen ? max_pp : n_gen;
    long long n_ctx = max_depth + per_rep + 32; /* and the 18-token warm-up */
    if (n_ctx > in->max_position_embeddings) n_ctx = in->max_position_embeddings;
    xpi_request_options ro;
    xpi_request_options_default(&ro);
    ro.n_ctx = (int32_t)n_ctx;
    /* every repetition's new ids would be cached, and the next one would take never-touched blocks (a page fault
     * a 4 KiB page: +4% of a pp512 on an MHA model, 2-core VM); private, each one reuses the warm blocks of the
     * last, as llama-bench's fixed KV buffer */
    ro.prefix_cache = 0;
    b.ids_cap = (size_t)(max_pp > 512 ? max_pp : 512);
    b.ids = malloc(sizeof(int32_t) * b.ids_cap);
    b.fill = malloc(sizeof(int32_t) * b.ids_cap);
    b.logits = malloc(sizeof(float) * (size_t)in->vocab_size);
    if (!b.ids || !b.fill || !b.logits) { fprintf(stderr, "xpuinfer bench: out of memory\n"); rc = 1; }
    b.rng = 0x9e3779b97f4a7c15ull;
    if (rc == 0) {
      new_ids(&b);
      memcpy(b.fill, b.ids, sizeof(int32_t) * b.ids_cap);
    }
    if (rc == 0) {
      s = xpi_request_create(b.model, &ro, &b.req);
      if (s != XPI_OK) rc = cli_fail("bench", "creating a request", s);
    }
    /* bytes per token of the weights (see the file comment) and of one cached token's K+V over all layers */
    const double H = in->hidden_size, qd = (double)in->n_heads * in->head_dim, kd = (double)in->n_kv_heads * in->head_dim;
    const double attn_w = H * qd * 2 + H * kd * 2, dense_w = 3 * H * (double)in->intermediate_size;
    const double moe_w = H * in->n_experts + 3 * H * ((double)in->n_experts_per_tok * in->moe_intermediate_size +
                                                      in->shared_expert_intermediate_size + 0.0) +
                         (in->shared_expert_intermediate_size ? H : 0);
    const double wbytes = (attn_w * in->n_layers + dense_w * (in->n_layers - in->n_moe_layers) +
                           moe_w * in->n_moe_layers + (double)in->vocab_size * H) *
                          weight_bpe(in->weight_dtype);
    const double kv_esz = !kv_dtype || !strcmp(kv_dtype, "f32") ? 4 : 2;
    const double kv_tok = 2.0 * in->n_layers * kd * kv_esz;
    const char *qname = q && strcmp(q, "none") ? q : in->weight_dtype;

    /* warm-up (page in the weights, start the threads), untimed */
    if (rc == 0) {
      s = eval_n(&b, 16);
      if (s == XPI_OK) s = eval_tg(&b, 2);
      if (s != XPI_OK) rc = cli_fail("bench", "warm-up", s);
    }
    for (int di = 0; di < n_depth && rc == 0; di++) {
      for (int ti = 0; ti < n_pp + 1 && rc == 0; ti++) {
        const int is_tg = ti == n_pp;
        const long long len = is_tg ? n_gen : pp[ti];
        if (len == 0) continue;
        double ts[1000], ctx_sum = 0;
        for (long long r = 0; r < reps; r++) {
          /* every repetition starts from the same context, as llama-bench's: empty, then filled to the depth
           * (untimed) */
          xpi_request_reset(b.req);
          s = eval_from(&b, b.fill, depth[di]);
          new_ids(&b);
          if (s != XPI_OK) { rc = cli_fail("bench", "filling the KV cache", s); break; }
          const double start_ctx = xpi_request_n_past(b.req);
          double t0 = cli_now_s();
          s = is_tg ? eval_tg(&b, len) : eval_n(&b, len);
          double t1 = cli_now_s();
          if (s != XPI_OK) { rc = cli_fail("bench", is_tg ? "generating" : "processing the prompt", s); break; }
          ts[r] = (double)len / (t1 - t0);
          ctx_sum += start_ctx + (double)len / 2;
        }
        if (rc) break;
        double sorted[1000];
        memcpy(sorted, ts, sizeof(double) * (size_t)reps);
        qsort(sorted, (size_t)reps, sizeof(double), cmp_double);
        const double med = reps % 2 ? sorted[reps / 2] : (sorted[reps / 2 - 1] + sorted[reps / 2]) / 2;
        const double avg_ctx = ctx_sum / (double)reps;
        const double gbs = is_tg ? (wbytes + kv_tok * avg_ctx) * med / 1e9 : NAN;
        char test[32];
        snprintf(test, sizeof test, "%s%lld", is_tg ? "tg" : "pp", len);
        if (json) { /* valid JSON whatever the timer says: a non-finite rate is null */
          cli_buf o = {0};
          cli_buf_printf(&o, "{\"test\": \"%s\", \"depth\": %lld, \"quant\": ", test, depth[di]);
          cli_json_str(&o, qname, strlen(qname));
          cli_buf_printf(&o, ", \"threads\": %d, \"isa\": ", shown_threads);
          cli_json_str(&o, isas[ii / n_q], strlen(isas[ii / n_q]));
          cli_buf_puts(&o, ", \"kernels\": ");
          cli_json_str(&o, in->kernels, strlen(in->kernels));
          cli_buf_puts(&o, ", \"tok_s\": ");
          cli_json_num(&o, med, 3);
          cli_buf_puts(&o, ", \"tok_s_min\": ");
          cli_json_num(&o, sorted[0], 3);
          cli_buf_puts(&o, ", \"tok_s_max\": ");
          cli_json_num(&o, sorted[reps - 1], 3);
          cli_buf_puts(&o, ", \"gb_s\": ");
          cli_json_num(&o, gbs, 3); /* NAN (null) for pp tests */
          cli_buf_puts(&o, "}");
          if (!o.oom) printf("%s\n", o.p);
          cli_buf_free(&o);
        } else {
          char gb[32] = "-";
          if (is_tg) snprintf(gb, sizeof gb, "%.1f", gbs);
          printf("| %s | %s | %.2f | %d | %s | %lld | %.2f | %.2f - %.2f | %s | %s |\n", mname, qname, wbytes / 1e9,
                 shown_threads, test, depth[di], med, sorted[0], sorted[reps - 1], gb, in->kernels);
        }
        fflush(stdout);
      }
    }
    xpi_request_free(b.req);
    xpi_model_free(b.model);
    free(b.ids);
    free(b.fill);
    free(b.logits);
  }
  return rc;
}
