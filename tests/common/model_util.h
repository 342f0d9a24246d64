/* Set-up shared by the model-level tests (engine, MoE goldens, XPU quant models): a checked model load, the
 * logits of every position of a request, an engine driven until idle, and a copy of a model with a NaN
 * embedding row. Failures are recorded as failed checks (check.h). */
#ifndef XPI_TEST_MODEL_UTIL_H
#define XPI_TEST_MODEL_UTIL_H

#include <stdint.h>

#include "check.h"

/* xpi_model_load of dir with o (n_threads 2 where o leaves 0); a failed check naming dir, the device and the
 * error when it fails (NULL then). */
xpi_model *xpi_test_load_opts(const char *dir, xpi_model_options *o);
/* The same with the default options but for these (NULL: the default). */
xpi_model *xpi_test_load(const char *dir, const char *device, const char *map, const char *attn, const char *quant);

/* Logits of every position of ids[0..n) through one request of 128 positions: malloc'd [n][vocab]. */
float *xpi_test_eval_all(xpi_model *m, const int32_t *ids, int n, int32_t vocab);

/* Steps e until nothing is pending, an error, or max_steps steps (a sequence that can never get its blocks
 * then shows as unfinished). */
void xpi_test_drive(xpi_engine *e, int max_steps);

/* A temporary folder holding the model of src (its other files linked) whose bf16 embedding row `bad` is NaN,
 * written in place in a copy of model.safetensors. Returns the malloc'd path. */
char *xpi_test_nan_row_model(const char *src, int32_t bad);

#endif
