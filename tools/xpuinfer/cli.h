/* xpuinfer CLI: each subcommand lives in its own cmd_<name>.c and uses only include/xpuinfer.h. */
#ifndef XPI_CLI_H
#define XPI_CLI_H

#include "xpuinfer.h"

int cmd_generate(int argc, char **argv);
int cmd_chat_template(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_download(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_serve(int argc, char **argv);

/* Prints "xpuinfer <cmd>: <what>: <xpi_last_error()>" on stderr and returns the exit code 1. */
int cli_fail(const char *cmd, const char *what, xpi_status s);
/* Prints "xpuinfer <cmd>: <message>" on stderr, returns 2 (usage error). */
int cli_usage_error(const char *cmd, const char *fmt, ...);
/* Strict number parsing for options; return 0 on success. */
int cli_parse_int(const char *s, long long min, long long max, long long *out);
int cli_parse_float(const char *s, double *out);
/* A size in bytes: a number with an optional K, M or G suffix (powers of 1024; "i", "iB" or "B" after it). */
int cli_parse_size(const char *s, long long *out);

#endif
