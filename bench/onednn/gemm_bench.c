/* Standalone benchmark: libxpuinfer's CPU matmul kernels against oneDNN on the Qwen3-0.6B projection shapes.
 * Not part of the CMake build (see bench/onednn/Makefile). Builds against oneDNN 3.x (PyPI `onednn-devel`)
 * and 2.x (Debian libdnnl-dev 2.6; there the weight-decompression and RMS-norm cases are skipped).
 *
 *   Y[M,N] = X[M,K] (f32) . W^T,   W stored [N rows x K cols] (bf16 as in safetensors, or our Q8/Q4 blocks)
 *
 * Engines (interleaved: every repetition times each engine once, medians reported):
 *   own_bf16 / own_q8 / own_q4   xpi_cpu_matmul with xpi_cpu_kernels_best() (XPI_CPU_ISA picks a table) on
 *                                the library's thread pool of T threads, as the backend runs it
 *   dnnl_bf16_*                  oneDNN matmul, wei bf16 [K,N] with strides {1,K} (= our [N,K] row-major);
 *                                _any: bf16 weights reordered once into oneDNN's packed layout; _fpm: fpmath bf16
 *   dnnl_f32_ba                  oneDNN matmul on W converted to f32 beforehand, plain layout
 *   dnnl_f32_any                 same, weights reordered once into oneDNN's preferred (packed) layout
 *   dnnl_sgemm                   dnnl_sgemm('N','T') on W converted to f32 beforehand
 *   dnnl_s8 / dnnl_s4            oneDNN weight-decompression matmul, our quants, scales per group of 32 along K
 *                                (f32 copies of our f16 scales; _f16scales: as stored; _fpm_bf16: bf16 math)
 * Threads: the number of CPUs in the affinity mask (run under `taskset -c 0` for one thread): oneDNN's
 * TBB (PyPI) and OpenMP (Debian) runtimes both size themselves from it, and our pool uses the same count.
 * Implementations named "ref" are reported but not timed (they are unusable reference loops).
 * rel.err: max|Y - Y_own| / max|Y_own| against own_bf16 (bf16 rows), own_q8 (s8 rows) or own_q4 (s4 rows). */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_version.h>

#include "core/threadpool.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/matmul_cpu.h"
#include "ops/cpu/quant.h"

#define DNNL3 (DNNL_VERSION_MAJOR >= 3)

static void die(const char *what, int st) {
  fprintf(stderr, "gemm_bench: %s failed (status %d)\n", what, st);
  exit(1);
}
#define CK(x)                         \
  do {                                \
    dnnl_status_t s_ = (x);           \
    if (s_ != dnnl_success) die(#x, (int)s_); \
  } while (0)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
static void *xalloc(size_t n) {
  void *p = NULL;
  if (posix_memalign(&p, 64, n ? n : 64)) die("posix_memalign", 0);
  memset(p, 0, n);
  return p;
}
static uint32_t rng = 12345u;
static float frand(void) { /* uniform in [-1, 1) */
  rng = rng * 1664525u + 1013904223u;
  return (float)((rng >> 8) * (1.0 / 8388608.0)) - 1.0f;
}
static uint16_t f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

/* ---------- our kernels: the backend's matmul driver on its thread pool ---------- */
static int g_nthr = 1;
static xpi_pool *g_pool;
static xpi_cpu_mm_ws *g_ws;
static void own_mm(xpi_dtype dt, float *Y, const float *X, int32_t M, const void *W, const void *aux, int64_t N,
                   int64_t K) {
  xpi_cpu_matmul(g_pool, g_ws, xpi_cpu_kernels_best(), dt, Y, N, X, M, W, aux, 0, N, K);
}

/* ---------- oneDNN helpers, written once for the 2.x and 3.x C APIs ---------- */
#if DNNL3
typedef dnnl_memory_desc_t md_t; /* an opaque handle in 3.x */
#define MDP(m) (m)
static md_t md_strided(int64_t d0, int64_t d1, dnnl_data_type_t dt, int64_t s0, int64_t s1) {
  dnnl_dims_t dims = {d0, d1}, str = {s0, s1};
  md_t md;
  CK(dnnl_memory_desc_create_with_strides(&md, 2, dims, dt, str));
  return md;
}
static md_t md_any(int64_t d0, int64_t d1, dnnl_data_type_t dt) {
  dnnl_dims_t dims = {d0, d1};
  md_t md;
  CK(dnnl_memory_desc_create_with_tag(&md, 2, dims, dt, dnnl_format_tag_any));
  return md;
}
#else
typedef dnnl_memory_desc_t md_t; /* a struct in 2.x */
typedef const dnnl_memory_desc_t *const_dnnl_memory_desc_t;
#define MDP(m) (&(m))
static md_t md_strided(int64_t d0, int64_t d1, dnnl_data_type_t dt, int64_t s0, int64_t s1) {
  dnnl_dims_t dims = {d0, d1}, str = {s0, s1};
  md_t md;
  CK(dnnl_memory_desc_init_by_strides(&md, 2, dims, dt, str));
  return md;
}
static md_t md_any(int64_t d0, int64_t d1, dnnl_data_type_t dt) {
  dnnl_dims_t dims = {d0, d1};
  md_t md;
  CK(dnnl_memory_desc_init_by_tag(&md, 2, dims, dt, dnnl_format_tag_any));
  return md;
}
#endif

static dnnl_engine_t eng;
static dnnl_stream_t strm;

static dnnl_status_t matmul_pd(dnnl_primitive_desc_t *pd, md_t src, md_t wei, md_t dst, dnnl_primitive_attr_t attr) {
#if DNNL3
  return dnnl_matmul_primitive_desc_create(pd, eng, src, wei, NULL, dst, attr);
#else
  dnnl_matmul_desc_t d;
  dnnl_status_t s = dnnl_matmul_desc_init(&d, &src, &wei, NULL, &dst);
  if (s != dnnl_success) return s;
  return dnnl_primitive_desc_create(pd, &d, attr, eng, NULL);
#endif
}
static const char *impl_name(dnnl_primitive_desc_t pd) {
  const char *s = "?";
  dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s);
  return s;
}
static dnnl_memory_t mem_of(const_dnnl_memory_desc_t md, void *ptr) {
  dnnl_memory_t m;
#if DNNL3
  CK(dnnl_memory_create(&m, md, eng, ptr));
#else
  CK(dnnl_memory_create(&m, md, eng, ptr));
#endif
  return m;
}

/* One prepared oneDNN matmul: primitive + bound memories. */
typedef struct {
  char name[32];
  char impl[96];
  int ok;    /* primitive created */
  int timed; /* not a reference implementation */
  dnnl_primitive_t prim;
  int nargs;
  dnnl_exec_arg_t args[6];
  dnnl_memory_t mems[6];
  void *owned[3];
  float *Y;
  double t[64];
} dnnl_case;

static void case_exec(dnnl_case *c) {
  CK(dnnl_primitive_execute(c->prim, strm, c->nargs, c->args));
  CK(dnnl_stream_wait(strm));
}
static void case_free(dnnl_case *c) {
  if (!c->ok) return;
  dnnl_primitive_destroy(c->prim);
  for (int i = 0; i < c->nargs; i++) dnnl_memory_destroy(c->mems[i]);
  for (int i = 0; i < 3; i++) free(c->owned[i]);
}
static void case_add(dnnl_case *c, int arg, dnnl_memory_t m) {
  c->args[c->nargs].arg = arg;
  c->args[c->nargs].memory = m;
  c->mems[c->nargs++] = m;
}

/* Builds a matmul Y[M,N] = X . W^T with the given weight md (over user pointer Wp), src type sdt (X or a bf16
 * copy of X), optional attr. wei_any: let oneDNN choose the weight layout, reorder once (excluded from timing). */
static void case_matmul(dnnl_case *c, const char *name, int64_t M, int64_t N, int64_t K, dnnl_data_type_t sdt,
                        const void *Xp, md_t wmd, const void *Wp, int wei_any, dnnl_primitive_attr_t attr,
                        const void *scales, dnnl_data_type_t scale_dt) {
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "%s", name);
  md_t smd = md_strided(M, K, sdt, K, 1), dmd = md_strided(M, N, dnnl_f32, N, 1);
  md_t wq = wmd;
#if DNNL3
  dnnl_data_type_t wdt;
  dnnl_memory_desc_query(wmd, dnnl_query_data_type, &wdt);
  if (wei_any) wq = md_any(K, N, wdt);
#else
  if (wei_any) wq = md_any(K, N, wmd.data_type);
#endif
  dnnl_primitive_desc_t pd;
  dnnl_status_t st = matmul_pd(&pd, smd, wq, dmd, attr);
  if (st != dnnl_success) {
    snprintf(c->impl, sizeof c->impl, "unsupported (status %d)", (int)st);
    return;
  }
  snprintf(c->impl, sizeof c->impl, "%s", impl_name(pd));
  c->ok = 1;
  c->timed = strncmp(c->impl, "ref", 3) != 0;
  CK(dnnl_primitive_create(&c->prim, pd));
  c->Y = xalloc((size_t)M * N * 4);
  c->owned[0] = c->Y;
  case_add(c, DNNL_ARG_SRC, mem_of(MDP(smd), (void *)Xp));
  if (wei_any) {
    const_dnnl_memory_desc_t pmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    size_t sz = dnnl_memory_desc_get_size(pmd);
    void *packed = xalloc(sz);
    c->owned[1] = packed;
    dnnl_memory_t wu = mem_of(MDP(wmd), (void *)Wp), wp = mem_of(pmd, packed);
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t r;
#if DNNL3
    CK(dnnl_reorder_primitive_desc_create(&rpd, wmd, eng, pmd, eng, NULL));
#else
    CK(dnnl_reorder_primitive_desc_create(&rpd, &wmd, eng, pmd, eng, NULL));
#endif
    CK(dnnl_primitive_create(&r, rpd));
    dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, wu}, {DNNL_ARG_TO, wp}};
    CK(dnnl_primitive_execute(r, strm, 2, ra));
    CK(dnnl_stream_wait(strm));
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(wu);
    case_add(c, DNNL_ARG_WEIGHTS, wp);
  } else {
    case_add(c, DNNL_ARG_WEIGHTS, mem_of(MDP(wmd), (void *)Wp));
  }
  case_add(c, DNNL_ARG_DST, mem_of(MDP(dmd), c->Y));
#if DNNL3
  if (scales) {
    md_t scmd = md_strided(K / XPI_QK, N, scale_dt, N, 1);
    case_add(c, DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS, mem_of(scmd, (void *)scales));
    dnnl_memory_desc_destroy(scmd);
  }
  dnnl_memory_desc_destroy(smd);
  dnnl_memory_desc_destroy(dmd);
  if (wei_any) dnnl_memory_desc_destroy(wq);
#else
  (void)scales;
  (void)scale_dt;
#endif
  dnnl_primitive_desc_destroy(pd);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *t, int n) {
  double s[64];
  memcpy(s, t, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp_d);
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}
static double minv(double *t, int n) {
  double m = t[0];
  for (int i = 1; i < n; i++) m = t[i] < m ? t[i] : m;
  return m;
}
static double maxv(double *t, int n) {
  double m = t[0];
  for (int i = 1; i < n; i++) m = t[i] > m ? t[i] : m;
  return m;
}
/* max |a-b| / max |b| */
static double relerr(const float *a, const float *b, size_t n) {
  double e = 0, m = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - b[i]);
    e = d > e ? d : e;
    m = fabs(b[i]) > m ? fabs(b[i]) : m;
  }
  return m > 0 ? e / m : e;
}

typedef struct {
  const char *name;
  int64_t N, K;
} shape;
static const shape SHAPES[] = {{"q_proj", 2048, 1024}, {"k/v_proj", 1024, 1024}, {"o_proj", 1024, 2048},
                               {"gate/up", 3072, 1024}, {"down", 1024, 3072}};

#define MAXC 12

static void bench_shape(const shape *sh, int M, int reps, int quant) {
  const int64_t N = sh->N, K = sh->K;
  const xpi_cpu_kernels *kk = xpi_cpu_kernels_best();
  float *X = xalloc((size_t)M * K * 4);
  uint16_t *Xb = xalloc((size_t)M * K * 2);
  uint16_t *Wb = xalloc((size_t)N * K * 2);
  float *Wf = xalloc((size_t)N * K * 4);
  for (int64_t i = 0; i < (int64_t)M * K; i++) {
    X[i] = frand();
    Xb[i] = f32_to_bf16(X[i]);
  }
  for (int64_t i = 0; i < N * K; i++) {
    Wb[i] = f32_to_bf16(0.05f * frand());
    Wf[i] = xpi_bf16_to_f32(Wb[i]);
  }
  /* Our quantized weights, and the same quants/scales in oneDNN's layouts. */
  int64_t nb = xpi_q_nblocks(K);
  int8_t *q8 = xalloc((size_t)N * xpi_q_row_bytes(XPI_DT_Q8, K));
  uint8_t *q4 = xalloc((size_t)N * xpi_q_row_bytes(XPI_DT_Q4, K));
  uint16_t *d8 = xalloc((size_t)N * nb * 2), *d4 = xalloc((size_t)N * nb * 2);
  uint16_t *d8t = xalloc((size_t)N * nb * 2), *d4t = xalloc((size_t)N * nb * 2);
  float *f8t = xalloc((size_t)N * nb * 4), *f4t = xalloc((size_t)N * nb * 4);
  uint8_t *s4 = xalloc((size_t)N * K / 2);
  if (quant) {
    if (xpi_quantize_rows(XPI_DT_Q8, q8, d8, Wb, XPI_DT_BF16, N, K) != XPI_OK) die("xpi_quantize_rows q8", 0);
    if (xpi_quantize_rows(XPI_DT_Q4, q4, d4, Wb, XPI_DT_BF16, N, K) != XPI_OK) die("xpi_quantize_rows q4", 0);
    for (int64_t r = 0; r < N; r++)
      for (int64_t b = 0; b < nb; b++) {
        d8t[b * N + r] = d8[r * nb + b];
        d4t[b * N + r] = d4[r * nb + b];
        f8t[b * N + r] = xpi_f16_to_f32(d8[r * nb + b]);
        f4t[b * N + r] = xpi_f16_to_f32(d4[r * nb + b]);
      }
    /* our Q4 block: byte j = elem j (low nibble) | elem 16+j (high); oneDNN s4: elem 2i low, 2i+1 high. */
    for (int64_t r = 0; r < N; r++)
      for (int64_t k = 0; k < K; k++) {
        const uint8_t *blk = q4 + r * nb * 16 + (k / 32) * 16;
        int j = (int)(k % 32);
        int q = j < 16 ? (blk[j] & 15) : (blk[j - 16] >> 4);
        uint8_t v = (uint8_t)((q - 8) & 15);
        uint8_t *o = s4 + (r * K + k) / 2;
        *o = (k & 1) ? (uint8_t)((*o & 0x0f) | (v << 4)) : (uint8_t)((*o & 0xf0) | v);
      }
  }

  /* ---- engines ---- */
  dnnl_case dc[MAXC];
  int nd = 0;
  md_t wbf = md_strided(K, N, dnnl_bf16, 1, K), wf = md_strided(K, N, dnnl_f32, 1, K);
  if (!quant) {
    case_matmul(&dc[nd++], "dnnl_bf16_f32src", M, N, K, dnnl_f32, X, wbf, Wb, 0, NULL, NULL, 0);
#if DNNL3
    {
      dnnl_primitive_attr_t a;
      CK(dnnl_primitive_attr_create(&a));
      CK(dnnl_primitive_attr_set_fpmath_mode_v2(a, dnnl_fpmath_mode_bf16, 1));
      case_matmul(&dc[nd++], "dnnl_bf16_f32src_fpm", M, N, K, dnnl_f32, X, wbf, Wb, 0, a, NULL, 0);
      dnnl_primitive_attr_destroy(a);
    }
#endif
#if DNNL3
    {
      dnnl_primitive_attr_t a;
      CK(dnnl_primitive_attr_create(&a));
      CK(dnnl_primitive_attr_set_fpmath_mode_v2(a, dnnl_fpmath_mode_bf16, 1));
      case_matmul(&dc[nd++], "dnnl_bf16_f32src_any", M, N, K, dnnl_f32, X, wbf, Wb, 1, a, NULL, 0);
      dnnl_primitive_attr_destroy(a);
    }
#endif
    case_matmul(&dc[nd++], "dnnl_bf16_bf16src", M, N, K, dnnl_bf16, Xb, wbf, Wb, 0, NULL, NULL, 0);
    case_matmul(&dc[nd++], "dnnl_bf16_bf16src_any", M, N, K, dnnl_bf16, Xb, wbf, Wb, 1, NULL, NULL, 0);
    case_matmul(&dc[nd++], "dnnl_f32_ba", M, N, K, dnnl_f32, X, wf, Wf, 0, NULL, NULL, 0);
    case_matmul(&dc[nd++], "dnnl_f32_any", M, N, K, dnnl_f32, X, wf, Wf, 1, NULL, NULL, 0);
  }
#if DNNL3
  if (quant) {
    /* variants: 0 = strict fpmath, f32 scales; 1 = strict, f16 scales (our storage); 2 = bf16 fpmath, f32 scales */
    for (int bits = 8; bits >= 4; bits -= 4)
      for (int var = 0; var < 3; var++) {
        dnnl_primitive_attr_t a;
        CK(dnnl_primitive_attr_create(&a));
        CK(dnnl_primitive_attr_set_fpmath_mode_v2(a, var == 2 ? dnnl_fpmath_mode_bf16 : dnnl_fpmath_mode_strict, 1));
        dnnl_dims_t g = {XPI_QK, 1};
        dnnl_data_type_t sdt = var == 1 ? dnnl_f16 : dnnl_f32;
        CK(dnnl_primitive_attr_set_scales(a, DNNL_ARG_WEIGHTS, 3, 2, g, sdt));
        md_t wq = md_strided(K, N, bits == 8 ? dnnl_s8 : dnnl_s4, 1, K);
        char nm[32];
        snprintf(nm, sizeof nm, "dnnl_s%d%s", bits, var == 0 ? "" : var == 1 ? "_f16scales" : "_fpm_bf16");
        const void *sc = var == 1 ? (const void *)(bits == 8 ? d8t : d4t) : (const void *)(bits == 8 ? f8t : f4t);
        case_matmul(&dc[nd++], nm, M, N, K, dnnl_f32, X, wq, bits == 8 ? (void *)q8 : (void *)s4, 0, a, sc, sdt);
        dnnl_memory_desc_destroy(wq);
        dnnl_primitive_attr_destroy(a);
      }
  }
#endif

  /* own engines: index 0.. */
  const char *own_names[3];
  xpi_dtype own_fn[3];
  const void *own_w[3], *own_aux[3];
  int no = 0;
  if (!quant) {
    own_names[no] = "own_bf16", own_fn[no] = XPI_DT_BF16, own_w[no] = Wb, own_aux[no++] = NULL;
  } else {
    own_names[no] = "own_q8", own_fn[no] = XPI_DT_Q8, own_w[no] = q8, own_aux[no++] = d8;
    own_names[no] = "own_q4", own_fn[no] = XPI_DT_Q4, own_w[no] = q4, own_aux[no++] = d4;
  }
  float *Yown[3];
  double town[3][64];
  for (int i = 0; i < no; i++) Yown[i] = xalloc((size_t)M * N * 4);
  double tsg[64];
  float *Ysg = xalloc((size_t)M * N * 4);

  /* warm-up (and results for the correctness column) */
  for (int i = 0; i < no; i++) own_mm(own_fn[i], Yown[i], X, M, own_w[i], own_aux[i], N, K);
  for (int i = 0; i < nd; i++)
    if (dc[i].ok && dc[i].timed) case_exec(&dc[i]);
  if (!quant) CK(dnnl_sgemm('N', 'T', M, N, K, 1.f, X, K, Wf, K, 0.f, Ysg, N));
  if (reps > 64) reps = 64;
  for (int r = 0; r < reps; r++) {
    for (int i = 0; i < no; i++) {
      double t0 = now_s();
      own_mm(own_fn[i], Yown[i], X, M, own_w[i], own_aux[i], N, K);
      town[i][r] = now_s() - t0;
    }
    for (int i = 0; i < nd; i++) {
      if (!dc[i].ok || !dc[i].timed) continue;
      double t0 = now_s();
      case_exec(&dc[i]);
      dc[i].t[r] = now_s() - t0;
    }
    if (!quant) {
      double t0 = now_s();
      CK(dnnl_sgemm('N', 'T', M, N, K, 1.f, X, K, Wf, K, 0.f, Ysg, N));
      tsg[r] = now_s() - t0;
    }
  }
  double flop = 2.0 * M * N * K;
  double base = median(town[0], reps);
  /* reference for the error column: our f32-accurate result on the same weights (bf16: own_bf16; quant:
   * own_q8/own_q4 at M >= 4 compute the dequantized product exactly in f32; for the s4 rows compare with q4). */
  for (int i = 0; i < no; i++) {
    double m = median(town[i], reps);
    printf("| %-8s | %4d | %-22s | %8.3f | %7.1f | %7.3f-%7.3f | %5.2f | %-28s | %.1e |\n", sh->name, M, own_names[i],
           m * 1e3, flop / m * 1e-9, minv(town[i], reps) * 1e3, maxv(town[i], reps) * 1e3, base / m,
           kk->gemm[own_fn[i]] && M >= 4 ? kk->gemm[own_fn[i]]->name : kk->gemv_isa[own_fn[i]], 0.0);
  }
  if (!quant) {
    double m = median(tsg, reps);
    printf("| %-8s | %4d | %-22s | %8.3f | %7.1f | %7.3f-%7.3f | %5.2f | %-28s | %.1e |\n", sh->name, M, "dnnl_sgemm",
           m * 1e3, flop / m * 1e-9, minv(tsg, reps) * 1e3, maxv(tsg, reps) * 1e3, base / m, "sgemm (f32 W)",
           relerr(Ysg, Yown[0], (size_t)M * N));
  }
  for (int i = 0; i < nd; i++) {
    dnnl_case *c = &dc[i];
    const float *ref = Yown[0];
    if (quant && strstr(c->name, "s4")) ref = Yown[1];
    if (!c->ok || !c->timed) {
      printf("| %-8s | %4d | %-22s | %8s | %7s | %15s | %5s | %-28.28s | %s |\n", sh->name, M, c->name, "-", "-", "-",
             "-", c->impl, c->ok ? "ref" : "-");
      continue;
    }
    double m = median(c->t, reps);
    printf("| %-8s | %4d | %-22s | %8.3f | %7.1f | %7.3f-%7.3f | %5.2f | %-28.28s | %.1e |\n", sh->name, M, c->name,
           m * 1e3, flop / m * 1e-9, minv(c->t, reps) * 1e3, maxv(c->t, reps) * 1e3, base / m, c->impl,
           relerr(c->Y, ref, (size_t)M * N));
  }
  fflush(stdout);
  for (int i = 0; i < nd; i++) case_free(&dc[i]);
#if DNNL3
  dnnl_memory_desc_destroy(wbf);
  dnnl_memory_desc_destroy(wf);
#endif
  for (int i = 0; i < no; i++) free(Yown[i]);
  free(Ysg);
  free(X), free(Xb), free(Wb), free(Wf), free(q8), free(q4), free(d8), free(d4), free(d8t), free(d4t), free(f8t), free(f4t), free(s4);
}

#if DNNL3
/* RMSNorm rows: oneDNN layer normalization with dnnl_rms_norm | dnnl_use_scale vs our rmsnorm_row. */
static void bench_rmsnorm(int M, int64_t D, int reps) {
  const xpi_cpu_kernels *kk = xpi_cpu_kernels_best();
  float *x = xalloc((size_t)M * D * 4), *y0 = xalloc((size_t)M * D * 4), *y1 = xalloc((size_t)M * D * 4);
  float *w = xalloc((size_t)D * 4);
  for (int64_t i = 0; i < (int64_t)M * D; i++) x[i] = frand();
  for (int64_t i = 0; i < D; i++) w[i] = 1.0f + 0.1f * frand();
  md_t md = md_strided(M, D, dnnl_f32, D, 1);
  dnnl_primitive_desc_t pd;
  dnnl_status_t st = dnnl_layer_normalization_forward_primitive_desc_create_v2(
      &pd, eng, dnnl_forward_inference, md, md, NULL, dnnl_f32, 1e-6f, dnnl_rms_norm | dnnl_use_scale, NULL);
  if (st != dnnl_success) {
    printf("| rmsnorm  | %4d | dnnl_rmsnorm unsupported (status %d) |\n", M, (int)st);
    return;
  }
  const char *impl = impl_name(pd);
  dnnl_primitive_t p;
  CK(dnnl_primitive_create(&p, pd));
  dnnl_dims_t wd = {D};
  md_t wmd;
  CK(dnnl_memory_desc_create_with_tag(&wmd, 1, wd, dnnl_f32, dnnl_a));
  dnnl_memory_t ms = mem_of(md, x), md_ = mem_of(md, y1), mw = mem_of(wmd, w);
  dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, ms}, {DNNL_ARG_DST, md_}, {DNNL_ARG_SCALE, mw}};
  double t0s[64], t1s[64];
  if (reps > 64) reps = 64;
  for (int r = -1; r < reps; r++) {
    double t0 = now_s();
    for (int i = 0; i < M; i++) kk->rmsnorm_row(y0 + i * D, x + i * D, w, XPI_DT_F32, D, 1e-6f);
    double t1 = now_s();
    CK(dnnl_primitive_execute(p, strm, 3, args));
    CK(dnnl_stream_wait(strm));
    double t2 = now_s();
    if (r >= 0) t0s[r] = t1 - t0, t1s[r] = t2 - t1;
  }
  double m0 = median(t0s, reps), m1 = median(t1s, reps);
  printf("| rmsnorm  | %4d | own_rmsnorm_row (D=%lld) | %8.4f | %7s | %7.4f-%7.4f | %5.2f | %-28s | |\n", M,
         (long long)D, m0 * 1e3, "", minv(t0s, reps) * 1e3, maxv(t0s, reps) * 1e3, 1.0, kk->isa);
  printf("| rmsnorm  | %4d | dnnl_lnorm_rms         | %8.4f | %7s | %7.4f-%7.4f | %5.2f | %-28.28s | %.1e |\n", M,
         m1 * 1e3, "", minv(t1s, reps) * 1e3, maxv(t1s, reps) * 1e3, m0 / m1, impl, relerr(y1, y0, (size_t)M * D));
  dnnl_primitive_destroy(p);
  dnnl_primitive_desc_destroy(pd);
  dnnl_memory_destroy(ms), dnnl_memory_destroy(md_), dnnl_memory_destroy(mw);
  dnnl_memory_desc_destroy(md), dnnl_memory_desc_destroy(wmd);
  free(x), free(y0), free(y1), free(w);
}
#endif

int main(int argc, char **argv) {
  int reps = 7;
  int Ms[8] = {128, 512}, nM = 2;
  int do_bf16 = 1, do_quant = 1, do_norm = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--M") && i + 1 < argc) {
      nM = 0;
      for (char *s = strtok(argv[++i], ","); s && nM < 8; s = strtok(NULL, ",")) Ms[nM++] = atoi(s);
    } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
      const char *o = argv[++i];
      do_bf16 = strstr(o, "bf16") != NULL, do_quant = strstr(o, "quant") != NULL, do_norm = strstr(o, "norm") != NULL;
    } else {
      fprintf(stderr, "usage: %s [--reps R] [--M 1,128,512] [--only bf16,quant,norm]\n", argv[0]);
      return 2;
    }
  }
  cpu_set_t cs;
  sched_getaffinity(0, sizeof cs, &cs);
  g_nthr = CPU_COUNT(&cs);
  if (xpi_pool_create(g_nthr, &g_pool) != XPI_OK || !(g_ws = xpi_cpu_mm_ws_create())) die("thread pool", 0);
  const dnnl_version_t *v = dnnl_version();
  CK(dnnl_engine_create(&eng, dnnl_cpu, 0));
  CK(dnnl_stream_create(&strm, eng, dnnl_stream_default_flags));
  printf("oneDNN %d.%d.%d (%s), cpu_runtime=%u, threads=%d, own isa=%s, reps=%d\n\n", v->major, v->minor,
         v->patch, v->hash, v->cpu_runtime, g_nthr, xpi_cpu_kernels_best()->isa, reps);
  printf("| shape    |    M | engine                 | med ms   | GFLOP/s | min-max ms      | x own | impl"
         "                         | rel.err |\n|---|---|---|---|---|---|---|---|---|\n");
  for (int mi = 0; mi < nM; mi++)
    for (size_t s = 0; s < sizeof SHAPES / sizeof *SHAPES; s++) {
      if (do_bf16) bench_shape(&SHAPES[s], Ms[mi], reps, 0);
      if (do_quant) bench_shape(&SHAPES[s], Ms[mi], reps, 1);
    }
#if DNNL3
  if (do_norm)
    for (int mi = 0; mi < nM; mi++) bench_rmsnorm(Ms[mi], 1024, reps);
#else
  (void)do_norm;
#endif
  xpi_cpu_mm_ws_free(g_ws);
  xpi_pool_free(g_pool);
  dnnl_stream_destroy(strm);
  dnnl_engine_destroy(eng);
  return 0;
}
