/* xpuinfer generate: the prompts of a run, from -p, a text file (one prompt per line) or a JSON-lines file
 * (one object per line: "prompt" or "messages", and per-line max_tokens, temperature, top_p, seed, stop). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

static char *xstrdup(const char *s) {
  size_t n = strlen(s);
  char *p = malloc(n + 1);
  if (p) memcpy(p, s, n + 1);
  return p;
}

void gen_set_error(gen_item *it, const char *msg) {
  if (it->error) return;
  it->error = xstrdup(msg);
}

static void item_init(gen_item *it, int index, const gen_defaults *d) {
  memset(it, 0, sizeof *it);
  it->index = index;
  it->go = *d->go;
  it->go.stop_strings = d->go->stop_strings;
  it->go.n_stop_strings = d->go->n_stop_strings;
}

/* The per-line fields of a JSON object into it (errors into it->error). */
static void parse_json_line(gen_item *it, const char *line) {
  cJSON *j = cJSON_Parse(line);
  if (!j || !cJSON_IsObject(j)) {
    gen_set_error(it, "not a JSON object");
    cJSON_Delete(j);
    return;
  }
  const cJSON *p = cJSON_GetObjectItem(j, "prompt"), *m = cJSON_GetObjectItem(j, "messages");
  if (!p == !m) gen_set_error(it, "give exactly one of \"prompt\" (a string) and \"messages\" (an array)");
  else if (p && !cJSON_IsString(p)) gen_set_error(it, "\"prompt\" must be a string");
  else if (p) it->prompt = xstrdup(p->valuestring);
  else if (!cJSON_IsArray(m) || cJSON_GetArraySize(m) == 0) gen_set_error(it, "\"messages\" must be a non-empty array");
  else if (!(it->conversation = cJSON_PrintUnformatted(m))) gen_set_error(it, "out of memory");
  const cJSON *v;
  if ((v = cJSON_GetObjectItem(j, "max_tokens"))) {
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1 << 30 || v->valuedouble != (int)v->valuedouble)
      gen_set_error(it, "\"max_tokens\" must be a whole number >= 0");
    else it->go.max_new_tokens = v->valueint;
  }
  if ((v = cJSON_GetObjectItem(j, "temperature"))) {
    if (!cJSON_IsNumber(v)) gen_set_error(it, "\"temperature\" must be a number");
    else it->go.temperature = (float)v->valuedouble, it->go.greedy = v->valuedouble <= 0;
  }
  if ((v = cJSON_GetObjectItem(j, "top_p"))) {
    if (!cJSON_IsNumber(v)) gen_set_error(it, "\"top_p\" must be a number");
    else it->go.top_p = (float)v->valuedouble, it->go.greedy = 0;
  }
  if ((v = cJSON_GetObjectItem(j, "seed"))) {
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble != (double)(uint64_t)v->valuedouble)
      gen_set_error(it, "\"seed\" must be a whole number >= 0");
    else it->go.seed = (uint64_t)v->valuedouble;
  }
  if ((v = cJSON_GetObjectItem(j, "stop"))) {
    size_t n = 0;
    if (cJSON_IsString(v)) {
      it->stops[n++] = xstrdup(v->valuestring);
    } else if (cJSON_IsArray(v) && cJSON_GetArraySize(v) <= GEN_MAX_STOPS) {
      const cJSON *e;
      cJSON_ArrayForEach(e, v) {
        if (!cJSON_IsString(e)) break;
        it->stops[n++] = xstrdup(e->valuestring);
      }
      if (n != (size_t)cJSON_GetArraySize(v)) gen_set_error(it, "\"stop\" must be a string or an array of strings");
    } else {
      gen_set_error(it, "\"stop\" must be a string or an array of at most 64 strings");
    }
    it->go.stop_strings = (const char *const *)it->stops;
    it->go.n_stop_strings = n;
  }
  cJSON_Delete(j);
}

int gen_read_file(const char *cmd, FILE *f, const char *name, int jsonl, const gen_defaults *d, gen_item **items,
                  int *n) {
  *items = NULL;
  *n = 0;
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int count = 0, room = 0, rc = 0;
  gen_item *v = NULL;
  for (long lineno = 1; (len = getline(&line, &cap, f)) >= 0; lineno++) {
    const int nul = memchr(line, 0, (size_t)len) != NULL;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    if (len == 0) continue;
    if (count == room) {
      room = room ? 2 * room : 64;
      gen_item *w = realloc(v, (size_t)room * sizeof *w);
      if (!w) {
        fprintf(stderr, "xpuinfer %s: %s: out of memory reading the prompts\n", cmd, name);
        rc = 1;
        break;
      }
      v = w;
    }
    gen_item *it = &v[count];
    item_init(it, count, d);
    it->line = lineno;
    count++;
    char msg[96];
    if (nul) {
      snprintf(msg, sizeof msg, "line %ld holds a NUL byte (%s prompts cannot)", lineno, jsonl ? "JSON" : "text");
      gen_set_error(it, msg);
    } else if (jsonl) {
      parse_json_line(it, line);
    } else if (!(it->prompt = xstrdup(line))) {
      gen_set_error(it, "out of memory");
    }
  }
  if (rc == 0 && ferror(f)) {
    fprintf(stderr, "xpuinfer %s: %s: read error: %s\n", cmd, name, strerror(errno));
    rc = 1;
  }
  free(line);
  *items = v;
  *n = count;
  return rc;
}

int gen_one(const char *prompt, const char *conversation, const gen_defaults *d, gen_item **items, int *n) {
  gen_item *it = calloc(1, sizeof *it);
  if (!it) return 1;
  item_init(it, 0, d);
  if (prompt) it->prompt = xstrdup(prompt);
  else it->conversation = xstrdup(conversation);
  *items = it;
  *n = 1;
  return it->prompt || it->conversation ? 0 : 1;
}

void gen_tokenize(const xpi_tokenizer *tok, const gen_defaults *d, gen_item *it) {
  if (it->error) return;
  char *text = NULL;
  const char *src = it->prompt;
  size_t len = src ? strlen(src) : 0;
  xpi_status s = XPI_OK;
  const int chat = d->chat || it->conversation;
  if (chat) { /* a plain prompt with --chat: one user message, after --system; "messages": as given */
    xpi_chat_message one[2];
    size_t nm = 0;
    if (d->system) one[nm++] = (xpi_chat_message){.role = "system", .content = d->system};
    one[nm++] = (xpi_chat_message){.role = "user", .content = it->prompt};
    s = cli_chat_render_status(tok, d->chat_opts, it->conversation ? NULL : one, nm, it->conversation, 1, &text, &len);
    if (s != XPI_OK) {
      char msg[1024];
      snprintf(msg, sizeof msg, "applying the chat template: %s", xpi_last_error());
      gen_set_error(it, msg);
      return;
    }
    src = text;
  }
  int add_special = !d->no_special && !chat; /* a rendered template already has its special tokens */
  size_t n = 0;
  s = cli_tokenize_status(tok, src, len, add_special, &it->ids, &n);
  free(text);
  if (s != XPI_OK) {
    char msg[1024];
    snprintf(msg, sizeof msg, "tokenizing the prompt: %s", xpi_last_error());
    gen_set_error(it, msg);
    return;
  }
  it->n_ids = n;
}

void gen_items_free(gen_item *items, int n) {
  for (int i = 0; items && i < n; i++) {
    gen_item *it = &items[i];
    free(it->prompt);
    free(it->conversation); /* cJSON_PrintUnformatted's or xstrdup's: both malloc */
    for (size_t k = 0; k < GEN_MAX_STOPS; k++) free(it->stops[k]);
    free(it->error);
    free(it->ids);
    cli_buf_free(&it->text);
    cli_buf_free(&it->out_ids);
    cli_buf_free(&it->lp);
  }
  free(items);
}
