/* The generation loop: prefill, then sample / stream / stop / evaluate one token at a time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "core/clock.h"
#include "core/status.h"
#include "generate/sampler.h"

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
  xpi_detok_stream *ds;
  xpi_logprob *top;
  char *text;            /* generated text so far (stop strings are searched in it) */
  size_t len, cap;
  char *ev;              /* this token's text (+ flushed tail on the last token) */
  size_t ev_cap;
} gen_state;

static xpi_status grow(char **buf, size_t *cap, size_t need) {
  if (need <= *cap) return XPI_OK;
  size_t c = *cap ? *cap : 256;
  while (c < need) c *= 2;
  char *p = realloc(*buf, c);
  if (!p) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  *buf = p;
  *cap = c;
  return XPI_OK;
}

static int is_eos(const xpi_config *c, int32_t id) {
  for (int32_t i = 0; i < c->n_eos; i++)
    if (c->eos_ids[i] == id) return 1;
  return 0;
}

/* Did the text that now ends at len gain a stop string? Only the tail that new text can touch is searched. */
static int hit_stop(const xpi_gen_options *o, const char *text, size_t old_len, size_t len) {
  for (size_t i = 0; i < o->n_stop_strings; i++) {
    const char *s = o->stop_strings[i];
    size_t sl = s ? strlen(s) : 0;
    if (!sl || sl > len) continue;
    size_t from = old_len >= sl ? old_len - sl + 1 : 0;
    for (size_t p = from; p + sl <= len; p++)
      if (!memcmp(text + p, s, sl)) return 1;
  }
  return 0;
}

static xpi_status check_options(const xpi_gen_options *o) {
  if (o->max_new_tokens < 0) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "max_new_tokens = %d must be >= 0", o->max_new_tokens);
  if (o->logprobs < 0 || o->logprobs > 1000)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "logprobs = %d must be in [0, 1000]", o->logprobs);
  if (o->n_stop_strings && !o->stop_strings)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "n_stop_strings = %zu but stop_strings is NULL", o->n_stop_strings);
  return XPI_OK;
}

/* xpi_request_eval for greedy decoding with nothing else reading the logits: the argmax runs on the backend
 * inside the step (in the replayed XPU graph) and only the next token id comes back to the host. */
static xpi_status eval_argmax(xpi_request *r, const int32_t *ids, size_t n, int32_t *next) {
  int32_t V = r->model->cfg.vocab_size;
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= V)
      return xpi_err(XPI_ERR_INVALID_ARGUMENT, "token id %d at index %zu is outside the vocabulary [0, %d)", ids[i], i, V);
  if (n > (size_t)(r->n_ctx - r->n_past))
    return xpi_err(XPI_ERR_CONTEXT_LENGTH, "%zu tokens do not fit: %d of the context's %d are used", n, r->n_past,
                   r->n_ctx);
  XPI_TRY(xpi_graph_forward_argmax(&r->model->graph, r->gs, ids, (int32_t)n, r->n_past, next));
  memcpy(r->history + r->n_past, ids, n * sizeof *ids);
  r->n_past += (int32_t)n;
  return XPI_OK;
}

static xpi_status run(xpi_request *r, const int32_t *prompt, size_t n_prompt, const xpi_gen_options *o,
                      xpi_token_callback cb, void *user, xpi_gen_result *res, gen_state *g) {
  const xpi_config *c = &r->model->cfg;
  int32_t V = c->vocab_size;
  XPI_TRY(xpi_sampler_init(&g->smp, o, V));
  XPI_TRY(xpi_detok_stream_create(r->model->tok, 0, &g->ds));
  if (o->logprobs > 0 && !(g->top = malloc((size_t)o->logprobs * sizeof *g->top)))
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");

  /* Logprobs and the repetition penalty need the logits on the host; plain greedy needs only the argmax. */
  int on_device = g->smp.greedy && o->logprobs == 0 && g->smp.penalty == 1.0f;
  int32_t next = 0;
  double t0 = xpi_now_s();
  if (on_device) XPI_TRY(eval_argmax(r, prompt, n_prompt, &next));
  else XPI_TRY(xpi_request_eval(r, prompt, n_prompt, 0, r->logits, (size_t)V));
  double t1 = xpi_now_s();
  res->prompt_seconds = t1 - t0;
  res->n_prompt_tokens = (int32_t)n_prompt;
  for (int32_t step = 0; step < o->max_new_tokens; step++) {
    xpi_token_event ev = {0};
    if (o->logprobs > 0) { /* raw logits, before any processor */
      xpi_logprobs_top(r->logits, V, o->logprobs, g->top);
      ev.top = g->top;
      ev.n_top = o->logprobs < V ? o->logprobs : V;
    }
    int32_t id = on_device ? next : xpi_sampler_sample(&g->smp, r->logits, r->history, r->n_past);
    res->n_generated++;
    const char *piece;
    size_t plen;
    XPI_TRY(xpi_detok_stream_push(g->ds, id, &piece, &plen));
    XPI_TRY(grow(&g->ev, &g->ev_cap, plen + 1));
    memcpy(g->ev, piece, plen);
    size_t elen = plen, old = g->len;
    XPI_TRY(grow(&g->text, &g->cap, g->len + plen + 1));
    memcpy(g->text + g->len, piece, plen);
    g->len += plen;
    int stop = (!o->ignore_eos && is_eos(c, id)) || hit_stop(o, g->text, old, g->len);
    int last = stop || step + 1 == o->max_new_tokens;
    if (last) { /* the held-back tail (an incomplete character) goes out with the last token */
      XPI_TRY(xpi_detok_stream_flush(g->ds, &piece, &plen));
      XPI_TRY(grow(&g->ev, &g->ev_cap, elen + plen + 1));
      memcpy(g->ev + elen, piece, plen);
      elen += plen;
    }
    ev.id = id;
    ev.text = g->ev;
    ev.text_len = elen;
    if (cb && cb(&ev, user)) stop = 1;
    if (stop) {
      res->finish_reason = XPI_FINISH_STOP;
      break;
    }
    if (last) break;
    if (on_device) XPI_TRY(eval_argmax(r, &id, 1, &next));
    else XPI_TRY(xpi_request_eval(r, &id, 1, 0, r->logits, (size_t)V));
  }
  res->generate_seconds = xpi_now_s() - t1;
  return XPI_OK;
}

xpi_status xpi_request_generate(xpi_request *r, const int32_t *prompt, size_t n_prompt, const xpi_gen_options *opts,
                                xpi_token_callback cb, void *user, xpi_gen_result *result) {
  if (!r || (!prompt && n_prompt)) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_request_generate: NULL argument");
  if (n_prompt == 0) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_request_generate: the prompt has no tokens");
  xpi_gen_options def;
  if (!opts) {
    xpi_gen_options_default(&def);
    opts = &def;
  }
  XPI_TRY(check_options(opts));
  /* Positions that enter the KV cache: the prompt and every generated token but the last. */
  int64_t need = (int64_t)r->n_past + (int64_t)n_prompt + (opts->max_new_tokens > 0 ? opts->max_new_tokens - 1 : 0);
  if (need > r->n_ctx)
    return xpi_err(XPI_ERR_CONTEXT_LENGTH,
                   "prompt of %zu tokens + max_new_tokens %d (after %d tokens already in the context) needs %lld "
                   "positions, but the context holds %d: shorten the prompt, lower max_new_tokens or raise n_ctx "
                   "(up to max_position_embeddings = %d)",
                   n_prompt, opts->max_new_tokens, r->n_past, (long long)need, r->n_ctx,
                   r->model->cfg.max_position_embeddings);
  xpi_gen_result res = {0};
  res.struct_size = sizeof res;
  res.finish_reason = XPI_FINISH_LENGTH;
  gen_state g;
  memset(&g, 0, sizeof g);
  xpi_status s = run(r, prompt, n_prompt, opts, cb, user, &res, &g);
  xpi_sampler_free(&g.smp);
  xpi_detok_stream_free(g.ds);
  free(g.top);
  free(g.text);
  free(g.ev);
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
