/* The OpenAI request parser of `xpuinfer serve` (tools/xpuinfer/serve/serve_request.c) on arbitrary bytes: the
 * first byte picks the endpoint (even: chat completions, odd: completions), the rest is the request body. Parse,
 * then render the prompt with the Qwen3 chat template and tokenizer (tests/data/tokenizers/qwen3), then derive
 * the generation options. Properties: no crash, leak or undefined behaviour on any input; a refusal is a 4xx/5xx
 * with a message; an accepted request has a non-empty prompt and options in range. A libFuzzer target
 * (LLVMFuzzerTestOneInput), replayed over its seed corpus by serve/fuzz_serve_request_corpus in every build. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

#ifndef XPI_TEST_DATA_DIR
#define XPI_TEST_DATA_DIR "tests/data"
#endif

#define FUZZ_CHECK(cond, ...)                                                                                    \
  do {                                                                                                         \
    if (!(cond)) {                                                                                             \
      fprintf(stderr, "fuzz_serve_request: %s:%d: property failed: %s: ", __FILE__, __LINE__, #cond);          \
      fprintf(stderr, __VA_ARGS__);                                                                            \
      fprintf(stderr, "\n");                                                                                   \
      abort();                                                                                                 \
    }                                                                                                          \
  } while (0)

static xpi_tokenizer *g_tok;

static void load_tokenizer(void) {
  if (g_tok) return;
  const char *dir = getenv("XPI_TEST_DATA");
  char path[4096];
  snprintf(path, sizeof path, "%s/tokenizers/qwen3", dir ? dir : XPI_TEST_DATA_DIR);
  FUZZ_CHECK(xpi_tokenizer_load(path, &g_tok) == XPI_OK, "loading %s: %s", path, xpi_last_error());
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  load_tokenizer();
  if (size == 0) return 0;
  const oai_kind kind = data[0] & 1 ? OAI_COMPLETION : OAI_CHAT;
  oai_request r;
  serve_error e;
  memset(&e, 0, sizeof e);
  if (oai_parse(kind, (const char *)data + 1, size - 1, &r, &e)) {
    FUZZ_CHECK(e.status >= 400 && e.status < 600 && e.message[0] && e.type, "refusal %d '%s'", e.status, e.message);
    return 0;
  }
  int32_t *ids = NULL;
  size_t n = 0;
  if (oai_prompt_ids(&r, g_tok, NULL, &ids, &n, &e) == 0) {
    FUZZ_CHECK(ids && n > 0, "an accepted prompt without ids");
    xpi_gen_options d, go;
    xpi_gen_options_default(&d);
    oai_gen_options(&r, &d, &go);
    FUZZ_CHECK(go.logprobs >= 0 && go.logprobs <= 20 && go.top_p >= 0 && go.top_p <= 1 && go.n_stop_strings == 0,
               "options out of range");
    free(ids);
  } else {
    FUZZ_CHECK(e.status >= 400 && e.status < 600 && e.message[0], "prompt refusal %d '%s'", e.status, e.message);
  }
  oai_request_free(&r);
  return 0;
}

#ifdef FUZZ_REPLAY_MAIN
/* Replays every file named on the command line (or listed in a folder) through the harness. */
#include <dirent.h>

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  uint8_t *buf = NULL;
  size_t n = 0, cap = 0;
  int c;
  while ((c = fgetc(f)) != EOF) {
    if (n == cap) {
      cap = cap ? cap * 2 : 4096;
      uint8_t *nb = realloc(buf, cap);
      if (!nb) abort();
      buf = nb;
    }
    buf[n++] = (uint8_t)c;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf ? buf : (const uint8_t *)"", n);
  free(buf);
  return 1;
}

int main(int argc, char **argv) {
  int count = 0;
  for (int i = 1; i < argc; i++) {
    DIR *d = opendir(argv[i]);
    if (!d) {
      count += replay_file(argv[i]);
      continue;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
      if (e->d_name[0] == '.') continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
      count += replay_file(path);
    }
    closedir(d);
  }
  xpi_tokenizer_free(g_tok);
  printf("replayed %d inputs\n", count);
  return count ? 0 : 1;
}
#endif
