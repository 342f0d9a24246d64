/* Mixture-of-experts ops of the CPU backend (ops.h: moe_route, moe_matmul, moe_combine). */
#ifndef XPI_MOE_CPU_H
#define XPI_MOE_CPU_H

#include "core/threadpool.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/matmul_cpu.h"

xpi_status xpi_cpu_moe_route(xpi_pool *pool, int32_t *ids, float *wts, const float *logits, int32_t n,
                             int32_t n_experts, int32_t k, int norm_topk);
xpi_status xpi_cpu_moe_matmul(xpi_pool *pool, xpi_cpu_mm_ws *ws, const xpi_cpu_kernels *kt, float *out,
                              const float *in, int32_t in_k, const xpi_experts *e, const int32_t *ids, int32_t n,
                              int32_t k);
/* Slots s < S grouped by expert (ids outside [0, n_experts) left out): expert x's are order[start[x] ..
 * start[x+1]) ascending; most = the largest group. Both arrays are the caller's to free. */
xpi_status xpi_cpu_moe_sort(const int32_t *ids, int64_t S, int32_t n_experts, int32_t **start, int32_t **order,
                            int32_t *most);
/* ops.h moe_mlp for prefill: one pool dispatch of jobs, each an expert's whole MLP (gate, up, SwiGLU, down) over
 * its tokens or a chunk of them on one thread, its activations in that thread's caches (moe_mlp_cpu.c); out's rows
 * grouped by expert (pos as ops.h). *done = 0 (nothing written) where the shapes or kernels do not allow it bit for
 * bit with the composition or it would not pay (decode): the caller then runs moe_matmul, swiglu, moe_matmul. */
xpi_status xpi_cpu_moe_mlp(xpi_pool *pool, xpi_cpu_mm_ws *ws, const xpi_cpu_kernels *kt, float *out, int32_t *pos,
                           float *g, float *u, const float *in, const xpi_experts *gate, const xpi_experts *up,
                           const xpi_experts *down, const int32_t *ids, int32_t n, int32_t k, int *done);
xpi_status xpi_cpu_moe_combine(xpi_pool *pool, float *out, const float *y, const int32_t *pos, const float *wts,
                               const float *shared, const float *shared_gate, int32_t n, int32_t k, int32_t d);

#endif
