/* OpenAI request bodies: POST /v1/chat/completions and /v1/completions parsed with cJSON, every field we use
 * checked for type and range (400 with the field in "param"), fields we do not know ignored as OpenAI does; then
 * the prompt: the chat template over the conversation (tools passed through), or the completion's text or ids. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

void serve_error_set(serve_error *e, int status, const char *type, const char *param, const char *code,
                     const char *fmt, ...) {
  e->status = status;
  e->type = type;
  e->param = param;
  e->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
}

/* A 400 about one field; returns -1. */
static int bad(serve_error *err, const char *param, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(serve_error *err, const char *param, const char *fmt, ...) {
  char msg[sizeof err->message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  serve_error_set(err, 400, "invalid_request_error", param, NULL, "%s", msg);
  return -1;
}
#define BAD(param, ...) bad(err, param, __VA_ARGS__)

/* A field that is absent or null counts as not given (clients send null for "default"). */
static const cJSON *field(const cJSON *o, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  return v && !cJSON_IsNull(v) ? v : NULL;
}

static int get_bool(const cJSON *o, const char *name, int *out, serve_error *err) {
  const cJSON *v = field(o, name);
  if (!v) return 0;
  if (!cJSON_IsBool(v)) return BAD(name, "'%s' must be a boolean", name);
  *out = cJSON_IsTrue(v);
  return 0;
}

static int get_number(const cJSON *o, const char *name, double lo, double hi, int *has, double *out, serve_error *err) {
  const cJSON *v = field(o, name);
  if (!v) return 0;
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return BAD(name, "'%s' must be a number", name);
  if (v->valuedouble < lo || v->valuedouble > hi)
    return BAD(name, "'%s' = %g is outside [%g, %g]", name, v->valuedouble, lo, hi);
  *has = 1;
  *out = v->valuedouble;
  return 0;
}

static int get_int(const cJSON *o, const char *name, double lo, double hi, int *has, int64_t *out, serve_error *err) {
  const cJSON *v = field(o, name);
  if (!v) return 0;
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble))
    return BAD(name, "'%s' must be an integer", name);
  if (v->valuedouble < lo || v->valuedouble > hi)
    return BAD(name, "'%s' = %.0f is outside [%.0f, %.0f]", name, v->valuedouble, lo, hi);
  *has = 1;
  *out = (int64_t)v->valuedouble;
  return 0;
}

static int parse_stop(const cJSON *o, oai_request *r, serve_error *err) {
  const cJSON *v = field(o, "stop");
  if (!v) return 0;
  r->has_stop = 1;
  if (cJSON_IsString(v)) {
    if (*v->valuestring && !(r->stops[r->n_stops++] = strdup(v->valuestring)))
      return serve_error_set(err, 500, "server_error", NULL, NULL, "out of memory"), -1;
    return 0;
  }
  if (!cJSON_IsArray(v)) return BAD("stop", "'stop' must be a string or an array of strings");
  if (cJSON_GetArraySize(v) > OAI_MAX_STOPS) return BAD("stop", "'stop' holds at most %d strings", OAI_MAX_STOPS);
  const cJSON *e;
  cJSON_ArrayForEach(e, v) {
    if (!cJSON_IsString(e)) return BAD("stop", "'stop' must be a string or an array of strings");
    if (*e->valuestring && !(r->stops[r->n_stops++] = strdup(e->valuestring)))
      return serve_error_set(err, 500, "server_error", NULL, NULL, "out of memory"), -1;
  }
  return 0;
}

/* Content parts [{"type": "text", "text"}...] become one string (joined by newlines, as vLLM does for
 * templates that take strings); other part types are refused. */
static int normalize_content(cJSON *msg, int i, serve_error *err) {
  cJSON *c = cJSON_GetObjectItemCaseSensitive(msg, "content");
  if (!c || cJSON_IsNull(c) || cJSON_IsString(c)) return 0;
  if (!cJSON_IsArray(c)) return BAD("messages", "messages[%d].content must be a string, an array of parts or null", i);
  size_t len = 0;
  const cJSON *p;
  cJSON_ArrayForEach(p, c) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(p, "type"), *text = cJSON_GetObjectItemCaseSensitive(p, "text");
    if (!cJSON_IsObject(p) || !cJSON_IsString(type) || strcmp(type->valuestring, "text") || !cJSON_IsString(text))
      return BAD("messages", "messages[%d].content: only parts {\"type\": \"text\", \"text\": \"...\"} are supported", i);
    len += strlen(text->valuestring) + 1;
  }
  char *s = malloc(len + 1), *w = s;
  if (!s) return serve_error_set(err, 500, "server_error", NULL, NULL, "out of memory"), -1;
  *s = 0;
  cJSON_ArrayForEach(p, c) {
    const char *t = cJSON_GetObjectItemCaseSensitive(p, "text")->valuestring;
    if (w != s) *w++ = '\n';
    size_t n = strlen(t);
    memcpy(w, t, n + 1);
    w += n;
  }
  cJSON *str = cJSON_CreateString(s);
  free(s);
  if (!str || !cJSON_ReplaceItemInObjectCaseSensitive(msg, "content", str)) {
    cJSON_Delete(str);
    return serve_error_set(err, 500, "server_error", NULL, NULL, "out of memory"), -1;
  }
  return 0;
}

/* {"messages": [...], "tools": [...], "add_generation_prompt": true, <chat_template_kwargs>} for the template. */
static int parse_chat(const cJSON *o, oai_request *r, serve_error *err) {
  const cJSON *msgs = field(o, "messages");
  if (!msgs) return BAD("messages", "'messages' is required");
  if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0) return BAD("messages", "'messages' must be a non-empty array");
  cJSON *conv = cJSON_CreateObject(), *m = cJSON_Duplicate(msgs, 1);
  if (!conv || !m || !cJSON_AddItemToObject(conv, "messages", m)) {
    cJSON_Delete(conv);
    cJSON_Delete(m);
    return serve_error_set(err, 500, "server_error", NULL, NULL, "out of memory"), -1;
  }
  int i = 0, rc = 0;
  cJSON *e;
  cJSON_ArrayForEach(e, m) {
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(e, "role");
    if (!cJSON_IsObject(e)) rc = BAD("messages", "messages[%d] must be an object", i);
    else if (!cJSON_IsString(role)) rc = BAD("messages", "messages[%d].role must be a string", i);
    else rc = normalize_content(e, i, err);
    if (rc) break;
    i++;
  }
  const cJSON *tools = field(o, "tools"), *kw = field(o, "chat_template_kwargs");
  if (!rc && tools && !cJSON_IsArray(tools)) rc = BAD("tools", "'tools' must be an array");
  if (!rc && kw && !cJSON_IsObject(kw)) rc = BAD("chat_template_kwargs", "'chat_template_kwargs' must be an object");
  if (!rc) {
    int ok = cJSON_AddBoolToObject(conv, "add_generation_prompt", 1) != NULL;
    if (tools) ok = ok && cJSON_AddItemToObject(conv, "tools", cJSON_Duplicate(tools, 1));
    const cJSON *k;
    if (kw)
      cJSON_ArrayForEach(k, kw) { /* template variables such as enable_thinking */
        if (!strcmp(k->string, "messages")) continue;
        cJSON_DeleteItemFromObjectCaseSensitive(conv, k->string);
        ok = ok && cJSON_AddItemToObject(conv, k->string, cJSON_Duplicate(k, 1));
      }
    if (ok) r->conversation = cJSON_PrintUnformatted(conv);
    if (!r->conversation) rc = (serve_error_set(err, 500, "server_error", NULL, NULL, "out of memory"), -1);
  }
  cJSON_Delete(conv);
  if (rc) return rc;

  int has = 0;
  int64_t t = 0;
  if (get_bool(o, "logprobs", &r->logprobs, err)) return -1;
  if (get_int(o, "top_logprobs", 0, 20, &has, &t, err)) return -1;
  if (has && !r->logprobs) return BAD("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  r->top_logprobs = (int)t;
  return 0;
}

static int parse_completion(const cJSON *o, oai_request *r, serve_error *err) {
  const cJSON *p = field(o, "prompt");
  if (!p) return BAD("prompt", "'prompt' is required");
  if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 &&
      (cJSON_IsString(p->child) || cJSON_IsArray(p->child))) /* one prompt in a list */
    p = p->child;
  if (cJSON_IsString(p)) {
    if (!(r->prompt = strdup(p->valuestring)))
      return serve_error_set(err, 500, "server_error", NULL, NULL, "out of memory"), -1;
  } else if (cJSON_IsArray(p) && cJSON_GetArraySize(p) > 0 && cJSON_IsNumber(p->child)) {
    size_t n = (size_t)cJSON_GetArraySize(p);
    if (!(r->prompt_ids = malloc(n * sizeof *r->prompt_ids)))
      return serve_error_set(err, 500, "server_error", NULL, NULL, "out of memory"), -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, p) {
      if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0 || e->valuedouble > 2147483647.0)
        return BAD("prompt", "'prompt' as token ids must be integers in [0, 2^31)");
      r->prompt_ids[r->n_prompt_ids++] = (int32_t)e->valuedouble;
    }
  } else if (cJSON_IsArray(p) && cJSON_GetArraySize(p) > 1) {
    return BAD("prompt", "one prompt per request: 'prompt' lists %d", cJSON_GetArraySize(p));
  } else {
    return BAD("prompt", "'prompt' must be a string, an array of token ids, or a list holding one of them");
  }
  int has = 0, echo = 0;
  int64_t t = 0;
  if (get_int(o, "logprobs", 0, 20, &has, &t, err)) return -1;
  r->logprobs = has;
  r->top_logprobs = (int)t;
  if (get_bool(o, "echo", &echo, err)) return -1;
  if (echo) return BAD("echo", "'echo': true is not supported");
  const cJSON *suffix = field(o, "suffix");
  if (suffix && (!cJSON_IsString(suffix) || *suffix->valuestring)) return BAD("suffix", "'suffix' is not supported");
  if (get_int(o, "best_of", 1, 1, &has, &t, err)) return -1;
  return 0;
}

int oai_parse(oai_kind kind, const char *body, size_t len, oai_request *r, serve_error *err) {
  memset(r, 0, sizeof *r);
  r->kind = kind;
  r->ignore_eos = -1;
  cJSON *o = cJSON_ParseWithLength(body, len);
  if (!o) return BAD(NULL, "the body is not valid JSON");
  int rc = -1, has = 0;
  int64_t t = 0;
  double d = 0;
  const cJSON *v;
  if (!cJSON_IsObject(o)) {
    BAD(NULL, "the body must be a JSON object");
    goto out;
  }
  if (!(v = field(o, "model"))) {
    BAD("model", "'model' is required");
    goto out;
  }
  if (!cJSON_IsString(v)) {
    BAD("model", "'model' must be a string");
    goto out;
  }
  if (!(r->model = strdup(v->valuestring))) {
    serve_error_set(err, 500, "server_error", NULL, NULL, "out of memory");
    goto out;
  }
  if (kind == OAI_CHAT ? parse_chat(o, r, err) : parse_completion(o, r, err)) goto out;
  /* max_completion_tokens is the chat API's newer name; it wins when both are given, as OpenAI's */
  if (get_int(o, "max_tokens", 1, 1 << 30, &r->has_max_tokens, &t, err)) goto out;
  if (r->has_max_tokens) r->max_tokens = (int32_t)t;
  if (kind == OAI_CHAT) {
    has = 0;
    if (get_int(o, "max_completion_tokens", 1, 1 << 30, &has, &t, err)) goto out;
    if (has) r->has_max_tokens = 1, r->max_tokens = (int32_t)t;
  }
  if (get_number(o, "temperature", 0, 2, &r->has_temperature, &r->temperature, err)) goto out;
  if (get_number(o, "top_p", 0, 1, &r->has_top_p, &r->top_p, err)) goto out;
  if (get_number(o, "min_p", 0, 1, &r->has_min_p, &r->min_p, err)) goto out;
  if (get_number(o, "repetition_penalty", 0.01, 100, &r->has_rep, &r->repetition_penalty, err)) goto out;
  if (get_int(o, "top_k", -1, 1 << 30, &r->has_top_k, &t, err)) goto out;
  r->top_k = t < 0 ? 0 : (int32_t)t; /* -1 and 0: off, as vLLM */
  if (get_int(o, "seed", -9.2e18, 9.2e18, &r->has_seed, &t, err)) goto out;
  r->seed = (uint64_t)t;
  has = 0;
  if (get_int(o, "n", 1, 1e9, &has, &t, err)) goto out;
  if (has && t != 1) {
    BAD("n", "only n = 1 is supported");
    goto out;
  }
  static const char *const k_penalties[] = {"presence_penalty", "frequency_penalty"};
  for (int i = 0; i < 2; i++) {
    has = 0;
    if (get_number(o, k_penalties[i], -2, 2, &has, &d, err)) goto out;
    if (has && d != 0) {
      BAD(k_penalties[i], "'%s' is not supported (use repetition_penalty)", k_penalties[i]);
      goto out;
    }
  }
  if ((v = field(o, "response_format"))) {
    const cJSON *type = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "type") : NULL;
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "text")) {
      BAD("response_format", "only 'response_format': {\"type\": \"text\"} is supported");
      goto out;
    }
  }
  if (parse_stop(o, r, err)) goto out;
  if (get_bool(o, "stream", &r->stream, err)) goto out;
  if (get_bool(o, "ignore_eos", &r->ignore_eos, err)) goto out;
  if ((v = field(o, "stream_options"))) {
    if (!cJSON_IsObject(v)) {
      BAD("stream_options", "'stream_options' must be an object");
      goto out;
    }
    if (get_bool(v, "include_usage", &r->include_usage, err)) {
      err->param = "stream_options";
      goto out;
    }
  }
  rc = 0;
out:
  cJSON_Delete(o);
  if (rc) oai_request_free(r);
  return rc;
}

void oai_request_free(oai_request *r) {
  if (!r) return;
  free(r->model);
  cJSON_free(r->conversation);
  free(r->prompt);
  free(r->prompt_ids);
  for (size_t i = 0; i < r->n_stops; i++) free(r->stops[i]);
  memset(r, 0, sizeof *r);
}

/* Library failures of the prompt: the caller's input (400) or the server (500). */
static int lib_error(serve_error *err, xpi_status s, const char *what, const char *param) {
  const char *msg = xpi_last_error();
  if (s == XPI_ERR_OUT_OF_MEMORY)
    serve_error_set(err, 503, "server_error", NULL, NULL, "%s: out of memory", what);
  else if (s == XPI_ERR_INVALID_ARGUMENT || s == XPI_ERR_UNSUPPORTED)
    serve_error_set(err, 400, "invalid_request_error", param, NULL, "%s: %s", what, msg);
  else
    serve_error_set(err, 500, "server_error", NULL, NULL, "%s: %s", what, msg);
  return -1;
}

/* The conversation with the server's template variables added where the request has not set them (its
 * chat_template_kwargs win). malloc'd, or NULL out of memory or when vars is not an object. */
static char *with_defaults(const char *conversation, const char *vars) {
  cJSON *conv = cJSON_Parse(conversation), *v = cJSON_Parse(vars);
  char *out = NULL;
  if (cJSON_IsObject(conv) && cJSON_IsObject(v)) {
    int ok = 1;
    const cJSON *k;
    cJSON_ArrayForEach(k, v)
      if (ok && !cJSON_GetObjectItemCaseSensitive(conv, k->string)) {
        cJSON *d = cJSON_Duplicate(k, 1);
        ok = d && cJSON_AddItemToObject(conv, k->string, d);
        if (!ok) cJSON_Delete(d);
      }
    if (ok) out = cJSON_PrintUnformatted(conv);
  }
  cJSON_Delete(conv);
  cJSON_Delete(v);
  return out;
}

int oai_prompt_ids(const oai_request *r, const xpi_tokenizer *tok, const cli_chat *chat, int32_t **ids, size_t *n,
                   serve_error *err) {
  *ids = NULL;
  *n = 0;
  if (r->kind == OAI_COMPLETION && r->prompt_ids) {
    if (!(*ids = malloc(r->n_prompt_ids * sizeof **ids)))
      return serve_error_set(err, 500, "server_error", NULL, NULL, "out of memory"), -1;
    memcpy(*ids, r->prompt_ids, r->n_prompt_ids * sizeof **ids);
    *n = r->n_prompt_ids;
    return 0;
  }
  char *text = NULL;
  const char *src = r->prompt;
  size_t len = src ? strlen(src) : 0;
  xpi_status s;
  if (r->kind == OAI_CHAT) {
    cli_chat c;
    if (chat) c = *chat;
    else cli_chat_init(&c);
    char *conv = NULL;
    if (c.vars_json && strcmp(c.vars_json, "{}") &&
        !(conv = with_defaults(r->conversation, c.vars_json)))
      return serve_error_set(err, 500, "server_error", NULL, NULL, "out of memory"), -1;
    c.vars_json = NULL; /* merged above as defaults: as variables they would override the request's */
    c.tools = NULL;     /* a request gives its own */
    s = cli_chat_render_status(tok, &c, NULL, 0, conv ? conv : r->conversation, 1, &text, &len);
    cJSON_free(conv);
    if (s != XPI_OK) {
      if (s == XPI_ERR_UNSUPPORTED)
        return serve_error_set(err, 400, "invalid_request_error", "messages", NULL,
                               "the model has no chat template (%s): use /v1/completions, or start the server with "
                               "--chat-template",
                               xpi_last_error()),
               -1;
      return lib_error(err, s, "applying the chat template", "messages");
    }
    src = text;
  }
  /* completions: as transformers' tokenizer(text) (BOS for Llama 3); a rendered template has its own */
  s = cli_tokenize_status(tok, src, len, r->kind == OAI_COMPLETION, ids, n);
  free(text);
  if (s != XPI_OK) return lib_error(err, s, "tokenizing the prompt", r->kind == OAI_CHAT ? "messages" : "prompt");
  if (*n == 0) {
    free(*ids);
    *ids = NULL;
    return BAD(r->kind == OAI_CHAT ? "messages" : "prompt", "the prompt is empty (no tokens)");
  }
  return 0;
}

void oai_gen_options(const oai_request *r, const xpi_gen_options *defaults, xpi_gen_options *go) {
  *go = *defaults;
  go->skip_special = 1; /* OpenAI clients get text without special tokens (vLLM's skip_special_tokens) */
  if (r->has_stop) { /* the request's, also when empty; else the server's --stop */
    go->stop_strings = (const char *const *)r->stops;
    go->n_stop_strings = r->n_stops;
  }
  /* a sampling field turns sampling on (the model may default to greedy); temperature 0 is greedy */
  if (r->has_temperature || r->has_top_p || r->has_top_k || r->has_min_p) go->greedy = 0;
  if (r->has_temperature) go->temperature = (float)r->temperature;
  if (r->has_top_p) go->top_p = (float)r->top_p;
  if (r->has_top_k) go->top_k = r->top_k;
  if (r->has_min_p) go->min_p = (float)r->min_p;
  if (r->has_rep) go->repetition_penalty = (float)r->repetition_penalty;
  if (r->has_seed) go->seed = r->seed;
  if (go->temperature <= 0 || (r->has_top_p && r->top_p <= 0)) go->greedy = 1;
  if (r->ignore_eos >= 0) go->ignore_eos = r->ignore_eos;
  go->logprobs = r->logprobs ? (r->top_logprobs > 0 ? r->top_logprobs : 1) : 0;
}
