/* DPAS GEMMs, sub-group 16 (Xe-HPC / PVC, whose smallest sub-group size is 16): bf16 weights (body:
 * xpi_gemm_dpas.h) and q8/q4 weights with int8 DPAS (body: xpi_gemm_dpas_q.h). */
#define XPI_DPAS_SG 16
#include "xpi_gemm_dpas.h"
#include "xpi_gemm_dpas_q.h"
