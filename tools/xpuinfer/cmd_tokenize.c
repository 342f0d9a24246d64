/* xpuinfer tokenize / detokenize: text <-> token ids with only the tokenizer files of a model folder. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void tokenize_help(FILE *f) {
  fprintf(f,
          "usage: xpuinfer tokenize -m DIR -p TEXT [--add-special]\n\n"
          "Prints the token ids of TEXT as a JSON array, like tokenizers' encode(TEXT, add_special_tokens=False).\n\n"
          "  -m, --model DIR          folder with tokenizer.json (and tokenizer_config.json)\n"
          "  -p, --prompt TEXT        the text (UTF-8); - reads it from stdin (trailing newlines removed)\n"
          "      --add-special        apply the post-processor (BOS for Llama), as add_special_tokens=True\n"
          CLI_COMMON_HELP);
}

static void detokenize_help(FILE *f) {
  fprintf(f,
          "usage: xpuinfer detokenize -m DIR [--skip-special] ID...\n\n"
          "Prints the text of the token ids, like tokenizers' decode(ids).\n\n"
          "  -m, --model DIR          folder with tokenizer.json\n"
          "      --skip-special       drop special tokens, as skip_special_tokens=True\n"
          CLI_COMMON_HELP);
}

int cmd_tokenize(int argc, char **argv) {
  const char *dir = NULL, *text = NULL;
  int add_special = 0;
  const cli_opt t[] = {
    {"-m", "--model", CLI_STR, &dir, 0, 0, 0, 0, 0, NULL},
    {"-p", "--prompt", CLI_STR, &text, 0, 0, 0, 0, 0, NULL},
    {NULL, "--add-special", CLI_FLAG, &add_special, 0, 0, 0, 0, 0, NULL},
  };
  int rc = cli_parse("tokenize", argc, argv, t, sizeof t / sizeof t[0], NULL, 0, NULL);
  if (rc == CLI_HELP) {
    tokenize_help(stdout);
    return 0;
  }
  if (rc) return rc;
  if (!dir) return cli_usage_error("tokenize", "-m DIR is required");
  if (!text) return cli_usage_error("tokenize", "-p TEXT is required");
  char *from_stdin = NULL;
  if (!strcmp(text, "-")) {
    if ((rc = cli_read_stdin_text("tokenize", &from_stdin))) return rc;
    text = from_stdin;
  }
  xpi_tokenizer *tok = NULL;
  xpi_status s = xpi_tokenizer_load(dir, &tok);
  if (s) {
    free(from_stdin);
    return cli_fail("tokenize", "loading the tokenizer", s);
  }
  size_t n = 0, len = strlen(text);
  s = xpi_tokenize(tok, text, len, add_special, NULL, 0, &n);
  int32_t *ids = NULL;
  if (s == XPI_ERR_BUFFER_TOO_SMALL) {
    ids = malloc((n ? n : 1) * sizeof *ids);
    s = ids ? xpi_tokenize(tok, text, len, add_special, ids, n, &n) : XPI_ERR_OUT_OF_MEMORY;
  }
  if (s) rc = cli_fail("tokenize", "tokenizing", s);
  else {
    printf("[");
    for (size_t i = 0; i < n; i++) printf(i ? ", %d" : "%d", ids[i]);
    printf("]\n");
  }
  free(ids);
  free(from_stdin);
  xpi_tokenizer_free(tok);
  return rc;
}

int cmd_detokenize(int argc, char **argv) {
  const char *dir = NULL;
  int skip = 0;
  const char **args = calloc((size_t)argc + 1, sizeof *args);
  int32_t *ids = calloc((size_t)argc + 1, sizeof *ids);
  if (!ids || !args) {
    free(ids);
    free(args);
    fprintf(stderr, "xpuinfer detokenize: out of memory\n");
    return 1;
  }
  const cli_opt t[] = {
    {"-m", "--model", CLI_STR, &dir, 0, 0, 0, 0, 0, NULL},
    {NULL, "--skip-special", CLI_FLAG, &skip, 0, 0, 0, 0, 0, NULL},
  };
  size_t n = 0;
  int rc = cli_parse("detokenize", argc, argv, t, sizeof t / sizeof t[0], args, (size_t)argc, &n);
  if (rc == CLI_HELP) detokenize_help(stdout);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    long long v;
    if (cli_parse_int(args[i], 0, INT32_MAX, &v))
      rc = cli_usage_error("detokenize", "'%s' is not a token id (a non-negative integer)", args[i]);
    else ids[i] = (int32_t)v;
  }
  if (rc == 0 && !dir) rc = cli_usage_error("detokenize", "-m DIR is required");
  free(args);
  if (rc) {
    free(ids);
    return rc == CLI_HELP ? 0 : rc;
  }
  xpi_tokenizer *tok = NULL;
  xpi_status s = xpi_tokenizer_load(dir, &tok);
  if (s) {
    free(ids);
    return cli_fail("detokenize", "loading the tokenizer", s);
  }
  size_t len = 0;
  char *text = NULL;
  s = xpi_detokenize(tok, ids, n, skip, NULL, 0, &len);
  if (s == XPI_ERR_BUFFER_TOO_SMALL) {
    text = malloc(len + 1);
    s = text ? xpi_detokenize(tok, ids, n, skip, text, len + 1, &len) : XPI_ERR_OUT_OF_MEMORY;
  }
  if (s) rc = cli_fail("detokenize", "detokenizing", s);
  else {
    fwrite(text, 1, len, stdout);
    fputc('\n', stdout);
  }
  free(text);
  free(ids);
  xpi_tokenizer_free(tok);
  return rc;
}
