/* The options generate and chat share, the model load, and the chat template call (see cli_gen.h). */
#include "cli_gen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void cli_gen_init(cli_gen *g) {
  memset(g, 0, sizeof *g);
  xpi_model_options_default(&g->mo);
  g->stops.v = g->stop_v;
  g->stops.max = sizeof g->stop_v / sizeof g->stop_v[0];
  cli_chat_init(&g->chat);
}

void cli_gen_free(cli_gen *g) { cli_chat_free(&g->chat); }

size_t cli_gen_table(cli_gen *g, cli_opt *o) {
  size_t n = 0;
#define FLAG(s, l, dst) o[n++] = (cli_opt){s, l, CLI_FLAG, dst, 0, 0, 0, 0, 0, NULL}
#define STR(s, l, dst) o[n++] = (cli_opt){s, l, CLI_STR, dst, 0, 0, 0, 0, 0, NULL}
#define INT(s, l, dst, lo, hi, given) o[n++] = (cli_opt){s, l, CLI_INT, dst, lo, hi, 0, 0, 0, given}
#define NUM(s, l, dst, lo, hi, open, given) o[n++] = (cli_opt){s, l, CLI_NUM, dst, 0, 0, lo, hi, open, given}
  STR("-m", "--model", &g->model);
  INT("-n", "--max-new-tokens", &g->n_new, 0, 1 << 30, &g->n_new_given);
  FLAG(NULL, "--greedy", &g->greedy);
  NUM(NULL, "--temperature", &g->temp, 0, INFINITY, 0, &g->temp_given);
  INT(NULL, "--top-k", &g->top_k, 0, 1 << 30, &g->top_k_given);
  NUM(NULL, "--top-p", &g->top_p, 0, 1, 1, &g->top_p_given);
  NUM(NULL, "--min-p", &g->min_p, 0, 1, 0, &g->min_p_given);
  NUM(NULL, "--repeat-penalty", &g->rep, 0, INFINITY, 1, &g->rep_given);
  INT(NULL, "--seed", &g->seed, 0, 0x7fffffffffffffffLL, &g->seed_given);
  o[n++] = (cli_opt){NULL, "--stop", CLI_STRS, &g->stops, 0, 0, 0, 0, 0, NULL};
  FLAG(NULL, "--include-stop", &g->include_stop);
  FLAG(NULL, "--ignore-eos", &g->ignore_eos);
  STR(NULL, "--system", &g->system);
  FLAG(NULL, "--no-think", &g->no_think);
  STR(NULL, "--attn", &g->mo.attn_implementation);
  INT(NULL, "--threads", &g->threads, 0, 1024, &g->threads_given);
  STR(NULL, "--device", &g->mo.device);
  STR(NULL, "--device-map", &g->mo.device_map);
  STR(NULL, "--dtype", &g->mo.dtype);
  STR(NULL, "--quant", &g->mo.quant);
  STR(NULL, "--kv-dtype", &g->mo.kv_dtype);
  FLAG(NULL, "--no-fused", &g->no_fused);
  INT(NULL, "--n-ctx", &g->n_ctx, 1, 1 << 30, &g->n_ctx_given);
  INT(NULL, "--ctx-size", &g->n_ctx, 1, 1 << 30, &g->n_ctx_given); /* llama.cpp's name */
  FLAG(NULL, "--strict", &g->strict);
  FLAG("-q", "--quiet", &g->quiet);
  n += cli_chat_table(&g->chat, o + n);
#undef FLAG
#undef STR
#undef INT
#undef NUM
  return n;
}

int cli_gen_prepare(const char *cmd, cli_gen *g) {
  if (!g->model) return cli_usage_error(cmd, "-m MODEL is required");
  int rc = cli_chat_load(cmd, &g->chat, g->no_think);
  if (rc) return rc;
  if (g->threads_given) g->mo.n_threads = (int)g->threads;
  if (g->no_fused) g->mo.use_kernels = 0;
  g->mo.strict = g->strict;
  if (g->quiet) g->mo.download.quiet = 1;
  return 0;
}

int cli_gen_load_model(const char *cmd, cli_gen *g, xpi_model **m) {
  *m = NULL;
  double t0 = cli_now_s();
  cli_progress_attach(&g->mo.download, &g->bar, g->quiet); /* a repo id downloads on first use */
  xpi_status s = xpi_model_load(g->model, &g->mo, m);
  cli_progress_finish(&g->bar);
  if (s != XPI_OK) return cli_fail(cmd, "loading the model", s);
  if (!g->quiet) {
    xpi_model_info info = {.struct_size = sizeof info};
    xpi_model_get_info(*m, &info);
    fprintf(stderr, "load: %.3f s (%s, %d layers, %s weights on %s, attention %s)\n", cli_now_s() - t0,
            info.architecture, info.n_layers, info.weight_dtype, info.device, info.attn_implementation);
  }
  return 0;
}

int cli_gen_load(const char *cmd, cli_gen *g, xpi_model **m) {
  *m = NULL;
  int rc = cli_gen_prepare(cmd, g);
  return rc ? rc : cli_gen_load_model(cmd, g, m);
}

void cli_gen_options(const cli_gen *g, const xpi_model *m, xpi_gen_options *go) {
  xpi_gen_options_from_model(m, go);
  if (g->temp_given || g->top_k_given || g->top_p_given || g->min_p_given || g->seed_given) go->greedy = 0;
  if (g->greedy) go->greedy = 1;
  if (g->n_new_given) go->max_new_tokens = (int32_t)g->n_new;
  if (g->temp_given) go->temperature = (float)g->temp; /* 0: greedy */
  if (g->top_k_given) go->top_k = (int32_t)g->top_k;
  if (g->top_p_given) go->top_p = (float)g->top_p;
  if (g->min_p_given) go->min_p = (float)g->min_p;
  if (g->rep_given) go->repetition_penalty = (float)g->rep;
  if (g->seed_given) go->seed = (uint64_t)g->seed;
  go->stop_strings = g->stops.v;
  go->n_stop_strings = g->stops.n;
  go->ignore_eos = g->ignore_eos;
  go->include_stop = g->include_stop;
}

int cli_gen_request(const char *cmd, const cli_gen *g, xpi_model *m, xpi_request **r) {
  xpi_request_options ro;
  xpi_request_options_default(&ro);
  if (g->n_ctx_given) ro.n_ctx = (int32_t)g->n_ctx;
  xpi_status s = xpi_request_create(m, &ro, r);
  return s == XPI_OK ? 0 : cli_fail(cmd, "creating a request", s);
}

const char *cli_finish_name(xpi_finish_reason r) {
  return r == XPI_FINISH_STOP ? "stop" : r == XPI_FINISH_CANCELLED ? "cancelled" : "length";
}

int cli_render_chat(const char *cmd, const xpi_tokenizer *tok, const xpi_chat_message *msgs, size_t n,
                    const char *conversation, const cli_gen *g, char **text, size_t *len) {
  return cli_chat_render(cmd, tok, &g->chat, msgs, n, conversation, 1, text, len);
}
