/* Shared by the XPU model tests: model loading and a greedy continuation of one tinyfortunes golden prompt. */
#ifndef XPI_TEST_XPU_LOAD_H
#define XPI_TEST_XPU_LOAD_H

#include <stdlib.h>
#include "check.h"

/* 77 (ctest's skip code) when the software device is not in this tree (tests.cmake sets XPI_XPU_TEST_SKIP),
 * 1 on failure (recorded as a failed check), 0 when loaded. */
static inline int load(const char *dir, const char *device, const char *map, const char *impl, xpi_model **m) {
  const char *skip = getenv("XPI_XPU_TEST_SKIP");
  if (skip && *skip) {
    printf("SKIPPED: %s\n", skip);
    return 77;
  }
  xpi_model_options o;
  xpi_model_options_default(&o);
  o.device = device;
  o.device_map = map;
  o.attn_implementation = impl;
  o.n_threads = 2;
  *m = NULL;
  xpi_status s = xpi_model_load(dir, &o, m);
  CHECK(s == XPI_OK, "loading %s on %s%s%s: %s", dir, device, map ? " map " : "", map ? map : "", xpi_last_error());
  return s == XPI_OK ? 0 : 1;
}

typedef struct {
  int32_t ids[64];
  int n;
} collected;
static inline int collect(const xpi_token_event *ev, void *user) {
  collected *c = user;
  if (c->n < 64) c->ids[c->n++] = ev->id;
  return 0;
}

/* Greedy generation of max_new tokens after ids[0..n) in a request of n_ctx positions (0: the model's default),
 * EOS ignored, into *out; 0 logprobs lets the engine take the argmax on the backend, up to 257 (the default
 * device_topk + 1) the device's top-k and normaliser, more keep the logits on the host (the host-argmax path). */
static inline void generate_ids(xpi_model *m, const int32_t *ids, int n, int max_new, int logprobs, int32_t n_ctx,
                                collected *out) {
  xpi_request *r = NULL;
  xpi_request_options ro;
  xpi_request_options_default(&ro);
  ro.n_ctx = n_ctx;
  CHECK_OK(xpi_request_create(m, &ro, &r));
  xpi_gen_options go;
  xpi_gen_options_default(&go);
  go.greedy = 1;
  go.ignore_eos = 1; /* the caller's length decides */
  go.logprobs = logprobs;
  go.max_new_tokens = max_new;
  out->n = 0;
  xpi_gen_result res = {.struct_size = sizeof res};
  if (r) CHECK_OK(xpi_request_generate(r, ids, (size_t)n, &go, collect, out, &res));
  xpi_request_free(r);
}

/* Greedy continuation of one golden case (input_ids, greedy_new_ids) into *out (logprobs as generate_ids). */
static inline void greedy(xpi_model *m, const cJSON *cs, int logprobs, collected *out) {
  const cJSON *in = cJSON_GetObjectItem(cs, "input_ids"), *want = cJSON_GetObjectItem(cs, "greedy_new_ids");
  int32_t ids[64];
  int n = cJSON_GetArraySize(in);
  for (int i = 0; i < n && i < 64; i++) ids[i] = cJSON_GetArrayItem(in, i)->valueint;
  generate_ids(m, ids, n < 64 ? n : 64, cJSON_GetArraySize(want), logprobs, 128, out);
}

#endif
