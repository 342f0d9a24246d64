/* xpi_apply_chat_template(_json): choose the template as transformers does (the caller's, a named one, "tool_use"
 * when tools are given, else "default"), gather the variables apply_chat_template passes (special tokens,
 * messages, tools=None, documents=None, add_generation_prompt, extra keywords), render with the Jinja engine and
 * hand the text back with the size-query convention. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat_internal.h"
#include "core/json.h"
#include "core/status.h"
#include "jinja/jinja.h"
#include "tokenizer/tok_internal.h"

void xpi_chat_options_default(xpi_chat_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->add_generation_prompt = 1;
}

/* The caller's options, honouring a smaller struct_size (fields it does not have keep their defaults). */
static xpi_status read_options(const xpi_chat_options *in, xpi_chat_options *o) {
  xpi_chat_options_default(o);
  if (!in) return XPI_OK;
  if (in->struct_size < offsetof(xpi_chat_options, tools_json))
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_chat_options: struct_size %zu is too small (fill the options with "
                   "xpi_chat_options_default first)", in->struct_size);
  size_t n = in->struct_size < sizeof *o ? in->struct_size : sizeof *o;
  memcpy(o, in, n);
  o->struct_size = sizeof *o;
  return XPI_OK;
}

static int is_null_json(const char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
  if (strncmp(s, "null", 4)) return 0;
  for (s += 4; *s; s++)
    if (!(*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) return 0;
  return 1;
}

/* The template to render: *own is set when it was parsed here (the caller's source) and must be freed. */
static xpi_status pick_template(const xpi_tokenizer *tok, const xpi_chat_options *o, int has_tools,
                                const jj_template **out, jj_template **own) {
  *out = NULL;
  *own = NULL;
  if (o->chat_template) {
    xpi_status st = jj_template_parse(o->chat_template, strlen(o->chat_template), own);
    if (st) return xpi_err_prefix(st, "the chat template given in the options: ");
    *out = *own;
    return XPI_OK;
  }
  if (!tok)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_apply_chat_template: give a tokenizer or options.chat_template");
  const tok_chat *c = tok->chat;
  if (!c || !c->n)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: this tokenizer has no chat template (no \"chat_template\" in "
                   "tokenizer_config.json and no chat_template.jinja next to it); give one with "
                   "options.chat_template (--chat-template FILE)", tok->config_path ? tok->config_path : "tokenizer");
  const char *want = o->template_name;
  const tok_chat_template *t = NULL;
  for (size_t i = 0; i < c->n && !t; i++) {
    const char *n = c->v[i].name;
    if (want ? !strcmp(n, want) : has_tools && !strcmp(n, "tool_use")) t = &c->v[i];
  }
  for (size_t i = 0; i < c->n && !t && !want; i++)
    if (!strcmp(c->v[i].name, "default")) t = &c->v[i];
  if (!t) {
    char names[512] = "";
    size_t off = 0;
    for (size_t i = 0; i < c->n && off < sizeof names; i++)
      off += (size_t)snprintf(names + off, sizeof names - off, "%s'%s'", i ? ", " : "", c->v[i].name);
    if (want)
      return xpi_err(XPI_ERR_INVALID_ARGUMENT, "%s: no chat template named '%s' (the tokenizer has %s)",
                     tok->config_path, want, names);
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "%s: this model has several chat templates and none is named "
                   "'default': choose one with options.template_name (the tokenizer has %s)", tok->config_path, names);
  }
  if (!t->tpl) return xpi_err(XPI_ERR_FORMAT, "%s: chat template '%s': %s", t->origin, t->name, t->error);
  *out = t->tpl;
  return XPI_OK;
}

/* Renders with the variables; conv (JSON) is either the messages array (conv_is_messages) or an object whose
 * keys are variables. */
static xpi_status render(const xpi_tokenizer *tok, const xpi_chat_options *o, const char *conv, size_t conv_len,
                         int conv_is_messages, int conv_has_tools, char *text, size_t cap, size_t *len_out) {
  int has_tools = conv_has_tools || (o->tools_json && !is_null_json(o->tools_json));
  const jj_template *tpl;
  jj_template *own;
  XPI_TRY(pick_template(tok, o, has_tools, &tpl, &own));
  jj_var v[12];
  size_t n = 0;
  const char *specials[4][2] = {{"bos_token", tok ? tok->bos_token : NULL}, {"eos_token", tok ? tok->eos_token : NULL},
                                {"unk_token", tok ? tok->unk_token : NULL}, {"pad_token", tok ? tok->pad_token : NULL}};
  for (int i = 0; i < 4; i++)
    if (specials[i][1]) v[n++] = (jj_var){.name = specials[i][0], .str = specials[i][1], .str_len = strlen(specials[i][1])};
  v[n++] = (jj_var){.name = "tools", .json = "null", .json_len = 4};
  v[n++] = (jj_var){.name = "documents", .json = "null", .json_len = 4};
  const char *agp = o->add_generation_prompt ? "true" : "false";
  v[n++] = (jj_var){.name = "add_generation_prompt", .json = agp, .json_len = strlen(agp)};
  v[n++] = (jj_var){.name = conv_is_messages ? "messages" : NULL, .json = conv, .json_len = conv_len};
  if (o->tools_json) v[n++] = (jj_var){.name = "tools", .json = o->tools_json, .json_len = strlen(o->tools_json)};
  if (o->documents_json)
    v[n++] = (jj_var){.name = "documents", .json = o->documents_json, .json_len = strlen(o->documents_json)};
  if (o->variables_json) v[n++] = (jj_var){.name = NULL, .json = o->variables_json, .json_len = strlen(o->variables_json)};
  jj_render_opts ro = {.now = o->now};
  char *out = NULL;
  size_t len = 0;
  xpi_status st = jj_render(tpl, v, n, &ro, &out, &len);
  jj_template_free(own);
  if (st) return xpi_err_prefix(st, "chat template: ");
  *len_out = len;
  if (!text || cap < len + 1)
    st = xpi_err(XPI_ERR_BUFFER_TOO_SMALL, "xpi_apply_chat_template: the text needs %zu bytes plus the NUL, "
                 "capacity is %zu", len, cap);
  else
    memcpy(text, out, len + 1);
  free(out);
  return st;
}

xpi_status xpi_apply_chat_template(const xpi_tokenizer *tok, const xpi_chat_message *msgs, size_t n_msgs,
                                   const xpi_chat_options *opts, char *text, size_t cap, size_t *len_out) {
  if (!len_out || (n_msgs && !msgs))
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_apply_chat_template: len_out and msgs must not be NULL");
  xpi_chat_options o;
  XPI_TRY(read_options(opts, &o));
  char *json = NULL;
  size_t len = 0;
  XPI_TRY(chat_messages_json(msgs, n_msgs, &json, &len));
  xpi_status st = render(tok, &o, json, len, 1, 0, text, cap, len_out);
  free(json);
  return st;
}

xpi_status xpi_apply_chat_template_json(const xpi_tokenizer *tok, const char *conversation, size_t len,
                                        const xpi_chat_options *opts, char *text, size_t cap, size_t *len_out) {
  if (!len_out || !conversation)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_apply_chat_template_json: conversation and len_out must not be NULL");
  xpi_chat_options o;
  XPI_TRY(read_options(opts, &o));
  size_t bad = chat_utf8_valid(conversation, len);
  if (bad != len) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "conversation: not valid UTF-8 (byte %zu)", bad);
  cJSON *j = NULL;
  if (xpi_json_parse("conversation", conversation, len, &j)) return XPI_ERR_INVALID_ARGUMENT;
  int is_array = cJSON_IsArray(j), has_tools = 0;
  xpi_status st = XPI_OK;
  if (!is_array) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "messages"), *t = cJSON_GetObjectItemCaseSensitive(j, "tools");
    if (!cJSON_IsObject(j))
      st = xpi_err(XPI_ERR_INVALID_ARGUMENT, "conversation: must be a JSON array of messages or an object with "
                   "\"messages\"");
    else if (!cJSON_IsArray(m))
      st = xpi_err(XPI_ERR_INVALID_ARGUMENT, "conversation: \"messages\" must be an array of messages");
    has_tools = t && !cJSON_IsNull(t);
  }
  cJSON_Delete(j);
  if (st) return st;
  return render(tok, &o, conversation, len, is_array, has_tools, text, cap, len_out);
}
