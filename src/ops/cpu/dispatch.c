/* Chooses the CPU kernel table at run time: AVX-512 (F/BW/VL/DQ + BF16 + VNNI) > AVX2 (+FMA +F16C) > scalar.
 * A feature counts only when CPUID reports it AND the OS saves its register state (XCR0 via xgetbv), as a
 * hypervisor may expose AVX-512 in CPUID yet not enable ZMM state. XPI_CPU_ISA=scalar|avx2|avx512 forces a
 * table (tests, benchmarks); a forced ISA the CPU lacks falls back to the best one it has. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/cpu_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static uint64_t xgetbv0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

static int detect(xpi_cpu_isa isa) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
  const int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
  if (!osxsave || !avx) return 0;
  const uint64_t xcr0 = xgetbv0();
  if ((xcr0 & 0x6) != 0x6) return 0; /* XMM and YMM state */
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
  const int avx2 = (b >> 5) & 1;
  if (isa == XPI_ISA_AVX2) return avx2 && fma && f16c;
  if (isa != XPI_ISA_AVX512) return 0;
  const int f = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1, vnni = (c >> 11) & 1;
  if ((xcr0 & 0xe6) != 0xe6) return 0; /* plus opmask, ZMM_Hi256, Hi16_ZMM state */
  unsigned a1 = 0, b1, c1, d1;
  if (!__get_cpuid_count(7, 1, &a1, &b1, &c1, &d1)) return 0;
  const int bf16 = (a1 >> 5) & 1;
  return avx2 && fma && f16c && f && dq && bw && vl && vnni && bf16;
}
#else
static int detect(xpi_cpu_isa isa) { return isa == XPI_ISA_SCALAR; }
#endif

int xpi_cpu_has(xpi_cpu_isa isa) { return isa == XPI_ISA_SCALAR ? 1 : detect(isa); }

const xpi_cpu_kernels *xpi_cpu_kernels_for(xpi_cpu_isa isa) {
  if (!xpi_cpu_has(isa)) return NULL;
  switch (isa) {
    case XPI_ISA_AVX512: return xpi_cpu_kernels_avx512();
    case XPI_ISA_AVX2: return xpi_cpu_kernels_avx2();
    default: return xpi_cpu_kernels_scalar();
  }
}

const xpi_cpu_kernels *xpi_cpu_kernels_best(void) {
  static const char *const names[] = {"scalar", "avx2", "avx512"};
  const char *env = getenv("XPI_CPU_ISA");
  xpi_cpu_isa want = XPI_ISA_AVX512;
  if (env && strcmp(env, "scalar") == 0) want = XPI_ISA_SCALAR;
  else if (env && strcmp(env, "avx2") == 0) want = XPI_ISA_AVX2;
  else if (env && *env && strcmp(env, "avx512") != 0)
    xpi_log(2, "XPI_CPU_ISA='%s' is not one of scalar, avx2, avx512; ignored", env);
  for (int i = (int)want; i >= 0; i--) {
    const xpi_cpu_kernels *k = xpi_cpu_kernels_for((xpi_cpu_isa)i);
    if (!k) continue;
    if (i != (int)want) /* a warning when XPI_CPU_ISA asked for it, else information */
      xpi_log(env && !strcmp(env, names[want]) ? 2 : 1,
              "cpu: %s kernels (this CPU or OS lacks %s: AVX-512 needs F/BW/VL/DQ + BF16 + VNNI, AVX2 needs FMA + F16C)",
              names[i], names[want]);
    return k;
  }
  return xpi_cpu_kernels_scalar();
}
