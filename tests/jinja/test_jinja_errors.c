/* Error paths of the Jinja engine and the chat API: syntax errors name line and column; raise_exception carries
 * the template's own message; undefined values and type errors say what and where; the sandbox refuses mutating
 * methods; runaway loops, infinite recursion, exploding strings and deep nesting stop with a clear error (no
 * hang, no crash) under default and custom limits; bad variables JSON and bad UTF-8 are refused; and one parsed
 * template renders identically from several threads at once. */
#include <pthread.h>
#include "check.h"
#include "jinja/jinja.h"

static xpi_status render(const char *src, const char *vars, const jj_render_opts *o, char **out) {
  jj_template *t = NULL;
  *out = NULL;
  xpi_status st = jj_template_parse(src, strlen(src), &t);
  if (st) return st;
  jj_var v = {.json = vars ? vars : "{}", .json_len = strlen(vars ? vars : "{}")};
  size_t len;
  st = jj_render(t, &v, 1, o, out, &len);
  jj_template_free(t);
  return st;
}

#define FAILS(src, vars, code, needle)                                                                            \
  do {                                                                                                            \
    char *out_;                                                                                                   \
    CHECK_ERR(render(src, vars, NULL, &out_), code, needle);                                                      \
    CHECK(out_ == NULL, "%s: output on failure", src);                                                            \
  } while (0)

#define RENDERS(src, vars, want)                                                                                  \
  do {                                                                                                            \
    char *out_ = NULL;                                                                                            \
    CHECK_OK(render(src, vars, NULL, &out_));                                                                     \
    CHECK(out_ && !strcmp(out_, want), "%s: got \"%s\", want \"%s\"", src, out_ ? out_ : "(null)", want);        \
    free(out_);                                                                                                   \
  } while (0)

static void syntax(void) {
  FAILS("{% if x %}\n  {{ y + }}\n{% endif %}", NULL, XPI_ERR_FORMAT,
        "template syntax error at line 2, column 10: unexpected 'end of print statement'");
  FAILS("line 1\n{% for m in messages %}\n{{ m }}", NULL, XPI_ERR_FORMAT,
        "Unexpected end of template. Jinja was looking for the following tags: 'endfor' or 'else'. The innermost "
        "block that needs to be closed is 'for'.");
  FAILS("{% if a %}{% endfor %}", NULL, XPI_ERR_FORMAT,
        "line 1, column 14: Encountered unknown tag 'endfor'. Jinja was looking for the following tags: 'elif' or "
        "'else' or 'endif'. The innermost block that needs to be closed is 'if'.");
  FAILS("{% for a in x %}\n{% if a %}{% endfor %}", NULL, XPI_ERR_FORMAT,
        "line 2, column 14: Encountered unknown tag 'endfor'. You probably made a nesting mistake. Jinja is expecting "
        "this tag, but currently looking for 'elif' or 'else' or 'endif'. The innermost block that needs to be closed "
        "is 'if'.");
  FAILS("{% do x.append(1) %}", NULL, XPI_ERR_FORMAT, "Encountered unknown tag 'do'.");
  FAILS("ok\n\n   {{ 'unterminated }}", NULL, XPI_ERR_FORMAT, "line 3, column 7: unexpected char '''");
  FAILS("{# never closed", NULL, XPI_ERR_FORMAT, "line 1, column 1: Missing end of comment tag");
  FAILS("{{ x|no_such_filter }}", NULL, XPI_ERR_FORMAT, "line 1, column 6: No filter named 'no_such_filter'.");
  FAILS("{{ (1, 2] }}", NULL, XPI_ERR_FORMAT, "unexpected ']', expected ')'");
  FAILS("{% break %}", NULL, XPI_ERR_FORMAT, "'break' outside loop");
  FAILS("{{ 99999999999999999999 }}", NULL, XPI_ERR_FORMAT, "beyond 64 bits");
  FAILS("\xff{{ x }}", NULL, XPI_ERR_FORMAT, "not valid UTF-8 (byte 0)");
  /* nesting that would overflow a recursive parser is refused */
  char *s = malloc(1 << 20), *q;
  q = s + sprintf(s, "{{ ");
  for (int i = 0; i < 100000; i++) *q++ = '(';
  strcpy(q, "1 }}");
  FAILS(s, NULL, XPI_ERR_FORMAT, "brackets nested too deeply");
  q = s + sprintf(s, "{{ ");
  for (int i = 0; i < 5000; i++) q += sprintf(q, "not ");
  strcpy(q, "1 }}");
  FAILS(s, NULL, XPI_ERR_FORMAT, "nests expressions or blocks too deeply");
  q = s;
  for (int i = 0; i < 3000; i++) q += sprintf(q, "{%% if 1 %%}");
  FAILS(s, NULL, XPI_ERR_FORMAT, "too deeply");
  q = s + sprintf(s, "{{ x");
  for (int i = 0; i < 500; i++) q += sprintf(q, "|trim");
  strcpy(q, " }}");
  RENDERS(s, "{\"x\": \" a \"}", "a"); /* long flat chains are fine */
  free(s);
}

static void runtime(void) {
  FAILS("a\n{{ raise_exception('System role not supported') }}", NULL, XPI_ERR_INVALID_ARGUMENT,
        "System role not supported (raised by the template at line 2, column 4)");
  FAILS("{% for m in messages %}{{ m.content + 1 }}{% endfor %}", "{\"messages\": [{\"content\": \"x\"}]}",
        XPI_ERR_INVALID_ARGUMENT, "line 1, column 27: TypeError: can only concatenate str (not \"int\") to str");
  FAILS("{{ messages[0].content.strip() }}", "{\"messages\": [{\"content\": [1]}]}", XPI_ERR_INVALID_ARGUMENT,
        "UndefinedError: 'list object' has no attribute 'strip'");
  FAILS("{{ nope.attr }}", NULL, XPI_ERR_INVALID_ARGUMENT, "line 1, column 8: UndefinedError: 'nope' is undefined");
  FAILS("{{ tools.append(1) }}", "{\"tools\": []}", XPI_ERR_INVALID_ARGUMENT,
        "SecurityError: access to attribute 'append' of 'list' object is unsafe.");
  FAILS("{% set d = {} %}{{ d.update(a=1) }}", NULL, XPI_ERR_INVALID_ARGUMENT,
        "SecurityError: access to attribute 'update' of 'dict' object is unsafe.");
  RENDERS("{{ ''.__class__ is defined }}|{{ 'x'.__len__ }}", NULL, "False|");
  FAILS("{% include 'other.jinja' %}", NULL, XPI_ERR_INVALID_ARGUMENT, "no loader for this environment");
  FAILS("{{ range(100001)|length }}", NULL, XPI_ERR_INVALID_ARGUMENT, "Range too big");
  /* bad variables */
  FAILS("{{ x }}", "{\"x\": [1, 2", XPI_ERR_INVALID_ARGUMENT, "invalid JSON at line 1, column 12");
  FAILS("{{ x }}", "{\"x\": \"\\ud800\"}", XPI_ERR_INVALID_ARGUMENT, "unpaired surrogate");
  FAILS("{{ x }}", "{\"x\": \"\xc3\x28\"}", XPI_ERR_INVALID_ARGUMENT, "invalid UTF-8");
  FAILS("{{ x }}", "[1]", XPI_ERR_INVALID_ARGUMENT, "the variables must be a JSON object");
  RENDERS("{{ a }}|{{ b }}|{{ c|tojson }}|{{ d }}", "{\"a\": 1, \"b\": 1.0, \"c\": 1e400, \"d\": 12345678901234567890}",
          "1|1.0|Infinity|12345678901234567890"); /* beyond 64 bits: the digits pass through */
  RENDERS("{{ d|tojson }}|{{ d is integer }}|{{ [d, 1]|max }}|{{ d|string|length }}", "{\"d\": -12345678901234567890}",
          "-12345678901234567890|True|1|21");
  FAILS("{{ d + 1 }}", "{\"d\": 12345678901234567890}", XPI_ERR_INVALID_ARGUMENT, "integer beyond 64 bits");
}

/* Runaway templates stop: loops past the work limit, infinite recursion at the depth limit, doubling strings at the
 * output limit, and memory at its limit (each with small limits, as the fuzzer uses). */
static void limits(void) {
  jj_render_opts small = {.max_work = 100000, .max_output = 1 << 16, .max_memory = 8 << 20, .max_depth = 100};
  char *out;
  CHECK_ERR(render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", NULL, &small, &out),
            XPI_ERR_INVALID_ARGUMENT, "ran too long (more than 100000 steps)");
  CHECK_ERR(render("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}", NULL, &small, &out), XPI_ERR_INVALID_ARGUMENT,
            "RecursionError");
  CHECK_ERR(render("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                   NULL, &small, &out), XPI_ERR_INVALID_ARGUMENT, "");
  jj_render_opts out_small = {.max_output = 1 << 16};
  CHECK_ERR(render("{% for i in range(100000) %}xxxxxxxxxxxxxxxx{% endfor %}", NULL, &out_small, &out),
            XPI_ERR_INVALID_ARGUMENT, "builds text longer than 0 MiB (the output limit)");
  CHECK_ERR(render("{{ 'x' * 100000000 }}", NULL, &small, &out), XPI_ERR_INVALID_ARGUMENT, "longer than");
  CHECK_ERR(render("{% set l = [1] * 1000000 %}{{ l|length }}", NULL, &small, &out), XPI_ERR_INVALID_ARGUMENT,
            "memory limit");
  /* the default limits stop the same templates too (no hang, no crash): */
  CHECK_ERR(render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", NULL, NULL, &out),
            XPI_ERR_INVALID_ARGUMENT, "the template"); /* too long, or too much memory for range() lists: bounded */
  CHECK_ERR(render("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}", NULL, NULL, &out), XPI_ERR_INVALID_ARGUMENT,
            "RecursionError");
  CHECK_ERR(render("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                   NULL, NULL, &out), XPI_ERR_INVALID_ARGUMENT, "longer than");
  /* a recursion that stays under the limit works */
  RENDERS("{% macro r(n) %}{% if n %}{{ r(n - 1) }}{% else %}done{% endif %}{% endmacro %}{{ r(150) }}", NULL, "done");
}

/* The chat API's errors (public functions). */
static void chat_api(void) {
  xpi_chat_options o;
  xpi_chat_options_default(&o);
  char text[64];
  size_t len = 0;
  CHECK_ERR(xpi_apply_chat_template_json(NULL, "[]", 2, &o, text, sizeof text, &len), XPI_ERR_INVALID_ARGUMENT,
            "give a tokenizer or options.chat_template");
  o.chat_template = "{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}{{ add_generation_prompt }}";
  const char *arr = "[{\"role\": \"user\", \"content\": \"hi\"}]";
  CHECK_OK(xpi_apply_chat_template_json(NULL, arr, strlen(arr), &o, text, sizeof text, &len));
  CHECK(!strcmp(text, "user:hi;True"), "json array: %s", text);
  const char *conv = "{\"messages\": [{\"role\": \"u\", \"content\": 1.0}], \"add_generation_prompt\": false}";
  CHECK_OK(xpi_apply_chat_template_json(NULL, conv, strlen(conv), &o, text, sizeof text, &len));
  CHECK(!strcmp(text, "u:1.0;False"), "json object: %s", text);
  CHECK_ERR(xpi_apply_chat_template_json(NULL, "{\"messages\": 5}", 15, &o, text, sizeof text, &len),
            XPI_ERR_INVALID_ARGUMENT, "\"messages\" must be an array");
  CHECK_ERR(xpi_apply_chat_template_json(NULL, "{\"messages\": [}", 15, &o, text, sizeof text, &len),
            XPI_ERR_INVALID_ARGUMENT, "conversation: invalid JSON");
  CHECK_ERR(xpi_apply_chat_template_json(NULL, "5", 1, &o, text, sizeof text, &len), XPI_ERR_INVALID_ARGUMENT,
            "array of messages or an object");
  CHECK_ERR(xpi_apply_chat_template_json(NULL, "[\"\xff\"]", 5, &o, text, sizeof text, &len), XPI_ERR_INVALID_ARGUMENT,
            "not valid UTF-8");
  /* precedence: the conversation's keys over the defaults, variables_json over everything */
  o.chat_template = "{{ tools }}|{{ documents }}|{{ x }}|{{ add_generation_prompt }}";
  conv = "{\"messages\": [], \"x\": 1, \"add_generation_prompt\": false}";
  CHECK_OK(xpi_apply_chat_template_json(NULL, conv, strlen(conv), &o, text, sizeof text, &len));
  CHECK(!strcmp(text, "None|None|1|False"), "defaults: %s", text);
  o.variables_json = "{\"x\": 2}";
  o.tools_json = "[{\"a\": 1}]";
  CHECK_OK(xpi_apply_chat_template_json(NULL, conv, strlen(conv), &o, text, sizeof text, &len));
  CHECK(!strcmp(text, "[{'a': 1}]|None|2|False"), "overrides: %s", text);
  o.variables_json = "{\"x\": ";
  CHECK_ERR(xpi_apply_chat_template_json(NULL, conv, strlen(conv), &o, text, sizeof text, &len), XPI_ERR_INVALID_ARGUMENT,
            "variables: invalid JSON");
  o.variables_json = NULL;
  o.chat_template = "{% if %}";
  CHECK_ERR(xpi_apply_chat_template_json(NULL, conv, strlen(conv), &o, text, sizeof text, &len), XPI_ERR_FORMAT,
            "the chat template given in the options: template syntax error at line 1, column 7");
  o.chat_template = "{{ raise_exception('no tools here') }}";
  CHECK_ERR(xpi_apply_chat_template_json(NULL, conv, strlen(conv), &o, text, sizeof text, &len), XPI_ERR_INVALID_ARGUMENT,
            "chat template: no tools here (raised by the template at line 1, column 4)");
}

/* One template, four threads rendering it at once: the same text each time. */
typedef struct job { const jj_template *t; const char *want; int ok; } job;
static void *worker(void *arg) {
  job *j = arg;
  jj_var v = {.json = "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"yo\"}]}"};
  v.json_len = strlen(v.json);
  j->ok = 1;
  for (int i = 0; i < 200; i++) {
    char *out = NULL;
    size_t len;
    if (jj_render(j->t, &v, 1, NULL, &out, &len) || strcmp(out, j->want)) j->ok = 0;
    free(out);
  }
  return NULL;
}

static void threads(void) {
  const char *src = "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}<{{ m.role }}>{{ m.content|upper }}"
                    "{% endfor %}{{ ns.n }}{{ messages|map(attribute='role')|join(',')|tojson }}";
  jj_template *t = NULL;
  CHECK_OK(jj_template_parse(src, strlen(src), &t));
  if (!t) return;
  job jobs[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    jobs[i] = (job){t, "<user>HI<assistant>YO2\"user,assistant\"", 0};
    pthread_create(&th[i], NULL, worker, &jobs[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    CHECK(jobs[i].ok, "thread %d rendered differently", i);
  }
  jj_template_free(t);
}

int main(void) {
  syntax();
  runtime();
  limits();
  chat_api();
  threads();
  return xpi_test_done();
}
