/* xpuinfer generate: load a model, tokenize each prompt like transformers' tokenizer(text) (or render the chat
 * template), generate, and stream the text (or print one JSON object per prompt). Public API only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_gen.h"

#define CMD "generate"

static void help(void) {
  printf("usage: xpuinfer generate -m MODEL (-p TEXT | -f FILE | --messages FILE) [options]\n"
         "\n"
         "Generates a continuation of each prompt and streams it to stdout, one line per prompt. The text stops\n"
         "before an end-of-sequence token or a --stop string (neither is printed).\n"
         "\n"
         "  -p, --prompt TEXT        the prompt; - reads it from stdin (all of it, trailing newlines removed)\n"
         "  -f, --file FILE          one prompt per line (empty lines skipped); - reads the lines from stdin\n"
         "      --no-special         feed the text exactly as written (no BOS / post-processor)\n"
         "      --chat               wrap the prompt as a user message with the model's chat template\n"
         "      --messages FILE      a whole conversation (implies --chat; - reads stdin): a JSON array of\n"
         "                           messages, or {\"messages\": [...], \"tools\": [...], ...} whose other keys are\n"
         "                           template variables\n"
         "      --json               one JSON object per prompt: prompt, text, prompt_ids, ids,\n"
         "                           finish_reason (length, stop or cancelled)\n"
         "      --logprobs N         with --json: the N best log-probabilities of each generated token\n" CLI_GEN_HELP
         CLI_COMMON_HELP
         "\n"
         "Options take their value as --opt VALUE or --opt=VALUE. Errors are one line on stderr; a bad option or\n"
         "value exits with 2 before the model loads, any other failure with 1.\n");
}

typedef struct gen_ctx {
  int json, logprobs;
  cli_buf text, ids, lp;
  int n_ids;
} gen_ctx;

static int on_token(const xpi_token_event *ev, void *user) {
  gen_ctx *g = user;
  if (!g->json) {
    fwrite(ev->text, 1, ev->text_len, stdout);
    fflush(stdout);
    return 0;
  }
  cli_buf_add(&g->text, ev->text, ev->text_len);
  cli_buf_printf(&g->ids, "%s%d", g->n_ids ? ", " : "", ev->id);
  if (g->logprobs) {
    cli_buf_add(&g->lp, g->n_ids ? ", [" : "[", g->n_ids ? 3 : 1);
    for (int32_t i = 0; i < ev->n_top; i++) {
      cli_buf_printf(&g->lp, "%s{\"id\": %d, \"logprob\": ", i ? ", " : "", ev->top[i].id);
      cli_json_num(&g->lp, ev->top[i].logprob, 6);
      cli_buf_puts(&g->lp, "}");
    }
    cli_buf_puts(&g->lp, "]");
  }
  g->n_ids++;
  return g->text.oom || g->ids.oom || g->lp.oom; /* out of memory: stop, reported below */
}

typedef struct opts {
  cli_gen g;
  const char *prompt, *file, *messages_file;
  char *messages; /* --messages: the conversation (JSON) */
  int no_special, chat, json;
  long long logprobs;
} opts;

/* Renders (chat) and tokenizes one prompt; *ids malloc'd. */
static int prepare(const xpi_tokenizer *tok, const opts *o, const char *prompt, int32_t **ids, size_t *n) {
  if (!o->chat) return cli_tokenize(CMD, tok, prompt, strlen(prompt), !o->no_special, ids, n);
  xpi_chat_message msgs[2];
  size_t nm = 0;
  if (o->g.system) msgs[nm++] = (xpi_chat_message){.role = "system", .content = o->g.system};
  msgs[nm++] = (xpi_chat_message){.role = "user", .content = prompt};
  char *text;
  size_t len;
  if (cli_render_chat(CMD, tok, o->messages ? NULL : msgs, nm, o->messages, &o->g, &text, &len)) return 1;
  int rc = cli_tokenize(CMD, tok, text, len, 0, ids, n); /* a rendered template has its special tokens */
  free(text);
  return rc;
}

static int run_prompt(xpi_model *m, xpi_request *r, const opts *o, const xpi_gen_options *go, const char *prompt) {
  int32_t *ids = NULL;
  size_t n = 0;
  int rc = prepare(xpi_model_tokenizer(m), o, prompt, &ids, &n);
  if (rc) return rc;
  gen_ctx g = {.json = o->json, .logprobs = (int)o->logprobs};
  xpi_gen_result res = {.struct_size = sizeof res};
  xpi_request_reset(r);
  xpi_status s = xpi_request_generate(r, ids, n, go, on_token, &g, &res);
  if (s == XPI_OK && (g.text.oom || g.ids.oom || g.lp.oom)) s = XPI_ERR_OUT_OF_MEMORY;
  if (s != XPI_OK) {
    if (!o->json) printf("\n"); /* end the partial line; the error goes to stderr */
    rc = cli_fail(CMD, "generating", s);
  } else if (o->json) {
    cli_buf out = {0};
    cli_buf_puts(&out, "{\"prompt\": ");
    cli_json_str(&out, prompt, strlen(prompt));
    cli_buf_puts(&out, ", \"text\": ");
    cli_json_str(&out, g.text.p ? g.text.p : "", g.text.len);
    cli_buf_puts(&out, ", \"prompt_ids\": [");
    for (size_t i = 0; i < n; i++) cli_buf_printf(&out, "%s%d", i ? ", " : "", ids[i]);
    cli_buf_puts(&out, "], \"ids\": [");
    cli_buf_add(&out, g.ids.p ? g.ids.p : "", g.ids.len);
    cli_buf_printf(&out, "], \"finish_reason\": \"%s\"", cli_finish_name(res.finish_reason));
    if (o->logprobs) {
      cli_buf_puts(&out, ", \"logprobs\": [");
      cli_buf_add(&out, g.lp.p ? g.lp.p : "", g.lp.len);
      cli_buf_puts(&out, "]");
    }
    cli_buf_puts(&out, "}");
    if (out.oom) rc = cli_fail(CMD, "out of memory", XPI_ERR_OUT_OF_MEMORY);
    else printf("%s\n", out.p);
    cli_buf_free(&out);
  } else {
    printf("\n");
  }
  fflush(stdout);
  if (s == XPI_OK && !o->g.quiet) {
    fprintf(stderr, "prompt: %d tokens in %.3f s (%.1f tok/s); time to first token %.3f s\n", res.n_prompt_tokens,
            res.prompt_seconds, res.prompt_seconds > 0 ? res.n_prompt_tokens / res.prompt_seconds : 0.0,
            res.prompt_seconds);
    int later = res.n_generated > 1 ? res.n_generated - 1 : 0;
    fprintf(stderr, "generated: %d tokens in %.3f s (%.1f tok/s), finish: %s\n", res.n_generated,
            res.generate_seconds, res.generate_seconds > 0 ? later / res.generate_seconds : 0.0,
            cli_finish_name(res.finish_reason));
  }
  cli_buf_free(&g.text);
  cli_buf_free(&g.ids);
  cli_buf_free(&g.lp);
  free(ids);
  return rc;
}

/* -f FILE or -f -: checked before the model loads (a folder or an unreadable file is an error). */
static int open_prompts(const char *file, FILE **out) {
  if (!strcmp(file, "-")) {
    *out = stdin;
    return 0;
  }
  FILE *f = fopen(file, "rb");
  struct stat st;
  if (!f || fstat(fileno(f), &st) != 0) {
    fprintf(stderr, "xpuinfer %s: -f %s: cannot read the file: %s\n", CMD, file, strerror(errno));
    if (f) fclose(f);
    return 1;
  }
  if (S_ISDIR(st.st_mode)) {
    fprintf(stderr, "xpuinfer %s: -f %s: is a directory, not a file of prompts (one per line)\n", CMD, file);
    fclose(f);
    return 1;
  }
  *out = f;
  return 0;
}

/* One prompt per line; empty lines skipped; a NUL byte or a read error is an error naming the line. */
static int run_file(xpi_model *m, xpi_request *r, const opts *o, const xpi_gen_options *go, FILE *f) {
  const char *name = strcmp(o->file, "-") ? o->file : "stdin";
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int rc = 0;
  for (long lineno = 1; rc == 0 && (len = getline(&line, &cap, f)) >= 0; lineno++) {
    if (memchr(line, 0, (size_t)len)) {
      fprintf(stderr, "xpuinfer %s: %s: line %ld holds a NUL byte (text prompts cannot)\n", CMD, name, lineno);
      rc = 1;
      break;
    }
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    if (len > 0) rc = run_prompt(m, r, o, go, line);
  }
  if (rc == 0 && ferror(f)) {
    fprintf(stderr, "xpuinfer %s: %s: read error: %s\n", CMD, name, strerror(errno));
    rc = 1;
  }
  free(line);
  return rc;
}

int cmd_generate(int argc, char **argv) {
  opts o;
  memset(&o, 0, sizeof o);
  cli_gen_init(&o.g);
  cli_opt t[CLI_GEN_MAX_OPTS + 9];
  size_t n = cli_gen_table(&o.g, t);
  t[n++] = (cli_opt){"-p", "--prompt", CLI_STR, &o.prompt, 0, 0, 0, 0, 0, NULL};
  t[n++] = (cli_opt){"-f", "--file", CLI_STR, &o.file, 0, 0, 0, 0, 0, NULL};
  t[n++] = (cli_opt){NULL, "--no-special", CLI_FLAG, &o.no_special, 0, 0, 0, 0, 0, NULL};
  t[n++] = (cli_opt){NULL, "--chat", CLI_FLAG, &o.chat, 0, 0, 0, 0, 0, NULL};
  t[n++] = (cli_opt){NULL, "--messages", CLI_STR, &o.messages_file, 0, 0, 0, 0, 0, NULL};
  t[n++] = (cli_opt){NULL, "--json", CLI_FLAG, &o.json, 0, 0, 0, 0, 0, NULL};
  t[n++] = (cli_opt){NULL, "--logprobs", CLI_INT, &o.logprobs, 1, 1000, 0, 0, 0, NULL};
  int rc = cli_parse(CMD, argc, argv, t, n, NULL, 0, NULL);
  if (rc == CLI_HELP) {
    help();
    return 0;
  }
  if (rc) return rc;
  if (!o.g.model) return cli_usage_error(CMD, "-m MODEL is required");
  if (o.messages_file) o.chat = 1;
  if (o.messages_file ? o.prompt || o.file || o.g.system : !o.prompt == !o.file)
    return cli_usage_error(CMD, o.messages_file ? "--messages gives the whole conversation: no -p, -f or --system"
                                                : "give exactly one of -p TEXT, -f FILE and --messages FILE");
  if (o.logprobs && !o.json) return cli_usage_error(CMD, "--logprobs needs --json");
  if (o.g.system && !o.chat) return cli_usage_error(CMD, "--system needs --chat");
  if (!o.chat && cli_chat_given(&o.g.chat))
    return cli_usage_error(CMD, "--chat-template, --template-name, --tools, --var and --now need --chat (or --messages)");
  if (o.messages_file && !(o.messages = cli_read_file(CMD, "--messages", o.messages_file, NULL))) return 1;

  char *stdin_prompt = NULL;
  FILE *prompts = NULL;
  if (o.prompt && !strcmp(o.prompt, "-")) {
    if ((rc = cli_read_stdin_text(CMD, &stdin_prompt))) return rc;
    o.prompt = stdin_prompt;
  }
  if (o.file && (rc = open_prompts(o.file, &prompts))) return rc;

  xpi_model *m = NULL;
  xpi_request *r = NULL;
  rc = cli_gen_load(CMD, &o.g, &m);
  if (rc == 0) rc = cli_gen_request(CMD, &o.g, m, &r);
  if (rc == 0) {
    xpi_gen_options go;
    cli_gen_options(&o.g, m, &go);
    go.logprobs = (int32_t)o.logprobs;
    rc = o.prompt || o.messages ? run_prompt(m, r, &o, &go, o.prompt ? o.prompt : o.messages)
                                : run_file(m, r, &o, &go, prompts);
  }
  if (prompts && prompts != stdin) fclose(prompts);
  free(stdin_prompt);
  xpi_request_free(r);
  xpi_model_free(m);
  free(o.messages);
  cli_gen_free(&o.g);
  return rc;
}
