/* Benchmark of the CPU attention op alone (src/ops/cpu/attention_cpu.c) on a synthetic paged KV cache shaped
 * like Qwen3-0.6B (28 layers, 16 q heads, 8 KV heads, head_dim 128; the backend's layout, blocks of 16
 * positions): one decode step (n = 1 at position depth) or one prefill chunk (n tokens ending at depth) over
 * all layers. Reports ms per step and GB/s of KV read, next to the pre-tiling algorithm (per q head and key:
 * row converted element by element, one dot and one axpy call) and a plain multi-threaded read of the same
 * bytes (the memory roof), in the same run. -w W: also the same step with a sliding window of W (and -c C
 * a logit softcap), reporting the KV bytes its key ranges hold (the rows before the window are never read:
 * tests/cpu/test_attention.c poisons them with NaN) and its time against the full step's, same run. Every
 * timed step starts after the plain read of the whole cache, so a window that would fit in the last-level
 * cache is still read from memory, as in a real decode step where the weights pass through between layers.
 *
 * Not built by CMake (a measurement tool, not part of the product); it calls internal functions, which only the
 * internal archive exports (`cmake --build build --target xpuinfer_internal`):
 *   cc -O2 -Iinclude -Isrc bench/attn_bench.c build/libxpuinfer_internal.a -lcjson -lcurl -lcrypto -lpcre2-8 \
 *      -lutf8proc -ldl -lm -lpthread -o build/attn_bench
 *   build/attn_bench [-t threads] [-d depth] [-n tokens] [-k f16|bf16|f32] [-r reps] [-s nsplit] [-old 0|1]
 *                    [-w window] [-c softcap]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/threadpool.h"
#include "ops/cpu/attention_cpu.h"
#include "ops/cpu/cpu_kernels.h"

enum { LAYERS = 28, HQ = 16, HK = 8, HD = 128, BSHIFT = 4 };

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- the algorithm before tiling, as backend_cpu.c had it (sdpa_run), for the before/after ratio */
typedef struct {
  const xpi_cpu_kernels *k;
  float *out;
  const float *q;
  const xpi_cpu_kv_layer *kv;
  const int32_t *pos;
  int32_t n;
  float scale, *scratch;
  size_t per;
} old_job;

static void old_run(void *ctx, int ith, int nth) {
  old_job *j = ctx;
  float *sc = j->scratch + (size_t)ith * j->per, *tmp = sc + j->per - HD;
  const size_t esz = j->kv->dtype == XPI_DT_F32 ? 4 : 2;
  int64_t b, e;
  xpi_pool_range((int64_t)j->n * HQ, ith, nth, 1, &b, &e);
  for (int64_t it = b; it < e; it++) {
    int32_t t = (int32_t)(it / HQ), h = (int32_t)(it % HQ), g = h / (HQ / HK), L = j->pos[t] + 1;
    const float *q = j->q + ((size_t)t * HQ + h) * HD;
    float *o = j->out + ((size_t)t * HQ + h) * HD, m = -INFINITY, sum = 0;
    for (int32_t s = 0; s < L; s++) {
      const void *r = (const char *)j->kv->k + ((size_t)s * j->kv->slot_stride + (size_t)g * j->kv->head_stride) * esz;
      for (int i = 0; i < HD; i++) tmp[i] = xpi_cpu_load_elem(r, j->kv->dtype, i);
      sc[s] = j->k->dot(q, tmp, HD) * j->scale;
      m = sc[s] > m ? sc[s] : m;
    }
    for (int32_t s = 0; s < L; s++) sum += (sc[s] = expf(sc[s] - m));
    memset(o, 0, HD * sizeof *o);
    for (int32_t s = 0; s < L; s++) {
      const void *r = (const char *)j->kv->v + ((size_t)s * j->kv->slot_stride + (size_t)g * j->kv->head_stride) * esz;
      for (int i = 0; i < HD; i++) tmp[i] = xpi_cpu_load_elem(r, j->kv->dtype, i);
      j->k->axpy(o, sc[s] / sum, tmp, HD);
    }
  }
}

/* ---- memory roof: every thread sums its share of the bytes with 4 independent vector-friendly chains */
typedef struct {
  const uint64_t *p;
  size_t words;
  uint64_t sink[64];
} read_job;

static void read_run(void *ctx, int ith, int nth) {
  read_job *j = ctx;
  int64_t b, e;
  xpi_pool_range((int64_t)j->words, ith, nth, 64, &b, &e);
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  for (int64_t i = b; i + 4 <= e; i += 4) {
    a0 += j->p[i];
    a1 += j->p[i + 1];
    a2 += j->p[i + 2];
    a3 += j->p[i + 3];
  }
  j->sink[ith & 63] = a0 ^ a1 ^ a2 ^ a3;
}

int main(int argc, char **argv) {
  int threads = 2, depth = 4096, n = 1, reps = 5, nsplit = 0, run_old = 1, window = 0;
  float softcap = 0;
  xpi_dtype dt = XPI_DT_F16;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-t")) threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-d")) depth = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-n")) n = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-r")) reps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-s")) nsplit = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-old")) run_old = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-w")) window = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-c")) softcap = (float)atof(argv[i + 1]);
    else if (!strcmp(argv[i], "-k"))
      dt = !strcmp(argv[i + 1], "f32") ? XPI_DT_F32 : !strcmp(argv[i + 1], "bf16") ? XPI_DT_BF16 : XPI_DT_F16;
    else {
      fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (n < 1 || depth < n || reps < 1 || window < 0) {
    fprintf(stderr, "need 1 <= n <= depth, reps >= 1, window >= 0\n");
    return 2;
  }
  const int32_t ctx = depth + 1, bs = 1 << BSHIFT, nblk = (ctx + bs - 1) / bs; /* slots 0..depth */
  const size_t esz = dt == XPI_DT_F32 ? 4 : 2, layer_elems = (size_t)nblk * bs * HK * HD;
  const size_t bytes = (size_t)LAYERS * layer_elems * esz;
  unsigned char *kc = aligned_alloc(64, bytes), *vc = aligned_alloc(64, bytes);
  float *q = malloc(sizeof(float) * (size_t)n * HQ * HD), *out = malloc(sizeof(float) * (size_t)n * HQ * HD);
  int32_t *pos = malloc(sizeof(int32_t) * (size_t)n), *seq = calloc((size_t)n, sizeof(int32_t));
  int32_t *table = malloc(sizeof(int32_t) * (size_t)nblk);
  xpi_pool *pool = NULL;
  if (!kc || !vc || !q || !out || !pos || !seq || !table || xpi_pool_create(threads, &pool) != XPI_OK) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  for (int32_t b = 0; b < nblk; b++) table[b] = b;
  /* values in +-[0.5, 1) in every dtype, written as raw bits (fast for half a GB) */
  uint64_t s = 88172645463325252ull;
  for (size_t i = 0; i < bytes / 2; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    uint16_t h = dt == XPI_DT_F16 ? (uint16_t)((s & 0x83ff) | 0x3800) : (uint16_t)((s & 0x807f) | 0x3f00);
    if (dt == XPI_DT_F32) h = (i & 1) ? (uint16_t)((s & 0x807f) | 0x3f00) : (uint16_t)s;
    memcpy(kc + 2 * i, &h, 2);
    memcpy(vc + 2 * i, &h, 2);
  }
  for (int i = 0; i < n * HQ * HD; i++) q[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
  for (int t = 0; t < n; t++) pos[t] = depth - n + 1 + t;
  /* KV bytes one step reads: every layer's K and V rows of the step's key range once (the tiled kernel's
   * ideal): 0..depth, or from the first key of the earliest token's window */
  const int32_t first = window > 0 && pos[0] >= window ? pos[0] - window + 1 : 0;
  const double step_bytes = 2.0 * LAYERS * (double)ctx * HK * HD * esz;
  const double win_bytes = 2.0 * LAYERS * (double)(ctx - first) * HK * HD * esz;
  const xpi_cpu_kernels *k = xpi_cpu_kernels_best();
  const float scale = 1.0f / sqrtf((float)HD);
  const xpi_cpu_attn_batch batch = {pos, seq, table, nblk};
  xpi_cpu_kv_layer kv[LAYERS], kv_old[LAYERS];
  for (int l = 0; l < LAYERS; l++) { /* the backend's layout: [layer][block][kv head][slot][hd] */
    kv[l] = (xpi_cpu_kv_layer){kc + l * layer_elems * esz, vc + l * layer_elems * esz, dt, HK, HD,
                               (int64_t)bs * HD, HD, (int64_t)HK * bs * HD, BSHIFT};
    kv_old[l] = kv[l]; /* the layout before: [layer][slot][kv head][hd] (the same bytes, read in another order) */
    kv_old[l].head_stride = HD;
    kv_old[l].slot_stride = HK * HD;
  }

  printf("attention bench: %s, %d threads, KV %s, depth %d, n %d, %.1f MB of KV per step\n", k->isa, threads,
         dt == XPI_DT_F32 ? "f32" : dt == XPI_DT_F16 ? "f16" : "bf16", depth, n, step_bytes / 1e6);
  read_job rj = {.p = (const uint64_t *)kc, .words = bytes / 8};
  double best_read = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    xpi_pool_run(pool, read_run, &rj);
    rj.p = (const uint64_t *)vc;
    xpi_pool_run(pool, read_run, &rj);
    rj.p = (const uint64_t *)kc;
    double dtm = now() - t0;
    best_read = dtm < best_read ? dtm : best_read;
  }
  printf("  plain read of K+V   %8.2f ms  %6.2f GB/s (memory roof)\n", best_read * 1e3, 2.0 * bytes / best_read / 1e9);

  double best_full[2] = {0, 0};
  for (int pass = 0; pass < (window > 0 ? 2 : 1); pass++)
    for (int impl = 0; impl < 2; impl++) {
      const int w = pass ? window : 0;
      const double sb = pass ? win_bytes : step_bytes;
      double best = 1e30;
      for (int r = 0; r < reps; r++) {
        xpi_pool_run(pool, read_run, &rj); /* evict: the step reads its KV from memory */
        rj.p = (const uint64_t *)vc;
        xpi_pool_run(pool, read_run, &rj);
        rj.p = (const uint64_t *)kc;
        double t0 = now();
        const xpi_attn_params ap = {scale, pass ? softcap : 0, w, impl ? XPI_ATTN_FLASH : XPI_ATTN_SDPA};
        for (int l = 0; l < LAYERS; l++)
          if (xpi_cpu_attention(pool, k, out, q, &kv[l], &batch, n, HQ, &ap, nsplit) != XPI_OK) {
            fprintf(stderr, "attention failed\n");
            return 1;
          }
        double dtm = now() - t0;
        best = dtm < best ? dtm : best;
      }
      if (!pass) {
        best_full[impl] = best;
        printf("  tiled %-5s         %8.2f ms  %6.2f GB/s  (%.0f%% of the roof)\n", impl ? "flash" : "sdpa",
               best * 1e3, sb / best / 1e9, 100.0 * best_read / best * sb / (2.0 * bytes));
      } else {
        printf("  %-5s window %-6d %8.2f ms  %6.2f GB/s  %.1f MB of KV read (%.1f%% of the full step's), %.1fx "
               "faster than full%s\n",
               impl ? "flash" : "sdpa", window, best * 1e3, sb / best / 1e9, sb / 1e6, 100.0 * sb / step_bytes,
               best_full[impl] / best, softcap > 0 ? " (softcap on)" : "");
      }
      if (pass == 0 && impl == 0 && run_old) {
        old_job oj = {k, out, q, NULL, pos, n, scale, NULL, (size_t)ctx + HD};
        oj.scratch = malloc(sizeof(float) * oj.per * (size_t)threads);
        double best_old = 1e30;
        for (int r = 0; r < (reps < 2 ? reps : 2); r++) {
          double t0 = now();
          for (int l = 0; l < LAYERS; l++) {
            oj.kv = &kv_old[l];
            xpi_pool_run(pool, old_run, &oj);
          }
          double dtm = now() - t0;
          best_old = dtm < best_old ? dtm : best_old;
        }
        free(oj.scratch);
        printf("  before (dot+axpy)   %8.2f ms  %6.2f GB/s  -> tiled sdpa is %.1fx faster\n", best_old * 1e3,
               step_bytes / best_old / 1e9, best_old / best);
      }
    }
  xpi_pool_free(pool);
  free(kc);
  free(vc);
  free(q);
  free(out);
  free(pos);
  free(seq);
  free(table);
  return 0;
}
