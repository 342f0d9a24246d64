/* xpuinfer bench --parallel: llama-batched-bench's test through one engine. For each prompt length npp and
 * each number of sequences npl: npl distinct prompts of npp pseudo-random ids are prefilled together (each
 * samples its first token: the pp test, npl*npp tokens), then all npl sequences decode ntg tokens together
 * (the tg test, npl*ntg tokens, one step per token at depth npp..npp+ntg). The two phases are measured
 * apart, as llama-batched-bench does: the decode phase resubmits each prompt with its first token, and the
 * prefix cache gives back its KV (npp a multiple of the block size, 32: nothing is recomputed), so its steps
 * are decode steps of all npl sequences from the first one. tok_s counts the tokens of all sequences. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"

#define TRY(expr) do { xpi_status s_ = (expr); if (s_ != XPI_OK) return s_; } while (0)

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct seqout {
  int32_t first;
  int n, done;
  xpi_status st;
} seqout;

static int on_event(const xpi_seq_event *ev, void *user) {
  seqout *o = user;
  if (ev->token) {
    if (o->n++ == 0) o->first = ev->token->id;
  } else {
    o->done = 1;
    o->st = ev->done->status;
  }
  return 0;
}

static xpi_status drive(xpi_engine *e) {
  int32_t pending = 1;
  while (pending > 0) TRY(xpi_engine_step(e, &pending));
  return XPI_OK;
}

typedef struct batch_run {
  xpi_engine *e;
  int32_t vocab;
  uint64_t rng;
  int32_t *prompts; /* [npl][npp + 1] */
  seqout *out;
} batch_run;

/* One repetition: *t_pp and *t_tg in seconds (t_tg 0 when ntg is 0). */
static xpi_status one_rep(batch_run *b, int npl, int npp, int ntg, double *t_pp, double *t_tg) {
  xpi_gen_options go;
  xpi_gen_options_default(&go);
  go.greedy = 1;
  go.ignore_eos = 1;
  go.max_new_tokens = 1;
  for (int64_t i = 0; i < (int64_t)npl * (npp + 1); i++) { /* new ids: nothing from earlier repetitions is cached */
    b->rng = b->rng * 6364136223846793005ull + 1442695040888963407ull;
    b->prompts[i] = (int32_t)((b->rng >> 33) % (uint64_t)b->vocab);
  }
  memset(b->out, 0, sizeof *b->out * (size_t)npl);
  double t0 = cli_now_s();
  for (int s = 0; s < npl; s++)
    TRY(xpi_engine_submit(b->e, b->prompts + (size_t)s * (npp + 1), (size_t)npp, &go, on_event, &b->out[s], NULL));
  TRY(drive(b->e));
  *t_pp = cli_now_s() - t0;
  *t_tg = 0;
  for (int s = 0; s < npl; s++)
    if (b->out[s].st != XPI_OK) return b->out[s].st;
  if (ntg == 0) return XPI_OK;
  go.max_new_tokens = ntg;
  for (int s = 0; s < npl; s++) {
    b->prompts[(size_t)s * (npp + 1) + npp] = b->out[s].first;
    memset(&b->out[s], 0, sizeof b->out[s]);
  }
  t0 = cli_now_s();
  for (int s = 0; s < npl; s++)
    TRY(xpi_engine_submit(b->e, b->prompts + (size_t)s * (npp + 1), (size_t)npp + 1, &go, on_event, &b->out[s], NULL));
  TRY(drive(b->e));
  *t_tg = cli_now_s() - t0;
  for (int s = 0; s < npl; s++)
    if (b->out[s].st != XPI_OK) return b->out[s].st;
  return XPI_OK;
}

static void report(const bench_args *a, const char *mname, const char *qname, const char *isa, const char *kernels,
                   int threads, const char *test, int npl, double *rate, int reps) {
  qsort(rate, (size_t)reps, sizeof *rate, cmp_double);
  const double med = reps % 2 ? rate[reps / 2] : (rate[reps / 2 - 1] + rate[reps / 2]) / 2;
  if (a->json)
    printf("{\"test\": \"%s\", \"n_parallel\": %d, \"quant\": \"%s\", \"threads\": %d, \"isa\": \"%s\", "
           "\"kernels\": \"%s\", \"tok_s\": %.3f, \"tok_s_min\": %.3f, \"tok_s_max\": %.3f}\n",
           test, npl, qname, threads, isa, kernels, med, rate[0], rate[reps - 1]);
  else
    printf("| %s | %s | %d | %s | %d | %.2f | %.2f - %.2f |\n", mname, qname, threads, test, npl, med, rate[0],
           rate[reps - 1]);
  fflush(stdout);
}

int bench_batched(const bench_args *a) {
  const int threads = a->threads > 0 ? (int)a->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
  long long max_npl = 0, max_npp = 0;
  for (int i = 0; i < a->n_par; i++) max_npl = a->par[i] > max_npl ? a->par[i] : max_npl;
  for (int i = 0; i < a->n_pp; i++) max_npp = a->pp[i] > max_npp ? a->pp[i] : max_npp;
  if (max_npp == 0) return cli_usage_error("bench", "--parallel needs a prompt length (-p) above 0");
  if (!a->json) {
    printf("| model | quant | threads | test | n_parallel | t/s (median) | min - max |\n");
    printf("| --- | --- | ---: | --- | ---: | ---: | ---: |\n");
    fflush(stdout);
  }
  const char *mname = strrchr(a->model, '/') && strrchr(a->model, '/')[1] ? strrchr(a->model, '/') + 1 : a->model;
  int rc = 0;
  for (int ii = 0; ii < a->n_isa * a->n_q && rc == 0; ii++) {
    const int qi = ii % a->n_q;
    const char *isa = a->isas[ii / a->n_q];
    /* the kernel table is chosen when the model's CPU backend is made (XPI_CPU_ISA, read at load) */
    if (!strcmp(isa, "auto")) unsetenv("XPI_CPU_ISA");
    else setenv("XPI_CPU_ISA", isa, 1);
    xpi_model_options o;
    xpi_model_options_default(&o);
    o.device = a->device;
    o.n_threads = (int)a->threads;
    o.kv_dtype = a->kv_dtype;
    const char *q = a->quants[qi];
    if (q && (!strcmp(q, "q8") || !strcmp(q, "q4"))) o.quant = q;
    else if (q && strcmp(q, "none")) o.dtype = q;
    xpi_model *m = NULL;
    xpi_model_info info = {.struct_size = sizeof info};
    xpi_status s = xpi_model_load(a->model, &o, &m);
    if (s == XPI_OK) s = xpi_model_get_info(m, &info);
    if (s != XPI_OK) {
      rc = cli_fail("bench", "loading the model", s);
      xpi_model_free(m);
      break;
    }
    const char *qname = q && strcmp(q, "none") ? q : info.weight_dtype;
    /* one engine: every sequence of the largest test at once, its prompt and its tokens (and the prefix
     * cache's copies of the previous repetition's prompts), prefill in steps of 512 tokens (-ub 512) */
    xpi_engine_options eo;
    xpi_engine_options_default(&eo);
    eo.max_seqs = (int32_t)max_npl;
    if (a->kv_pool) eo.kv_pool_bytes = a->kv_pool;
    else eo.kv_pool_tokens = 2 * max_npl * (max_npp + a->n_gen + 2 * eo.block_size) + 4 * eo.block_size;
    if (max_npp + a->n_gen + 1 > info.max_position_embeddings) {
      rc = cli_usage_error("bench", "-p %lld + -n %lld exceed the model's %d positions", max_npp, a->n_gen,
                           info.max_position_embeddings);
      xpi_model_free(m);
      break;
    }
    xpi_engine *e = NULL;
    s = xpi_engine_create(m, &eo, &e);
    batch_run b = {e, info.vocab_size, 0x9e3779b97f4a7c15ull, NULL, NULL};
    b.prompts = malloc(sizeof(int32_t) * (size_t)max_npl * (size_t)(max_npp + 1));
    b.out = calloc((size_t)max_npl, sizeof *b.out);
    if (s != XPI_OK) rc = cli_fail("bench", "creating the engine", s);
    else if (!b.prompts || !b.out) rc = cli_fail("bench", "out of memory", XPI_ERR_OUT_OF_MEMORY);
    double t_pp, t_tg;
    if (rc == 0 && (s = one_rep(&b, 1, max_npp < 16 ? (int)max_npp : 16, 2, &t_pp, &t_tg)) != XPI_OK) /* warm-up */
      rc = cli_fail("bench", "warm-up", s);
    for (int pi = 0; pi < a->n_pp && rc == 0; pi++)
      for (int ni = 0; ni < a->n_par && rc == 0; ni++) {
        const int npp = (int)a->pp[pi], npl = (int)a->par[ni];
        if (npp == 0) continue;
        double pp_rate[1000], tg_rate[1000];
        for (long long r = 0; r < a->reps && rc == 0; r++) {
          s = one_rep(&b, npl, npp, (int)a->n_gen, &t_pp, &t_tg);
          if (s != XPI_OK) rc = cli_fail("bench", "running the batch", s);
          pp_rate[r] = (double)npl * npp / t_pp;
          tg_rate[r] = t_tg > 0 ? (double)npl * (double)a->n_gen / t_tg : 0;
        }
        if (rc) break;
        char test[32];
        snprintf(test, sizeof test, "pp%d", npp);
        report(a, mname, qname, isa, info.kernels, threads, test, npl, pp_rate, (int)a->reps);
        if (a->n_gen > 0) {
          snprintf(test, sizeof test, "tg%lld", a->n_gen);
          report(a, mname, qname, isa, info.kernels, threads, test, npl, tg_rate, (int)a->reps);
        }
      }
    free(b.prompts);
    free(b.out);
    xpi_engine_free(e);
    xpi_model_free(m);
  }
  return rc;
}
