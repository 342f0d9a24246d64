/* In-process A/B of two builds of libxpuinfer: both are dlopen()ed into one process, each loads the same
 * model, and decode alternates between them in blocks of tokens (A B B A A B ...), so minute-scale noise of a
 * shared machine hits both alike. Whole-process runs on the 2-vCPU VM here vary by +-10% between minutes;
 * this harness repeats to about +-2-4%.
 *
 * Not built by CMake (a measurement tool). Build and run, from the repository root:
 *   cc -O2 -Iinclude bench/ab_inprocess.c -ldl -o build/ab_inprocess
 *   cp -L build/libxpuinfer.so /tmp/a.so      # the baseline, before rebuilding with the change
 *   build/ab_inprocess /tmp/a.so build/libxpuinfer.so q4 0 512     # quant depth tokens [block]
 * Run it both ways round (A B, then B A) and report both ratios.
 * env: MODEL (default /work/models/qwen3-0.6b-rand), KV (KV cache dtype, default the library's), THREADS (2),
 *      PP (prefill mode: each block is one eval of PP prompt tokens from an empty cache, a new prompt for each
 *      pair of blocks, and `tokens` counts blocks;
 *      e.g. PP=512 build/ab_inprocess /tmp/a.so build/libxpuinfer.so q8 0 6 1).
 * Each library keeps its own thread pool; a 5 ms pause before every block lets the idle pool's workers go to
 * sleep, so neither library's idle spinning takes CPU from the other's timed block. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xpuinfer.h"

typedef struct {
  void *h;
  xpi_status (*load)(const char *, const xpi_model_options *, xpi_model **);
  void (*model_defaults)(xpi_model_options *);
  xpi_status (*req_create)(xpi_model *, const xpi_request_options *, xpi_request **);
  void (*req_defaults)(xpi_request_options *);
  xpi_status (*eval)(xpi_request *, const int32_t *, size_t, int, float *, size_t);
  void (*reset)(xpi_request *);
  const char *(*last_error)(void);
  xpi_model *m;
  xpi_request *r;
} lib;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *sym(void *h, const char *name) {
  void *p = dlsym(h, name);
  if (!p) {
    fprintf(stderr, "ab_inprocess: %s not found\n", name);
    exit(1);
  }
  return p;
}

/* Opens one build, loads the model and fills the KV cache to depth. */
static void open_lib(lib *L, const char *so, const char *quant, int depth, int ntok) {
  L->h = dlopen(so, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND); /* two copies of every symbol, kept apart */
  if (!L->h) {
    fprintf(stderr, "ab_inprocess: %s\n", dlerror());
    exit(1);
  }
  *(void **)&L->load = sym(L->h, "xpi_model_load");
  *(void **)&L->model_defaults = sym(L->h, "xpi_model_options_default");
  *(void **)&L->req_create = sym(L->h, "xpi_request_create");
  *(void **)&L->req_defaults = sym(L->h, "xpi_request_options_default");
  *(void **)&L->eval = sym(L->h, "xpi_request_eval");
  *(void **)&L->last_error = sym(L->h, "xpi_last_error");
  *(void **)&L->reset = sym(L->h, "xpi_request_reset");
  xpi_model_options o;
  L->model_defaults(&o);
  o.device = "cpu";
  o.n_threads = getenv("THREADS") ? atoi(getenv("THREADS")) : 2;
  if (strcmp(quant, "bf16")) o.quant = quant;
  o.kv_dtype = getenv("KV");
  const char *model = getenv("MODEL") ? getenv("MODEL") : "/work/models/qwen3-0.6b-rand";
  xpi_request_options ro;
  L->req_defaults(&ro);
  const int pp = getenv("PP") ? atoi(getenv("PP")) : 0;
  ro.n_ctx = depth + (pp > 0 ? pp : ntok) + 16;
  if (L->load(model, &o, &L->m) != XPI_OK || L->req_create(L->m, &ro, &L->r) != XPI_OK) {
    fprintf(stderr, "ab_inprocess: %s: %s\n", so, L->last_error());
    exit(1);
  }
  int32_t *ids = malloc(sizeof(int32_t) * (size_t)(depth + 1));
  if (!ids) exit(1);
  for (int i = 0; i <= depth; i++) ids[i] = 100 + i % 1000;
  for (int i = 0; i < depth; i += 512)
    if (L->eval(L->r, ids + i, (size_t)(depth - i < 512 ? depth - i : 512), 0, NULL, 0) != XPI_OK) {
      fprintf(stderr, "ab_inprocess: filling the cache: %s\n", L->last_error());
      exit(1);
    }
  free(ids);
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: ab_inprocess A.so B.so quant(bf16|q8|q4) depth tokens [block]\n");
    return 2;
  }
  const char *quant = argv[3];
  const int depth = atoi(argv[4]), ntok = atoi(argv[5]), blk = argc > 6 ? atoi(argv[6]) : 8;
  if (depth < 0 || ntok < 1 || blk < 1) return 2;
  lib A, B;
  open_lib(&A, argv[1], quant, depth, ntok);
  open_lib(&B, argv[2], quant, depth, ntok);
  double ta = 0, tb = 0;
  int na = 0, nb = 0;
  const int32_t id = 7;
  const int pp = getenv("PP") ? atoi(getenv("PP")) : 0;
  int32_t *prompt = malloc(sizeof(int32_t) * (size_t)(pp > 0 ? pp : 1));
  if (!prompt) return 1;
  for (int i = 0; i < ntok; i += blk) {
    /* a new prompt for each pair of blocks: the request engine's prefix cache would serve a repeated one without
     * computing it (the tool measured cache hits so once the engine had one) */
    for (int q = 0; q < pp; q++) prompt[q] = 200 + (q * 7 + i * 131) % 1000;
    for (int w = 0; w < 2; w++) {
      lib *L = (((i / blk) & 1) ^ w) ? &B : &A; /* A B, then B A: each leads half of the pairs */
      const int k = ntok - i < blk ? ntok - i : blk;
      usleep(5000);
      if (pp > 0) L->reset(L->r); /* prefill mode: from an empty cache (depth is ignored) */
      const double t = now_s();
      for (int j = 0; j < k; j++)
        if (pp > 0 ? L->eval(L->r, prompt, (size_t)pp, 0, NULL, 0) != XPI_OK : L->eval(L->r, &id, 1, 0, NULL, 0) != XPI_OK) {
          fprintf(stderr, "ab_inprocess: decode: %s\n", L->last_error());
          return 1;
        }
      const int done = pp > 0 ? k * pp : k;
      if (L == &A) ta += now_s() - t, na += done;
      else tb += now_s() - t, nb += done;
    }
  }
  free(prompt);
  if (pp > 0) printf("%s pp%d, %d prefills each", quant, pp, ntok);
  else printf("%s depth %d, %d tokens each", quant, depth, ntok);
  printf(": A %.2f tok/s, B %.2f tok/s, B/A %.3f\n", na / ta, nb / tb, (nb / tb) / (na / ta));
  return 0;
}
