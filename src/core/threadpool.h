/* A small fork-join thread pool: run fn(ctx, i, n) on n workers (the caller is worker 0) and wait.
 * Idle workers spin for up to 2 ms (yielding now and then) before they sleep, so the ops of a decode step,
 * with the caller's serial work between them, never pay a futex wake-up each. Thread-safe: calls to
 * xpi_pool_run from several threads are serialized. */
#ifndef XPI_CORE_THREADPOOL_H
#define XPI_CORE_THREADPOOL_H

#include "xpuinfer.h"

typedef struct xpi_pool xpi_pool;
typedef void (*xpi_pool_fn)(void *ctx, int ith, int nth);

/* n_threads <= 0: number of online CPUs. */
xpi_status xpi_pool_create(int n_threads, xpi_pool **out);
void xpi_pool_free(xpi_pool *p);
int xpi_pool_size(const xpi_pool *p);
/* Runs fn on every worker and returns when all are done. Calls from several threads are serialized. */
void xpi_pool_run(xpi_pool *p, xpi_pool_fn fn, void *ctx);
/* As xpi_pool_run on the first n workers only (fn gets nth = n, n clamped to [1, size]): for jobs with less
 * work than threads. The caller waits only for those n; the others stay idle. */
void xpi_pool_run_n(xpi_pool *p, xpi_pool_fn fn, void *ctx, int n);

/* Splits [0, n) into nth nearly equal chunks, rounded to multiples of align: chunk ith is [*b, *e). */
void xpi_pool_range(int64_t n, int ith, int nth, int64_t align, int64_t *b, int64_t *e);

#endif
