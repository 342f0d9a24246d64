/* The engine options of the commands that run many sequences through one xpi_engine (generate, serve): how many
 * at once (--parallel) and the KV pool and steps. One table, one meaning, one help text (cli_engine.c). */
#ifndef XPI_CLI_ENGINE_H
#define XPI_CLI_ENGINE_H

#include "cli.h"

typedef struct cli_engine {
  long long parallel;        /* 0: the command's default */
  const char *kv_pool;       /* --kv-pool SIZE as given; kv_bytes once checked */
  long long kv_bytes, kv_tokens, block, step;
  int no_prefix;
} cli_engine;

#define CLI_ENGINE_MAX_OPTS 6
/* Writes the options into out[0..CLI_ENGINE_MAX_OPTS); returns how many. */
size_t cli_engine_table(cli_engine *e, cli_opt *out);
/* What the table cannot check alone (a size, one pool size, the block size); 0, or 2 after the usage error. */
int cli_engine_check(const char *cmd, cli_engine *e);
/* xpi_engine_options_default, then the options; max_seqs = --parallel or default_parallel, max_seq_len = n_ctx
 * (0: the model's). */
void cli_engine_options(const cli_engine *e, int32_t default_parallel, int32_t n_ctx, xpi_engine_options *eo);

/* The help lines; par_default says what --parallel is without it. */
#define CLI_ENGINE_HELP(par_default)                                                                          \
  "      --parallel N         sequences generated at once (default: " par_default ")\n"                       \
  "      --kv-pool SIZE       KV pool in bytes (K, M, G suffixes; default: half the free memory, at most\n"   \
  "                           what the sequences need)\n"                                                     \
  "      --kv-pool-tokens N   the KV pool in positions instead\n"                                             \
  "      --block-size N       positions per KV block: 16 or 32 (default 32)\n"                                \
  "      --step-tokens N      tokens per step, decode and prefill chunks together (default 512)\n"            \
  "      --no-prefix-cache    do not share the KV blocks of identical prompt prefixes\n"

#endif
