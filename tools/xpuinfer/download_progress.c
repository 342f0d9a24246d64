/* The download progress bar: one line per large file, redrawn in place: bytes, rate, ETA. */
#include "download_progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"

static void human(char *buf, size_t cap, double bytes) {
  static const char *u[] = {"B", "kB", "MB", "GB", "TB"};
  int i = 0;
  while (bytes >= 1000 && i < 4) bytes /= 1000, i++;
  snprintf(buf, cap, i ? "%.1f %s" : "%.0f %s", bytes, u[i]);
}

/* One line per file, redrawn in place at most ten times a second: bytes, rate, ETA. */
static int draw_bar(const char *what, uint64_t done, uint64_t total, void *user) {
  cli_progress *b = user;
  double t = cli_now_s();
  if (strcmp(b->file, what) != 0) {
    if (b->drawn) fputc('\n', stderr);
    snprintf(b->file, sizeof b->file, "%s", what);
    b->start = t;
    b->start_done = done; /* resumed bytes do not count toward the rate */
    b->last = 0;
    b->drawn = 0;
    b->finished = 0;
  }
  if (b->finished) return 0; /* libcurl reports again after the end */
  if (total < (1u << 20)) return 0; /* small files: no bar */
  int finished = done >= total;
  if (!finished && t - b->last < 0.1) return 0;
  b->last = t;
  double el = t - b->start, rate = el > 0 ? (double)(done - b->start_done) / el : 0;
  char d[32], tot[32], r[32], eta[32] = "--:--";
  human(d, sizeof d, (double)done);
  human(tot, sizeof tot, (double)total);
  human(r, sizeof r, rate);
  if (rate > 0 && !finished) {
    long s = (long)((double)(total - done) / rate);
    snprintf(eta, sizeof eta, "%ld:%02ld", s / 60, s % 60);
  } else if (finished) {
    snprintf(eta, sizeof eta, "done");
  }
  int pct = (int)(100.0 * (double)done / (double)total);
  fprintf(stderr, "\r%-32.32s %3d%% %10s / %-10s %10s/s  ETA %s   ", what, pct, d, tot, r, eta);
  b->drawn = 1;
  if (finished) {
    fputc('\n', stderr);
    b->drawn = 0;
    b->finished = 1;
  }
  fflush(stderr);
  return 0;
}

static int env_true(const char *name) {
  const char *v = getenv(name);
  return v && (!strcasecmp(v, "1") || !strcasecmp(v, "ON") || !strcasecmp(v, "YES") || !strcasecmp(v, "TRUE"));
}

void cli_progress_attach(xpi_download_options *o, cli_progress *p, int quiet) {
  memset(p, 0, sizeof *p);
  if (quiet || o->quiet || env_true("HF_HUB_DISABLE_PROGRESS_BARS") || !isatty(STDERR_FILENO)) return;
  o->progress = draw_bar;
  o->progress_user = p;
}

void cli_progress_finish(cli_progress *p) {
  if (p->drawn) fputc('\n', stderr);
  p->drawn = 0;
}
