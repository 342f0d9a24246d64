/* xpuinfer chat-template: render a conversation with a chat template and print the text exactly (no newline added),
 * as transformers' tokenizer.apply_chat_template(..., tokenize=False) returns it. Public API only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_args.h"
#include "cli.h"

#define CMD "chat-template"

static void help(void) {
  printf(
      "usage: xpuinfer chat-template (--template FILE | -m DIR) --input CONV.json [options]\n"
      "\n"
      "Renders a conversation with a Jinja chat template, as transformers' apply_chat_template(tokenize=False),\n"
      "and prints the text exactly (no newline added).\n"
      "\n"
      "  -m, --model DIR        folder with tokenizer.json + tokenizer_config.json (or chat_template.jinja): its\n"
      "                         chat template, and its special tokens (bos_token, eos_token, unk_token, pad_token)\n"
      "                         as default variables\n"
      "      --template FILE    the Jinja template to render (instead of the model's)\n"
      "      --input FILE       the conversation ('-': stdin): a JSON array of messages, or an object\n"
      "                         {\"messages\": [...], \"tools\": [...], \"documents\": [...], \"add_generation_prompt\": bool,\n"
      "                         ...} whose every other key is a template variable (enable_thinking, date_string, ...)\n"
      "      --tools FILE       JSON array of tools (overrides the conversation's)\n"
      "      --var NAME=JSON    a template variable (repeatable; overrides the conversation's), e.g.\n"
      "                         --var enable_thinking=false --var 'date_string=\"26 Jul 2024\"'\n"
      "      --template-name N  with several named templates in tokenizer_config.json: which one\n"
      "      --now SECONDS      strftime_now's clock (seconds since the epoch, local time); default: now\n"
      "\n"
      "Without \"add_generation_prompt\" in the conversation the assistant's turn header is added (as generation\n"
      "needs); tools and documents are None unless given, as in transformers.\n");
}

int cmd_chat_template(int argc, char **argv) {
  const char *dir = NULL;
  cli_chat ca = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { help(); return 0; }
    int r = cli_chat_arg(&ca, CMD, argc, argv, &i);
    if (r < 0) return -r;
    if (r) continue;
    if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
      if (i + 1 >= argc) return cli_usage_error(CMD, "%s needs a value", a);
      dir = argv[++i];
    } else {
      return cli_usage_error(CMD, "unknown option '%s'", a);
    }
  }
  if (!dir && !ca.template_file) return cli_usage_error(CMD, "give --template FILE or -m DIR");
  if (!ca.input_file) return cli_usage_error(CMD, "--input CONV.json is required");
  if (ca.messages_file) return cli_usage_error(CMD, "use --input for the conversation");
  int rc = cli_chat_load(&ca, CMD);
  xpi_tokenizer *tok = NULL;
  if (!rc && dir) {
    xpi_status s = xpi_tokenizer_load(dir, &tok);
    if (s) rc = cli_fail(CMD, "loading the tokenizer", s);
  }
  if (!rc) {
    char *text = NULL;
    size_t len = 0;
    xpi_status s = cli_chat_render(tok, &ca, ca.messages, 1, &text, &len);
    if (s) rc = cli_fail(CMD, "rendering", s);
    else if (fwrite(text, 1, len, stdout) != len || fflush(stdout)) rc = 1;
    free(text);
  }
  xpi_tokenizer_free(tok);
  cli_chat_free(&ca);
  return rc;
}
