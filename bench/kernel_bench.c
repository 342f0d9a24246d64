/* Matmul kernels of every CPU kernel table this machine has, side by side in one process: decode GEMV (n = 1)
 * streaming a model's worth of weights (GB/s), and the prefill GEMM at one chunk (GMAC/s), on the Qwen3-0.6B
 * matrix shapes. The tables are interleaved round by round (A B C A B C ...), so the noise of a shared machine
 * hits all alike; it prints the median and min-max of each over the rounds.
 *
 * Not built by CMake (a measurement tool). From the repository root, after building:
 *   cc -O2 -Iinclude -Isrc bench/kernel_bench.c build/libxpuinfer_internal.a -lcjson -lcurl -lcrypto -lpcre2-8 -lutf8proc \
 *      -lpthread -ldl -lm -o build/kernel_bench
 *   build/kernel_bench [rounds] [dtypes] [tables]      e.g. build/kernel_bench 7 q4,q8,bf16 avx2,avx512,amx,auto
 * env: THREADS (1; >1 splits rows over the library's thread pool, as the backend does), N (prefill tokens, 256: the model's
 *      chunk), MB (decode: MiB of weights streamed per round, 1024: beyond the caches, L3 here is 300 MiB), PATH_ (decode,prefill),
 *      GEMV (1: the prefill path runs each table's decode GEMV over the N tokens, row slices over the pool, as
 *      batched decode does where the GEMV serves it; compare with GEMV=0, what xpi_cpu_matmul picks for N),
 *      HUGE (1: weights in transparent huge pages, as membw reads its array), CPUTIME (1, with THREADS=1: CPU time
 *      instead of wall time, for a machine loaded by other work).
 * Batched decode at N tokens from memory: PATH_=prefill MB is not used there (the 0.6B shapes, 22 MB of q8, stay
 * in L3); decode streams one token's weights. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/matmul_cpu.h"
#include "ops/cpu/quant.h"
#include "core/threadpool.h"
#include "ops/half.h"

static int g_cputime; /* CPUTIME=1: time on the CPU, not wall time (one thread on a loaded machine) */
static double now_s(void) {
  struct timespec t;
  clock_gettime(g_cputime ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t rng = 88172645463325252ull;
static float frand(void) {
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (float)((rng >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}

typedef struct { int64_t rows, cols; void *w; uint16_t *d; } mat;

static xpi_dtype parse_dt(const char *s) {
  if (!strcmp(s, "q4")) return XPI_DT_Q4;
  if (!strcmp(s, "q8")) return XPI_DT_Q8;
  if (!strcmp(s, "f16")) return XPI_DT_F16;
  if (!strcmp(s, "f32")) return XPI_DT_F32;
  return XPI_DT_BF16;
}

/* HUGE=1: weights in transparent huge pages (2 MiB aligned, madvised) */
static void *walloc(size_t bytes) {
  if (!getenv("HUGE") || !atoi(getenv("HUGE"))) return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
  const size_t hb = (bytes + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
  void *p = aligned_alloc(2u << 20, hb);
  if (p) madvise(p, hb, MADV_HUGEPAGE);
  return p;
}

static void make(mat *m, xpi_dtype dt, int64_t rows, int64_t cols) {
  m->rows = rows, m->cols = cols, m->d = NULL;
  float *v = malloc(sizeof(float) * (size_t)(rows * cols));
  for (int64_t i = 0; i < rows * cols; i++) v[i] = frand() * 0.05f;
  if (dt == XPI_DT_Q8 || dt == XPI_DT_Q4) {
    m->w = walloc((size_t)(rows * xpi_q_row_bytes(dt, cols)));
    m->d = malloc(sizeof(uint16_t) * (size_t)(rows * xpi_q_nblocks(cols)));
    if (xpi_quantize_rows(dt, m->w, m->d, v, XPI_DT_F32, rows, cols) != XPI_OK) abort();
  } else {
    const size_t es = dt == XPI_DT_F32 ? 4 : 2;
    m->w = walloc((size_t)(rows * cols) * es + 64);
    for (int64_t i = 0; i < rows * cols; i++) {
      if (dt == XPI_DT_F32) memcpy((char *)m->w + 4 * i, &v[i], 4);
      else {
        uint16_t h = dt == XPI_DT_BF16 ? xpi_f32_to_bf16(v[i]) : xpi_f32_to_f16(v[i]);
        memcpy((char *)m->w + 2 * i, &h, 2);
      }
    }
  }
  free(v);
}

static double mat_bytes(xpi_dtype dt, const mat *m) {
  if (dt == XPI_DT_Q8 || dt == XPI_DT_Q4)
    return (double)m->rows * ((double)xpi_q_row_bytes(dt, m->cols) + 2.0 * (double)xpi_q_nblocks(m->cols));
  return (double)m->rows * (double)m->cols * (dt == XPI_DT_F32 ? 4 : 2);
}

static xpi_pool *g_pool;
static xpi_cpu_mm_ws *g_ws;
/* The matmul as the backend runs it: the table's GEMV or phased GEMM over the pool (matmul_cpu.c). */
static void mm(const xpi_cpu_kernels *k, xpi_dtype dt, const mat *m, float *Y, const float *X, int32_t n) {
  xpi_cpu_matmul(g_pool, g_ws, k, dt, Y, m->rows, X, n, m->w, m->d, 0, m->rows, m->cols);
}

typedef struct { const xpi_cpu_kernels *k; xpi_dtype dt; const mat *m; float *Y; const float *X; int32_t n; } gv_job;
static void gv_run(void *ctx, int ith, int nth) {
  const gv_job *j = ctx;
  int64_t b, e;
  xpi_pool_range(j->m->rows, ith, nth, 8, &b, &e);
  if (b < e) j->k->gemv[j->dt](j->Y, j->m->rows, j->X, j->n, j->m->w, j->m->d, b, e, j->m->cols);
}
static int g_gemv;
/* the prefill path's matmul: the backend's choice, or (GEMV=1) the table's decode GEMV over the n tokens */
static void mm_n(const xpi_cpu_kernels *k, xpi_dtype dt, const mat *m, float *Y, const float *X, int32_t n) {
  if (!g_gemv) return mm(k, dt, m, Y, X, n);
  gv_job j = {k, dt, m, Y, X, n};
  xpi_pool_run(g_pool, gv_run, &j);
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 5;
  const char *dts = argc > 2 ? argv[2] : "q4,q8,bf16";
  const char *tabs = argc > 3 ? argv[3] : "avx2,avx512";
  const int nth = getenv("THREADS") ? atoi(getenv("THREADS")) : 1;
  const int32_t N = getenv("N") ? atoi(getenv("N")) : 256;
  const double MB = getenv("MB") ? atof(getenv("MB")) : 1024;
  const char *paths = getenv("PATH_") ? getenv("PATH_") : "decode,prefill";
  g_gemv = getenv("GEMV") && atoi(getenv("GEMV"));
  g_cputime = getenv("CPUTIME") && atoi(getenv("CPUTIME")) && nth == 1;
  if (xpi_pool_create(nth, &g_pool) != XPI_OK || !(g_ws = xpi_cpu_mm_ws_create())) return 1;
  const xpi_cpu_kernels *tk[8];
  int nt = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", tabs);
  for (char *s = NULL, *t = strtok_r(buf, ",", &s); t; t = strtok_r(NULL, ",", &s)) {
    int isa = -1;
    for (int i = 0; i < XPI_ISA_COUNT; i++)
      if (!strcmp(t, xpi_cpu_isa_name((xpi_cpu_isa)i))) isa = i;
    if (!strcmp(t, "auto")) tk[nt++] = xpi_cpu_kernels_best();
    else if (isa >= 0 && xpi_cpu_kernels_for((xpi_cpu_isa)isa)) tk[nt++] = xpi_cpu_kernels_for((xpi_cpu_isa)isa);
    else printf("no %s table on this CPU\n", t);
  }
  /* Qwen3-0.6B: per layer q 2048x1024, k and v 1024x1024, o 1024x2048, gate and up 3072x1024, down 1024x3072 */
  static const int64_t shapes[][2] = {{2048, 1024}, {1024, 1024}, {1024, 2048}, {3072, 1024}, {1024, 3072}};
  const int ns = 5;
  char dbuf[64];
  snprintf(dbuf, sizeof dbuf, "%s", dts);
  for (char *s = NULL, *t = strtok_r(dbuf, ",", &s); t; t = strtok_r(NULL, ",", &s)) {
    const xpi_dtype dt = parse_dt(t);
    if (strstr(paths, "decode")) {
      /* enough copies of the layer's matrices that one round streams MB MiB */
      double per_layer = 0;
      mat probe[5];
      for (int i = 0; i < ns; i++) probe[i] = (mat){shapes[i][0], shapes[i][1], NULL, NULL}, per_layer += mat_bytes(dt, &probe[i]);
      const int layers = (int)(MB * 1048576.0 / per_layer) + 1;
      mat *ms = malloc(sizeof(mat) * (size_t)(layers * ns));
      for (int l = 0; l < layers; l++)
        for (int i = 0; i < ns; i++) make(&ms[l * ns + i], dt, shapes[i][0], shapes[i][1]);
      float *X = malloc(sizeof(float) * 4096), *Y = malloc(sizeof(float) * 4096);
      for (int i = 0; i < 4096; i++) X[i] = frand();
      double *gbs = malloc(sizeof(double) * (size_t)(rounds * nt));
      /* layer by layer the tables take turns (each a different layer's copy, so all stream from memory):
       * interleaved every few hundred microseconds, a busy machine's load hits them alike */
      const int reps = MB < 16 ? (int)(64 / MB) + 1 : 1; /* weights that fit the caches: repeat them */
      for (int r = 0; r < rounds; r++) {
        double sec[8] = {0};
        for (int rep = 0; rep < reps; rep++)
          for (int l = 0; l < layers; l++)
            for (int k = 0; k < nt; k++) {
              const int ll = (l + k * layers / nt) % layers; /* far apart: never what another table just read */
              const double t0 = now_s();
              for (int i = 0; i < ns; i++) mm(tk[k], dt, &ms[ll * ns + i], Y, X, 1);
              sec[k] += now_s() - t0;
            }
        for (int k = 0; k < nt; k++) gbs[k * rounds + r] = per_layer * layers * reps / sec[k] / 1e9;
      }
      for (int k = 0; k < nt; k++) {
        qsort(gbs + k * rounds, (size_t)rounds, sizeof(double), cmpd);
        printf("decode  %-5s %-7s %d thr: %6.2f GB/s  (min %.2f, max %.2f, %d rounds, %.0f MB)\n", t, tk[k]->isa, nth,
               gbs[k * rounds + rounds / 2], gbs[k * rounds], gbs[k * rounds + rounds - 1], rounds, per_layer * layers / 1e6);
      }
      for (int i = 0; i < layers * ns; i++) free(ms[i].w), free(ms[i].d);
      free(ms), free(X), free(Y), free(gbs);
    }
    if (strstr(paths, "prefill")) {
      mat ms[5];
      double macs = 0;
      for (int i = 0; i < ns; i++) make(&ms[i], dt, shapes[i][0], shapes[i][1]), macs += (double)shapes[i][0] * shapes[i][1] * N;
      float *X = malloc(sizeof(float) * (size_t)N * 3072), *Y = malloc(sizeof(float) * (size_t)N * 3072);
      for (int64_t i = 0; i < (int64_t)N * 3072; i++) X[i] = frand();
      double *g = malloc(sizeof(double) * (size_t)(rounds * nt));
      const int preps = N >= 64 ? 1 : 64 / N; /* few tokens: repeat, so a round's time is not one short call */
      for (int r = 0; r < rounds; r++)
        for (int k = 0; k < nt; k++) {
          const double t0 = now_s();
          for (int rep = 0; rep < preps; rep++)
            for (int i = 0; i < ns; i++) mm_n(tk[k], dt, &ms[i], Y, X, N);
          g[k * rounds + r] = macs * preps / (now_s() - t0) / 1e9;
        }
      for (int k = 0; k < nt; k++) {
        qsort(g + k * rounds, (size_t)rounds, sizeof(double), cmpd);
        printf("%s %-5s %-7s %d thr: %6.1f GMAC/s (min %.1f, max %.1f, %d rounds, n=%d)\n", g_gemv ? "gemv   " : "prefill", t, tk[k]->isa, nth,
               g[k * rounds + rounds / 2], g[k * rounds], g[k * rounds + rounds - 1], rounds, N);
      }
      for (int i = 0; i < ns; i++) free(ms[i].w), free(ms[i].d);
      free(X), free(Y), free(g);
    }
  }
  return 0;
}
