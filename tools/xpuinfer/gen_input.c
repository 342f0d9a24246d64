/* xpuinfer generate: the prompts of a run, from -p, a text file (one prompt per line) or a JSON-lines file
 * (one object per line: "prompt" or "messages", and per-line max_tokens, temperature, top_p, seed, stop). */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_args.h"
#include "gen.h"

int gbuf_add(gbuf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t c = b->cap ? b->cap : 256;
    while (c < b->len + n + 1) c *= 2;
    char *q = realloc(b->p, c);
    if (!q) return -1;
    b->p = q;
    b->cap = c;
  }
  if (n) memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
  return 0;
}

int gbuf_printf(gbuf *b, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  return n < 0 || (size_t)n >= sizeof tmp ? -1 : gbuf_add(b, tmp, (size_t)n);
}

int gbuf_json_str(gbuf *b, const char *s, size_t n) {
  if (gbuf_add(b, "\"", 1)) return -1;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    int r;
    if (c == '"') r = gbuf_add(b, "\\\"", 2);
    else if (c == '\\') r = gbuf_add(b, "\\\\", 2);
    else if (c == '\n') r = gbuf_add(b, "\\n", 2);
    else if (c == '\t') r = gbuf_add(b, "\\t", 2);
    else if (c == '\r') r = gbuf_add(b, "\\r", 2);
    else if (c < 0x20) r = gbuf_printf(b, "\\u%04x", c);
    else r = gbuf_add(b, (const char *)&c, 1);
    if (r) return -1;
  }
  return gbuf_add(b, "\"", 1);
}

static char *xstrdup(const char *s) {
  size_t n = strlen(s);
  char *p = malloc(n + 1);
  if (p) memcpy(p, s, n + 1);
  return p;
}

static void set_error(gen_item *it, const char *msg) {
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
    set_error(it, "not a JSON object");
    cJSON_Delete(j);
    return;
  }
  const cJSON *p = cJSON_GetObjectItem(j, "prompt"), *m = cJSON_GetObjectItem(j, "messages");
  if (!p == !m) set_error(it, "give exactly one of \"prompt\" (a string) and \"messages\" (an array)");
  else if (p && !cJSON_IsString(p)) set_error(it, "\"prompt\" must be a string");
  else if (p) it->prompt = xstrdup(p->valuestring);
  else if (!cJSON_IsArray(m) || cJSON_GetArraySize(m) == 0) set_error(it, "\"messages\" must be a non-empty array");
  else {
    const cJSON *e;
    cJSON_ArrayForEach(e, m) /* the messages go to the template as they are (tool calls, parts, ...) */
      if (!cJSON_IsObject(e) || !cJSON_IsString(cJSON_GetObjectItem(e, "role"))) {
        set_error(it, "every message must be an object with a \"role\" string");
        break;
      }
    if (!it->error && !(it->conv = cJSON_PrintUnformatted(m))) set_error(it, "out of memory");
  }
  const cJSON *v;
  if ((v = cJSON_GetObjectItem(j, "max_tokens"))) {
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1 << 30 || v->valuedouble != (int)v->valuedouble)
      set_error(it, "\"max_tokens\" must be a whole number >= 0");
    else it->go.max_new_tokens = v->valueint;
  }
  if ((v = cJSON_GetObjectItem(j, "temperature"))) {
    if (!cJSON_IsNumber(v)) set_error(it, "\"temperature\" must be a number");
    else it->go.temperature = (float)v->valuedouble, it->go.greedy = v->valuedouble <= 0;
  }
  if ((v = cJSON_GetObjectItem(j, "top_p"))) {
    if (!cJSON_IsNumber(v)) set_error(it, "\"top_p\" must be a number");
    else it->go.top_p = (float)v->valuedouble, it->go.greedy = 0;
  }
  if ((v = cJSON_GetObjectItem(j, "seed"))) {
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble != (double)(uint64_t)v->valuedouble)
      set_error(it, "\"seed\" must be a whole number >= 0");
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
      if (n != (size_t)cJSON_GetArraySize(v)) set_error(it, "\"stop\" must be a string or an array of strings");
    } else {
      set_error(it, "\"stop\" must be a string or an array of at most 64 strings");
    }
    it->go.stop_strings = (const char *const *)it->stops;
    it->go.n_stop_strings = n;
  }
  cJSON_Delete(j);
}

int gen_read_file(const char *path, int jsonl, const gen_defaults *d, gen_item **items, int *n) {
  *items = NULL;
  *n = 0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "xpuinfer generate: cannot open %s\n", path);
    return 1;
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int count = 0, room = 0, rc = 0;
  gen_item *v = NULL;
  while ((len = getline(&line, &cap, f)) >= 0) {
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    if (len == 0) continue;
    if (count == room) {
      room = room ? 2 * room : 64;
      gen_item *w = realloc(v, (size_t)room * sizeof *w);
      if (!w) {
        fprintf(stderr, "xpuinfer generate: out of memory reading %s\n", path);
        rc = 1;
        break;
      }
      v = w;
    }
    gen_item *it = &v[count];
    item_init(it, count, d);
    count++;
    if (strlen(line) != (size_t)len) set_error(it, "the line holds a NUL byte");
    else if (jsonl) parse_json_line(it, line);
    else if (!(it->prompt = xstrdup(line))) set_error(it, "out of memory");
  }
  free(line);
  fclose(f);
  *items = v;
  *n = count;
  return rc;
}

int gen_one(const char *prompt, const gen_defaults *d, gen_item **items, int *n) {
  gen_item *it = calloc(1, sizeof *it);
  if (!it) return 1;
  item_init(it, 0, d);
  it->prompt = prompt ? xstrdup(prompt) : NULL;
  *items = it;
  *n = 1;
  return !prompt || it->prompt ? 0 : 1;
}

void gen_tokenize(const xpi_tokenizer *tok, const gen_defaults *d, gen_item *it) {
  if (it->error) return;
  char *text = NULL;
  const char *src = it->prompt;
  size_t len = src ? strlen(src) : 0;
  xpi_status s = XPI_OK;
  int chat = d->chat || it->conv;
  if (chat) { /* the line's messages, --messages, or the prompt as one user turn (after --system) */
    char *turn = it->conv || d->ca->messages ? NULL : cli_chat_user_turn(d->system, it->prompt);
    const char *conv = it->conv ? it->conv : d->ca->messages ? d->ca->messages : turn;
    s = conv ? cli_chat_render(tok, d->ca, conv, 1, &text, &len) : XPI_ERR_OUT_OF_MEMORY;
    free(turn);
    if (s != XPI_OK) {
      char msg[512];
      snprintf(msg, sizeof msg, "applying the chat template: %s", xpi_last_error());
      set_error(it, msg);
      return;
    }
    src = text;
  }
  int add_special = !d->no_special && !chat; /* a rendered template already has its special tokens */
  size_t n = 0;
  s = xpi_tokenize(tok, src, len, add_special, NULL, 0, &n);
  if (s == XPI_ERR_BUFFER_TOO_SMALL || s == XPI_OK) {
    it->ids = malloc((n ? n : 1) * sizeof *it->ids);
    s = it->ids ? xpi_tokenize(tok, src, len, add_special, it->ids, n, &n) : XPI_ERR_OUT_OF_MEMORY;
  }
  free(text);
  if (s != XPI_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "tokenizing the prompt: %s", xpi_last_error());
    set_error(it, msg);
    return;
  }
  it->n_ids = n;
}

void gen_items_free(gen_item *items, int n) {
  for (int i = 0; items && i < n; i++) {
    gen_item *it = &items[i];
    free(it->prompt);
    cJSON_free(it->conv);
    for (size_t k = 0; k < GEN_MAX_STOPS; k++) free(it->stops[k]);
    free(it->error);
    free(it->ids);
    free(it->text.p);
    free(it->out_ids.p);
    free(it->lp.p);
  }
  free(items);
}
