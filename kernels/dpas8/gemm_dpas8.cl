/* DPAS bf16 GEMM, sub-group 8 (Xe-HPG: DG2 / Arc A-series, whose smallest sub-group size is 8, where the
 * sub-group-16 form of the matrix builtin is undefined). Body: xpi_gemm_dpas.h. */
#define XPI_DPAS_SG 8
#include "xpi_gemm_dpas.h"
