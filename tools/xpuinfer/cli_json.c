/* Growing text buffers and the JSON pieces of the CLI's --json outputs (always valid JSON: strings escaped,
 * non-finite numbers as null). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cli_buf_add(cli_buf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t c = b->cap ? b->cap : 256;
    while (c < b->len + n + 1) c *= 2;
    char *q = realloc(b->p, c);
    if (!q) {
      b->oom = 1;
      return;
    }
    b->p = q;
    b->cap = c;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
}

void cli_buf_puts(cli_buf *b, const char *s) { cli_buf_add(b, s, strlen(s)); }

void cli_buf_printf(cli_buf *b, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof tmp) b->oom = 1; /* only short numbers and names are printed this way */
  else cli_buf_add(b, tmp, (size_t)n);
}

void cli_json_str(cli_buf *b, const char *s, size_t n) {
  cli_buf_add(b, "\"", 1);
  size_t run = 0; /* bytes passed through as they are */
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    const char *esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : NULL;
    if (!esc && c >= 0x20) {
      run++;
      continue;
    }
    cli_buf_add(b, s + i - run, run);
    run = 0;
    if (esc) cli_buf_add(b, esc, 2);
    else cli_buf_printf(b, "\\u%04x", c);
  }
  cli_buf_add(b, s + n - run, run);
  cli_buf_add(b, "\"", 1);
}

void cli_json_num(cli_buf *b, double v, int decimals) {
  if (isfinite(v)) cli_buf_printf(b, "%.*f", decimals, v);
  else cli_buf_add(b, "null", 4);
}

void cli_buf_free(cli_buf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}
