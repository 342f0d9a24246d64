/* tokenizer_config.json and the chat templates next to it, as transformers loads them: the special tokens (a
 * string or an AddedToken object {"content": ...}), "chat_template" as one template or a list of {name,
 * template}, chat_template.jinja (transformers 5; it wins over tokenizer_config.json) and
 * additional_chat_templates/NAME.jinja. Each template is parsed here once (src/jinja); a template that does not
 * parse keeps its error, reported when it is used, so the tokenizer still loads. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/status.h"
#include "jinja/jinja.h"
#include "tokenizer/tok_internal.h"

#define MAX_TEMPLATE_BYTES (16u << 20)

static xpi_status oom(void) { return xpi_err(XPI_ERR_OUT_OF_MEMORY, "tokenizer: out of memory"); }

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

void tok_chat_free(tok_chat *c) {
  if (!c) return;
  for (size_t i = 0; i < c->n; i++) {
    free(c->v[i].name);
    free(c->v[i].origin);
    free(c->v[i].error);
    jj_template_free(c->v[i].tpl);
  }
  free(c->v);
  free(c);
}

/* Adds (or replaces) a named template; a parse error is kept as the template's error. */
static xpi_status add_template(tok_chat *c, const char *name, const char *src, size_t len, const char *origin) {
  size_t i;
  for (i = 0; i < c->n; i++)
    if (!strcmp(c->v[i].name, name)) break;
  if (i == c->n) {
    tok_chat_template *nv = realloc(c->v, (c->n + 1) * sizeof *nv);
    if (!nv) return oom();
    c->v = nv;
    memset(&c->v[c->n], 0, sizeof *c->v);
    if (!(c->v[c->n].name = strdup(name))) return oom();
    c->n++;
  } else {
    jj_template_free(c->v[i].tpl);
    free(c->v[i].error);
    free(c->v[i].origin);
    c->v[i].tpl = NULL;
    c->v[i].error = NULL;
  }
  tok_chat_template *t = &c->v[i];
  if (!(t->origin = strdup(origin))) return oom();
  xpi_status st = jj_template_parse(src, len, &t->tpl);
  if (st == XPI_ERR_OUT_OF_MEMORY) return st;
  if (st && !(t->error = strdup(xpi_last_error()))) return oom();
  xpi_err_clear();
  return XPI_OK;
}

static xpi_status add_template_file(tok_chat *c, const char *name, const char *path) {
  char *src = NULL;
  size_t len = 0;
  XPI_TRY(xpi_read_file(path, MAX_TEMPLATE_BYTES, &src, &len));
  xpi_status st = add_template(c, name, src, len, path);
  free(src);
  return st;
}

/* additional_chat_templates/NAME.jinja (transformers 5's layout for named templates). */
static xpi_status load_additional(tok_chat *c, const char *dir) {
  char *sub = xpi_path_join(dir, "additional_chat_templates");
  if (!sub) return oom();
  DIR *d = opendir(sub);
  xpi_status st = XPI_OK;
  if (d) {
    struct dirent *e;
    while (!st && (e = readdir(d))) {
      size_t l = strlen(e->d_name);
      if (l <= 6 || strcmp(e->d_name + l - 6, ".jinja")) continue;
      char *path = xpi_path_join(sub, e->d_name), *name = strndup(e->d_name, l - 6);
      st = path && name ? add_template_file(c, name, path) : oom();
      free(path);
      free(name);
    }
    closedir(d);
  }
  free(sub);
  return st;
}

static xpi_status config_templates(tok_chat *c, const char *path, const cJSON *ct) {
  if (cJSON_IsString(ct)) return add_template(c, "default", ct->valuestring, strlen(ct->valuestring), path);
  if (!cJSON_IsArray(ct))
    return xpi_err(XPI_ERR_FORMAT, "%s: \"chat_template\" must be a string or a list of {\"name\", \"template\"}", path);
  const cJSON *e;
  int i = 0;
  cJSON_ArrayForEach(e, ct) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name"), *tt = cJSON_GetObjectItemCaseSensitive(e, "template");
    if (!cJSON_IsString(name) || !cJSON_IsString(tt))
      return xpi_err(XPI_ERR_FORMAT, "%s: \"chat_template\"[%d] must be {\"name\": string, \"template\": string}", path, i);
    XPI_TRY(add_template(c, name->valuestring, tt->valuestring, strlen(tt->valuestring), path));
    i++;
  }
  return XPI_OK;
}

xpi_status tok_load_config(xpi_tokenizer *t, const char *dir) {
  tok_chat *chat = calloc(1, sizeof *chat);
  if (!chat) return oom();
  t->chat = chat;
  t->config_path = xpi_path_join(dir, "tokenizer_config.json");
  if (!t->config_path) return oom();
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
    if (!st && ct && !cJSON_IsNull(ct)) st = config_templates(chat, t->config_path, ct);
    cJSON_Delete(cfg);
    XPI_TRY(st);
  }
  char *jinja = xpi_path_join(dir, "chat_template.jinja");
  if (!jinja) return oom();
  xpi_status st = xpi_file_exists(jinja) ? add_template_file(chat, "default", jinja) : XPI_OK;
  free(jinja);
  XPI_TRY(st);
  return load_additional(chat, dir);
}
