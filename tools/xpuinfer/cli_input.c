/* Prompts in: text read from stdin for "-p -" (generate, tokenize), and text to ids (generate, chat, serve). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_read_stdin_text(const char *cmd, char **out) {
  size_t len = 0, cap = 4096;
  char *p = malloc(cap);
  if (!p) return cli_fail(cmd, "out of memory", XPI_ERR_OUT_OF_MEMORY);
  for (;;) {
    if (len + 1 >= cap) {
      char *q = realloc(p, cap *= 2);
      if (!q) {
        free(p);
        return cli_fail(cmd, "out of memory", XPI_ERR_OUT_OF_MEMORY);
      }
      p = q;
    }
    size_t got = fread(p + len, 1, cap - 1 - len, stdin);
    len += got;
    if (got == 0) break;
  }
  if (ferror(stdin)) {
    fprintf(stderr, "xpuinfer %s: -p -: reading stdin failed: %s\n", cmd, strerror(errno));
    free(p);
    return 1;
  }
  if (memchr(p, 0, len)) {
    fprintf(stderr, "xpuinfer %s: -p -: the text on stdin holds a NUL byte (a text prompt cannot)\n", cmd);
    free(p);
    return 1;
  }
  while (len > 0 && (p[len - 1] == '\n' || p[len - 1] == '\r')) len--;
  p[len] = 0;
  *out = p;
  return 0;
}

xpi_status cli_tokenize_status(const xpi_tokenizer *tok, const char *text, size_t len, int add_special,
                               int32_t **ids, size_t *n) {
  *ids = NULL;
  xpi_status s = xpi_tokenize(tok, text, len, add_special, NULL, 0, n);
  if (s == XPI_ERR_BUFFER_TOO_SMALL || s == XPI_OK) {
    *ids = malloc((*n ? *n : 1) * sizeof **ids);
    s = *ids ? xpi_tokenize(tok, text, len, add_special, *ids, *n, n) : XPI_ERR_OUT_OF_MEMORY;
  }
  if (s == XPI_OK) return XPI_OK;
  free(*ids);
  *ids = NULL;
  return s;
}

int cli_tokenize(const char *cmd, const xpi_tokenizer *tok, const char *text, size_t len, int add_special,
                 int32_t **ids, size_t *n) {
  xpi_status s = cli_tokenize_status(tok, text, len, add_special, ids, n);
  return s == XPI_OK ? 0 : cli_fail(cmd, "tokenizing the prompt", s);
}
