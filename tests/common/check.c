#include "check.h"

#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

int xpi_test_passed, xpi_test_failed;

int xpi_test_done(void) {
  printf("%d passed, %d failed\n", xpi_test_passed, xpi_test_failed);
  return xpi_test_failed ? 1 : 0;
}

const char *xpi_test_env(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v) {
    fprintf(stderr, "test environment variable %s is not set (run through ctest)\n", name);
    exit(2);
  }
  return v;
}

char *xpi_test_strf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = malloc((size_t)n + 1);
  if (!s) exit(3);
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

cJSON *xpi_test_load_json(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) exit(3);
  buf[n] = 0;
  fclose(f);
  cJSON *j = cJSON_Parse(buf);
  free(buf);
  if (!j) {
    fprintf(stderr, "%s: invalid JSON\n", path);
    exit(2);
  }
  return j;
}

int xpi_test_write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  int ok = fwrite(data, 1, len, f) == len;
  return fclose(f) == 0 && ok ? 0 : -1;
}

char *xpi_test_tmpdir(const char *tag) {
  const char *base = getenv("TMPDIR");
  char *p = xpi_test_strf("%s/xpi-%s-XXXXXX", base && *base ? base : "/tmp", tag);
  if (!mkdtemp(p)) {
    fprintf(stderr, "mkdtemp %s failed\n", p);
    exit(2);
  }
  return p;
}
