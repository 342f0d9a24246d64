/* xpuinfer download REPO: fetch a model into the Hugging Face cache and print its snapshot folder.
 * The progress bar is drawn here from the library's progress callback (the library never prints). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static void help(FILE *f) {
  fprintf(f,
          "usage: xpuinfer download REPO [--revision R] [--offline] [--quiet]\n"
          "\n"
          "Downloads what a model needs (config.json, generation_config.json, tokenizer files, safetensors\n"
          "weights with every shard) from the Hugging Face Hub into the cache that huggingface_hub uses, and\n"
          "prints the snapshot folder. REPO is org/name or org/name@revision.\n"
          "\n"
          "  --revision R   branch, tag or commit (default: main, or the @revision of REPO)\n"
          "  --offline      use the cache only (also HF_HUB_OFFLINE=1)\n"
          "  --quiet        no progress bar (also HF_HUB_DISABLE_PROGRESS_BARS=1)\n"
          "\n"
          "Environment: HF_ENDPOINT, HF_TOKEN (or $HF_HOME/token), HF_HOME, HF_HUB_CACHE, HF_HUB_OFFLINE,\n"
          "HF_HUB_DISABLE_PROGRESS_BARS, HF_HUB_ETAG_TIMEOUT, HF_HUB_DOWNLOAD_TIMEOUT (seconds), XPI_HUB_MAX_RETRIES\n"
          "(default 5), XPI_HUB_RETRY_DELAY_MS (first backoff delay, doubled per retry; default 1000).\n");
}

typedef struct bar {
  char file[256];
  double start, last;
  uint64_t start_done;
  int drawn, finished;
} bar;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void human(char *buf, size_t cap, double bytes) {
  static const char *u[] = {"B", "kB", "MB", "GB", "TB"};
  int i = 0;
  while (bytes >= 1000 && i < 4) bytes /= 1000, i++;
  snprintf(buf, cap, i ? "%.1f %s" : "%.0f %s", bytes, u[i]);
}

/* One line per file, redrawn in place at most ten times a second: bytes, rate, ETA. */
static int draw_bar(const char *what, uint64_t done, uint64_t total, void *user) {
  bar *b = user;
  double t = now_s();
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

int cmd_download(int argc, char **argv) {
  const char *repo = NULL;
  xpi_download_options o;
  xpi_download_options_default(&o);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      help(stdout);
      return 0;
    } else if (!strcmp(a, "--revision")) {
      if (++i >= argc) return cli_usage_error("download", "--revision needs a value");
      o.revision = argv[i];
    } else if (!strcmp(a, "--offline")) {
      o.offline = 1;
    } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
      o.quiet = 1;
    } else if (a[0] == '-') {
      return cli_usage_error("download", "unknown option '%s'", a);
    } else if (repo) {
      return cli_usage_error("download", "one repository at a time ('%s' and '%s')", repo, a);
    } else {
      repo = a;
    }
  }
  if (!repo) return cli_usage_error("download", "missing REPO (org/name)");
  bar b;
  memset(&b, 0, sizeof b);
  if (!o.quiet && !env_true("HF_HUB_DISABLE_PROGRESS_BARS") && isatty(STDERR_FILENO)) {
    o.progress = draw_bar;
    o.progress_user = &b;
  }
  size_t len = 0;
  char stack[4096];
  xpi_status s = xpi_hub_download(repo, &o, stack, sizeof stack, &len);
  char *path = stack;
  if (s == XPI_ERR_BUFFER_TOO_SMALL) { /* a very deep cache path: ask again with room (all cached now) */
    path = malloc(len + 1);
    if (!path) return cli_fail("download", repo, XPI_ERR_OUT_OF_MEMORY);
    s = xpi_hub_download(repo, &o, path, len + 1, &len);
  }
  if (b.drawn) fputc('\n', stderr);
  if (s != XPI_OK) {
    if (path != stack) free(path);
    return cli_fail("download", repo, s);
  }
  printf("%s\n", path);
  if (path != stack) free(path);
  return 0;
}
