/* xpuinfer tokenize / detokenize: text <-> token ids with only the tokenizer files of a model folder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void tokenize_help(FILE *f) {
  fprintf(f,
          "usage: xpuinfer tokenize -m DIR -p TEXT [--add-special]\n\n"
          "Prints the token ids of TEXT as a JSON array, like tokenizers' encode(TEXT, add_special_tokens=False).\n\n"
          "  -m, --model DIR    folder with tokenizer.json (and tokenizer_config.json)\n"
          "  -p, --prompt TEXT  the text (UTF-8)\n"
          "  --add-special      apply the post-processor (BOS for Llama), as add_special_tokens=True\n"
          "  -h, --help         this help\n");
}

static void detokenize_help(FILE *f) {
  fprintf(f,
          "usage: xpuinfer detokenize -m DIR [--skip-special] ID...\n\n"
          "Prints the text of the token ids, like tokenizers' decode(ids).\n\n"
          "  -m, --model DIR    folder with tokenizer.json\n"
          "  --skip-special     drop special tokens, as skip_special_tokens=True\n"
          "  -h, --help         this help\n");
}

int cmd_tokenize(int argc, char **argv) {
  const char *dir = NULL, *text = NULL;
  int add_special = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { tokenize_help(stdout); return 0; }
    if (!strcmp(a, "--add-special")) add_special = 1;
    else if (!strcmp(a, "-m") || !strcmp(a, "--model") || !strcmp(a, "-p") || !strcmp(a, "--prompt")) {
      if (i + 1 >= argc) return cli_usage_error("tokenize", "%s needs a value", a);
      if (a[1] == 'm' || a[2] == 'm') dir = argv[++i];
      else text = argv[++i];
    } else {
      return cli_usage_error("tokenize", "unknown argument '%s'", a);
    }
  }
  if (!dir) return cli_usage_error("tokenize", "-m DIR is required");
  if (!text) return cli_usage_error("tokenize", "-p TEXT is required");
  xpi_tokenizer *tok = NULL;
  xpi_status s = xpi_tokenizer_load(dir, &tok);
  if (s) return cli_fail("tokenize", "loading the tokenizer", s);
  size_t n = 0, len = strlen(text);
  s = xpi_tokenize(tok, text, len, add_special, NULL, 0, &n);
  int32_t *ids = NULL;
  if (s == XPI_ERR_BUFFER_TOO_SMALL) {
    ids = malloc((n ? n : 1) * sizeof *ids);
    s = ids ? xpi_tokenize(tok, text, len, add_special, ids, n, &n) : XPI_ERR_OUT_OF_MEMORY;
  }
  int rc = 0;
  if (s) rc = cli_fail("tokenize", "tokenizing", s);
  else {
    printf("[");
    for (size_t i = 0; i < n; i++) printf(i ? ", %d" : "%d", ids[i]);
    printf("]\n");
  }
  free(ids);
  xpi_tokenizer_free(tok);
  return rc;
}

int cmd_detokenize(int argc, char **argv) {
  const char *dir = NULL;
  int skip = 0;
  int32_t *ids = calloc((size_t)argc + 1, sizeof *ids);
  size_t n = 0;
  if (!ids) { fprintf(stderr, "xpuinfer detokenize: out of memory\n"); return 1; }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { free(ids); detokenize_help(stdout); return 0; }
    if (!strcmp(a, "--skip-special")) skip = 1;
    else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
      if (i + 1 >= argc) { free(ids); return cli_usage_error("detokenize", "%s needs a value", a); }
      dir = argv[++i];
    } else {
      long long v;
      if (cli_parse_int(a, 0, INT32_MAX, &v)) {
        free(ids);
        return cli_usage_error("detokenize", "'%s' is not a token id (a non-negative integer)", a);
      }
      ids[n++] = (int32_t)v;
    }
  }
  if (!dir) { free(ids); return cli_usage_error("detokenize", "-m DIR is required"); }
  xpi_tokenizer *tok = NULL;
  xpi_status s = xpi_tokenizer_load(dir, &tok);
  if (s) { free(ids); return cli_fail("detokenize", "loading the tokenizer", s); }
  size_t len = 0;
  char *text = NULL;
  s = xpi_detokenize(tok, ids, n, skip, NULL, 0, &len);
  if (s == XPI_ERR_BUFFER_TOO_SMALL) {
    text = malloc(len + 1);
    s = text ? xpi_detokenize(tok, ids, n, skip, text, len + 1, &len) : XPI_ERR_OUT_OF_MEMORY;
  }
  int rc = 0;
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
