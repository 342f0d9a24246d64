/* Thread pool: every job runs once on every worker, whether the workers were spinning (jobs back to back)
 * or asleep (gaps longer than their spin), with callers from several threads, and the pool frees cleanly in
 * either state; a job on fewer workers runs on exactly those. xpi_pool_range splits exactly. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "check.h"
#include "core/threadpool.h"

typedef struct {
  atomic_int hits[8]; /* runs per worker index for the current job */
  atomic_int bad_nth;
  int nth;
} job;

static void count(void *ctx, int ith, int nth) {
  job *j = ctx;
  if (nth != j->nth || ith < 0 || ith >= nth) atomic_fetch_add(&j->bad_nth, 1);
  else atomic_fetch_add(&j->hits[ith], 1);
}

static void sleep_us(long us) {
  struct timespec t = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&t, NULL);
}

/* Runs jobs with the given gap before each and checks each ran exactly once per worker. */
static int run_jobs(xpi_pool *p, int n_jobs, long gap_us) {
  int failures = 0;
  for (int k = 0; k < n_jobs; k++) {
    job j = {.nth = xpi_pool_size(p)};
    if (gap_us) sleep_us(gap_us);
    xpi_pool_run(p, count, &j);
    for (int i = 0; i < j.nth; i++) failures += atomic_load(&j.hits[i]) != 1;
    failures += atomic_load(&j.bad_nth) != 0;
  }
  return failures;
}

/* Jobs on fewer workers (xpi_pool_run_n), n cycling through 1..size+1 (the last clamped to size) between full
 * jobs: exactly workers [0, n) run each, once, with nth = n, and a worker left out of one job (which may still
 * be catching up on it) runs the next full job exactly once. */
static int run_jobs_n(xpi_pool *p, int n_jobs, long gap_us) {
  int failures = 0;
  const int size = xpi_pool_size(p);
  for (int k = 0; k < n_jobs; k++) {
    const int want = k % 2 ? size : 1 + (k / 2) % (size + 1), n = want > size ? size : want;
    job j = {.nth = n};
    if (gap_us) sleep_us(gap_us);
    xpi_pool_run_n(p, count, &j, want);
    for (int i = 0; i < 8; i++) failures += atomic_load(&j.hits[i]) != (i < n);
    failures += atomic_load(&j.bad_nth) != 0;
  }
  return failures;
}

typedef struct { xpi_pool *p; int failures; } caller_arg;
static void *caller(void *arg) {
  caller_arg *a = arg;
  a->failures = run_jobs(a->p, 3000, 0) + run_jobs(a->p, 5, 4000);
  return NULL;
}

static void range_cases(void) {
  static const int64_t ns[] = {0, 1, 7, 64, 1000, 1025};
  static const int64_t aligns[] = {1, 4, 16};
  for (size_t a = 0; a < 3; a++)
    for (size_t ni = 0; ni < 6; ni++)
      for (int nth = 1; nth <= 5; nth++) {
        int64_t next = 0, covered = 0;
        int ok = 1;
        for (int i = 0; i < nth; i++) {
          int64_t b, e;
          xpi_pool_range(ns[ni], i, nth, aligns[a], &b, &e);
          ok &= b == next && e >= b && e <= ns[ni] && (b % aligns[a] == 0 || b == ns[ni]);
          covered += e - b;
          next = e;
        }
        CHECK(ok && covered == ns[ni], "xpi_pool_range(n=%lld, nth=%d, align=%lld) does not tile [0, n)",
              (long long)ns[ni], nth, (long long)aligns[a]);
      }
}

int main(void) {
  range_cases();
  for (int n = 1; n <= 4; n++) {
    xpi_pool *p = NULL;
    CHECK_OK(xpi_pool_create(n, &p));
    if (!p) continue;
    CHECK(xpi_pool_size(p) == n, "pool of %d reports %d threads", n, xpi_pool_size(p));
    /* back to back: workers are still spinning when the next job comes */
    CHECK(run_jobs(p, 20000, 0) == 0, "n=%d: a back-to-back job missed or repeated a worker", n);
    CHECK(run_jobs_n(p, 2000, 0) == 0, "n=%d: a job on fewer workers ran on the wrong ones", n);
    CHECK(run_jobs_n(p, 12, 5000) == 0, "n=%d: after a long gap, a job on fewer workers ran on the wrong ones", n);
    /* gaps of 3-5 ms: workers have gone to sleep (their spin is 2 ms) and must be woken */
    CHECK(run_jobs(p, 20, 5000) == 0, "n=%d: a job after a long gap missed or repeated a worker", n);
    /* gaps around the spin limit, where a worker may be between spinning and sleeping */
    for (long gap = 1500; gap <= 2500; gap += 100)
      CHECK(run_jobs(p, 3, gap) == 0, "n=%d: a job after a %ld us gap missed or repeated a worker", n, gap);
    /* two callers at once are serialized, each job still complete */
    caller_arg a = {p, 0}, b = {p, 0};
    pthread_t ta, tb;
    CHECK(pthread_create(&ta, NULL, caller, &a) == 0 && pthread_create(&tb, NULL, caller, &b) == 0,
          "cannot start caller threads");
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(a.failures == 0 && b.failures == 0, "n=%d: concurrent callers saw %d and %d incomplete jobs", n,
          a.failures, b.failures);
    /* freed right after a job (workers spinning); the next pool is freed while asleep */
    xpi_pool_free(p);
    CHECK_OK(xpi_pool_create(n, &p));
    sleep_us(5000);
    xpi_pool_free(p);
  }
  xpi_pool *p = NULL;
  CHECK_ERR(xpi_pool_create(2000, &p), XPI_ERR_INVALID_ARGUMENT, "n_threads = 2000");
  CHECK(p == NULL, "a failed create left a pool");
  return xpi_test_done();
}
