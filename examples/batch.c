/* batch: generate continuations of several prompts at once through one engine (continuous batching), then
 * print them in order.
 *   example_batch MODEL_DIR "prompt one" "prompt two" ... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpuinfer.h"

typedef struct output {
  char text[4096];
  size_t len;
  int done;
  xpi_seq_result res;
} output;

/* Called on the stepping thread: every token of the sequence, then once with ev->done. */
static int on_event(const xpi_seq_event *ev, void *user) {
  output *o = user;
  if (ev->token) {
    size_t n = ev->token->text_len < sizeof o->text - 1 - o->len ? ev->token->text_len : sizeof o->text - 1 - o->len;
    memcpy(o->text + o->len, ev->token->text, n);
    o->len += n;
    o->text[o->len] = 0;
  } else {
    o->res = *ev->done;
    o->done = 1;
  }
  return 0; /* nonzero would end this sequence */
}

static int fail(const char *what) {
  fprintf(stderr, "%s: %s\n", what, xpi_last_error());
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL_DIR PROMPT...\n", argv[0]);
    return 2;
  }
  xpi_model_options mo;
  xpi_model_options_default(&mo);
  xpi_model *model;
  if (xpi_model_load(argv[1], &mo, &model) != XPI_OK) return fail("load");
  xpi_engine_options eo;
  xpi_engine_options_default(&eo); /* KV pool from free memory, up to 64 sequences at once */
  xpi_engine *engine;
  if (xpi_engine_create(model, &eo, &engine) != XPI_OK) return fail("engine");
  xpi_gen_options go;
  xpi_gen_options_from_model(model, &go);
  go.max_new_tokens = 16;

  const xpi_tokenizer *tok = xpi_model_tokenizer(model);
  int n_prompts = argc - 2;
  output *out = calloc((size_t)n_prompts, sizeof *out);
  for (int i = 0; i < n_prompts; i++) { /* every prompt queued at once */
    const char *p = argv[i + 2];
    size_t n = 0;
    xpi_tokenize(tok, p, strlen(p), 1, NULL, 0, &n); /* size query */
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids || xpi_tokenize(tok, p, strlen(p), 1, ids, n, &n) != XPI_OK) return fail("tokenize");
    if (xpi_engine_submit(engine, ids, n, &go, on_event, &out[i], NULL) != XPI_OK) return fail("submit");
    free(ids); /* the engine keeps its own copy */
  }
  int32_t pending = 1;
  while (pending > 0) /* each step decodes one token of every running sequence, plus prompt chunks */
    if (xpi_engine_step(engine, &pending) != XPI_OK) return fail("step");

  for (int i = 0; i < n_prompts; i++)
    printf("%s%s\n", argv[i + 2], out[i].res.status == XPI_OK ? out[i].text : " [failed]");
  xpi_engine_stats st = {.struct_size = sizeof st};
  xpi_engine_get_stats(engine, &st);
  fprintf(stderr, "%d prompts: %llu tokens generated in %llu steps\n", n_prompts,
          (unsigned long long)st.completion_tokens, (unsigned long long)st.steps);
  free(out);
  xpi_engine_free(engine);
  xpi_model_free(model);
  return 0;
}
