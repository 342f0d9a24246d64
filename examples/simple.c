/* simple: load a model, generate a continuation of a prompt, stream it to stdout.
 *   example_simple MODEL_DIR "The meaning of life is" [max_new_tokens] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpuinfer.h"

static int on_token(const xpi_token_event *ev, void *user) {
  (void)user;
  fwrite(ev->text, 1, ev->text_len, stdout);
  fflush(stdout);
  return 0; /* nonzero would stop generation */
}

static int fail(const char *what) {
  fprintf(stderr, "%s: %s\n", what, xpi_last_error());
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL_DIR PROMPT [MAX_NEW_TOKENS]\n", argv[0]);
    return 2;
  }
  xpi_model_options mo;
  xpi_model_options_default(&mo); /* device "auto": first XPU, else the CPU */
  xpi_model *model;
  if (xpi_model_load(argv[1], &mo, &model) != XPI_OK) return fail("load");

  /* Tokenize as transformers' tokenizer(prompt) does (BOS where the model wants one). */
  const xpi_tokenizer *tok = xpi_model_tokenizer(model);
  size_t n = 0;
  xpi_tokenize(tok, argv[2], strlen(argv[2]), 1, NULL, 0, &n); /* size query */
  int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
  if (!ids || xpi_tokenize(tok, argv[2], strlen(argv[2]), 1, ids, n, &n) != XPI_OK) return fail("tokenize");

  xpi_request *req;
  if (xpi_request_create(model, NULL, &req) != XPI_OK) return fail("request");
  xpi_gen_options go;
  xpi_gen_options_from_model(model, &go); /* generation_config.json's defaults */
  if (argc > 3) go.max_new_tokens = atoi(argv[3]);

  xpi_gen_result res = {.struct_size = sizeof res};
  fputs(argv[2], stdout);
  xpi_status s = xpi_request_generate(req, ids, n, &go, on_token, NULL, &res);
  printf("\n");
  if (s != XPI_OK) return fail("generate");
  fprintf(stderr, "%d tokens, %.1f tok/s\n", res.n_generated,
          res.generate_seconds > 0 ? (res.n_generated - 1) / res.generate_seconds : 0.0);

  xpi_request_free(req);
  free(ids);
  xpi_model_free(model);
  return 0;
}
