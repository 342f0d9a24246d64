/* xpuinfer generate: load a model, tokenize each prompt like transformers' tokenizer(text) (or render the chat
 * template), generate, and stream the text (or print one JSON object per prompt). Public API only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat_args.h"
#include "cli.h"
#include "download_progress.h"

#define CMD "generate"

static void help(void) {
  printf(
    "usage: xpuinfer generate -m MODEL (-p TEXT | -f FILE | --messages FILE.json) [options]\n"
    "\n"
    "  -m, --model DIR|REPO     model folder or Hugging Face repo id (org/name[@rev])\n"
    "  -p, --prompt TEXT        the prompt\n"
    "  -f, --file FILE          one prompt per line (empty lines skipped)\n"
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
    "      --attn NAME          sdpa (default), eager, flash_attention_2\n"
    "      --threads N          CPU threads (default: all cores)\n"
    "      --device NAME        auto (default), cpu, xpu, xpu:N\n"
    "      --device-map auto    split the layers over all visible XPUs\n"
    "      --dtype NAME         auto (as stored), bf16, f16, f32\n"
    "      --quant q8|q4        weight-only quantization at load\n"
    "      --kv-dtype NAME      KV cache dtype: f32 (CPU default), bf16, f16\n"
    "      --no-fused           unfused reference kernels\n"
    "      --n-ctx N            context size (default min(max_position_embeddings, 4096))\n"
    "      --json               one JSON object per prompt: prompt, text, prompt_ids, ids, finish_reason\n"
    "      --logprobs N         with --json: the N best log-probabilities of each generated token\n"
    "  -q, --quiet              no timing on stderr\n");
}

typedef struct buf { char *p; size_t len, cap; } buf;

static int buf_add(buf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t c = b->cap ? b->cap : 256;
    while (c < b->len + n + 1) c *= 2;
    char *q = realloc(b->p, c);
    if (!q) return -1;
    b->p = q;
    b->cap = c;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
  return 0;
}

static int buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static int buf_printf(buf *b, const char *fmt, ...) {
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  return n < 0 ? -1 : buf_add(b, tmp, (size_t)n);
}

/* JSON string (UTF-8 passes through; quotes, backslashes and control characters escaped). */
static int json_str(buf *b, const char *s, size_t n) {
  if (buf_add(b, "\"", 1)) return -1;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    int r;
    if (c == '"') r = buf_add(b, "\\\"", 2);
    else if (c == '\\') r = buf_add(b, "\\\\", 2);
    else if (c == '\n') r = buf_add(b, "\\n", 2);
    else if (c == '\t') r = buf_add(b, "\\t", 2);
    else if (c == '\r') r = buf_add(b, "\\r", 2);
    else if (c < 0x20) r = buf_printf(b, "\\u%04x", c);
    else r = buf_add(b, (const char *)&c, 1);
    if (r) return -1;
  }
  return buf_add(b, "\"", 1);
}

typedef struct gen_ctx {
  int json, logprobs;
  buf text, ids, lp;
  int n_ids, oom;
} gen_ctx;

static int on_token(const xpi_token_event *ev, void *user) {
  gen_ctx *g = user;
  if (!g->json) {
    fwrite(ev->text, 1, ev->text_len, stdout);
    fflush(stdout);
    return 0;
  }
  int r = buf_add(&g->text, ev->text, ev->text_len);
  r |= buf_printf(&g->ids, "%s%d", g->n_ids ? ", " : "", ev->id);
  if (g->logprobs) {
    r |= buf_add(&g->lp, g->n_ids ? ", [" : "[", g->n_ids ? 3 : 1);
    for (int32_t i = 0; i < ev->n_top; i++)
      r |= buf_printf(&g->lp, "%s{\"id\": %d, \"logprob\": %.6f}", i ? ", " : "", ev->top[i].id, ev->top[i].logprob);
    r |= buf_add(&g->lp, "]", 1);
  }
  g->n_ids++;
  if (r) g->oom = 1;
  return g->oom;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct opts {
  const char *model, *prompt, *file, *system;
  int no_special, chat, no_think, json, quiet, logprobs, n_ctx;
  cli_chat ca; /* chat-template options (chat_args.c) */
  const char *stops[64];
  size_t n_stops;
} opts;

/* Renders (chat) and tokenizes one prompt; *ids malloc'd. */
static int prepare(const xpi_tokenizer *tok, const opts *o, const char *prompt, int32_t **ids, size_t *n) {
  char *text = NULL;
  const char *src = prompt;
  size_t len = strlen(prompt);
  xpi_status s;
  if (o->chat) { /* --messages: the whole conversation; -p: one user turn */
    char *conv = o->ca.messages ? NULL : cli_chat_user_turn(o->system, prompt);
    if (!o->ca.messages && !conv) return cli_fail(CMD, "out of memory", XPI_ERR_OUT_OF_MEMORY);
    s = cli_chat_render(tok, &o->ca, o->ca.messages ? o->ca.messages : conv, 1, &text, &len);
    free(conv);
    if (s != XPI_OK) return cli_fail(CMD, "applying the chat template", s);
    src = text;
  }
  int add_special = !o->no_special && !o->chat; /* a rendered template already has its special tokens */
  s = xpi_tokenize(tok, src, len, add_special, NULL, 0, n);
  if (s == XPI_ERR_BUFFER_TOO_SMALL || s == XPI_OK) {
    *ids = malloc((*n ? *n : 1) * sizeof **ids);
    s = *ids ? xpi_tokenize(tok, src, len, add_special, *ids, *n, n) : XPI_ERR_OUT_OF_MEMORY;
  }
  free(text);
  if (s != XPI_OK) return cli_fail(CMD, "tokenizing the prompt", s);
  return 0;
}

static int run_prompt(xpi_model *m, xpi_request *r, const opts *o, const xpi_gen_options *go, const char *prompt) {
  int32_t *ids = NULL;
  size_t n = 0;
  int rc = prepare(xpi_model_tokenizer(m), o, prompt, &ids, &n);
  if (rc) return rc;
  gen_ctx g = {.json = o->json, .logprobs = o->logprobs};
  xpi_gen_result res = {.struct_size = sizeof res};
  xpi_request_reset(r);
  xpi_status s = xpi_request_generate(r, ids, n, go, on_token, &g, &res);
  if (s == XPI_OK && g.oom) s = XPI_ERR_OUT_OF_MEMORY;
  if (s != XPI_OK) {
    rc = cli_fail(CMD, "generating", s);
  } else if (o->json) {
    buf out = {0};
    int e = buf_add(&out, "{\"prompt\": ", 11) | json_str(&out, prompt, strlen(prompt));
    e |= buf_add(&out, ", \"text\": ", 10) | json_str(&out, g.text.p ? g.text.p : "", g.text.len);
    e |= buf_add(&out, ", \"prompt_ids\": [", 17);
    for (size_t i = 0; i < n; i++) e |= buf_printf(&out, "%s%d", i ? ", " : "", ids[i]);
    e |= buf_add(&out, "], \"ids\": [", 11) | buf_add(&out, g.ids.p ? g.ids.p : "", g.ids.len);
    e |= buf_printf(&out, "], \"finish_reason\": \"%s\"", res.finish_reason == XPI_FINISH_STOP ? "stop" : "length");
    if (o->logprobs) e |= buf_add(&out, ", \"logprobs\": [", 15) | buf_add(&out, g.lp.p ? g.lp.p : "", g.lp.len) | buf_add(&out, "]", 1);
    e |= buf_add(&out, "}", 1);
    if (e) rc = cli_fail(CMD, "out of memory", XPI_ERR_OUT_OF_MEMORY);
    else printf("%s\n", out.p);
    fflush(stdout);
    free(out.p);
  } else {
    printf("\n");
    fflush(stdout);
  }
  if (s == XPI_OK && !o->quiet) {
    fprintf(stderr, "prompt: %d tokens in %.3f s (%.1f tok/s); time to first token %.3f s\n", res.n_prompt_tokens,
            res.prompt_seconds, res.prompt_seconds > 0 ? res.n_prompt_tokens / res.prompt_seconds : 0.0,
            res.prompt_seconds);
    int later = res.n_generated > 1 ? res.n_generated - 1 : 0;
    fprintf(stderr, "generated: %d tokens in %.3f s (%.1f tok/s), finish: %s\n", res.n_generated,
            res.generate_seconds, res.generate_seconds > 0 ? later / res.generate_seconds : 0.0,
            res.finish_reason == XPI_FINISH_STOP ? "stop" : "length");
  }
  free(g.text.p);
  free(g.ids.p);
  free(g.lp.p);
  free(ids);
  return rc;
}

int cmd_generate(int argc, char **argv) {
  opts o = {0};
  xpi_model_options mo;
  xpi_model_options_default(&mo);
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
    if (ARG("-h") || ARG("--help")) { help(); return 0; }
    int chat_arg = cli_chat_arg(&o.ca, CMD, argc, argv, &i);
    if (chat_arg < 0) return -chat_arg;
    if (chat_arg) continue;
    else if (ARG("-m") || ARG("--model")) { NEED(); o.model = v; }
    else if (ARG("-p") || ARG("--prompt")) { NEED(); o.prompt = v; }
    else if (ARG("-f") || ARG("--file")) { NEED(); o.file = v; }
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
    else if (ARG("--attn")) { NEED(); mo.attn_implementation = v; }
    else if (ARG("--threads")) { long long t; INT(t, 0, 1024); mo.n_threads = (int)t; }
    else if (ARG("--device")) { NEED(); mo.device = v; }
    else if (ARG("--device-map")) { NEED(); mo.device_map = v; }
    else if (ARG("--dtype")) { NEED(); mo.dtype = v; }
    else if (ARG("--quant")) { NEED(); mo.quant = v; }
    else if (ARG("--kv-dtype")) { NEED(); mo.kv_dtype = v; }
    else if (ARG("--no-fused")) mo.use_kernels = 0;
    else if (ARG("--n-ctx")) { long long t; INT(t, 1, 1 << 30); o.n_ctx = (int)t; }
    else if (ARG("--json")) o.json = 1;
    else if (ARG("--logprobs")) { long long t; INT(t, 1, 1000); o.logprobs = (int)t; }
    else if (ARG("-q") || ARG("--quiet")) o.quiet = 1;
    else return cli_usage_error(CMD, "unknown option '%s'", a);
  }
  if (!o.model) return cli_usage_error(CMD, "-m MODEL is required");
  if (o.ca.input_file) return cli_usage_error(CMD, "--input is for chat-template; give a conversation with --messages");
  if (o.ca.messages_file) o.chat = 1;
  if (!o.chat && (o.ca.tools_file || o.ca.template_file || o.ca.n_vars || o.ca.template_name))
    return cli_usage_error(CMD, "--tools, --chat-template, --var and --template-name need --chat (or --messages)");
  if (o.ca.messages_file ? o.prompt || o.file || o.system : !o.prompt == !o.file)
    return cli_usage_error(CMD, o.ca.messages_file ? "--messages gives the whole conversation: no -p, -f or --system"
                                                   : "give exactly one of -p TEXT, -f FILE and --messages FILE");
  if (o.logprobs && !o.json) return cli_usage_error(CMD, "--logprobs needs --json");
  if (o.system && !o.chat) return cli_usage_error(CMD, "--system needs --chat");
  if (o.quiet) mo.download.quiet = 1;
  o.ca.no_think = o.no_think;
  int load_rc = cli_chat_load(&o.ca, CMD);
  if (load_rc) {
    cli_chat_free(&o.ca);
    return load_rc;
  }

  double t0 = now_s();
  xpi_model *m = NULL;
  cli_progress bar; /* a repo id downloads on first use: same bar as `xpuinfer download` */
  cli_progress_attach(&mo.download, &bar, o.quiet);
  xpi_status s = xpi_model_load(o.model, &mo, &m);
  cli_progress_finish(&bar);
  if (s != XPI_OK) {
    cli_chat_free(&o.ca);
    return cli_fail(CMD, "loading the model", s);
  }
  if (!o.quiet) {
    xpi_model_info info = {.struct_size = sizeof info};
    xpi_model_get_info(m, &info);
    fprintf(stderr, "load: %.3f s (%s, %d layers, %s weights on %s, attention %s)\n", now_s() - t0, info.architecture,
            info.n_layers, info.weight_dtype, info.device, info.attn_implementation);
  }
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

  xpi_request_options ro;
  xpi_request_options_default(&ro);
  ro.n_ctx = o.n_ctx;
  xpi_request *r = NULL;
  s = xpi_request_create(m, &ro, &r);
  int rc = 0;
  if (s != XPI_OK) {
    rc = cli_fail(CMD, "creating a request", s);
  } else if (o.prompt || o.ca.messages) {
    rc = run_prompt(m, r, &o, &go, o.prompt ? o.prompt : o.ca.messages);
  } else {
    FILE *f = fopen(o.file, "rb");
    if (!f) {
      fprintf(stderr, "xpuinfer %s: cannot open %s\n", CMD, o.file);
      rc = 1;
    } else {
      char *line = NULL;
      size_t cap = 0;
      ssize_t len;
      while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (len > 0) rc = run_prompt(m, r, &o, &go, line);
      }
      free(line);
      fclose(f);
    }
  }
  xpi_request_free(r);
  xpi_model_free(m);
  cli_chat_free(&o.ca);
  return rc;
}
