/* DPAS bf16 GEMM, sub-group 16 (Xe-HPC / PVC, whose smallest sub-group size is 16). Body: xpi_gemm_dpas.h. */
#define XPI_DPAS_SG 16
#include "xpi_gemm_dpas.h"
