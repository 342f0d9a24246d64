/* tokenizer_config.json (or chat_template.jinja): special token names and the chat template, recognised by a
 * fingerprint of its distinctive parts (the Jinja text is never interpreted; tok_chat.c renders the family). */
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/status.h"
#include "tokenizer/tok_internal.h"

static xpi_status oom(void) { return xpi_err(XPI_ERR_OUT_OF_MEMORY, "tokenizer: out of memory"); }

static int has(const char *s, const char *needle) { return strstr(s, needle) != NULL; }

/* A special token field: "text", {"content": "text"} or null. */
static xpi_status config_token(const char *path, const cJSON *cfg, const char *key, char **out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
  if (!v || cJSON_IsNull(v)) return XPI_OK;
  if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
  if (!cJSON_IsString(v))
    return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" must be a string, {\"content\": string} or null", path, key);
  if (!(*out = strdup(v->valuestring))) return oom();
  return XPI_OK;
}

/* ChatML's default system prompt: the first literal '<|im_start|>system\n TEXT <|im_end|>' in the template (a
 * Jinja string, so "\\n" stands for a newline); NULL when there is none. */
static xpi_status chatml_default_system(const char *tpl, char **out) {
  *out = NULL;
  for (const char *p = strstr(tpl, "<|im_start|>system"); p; p = strstr(p + 1, "<|im_start|>system")) {
    const char *q = p + strlen("<|im_start|>system");
    if (*q == '\n') q++;
    else if (q[0] == '\\' && q[1] == 'n') q += 2;
    else continue;
    const char *end = strstr(q, "<|im_end|>");
    if (!end || end == q) continue;
    size_t n = (size_t)(end - q);
    if (memchr(q, '\'', n) || memchr(q, '"', n) || memchr(q, '{', n) || memchr(q, '+', n)) continue;
    tok_buf b = {0};
    xpi_status st = XPI_OK;
    for (size_t i = 0; !st && i < n; i++) {
      if (q[i] == '\\' && i + 1 < n && q[i + 1] == 'n') { st = tok_buf_put(&b, "\n", 1); i++; }
      else st = tok_buf_put(&b, q + i, 1);
    }
    if (st) { tok_buf_free(&b); return st; }
    *out = b.p;
    return XPI_OK;
  }
  return XPI_OK;
}

static int fingerprint(const char *tpl) {
  if (has(tpl, "<|im_start|>") && has(tpl, "<|im_end|>") && has(tpl, "enable_thinking") && has(tpl, "</think>") &&
      has(tpl, "reasoning_content") && has(tpl, "last_query_index"))
    return TOK_CHAT_QWEN3;
  if (has(tpl, "<|start_header_id|>") && has(tpl, "<|end_header_id|>") && has(tpl, "<|eot_id|>") &&
      has(tpl, "| trim") && has(tpl, "bos_token") && !has(tpl, "Cutting Knowledge Date") && !has(tpl, "tools") &&
      !has(tpl, "system_message"))
    return TOK_CHAT_LLAMA3;
  /* Llama 3.1 / 3.2 / 3.3 Instruct: every piece that shapes a conversation without tools, as the Jinja source
   * spells it (so "\\n" is a backslash and an n). */
  static const char *const llama31[] = {
      "{{- bos_token }}",
      "{%- if not date_string is defined %}",
      "{%- if messages[0]['role'] == 'system' %}",
      "{%- set system_message = messages[0]['content']|trim %}",
      "{%- set messages = messages[1:] %}",
      "{%- set system_message = \"\" %}",
      "{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}",
      "{{- \"Cutting Knowledge Date: December 2023\\n\" }}",
      "{{- \"Today Date: \" + date_string + \"\\n\\n\" }}",
      "{{- system_message }}\n{{- \"<|eot_id|>\" }}",
      "{%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}",
      "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
      "'<|eot_id|>' }}",
      "{%- if add_generation_prompt %}\n    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}",
  };
  int is_llama31 = 1;
  for (size_t i = 0; i < sizeof llama31 / sizeof *llama31; i++) is_llama31 &= has(tpl, llama31[i]);
  if (is_llama31 && has(tpl, "strftime_now")) return TOK_CHAT_LLAMA32_DATED;
  if (is_llama31 && has(tpl, "{%- set date_string = \"26 Jul 2024\" %}")) return TOK_CHAT_LLAMA31;
  /* Qwen2 / Qwen2.5: every turn '<|im_start|>' + role + '\n' + content + '<|im_end|>' + '\n' */
  if (has(tpl, "<|im_start|>") && has(tpl, "<|im_end|>") && has(tpl, "add_generation_prompt") &&
      (has(tpl, "message['content']") || has(tpl, "message.content")) && !has(tpl, "think") &&
      !has(tpl, "reasoning") && !has(tpl, "bos_token") && !has(tpl, "date"))
    return TOK_CHAT_CHATML;
  return TOK_CHAT_UNKNOWN;
}

xpi_status tok_load_config(xpi_tokenizer *t, const char *dir) {
  char *jinja = xpi_path_join(dir, "chat_template.jinja");
  if (!jinja) return XPI_ERR_OUT_OF_MEMORY;
  if (xpi_file_exists(jinja)) { /* transformers 5 saves the template on its own */
    size_t len;
    xpi_status st = xpi_read_file(jinja, 16u << 20, &t->chat_template, &len);
    if (st) { free(jinja); return st; }
  }
  free(jinja);
  t->config_path = xpi_path_join(dir, "tokenizer_config.json");
  if (!t->config_path) return XPI_ERR_OUT_OF_MEMORY;
  if (xpi_file_exists(t->config_path)) {
    cJSON *cfg = NULL;
    XPI_TRY(xpi_json_load_file(t->config_path, 64u << 20, &cfg));
    xpi_status st = XPI_OK;
    if (!cJSON_IsObject(cfg)) st = xpi_err(XPI_ERR_FORMAT, "%s: the top level must be a JSON object", t->config_path);
    if (!st) st = config_token(t->config_path, cfg, "bos_token", &t->bos_token);
    if (!st) st = config_token(t->config_path, cfg, "eos_token", &t->eos_token);
    if (!st) st = config_token(t->config_path, cfg, "pad_token", &t->pad_token);
    if (!st) st = config_token(t->config_path, cfg, "unk_token", &t->unk_token);
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template");
    if (!st && !t->chat_template && ct && !cJSON_IsNull(ct)) {
      const char *tpl = NULL;
      if (cJSON_IsString(ct)) tpl = ct->valuestring;
      else if (cJSON_IsArray(ct)) { /* named templates: use "default" */
        const cJSON *e;
        cJSON_ArrayForEach(e, ct) {
          const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
          const cJSON *tt = cJSON_GetObjectItemCaseSensitive(e, "template");
          if (cJSON_IsString(name) && !strcmp(name->valuestring, "default") && cJSON_IsString(tt)) tpl = tt->valuestring;
        }
      }
      if (!tpl) st = xpi_err(XPI_ERR_FORMAT, "%s: \"chat_template\" must be a string or a list with a \"default\" "
                             "template", t->config_path);
      else if (!(t->chat_template = strdup(tpl))) st = oom();
    }
    cJSON_Delete(cfg);
    XPI_TRY(st);
  }
  t->chat_family = t->chat_template ? fingerprint(t->chat_template) : TOK_CHAT_NONE;
  if (t->chat_family == TOK_CHAT_CHATML) {
    XPI_TRY(chatml_default_system(t->chat_template, &t->chat_default_system));
    t->chat_tool_response = has(t->chat_template, "<tool_response>");
  }
  return XPI_OK;
}
