/* Chooses the CPU kernels at run time. A feature counts only when CPUID reports it AND the OS saves its register
 * state (XCR0 via xgetbv), as a hypervisor may expose AVX-512 in CPUID yet not enable ZMM state; AMX also needs
 * Linux to grant this process the tile data state (arch_prctl ARCH_REQ_XCOMP_PERM, asked once).
 *
 * By default the table is "auto": each kernel (the decode GEMV and the prefill GEMM of each weight dtype) comes
 * from the first table in its preference list below that this CPU can run. The lists are what was measured
 * (bench/kernel_bench.c, and the side-by-side runs in bench/): a wider ISA is not faster for every kernel
 * (bf16 decode is bound by memory and its AVX2 four-stream GEMV is what every table runs; the int8 decode
 * GEMV and the prefill GEMMs gain from VNNI, AVX-512 and AMX). XPI_CPU_ISA=scalar|avx2|avxvnni|avx512|amx
 * forces one whole table (tests, benchmarks); a forced table the CPU lacks falls back to the best one below it
 * that it has. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/cpu_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

static uint64_t xgetbv0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

/* Linux grants the AMX tile data state (XTILEDATA, xfeature 18) per process on request. */
static int amx_permitted(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
  static int ok = -1;
  if (ok < 0) ok = syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18) == 0;
  return ok;
#else
  return 0;
#endif
}

static int detect(xpi_cpu_isa isa) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
  const int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
  if (!osxsave || !avx) return 0;
  const uint64_t xcr0 = xgetbv0();
  if ((xcr0 & 0x6) != 0x6) return 0; /* XMM and YMM state */
  unsigned b7, c7, d7, a71 = 0, b71, c71, d71;
  if (!__get_cpuid_count(7, 0, &a, &b7, &c7, &d7)) return 0;
  if (!__get_cpuid_count(7, 1, &a71, &b71, &c71, &d71)) a71 = 0;
  const int avx2 = ((b7 >> 5) & 1) && fma && f16c;
  if (isa == XPI_ISA_AVX2) return avx2;
  if (isa == XPI_ISA_AVXVNNI) return avx2 && ((a71 >> 4) & 1);
  const int f = (b7 >> 16) & 1, dq = (b7 >> 17) & 1, bw = (b7 >> 30) & 1, vl = (b7 >> 31) & 1, vnni = (c7 >> 11) & 1;
  const int bf16 = (a71 >> 5) & 1;
  const int avx512 = avx2 && f && dq && bw && vl && vnni && bf16 &&
                     (xcr0 & 0xe6) == 0xe6; /* plus opmask, ZMM_Hi256, Hi16_ZMM state */
  if (isa == XPI_ISA_AVX512) return avx512;
  if (isa != XPI_ISA_AMX) return 0;
  const int amx = ((d7 >> 22) & 1) && ((d7 >> 24) & 1) && ((d7 >> 25) & 1); /* amx-bf16, amx-tile, amx-int8 */
  return avx512 && amx && (xcr0 & 0x60000) == 0x60000 /* XTILECFG, XTILEDATA */ && amx_permitted();
}
#else
static int detect(xpi_cpu_isa isa) { return isa == XPI_ISA_SCALAR; }
#endif

static const char *const k_names[XPI_ISA_COUNT] = {"scalar", "avx2", "avxvnni", "avx512", "amx"};

const char *xpi_cpu_isa_name(xpi_cpu_isa isa) { return isa >= 0 && isa < XPI_ISA_COUNT ? k_names[isa] : "?"; }

int xpi_cpu_has(xpi_cpu_isa isa) {
  static atomic_int known[XPI_ISA_COUNT]; /* 0 unknown, 1 yes, 2 no; a race only repeats the check */
  if (isa == XPI_ISA_SCALAR) return 1;
  if (isa < 0 || isa >= XPI_ISA_COUNT) return 0;
  if (!atomic_load(&known[isa])) atomic_store(&known[isa], detect(isa) ? 1 : 2);
  return atomic_load(&known[isa]) == 1;
}

const xpi_cpu_kernels *xpi_cpu_kernels_for(xpi_cpu_isa isa) {
  if (!xpi_cpu_has(isa)) return NULL;
  switch (isa) {
    case XPI_ISA_AMX: return xpi_cpu_kernels_amx();
    case XPI_ISA_AVX512: return xpi_cpu_kernels_avx512();
    case XPI_ISA_AVXVNNI: return xpi_cpu_kernels_avxvnni();
    case XPI_ISA_AVX2: return xpi_cpu_kernels_avx2();
    default: return xpi_cpu_kernels_scalar();
  }
}

/* ------------------------------------------------------------------ the "auto" table */
/* Preference per kernel, best first (scalar is the implicit last), from bench/kernel_bench.c on one core of a
 * 16-core Xeon with AMX (bench/2026-12-01-cpu-xeon-tables.md), GB/s for decode from memory, GMAC/s for prefill:
 *   decode q4   avx512 13.2, avxvnni 12.6, avx2 12.5      decode q8   avx512 12.9, avxvnni 12.2, avx2 11.7
 *   decode bf16 12.7 for every table (they all run the AVX2 four-stream GEMV)
 *   prefill q4  amx 195, avxvnni 97, avx512 96, avx2 89    prefill q8  amx 185, avxvnni 64, avx512 63, avx2 47
 *   prefill bf16 amx 104-108 (three bf16 terms per activation, amx_layout.h; 145-164 with two), avx2 35-38.5,
 *                avx512 12.5-12.8 (vdpbf16ps, three terms; 20.3 with two): not in the list (one term would be
 *                faster but fails the goldens).
 * (AVX-VNNI beats AVX-512 by 1-2% in prefill there, within noise; AVX-512's 512-bit GEMV is ahead in decode.) */
#define PREF_END XPI_ISA_SCALAR
static const xpi_cpu_isa k_pref_gemv_q[] = {XPI_ISA_AVX512, XPI_ISA_AVXVNNI, XPI_ISA_AVX2, PREF_END};
/* AMD Zen 4 (family 19h; the Zen 3 models of that family have no AVX-512): the AVX-512 q8/q4 GEMV transposes
 * each row's blocks with 512-bit lane permutes, which Zen 4 runs at half width, and for one token nothing shares
 * that cost: measured on an EPYC (family 25, model 17), one thread from memory, AVX2 16.5 vs 13.1 GB/s (q4) and
 * 14.6 vs 13.2 (q8), two threads 23.1 vs 19.7 and 21.5 vs 17.5 (bench/2026-12-02-zen4-tables.md). From 4 tokens
 * the permutes are shared and the AVX-512 kernels win there as on the Xeon (k_pref_smalln). */
static const xpi_cpu_isa k_pref_gemv_q_zen4[] = {XPI_ISA_AVX2, PREF_END};
static const xpi_cpu_isa k_pref_gemv_dense[] = {XPI_ISA_AVX2, PREF_END};
static const xpi_cpu_isa k_pref_gemm_q[] = {XPI_ISA_AMX, XPI_ISA_AVX512, XPI_ISA_AVXVNNI, XPI_ISA_AVX2, PREF_END};
static const xpi_cpu_isa k_pref_gemm_bf16[] = {XPI_ISA_AMX, XPI_ISA_AVX2, PREF_END};
static const xpi_cpu_isa k_pref_gemm_dense[] = {XPI_ISA_AVX2, PREF_END};
/* batched decode of float weights: the AVX-512 small-n kernel (the AMX table's up to 16 bf16 tokens, where its
 * GEMM takes over), else the AVX2 one (mm_smalln.h) */
static const xpi_cpu_isa k_pref_smalln[] = {XPI_ISA_AMX, XPI_ISA_AVX512, XPI_ISA_AVX2, PREF_END};

#if defined(__x86_64__) || defined(__i386__)
static int amd_family_19h(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d) || b != 0x68747541u /* "Auth" */ || d != 0x69746e65u /* "enti" */ ||
      c != 0x444d4163u /* "cAMD" */ || !__get_cpuid(1, &a, &b, &c, &d))
    return 0;
  return ((a >> 8) & 0xf) == 0xf && 0xf + ((a >> 20) & 0xff) == 0x19; /* base family 0xf plus the extended one */
}
#else
static int amd_family_19h(void) { return 0; }
#endif

static const xpi_cpu_kernels *first_of(const xpi_cpu_isa *pref) {
  for (; *pref != PREF_END; pref++) {
    const xpi_cpu_kernels *k = xpi_cpu_kernels_for(*pref);
    if (k) return k;
  }
  return xpi_cpu_kernels_scalar();
}

static xpi_cpu_kernels k_auto;
static pthread_once_t k_auto_once = PTHREAD_ONCE_INIT;

static void build_auto(void) {
  /* the vector kernels (norms, attention, conversions) from the best table; then each matmul kernel */
  const xpi_cpu_kernels *top = xpi_cpu_kernels_scalar();
  for (int i = XPI_ISA_COUNT - 1; i > XPI_ISA_SCALAR; i--)
    if ((top = xpi_cpu_kernels_for((xpi_cpu_isa)i))) break;
  if (!top) top = xpi_cpu_kernels_scalar();
  xpi_cpu_kernels k = *top;
  k.isa = "auto";
  const int zen4 = amd_family_19h();
  for (int dt = 0; dt < 8; dt++) {
    const int q = dt == XPI_DT_Q8 || dt == XPI_DT_Q4;
    const xpi_cpu_kernels *g = first_of(!q ? k_pref_gemv_dense : zen4 ? k_pref_gemv_q_zen4 : k_pref_gemv_q);
    const xpi_cpu_kernels *m = first_of(q ? k_pref_gemm_q : dt == XPI_DT_BF16 ? k_pref_gemm_bf16 : k_pref_gemm_dense);
    k.gemv[dt] = g->gemv[dt], k.gemv_isa[dt] = g->gemv_isa[dt];
    k.gemm[dt] = m->gemm[dt];
  }
  const xpi_cpu_kernels *sn = first_of(k_pref_smalln);
  memcpy(k.smalln, sn->smalln, sizeof k.smalln);
  memcpy(k.smalln_max, sn->smalln_max, sizeof k.smalln_max);
  k.smalln_isa = sn->smalln_isa;
  k_auto = k;
  xpi_log(1, "cpu: auto kernels: bf16 decode %s, prefill %s; q8/q4 decode %s, prefill %s", k.gemv_isa[XPI_DT_BF16],
          k.gemm[XPI_DT_BF16] ? k.gemm[XPI_DT_BF16]->name : "-", k.gemv_isa[XPI_DT_Q8],
          k.gemm[XPI_DT_Q8] ? k.gemm[XPI_DT_Q8]->name : "-");
}

const xpi_cpu_kernels *xpi_cpu_kernels_best(void) {
  const char *env = getenv("XPI_CPU_ISA");
  int want = -1;
  for (int i = 0; env && i < XPI_ISA_COUNT; i++)
    if (strcmp(env, k_names[i]) == 0) want = i;
  if (env && *env && want < 0 && strcmp(env, "auto") != 0)
    xpi_log(2, "XPI_CPU_ISA='%s' is not one of auto, scalar, avx2, avxvnni, avx512, amx; ignored", env);
  if (want < 0) {
    pthread_once(&k_auto_once, build_auto);
    return &k_auto;
  }
  for (int i = want; i >= 0; i--) {
    const xpi_cpu_kernels *k = xpi_cpu_kernels_for((xpi_cpu_isa)i);
    if (!k) continue;
    if (i != want)
      xpi_log(2, "cpu: %s kernels (XPI_CPU_ISA=%s, but this CPU or OS lacks it: AVX2 needs FMA + F16C, AVX-VNNI "
                 "AVX2 + AVX-VNNI, AVX-512 F/BW/VL/DQ + BF16 + VNNI, AMX AVX-512 + AMX tile/bf16/int8 and the tile "
                 "state granted by the OS)",
              k_names[i], k_names[want]);
    return k;
  }
  return xpi_cpu_kernels_scalar();
}
