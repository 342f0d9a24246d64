/* DPAS GEMMs, sub-group 8 (Xe-HPG: DG2 / Arc A-series, whose smallest sub-group size is 8, where the
 * sub-group-16 form of the matrix builtins is undefined): bf16 weights (body: xpi_gemm_dpas.h) and q8/q4 weights
 * with int8 DPAS (body: xpi_gemm_dpas_q.h). */
#define XPI_DPAS_SG 8
#include "xpi_gemm_dpas.h"
#include "xpi_gemm_dpas_q.h"
