/* xpuinfer CLI: each subcommand lives in its own cmd_<name>.c and uses only include/xpuinfer.h. */
#ifndef XPI_CLI_H
#define XPI_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "xpuinfer.h"

int cmd_generate(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_chat_template(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_download(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_serve(int argc, char **argv);

/* Prints "xpuinfer <cmd>: <what>: <xpi_last_error()>" on stderr and returns the exit code 1. */
int cli_fail(const char *cmd, const char *what, xpi_status s);
/* Prints "xpuinfer <cmd>: <message> (see xpuinfer <cmd> --help)" on stderr, returns 2 (usage error). */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Strict number parsing; return 0 on success. */
int cli_parse_int(const char *s, long long min, long long max, long long *out);
int cli_parse_float(const char *s, double *out);
/* A size in bytes: a number with an optional K, M or G suffix (powers of 1024; "i", "iB" or "B" after it). */
int cli_parse_size(const char *s, long long *out);

/* ---- option tables (cli_args.c): every command parses its command line with cli_parse */

typedef enum cli_kind {
  CLI_FLAG, /* no value: *(int *)dst = 1 */
  CLI_STR,  /* *(const char **)dst = value */
  CLI_INT,  /* *(long long *)dst = value in [imin, imax] */
  CLI_NUM,  /* *(double *)dst = finite value in [fmin, fmax] ((fmin, fmax] with open_min) */
  CLI_STRS  /* repeatable: appended to *(cli_strs *)dst */
} cli_kind;

typedef struct cli_strs { const char **v; size_t n, max; } cli_strs;

typedef struct cli_opt {
  const char *shrt, *lng; /* "-m" (or NULL), "--model" */
  cli_kind kind;
  void *dst;
  long long imin, imax;
  double fmin, fmax;
  int open_min;
  int *given;             /* set to 1 when the option appears (may be NULL) */
} cli_opt;

#define CLI_HELP (-1)
/* Parses argv[1..argc) against opts, plus -h/--help and -v/--verbose which every command has. Values are
 * given as "--opt value" or "--opt=value"; a value out of range is a usage error naming the range; "--" ends
 * the options. Other arguments go to pos[0..max_pos) (*n_pos of them; NULL/0 when the command takes none).
 * Returns 0, CLI_HELP (the command prints its help and exits 0), or 2 after printing a usage error. With -v
 * the library's log callback prints its warnings and information on stderr (cli_verbose). */
int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts, size_t n_opts, const char **pos,
              size_t max_pos, size_t *n_pos);
/* Installs the log callback that prints "xpuinfer: warning: ..." lines on stderr. */
void cli_verbose(void);
/* The help lines of the options cli_parse adds to every command. */
#define CLI_COMMON_HELP                                                                                       \
  "  -v, --verbose            print the library's warnings and notes on stderr (retries, fallbacks, ...)\n" \
  "  -h, --help               this help\n"

/* ---- prompts in (cli_input.c): text from stdin, tokenization */

/* All of stdin as one text for "-p -": trailing newlines removed (as the shell's $(...) does); a NUL byte or
 * a read error is an error. *out is malloc'd. Returns 0 or 1 after the message. */
int cli_read_stdin_text(const char *cmd, char **out);
/* Text -> malloc'd ids (as transformers' tokenizer(text, add_special_tokens=add_special)), size query included.
 * On failure *ids is NULL and xpi_last_error() says why. */
xpi_status cli_tokenize_status(const xpi_tokenizer *tok, const char *text, size_t len, int add_special,
                               int32_t **ids, size_t *n);
/* The same, printing the failure ("tokenizing the prompt: ..."). Returns 0 or the exit code 1. */
int cli_tokenize(const char *cmd, const xpi_tokenizer *tok, const char *text, size_t len, int add_special,
                 int32_t **ids, size_t *n);

/* ---- the clock (cli_clock.c): monotonic seconds */
double cli_now_s(void);

/* ---- growing text buffers and JSON output (cli_json.c) */

typedef struct cli_buf { char *p; size_t len, cap; int oom; } cli_buf;
/* Appends; on out of memory sets b->oom and ignores further output. */
void cli_buf_add(cli_buf *b, const char *s, size_t n);
void cli_buf_puts(cli_buf *b, const char *s);
void cli_buf_printf(cli_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string (UTF-8 passes through; quotes, backslashes and control characters escaped). */
void cli_json_str(cli_buf *b, const char *s, size_t n);
/* A JSON number with the given printf precision, or null when v is not finite (JSON has no NaN). */
void cli_json_num(cli_buf *b, double v, int decimals);
void cli_buf_free(cli_buf *b);

#endif
