/* Minimal test harness: CHECK macros count passes and failures; xpi_test_done() prints the closing line
 * "N passed, N failed" and returns the exit code. */
#ifndef XPI_TEST_CHECK_H
#define XPI_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "xpuinfer.h"

extern int xpi_test_passed, xpi_test_failed;

#define CHECK(cond, ...)                                                                  \
  do {                                                                                    \
    if (cond) {                                                                           \
      xpi_test_passed++;                                                                  \
    } else {                                                                              \
      xpi_test_failed++;                                                                  \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                     \
      fprintf(stderr, __VA_ARGS__);                                                       \
      fprintf(stderr, "\n");                                                              \
    }                                                                                     \
  } while (0)

/* A call expected to succeed; prints xpi_last_error() otherwise. */
#define CHECK_OK(expr)                                                                    \
  do {                                                                                    \
    xpi_status s_ = (expr);                                                               \
    CHECK(s_ == XPI_OK, "%s -> %s: %s", #expr, xpi_status_name(s_), xpi_last_error());   \
  } while (0)

/* A call expected to fail with code and a message containing needle. */
#define CHECK_ERR(expr, code, needle)                                                     \
  do {                                                                                    \
    xpi_status s_ = (expr);                                                               \
    CHECK(s_ == (code) && strstr(xpi_last_error(), (needle)) != NULL,                     \
          "%s -> %s (want %s), message \"%s\" (want it to contain \"%s\")", #expr,        \
          xpi_status_name(s_), xpi_status_name(code), xpi_last_error(), (needle));        \
  } while (0)

int xpi_test_done(void);

/* Environment paths set by ctest (tests/CMakeLists.txt); abort the test clearly if missing. */
const char *xpi_test_env(const char *name);
/* malloc'd printf. */
char *xpi_test_strf(const char *fmt, ...);
/* Parses a JSON file or exits the test with a message. */
cJSON *xpi_test_load_json(const char *path);
/* Writes bytes to a file (for crafted bad inputs); returns 0 on success. */
int xpi_test_write_file(const char *path, const void *data, size_t len);
/* A fresh empty temporary folder (malloc'd path). */
char *xpi_test_tmpdir(const char *tag);

#endif
