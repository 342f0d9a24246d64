/* The OpenAI request parser of `xpuinfer serve` (tools/xpuinfer/serve/serve_request.c) on arbitrary bytes: the
 * first byte picks the endpoint (bit 0 set: completions, else chat completions) and whether the server has
 * default template variables (bit 1: --no-think's enable_thinking=false, merged under the request's
 * chat_template_kwargs); the rest is the request body. Parse, then render the prompt with the Qwen3 chat template
 * and tokenizer (tests/data/tokenizers/qwen3), then derive the generation options. Properties: no crash, leak or
 * undefined behaviour on any input; a refusal is a 4xx/5xx with a message; an accepted request has a non-empty
 * prompt and options in range. A libFuzzer target (LLVMFuzzerTestOneInput; fuzz/fuzz_serve_request in the
 * fuzzing build), replayed over its seed corpus by serve/fuzz_serve_request_corpus in every build. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "serve.h"

#ifndef XPI_TEST_DATA_DIR
#define XPI_TEST_DATA_DIR "tests/data"
#endif

static xpi_tokenizer *g_tok;

static void free_tokenizer(void) { xpi_tokenizer_free(g_tok); }

static void load_tokenizer(void) {
  if (g_tok) return;
  const char *dir = getenv("XPI_TEST_DATA");
  char path[4096];
  snprintf(path, sizeof path, "%s/tokenizers/qwen3", dir ? dir : XPI_TEST_DATA_DIR);
  FUZZ_ASSERT(xpi_tokenizer_load(path, &g_tok) == XPI_OK, "loading %s: %s", path, xpi_last_error());
  atexit(free_tokenizer);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  load_tokenizer();
  if (size == 0) return 0;
  const oai_kind kind = data[0] & 1 ? OAI_COMPLETION : OAI_CHAT;
  oai_request r;
  serve_error e;
  memset(&e, 0, sizeof e);
  if (oai_parse(kind, (const char *)data + 1, size - 1, &r, &e)) {
    FUZZ_ASSERT(e.status >= 400 && e.status < 600 && e.message[0] && e.type, "refusal %d '%s'", e.status, e.message);
    return 0;
  }
  int32_t *ids = NULL;
  size_t n = 0;
  cli_chat chat;
  cli_chat_init(&chat);
  char no_think[] = "{\"enable_thinking\": false}";
  if (data[0] & 2) chat.vars_json = no_think;
  if (oai_prompt_ids(&r, g_tok, &chat, &ids, &n, &e) == 0) {
    FUZZ_ASSERT(ids && n > 0, "an accepted prompt without ids");
    xpi_gen_options d, go;
    xpi_gen_options_default(&d);
    oai_gen_options(&r, &d, &go);
    FUZZ_ASSERT(go.logprobs >= 0 && go.logprobs <= 20 && go.top_p >= 0 && go.top_p <= 1 && go.skip_special &&
                 go.n_stop_strings == r.n_stops && go.n_stop_strings <= OAI_MAX_STOPS,
               "options out of range");
    free(ids);
  } else {
    FUZZ_ASSERT(e.status >= 400 && e.status < 600 && e.message[0], "prompt refusal %d '%s'", e.status, e.message);
  }
  oai_request_free(&r);
  return 0;
}

#ifdef FUZZ_REPLAY_MAIN
#include "fuzz_replay.h"
#endif
