/* Chat-template options shared by `generate`, `chat` and `chat-template` (chat_args.c): which template
 * (--chat-template FILE, --template-name), the tools (--tools FILE), extra variables (--var NAME=JSON,
 * --no-think) and the clock (--now); the files read and the variables checked before anything loads, then the
 * render through the public API. */
#ifndef XPI_CLI_CHAT_ARGS_H
#define XPI_CLI_CHAT_ARGS_H

#include "cli.h"

typedef struct cli_chat {
  const char *template_file, *tools_file, *template_name;
  const char *var_v[64];
  cli_strs vars;            /* NAME=JSON */
  long long now;
  /* cli_chat_load */
  char *tpl, *tools, *vars_json;
} cli_chat;

#define CLI_CHAT_MAX_OPTS 5
void cli_chat_init(cli_chat *c);
/* Writes the options into out[0..CLI_CHAT_MAX_OPTS); returns how many. */
size_t cli_chat_table(cli_chat *c, cli_opt *out);
/* Whether any of them was given. */
int cli_chat_given(const cli_chat *c);

#define CLI_CHAT_HELP                                                                                         \
  "      --chat-template FILE render with this Jinja template instead of the model's\n"                       \
  "      --template-name NAME with several named templates (tokenizer_config.json): which one\n"             \
  "      --tools FILE         JSON array of tools ({\"type\": \"function\", \"function\": {...}}) for the template\n" \
  "      --var NAME=JSON      a template variable (repeatable), e.g. --var reasoning_effort='\"low\"'\n"     \
  "      --now SECONDS        strftime_now's clock, seconds since the epoch (default: now)\n"

/* Reads the files and checks every --var (each on its own, so a mistake names it); no_think adds
 * enable_thinking=false. Returns 0, 1 (a file) or 2 (a --var that is not JSON) after the message. */
int cli_chat_load(const char *cmd, cli_chat *c, int no_think);
/* Renders with the tokenizer's template (or --chat-template) either structured messages or, when msgs is NULL,
 * a JSON conversation (an array of messages or {"messages": ..., ...}). *text is malloc'd. 0, or 1 after the
 * message. */
int cli_chat_render(const char *cmd, const xpi_tokenizer *tok, const cli_chat *c, const xpi_chat_message *msgs,
                    size_t n, const char *conversation, int add_generation_prompt, char **text, size_t *len);
/* The same, returning the status (xpi_last_error() says why) instead of printing it. */
xpi_status cli_chat_render_status(const xpi_tokenizer *tok, const cli_chat *c, const xpi_chat_message *msgs,
                                  size_t n, const char *conversation, int add_generation_prompt, char **text,
                                  size_t *len);
void cli_chat_free(cli_chat *c);

/* A whole file ("-": stdin), NUL-terminated, malloc'd; NULL after printing why. */
char *cli_read_file(const char *cmd, const char *what, const char *path, size_t *len);

#endif
