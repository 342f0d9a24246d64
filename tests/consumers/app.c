/* A program outside the source tree that uses libxpuinfer as an installed library: prints the library's version,
 * then a greedy continuation of a prompt on the CPU.   app MODEL_DIR PROMPT N
 * It defines functions with the names of libxpuinfer internals (tok_decode, hf_home, xpu_alloc): linking the
 * static archive must not collide with them, because only the xpi_ API is global in it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xpuinfer.h>

int tok_decode(void) { return 7; }
char *hf_home(void) { return NULL; }
void *xpu_alloc(size_t n) { return malloc(n); }

static int on_token(const xpi_token_event *ev, void *user) {
  (void)user;
  fwrite(ev->text, 1, ev->text_len, stdout);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) return fprintf(stderr, "usage: app MODEL_DIR PROMPT N\n"), 2;
  printf("xpi_version %s header %s\n", xpi_version(), XPI_VERSION_STRING);
  if (strcmp(xpi_version(), XPI_VERSION_STRING)) return fprintf(stderr, "header and library versions differ\n"), 1;
  free(xpu_alloc((size_t)tok_decode()));
  if (hf_home()) return 1;

  xpi_model_options mo;
  xpi_model_options_default(&mo);
  mo.device = "cpu";
  xpi_model *model;
  if (xpi_model_load(argv[1], &mo, &model) != XPI_OK) return fprintf(stderr, "load: %s\n", xpi_last_error()), 1;
  const xpi_tokenizer *tok = xpi_model_tokenizer(model);
  int32_t ids[64];
  size_t n = 0;
  if (xpi_tokenize(tok, argv[2], strlen(argv[2]), 1, ids, 64, &n) != XPI_OK)
    return fprintf(stderr, "tokenize: %s\n", xpi_last_error()), 1;
  xpi_request *req;
  if (xpi_request_create(model, NULL, &req) != XPI_OK) return fprintf(stderr, "request: %s\n", xpi_last_error()), 1;
  xpi_gen_options go;
  xpi_gen_options_default(&go);
  go.greedy = 1;
  go.max_new_tokens = atoi(argv[3]);
  xpi_gen_result res = {.struct_size = sizeof res};
  fputs(argv[2], stdout);
  xpi_status s = xpi_request_generate(req, ids, n, &go, on_token, NULL, &res);
  printf("\n");
  if (s != XPI_OK) return fprintf(stderr, "generate: %s\n", xpi_last_error()), 1;
  xpi_request_free(req);
  xpi_model_free(model);
  return 0;
}
