/* xpuinfer generate: load a model, tokenize each prompt like transformers' tokenizer(text) (or render the chat
 * template), run them all through one engine (continuous batching: every prompt of -f at once, as many
 * together as --parallel and the KV pool allow), and print the texts (or one JSON object per prompt) in input
 * order. Public API only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat_args.h"
#include "cli.h"
#include "cli_load.h"
#include "gen.h"

#define CMD "generate"

static void help(void) {
  printf(
    "usage: xpuinfer generate -m MODEL (-p TEXT | -f FILE | --messages FILE.json) [options]\n"
    "\n"
    "  -p, --prompt TEXT        the prompt\n"
    "  -f, --file FILE          one prompt per line (empty lines skipped), all run together; FILE.jsonl (or\n"
    "                           --jsonl): one JSON object per line with \"prompt\" (a string) or \"messages\"\n"
    "                           ([{\"role\", \"content\"}], rendered with the chat template) and optionally\n"
    "                           \"max_tokens\", \"temperature\", \"top_p\", \"seed\", \"stop\" (string or list)\n"
    "      --jsonl              read FILE as JSON lines whatever its name\n"
    "      --parallel N         sequences generated at once (default: every prompt, as the KV pool allows)\n"
    "      --no-special         feed the text exactly as written (no BOS / post-processor)\n"
    "      --chat               wrap the prompt as a user message with the model's chat template\n"
    "      --system TEXT        system message (with --chat)\n"
    "      --no-think           enable_thinking=false in the chat template (Qwen3)\n"
    "      --messages FILE      a whole conversation (implies --chat): a JSON array of messages, or an object\n"
    "                           {\"messages\": [...], \"tools\": [...], ...} whose other keys are template variables\n"
    "      --tools FILE         JSON array of tools for the chat template\n"
    "      --chat-template FILE render with this Jinja template instead of the model's\n"
    "      --var NAME=JSON      a chat-template variable (repeatable), e.g. --var reasoning_effort='\"low\"'\n"
    "      --template-name N    with several named templates: which one;  --now SECONDS: strftime_now's clock\n"
    "  -n, --max-new-tokens N   tokens to generate (default: generation_config.json, else 256)\n"
    "      --greedy             argmax decoding (the default when generation_config.json says do_sample=false)\n"
    "      --temperature T      sample with this temperature (any sampling flag turns sampling on)\n"
    "      --top-k K            keep the K most likely tokens (0: off)\n"
    "      --top-p P            nucleus sampling (1: off)\n"
    "      --min-p P            drop tokens below P x the top probability (0: off)\n"
    "      --repeat-penalty R   repetition penalty as transformers (1: off)\n"
    "      --seed S             random seed (same seed, same text; default 0)\n"
    "      --stop TEXT          stop when the text contains TEXT (repeatable)\n"
    "      --ignore-eos         do not stop at end-of-sequence tokens\n"
    "      --json               one JSON object per prompt and line: index, prompt, text, prompt_ids, ids,\n"
    "                           finish_reason, prompt_tokens, completion_tokens, ttft_s, tok_s; a prompt that\n"
    "                           cannot run gives {\"index\", \"error\"} and the others go on\n"
    "      --logprobs N         with --json: the N best log-probabilities of each generated token\n"
    "  -q, --quiet              no timing on stderr\n"
    "\n"
    "\nmodel and engine:\n%s"
    "\nExit status: 0 when every prompt ran, 1 when one or more failed (after all have run), 2 for bad options.\n",
    cli_load_help);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct opts {
  const char *prompt, *file, *system;
  int no_special, chat, no_think, json, quiet, logprobs, jsonl, parallel;
  cli_load_opts load;
  cli_chat ca; /* chat-template options (chat_args.c) */
  const char *stops[64];
  size_t n_stops;
} opts;

typedef struct run_state {
  const opts *o;
  gen_item *items;
  int n, stream;          /* stream: one prompt as text, written as it comes */
  int oom;
} run_state;

static int on_event(const xpi_seq_event *ev, void *user) {
  gen_item *it = user;
  if (ev->token) {
    const xpi_token_event *t = ev->token;
    int r = gbuf_add(&it->text, t->text, t->text_len);
    r |= gbuf_printf(&it->out_ids, "%s%d", it->n_out ? ", " : "", t->id);
    if (t->n_top > 0) {
      r |= gbuf_add(&it->lp, it->n_out ? ", [" : "[", it->n_out ? 3 : 1);
      for (int32_t i = 0; i < t->n_top; i++)
        r |= gbuf_printf(&it->lp, "%s{\"id\": %d, \"logprob\": %.6f}", i ? ", " : "", t->top[i].id, t->top[i].logprob);
      r |= gbuf_add(&it->lp, "]", 1);
    }
    it->n_out++;
    if (it->printed == -1) { /* streaming: the text goes out at once */
      fwrite(t->text, 1, t->text_len, stdout);
      fflush(stdout);
    }
    return r != 0; /* out of memory: end the sequence (reported below) */
  }
  it->res = *ev->done;
  if (ev->done->status != XPI_OK) {
    size_t n = strlen(ev->done->error);
    it->error = malloc(n + 1);
    if (it->error) memcpy(it->error, ev->done->error, n + 1);
  } else if (ev->done->gen.finish_reason == XPI_FINISH_CANCELLED) {
    const char *m = "out of memory for the output";
    it->error = malloc(strlen(m) + 1);
    if (it->error) strcpy(it->error, m);
  }
  it->done = 1;
  return 0;
}

/* Prints every finished item not yet printed, in input order, up to the first unfinished one. */
static int flush_done(run_state *rs, int *next) {
  int failed = 0;
  while (*next < rs->n && (rs->items[*next].done || rs->items[*next].error)) {
    gen_item *it = &rs->items[(*next)++];
    if (rs->o->json) {
      if (gen_print_json(it, rs->o->logprobs)) rs->oom = 1;
    } else if (it->error) {
      if (rs->n == 1 && !rs->o->file) fprintf(stderr, "xpuinfer %s: %s\n", CMD, it->error);
      else fprintf(stderr, "xpuinfer %s: prompt %d: %s\n", CMD, it->index, it->error);
    } else {
      if (!rs->stream) fwrite(it->text.p ? it->text.p : "", 1, it->text.len, stdout);
      printf("\n");
      fflush(stdout);
    }
    failed += it->error != NULL;
  }
  return failed;
}

int cmd_generate(int argc, char **argv) {
  opts o = {0};
  cli_load_opts_init(&o.load);
  /* sampling flags, applied over the model's generation_config.json after loading */
  long long n_new = -1, top_k = -1;
  double temp = -1, top_p = -1, min_p = -1, rep = -1;
  long long seed = -1;
  int greedy = 0, sampling = 0, ignore_eos = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (!strcmp(a, name))
#define NEED() do { if (!v) return cli_usage_error(CMD, "%s needs a value", a); i++; } while (0)
#define INT(dst, lo, hi) do { NEED(); if (cli_parse_int(v, lo, hi, &dst)) return cli_usage_error(CMD, "%s: '%s' is not an integer in [%lld, %lld]", a, v, (long long)(lo), (long long)(hi)); } while (0)
#define FLT(dst) do { NEED(); if (cli_parse_float(v, &dst)) return cli_usage_error(CMD, "%s: '%s' is not a number", a, v); } while (0)
    long long t;
    int shared = cli_load_opt(CMD, argc, argv, &i, &o.load);
    if (shared < 0) return 2;
    if (shared) continue;
    if (ARG("-h") || ARG("--help")) { help(); return 0; }
    int chat_arg = cli_chat_arg(&o.ca, CMD, argc, argv, &i);
    if (chat_arg < 0) return -chat_arg;
    if (chat_arg) continue;
    else if (ARG("-p") || ARG("--prompt")) { NEED(); o.prompt = v; }
    else if (ARG("-f") || ARG("--file")) { NEED(); o.file = v; }
    else if (ARG("--jsonl")) o.jsonl = 1;
    else if (ARG("--parallel")) { INT(t, 1, 4096); o.parallel = (int)t; }
    else if (ARG("--no-special")) o.no_special = 1;
    else if (ARG("--chat")) o.chat = 1;
    else if (ARG("--system")) { NEED(); o.system = v; }
    else if (ARG("--no-think")) o.no_think = 1;
    else if (ARG("-n") || ARG("--max-new-tokens")) INT(n_new, 0, 1 << 30);
    else if (ARG("--greedy")) greedy = 1;
    else if (ARG("--temperature")) { FLT(temp); sampling = 1; }
    else if (ARG("--top-k")) { INT(top_k, 0, 1 << 30); sampling = 1; }
    else if (ARG("--top-p")) { FLT(top_p); sampling = 1; }
    else if (ARG("--min-p")) { FLT(min_p); sampling = 1; }
    else if (ARG("--repeat-penalty")) FLT(rep);
    else if (ARG("--seed")) { INT(seed, 0, 0x7fffffffffffffffLL); sampling = 1; }
    else if (ARG("--stop")) { NEED(); if (o.n_stops == 64) return cli_usage_error(CMD, "at most 64 --stop strings"); o.stops[o.n_stops++] = v; }
    else if (ARG("--ignore-eos")) ignore_eos = 1;
    else if (ARG("--json")) o.json = 1;
    else if (ARG("--logprobs")) { INT(t, 1, 1000); o.logprobs = (int)t; }
    else if (ARG("-q") || ARG("--quiet")) o.quiet = 1;
    else return cli_usage_error(CMD, "unknown option '%s'", a);
  }
  if (cli_load_check(CMD, &o.load)) return 2;
  if (o.ca.input_file) return cli_usage_error(CMD, "--input is for chat-template; give a conversation with --messages");
  if (o.ca.messages_file) o.chat = 1;
  if (!o.chat && (o.ca.tools_file || o.ca.template_file || o.ca.n_vars || o.ca.template_name))
    return cli_usage_error(CMD, "--tools, --chat-template, --var and --template-name need --chat (or --messages)");
  if (o.ca.messages_file ? o.prompt || o.file || o.system : !o.prompt == !o.file)
    return cli_usage_error(CMD, o.ca.messages_file ? "--messages gives the whole conversation: no -p, -f or --system"
                                                   : "give exactly one of -p TEXT, -f FILE and --messages FILE");
  if (o.logprobs && !o.json) return cli_usage_error(CMD, "--logprobs needs --json");
  if (o.system && !o.chat) return cli_usage_error(CMD, "--system needs --chat");
  size_t flen = o.file ? strlen(o.file) : 0;
  if (flen >= 6 && !strcmp(o.file + flen - 6, ".jsonl")) o.jsonl = 1;

  o.ca.no_think = o.no_think;
  int load_rc = cli_chat_load(&o.ca, CMD);
  if (load_rc) {
    cli_chat_free(&o.ca);
    return load_rc;
  }
  xpi_model *m = NULL;
  if (cli_load_model(CMD, &o.load, o.quiet, &m)) {
    cli_chat_free(&o.ca);
    return 1;
  }
  xpi_status s;
  xpi_gen_options go;
  xpi_gen_options_from_model(m, &go);
  if (sampling) go.greedy = 0;
  if (greedy) go.greedy = 1;
  if (n_new >= 0) go.max_new_tokens = (int32_t)n_new;
  if (temp >= 0) go.temperature = (float)temp;
  if (top_k >= 0) go.top_k = (int32_t)top_k;
  if (top_p >= 0) go.top_p = (float)top_p;
  if (min_p >= 0) go.min_p = (float)min_p;
  if (rep >= 0) go.repetition_penalty = (float)rep;
  if (seed >= 0) go.seed = (uint64_t)seed;
  go.stop_strings = o.stops;
  go.n_stop_strings = o.n_stops;
  go.ignore_eos = ignore_eos;
  go.logprobs = o.logprobs;

  gen_defaults d = {&go, o.chat, o.no_special, o.system, &o.ca};
  run_state rs = {.o = &o};
  int rc = o.file ? gen_read_file(o.file, o.jsonl, &d, &rs.items, &rs.n) : gen_one(o.prompt, &d, &rs.items, &rs.n);
  if (rc) {
    gen_items_free(rs.items, rs.n);
    xpi_model_free(m);
    cli_chat_free(&o.ca);
    return rc;
  }
  rs.stream = !o.file && !o.json;
  xpi_engine_options eo;
  cli_engine_options(&o.load, &eo);
  eo.max_seqs = o.parallel ? o.parallel : rs.n < 1 ? 1 : rs.n < 256 ? rs.n : 256;
  xpi_engine *e = NULL;
  s = xpi_engine_create(m, &eo, &e);
  if (s != XPI_OK) {
    rc = cli_fail(CMD, "creating the engine", s);
    gen_items_free(rs.items, rs.n);
    xpi_model_free(m);
    cli_chat_free(&o.ca);
    return rc;
  }
  const double t1 = now_s();
  for (int i = 0; i < rs.n; i++) { /* every prompt is queued at once; the engine admits them as memory allows */
    gen_item *it = &rs.items[i];
    gen_tokenize(xpi_model_tokenizer(m), &d, it);
    if (it->error) continue;
    if (rs.stream) it->printed = -1;
    s = xpi_engine_submit(e, it->ids, it->n_ids, &it->go, on_event, it, &it->seq);
    if (s != XPI_OK) {
      const char *err = xpi_last_error();
      it->error = malloc(strlen(err) + 1);
      if (it->error) strcpy(it->error, err);
    }
  }
  int next = 0, failed = 0;
  int32_t pending = 1;
  failed += flush_done(&rs, &next);
  while (pending > 0) {
    s = xpi_engine_step(e, &pending);
    if (s != XPI_OK && pending == 0) break; /* a failed step ended its batch: reported per prompt */
    failed += flush_done(&rs, &next);
  }
  failed += flush_done(&rs, &next);
  const double t2 = now_s();
  if (!o.quiet && rs.n == 1 && !o.file && !rs.items[0].error) {
    const xpi_gen_result *r = &rs.items[0].res.gen;
    fprintf(stderr, "prompt: %d tokens in %.3f s (%.1f tok/s); time to first token %.3f s\n", r->n_prompt_tokens,
            r->prompt_seconds, r->prompt_seconds > 0 ? r->n_prompt_tokens / r->prompt_seconds : 0.0, r->prompt_seconds);
    int later = r->n_generated > 1 ? r->n_generated - 1 : 0;
    fprintf(stderr, "generated: %d tokens in %.3f s (%.1f tok/s), finish: %s\n", r->n_generated, r->generate_seconds,
            r->generate_seconds > 0 ? later / r->generate_seconds : 0.0,
            r->finish_reason == XPI_FINISH_STOP ? "stop" : r->finish_reason == XPI_FINISH_CANCELLED ? "cancelled"
                                                                                              : "length");
  } else if (!o.quiet && o.file) {
    xpi_engine_stats st = {.struct_size = sizeof st};
    xpi_engine_get_stats(e, &st);
    fprintf(stderr,
            "%d prompts (%d failed): %llu prompt tokens (%llu from the prefix cache), %llu generated in %.3f s "
            "(%.1f tok/s), %d at most at once\n",
            rs.n, failed, (unsigned long long)st.prompt_tokens, (unsigned long long)st.prompt_tokens_cached,
            (unsigned long long)st.completion_tokens, t2 - t1, t2 > t1 ? (double)st.completion_tokens / (t2 - t1) : 0,
            eo.max_seqs);
  }
  if (rs.oom) fprintf(stderr, "xpuinfer %s: out of memory printing the results\n", CMD);
  xpi_engine_free(e);
  gen_items_free(rs.items, rs.n);
  xpi_model_free(m);
  cli_chat_free(&o.ca);
  return failed || rs.oom ? 1 : 0;
}
