/* The 43 real chat templates of tests/data/chat_templates against goldens.json (jinja2 3.1.6 in transformers'
 * environment, 9 conversations each): every render jinja2 completes must be byte-identical; every render jinja2
 * refuses must fail too, with the same message (the template's own raise_exception text, or Python's error such
 * as "TypeError: can only concatenate str (not \"list\") to str"). Variables exactly as make_goldens.py passes
 * them (tools only when the conversation has tools); strftime_now frozen at 2026-07-26 12:00 local time. */
#include <time.h>
#include "check.h"
#include "jinja/jinja.h"

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  char *p = NULL;
  if (f && !fseek(f, 0, SEEK_END)) {
    long l = ftell(f);
    rewind(f);
    p = l >= 0 ? malloc((size_t)l + 1) : NULL;
    if (p && fread(p, 1, (size_t)l, f) != (size_t)l) { free(p); p = NULL; }
    if (p) { p[l] = 0; *n = (size_t)l; }
  }
  if (f) fclose(f);
  return p;
}

int main(void) {
  const char *data = xpi_test_env("XPI_TEST_DATA");
  char *gp = xpi_test_strf("%s/chat_templates/goldens.json", data);
  cJSON *g = xpi_test_load_json(gp);
  free(gp);
  const cJSON *special = cJSON_GetObjectItem(g, "special"), *convs = cJSON_GetObjectItem(g, "conversations");
  struct tm frozen = {.tm_year = 126, .tm_mon = 6, .tm_mday = 26, .tm_hour = 12, .tm_isdst = -1};
  jj_render_opts ro = {.now = (int64_t)mktime(&frozen)};
  int n_out = 0, n_err = 0, n_raise = 0;
  const cJSON *x;
  cJSON_ArrayForEach(x, cJSON_GetObjectItem(g, "goldens")) {
    const char *tname = cJSON_GetObjectItem(x, "template")->valuestring;
    const char *cname = cJSON_GetObjectItem(x, "conversation")->valuestring;
    const cJSON *conv = NULL, *c;
    cJSON_ArrayForEach(c, convs)
      if (!strcmp(cJSON_GetObjectItem(c, "name")->valuestring, cname)) conv = c;
    CHECK(conv != NULL, "%s: conversation %s", tname, cname);
    if (!conv) continue;
    /* the variables: special tokens, the conversation's kwargs, messages, add_generation_prompt, tools */
    cJSON *vars = cJSON_Duplicate(special, 1);
    const cJSON *kw = cJSON_GetObjectItem(conv, "kwargs");
    if (kw) cJSON_ArrayForEach(c, kw) cJSON_AddItemToObject(vars, c->string, cJSON_Duplicate(c, 1));
    cJSON_AddItemToObject(vars, "messages", cJSON_Duplicate(cJSON_GetObjectItem(conv, "messages"), 1));
    cJSON_AddBoolToObject(vars, "add_generation_prompt", cJSON_IsTrue(cJSON_GetObjectItem(x, "add_generation_prompt")));
    if (cJSON_GetObjectItem(conv, "tools"))
      cJSON_AddItemToObject(vars, "tools", cJSON_Duplicate(cJSON_GetObjectItem(conv, "tools"), 1));
    char *vj = cJSON_PrintUnformatted(vars); /* the goldens hold no floats: ints and strings print back exactly */
    cJSON_Delete(vars);
    char *tp = xpi_test_strf("%s/chat_templates/%s", data, tname);
    size_t tl = 0;
    char *src = slurp(tp, &tl);
    free(tp);
    CHECK(src != NULL, "cannot read %s", tname);
    jj_template *t = NULL;
    char *out = NULL;
    size_t len = 0;
    xpi_status st = src ? jj_template_parse(src, tl, &t) : XPI_ERR_IO;
    CHECK(st == XPI_OK, "%s does not parse: %s", tname, xpi_last_error());
    if (t) {
      jj_var v = {.json = vj, .json_len = strlen(vj)};
      st = jj_render(t, &v, 1, &ro, &out, &len);
    }
    const cJSON *want = cJSON_GetObjectItem(x, "output");
    if (cJSON_IsString(want)) {
      n_out++;
      CHECK(st == XPI_OK && len == strlen(want->valuestring) && !memcmp(out, want->valuestring, len),
            "%s / %s: %s\n--- got\n%s\n--- want\n%s", tname, cname, st ? xpi_last_error() : "differs", out ? out : "",
            want->valuestring);
    } else {
      const char *msg = cJSON_GetObjectItem(x, "message")->valuestring;
      n_err++;
      /* raise_exception: the template's own words; other errors: Python's exception and text */
      int raised = !strncmp(msg, "TemplateError: ", 15);
      n_raise += raised;
      CHECK(st == XPI_ERR_INVALID_ARGUMENT && strstr(xpi_last_error(), raised ? msg + 15 : msg),
            "%s / %s: jinja2 fails with \"%s\"; here %s: %s", tname, cname, msg, xpi_status_name(st),
            st ? xpi_last_error() : out);
    }
    free(out);
    jj_template_free(t);
    free(src);
    free(vj);
  }
  printf("%d renders compared byte for byte, %d refusals (%d by raise_exception) matched\n", n_out, n_err, n_raise);
  CHECK(n_out == 350 && n_err == 37, "goldens.json changed: %d outputs, %d errors", n_out, n_err);
  cJSON_Delete(g);
  return xpi_test_done();
}
