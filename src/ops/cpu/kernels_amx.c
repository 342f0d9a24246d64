#include <pthread.h>
#include "ops/cpu/cpu_isa.h"
static xpi_cpu_kernels k_amx;
static pthread_once_t k_once = PTHREAD_ONCE_INIT;
static void build_table(void) {
  xpi_cpu_kernels k = *xpi_cpu_kernels_avx512();
  k.isa = "amx";
  k_amx = k;
}
const xpi_cpu_kernels *xpi_cpu_kernels_amx(void) {
  pthread_once(&k_once, build_table);
  return &k_amx;
}
