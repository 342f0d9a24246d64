/* xpuinfer chat: a multi-turn conversation through the model's chat template. Each line of stdin is a user
 * turn (a terminal or a pipe); each answer streams to stdout and ends with a newline. The whole conversation
 * is rendered by the template every turn; the part of it already in the KV cache (the previous prompt and
 * answer, when the template renders them the same way again) is not evaluated twice. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_gen.h"

#define CMD "chat"

static void help(void) {
  printf("usage: xpuinfer chat -m MODEL [options]\n"
         "\n"
         "Chats with MODEL using its chat template (tokenizer_config.json). Each line read from stdin is a user\n"
         "turn; the answer streams to stdout followed by a newline, and the conversation is kept for the next\n"
         "turn. Works from a terminal or a pipe (one answer line per turn; empty lines are skipped). Commands on\n"
         "a line of their own: /reset forgets the conversation (the --system message stays), /exit (or end of\n"
         "input) quits. Ctrl-C stops the answer being generated. When the conversation no longer fits the\n"
         "context, the turn is refused with a message (the answer line is empty): /reset, or raise --n-ctx.\n"
         "\n"
         "      --json               no streaming: one JSON object per turn with the rendered conversation\n"
         "                           (prompt, prompt_ids), the answer (text, ids) and finish_reason\n" CLI_GEN_HELP
         CLI_COMMON_HELP
         "\n"
         "Options take their value as --opt VALUE or --opt=VALUE. Exit status: 0; 1 when a turn failed (the\n"
         "others are still answered) or loading failed; 2 for a bad option or value (before the model loads).\n");
}

typedef struct chat {
  cli_gen g;
  int json, failed;
  xpi_model *m;
  xpi_request *r;
  xpi_gen_options go;
  xpi_chat_message *msgs;   /* the conversation; contents owned (roles are literals) */
  size_t n_msgs, cap_msgs;
  int32_t *ctx;             /* the ids in the request's KV cache */
  size_t n_ctx_ids;
} chat;

static volatile sig_atomic_t g_interrupted;
static void on_sigint(int sig) {
  (void)sig;
  g_interrupted = 1;
}

typedef struct answer {
  int stream;
  cli_buf text, ids;
  int32_t *gen;             /* generated ids */
  size_t n_gen, cap_gen;
  int oom;
} answer;

static int on_token(const xpi_token_event *ev, void *user) {
  answer *a = user;
  if (a->stream) {
    fwrite(ev->text, 1, ev->text_len, stdout);
    fflush(stdout);
  }
  cli_buf_add(&a->text, ev->text, ev->text_len);
  cli_buf_printf(&a->ids, "%s%d", a->n_gen ? ", " : "", ev->id);
  if (a->n_gen == a->cap_gen) {
    size_t c = a->cap_gen ? 2 * a->cap_gen : 64;
    int32_t *p = realloc(a->gen, c * sizeof *p);
    if (!p) a->oom = 1;
    else a->gen = p, a->cap_gen = c;
  }
  if (!a->oom) a->gen[a->n_gen++] = ev->id;
  return g_interrupted || a->oom || a->text.oom || a->ids.oom;
}

static int add_msg(chat *c, const char *role, const char *content, size_t len) {
  if (c->n_msgs == c->cap_msgs) {
    size_t cap = c->cap_msgs ? 2 * c->cap_msgs : 8;
    xpi_chat_message *p = realloc(c->msgs, cap * sizeof *p);
    if (!p) return -1;
    c->msgs = p;
    c->cap_msgs = cap;
  }
  char *copy = malloc(len + 1);
  if (!copy) return -1;
  memcpy(copy, content, len);
  copy[len] = 0;
  c->msgs[c->n_msgs++] = (xpi_chat_message){.role = role, .content = copy};
  return 0;
}

static void drop_msgs(chat *c, size_t keep) {
  while (c->n_msgs > keep) free((char *)c->msgs[--c->n_msgs].content);
}

static void reset(chat *c) {
  drop_msgs(c, c->g.system ? 1 : 0);
  xpi_request_reset(c->r);
  c->n_ctx_ids = 0;
}

/* Prints the JSON object of one turn. */
static void print_json(const char *user, const char *prompt, size_t plen, const int32_t *ids, size_t n,
                       const answer *a, xpi_finish_reason why) {
  cli_buf o = {0};
  cli_buf_puts(&o, "{\"user\": ");
  cli_json_str(&o, user, strlen(user));
  cli_buf_puts(&o, ", \"prompt\": ");
  cli_json_str(&o, prompt, plen);
  cli_buf_puts(&o, ", \"prompt_ids\": [");
  for (size_t i = 0; i < n; i++) cli_buf_printf(&o, "%s%d", i ? ", " : "", ids[i]);
  cli_buf_puts(&o, "], \"text\": ");
  cli_json_str(&o, a->text.p ? a->text.p : "", a->text.len);
  cli_buf_puts(&o, ", \"ids\": [");
  cli_buf_add(&o, a->ids.p ? a->ids.p : "", a->ids.len);
  cli_buf_printf(&o, "], \"finish_reason\": \"%s\"}", cli_finish_name(why));
  if (o.oom) fprintf(stderr, "xpuinfer %s: out of memory printing the answer\n", CMD);
  else printf("%s\n", o.p);
  cli_buf_free(&o);
}

/* One user turn. Returns 0 (answered), 1 (this turn failed; the conversation goes on) or -1 (a fatal error,
 * message printed). */
static int turn(chat *c, const char *line, size_t len) {
  const xpi_tokenizer *tok = xpi_model_tokenizer(c->m);
  size_t keep = c->n_msgs;
  if (add_msg(c, "user", line, len)) return fprintf(stderr, "xpuinfer %s: out of memory\n", CMD), -1;
  char *prompt = NULL;
  int32_t *ids = NULL;
  size_t plen = 0, n = 0;
  if (cli_render_chat(CMD, tok, c->msgs, c->n_msgs, NULL, &c->g, &prompt, &plen) ||
      cli_tokenize(CMD, tok, prompt, plen, 0, &ids, &n)) {
    free(prompt);
    drop_msgs(c, keep);
    return -1; /* the template or the tokenizer cannot take this conversation: it will not get better */
  }
  int32_t n_ctx = xpi_request_n_ctx(c->r);
  if ((int64_t)n > n_ctx) { /* not even the prompt fits: refuse the turn, keep the conversation */
    fprintf(stderr, "xpuinfer %s: the conversation is %zu tokens but the context holds %d: /reset starts over "
                    "(--n-ctx raises the limit, up to the model's maximum)\n", CMD, n, n_ctx);
    free(prompt);
    free(ids);
    drop_msgs(c, keep);
    return 1;
  }
  xpi_gen_options go = c->go;
  int64_t room = (int64_t)n_ctx - (int64_t)n + 1; /* the last generated token never enters the cache */
  if (go.max_new_tokens > room) {
    go.max_new_tokens = (int32_t)room;
    fprintf(stderr, "xpuinfer %s: the context has room for %d more tokens: the answer may be cut short (/reset "
                    "starts over)\n", CMD, go.max_new_tokens);
  }
  /* Reuse what the cache already holds when the new rendering starts with exactly those ids. */
  size_t have = c->n_ctx_ids;
  int same = have < n && xpi_request_n_past(c->r) == (int32_t)have &&
             (!have || !memcmp(ids, c->ctx, have * sizeof *ids));
  if (!same) {
    xpi_request_reset(c->r);
    have = 0;
  }
  answer a = {.stream = !c->json};
  xpi_gen_result res = {.struct_size = sizeof res};
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  g_interrupted = 0;
  sigaction(SIGINT, &sa, &old);
  xpi_status s = xpi_request_generate(c->r, ids + have, n - have, &go, on_token, &a, &res);
  sigaction(SIGINT, &old, NULL);
  int oom = s == XPI_OK && (a.oom || a.text.oom || a.ids.oom), rc = 0;
  if (s != XPI_OK || oom) {
    if (!c->json) printf("\n");
    fflush(stdout);
    if (oom) fprintf(stderr, "xpuinfer %s: generating: out of memory\n", CMD);
    else cli_fail(CMD, "generating", s);
    c->n_ctx_ids = 0;
    xpi_request_reset(c->r);
    drop_msgs(c, keep);
    rc = -1;
  } else {
    if (c->json) print_json(line, prompt, plen, ids, n, &a, res.finish_reason);
    else printf("\n");
    fflush(stdout);
    if (res.finish_reason == XPI_FINISH_CANCELLED && !c->g.quiet) fprintf(stderr, "(answer stopped)\n");
    /* the cache now holds the prompt and every generated id but the last */
    size_t keep_gen = a.n_gen ? a.n_gen - 1 : 0;
    int32_t *p = realloc(c->ctx, (n + keep_gen + 1) * sizeof *p);
    if (p && xpi_request_n_past(c->r) == (int32_t)(n + keep_gen)) {
      c->ctx = p;
      memcpy(c->ctx, ids, n * sizeof *ids);
      if (keep_gen) memcpy(c->ctx + n, a.gen, keep_gen * sizeof *a.gen);
      c->n_ctx_ids = n + keep_gen;
    } else {
      if (p) c->ctx = p;
      c->n_ctx_ids = 0; /* unknown: the next turn starts from an empty cache */
    }
    if (add_msg(c, "assistant", a.text.p ? a.text.p : "", a.text.len)) {
      fprintf(stderr, "xpuinfer %s: out of memory\n", CMD);
      rc = -1;
    }
  }
  cli_buf_free(&a.text);
  cli_buf_free(&a.ids);
  free(a.gen);
  free(prompt);
  free(ids);
  return rc;
}

/* Reads turns until end of input or /exit. */
static int loop(chat *c) {
  int tty = isatty(STDIN_FILENO);
  if (tty && !c->g.quiet)
    fprintf(stderr, "chat with %s: type a message and press Enter; /reset forgets the conversation, /exit or "
                    "Ctrl-D quits, Ctrl-C stops an answer\n", c->g.model);
  char *line = NULL;
  size_t cap = 0;
  int rc = 0;
  for (long lineno = 1;; lineno++) {
    if (tty) fprintf(stderr, "> "), fflush(stderr);
    ssize_t len = getline(&line, &cap, stdin);
    if (len < 0) break;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    if (memchr(line, 0, (size_t)len)) { /* a turn cannot hold a NUL byte: refuse it, keep the conversation */
      fprintf(stderr, "xpuinfer %s: line %ld holds a NUL byte (text turns cannot)\n", CMD, lineno);
      printf("\n");
      fflush(stdout);
      c->failed = 1;
      continue;
    }
    if (len == 0) continue;
    if (!strcmp(line, "/exit") || !strcmp(line, "/quit")) break;
    if (!strcmp(line, "/reset")) {
      reset(c);
      if (!c->g.quiet) fprintf(stderr, "(conversation reset)\n");
      continue;
    }
    int t = turn(c, line, (size_t)len);
    if (t < 0) {
      rc = 1;
      break;
    }
    if (t > 0) {
      printf("\n"); /* the empty answer keeps one answer line per turn */
      fflush(stdout);
      c->failed = 1;
    }
  }
  free(line);
  return rc || c->failed;
}

int cmd_chat(int argc, char **argv) {
  chat c;
  memset(&c, 0, sizeof c);
  cli_gen_init(&c.g);
  cli_opt t[CLI_GEN_MAX_OPTS + 2];
  size_t n = cli_gen_table(&c.g, t);
  t[n++] = (cli_opt){NULL, "--json", CLI_FLAG, &c.json, 0, 0, 0, 0, 0, NULL};
  int rc = cli_parse(CMD, argc, argv, t, n, NULL, 0, NULL);
  if (rc == CLI_HELP) {
    help();
    return 0;
  }
  if (rc) return rc;
  if (!c.g.model) return cli_usage_error(CMD, "-m MODEL is required");
  rc = cli_gen_load(CMD, &c.g, &c.m);
  if (rc == 0) rc = cli_gen_request(CMD, &c.g, c.m, &c.r);
  if (rc == 0 && c.g.system && add_msg(&c, "system", c.g.system, strlen(c.g.system)))
    rc = cli_fail(CMD, "out of memory", XPI_ERR_OUT_OF_MEMORY);
  if (rc == 0) { /* a model without a usable chat template fails now, not at the first turn */
    xpi_chat_message probe[2] = {{.role = "system", .content = "s"}, {.role = "user", .content = "u"}};
    char *text = NULL;
    size_t len;
    rc = cli_render_chat(CMD, xpi_model_tokenizer(c.m), c.g.system ? probe : probe + 1, c.g.system ? 2 : 1, NULL,
                         &c.g, &text, &len);
    free(text);
  }
  if (rc == 0) {
    cli_gen_options(&c.g, c.m, &c.go);
    rc = loop(&c);
  }
  drop_msgs(&c, 0);
  free(c.msgs);
  free(c.ctx);
  xpi_request_free(c.r);
  xpi_model_free(c.m);
  cli_gen_free(&c.g);
  return rc;
}
