/* Fork-join pool over pthreads. One job at a time (a mutex serializes callers from several requests).
 * Posting a job is one atomic increment while the workers spin; the mutex and condition variable are used
 * only to wake workers that went to sleep. */
#include "core/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/status.h"

struct xpi_pool {
  int n;
  pthread_t *threads;
  pthread_mutex_t run_lock; /* serializes xpi_pool_run callers */
  pthread_mutex_t m;
  pthread_cond_t cv;
  atomic_uint_fast64_t generation; /* (job number << 16) | workers the job uses (caller included), set at once */
  atomic_int pending;              /* workers still running the current job */
  atomic_int sleepers;             /* workers in (or entering) pthread_cond_wait; changed under m */
  xpi_pool_fn fn;
  void *ctx;
  int stop;
};

typedef struct { xpi_pool *p; int ith; } worker_arg;

#define GEN_SHIFT 16 /* generation's low bits: how many workers the job uses (<= 1024) */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* How long an idle worker spins before it sleeps. A decode step is a few hundred ops, and between two of
 * them a worker waits for the caller's longer share and serial work: tens to hundreds of microseconds. A
 * sleeping worker costs a futex wake and a reschedule on the next op's critical path (in a VM, tens of
 * microseconds), so it spins through such gaps and sleeps only when the pool is really idle. */
#define SPIN_SECONDS 2e-3

static void *worker(void *arg) {
  worker_arg wa = *(worker_arg *)arg;
  free(arg);
  xpi_pool *p = wa.p;
  uint_fast64_t seen = 0;
  for (;;) {
    uint_fast64_t g = atomic_load(&p->generation);
    if (g >> GEN_SHIFT == seen >> GEN_SHIFT) {
      const double until = xpi_now_s() + SPIN_SECONDS;
      for (unsigned spin = 1; (g = atomic_load(&p->generation)) >> GEN_SHIFT == seen >> GEN_SHIFT; spin++) {
        cpu_relax();
        if (spin % 1024 == 0) { /* yield too: with more threads than free cores, the job's owner may need it */
          if (xpi_now_s() > until) break;
          sched_yield();
        }
      }
    }
    if (g >> GEN_SHIFT == seen >> GEN_SHIFT) {
      /* sleepers is raised before generation is checked again, and xpi_pool_run bumps generation before it
       * reads sleepers (both sequentially consistent): either it sees this sleeper and broadcasts under m,
       * or this check sees the new generation. */
      pthread_mutex_lock(&p->m);
      atomic_fetch_add(&p->sleepers, 1);
      while ((g = atomic_load(&p->generation)) >> GEN_SHIFT == seen >> GEN_SHIFT && !p->stop)
        pthread_cond_wait(&p->cv, &p->m);
      atomic_fetch_sub(&p->sleepers, 1);
      pthread_mutex_unlock(&p->m);
    }
    if (p->stop) return NULL;
    seen = g;
    /* A job that uses fewer workers leaves the others out: they neither run it nor report back, so the caller
     * waits only for the ones with work. Such a worker may see this generation late, after the caller posted
     * the next job; it then reads only g, which is one consistent (job, workers) pair, never fn or ctx. */
    const int active = (int)(g & ((1u << GEN_SHIFT) - 1));
    if (wa.ith >= active) continue;
    p->fn(p->ctx, wa.ith, active);
    atomic_fetch_sub(&p->pending, 1);
  }
}

xpi_status xpi_pool_create(int n_threads, xpi_pool **out) {
  *out = NULL;
  if (n_threads <= 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    n_threads = c > 0 ? (int)c : 1;
  }
  if (n_threads > 1024) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "n_threads = %d is more than 1024", n_threads);
  xpi_pool *p = calloc(1, sizeof *p);
  if (!p) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory creating a thread pool");
  p->n = n_threads;
  pthread_mutex_init(&p->run_lock, NULL);
  pthread_mutex_init(&p->m, NULL);
  pthread_cond_init(&p->cv, NULL);
  atomic_init(&p->generation, 0);
  atomic_init(&p->pending, 0);
  atomic_init(&p->sleepers, 0);
  p->threads = calloc((size_t)n_threads, sizeof *p->threads);
  if (!p->threads) {
    xpi_pool_free(p);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory creating a thread pool");
  }
  for (int i = 1; i < n_threads; i++) {
    worker_arg *wa = malloc(sizeof *wa);
    if (wa) { /* filled before the thread starts: the worker reads it at once */
      wa->p = p;
      wa->ith = i;
    }
    if (!wa || pthread_create(&p->threads[i], NULL, worker, wa) != 0) {
      free(wa);
      p->n = i; /* only these were started */
      xpi_pool_free(p);
      return xpi_err(XPI_ERR_OUT_OF_MEMORY, "cannot start thread %d of %d", i, n_threads);
    }
  }
  *out = p;
  return XPI_OK;
}

void xpi_pool_free(xpi_pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->m);
  p->stop = 1;
  atomic_fetch_add(&p->generation, (uint_fast64_t)1 << GEN_SHIFT);
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->m);
  for (int i = 1; i < p->n; i++)
    if (p->threads) pthread_join(p->threads[i], NULL);
  free(p->threads);
  pthread_mutex_destroy(&p->run_lock);
  pthread_mutex_destroy(&p->m);
  pthread_cond_destroy(&p->cv);
  free(p);
}

int xpi_pool_size(const xpi_pool *p) { return p ? p->n : 1; }

void xpi_pool_run(xpi_pool *p, xpi_pool_fn fn, void *ctx) { xpi_pool_run_n(p, fn, ctx, xpi_pool_size(p)); }

void xpi_pool_run_n(xpi_pool *p, xpi_pool_fn fn, void *ctx, int n) {
  if (!p || n > p->n) n = p ? p->n : 1;
  if (n <= 1) {
    fn(ctx, 0, 1);
    return;
  }
  pthread_mutex_lock(&p->run_lock);
  p->fn = fn;
  p->ctx = ctx;
  atomic_store(&p->pending, n - 1);
  const uint_fast64_t g = atomic_load(&p->generation);
  atomic_store(&p->generation, ((g >> GEN_SHIFT) + 1) << GEN_SHIFT | (uint_fast64_t)n);
  if (atomic_load(&p->sleepers) > 0) { /* spinning workers need no syscall (see worker) */
    pthread_mutex_lock(&p->m);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->m);
  }
  fn(ctx, 0, n);
  /* Workers finish within the same op, so spin; but yield once it takes long (a worker descheduled on a busy
   * machine then gets the core back instead of waiting behind our spinning). */
  for (long spin = 0; atomic_load(&p->pending) > 0; spin++)
    if (spin > 20000) sched_yield();
  pthread_mutex_unlock(&p->run_lock);
}

void xpi_pool_range(int64_t n, int ith, int nth, int64_t align, int64_t *b, int64_t *e) {
  if (align < 1) align = 1;
  int64_t blocks = (n + align - 1) / align;
  int64_t per = blocks / nth, rem = blocks % nth;
  int64_t sb = ith * per + (ith < rem ? ith : rem);
  int64_t eb = sb + per + (ith < rem ? 1 : 0);
  *b = sb * align < n ? sb * align : n;
  *e = eb * align < n ? eb * align : n;
}
