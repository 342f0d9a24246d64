/* xpuinfer: command-line client of libxpuinfer. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct { const char *name; int (*fn)(int, char **); const char *help; } subcommand;

static const subcommand k_cmds[] = {
  {"generate", cmd_generate, "generate text from a prompt (or one prompt per line of a file)"},
  {"chat", cmd_chat, "chat with a model through its chat template (turns from the terminal or a pipe)"},
  {"chat-template", cmd_chat_template, "render a conversation with a chat template (as apply_chat_template)"},
  {"tokenize", cmd_tokenize, "print the token ids of a text as a JSON array"},
  {"detokenize", cmd_detokenize, "print the text of token ids"},
  {"devices", cmd_devices, "list Level Zero GPUs (XPUs) and the CPU"},
  {"download", cmd_download, "download a model from the Hugging Face Hub into the cache"},
  {"bench", cmd_bench, "measure prompt and generation speed"},
  {"serve", cmd_serve, "serve the OpenAI API (chat/completions, completions) over HTTP"},
};

static void usage(FILE *f) {
  fprintf(f, "usage: xpuinfer <command> [options]   (xpuinfer <command> --help for details)\n\ncommands:\n");
  for (size_t i = 0; i < sizeof k_cmds / sizeof k_cmds[0]; i++) fprintf(f, "  %-13s %s\n", k_cmds[i].name, k_cmds[i].help);
  fprintf(f, "\n  -V, --version  print the library version\n\nlibxpuinfer %s\n", xpi_version());
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
    printf("libxpuinfer %s\n", xpi_version());
    return 0;
  }
  for (size_t i = 0; i < sizeof k_cmds / sizeof k_cmds[0]; i++)
    if (!strcmp(argv[1], k_cmds[i].name)) return k_cmds[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "xpuinfer: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
