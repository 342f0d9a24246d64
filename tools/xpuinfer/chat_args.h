/* Chat-template options shared by `xpuinfer chat-template` and `xpuinfer generate` (chat_args.c). */
#ifndef XPI_CLI_CHAT_ARGS_H
#define XPI_CLI_CHAT_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include "xpuinfer.h"

typedef struct cli_chat {
  const char *messages_file, *input_file, *tools_file, *template_file, *template_name;
  const char *vars[64]; size_t n_vars;
  int no_think;
  int64_t now;
  /* loaded by cli_chat_load */
  char *messages; size_t messages_len; /* --messages / --input file: a JSON array of messages or a conversation */
  char *tools, *tpl, *vars_json;
} cli_chat;

/* Consumes argv[*i] (and its value) if it is a chat option: 1; not one: 0; a usage error: minus the exit code. */
int cli_chat_arg(cli_chat *c, const char *cmd, int argc, char **argv, int *i);
/* Reads the files and checks each --var; 0, or the exit code (the message printed). */
int cli_chat_load(cli_chat *c, const char *cmd);
/* A one-turn conversation (optional system message, then the user's prompt) as a JSON array; malloc'd. */
char *cli_chat_user_turn(const char *system, const char *prompt);
/* Renders conversation (JSON) with the tokenizer's template (or --chat-template); *text malloc'd. */
xpi_status cli_chat_render(const xpi_tokenizer *tok, const cli_chat *c, const char *conversation, int gen,
                           char **text, size_t *len);
void cli_chat_free(cli_chat *c);
/* The whole file ("-": stdin), NUL-terminated, malloc'd; NULL after printing why. */
char *cli_read_file(const char *cmd, const char *path, size_t *len);

#endif
