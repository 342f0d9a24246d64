/* Chooses the CPU kernel table. For now only the scalar table exists; the perf engineer adds the ISA
 * detection (and the XPI_CPU_ISA override) here. */
#include "ops/cpu/cpu_kernels.h"

const xpi_cpu_kernels *xpi_cpu_kernels_best(void) { return xpi_cpu_kernels_scalar(); }
