/* JSON file loading and typed field access with actionable messages. */
#include "core/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "core/fileio.h"
#include "core/status.h"

size_t xpi_utf8_invalid_at(const char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    if ((unsigned char)s[i] < 0x80) { /* ASCII: most of every JSON file */
      i++;
      continue;
    }
    utf8proc_int32_t cp;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
    if (k <= 0) return i;
    i += (size_t)k;
  }
  return n;
}

xpi_status xpi_json_parse(const char *what, const char *buf, size_t len, cJSON **out) {
  *out = NULL;
  size_t bad = xpi_utf8_invalid_at(buf, len);
  if (bad < len)
    return xpi_err(XPI_ERR_FORMAT, "%s: not valid UTF-8 (byte 0x%02x at offset %zu); JSON files must be UTF-8", what,
                   (unsigned char)buf[bad], bad);
  const char *end = NULL;
  cJSON *j = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
  if (!j) {
    size_t off = end && end >= buf ? (size_t)(end - buf) : 0;
    int line = 1, col = 1;
    for (size_t i = 0; i < off && i < len; i++) {
      if (buf[i] == '\n') { line++; col = 1; } else col++;
    }
    return xpi_err(XPI_ERR_FORMAT, "%s: invalid JSON near line %d, column %d", what, line, col);
  }
  *out = j;
  return XPI_OK;
}

xpi_status xpi_json_load_file(const char *path, size_t max_bytes, cJSON **out) {
  char *buf = NULL;
  size_t len = 0;
  *out = NULL;
  XPI_TRY(xpi_read_file(path, max_bytes, &buf, &len));
  xpi_status s = xpi_json_parse(path, buf, len, out);
  free(buf);
  return s;
}

static const cJSON *field(const cJSON *obj, const char *key, int *found) {
  const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
  if (v && cJSON_IsNull(v)) v = NULL;
  if (found) *found = v != NULL;
  return v;
}

xpi_status xpi_json_get_int(const char *what, const cJSON *obj, const char *key, int64_t min, int64_t max,
                            int64_t *out, int *found) {
  const cJSON *v = field(obj, key, found);
  if (!v) return XPI_OK;
  if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
    return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" must be an integer", what, key);
  double d = v->valuedouble;
  if (d < (double)min || d > (double)max)
    return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" = %.0f is out of range [%lld, %lld]", what, key, d,
                   (long long)min, (long long)max);
  *out = (int64_t)d;
  return XPI_OK;
}

xpi_status xpi_json_get_double(const char *what, const cJSON *obj, const char *key, double *out, int *found) {
  const cJSON *v = field(obj, key, found);
  if (!v) return XPI_OK;
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
    return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" must be a finite number", what, key);
  *out = v->valuedouble;
  return XPI_OK;
}

xpi_status xpi_json_get_bool(const char *what, const cJSON *obj, const char *key, int *out, int *found) {
  const cJSON *v = field(obj, key, found);
  if (!v) return XPI_OK;
  if (!cJSON_IsBool(v)) return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" must be true or false", what, key);
  *out = cJSON_IsTrue(v);
  return XPI_OK;
}

xpi_status xpi_json_get_string(const char *what, const cJSON *obj, const char *key, const char **out, int *found) {
  const cJSON *v = field(obj, key, found);
  if (!v) return XPI_OK;
  if (!cJSON_IsString(v) || !v->valuestring) return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" must be a string", what, key);
  *out = v->valuestring;
  return XPI_OK;
}
