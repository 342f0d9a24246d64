/* The AVX-VNNI table: the AVX2 table with the q8/q4 kernels' int8 products made by VEX vpdpbusd (one instruction
 * where AVX2 needs maddubs and madd), for CPUs that have AVX-VNNI but no AVX-512 (Alder Lake and later client
 * cores, Sierra Forest). The kernels are q256.h's, as the AVX2 table's. */
#include <immintrin.h>
#include <pthread.h>

#define Q256_DPBUSD(acc, u8, s8) _mm256_dpbusd_avx_epi32(acc, u8, s8)
#include "ops/cpu/q256.h"

Q256_GEMV(gemv, q256_prep, q256_row, q256_rows)
XPI_GQ_GEMM(gemm_vnni, "avxvnni-int8", q256_ukr_q8, q256_ukr_q4)

static xpi_cpu_kernels k_avxvnni;
static pthread_once_t k_once = PTHREAD_ONCE_INIT;

static void build_table(void) {
  k_avxvnni = q256_table(xpi_cpu_kernels_avx2(), "avxvnni", gemv_q8, gemv_q4, &gemm_vnni_q8, &gemm_vnni_q4);
}

const xpi_cpu_kernels *xpi_cpu_kernels_avxvnni(void) {
  pthread_once(&k_once, build_table);
  return &k_avxvnni;
}
