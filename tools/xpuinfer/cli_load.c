/* The options of every command that loads a model and runs an engine (see cli_load.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cli_load.h"
#include "download_progress.h"

const char cli_load_help[] =
  "  -m, --model DIR|REPO     model folder or Hugging Face repo id (org/name[@rev])\n"
  "      --attn NAME          sdpa (default), eager, flash_attention_2\n"
  "      --threads N          CPU threads (default: all cores)\n"
  "      --device NAME        auto (default), cpu, xpu, xpu:N\n"
  "      --device-map auto    split the layers over all visible XPUs\n"
  "      --dtype NAME         auto (as stored), bf16, f16, f32\n"
  "      --quant q8|q4        weight-only quantization at load\n"
  "      --kv-dtype NAME      KV cache dtype: f32 (CPU default), bf16, f16\n"
  "      --kv-pool SIZE       KV pool in bytes (K, M, G suffixes; default: half the free memory, at most\n"
  "                           what the sequences need)\n"
  "      --kv-pool-tokens N   the KV pool in positions instead\n"
  "      --block-size N       positions per KV block: 16 or 32 (default 32)\n"
  "      --step-tokens N      tokens per step, decode and prefill chunks together (default 512)\n"
  "      --no-prefix-cache    do not share the KV blocks of identical prompt prefixes\n"
  "      --no-fused           unfused reference kernels\n"
  "      --n-ctx, --ctx-size N  longest sequence, prompt plus new tokens (default max_position_embeddings)\n";

void cli_load_opts_init(cli_load_opts *lo) {
  memset(lo, 0, sizeof *lo);
  xpi_model_options_default(&lo->mo);
}

int cli_load_opt(const char *cmd, int argc, char **argv, int *i, cli_load_opts *lo) {
  const char *a = argv[*i];
  const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
  long long t;
#define ARG(name) (!strcmp(a, name))
#define NEED() do { if (!v) { cli_usage_error(cmd, "%s needs a value", a); return -1; } (*i)++; } while (0)
#define INT(dst, lo_, hi_) do { NEED(); if (cli_parse_int(v, lo_, hi_, &dst)) { cli_usage_error(cmd, "%s: '%s' is not an integer in [%lld, %lld]", a, v, (long long)(lo_), (long long)(hi_)); return -1; } } while (0)
  if (ARG("-m") || ARG("--model")) { NEED(); lo->model = v; }
  else if (ARG("--attn")) { NEED(); lo->mo.attn_implementation = v; }
  else if (ARG("--threads")) { INT(t, 0, 1024); lo->mo.n_threads = (int)t; }
  else if (ARG("--device")) { NEED(); lo->mo.device = v; }
  else if (ARG("--device-map")) { NEED(); lo->mo.device_map = v; }
  else if (ARG("--dtype")) { NEED(); lo->mo.dtype = v; }
  else if (ARG("--quant")) { NEED(); lo->mo.quant = v; }
  else if (ARG("--kv-dtype")) { NEED(); lo->mo.kv_dtype = v; }
  else if (ARG("--kv-pool")) {
    NEED();
    if (cli_parse_size(v, &lo->kv_bytes)) {
      cli_usage_error(cmd, "--kv-pool: '%s' is not a size (e.g. 1G, 512M)", v);
      return -1;
    }
  }
  else if (ARG("--kv-pool-tokens")) INT(lo->kv_tokens, 1, 1LL << 40);
  else if (ARG("--block-size")) { INT(t, 16, 32); lo->block = (int)t; }
  else if (ARG("--step-tokens")) { INT(t, 1, 65536); lo->step = (int)t; }
  else if (ARG("--no-prefix-cache")) lo->no_prefix = 1;
  else if (ARG("--no-fused")) lo->mo.use_kernels = 0;
  else if (ARG("--n-ctx") || ARG("--ctx-size")) { INT(t, 1, 1 << 30); lo->n_ctx = (int)t; }
  else return 0;
#undef ARG
#undef NEED
#undef INT
  return 1;
}

int cli_load_check(const char *cmd, const cli_load_opts *lo) {
  if (!lo->model) return cli_usage_error(cmd, "-m MODEL is required");
  if (lo->kv_bytes && lo->kv_tokens) return cli_usage_error(cmd, "give --kv-pool or --kv-pool-tokens, not both");
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cli_load_model(const char *cmd, cli_load_opts *lo, int quiet, xpi_model **out) {
  const double t0 = now_s();
  if (quiet) lo->mo.download.quiet = 1;
  cli_progress bar; /* a repo id downloads on first use: same bar as `xpuinfer download` */
  cli_progress_attach(&lo->mo.download, &bar, quiet);
  xpi_status s = xpi_model_load(lo->model, &lo->mo, out);
  cli_progress_finish(&bar);
  if (s != XPI_OK) return cli_fail(cmd, "loading the model", s);
  if (!quiet) {
    xpi_model_info info = {.struct_size = sizeof info};
    xpi_model_get_info(*out, &info);
    fprintf(stderr, "load: %.3f s (%s, %d layers, %s weights on %s, attention %s)\n", now_s() - t0,
            info.architecture, info.n_layers, info.weight_dtype, info.device, info.attn_implementation);
  }
  return 0;
}

void cli_engine_options(const cli_load_opts *lo, xpi_engine_options *eo) {
  xpi_engine_options_default(eo);
  eo->max_seq_len = lo->n_ctx;
  eo->kv_pool_bytes = lo->kv_bytes;
  eo->kv_pool_tokens = lo->kv_tokens;
  if (lo->block) eo->block_size = lo->block;
  if (lo->step) eo->step_tokens = lo->step;
  eo->prefix_caching = !lo->no_prefix;
}
