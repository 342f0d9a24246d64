/* Mixture-of-experts ops of the CPU backend (ops.h: moe_route, moe_matmul, moe_combine). */
#ifndef XPI_MOE_CPU_H
#define XPI_MOE_CPU_H

#include "core/threadpool.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/matmul_cpu.h"

xpi_status xpi_cpu_moe_route(int32_t *ids, float *wts, const float *logits, int32_t n, int32_t n_experts, int32_t k,
                             int norm_topk);
xpi_status xpi_cpu_moe_matmul(xpi_pool *pool, xpi_cpu_mm_ws *ws, const xpi_cpu_kernels *kt, float *out,
                              const float *in, int32_t in_k, const xpi_experts *e, const int32_t *ids, int32_t n,
                              int32_t k);
xpi_status xpi_cpu_moe_combine(float *out, const float *y, const float *wts, const float *shared,
                               const float *shared_gate, int32_t n, int32_t k, int32_t d);

#endif
