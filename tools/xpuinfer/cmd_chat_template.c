/* xpuinfer chat-template: render a conversation with a chat template and print the text exactly (no newline added),
 * as transformers' tokenizer.apply_chat_template(..., tokenize=False) returns it. Public API only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_args.h"
#include "cli.h"

#define CMD "chat-template"

static void help(void) {
  printf("usage: xpuinfer chat-template (--template FILE | -m DIR) --input CONV.json [options]\n"
         "\n"
         "Renders a conversation with a Jinja chat template, as transformers' apply_chat_template(tokenize=False),\n"
         "and prints the text exactly (no newline added).\n"
         "\n"
         "  -m, --model DIR          folder with tokenizer.json and tokenizer_config.json (or chat_template.jinja):\n"
         "                           its chat template, and its special tokens (bos_token, eos_token, unk_token,\n"
         "                           pad_token) as default variables\n"
         "      --template FILE      the Jinja template to render (instead of the model's; = --chat-template)\n"
         "      --input FILE         the conversation (- reads stdin): a JSON array of messages, or an object\n"
         "                           {\"messages\": [...], \"tools\": [...], \"documents\": [...],\n"
         "                           \"add_generation_prompt\": bool, ...} whose every other key is a template\n"
         "                           variable (enable_thinking, date_string, bos_token, ...)\n"
         "      --tools FILE         JSON array of tools (overrides the conversation's)\n"
         "      --var NAME=JSON      a template variable (repeatable; overrides the conversation's), e.g.\n"
         "                           --var enable_thinking=false --var 'date_string=\"26 Jul 2024\"'\n"
         "      --template-name NAME with several named templates in tokenizer_config.json: which one\n"
         "      --now SECONDS        strftime_now's clock, seconds since the epoch (local time); default: now\n"
         CLI_COMMON_HELP
         "\n"
         "Without \"add_generation_prompt\" in the conversation the assistant's turn header is added (as generation\n"
         "needs); tools and documents are None unless given, as in transformers. Exit status: 0; 1 when the\n"
         "template refuses the conversation (its message on stderr) or a file cannot be read; 2 for a bad option.\n");
}

int cmd_chat_template(int argc, char **argv) {
  const char *dir = NULL, *input = NULL;
  cli_chat ca;
  cli_chat_init(&ca);
  cli_opt t[CLI_CHAT_MAX_OPTS + 3];
  size_t n = cli_chat_table(&ca, t);
  t[n++] = (cli_opt){"-m", "--model", CLI_STR, &dir, 0, 0, 0, 0, 0, NULL};
  t[n++] = (cli_opt){NULL, "--template", CLI_STR, &ca.template_file, 0, 0, 0, 0, 0, NULL};
  t[n++] = (cli_opt){NULL, "--input", CLI_STR, &input, 0, 0, 0, 0, 0, NULL};
  int rc = cli_parse(CMD, argc, argv, t, n, NULL, 0, NULL);
  if (rc == CLI_HELP) {
    help();
    return 0;
  }
  if (rc) return rc;
  if (!dir && !ca.template_file) return cli_usage_error(CMD, "give --template FILE or -m DIR");
  if (!input) return cli_usage_error(CMD, "--input CONV.json is required");
  char *conv = NULL;
  xpi_tokenizer *tok = NULL;
  rc = cli_chat_load(CMD, &ca, 0);
  if (!rc && !(conv = cli_read_file(CMD, "--input", input, NULL))) rc = 1;
  if (!rc && dir) {
    xpi_status s = xpi_tokenizer_load(dir, &tok);
    if (s) rc = cli_fail(CMD, "loading the tokenizer", s);
  }
  if (!rc) {
    char *text = NULL;
    size_t len = 0;
    rc = cli_chat_render(CMD, tok, &ca, NULL, 0, conv, 1, &text, &len);
    if (!rc && (fwrite(text, 1, len, stdout) != len || fflush(stdout))) rc = 1;
    free(text);
  }
  free(conv);
  xpi_tokenizer_free(tok);
  cli_chat_free(&ca);
  return rc;
}
