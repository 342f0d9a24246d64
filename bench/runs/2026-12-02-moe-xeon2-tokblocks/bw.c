// single/dual-thread read bandwidth variants: plain, sw prefetch (T0/T2) at distance, multi-stream
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#define BYTES (1ull << 30)
static volatile float sink;
static double run(const char *a, size_t nbytes, int mode, int dist, int streams) {
  double t0 = omp_get_wtime();
  __m512 s0 = _mm512_setzero_ps(), s1 = s0;
  size_t per = nbytes / streams;
  for (size_t off = 0; off < per; off += 128) {
    for (int s = 0; s < streams; s++) {
      const char *p = a + s * per + off;
      if (mode == 1) _mm_prefetch(p + dist, _MM_HINT_T0);
      if (mode == 2) _mm_prefetch(p + dist, _MM_HINT_T2);
      if (mode == 3) { _mm_prefetch(p + dist, _MM_HINT_T2); _mm_prefetch(p + 64 + dist, _MM_HINT_T2); }
      s0 = _mm512_add_ps(s0, _mm512_load_ps((const float *)p));
      s1 = _mm512_add_ps(s1, _mm512_load_ps((const float *)(p + 64)));
    }
  }
  sink = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
  return omp_get_wtime() - t0;
}
int main(int argc, char **argv) {
  int nt = argc > 1 ? atoi(argv[1]) : 1;
  char *a = aligned_alloc(4096, BYTES);
  madvise(a, BYTES, MADV_HUGEPAGE);
  memset(a, 1, BYTES);
  struct { int mode, dist, streams; } v[] = {{0,0,1},{0,0,4},{0,0,8},{1,512,1},{1,2048,1},{2,2048,1},{3,4096,1},{2,8192,1},{3,16384,1},{2,4096,4},{2,2048,8}};
  for (unsigned i = 0; i < sizeof v / sizeof *v; i++) {
    double best = 1e9;
    for (int r = 0; r < 4; r++) {
      double s = 0;
#pragma omp parallel num_threads(nt) reduction(max:s)
      { int id = omp_get_thread_num(); size_t part = BYTES / nt;
        double x = run(a + id * part, part, v[i].mode, v[i].dist, v[i].streams); s = x; }
      if (r && s < best) best = s;
    }
    printf("t%d mode %d dist %5d streams %d: %.2f GB/s\n", nt, v[i].mode, v[i].dist, v[i].streams, BYTES / best / 1e9);
  }
}
