/* chat: render a conversation with a model's own chat template (the Jinja template of its tokenizer_config.json),
 * exactly as transformers' apply_chat_template does, and print the prompt text.
 *   example_chat TOKENIZER_DIR [USER_MESSAGE] */
#include <stdio.h>
#include <stdlib.h>

#include "xpuinfer.h"

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s TOKENIZER_DIR [USER_MESSAGE]\n", argv[0]);
    return 2;
  }
  xpi_tokenizer *tok;
  if (xpi_tokenizer_load(argv[1], &tok) != XPI_OK) return fprintf(stderr, "load: %s\n", xpi_last_error()), 1;

  xpi_chat_message msgs[] = {
      {.role = "system", .content = "You are a concise assistant."},
      {.role = "user", .content = argc > 2 ? argv[2] : "What is an XPU?"},
  };
  xpi_chat_options opts;
  xpi_chat_options_default(&opts);             /* add_generation_prompt = 1 */
  opts.variables_json = "{\"enable_thinking\": false}";

  size_t len = 0;                              /* size query, then render */
  xpi_apply_chat_template(tok, msgs, 2, &opts, NULL, 0, &len);
  char *text = malloc(len + 1);
  xpi_status s = text ? xpi_apply_chat_template(tok, msgs, 2, &opts, text, len + 1, &len) : XPI_ERR_OUT_OF_MEMORY;
  if (s == XPI_OK) fwrite(text, 1, len, stdout);
  else fprintf(stderr, "chat template: %s\n", xpi_last_error());
  free(text);
  xpi_tokenizer_free(tok);
  return s == XPI_OK ? 0 : 1;
}
