/* The SPIR-V modules embedded at build time (kernels/CMakeLists.txt generates their definitions). */
#ifndef XPI_XPU_SPIRV_H
#define XPI_XPU_SPIRV_H

#include <stddef.h>

extern const unsigned char xpi_spv_portable[]; /* kernels/portable: every op */
extern const size_t xpi_spv_portable_size;
extern const unsigned char xpi_spv_tuned[];    /* kernels/tuned: Intel sub-groups, block reads */
extern const size_t xpi_spv_tuned_size;
extern const unsigned char xpi_spv_dpas[];     /* kernels/dpas: GEMM on the matrix engine, sub-group 16 */
extern const size_t xpi_spv_dpas_size;
extern const unsigned char xpi_spv_dpas8[];    /* kernels/dpas8: the same GEMM at sub-group 8 (DG2) */
extern const size_t xpi_spv_dpas8_size;

#endif
