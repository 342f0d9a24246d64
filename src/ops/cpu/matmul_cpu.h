/* The CPU matmul driver: a kernel table's decode GEMV or phased prefill GEMM (cpu_kernels.h) run over a thread
 * pool. Prefill packs the activations once per matmul into a buffer every thread reads, then splits the
 * product into tiles of rows x tokens so that every thread has a share even where a matrix has fewer row panels
 * than there are threads. */
#ifndef XPI_CPU_MATMUL_H
#define XPI_CPU_MATMUL_H

#include "core/threadpool.h"
#include "ops/cpu/cpu_kernels.h"

/* Buffers that matmuls reuse (packed activations, per-thread scratch): grown as needed, never shrunk, so a
 * prefill does not allocate and fault in megabytes per matmul. One matmul at a time uses it (a mutex). */
typedef struct xpi_cpu_mm_ws xpi_cpu_mm_ws;
xpi_cpu_mm_ws *xpi_cpu_mm_ws_create(void); /* NULL when out of memory (matmuls then allocate per call) */
void xpi_cpu_mm_ws_free(xpi_cpu_mm_ws *ws);
/* For ops that drive the GEMM phases themselves (moe_mlp_cpu.c): locks ws and returns a 64-byte aligned buffer
 * of at least bytes, ws's own (grown as needed, never shrunk), until xpi_cpu_mm_ws_unlock. NULL (and not
 * locked) when out of memory. No xpi_cpu_matmul on ws in between: it takes the same lock. */
void *xpi_cpu_mm_ws_lock(xpi_cpu_mm_ws *ws, size_t bytes);
void xpi_cpu_mm_ws_unlock(xpi_cpu_mm_ws *ws);

/* Y[t*ldy + r] = sum_c X[t*cols + c] W[r, c] for t < n, r0 <= r < r1, with k's kernels for dtype dt (which
 * must exist) on the pool (NULL: the calling thread alone) with workspace ws (NULL: allocated per call). If
 * the prefill buffers cannot be allocated, the decode GEMV computes it instead (same results up to f32
 * rounding for dense weights; exactly the same integer sums for q8/q4). */
void xpi_cpu_matmul(xpi_pool *pool, xpi_cpu_mm_ws *ws, const xpi_cpu_kernels *k, xpi_dtype dt, float *Y,
                    int64_t ldy, const float *X, int32_t n, const void *W, const void *aux, int64_t r0, int64_t r1,
                    int64_t cols);

/* The tile grid xpi_cpu_matmul uses: rows cut into pr parts and tokens into pt (pr * pt tiles, dealt to the
 * threads round-robin), for ur row units and ut token units over nth threads. Exposed for tests. */
void xpi_cpu_mm_grid(int64_t ur, int64_t ut, int nth, int64_t *pr, int64_t *pt);

#endif
