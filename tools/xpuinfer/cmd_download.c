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
          "  --revision R   branch, tag or commit (default: main, or the @revision of REPO)\n"
          "  --offline      use the cache only (also HF_HUB_OFFLINE=1)\n"
          "  --quiet        no progress bar (also HF_HUB_DISABLE_PROGRESS_BARS=1)\n"
          "\n"
          "Environment: HF_ENDPOINT, HF_TOKEN (or $HF_HOME/token), HF_HOME, HF_HUB_CACHE, HF_HUB_OFFLINE,\n"
          "HF_HUB_DISABLE_PROGRESS_BARS, HF_HUB_ETAG_TIMEOUT, HF_HUB_DOWNLOAD_TIMEOUT (seconds), XPI_HUB_MAX_RETRIES\n"
          "(default 5), XPI_HUB_RETRY_DELAY_MS (first backoff delay, doubled per retry; default 1000).\n");
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
