/* Thread-local error messages, status names, version, log callback. */
#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define XPI_ERR_MAX 2048

static _Thread_local char g_err[XPI_ERR_MAX];
static xpi_log_fn g_log_fn;
static void *g_log_user;

xpi_status xpi_err(xpi_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_err, sizeof g_err, fmt, ap);
  va_end(ap);
  return code;
}

xpi_status xpi_err_prefix(xpi_status code, const char *fmt, ...) {
  char old[XPI_ERR_MAX], pre[XPI_ERR_MAX];
  memcpy(old, g_err, sizeof old);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(pre, sizeof pre, fmt, ap);
  va_end(ap);
  /* Truncation is fine here: the prefix comes first and the message stays NUL-terminated. */
  size_t a = strlen(pre), b = strlen(old);
  if (a > XPI_ERR_MAX - 1) a = XPI_ERR_MAX - 1;
  if (b > XPI_ERR_MAX - 1 - a) b = XPI_ERR_MAX - 1 - a;
  memcpy(g_err, pre, a);
  memcpy(g_err + a, old, b);
  g_err[a + b] = 0;
  return code;
}

void xpi_err_clear(void) { g_err[0] = 0; }

const char *xpi_last_error(void) { return g_err; }

const char *xpi_status_name(xpi_status s) {
  switch (s) {
    case XPI_OK: return "XPI_OK";
    case XPI_ERR_INVALID_ARGUMENT: return "XPI_ERR_INVALID_ARGUMENT";
    case XPI_ERR_IO: return "XPI_ERR_IO";
    case XPI_ERR_FORMAT: return "XPI_ERR_FORMAT";
    case XPI_ERR_UNSUPPORTED: return "XPI_ERR_UNSUPPORTED";
    case XPI_ERR_OUT_OF_MEMORY: return "XPI_ERR_OUT_OF_MEMORY";
    case XPI_ERR_BUFFER_TOO_SMALL: return "XPI_ERR_BUFFER_TOO_SMALL";
    case XPI_ERR_CONTEXT_LENGTH: return "XPI_ERR_CONTEXT_LENGTH";
    case XPI_ERR_DEVICE: return "XPI_ERR_DEVICE";
    case XPI_ERR_NETWORK: return "XPI_ERR_NETWORK";
    case XPI_ERR_AUTH: return "XPI_ERR_AUTH";
    case XPI_ERR_NOT_FOUND: return "XPI_ERR_NOT_FOUND";
    case XPI_ERR_CANCELLED: return "XPI_ERR_CANCELLED";
    case XPI_ERR_INTERNAL: return "XPI_ERR_INTERNAL";
    case XPI_ERR_NUMERIC: return "XPI_ERR_NUMERIC";
  }
  return "XPI_ERR_UNKNOWN";
}

const char *xpi_version(void) { return XPI_VERSION_STRING; }

void xpi_set_log_callback(xpi_log_fn fn, void *user) {
  g_log_fn = fn;
  g_log_user = user;
}

void xpi_log(int level, const char *fmt, ...) {
  xpi_log_fn fn = g_log_fn;
  if (!fn) return;
  char buf[XPI_ERR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fn(level, buf, g_log_user);
}
