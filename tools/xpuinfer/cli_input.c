/* Text read from stdin for "-p -" (generate, tokenize). */
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
