/* JSON helpers over cJSON with messages that name the file and the field. */
#ifndef XPI_CORE_JSON_H
#define XPI_CORE_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "xpuinfer.h"

/* Reads and parses a JSON file (at most max_bytes). On a parse error the message gives the line and column. */
xpi_status xpi_json_load_file(const char *path, size_t max_bytes, cJSON **out);
/* Parses a buffer; what names the source in messages. The text must be UTF-8 (RFC 8259; tokenizers, transformers
 * and safetensors refuse anything else, while cJSON alone would pass invalid bytes on into strings). */
xpi_status xpi_json_parse(const char *what, const char *buf, size_t len, cJSON **out);
/* Offset of the first byte of s[0..n) that is not valid UTF-8 (overlong forms and surrogates are invalid), or
 * n when all of it is valid. */
size_t xpi_utf8_invalid_at(const char *s, size_t n);

/* Typed getters: 0 when absent (*found = 0 if found != NULL), error when present with the wrong type or
 * out of range. what names the file for messages. */
xpi_status xpi_json_get_int(const char *what, const cJSON *obj, const char *key, int64_t min, int64_t max,
                            int64_t *out, int *found);
xpi_status xpi_json_get_double(const char *what, const cJSON *obj, const char *key, double *out, int *found);
xpi_status xpi_json_get_bool(const char *what, const cJSON *obj, const char *key, int *out, int *found);
/* *out points into obj (not copied). */
xpi_status xpi_json_get_string(const char *what, const cJSON *obj, const char *key, const char **out, int *found);

#endif
