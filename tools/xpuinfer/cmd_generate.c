/* xpuinfer generate: load a model, tokenize each prompt like transformers' tokenizer(text) (or render the chat
 * template), run them all through one engine (continuous batching: every prompt of -f at once, as many together
 * as --parallel and the KV pool allow), and print the texts (or one JSON object per prompt) in input order.
 * Public API only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_engine.h"
#include "cli_gen.h"
#include "gen.h"

#define CMD "generate"

static void help(void) {
  printf("usage: xpuinfer generate -m MODEL (-p TEXT | -f FILE | --messages FILE) [options]\n"
         "\n"
         "Generates a continuation of each prompt and prints it, one line per prompt, in input order (a single\n"
         "prompt streams). The text stops before an end-of-sequence token or a --stop string (neither is\n"
         "printed). Every prompt of -f runs at once through one engine (continuous batching).\n"
         "\n"
         "  -p, --prompt TEXT        the prompt; - reads it from stdin (all of it, trailing newlines removed)\n"
         "  -f, --file FILE          one prompt per line (empty lines skipped); - reads the lines from stdin;\n"
         "                           FILE.jsonl (or --jsonl): one JSON object per line with \"prompt\" (a string)\n"
         "                           or \"messages\" ([{\"role\", \"content\"}], rendered with the chat template),\n"
         "                           and optionally \"max_tokens\", \"temperature\", \"top_p\", \"seed\", \"stop\"\n"
         "                           (a string or a list) for that line\n"
         "      --jsonl              read FILE as JSON lines whatever its name\n"
         "      --no-special         feed the text exactly as written (no BOS / post-processor)\n"
         "      --chat               wrap the prompt as a user message with the model's chat template\n"
         "      --messages FILE      a whole conversation (implies --chat; - reads stdin): a JSON array of\n"
         "                           messages, or {\"messages\": [...], \"tools\": [...], ...} whose other keys are\n"
         "                           template variables\n"
         "      --json               one JSON object per prompt: index, prompt, text, prompt_ids, ids,\n"
         "                           finish_reason (length, stop or cancelled), prompt_tokens,\n"
         "                           completion_tokens, ttft_s (time to the first token, queueing included),\n"
         "                           tok_s (the tokens after it); a prompt of -f that cannot run gives\n"
         "                           {\"index\", \"error\"} and the others go on\n"
         "      --logprobs N         with --json: the N best log-probabilities of each generated token\n"
         CLI_ENGINE_HELP("every prompt, as the KV pool allows") CLI_GEN_HELP
         CLI_COMMON_HELP
         "\n"
         "Options take their value as --opt VALUE or --opt=VALUE. Errors are one line on stderr; a bad option or\n"
         "value exits with 2 before the model loads, any other failure with 1 (with -f: after every other\n"
         "prompt has run).\n");
}

typedef struct opts {
  cli_gen g;
  cli_engine e;
  const char *prompt, *file, *messages_file;
  char *messages; /* --messages: the conversation (JSON) */
  int no_special, chat, json, jsonl;
  long long logprobs;
} opts;

static int on_event(const xpi_seq_event *ev, void *user) {
  gen_item *it = user;
  if (ev->token) {
    const xpi_token_event *t = ev->token;
    cli_buf_add(&it->text, t->text, t->text_len);
    cli_buf_printf(&it->out_ids, "%s%d", it->n_out ? ", " : "", t->id);
    if (t->n_top > 0) {
      cli_buf_puts(&it->lp, it->n_out ? ", [" : "[");
      for (int32_t i = 0; i < t->n_top; i++) {
        cli_buf_printf(&it->lp, "%s{\"id\": %d, \"logprob\": ", i ? ", " : "", t->top[i].id);
        cli_json_num(&it->lp, t->top[i].logprob, 6);
        cli_buf_puts(&it->lp, "}");
      }
      cli_buf_puts(&it->lp, "]");
    }
    it->n_out++;
    if (it->stream) {
      fwrite(t->text, 1, t->text_len, stdout);
      fflush(stdout);
    }
    return it->text.oom || it->out_ids.oom || it->lp.oom; /* out of memory: end the sequence (reported below) */
  }
  it->res = ev->done->gen;
  if (ev->done->status != XPI_OK) gen_set_error(it, ev->done->error);
  else if (it->text.oom || it->out_ids.oom || it->lp.oom) gen_set_error(it, "out of memory for the output");
  it->done = 1;
  return 0;
}

typedef struct run_state {
  const opts *o;
  gen_item *items;
  int n, next, failed, oom;
  const char *name; /* the prompt file as errors name it */
} run_state;

/* Prints every finished item not yet printed, in input order, up to the first unfinished one. */
static void flush_done(run_state *rs) {
  while (rs->next < rs->n && (rs->items[rs->next].done || rs->items[rs->next].error)) {
    gen_item *it = &rs->items[rs->next++];
    if (rs->o->json && (!it->error || rs->o->file)) {
      if (gen_print_json(it, (int)rs->o->logprobs)) rs->oom = 1;
    } else if (!it->error) {
      if (!it->stream) fwrite(it->text.p ? it->text.p : "", 1, it->text.len, stdout);
      printf("\n");
      fflush(stdout);
    } else if (!rs->o->file) {
      if (it->stream && it->n_out) printf("\n"); /* end the partial line; the error goes to stderr */
      fflush(stdout);
    }
    if (it->error && !rs->o->file) fprintf(stderr, "xpuinfer %s: generating: %s\n", CMD, it->error);
    else if (it->error && !rs->o->json) fprintf(stderr, "xpuinfer %s: %s: line %ld: %s\n", CMD, rs->name, it->line, it->error);
    rs->failed += it->error != NULL;
  }
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

/* Every item through one engine; outputs in input order as they complete. Returns the exit code. */
static int run_all(xpi_model *m, const opts *o, const gen_defaults *d, run_state *rs) {
  xpi_engine_options eo;
  cli_engine_options(&o->e, rs->n < 1 ? 1 : rs->n < 256 ? rs->n : 256, o->g.n_ctx_given ? (int32_t)o->g.n_ctx : 0,
                     &eo);
  xpi_engine *e = NULL;
  xpi_status s = xpi_engine_create(m, &eo, &e);
  if (s != XPI_OK) return cli_fail(CMD, "creating the engine", s);
  const double t0 = cli_now_s();
  for (int i = 0; i < rs->n; i++) { /* every prompt is queued at once; the engine admits them as memory allows */
    gen_item *it = &rs->items[i];
    gen_tokenize(xpi_model_tokenizer(m), d, it);
    if (it->error) continue;
    it->stream = !o->file && !o->json;
    s = xpi_engine_submit(e, it->ids, it->n_ids, &it->go, on_event, it, &it->seq);
    if (s != XPI_OK) gen_set_error(it, xpi_last_error());
  }
  int32_t pending = 1;
  flush_done(rs);
  while (pending > 0) {
    s = xpi_engine_step(e, &pending); /* a failing step ends its batch's sequences: each reports it */
    flush_done(rs);
  }
  flush_done(rs);
  const double t1 = cli_now_s();
  if (!o->g.quiet && rs->n == 1 && !o->file && !rs->items[0].error) {
    const xpi_gen_result *r = &rs->items[0].res;
    fprintf(stderr, "prompt: %d tokens in %.3f s (%.1f tok/s); time to first token %.3f s\n", r->n_prompt_tokens,
            r->prompt_seconds, r->prompt_seconds > 0 ? r->n_prompt_tokens / r->prompt_seconds : 0.0, r->prompt_seconds);
    int later = r->n_generated > 1 ? r->n_generated - 1 : 0;
    fprintf(stderr, "generated: %d tokens in %.3f s (%.1f tok/s), finish: %s\n", r->n_generated, r->generate_seconds,
            r->generate_seconds > 0 ? later / r->generate_seconds : 0.0, cli_finish_name(r->finish_reason));
  } else if (!o->g.quiet && o->file) {
    xpi_engine_stats st = {.struct_size = sizeof st};
    xpi_engine_get_stats(e, &st);
    fprintf(stderr,
            "%d prompts (%d failed): %llu prompt tokens (%llu from the prefix cache), %llu generated in %.3f s "
            "(%.1f tok/s), %d at most at once\n",
            rs->n, rs->failed, (unsigned long long)st.prompt_tokens, (unsigned long long)st.prompt_tokens_cached,
            (unsigned long long)st.completion_tokens, t1 - t0, t1 > t0 ? (double)st.completion_tokens / (t1 - t0) : 0,
            eo.max_seqs);
  }
  if (rs->oom) fprintf(stderr, "xpuinfer %s: out of memory printing the results\n", CMD);
  xpi_engine_free(e);
  return rs->failed || rs->oom ? 1 : 0;
}

int cmd_generate(int argc, char **argv) {
  opts o;
  memset(&o, 0, sizeof o);
  cli_gen_init(&o.g);
  cli_opt t[CLI_GEN_MAX_OPTS + CLI_ENGINE_MAX_OPTS + 8];
  size_t n = cli_gen_table(&o.g, t);
  n += cli_engine_table(&o.e, t + n);
  t[n++] = (cli_opt){"-p", "--prompt", CLI_STR, &o.prompt, 0, 0, 0, 0, 0, NULL};
  t[n++] = (cli_opt){"-f", "--file", CLI_STR, &o.file, 0, 0, 0, 0, 0, NULL};
  t[n++] = (cli_opt){NULL, "--jsonl", CLI_FLAG, &o.jsonl, 0, 0, 0, 0, 0, NULL};
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
  if ((rc = cli_engine_check(CMD, &o.e))) return rc;
  size_t flen = o.file ? strlen(o.file) : 0;
  if (flen >= 6 && !strcmp(o.file + flen - 6, ".jsonl")) o.jsonl = 1;
  if (o.messages_file && !(o.messages = cli_read_file(CMD, "--messages", o.messages_file, NULL))) return 1;

  char *stdin_prompt = NULL;
  FILE *prompts = NULL;
  if (o.prompt && !strcmp(o.prompt, "-")) {
    if ((rc = cli_read_stdin_text(CMD, &stdin_prompt))) return rc;
    o.prompt = stdin_prompt;
  }
  if (o.file && (rc = open_prompts(o.file, &prompts))) return rc;

  xpi_model *m = NULL;
  rc = cli_gen_load(CMD, &o.g, &m);
  run_state rs = {.o = &o, .name = o.file && strcmp(o.file, "-") ? o.file : "stdin"};
  if (rc == 0) {
    xpi_gen_options go;
    cli_gen_options(&o.g, m, &go);
    go.logprobs = (int32_t)o.logprobs;
    gen_defaults d = {&go, o.chat, o.no_special, o.g.system, &o.g.chat};
    rc = o.file ? gen_read_file(CMD, prompts, rs.name, o.jsonl, &d, &rs.items, &rs.n)
                : gen_one(o.prompt, o.messages, &d, &rs.items, &rs.n);
    if (rc == 0) rc = run_all(m, &o, &d, &rs);
  }
  gen_items_free(rs.items, rs.n);
  if (prompts && prompts != stdin) fclose(prompts);
  free(stdin_prompt);
  xpi_model_free(m);
  free(o.messages);
  cli_gen_free(&o.g);
  return rc;
}
