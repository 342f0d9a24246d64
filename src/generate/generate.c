/* The generation loop: prefill, then sample / stream / stop / evaluate one token at a time. What each token
 * adds to the text (stop tokens, stop strings, hold-back) is seq_output.c's; non-finite logits stop the loop
 * with XPI_ERR_NUMERIC, located layer by layer by xpi_graph_locate_nonfinite. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "core/clock.h"
#include "core/status.h"
#include "generate/sampler.h"
#include "generate/seq_output.h"

void xpi_gen_options_default(xpi_gen_options *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->max_new_tokens = 256;
  o->temperature = 1.0f;
  o->top_p = 1.0f;
  o->repetition_penalty = 1.0f;
}

typedef struct gen_state {
  xpi_sampler smp;
  xpi_seq_output out;
  xpi_logprob *top;
} gen_state;

static xpi_status check_options(const xpi_gen_options *o) {
  if (o->max_new_tokens < 0) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "max_new_tokens = %d must be >= 0", o->max_new_tokens);
  if (o->logprobs < 0 || o->logprobs > 1000)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "logprobs = %d must be in [0, 1000]", o->logprobs);
  if (o->n_stop_strings && !o->stop_strings)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "n_stop_strings = %zu but stop_strings is NULL", o->n_stop_strings);
  return XPI_OK;
}

static int all_finite(const float *l, int32_t n) {
  int ok = 1;
  for (int32_t i = 0; i < n; i++) ok &= l[i] - l[i] == 0.0f; /* false for NaN and +-Inf */
  return ok;
}

/* Non-finite logits after the step that fed ids[0..n) at positions from n_past: find where they began. */
static xpi_status numeric_error(xpi_request *r, const int32_t *ids, int32_t n, int32_t n_past, int32_t step) {
  xpi_status s = xpi_graph_locate_nonfinite(&r->model->graph, r->gs, ids, n, n_past);
  if (s != XPI_ERR_NUMERIC) return s; /* the diagnosis itself failed: its error says why */
  if (step == 0)
    return xpi_err_prefix(s, "generation step 0 (the prompt, positions %d-%d): ", n_past, n_past + n - 1);
  return xpi_err_prefix(s, "generation step %d (token position %d): ", step, n_past);
}

/* Runs ids through the model for step `step`: the next greedy id on the backend (on_device), else the last
 * position's logits into r->logits. Non-finite logits are XPI_ERR_NUMERIC. */
static xpi_status step_eval(xpi_request *r, const int32_t *ids, size_t n, int on_device, int32_t step, int32_t *next) {
  int32_t V = r->model->cfg.vocab_size, n_past = r->n_past;
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= V)
      return xpi_err(XPI_ERR_INVALID_ARGUMENT, "token id %d at index %zu is outside the vocabulary [0, %d)", ids[i], i, V);
  if (n > (size_t)(r->n_ctx - r->n_past))
    return xpi_err(XPI_ERR_CONTEXT_LENGTH, "%zu tokens do not fit: %d of the context's %d are used", n, r->n_past,
                   r->n_ctx);
  int bad;
  if (on_device) { /* greedy with nothing else reading the logits: only the id comes back (-1: non-finite) */
    XPI_TRY(xpi_graph_forward_argmax(&r->model->graph, r->gs, ids, (int32_t)n, n_past, next));
    bad = *next < 0;
  } else {
    XPI_TRY(xpi_graph_forward(&r->model->graph, r->gs, ids, (int32_t)n, n_past, 0, r->logits));
    bad = !all_finite(r->logits, V);
  }
  memcpy(r->history + r->n_past, ids, n * sizeof *ids);
  r->n_past += (int32_t)n;
  return bad ? numeric_error(r, ids, (int32_t)n, n_past, step) : XPI_OK;
}

static xpi_status run(xpi_request *r, const int32_t *prompt, size_t n_prompt, const xpi_gen_options *o,
                      xpi_token_callback cb, void *user, xpi_gen_result *res, gen_state *g) {
  const xpi_config *c = &r->model->cfg;
  int32_t V = c->vocab_size;
  XPI_TRY(xpi_sampler_init(&g->smp, o, V));
  XPI_TRY(xpi_seq_output_init(&g->out, r->model->tok, c->eos_ids, c->n_eos, o));
  if (o->logprobs > 0 && !(g->top = malloc((size_t)o->logprobs * sizeof *g->top)))
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");

  /* Logprobs and the repetition penalty need the logits on the host; plain greedy needs only the argmax. */
  int on_device = g->smp.greedy && o->logprobs == 0 && g->smp.penalty == 1.0f;
  int32_t next = 0;
  double t0 = xpi_now_s();
  res->n_prompt_tokens = (int32_t)n_prompt;
  XPI_TRY(step_eval(r, prompt, n_prompt, on_device, 0, &next));
  double t1 = xpi_now_s();
  res->prompt_seconds = t1 - t0;
  for (int32_t step = 1; !g->out.finished; step++) {
    xpi_token_event ev = {0};
    if (o->logprobs > 0) { /* raw logits, before any processor */
      xpi_logprobs_top(r->logits, V, o->logprobs, g->top);
      ev.top = g->top;
      ev.n_top = o->logprobs < V ? o->logprobs : V;
    }
    int32_t id = on_device ? next : xpi_sampler_sample(&g->smp, r->logits, r->history, r->n_past);
    res->n_generated++;
    XPI_TRY(xpi_seq_output_push(&g->out, id, &ev.text, &ev.text_len));
    ev.id = id;
    if (cb && cb(&ev, user)) xpi_seq_output_cancel(&g->out);
    if (g->out.finished) break;
    XPI_TRY(step_eval(r, &id, 1, on_device, step, &next));
  }
  res->finish_reason = g->out.reason;
  res->generate_seconds = xpi_now_s() - t1;
  return XPI_OK;
}

xpi_status xpi_request_generate(xpi_request *r, const int32_t *prompt, size_t n_prompt, const xpi_gen_options *opts,
                                xpi_token_callback cb, void *user, xpi_gen_result *result) {
  if (!r || (!prompt && n_prompt)) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_request_generate: NULL argument");
  if (n_prompt == 0) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_request_generate: the prompt has no tokens");
  xpi_gen_options o; /* a caller built against an older header passes a smaller struct: the rest keeps defaults */
  xpi_gen_options_default(&o);
  if (opts) {
    if (opts->struct_size < offsetof(xpi_gen_options, max_new_tokens))
      return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_gen_options.struct_size = %zu: fill it with xpi_gen_options_default",
                     opts->struct_size);
    memcpy(&o, opts, opts->struct_size < sizeof o ? opts->struct_size : sizeof o);
    o.struct_size = sizeof o;
  }
  XPI_TRY(check_options(&o));
  /* Positions that enter the KV cache: the prompt and every generated token but the last. */
  int64_t need = (int64_t)r->n_past + (int64_t)n_prompt + (o.max_new_tokens > 0 ? o.max_new_tokens - 1 : 0);
  if (need > r->n_ctx)
    return xpi_err(XPI_ERR_CONTEXT_LENGTH,
                   "prompt of %zu tokens + max_new_tokens %d (after %d tokens already in the context) needs %lld "
                   "positions, but the context holds %d: shorten the prompt, lower max_new_tokens or raise n_ctx "
                   "(up to max_position_embeddings = %d)",
                   n_prompt, o.max_new_tokens, r->n_past, (long long)need, r->n_ctx,
                   r->model->cfg.max_position_embeddings);
  xpi_gen_result res = {0};
  res.struct_size = sizeof res;
  res.finish_reason = XPI_FINISH_LENGTH;
  gen_state g;
  memset(&g, 0, sizeof g);
  xpi_status s = run(r, prompt, n_prompt, &o, cb, user, &res, &g);
  xpi_sampler_free(&g.smp);
  xpi_seq_output_free(&g.out);
  free(g.top);
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
