/* The one-token q8 GEMV against llama.cpp's Q8_0 row dot (ggml_vec_dot_q8_0_q8_0, what its CPU backend runs for
 * Q8_0 decode on x86: one row at a time, 34-byte blocks of a half scale and 32 quants), on the same weights, one
 * thread, interleaved matrix by matrix. Both read 34 bytes per 32 weights; ggml quantizes the activations once
 * per matmul (quantize_row_q8_0), as ours does per call. Reports GB/s of weights by CPU time (this thread's time
 * on the CPU: a machine loaded by other work inflates wall time, not this) for weights that fit L3 (MB=8:
 * compute) and that stream from memory (MB=512).
 *
 * Not built by CMake (needs a llama.cpp build). From the repository root, after building both:
 *   cc -O2 -Iinclude -Isrc bench/q8dot_vs_ggml.c build/libxpuinfer_internal.a -LLLAMA/build/bin -lggml-cpu \
 *      -lggml-base -Wl,-rpath,LLAMA/build/bin -lcjson -lcurl -lcrypto -lpcre2-8 -lutf8proc -lpthread -ldl -lm \
 *      -o build/q8dot_vs_ggml
 *   build/q8dot_vs_ggml [rounds] [MB] [table]      (5, 8, avx512) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/quant.h"
#include "ops/half.h"

/* llama.cpp's (ggml-cpu/quants.h; exported by libggml-cpu) */
void ggml_cpu_init(void);
void quantize_row_q8_0(const float *x, void *y, int64_t k);
void ggml_vec_dot_q8_0_q8_0(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc);

static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static uint64_t rng = 88172645463325252ull;
static float frand(void) {
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (float)((rng >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}
static int cmpd(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct { int64_t rows, cols; void *w; uint16_t *d; void *g; } mat; /* ours (quants, scales), ggml's */

int main(int argc, char **argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 5;
  const double MB = argc > 2 ? atof(argv[2]) : 8;
  const char *tab = argc > 3 ? argv[3] : "avx512";
  const xpi_cpu_kernels *k = NULL;
  for (int i = 0; i < XPI_ISA_COUNT; i++)
    if (!strcmp(tab, xpi_cpu_isa_name((xpi_cpu_isa)i))) k = xpi_cpu_kernels_for((xpi_cpu_isa)i);
  if (!k) return fprintf(stderr, "no %s table on this CPU\n", tab), 1;
  ggml_cpu_init();
  static const int64_t shapes[][2] = {{2048, 1024}, {1024, 1024}, {1024, 2048}, {3072, 1024}, {1024, 3072}};
  double per_layer = 0;
  for (int i = 0; i < 5; i++) per_layer += (double)shapes[i][0] * (double)shapes[i][1] / 32 * 34;
  const int layers = (int)(MB * 1048576.0 / per_layer) + 1, nm = layers * 5;
  mat *ms = calloc((size_t)nm, sizeof *ms);
  float *v = malloc(sizeof(float) * 3072 * 3072), *X = malloc(sizeof(float) * 3072), *Y = malloc(sizeof(float) * 3072);
  for (int i = 0; i < 3072; i++) X[i] = frand();
  for (int m = 0; m < nm; m++) {
    mat *a = &ms[m];
    a->rows = shapes[m % 5][0], a->cols = shapes[m % 5][1];
    for (int64_t i = 0; i < a->rows * a->cols; i++) v[i] = frand() * 0.05f;
    a->w = aligned_alloc(64, (size_t)(a->rows * a->cols));
    a->d = malloc(sizeof(uint16_t) * (size_t)(a->rows * a->cols / 32));
    a->g = malloc((size_t)(a->rows * a->cols / 32 * 34));
    if (xpi_quantize_rows(XPI_DT_Q8, a->w, a->d, v, XPI_DT_F32, a->rows, a->cols) != XPI_OK) return 1;
    for (int64_t r = 0; r < a->rows; r++) quantize_row_q8_0(v + r * a->cols, (char *)a->g + r * (a->cols / 32 * 34), a->cols);
  }
  unsigned char xq8[3072 / 32 * 34];
  double *gb = malloc(sizeof(double) * (size_t)rounds * 2);
  const int reps = MB < 64 ? (int)(64 / MB) + 1 : 1;
  for (int r = 0; r < rounds; r++) {
    double sec[2] = {0, 0};
    for (int rep = 0; rep < reps; rep++)
      for (int m = 0; m < nm; m++) {
        const mat *a = &ms[m], *b = &ms[(m + nm / 2) % nm]; /* the engines on different matrices: never warm */
        double t0 = cpu_s();
        k->gemv[XPI_DT_Q8](Y, a->rows, X, 1, a->w, a->d, 0, a->rows, a->cols);
        sec[0] += cpu_s() - t0;
        t0 = cpu_s();
        quantize_row_q8_0(X, xq8, b->cols);
        const size_t rb = (size_t)(b->cols / 32 * 34);
        for (int64_t i = 0; i < b->rows; i++) ggml_vec_dot_q8_0_q8_0((int)b->cols, &Y[i], 0, (const char *)b->g + i * rb, 0, xq8, 0, 1);
        sec[1] += cpu_s() - t0;
      }
    for (int e = 0; e < 2; e++) gb[e * rounds + r] = per_layer * layers * reps / sec[e] / 1e9;
  }
  static const char *names[2] = {"xpuinfer", "ggml Q8_0"};
  for (int e = 0; e < 2; e++) {
    qsort(gb + e * rounds, (size_t)rounds, sizeof(double), cmpd);
    printf("q8 gemv %-9s %-6s 1 thr: %6.2f GB/s by CPU time (min %.2f, max %.2f, %d rounds, %.0f MB)\n", names[e],
           e ? "-" : k->isa, gb[e * rounds + rounds / 2], gb[e * rounds], gb[e * rounds + rounds - 1], rounds,
           per_layer * layers / 1e6);
  }
  return 0;
}
