/* Chat-template options shared by `xpuinfer chat-template` and `xpuinfer generate --chat`: --messages, --tools,
 * --chat-template / --template, --template-name, --var NAME=JSON, --now; the files read, the variables gathered,
 * and the render through xpi_apply_chat_template_json (public API only). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_args.h"
#include "cli.h"

/* The whole file (or stdin for "-"), NUL-terminated; NULL with a message on failure. */
char *cli_read_file(const char *cmd, const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
  if (!f) {
    fprintf(stderr, "xpuinfer %s: cannot open %s: %s\n", cmd, path, strerror(errno));
    return NULL;
  }
  size_t cap = 4096, n = 0;
  char *p = malloc(cap);
  for (;;) {
    if (!p) break;
    if (n + 1 >= cap) {
      char *q = cap < ((size_t)1 << 30) ? realloc(p, cap *= 2) : NULL;
      if (!q) { free(p); p = NULL; break; }
      p = q;
    }
    size_t r = fread(p + n, 1, cap - n - 1, f);
    n += r;
    if (r == 0) break;
  }
  int err = ferror(f);
  if (f != stdin) fclose(f);
  if (!p || err) {
    fprintf(stderr, "xpuinfer %s: cannot read %s%s\n", cmd, path, p ? "" : " (out of memory or over 1 GiB)");
    free(p);
    return NULL;
  }
  p[n] = 0;
  if (len) *len = n;
  return p;
}

/* A JSON string literal of s appended to *b (grown with realloc); -1 when out of memory. */
static int append(char **b, size_t *len, size_t *cap, const char *s, size_t n) {
  if (*len + n + 1 > *cap) {
    size_t c = *cap ? *cap : 256;
    while (c < *len + n + 1) c *= 2;
    char *q = realloc(*b, c);
    if (!q) return -1;
    *b = q;
    *cap = c;
  }
  memcpy(*b + *len, s, n);
  *len += n;
  (*b)[*len] = 0;
  return 0;
}

static int append_s(char **b, size_t *len, size_t *cap, const char *s) { return append(b, len, cap, s, strlen(s)); }

static int append_json_str(char **b, size_t *len, size_t *cap, const char *s) {
  static const char hx[] = "0123456789abcdef";
  int r = append(b, len, cap, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p && !r; p++) {
    char e[7] = {'\\', 0};
    if (*p == '"' || *p == '\\') { e[1] = (char)*p; r = append(b, len, cap, e, 2); }
    else if (*p < 0x20) {
      e[1] = 'u'; e[2] = '0'; e[3] = '0'; e[4] = hx[*p >> 4]; e[5] = hx[*p & 15];
      r = append(b, len, cap, e, 6);
    } else r = append(b, len, cap, (const char *)p, 1);
  }
  return r ? r : append(b, len, cap, "\"", 1);
}

int cli_chat_arg(cli_chat *c, const char *cmd, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  const char **dst = !strcmp(a, "--messages") ? &c->messages_file
                     : !strcmp(a, "--tools") ? &c->tools_file
                     : (!strcmp(a, "--chat-template") || !strcmp(a, "--template")) ? &c->template_file
                     : !strcmp(a, "--template-name") ? &c->template_name
                     : !strcmp(a, "--input") ? &c->input_file
                     : NULL;
  int is_var = !strcmp(a, "--var"), is_now = !strcmp(a, "--now");
  if (!dst && !is_var && !is_now) return 0;
  if (*i + 1 >= argc) return -cli_usage_error(cmd, "%s needs a value", a);
  const char *v = argv[++*i];
  if (dst) { *dst = v; return 1; }
  if (is_now) {
    long long t;
    if (cli_parse_int(v, 1, (long long)1 << 40, &t)) return -cli_usage_error(cmd, "--now: '%s' is not seconds since the epoch", v);
    c->now = t;
    return 1;
  }
  const char *eq = strchr(v, '=');
  if (!eq || eq == v) return -cli_usage_error(cmd, "--var wants NAME=JSON, e.g. --var enable_thinking=false, got '%s'", v);
  if (c->n_vars == sizeof c->vars / sizeof *c->vars) return -cli_usage_error(cmd, "at most 64 --var");
  c->vars[c->n_vars++] = v;
  return 1;
}

int cli_chat_load(cli_chat *c, const char *cmd) {
  if (c->messages_file && !(c->messages = cli_read_file(cmd, c->messages_file, &c->messages_len))) return 1;
  if (c->input_file && !(c->messages = cli_read_file(cmd, c->input_file, &c->messages_len))) return 1;
  if (c->tools_file && !(c->tools = cli_read_file(cmd, c->tools_file, NULL))) return 1;
  if (c->template_file && !(c->tpl = cli_read_file(cmd, c->template_file, NULL))) return 1;
  /* --var NAME=JSON (and --no-think) as one JSON object; each value is checked alone so a mistake names its --var */
  size_t len = 0, cap = 0;
  int r = append(&c->vars_json, &len, &cap, "{", 1);
  int first = 1;
  if (c->no_think) {
    r |= append_s(&c->vars_json, &len, &cap, "\"enable_thinking\": false");
    first = 0;
  }
  for (size_t k = 0; k < c->n_vars && !r; k++) {
    const char *eq = strchr(c->vars[k], '=');
    char *name = strndup(c->vars[k], (size_t)(eq - c->vars[k]));
    char *one = NULL;
    size_t ol = 0, oc = 0;
    int e = !name || append(&one, &ol, &oc, "{", 1) || append_json_str(&one, &ol, &oc, name) ||
            append(&one, &ol, &oc, ": ", 2) || append(&one, &ol, &oc, eq + 1, strlen(eq + 1)) || append(&one, &ol, &oc, "}", 1);
    if (e) {
      free(name);
      free(one);
      fprintf(stderr, "xpuinfer %s: out of memory\n", cmd);
      return 1;
    }
    xpi_chat_options o;
    xpi_chat_options_default(&o);
    o.chat_template = "";
    o.variables_json = one;
    char out[1];
    size_t n;
    xpi_status s = xpi_apply_chat_template_json(NULL, "[]", 2, &o, out, sizeof out, &n);
    if (s) {
      fprintf(stderr, "xpuinfer %s: --var %s: the value '%s' is not JSON (a string needs quotes: --var '%s=\"...\"'): %s\n",
              cmd, name, eq + 1, name, xpi_last_error());
      free(name);
      free(one);
      return 2;
    }
    r |= (!first && append(&c->vars_json, &len, &cap, ", ", 2)) || append(&c->vars_json, &len, &cap, one + 1, ol - 2);
    first = 0;
    free(name);
    free(one);
  }
  r |= append(&c->vars_json, &len, &cap, "}", 1);
  if (r) {
    fprintf(stderr, "xpuinfer %s: out of memory\n", cmd);
    return 1;
  }
  return 0;
}

char *cli_chat_user_turn(const char *system, const char *prompt) {
  char *b = NULL;
  size_t len = 0, cap = 0;
  int r = append_s(&b, &len, &cap, "[");
  if (system)
    r |= append_s(&b, &len, &cap, "{\"role\": \"system\", \"content\": ") || append_json_str(&b, &len, &cap, system) ||
         append_s(&b, &len, &cap, "}, ");
  r |= append_s(&b, &len, &cap, "{\"role\": \"user\", \"content\": ") || append_json_str(&b, &len, &cap, prompt) ||
       append_s(&b, &len, &cap, "}]");
  if (r) {
    free(b);
    return NULL;
  }
  return b;
}

xpi_status cli_chat_render(const xpi_tokenizer *tok, const cli_chat *c, const char *conversation, int gen,
                           char **text, size_t *len) {
  xpi_chat_options o;
  xpi_chat_options_default(&o);
  o.add_generation_prompt = gen;
  o.tools_json = c->tools;
  o.variables_json = c->vars_json;
  o.chat_template = c->tpl;
  o.template_name = c->template_name;
  o.now = c->now;
  size_t n = strlen(conversation);
  *text = NULL;
  xpi_status s = xpi_apply_chat_template_json(tok, conversation, n, &o, NULL, 0, len);
  for (int tries = 0; s == XPI_ERR_BUFFER_TOO_SMALL && tries < 3; tries++) { /* the clock may move between calls */
    free(*text);
    *text = malloc(*len + 1);
    if (!*text) return XPI_ERR_OUT_OF_MEMORY;
    s = xpi_apply_chat_template_json(tok, conversation, n, &o, *text, *len + 1, len);
  }
  if (s) {
    free(*text);
    *text = NULL;
  }
  return s;
}

void cli_chat_free(cli_chat *c) {
  free(c->messages);
  free(c->tools);
  free(c->tpl);
  free(c->vars_json);
}
