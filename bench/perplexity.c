/* Per-token NLL and argmax of a text, in chunks, through the public API: the xpuinfer side of the quality
 * comparison with llama.cpp's llama-perplexity (bench/quality_smollm2.py reads the JSON it writes).
 *
 * The text is tokenized as llama-perplexity does (the model's tokenizer, special tokens added as the
 * post-processor says: no BOS for SmolLM2), cut into N_CHUNKS chunks of N_CTX tokens, each evaluated from an
 * empty KV cache with logits at every position; for position i of a chunk it records -log softmax(logits)[t_{i+1}]
 * and the argmax. llama-perplexity scores only positions N_CTX/2 .. N_CTX-2 of each chunk; the JSON holds all of
 * them, so both protocols can be computed from it.
 *
 * Not built by CMake (a measurement tool, not part of the product); after building the library:
 *   cc -O2 -Iinclude bench/perplexity.c build/libxpuinfer.a -lcjson -lcurl -lcrypto -lpcre2-8 -lutf8proc \
 *      -ldl -lm -lpthread -o build/perplexity
 *   build/perplexity MODEL_DIR TEXT_FILE QUANT(none|q8|q4) N_CTX N_CHUNKS OUT.json [DEVICE]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include "xpuinfer.h"

static int die(const char *what) {
  fprintf(stderr, "perplexity: %s: %s\n", what, xpi_last_error());
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 7) {
    fprintf(stderr, "usage: %s MODEL_DIR TEXT_FILE QUANT N_CTX N_CHUNKS OUT.json [DEVICE]\n", argv[0]);
    return 2;
  }
  const int n_ctx = atoi(argv[4]), n_chunks = atoi(argv[5]);
  FILE *f = fopen(argv[2], "rb");
  if (!f) return perror(argv[2]), 1;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)len + 1);
  if (!text || fread(text, 1, (size_t)len, f) != (size_t)len) return fprintf(stderr, "read %s\n", argv[2]), 1;
  fclose(f);

  xpi_model_options o;
  xpi_model_options_default(&o);
  o.device = argc > 7 ? argv[7] : "cpu";
  o.quant = argv[3];
  xpi_model *m;
  if (xpi_model_load(argv[1], &o, &m) != XPI_OK) return die("load");
  xpi_model_info info = {.struct_size = sizeof info};
  xpi_model_get_info(m, &info);
  const int32_t V = info.vocab_size;
  size_t n = 0;
  const xpi_tokenizer *tok = xpi_model_tokenizer(m);
  xpi_tokenize(tok, text, (size_t)len, 1, NULL, 0, &n);
  int32_t *ids = malloc(sizeof(int32_t) * n);
  if (xpi_tokenize(tok, text, (size_t)len, 1, ids, n, &n) != XPI_OK) return die("tokenize");
  if ((size_t)n_ctx * (size_t)n_chunks > n)
    return fprintf(stderr, "the text has %zu tokens, fewer than %d x %d\n", n, n_chunks, n_ctx), 1;

  xpi_request_options ro;
  xpi_request_options_default(&ro);
  ro.n_ctx = n_ctx;
  xpi_request *r;
  if (xpi_request_create(m, &ro, &r) != XPI_OK) return die("request");
  float *lg = malloc(sizeof(float) * (size_t)V * (size_t)n_ctx);
  cJSON *out = cJSON_CreateObject(), *chunks = cJSON_AddArrayToObject(out, "chunks");
  cJSON_AddStringToObject(out, "model", argv[1]);
  cJSON_AddStringToObject(out, "device", info.device);
  cJSON_AddStringToObject(out, "weights", info.weight_dtype);
  cJSON_AddNumberToObject(out, "n_ctx", n_ctx);
  for (int c = 0; c < n_chunks; c++) {
    const int32_t *t = ids + (size_t)c * n_ctx;
    xpi_request_reset(r);
    if (xpi_request_eval(r, t, (size_t)n_ctx, 1, lg, (size_t)V * (size_t)n_ctx) != XPI_OK) return die("eval");
    cJSON *cj = cJSON_CreateObject(), *jt = cJSON_AddArrayToObject(cj, "ids"), *jn = cJSON_AddArrayToObject(cj, "nll"),
          *ja = cJSON_AddArrayToObject(cj, "argmax");
    for (int i = 0; i < n_ctx; i++) cJSON_AddItemToArray(jt, cJSON_CreateNumber(t[i]));
    for (int i = 0; i + 1 < n_ctx; i++) {
      const float *row = lg + (size_t)i * V;
      int32_t am = 0;
      double mx = row[0], sum = 0;
      for (int32_t v = 1; v < V; v++)
        if (row[v] > row[am]) am = v;
      mx = row[am];
      for (int32_t v = 0; v < V; v++) sum += exp((double)row[v] - mx);
      cJSON_AddItemToArray(jn, cJSON_CreateNumber(mx + log(sum) - row[t[i + 1]]));
      cJSON_AddItemToArray(ja, cJSON_CreateNumber(am));
    }
    cJSON_AddItemToArray(chunks, cj);
    fprintf(stderr, "chunk %d/%d\n", c + 1, n_chunks);
  }
  char *s = cJSON_PrintUnformatted(out);
  FILE *of = fopen(argv[6], "wb");
  if (!of || fputs(s, of) < 0 || fclose(of) != 0) return perror(argv[6]), 1;
  free(s);
  cJSON_Delete(out);
  free(lg);
  free(ids);
  free(text);
  xpi_request_free(r);
  xpi_model_free(m);
  return 0;
}
