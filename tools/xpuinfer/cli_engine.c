/* The engine options generate and serve share (see cli_engine.h). */
#include "cli_engine.h"

size_t cli_engine_table(cli_engine *e, cli_opt *o) {
  size_t n = 0;
  o[n++] = (cli_opt){NULL, "--parallel", CLI_INT, &e->parallel, 1, 4096, 0, 0, 0, NULL};
  o[n++] = (cli_opt){NULL, "--kv-pool", CLI_STR, &e->kv_pool, 0, 0, 0, 0, 0, NULL};
  o[n++] = (cli_opt){NULL, "--kv-pool-tokens", CLI_INT, &e->kv_tokens, 1, 1LL << 40, 0, 0, 0, NULL};
  o[n++] = (cli_opt){NULL, "--block-size", CLI_INT, &e->block, 16, 32, 0, 0, 0, NULL};
  o[n++] = (cli_opt){NULL, "--step-tokens", CLI_INT, &e->step, 1, 65536, 0, 0, 0, NULL};
  o[n++] = (cli_opt){NULL, "--no-prefix-cache", CLI_FLAG, &e->no_prefix, 0, 0, 0, 0, 0, NULL};
  return n;
}

int cli_engine_check(const char *cmd, cli_engine *e) {
  if (e->kv_pool && cli_parse_size(e->kv_pool, &e->kv_bytes))
    return cli_usage_error(cmd, "--kv-pool: '%s' is not a size (e.g. 1G, 512M)", e->kv_pool);
  if (e->kv_pool && e->kv_tokens) return cli_usage_error(cmd, "give --kv-pool or --kv-pool-tokens, not both");
  if (e->block && e->block != 16 && e->block != 32) return cli_usage_error(cmd, "--block-size: 16 or 32");
  return 0;
}

void cli_engine_options(const cli_engine *e, int32_t default_parallel, int32_t n_ctx, xpi_engine_options *eo) {
  xpi_engine_options_default(eo);
  eo->max_seqs = e->parallel ? (int32_t)e->parallel : default_parallel;
  eo->max_seq_len = n_ctx;
  eo->kv_pool_bytes = e->kv_bytes;
  eo->kv_pool_tokens = e->kv_tokens;
  if (e->block) eo->block_size = (int32_t)e->block;
  if (e->step) eo->step_tokens = (int32_t)e->step;
  eo->prefix_caching = !e->no_prefix;
}
