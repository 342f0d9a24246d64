/* xpuinfer download REPO: fetch a model into the Hugging Face cache and print its snapshot folder.
 * The progress bar (download_progress.c) is drawn from the library's progress callback (the library never
 * prints). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "download_progress.h"

static void help(FILE *f) {
  fprintf(f,
          "usage: xpuinfer download REPO [--revision R] [--offline] [--quiet]\n"
          "\n"
          "Downloads what a model needs (config.json, generation_config.json, tokenizer files, safetensors\n"
          "weights with every shard) from the Hugging Face Hub into the cache that huggingface_hub uses, and\n"
          "prints the snapshot folder. REPO is org/name or org/name@revision.\n"
          "\n"
          "      --revision R         branch, tag or commit (default: main, or the @revision of REPO)\n"
          "      --offline            use the cache only (also HF_HUB_OFFLINE=1)\n"
          "  -q, --quiet              no progress bar (also HF_HUB_DISABLE_PROGRESS_BARS=1)\n"
          CLI_COMMON_HELP
          "\n"
          "Interrupted downloads resume (also in the next run). An attempt is retried after a transient error, after\n"
          "HF_HUB_DOWNLOAD_TIMEOUT seconds without data, and when it stays slower than XPI_HUB_LOW_SPEED_LIMIT\n"
          "bytes/s over XPI_HUB_LOW_SPEED_TIME seconds (default 1024 bytes/s over 30 s; 0 turns that off); -v shows\n"
          "the retries.\n"
          "\n"
          "Environment: HF_ENDPOINT, HF_TOKEN (or $HF_HOME/token), HF_HOME, HF_HUB_CACHE, HF_HUB_OFFLINE,\n"
          "HF_HUB_DISABLE_PROGRESS_BARS, HF_HUB_ETAG_TIMEOUT, HF_HUB_DOWNLOAD_TIMEOUT (seconds, default 10),\n"
          "XPI_HUB_LOW_SPEED_LIMIT, XPI_HUB_LOW_SPEED_TIME, XPI_HUB_MAX_RETRIES (default 5), XPI_HUB_RETRY_DELAY_MS\n"
          "(first backoff delay, doubled per retry; default 1000).\n");
}

int cmd_download(int argc, char **argv) {
  xpi_download_options o;
  xpi_download_options_default(&o);
  const cli_opt t[] = {
    {NULL, "--revision", CLI_STR, &o.revision, 0, 0, 0, 0, 0, NULL},
    {NULL, "--offline", CLI_FLAG, &o.offline, 0, 0, 0, 0, 0, NULL},
    {"-q", "--quiet", CLI_FLAG, &o.quiet, 0, 0, 0, 0, 0, NULL},
  };
  const char *pos[2];
  size_t n_pos = 0;
  int rc = cli_parse("download", argc, argv, t, sizeof t / sizeof t[0], pos, 2, &n_pos);
  if (rc == CLI_HELP) {
    help(stdout);
    return 0;
  }
  if (rc) return rc;
  if (n_pos == 0) return cli_usage_error("download", "missing REPO (org/name)");
  if (n_pos > 1) return cli_usage_error("download", "one repository at a time ('%s' and '%s')", pos[0], pos[1]);
  const char *repo = pos[0];
  cli_progress bar;
  cli_progress_attach(&o, &bar, o.quiet);
  size_t len = 0;
  char stack[4096];
  xpi_status s = xpi_hub_download(repo, &o, stack, sizeof stack, &len);
  char *path = stack;
  if (s == XPI_ERR_BUFFER_TOO_SMALL) { /* a very deep cache path: ask again with room (all cached now) */
    path = malloc(len + 1);
    if (!path) return cli_fail("download", repo, XPI_ERR_OUT_OF_MEMORY);
    s = xpi_hub_download(repo, &o, path, len + 1, &len);
  }
  cli_progress_finish(&bar);
  if (s != XPI_OK) {
    if (path != stack) free(path);
    return cli_fail("download", repo, s);
  }
  printf("%s\n", path);
  if (path != stack) free(path);
  return 0;
}
