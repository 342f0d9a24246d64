/* Structured chat messages (xpi_chat_message) to the JSON array the template sees as `messages`, each message a
 * dict with the keys that are set: role, content (text or any JSON, e.g. a list of parts), reasoning_content,
 * tool_calls, tool_call_id, name, then the caller's extra keys. Every piece is checked (UTF-8, JSON) and a
 * failure names the message and the field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat_internal.h"
#include "core/json.h"
#include "core/status.h"

typedef struct sbuf { char *p; size_t len, cap; int oom; } sbuf;

static void put(sbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) { b->oom = 1; return; }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
}
static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }

size_t chat_utf8_valid(const char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)s[i];
    size_t l = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    int ok = l && i + l <= n;
    for (size_t k = 1; ok && k < l; k++) ok = ((unsigned char)s[i + k] & 0xC0) == 0x80;
    if (ok && l == 3) {
      unsigned char d = (unsigned char)s[i + 1];
      ok = !(c == 0xE0 && d < 0xA0) && !(c == 0xED && d >= 0xA0);
    }
    if (ok && l == 4) {
      unsigned char d = (unsigned char)s[i + 1];
      ok = !(c == 0xF0 && d < 0x90) && !(c == 0xF4 && d >= 0x90);
    }
    if (!ok) return i;
    i += l;
  }
  return n;
}

/* A JSON string literal of s. */
static void json_str(sbuf *b, const char *s) {
  static const char hx[] = "0123456789abcdef";
  put(b, "\"", 1);
  for (const char *p = s; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if (c == '"') puts_(b, "\\\"");
    else if (c == '\\') puts_(b, "\\\\");
    else if (c < 0x20) {
      char e[7] = {'\\', 'u', '0', '0', hx[c >> 4], hx[c & 15], 0};
      puts_(b, e);
    } else put(b, (const char *)&c, 1);
  }
  put(b, "\"", 1);
}

static xpi_status text_field(sbuf *b, size_t i, const char *key, const char *s) {
  size_t n = strlen(s), bad = chat_utf8_valid(s, n);
  if (bad != n) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "message %zu: %s is not valid UTF-8 (byte %zu)", i, key, bad);
  put(b, ", \"", 3);
  puts_(b, key);
  put(b, "\": ", 3);
  json_str(b, s);
  return XPI_OK;
}

/* A JSON value given as text: checked, then copied. want: 0 any, 1 array, 2 object. */
static xpi_status json_field(sbuf *b, size_t i, const char *key, const char *field, const char *s, int want,
                             const char **inner, size_t *inner_len) {
  size_t n = strlen(s), bad = chat_utf8_valid(s, n);
  char what[96];
  snprintf(what, sizeof what, "message %zu: %s", i, field);
  if (bad != n) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "%s is not valid UTF-8 (byte %zu)", what, bad);
  cJSON *j = NULL;
  xpi_status st = xpi_json_parse(what, s, n, &j);
  if (st) return XPI_ERR_INVALID_ARGUMENT; /* the JSON is the caller's argument */
  int ok = want == 1 ? cJSON_IsArray(j) : want == 2 ? cJSON_IsObject(j) : 1;
  cJSON_Delete(j);
  if (!ok) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "%s must be a JSON %s", what, want == 1 ? "array" : "object");
  if (inner) { /* an object's members, to merge into the message */
    const char *a = strchr(s, '{'), *z = strrchr(s, '}');
    *inner = a + 1;
    *inner_len = (size_t)(z - a - 1);
    return XPI_OK;
  }
  put(b, ", \"", 3);
  puts_(b, key);
  put(b, "\": ", 3);
  put(b, s, n);
  return XPI_OK;
}

xpi_status chat_messages_json(const xpi_chat_message *m, size_t n, char **out, size_t *len) {
  *out = NULL;
  sbuf b = {0};
  put(&b, "[", 1);
  xpi_status st = XPI_OK;
  for (size_t i = 0; i < n && !st; i++) {
    if (!m[i].role) { st = xpi_err(XPI_ERR_INVALID_ARGUMENT, "message %zu has no role (NULL)", i); break; }
    if (i) put(&b, ", ", 2);
    put(&b, "{\"role\": ", 9);
    size_t rl = strlen(m[i].role);
    if (chat_utf8_valid(m[i].role, rl) != rl) { st = xpi_err(XPI_ERR_INVALID_ARGUMENT, "message %zu: role is not valid UTF-8", i); break; }
    json_str(&b, m[i].role);
    if (m[i].content && m[i].content_json) {
      st = xpi_err(XPI_ERR_INVALID_ARGUMENT, "message %zu: give content or content_json, not both", i);
      break;
    }
    if (m[i].content) st = text_field(&b, i, "content", m[i].content);
    if (!st && m[i].content_json) st = json_field(&b, i, "content", "content_json", m[i].content_json, 0, NULL, NULL);
    if (!st && m[i].reasoning_content) st = text_field(&b, i, "reasoning_content", m[i].reasoning_content);
    if (!st && m[i].tool_calls_json) st = json_field(&b, i, "tool_calls", "tool_calls_json", m[i].tool_calls_json, 1, NULL, NULL);
    if (!st && m[i].tool_call_id) st = text_field(&b, i, "tool_call_id", m[i].tool_call_id);
    if (!st && m[i].name) st = text_field(&b, i, "name", m[i].name);
    if (!st && m[i].extra_json) {
      const char *inner = NULL;
      size_t il = 0;
      st = json_field(&b, i, NULL, "extra_json", m[i].extra_json, 2, &inner, &il);
      size_t k = 0;
      while (!st && k < il && (inner[k] == ' ' || inner[k] == '\t' || inner[k] == '\n' || inner[k] == '\r')) k++;
      if (!st && k < il) {
        put(&b, ", ", 2);
        put(&b, inner, il);
      }
    }
    put(&b, "}", 1);
  }
  put(&b, "]", 1);
  if (!st && b.oom) st = xpi_err(XPI_ERR_OUT_OF_MEMORY, "chat template: out of memory");
  if (st) {
    free(b.p);
    return st;
  }
  *out = b.p;
  *len = b.len;
  return XPI_OK;
}
