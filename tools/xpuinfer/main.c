/* xpuinfer: command-line client of libxpuinfer. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <math.h>

#include "cli.h"

typedef struct { const char *name; int (*fn)(int, char **); const char *help; } subcommand;

static const subcommand k_cmds[] = {
  {"generate", cmd_generate, "generate text from a prompt (or one prompt per line of a file)"},
  {"chat-template", cmd_chat_template, "render a conversation with a chat template (as apply_chat_template)"},
  {"tokenize", cmd_tokenize, "print the token ids of a text as a JSON array"},
  {"detokenize", cmd_detokenize, "print the text of token ids"},
  {"devices", cmd_devices, "list Level Zero GPUs (XPUs) and the CPU"},
  {"download", cmd_download, "download a model from the Hugging Face Hub into the cache"},
  {"bench", cmd_bench, "measure prompt and generation speed"},
  {"serve", cmd_serve, "serve the OpenAI API (chat/completions, completions) over HTTP"},
};

static void usage(FILE *f) {
  fprintf(f, "usage: xpuinfer <command> [options]   (xpuinfer <command> --help for details)\n\ncommands:\n");
  for (size_t i = 0; i < sizeof k_cmds / sizeof k_cmds[0]; i++) fprintf(f, "  %-13s %s\n", k_cmds[i].name, k_cmds[i].help);
  fprintf(f, "\nlibxpuinfer %s\n", xpi_version());
}

int cli_fail(const char *cmd, const char *what, xpi_status s) {
  const char *msg = xpi_last_error();
  fprintf(stderr, "xpuinfer %s: %s: %s\n", cmd, what, msg && *msg ? msg : xpi_status_name(s));
  return 1;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "xpuinfer %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (see xpuinfer %s --help)\n", cmd);
  return 2;
}

int cli_parse_int(const char *s, long long min, long long max, long long *out) {
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || v < min || v > max) return -1;
  *out = v;
  return 0;
}

int cli_parse_float(const char *s, double *out) {
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !isfinite(v)) return -1;
  *out = v;
  return 0;
}

int cli_parse_size(const char *v, long long *out) {
  char *end = NULL;
  errno = 0;
  double x = strtod(v, &end);
  if (errno || end == v || !(x > 0)) return 1;
  double mul = 1;
  if (*end == 'K' || *end == 'k') mul = 1024, end++;
  else if (*end == 'M' || *end == 'm') mul = 1024.0 * 1024, end++;
  else if (*end == 'G' || *end == 'g') mul = 1024.0 * 1024 * 1024, end++;
  if (!strcmp(end, "i") || !strcmp(end, "iB") || !strcmp(end, "B")) end += strlen(end);
  if (*end || x * mul > 9.0e18) return 1;
  *out = (long long)(x * mul);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("libxpuinfer %s\n", xpi_version());
    return 0;
  }
  for (size_t i = 0; i < sizeof k_cmds / sizeof k_cmds[0]; i++)
    if (!strcmp(argv[1], k_cmds[i].name)) return k_cmds[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "xpuinfer: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
