/* Generation options: their defaults (the library's, or the model's generation_config.json) and the resolution
 * of a caller's struct (gen_options.h). */
#include "generate/gen_options.h"

#include <stddef.h>
#include <string.h>

#include "core/status.h"
#include "model/model.h"

void xpi_gen_options_default(xpi_gen_options *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->max_new_tokens = 256;
  o->temperature = 1.0f;
  o->top_p = 1.0f;
  o->repetition_penalty = 1.0f;
}

xpi_status xpi_gen_options_resolve(const xpi_gen_options *in, xpi_gen_options *out) {
  xpi_gen_options_default(out); /* a caller built against an older header passes a smaller struct: the rest keeps
                                 * the defaults */
  if (!in) return XPI_OK;
  if (in->struct_size < offsetof(xpi_gen_options, max_new_tokens))
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_gen_options.struct_size = %zu: fill it with xpi_gen_options_default",
                   in->struct_size);
  memcpy(out, in, in->struct_size < sizeof *out ? in->struct_size : sizeof *out);
  out->struct_size = sizeof *out;
  if (out->max_new_tokens < 0)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "max_new_tokens = %d must be >= 0", out->max_new_tokens);
  if (out->logprobs < 0 || out->logprobs > 1000)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "logprobs = %d must be in [0, 1000]", out->logprobs);
  if (out->n_stop_strings && !out->stop_strings)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "n_stop_strings = %zu but stop_strings is NULL", out->n_stop_strings);
  return XPI_OK;
}

void xpi_gen_options_from_model(const xpi_model *m, xpi_gen_options *o) {
  xpi_gen_options_default(o);
  if (!m) return;
  const xpi_config *c = &m->cfg;
  o->greedy = c->gen_do_sample != 1;
  if (c->gen_do_sample == 1) {
    if (c->gen_temperature > 0) o->temperature = c->gen_temperature;
    o->top_k = c->gen_top_k > 0 ? c->gen_top_k : 50;
    if (c->gen_top_p > 0 && c->gen_top_p <= 1) o->top_p = c->gen_top_p;
  }
  if (c->gen_repetition_penalty > 0) o->repetition_penalty = c->gen_repetition_penalty;
  if (c->gen_max_new_tokens > 0) o->max_new_tokens = c->gen_max_new_tokens;
}
