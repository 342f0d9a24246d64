/* Status and error messages: every failing internal call records a message for xpi_last_error(). */
#ifndef XPI_CORE_STATUS_H
#define XPI_CORE_STATUS_H

#include "xpuinfer.h"

#if defined(__GNUC__)
#define XPI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define XPI_PRINTF(a, b)
#endif

/* Records a formatted message for this thread and returns code, so error paths read
 *   return xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s': ...", path, name); */
xpi_status xpi_err(xpi_status code, const char *fmt, ...) XPI_PRINTF(2, 3);
/* Prefixes the current message with context ("loading model X: " + old message); returns code. */
xpi_status xpi_err_prefix(xpi_status code, const char *fmt, ...) XPI_PRINTF(2, 3);
/* Clears the message (successful public calls need not clear it). */
void xpi_err_clear(void);

/* Logging through the user's callback (never stdout/stderr). */
void xpi_log(int level, const char *fmt, ...) XPI_PRINTF(2, 3);

#define XPI_TRY(expr) do { xpi_status s_ = (expr); if (s_ != XPI_OK) return s_; } while (0)

#endif
