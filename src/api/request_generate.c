/* xpi_request_generate: a generation job of the request's sequence in the model's request engine (sampling,
 * what each token adds to the text, stop rules and non-finite logits are per sequence in src/engine, over
 * src/generate's sampler and sequence output). */
#include <stddef.h>
#include <string.h>

#include "api/api_internal.h"
#include "core/status.h"
#include "engine/engine_internal.h"
#include "generate/gen_options.h"

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
    xpi_engine_session_truncate(r->e, r->seq,
                                n_past + (int32_t)n_prompt + (r->delivered > 0 ? r->delivered - 1 : 0));
  }
  res.n_prompt_tokens = (int32_t)n_prompt;
  if (result) {
    size_t sz = result->struct_size && result->struct_size < sizeof res ? result->struct_size : sizeof res;
    memcpy(result, &res, sz);
    result->struct_size = sz;
  }
  return s;
}
