/* The ISA-specific kernel tables and the CPU feature checks that choose between them (dispatch.c).
 * Call a table's getter and its kernels only where xpi_cpu_has(isa); xpi_cpu_kernels_for() checks. */
#ifndef XPI_CPU_ISA_H
#define XPI_CPU_ISA_H

#include "ops/cpu/cpu_kernels.h"

/* In order of preference: each table's CPU has what the one before needs (AVX-VNNI aside: AVX-512 CPUs need
 * not have it; the avx512 table does not use it). */
typedef enum xpi_cpu_isa {
  XPI_ISA_SCALAR = 0,
  XPI_ISA_AVX2 = 1,    /* AVX2 + FMA + F16C */
  XPI_ISA_AVXVNNI = 2, /* AVX2 + AVX-VNNI (VEX vpdpbusd; Alder Lake and later client cores, Sierra Forest) */
  XPI_ISA_AVX512 = 3,  /* AVX-512 F/BW/VL/DQ + BF16 + VNNI (Sapphire Rapids, Zen 4) */
  XPI_ISA_AMX = 4,     /* AVX-512 above + AMX tile/bf16/int8, tile state granted by the OS */
  XPI_ISA_COUNT
} xpi_cpu_isa;

const char *xpi_cpu_isa_name(xpi_cpu_isa isa);

const xpi_cpu_kernels *xpi_cpu_kernels_avx2(void);
const xpi_cpu_kernels *xpi_cpu_kernels_avxvnni(void);
const xpi_cpu_kernels *xpi_cpu_kernels_avx512(void);
const xpi_cpu_kernels *xpi_cpu_kernels_amx(void);

/* 1 when the CPU and the OS (XSAVE state enabled, checked with xgetbv; for AMX the tile data permission,
 * asked for once with arch_prctl) support the ISA. */
int xpi_cpu_has(xpi_cpu_isa isa);
/* The table for an ISA, or NULL when this CPU cannot run it. */
const xpi_cpu_kernels *xpi_cpu_kernels_for(xpi_cpu_isa isa);

/* Decode activations -> int8 blocks of 32 (as xpi_quantize_act_scalar) plus |xq| in xa (AVX2; shared with
 * the AVX-512 table). */
void xpi_quant_act_avx2(int8_t *xq, uint8_t *xa, float *dx, float *sx, const float *x, int64_t cols);

/* Prefill (n >= this) uses the blocked GEMM; smaller n the streaming GEMV. */
#define XPI_CPU_GEMM_MIN_N 4

#endif
