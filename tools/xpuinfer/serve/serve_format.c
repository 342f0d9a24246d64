/* OpenAI response objects, built with cJSON: chat.completion / text_completion, their stream chunks
 * (chat.completion.chunk; completions stream text_completion objects), the usage chunk, and error objects. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

char *serve_error_json(const serve_error *e) {
  cJSON *o = cJSON_CreateObject(), *x = cJSON_AddObjectToObject(o, "error");
  if (x) {
    cJSON_AddStringToObject(x, "message", e->message);
    cJSON_AddStringToObject(x, "type", e->type ? e->type : "server_error");
    if (e->param) cJSON_AddStringToObject(x, "param", e->param);
    else cJSON_AddNullToObject(x, "param");
    if (e->code) cJSON_AddStringToObject(x, "code", e->code);
    else cJSON_AddNullToObject(x, "code");
  }
  char *s = x ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  return s;
}

void oai_logprob_free(oai_logprob *lp) {
  if (!lp) return;
  free(lp->token);
  for (int32_t i = 0; i < lp->n_top; i++) free(lp->top[i].token);
  free(lp->top);
  memset(lp, 0, sizeof *lp);
}

/* The chat API's "bytes": the token's UTF-8 bytes as integers. */
static cJSON *bytes_array(const char *s) {
  cJSON *a = cJSON_CreateArray();
  for (const unsigned char *p = (const unsigned char *)s; a && *p; p++) cJSON_AddItemToArray(a, cJSON_CreateNumber(*p));
  return a;
}

static cJSON *chat_lp_entry(const oai_logprob *lp) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "token", lp->token);
  cJSON_AddNumberToObject(o, "logprob", lp->logprob);
  cJSON_AddItemToObject(o, "bytes", bytes_array(lp->token));
  cJSON *top = cJSON_AddArrayToObject(o, "top_logprobs");
  for (int32_t i = 0; top && i < lp->n_top; i++) {
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "token", lp->top[i].token);
    cJSON_AddNumberToObject(t, "logprob", lp->top[i].logprob);
    cJSON_AddItemToObject(t, "bytes", bytes_array(lp->top[i].token));
    cJSON_AddItemToArray(top, t);
  }
  return o;
}

/* chat: {"content": [...]}; completions: {"tokens", "token_logprobs", "top_logprobs", "text_offset"}. */
static cJSON *logprobs_object(oai_kind kind, const oai_logprob *lps, size_t n) {
  cJSON *o = cJSON_CreateObject();
  if (kind == OAI_CHAT) {
    cJSON *c = cJSON_AddArrayToObject(o, "content");
    for (size_t i = 0; c && i < n; i++) cJSON_AddItemToArray(c, chat_lp_entry(&lps[i]));
    cJSON_AddNullToObject(o, "refusal");
    return o;
  }
  cJSON *tokens = cJSON_AddArrayToObject(o, "tokens"), *tlp = cJSON_AddArrayToObject(o, "token_logprobs"),
        *top = cJSON_AddArrayToObject(o, "top_logprobs"), *off = cJSON_AddArrayToObject(o, "text_offset");
  for (size_t i = 0; tokens && tlp && top && off && i < n; i++) {
    cJSON_AddItemToArray(tokens, cJSON_CreateString(lps[i].token));
    cJSON_AddItemToArray(tlp, cJSON_CreateNumber(lps[i].logprob));
    cJSON *d = cJSON_CreateObject();
    for (int32_t k = 0; d && k < lps[i].n_top; k++)
      if (!cJSON_GetObjectItemCaseSensitive(d, lps[i].top[k].token)) /* two ids may decode alike: keep the best */
        cJSON_AddNumberToObject(d, lps[i].top[k].token, lps[i].top[k].logprob);
    cJSON_AddItemToArray(top, d);
    cJSON_AddItemToArray(off, cJSON_CreateNumber((double)lps[i].text_offset));
  }
  return o;
}

static cJSON *usage_object(const oai_usage *u) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "prompt_tokens", (double)u->prompt);
  cJSON_AddNumberToObject(o, "completion_tokens", (double)u->completion);
  cJSON_AddNumberToObject(o, "total_tokens", (double)(u->prompt + u->completion));
  cJSON *d = cJSON_AddObjectToObject(o, "prompt_tokens_details");
  if (d) cJSON_AddNumberToObject(d, "cached_tokens", (double)u->cached);
  return o;
}

static cJSON *envelope(const oai_meta *m, int chunk) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "id", m->id);
  cJSON_AddStringToObject(o, "object", m->kind == OAI_CHAT ? (chunk ? "chat.completion.chunk" : "chat.completion")
                                                           : "text_completion");
  cJSON_AddNumberToObject(o, "created", (double)m->created);
  cJSON_AddStringToObject(o, "model", m->model);
  cJSON_AddStringToObject(o, "system_fingerprint", "xpuinfer");
  return o;
}

/* A string that may hold any bytes up to len (cJSON wants NUL-terminated text). */
static cJSON *string_n(const char *s, size_t len) {
  char *t = malloc(len + 1);
  if (!t) return NULL;
  memcpy(t, s, len);
  t[len] = 0;
  cJSON *v = cJSON_CreateString(t);
  free(t);
  return v;
}

static char *print_and_free(cJSON *o) {
  char *s = o ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  return s;
}

char *oai_format_response(const oai_meta *m, const char *text, size_t len, const oai_logprob *lps, size_t n_lps,
                          int with_logprobs, const char *finish, const oai_usage *u) {
  cJSON *o = envelope(m, 0), *choices = cJSON_AddArrayToObject(o, "choices"), *c = cJSON_CreateObject();
  cJSON_AddItemToArray(choices, c);
  cJSON_AddNumberToObject(c, "index", 0);
  if (m->kind == OAI_CHAT) {
    cJSON *msg = cJSON_AddObjectToObject(c, "message");
    cJSON_AddStringToObject(msg, "role", "assistant");
    cJSON_AddItemToObject(msg, "content", string_n(text, len));
    cJSON_AddNullToObject(msg, "refusal");
  } else {
    cJSON_AddItemToObject(c, "text", string_n(text, len));
  }
  if (with_logprobs) cJSON_AddItemToObject(c, "logprobs", logprobs_object(m->kind, lps, n_lps));
  else cJSON_AddNullToObject(c, "logprobs");
  cJSON_AddStringToObject(c, "finish_reason", finish);
  cJSON_AddItemToObject(o, "usage", usage_object(u));
  return print_and_free(o);
}

/* "data: <json>\n\n" */
static char *sse(char *json) {
  if (!json) return NULL;
  size_t n = strlen(json);
  char *s = malloc(n + 9);
  if (s) {
    memcpy(s, "data: ", 6);
    memcpy(s + 6, json, n);
    memcpy(s + 6 + n, "\n\n", 3);
  }
  cJSON_free(json);
  return s;
}

char *oai_format_chunk(const oai_meta *m, const char *delta, size_t len, int role_first, const oai_logprob *lp,
                       int with_logprobs, const char *finish, int with_usage_field) {
  cJSON *o = envelope(m, 1), *choices = cJSON_AddArrayToObject(o, "choices"), *c = cJSON_CreateObject();
  cJSON_AddItemToArray(choices, c);
  cJSON_AddNumberToObject(c, "index", 0);
  if (m->kind == OAI_CHAT) {
    cJSON *d = cJSON_AddObjectToObject(c, "delta");
    if (role_first) {
      cJSON_AddStringToObject(d, "role", "assistant");
      cJSON_AddStringToObject(d, "content", "");
    } else if (!finish) {
      cJSON_AddItemToObject(d, "content", string_n(delta, len));
    }
  } else {
    cJSON_AddItemToObject(c, "text", string_n(finish ? "" : delta, finish ? 0 : len));
  }
  if (with_logprobs && lp) cJSON_AddItemToObject(c, "logprobs", logprobs_object(m->kind, lp, 1));
  else cJSON_AddNullToObject(c, "logprobs");
  if (finish) cJSON_AddStringToObject(c, "finish_reason", finish);
  else cJSON_AddNullToObject(c, "finish_reason");
  if (with_usage_field) cJSON_AddNullToObject(o, "usage");
  return sse(print_and_free(o));
}

char *oai_format_usage_chunk(const oai_meta *m, const oai_usage *u) {
  cJSON *o = envelope(m, 1);
  cJSON_AddArrayToObject(o, "choices");
  cJSON_AddItemToObject(o, "usage", usage_object(u));
  return sse(print_and_free(o));
}
