/* Test driver for the Jinja engine (the tests/jinja Python tests): for each JSON line on stdin
 *   {"t": template source, "v": "JSON text of an object of variables", "now": seconds (optional),
 *    "limits": {"work", "memory", "output", "depth"} (optional)}
 * writes one JSON line: {"out": hex of the UTF-8 output} or {"error": message, "status": name}. Variables travel as
 * JSON text so that ints and floats stay apart (1 vs 1.0), as Python's json.loads keeps them.
 *   {"chat_template": source, "conversation": "JSON text", "gen": bool, "now": seconds}
 * renders through the public API instead: xpi_apply_chat_template_json(NULL tokenizer, conversation) with
 * options.chat_template, add_generation_prompt = gen (the conversation's own key wins) and the clock.
 * With --sanitized it prints 1 under AddressSanitizer (the Python tests then run fewer cases). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "jinja/jinja.h"

static void add_hex(cJSON *out, const char *key, const char *s, size_t n) {
  char *h = malloc(2 * n + 1);
  for (size_t i = 0; i < n; i++) snprintf(h + 2 * i, 3, "%02x", (unsigned char)s[i]);
  h[2 * n] = 0;
  cJSON_AddStringToObject(out, key, h);
  free(h);
}

static double num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItem(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--sanitized")) {
#if defined(__SANITIZE_ADDRESS__)
    puts("1");
#else
    puts("0");
#endif
    return 0;
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, stdin)) > 0) {
    cJSON *req = cJSON_ParseWithLength(line, (size_t)n), *out = cJSON_CreateObject();
    const cJSON *t = cJSON_GetObjectItem(req, "t"), *v = cJSON_GetObjectItem(req, "v");
    const cJSON *ct = cJSON_GetObjectItem(req, "chat_template"), *conv = cJSON_GetObjectItem(req, "conversation");
    if (cJSON_IsString(ct) && cJSON_IsString(conv)) {
      xpi_chat_options o;
      xpi_chat_options_default(&o);
      o.chat_template = ct->valuestring;
      o.add_generation_prompt = cJSON_IsTrue(cJSON_GetObjectItem(req, "gen"));
      o.now = (int64_t)num(req, "now");
      size_t len = 0, cl = strlen(conv->valuestring);
      xpi_status st = xpi_apply_chat_template_json(NULL, conv->valuestring, cl, &o, NULL, 0, &len);
      char *text = st == XPI_ERR_BUFFER_TOO_SMALL ? malloc(len + 1) : NULL;
      if (text) st = xpi_apply_chat_template_json(NULL, conv->valuestring, cl, &o, text, len + 1, &len);
      if (!st) add_hex(out, "out", text, len);
      else {
        cJSON_AddStringToObject(out, "error", xpi_last_error());
        cJSON_AddStringToObject(out, "status", xpi_status_name(st));
      }
      free(text);
    } else if (!cJSON_IsString(t)) {
      cJSON_AddStringToObject(out, "error", "bad request line");
    } else {
      jj_template *tpl = NULL;
      xpi_status st = jj_template_parse(t->valuestring, strlen(t->valuestring), &tpl);
      if (!st) {
        jj_var var = {.name = NULL, .json = cJSON_IsString(v) ? v->valuestring : "{}"};
        var.json_len = strlen(var.json);
        const cJSON *lim = cJSON_GetObjectItem(req, "limits");
        jj_render_opts o = {.now = (int64_t)num(req, "now")};
        if (lim) {
          o.max_work = (uint64_t)num(lim, "work");
          o.max_memory = (size_t)num(lim, "memory");
          o.max_output = (size_t)num(lim, "output");
          o.max_depth = (unsigned)num(lim, "depth");
        }
        char *text = NULL;
        size_t len = 0;
        st = jj_render(tpl, &var, 1, &o, &text, &len);
        if (!st) add_hex(out, "out", text, len);
        free(text);
      }
      if (st) {
        cJSON_AddStringToObject(out, "error", xpi_last_error());
        cJSON_AddStringToObject(out, "status", xpi_status_name(st));
      }
      jj_template_free(tpl);
    }
    char *o = cJSON_PrintUnformatted(out);
    puts(o);
    fflush(stdout);
    free(o);
    cJSON_Delete(req);
    cJSON_Delete(out);
  }
  free(line);
  return 0;
}
