/* xpi_request_generate: a generation job of the request's sequence in the model's request engine (sampling,
 * what each token adds to the text (seq_output.c), stop rules and non-finite logits are per sequence in
 * src/engine); generation options and their defaults. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "core/status.h"
#include "engine/engine_internal.h"
#include "generate/gen_options.h"

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

xpi_status xpi_request_generate(xpi_request *r, const int32_t *prompt, size_t n_prompt, const xpi_gen_options *opts,
                                xpi_token_callback cb, void *user, xpi_gen_result *result) {
  if (!r || (!prompt && n_prompt)) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_request_generate: NULL argument");
  if (n_prompt == 0) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_request_generate: the prompt has no tokens");
  xpi_gen_options o;
  XPI_TRY(xpi_gen_options_resolve(opts, &o));
  const int32_t n_past = r->seq->n_tok;
  /* Positions that enter the KV cache: the prompt and every generated token but the last. */
  int64_t need = (int64_t)n_past + (int64_t)n_prompt + (o.max_new_tokens > 0 ? o.max_new_tokens - 1 : 0);
  if (need > r->n_ctx)
    return xpi_err(XPI_ERR_CONTEXT_LENGTH,
                   "prompt of %zu tokens + max_new_tokens %d (after %d tokens already in the context) needs %lld "
                   "positions, but the context holds %d: shorten the prompt, lower max_new_tokens or raise n_ctx "
                   "(up to max_position_embeddings = %d)",
                   n_prompt, o.max_new_tokens, n_past, (long long)need, r->n_ctx,
                   r->model->cfg.max_position_embeddings);
  r->done = r->stopped = r->oom = 0;
  r->status = XPI_OK;
  r->cb = cb;
  r->user = user;
  r->delivered = 0;
  XPI_TRY(xpi_engine_session_generate(r->e, r->seq, prompt, (int32_t)n_prompt, &o, xpi_request_on_event, r));
  xpi_status s = xpi_request_wait(r);
  xpi_gen_result res = r->gen;
  res.struct_size = sizeof res;
  if (r->stopped) { /* the callback asked to stop: its token was the last, later ones never happened */
    res.finish_reason = XPI_FINISH_CANCELLED;
    res.n_generated = r->delivered;
    xpi_engine_lock(r->e);
    xpi_sched_truncate(r->e, r->seq, n_past + (int32_t)n_prompt + (r->delivered > 0 ? r->delivered - 1 : 0));
    xpi_engine_unlock(r->e);
  }
  res.n_prompt_tokens = (int32_t)n_prompt;
  if (result) {
    size_t sz = result->struct_size && result->struct_size < sizeof res ? result->struct_size : sizeof res;
    memcpy(result, &res, sz);
    result->struct_size = sz;
  }
  return s;
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
