/* Options shared by the commands that load a model and run an engine (generate, serve): the model, its device,
 * dtype and quantization, threads, and the engine's KV pool and steps. Parsed in one place (cli_load.c). */
#ifndef XPI_CLI_LOAD_H
#define XPI_CLI_LOAD_H

#include "xpuinfer.h"

typedef struct cli_load_opts {
  const char *model;          /* -m */
  xpi_model_options mo;
  long long kv_bytes, kv_tokens;
  int block, step, no_prefix, n_ctx;
} cli_load_opts;

void cli_load_opts_init(cli_load_opts *lo);
/* If argv[*i] is one of the shared options, takes it (and its value, advancing *i) and returns 1; returns 0 when
 * it is not one; on a bad value prints the usage error and returns -1 (exit status 2). */
int cli_load_opt(const char *cmd, int argc, char **argv, int *i, cli_load_opts *lo);
/* Checks what cli_load_opt cannot see alone (-m given, one KV pool size); prints and returns 2, else 0. */
int cli_load_check(const char *cmd, const cli_load_opts *lo);
/* The --help lines of the shared options. */
extern const char cli_load_help[];
/* Loads the model (a download bar when it is a repo id) and, unless quiet, prints the load line on stderr.
 * Returns 0, or prints why and returns 1. */
int cli_load_model(const char *cmd, cli_load_opts *lo, int quiet, xpi_model **out);
/* xpi_engine_options_default, then the shared options; max_seqs is the caller's. */
void cli_engine_options(const cli_load_opts *lo, xpi_engine_options *eo);

#endif
