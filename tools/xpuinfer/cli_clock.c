/* The CLI's one clock (timings on stderr, benchmark runs, the server's time to first token). */
#include <time.h>

#include "cli.h"

double cli_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
