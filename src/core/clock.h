/* Monotonic wall-clock seconds, for timings the library reports and the thread pool's spin limit. */
#ifndef XPI_CORE_CLOCK_H
#define XPI_CORE_CLOCK_H

#include <time.h>

static inline double xpi_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif
