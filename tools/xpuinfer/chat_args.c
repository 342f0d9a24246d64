/* Chat-template options of the CLI (see chat_args.h). Public API only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "chat_args.h"

void cli_chat_init(cli_chat *c) {
  memset(c, 0, sizeof *c);
  c->vars.v = c->var_v;
  c->vars.max = sizeof c->var_v / sizeof c->var_v[0];
}

size_t cli_chat_table(cli_chat *c, cli_opt *o) {
  size_t n = 0;
  o[n++] = (cli_opt){NULL, "--chat-template", CLI_STR, &c->template_file, 0, 0, 0, 0, 0, NULL};
  o[n++] = (cli_opt){NULL, "--template-name", CLI_STR, &c->template_name, 0, 0, 0, 0, 0, NULL};
  o[n++] = (cli_opt){NULL, "--tools", CLI_STR, &c->tools_file, 0, 0, 0, 0, 0, NULL};
  o[n++] = (cli_opt){NULL, "--var", CLI_STRS, &c->vars, 0, 0, 0, 0, 0, NULL};
  o[n++] = (cli_opt){NULL, "--now", CLI_INT, &c->now, 1, (long long)1 << 40, 0, 0, 0, NULL};
  return n;
}

int cli_chat_given(const cli_chat *c) {
  return c->template_file || c->template_name || c->tools_file || c->vars.n || c->now;
}

char *cli_read_file(const char *cmd, const char *what, const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
  struct stat st;
  if (!f || fstat(fileno(f), &st) != 0) {
    fprintf(stderr, "xpuinfer %s: %s %s: cannot read the file: %s\n", cmd, what, path, strerror(errno));
    if (f && f != stdin) fclose(f);
    return NULL;
  }
  if (S_ISDIR(st.st_mode)) {
    fprintf(stderr, "xpuinfer %s: %s %s: is a directory, not a file\n", cmd, what, path);
    if (f != stdin) fclose(f);
    return NULL;
  }
  cli_buf b = {0};
  char chunk[65536];
  size_t r;
  while ((r = fread(chunk, 1, sizeof chunk, f)) > 0) cli_buf_add(&b, chunk, r);
  int err = ferror(f);
  if (f != stdin) fclose(f);
  if (err || b.oom) {
    fprintf(stderr, "xpuinfer %s: %s %s: %s\n", cmd, what, path, err ? strerror(errno) : "out of memory");
    cli_buf_free(&b);
    return NULL;
  }
  if (!b.p) cli_buf_add(&b, "", 0);
  if (!b.p && !(b.p = calloc(1, 1))) return NULL;
  if (len) *len = b.len;
  return b.p;
}

/* Whether json parses, checked by rendering an empty template with it as the variables (public API only). */
static xpi_status check_vars(const char *json) {
  xpi_chat_options o;
  xpi_chat_options_default(&o);
  o.chat_template = "";
  o.variables_json = json;
  char out[1];
  size_t n;
  return xpi_apply_chat_template_json(NULL, "[]", 2, &o, out, sizeof out, &n);
}

int cli_chat_load(const char *cmd, cli_chat *c, int no_think) {
  if (c->template_file && !(c->tpl = cli_read_file(cmd, "--chat-template", c->template_file, NULL))) return 1;
  if (c->tools_file && !(c->tools = cli_read_file(cmd, "--tools", c->tools_file, NULL))) return 1;
  cli_buf all = {0};
  cli_buf_puts(&all, "{");
  if (no_think) cli_buf_puts(&all, "\"enable_thinking\": false");
  for (size_t k = 0; k < c->vars.n; k++) {
    const char *v = c->vars.v[k], *eq = strchr(v, '=');
    if (!eq || eq == v) {
      cli_buf_free(&all);
      return cli_usage_error(cmd, "--var wants NAME=JSON, e.g. --var enable_thinking=false, got '%s'", v);
    }
    cli_buf one = {0};
    cli_buf_puts(&one, "{");
    cli_json_str(&one, v, (size_t)(eq - v));
    cli_buf_puts(&one, ": ");
    cli_buf_puts(&one, eq + 1);
    cli_buf_puts(&one, "}");
    if (!one.oom && check_vars(one.p)) {
      fprintf(stderr, "xpuinfer %s: --var %.*s: '%s' is not JSON (a string needs quotes: --var '%.*s=\"...\"')\n", cmd,
              (int)(eq - v), v, eq + 1, (int)(eq - v), v);
      cli_buf_free(&one);
      cli_buf_free(&all);
      return 2;
    }
    if (all.len > 1) cli_buf_puts(&all, ", ");
    if (one.p) cli_buf_add(&all, one.p + 1, one.len - 2);
    cli_buf_free(&one);
  }
  cli_buf_puts(&all, "}");
  if (all.oom) {
    cli_buf_free(&all);
    return cli_fail(cmd, "out of memory", XPI_ERR_OUT_OF_MEMORY);
  }
  c->vars_json = all.p;
  return 0;
}

xpi_status cli_chat_render_status(const xpi_tokenizer *tok, const cli_chat *c, const xpi_chat_message *msgs,
                                  size_t n, const char *conversation, int add_generation_prompt, char **text,
                                  size_t *len) {
  xpi_chat_options o;
  xpi_chat_options_default(&o);
  o.add_generation_prompt = add_generation_prompt;
  o.tools_json = c->tools;
  o.variables_json = c->vars_json;
  o.chat_template = c->tpl;
  o.template_name = c->template_name;
  o.now = c->now;
  size_t cl = conversation ? strlen(conversation) : 0;
  *text = NULL;
  xpi_status s = XPI_ERR_BUFFER_TOO_SMALL;
  *len = 0;
  /* size query, then render; again if the text grew in between (a template printing the current time) */
  for (int tries = 0; s == XPI_ERR_BUFFER_TOO_SMALL && tries < 3; tries++) {
    size_t cap = *text ? *len + 1 : 0;
    if (tries) {
      free(*text);
      *text = malloc(*len + 1);
      if (!*text) return XPI_ERR_OUT_OF_MEMORY;
      cap = *len + 1;
    }
    s = msgs || !conversation ? xpi_apply_chat_template(tok, msgs, n, &o, *text, cap, len)
                              : xpi_apply_chat_template_json(tok, conversation, cl, &o, *text, cap, len);
  }
  if (s == XPI_OK) return XPI_OK;
  free(*text);
  *text = NULL;
  return s;
}

int cli_chat_render(const char *cmd, const xpi_tokenizer *tok, const cli_chat *c, const xpi_chat_message *msgs,
                    size_t n, const char *conversation, int add_generation_prompt, char **text, size_t *len) {
  xpi_status s = cli_chat_render_status(tok, c, msgs, n, conversation, add_generation_prompt, text, len);
  return s == XPI_OK ? 0 : cli_fail(cmd, s == XPI_ERR_OUT_OF_MEMORY ? "out of memory" : "applying the chat template", s);
}

void cli_chat_free(cli_chat *c) {
  free(c->tpl);
  free(c->tools);
  free(c->vars_json);
  c->tpl = c->tools = c->vars_json = NULL;
}
