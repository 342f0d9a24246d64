/* What `generate`, `chat` and `serve` share: the model and how it loads, sampling and length options (one option
 * table, one meaning, one help text) and the chat template call. */
#ifndef XPI_CLI_GEN_H
#define XPI_CLI_GEN_H

#include "chat_args.h"
#include "cli.h"
#include "download_progress.h"

typedef struct cli_gen {
  const char *model;
  xpi_model_options mo;
  long long n_new, top_k, seed, threads, n_ctx;
  double temp, top_p, min_p, rep;
  int greedy, ignore_eos, include_stop, no_fused, strict, quiet, no_think;
  int n_new_given, temp_given, top_k_given, top_p_given, min_p_given, seed_given, rep_given, threads_given;
  int n_ctx_given;
  const char *system;
  const char *stop_v[64];
  cli_strs stops;
  cli_progress bar;
  cli_chat chat;             /* --chat-template, --tools, --var, ... (chat_args.h) */
} cli_gen;

#define CLI_GEN_MAX_OPTS (32 + CLI_CHAT_MAX_OPTS)

/* Defaults (the model's generation_config.json decides what no option overrides). */
void cli_gen_init(cli_gen *g);
void cli_gen_free(cli_gen *g);
/* Writes the shared options into out[0..CLI_GEN_MAX_OPTS); returns how many. */
size_t cli_gen_table(cli_gen *g, cli_opt *out);

#define CLI_GEN_HELP                                                                                          \
  "  -m, --model DIR|REPO     model folder or Hugging Face repo id (org/name[@rev])\n"                       \
  "  -n, --max-new-tokens N   tokens to generate, stop token included (default: generation_config.json,\n"   \
  "                           else 256)\n"                                                                    \
  "      --greedy             argmax decoding (the default when generation_config.json says do_sample=false)\n" \
  "      --temperature T      sample with this temperature, T >= 0 (0: greedy; any sampling flag turns\n"    \
  "                           sampling on)\n"                                                                 \
  "      --top-k K            keep the K most likely tokens (0: off)\n"                                      \
  "      --top-p P            nucleus sampling, P in (0, 1] (1: off)\n"                                      \
  "      --min-p P            drop tokens below P x the top probability, P in [0, 1] (0: off)\n"            \
  "      --repeat-penalty R   repetition penalty as transformers, R > 0 (1: off)\n"                          \
  "      --seed S             random seed (same seed, same text; default 0)\n"                               \
  "      --stop TEXT          stop when the text contains TEXT (repeatable); TEXT is not part of the output\n" \
  "      --include-stop       keep the stop string that ended the text in the output\n"                      \
  "      --ignore-eos         do not stop at end-of-sequence tokens (they become ordinary text)\n"           \
  "      --system TEXT        system message of the chat template (generate: with --chat)\n"              \
  "      --no-think           enable_thinking=false in the chat template (Qwen3)\n" CLI_CHAT_HELP            \
  "      --attn NAME          sdpa (default), eager, flash_attention_2\n"                                    \
  "      --threads N          CPU threads (default: all cores)\n"                                            \
  "      --device NAME        auto (default), cpu, xpu, xpu:N\n"                                             \
  "      --device-map auto    split the layers over all visible XPUs\n"                                      \
  "      --dtype NAME         auto (as stored), bf16, f16, f32\n"                                            \
  "      --quant q8|q4        weight-only quantization at load\n"                                            \
  "      --kv-dtype NAME      KV cache dtype: f32 (CPU default), bf16, f16\n"                                \
  "      --no-fused           unfused reference kernels\n"                                                   \
  "      --n-ctx, --ctx-size N  context size: the longest sequence, prompt plus new tokens (default: chat\n" \
  "                           min(max_position_embeddings, 4096); generate and serve max_position_embeddings)\n" \
  "      --strict             fail when the checkpoint holds tensors the model never reads (default: a\n"    \
  "                           warning, shown with -v)\n"                                                      \
  "  -q, --quiet              no timing or progress on stderr\n"

/* cli_gen_prepare, then cli_gen_load_model. Returns 0 or an exit code after the message. */
int cli_gen_load(const char *cmd, cli_gen *g, xpi_model **m);
/* Checks -m, reads the chat-template files and checks --var (before the model, so mistakes stop early), and
 * sets the model options from the flags. Returns 0 or an exit code after the message. */
int cli_gen_prepare(const char *cmd, cli_gen *g);
/* Loads g->model (progress bar, a timing line unless quiet). Returns 0 or 1 after the message. */
int cli_gen_load_model(const char *cmd, cli_gen *g, xpi_model **m);
/* The model's generation defaults with the options given on top. */
void cli_gen_options(const cli_gen *g, const xpi_model *m, xpi_gen_options *go);
/* A request with --n-ctx. Returns 0 or an exit code after the message. */
int cli_gen_request(const char *cmd, const cli_gen *g, xpi_model *m, xpi_request **r);

/* "length", "stop", "cancelled" */
const char *cli_finish_name(xpi_finish_reason r);

/* The one place generate and chat render a chat template: the conversation (structured messages, or a JSON
 * conversation when msgs is NULL) formatted by the model's template (or --chat-template) with the chat options,
 * ready for the assistant's answer (add_generation_prompt). *text is malloc'd. 0 or 1 after the message. */
int cli_render_chat(const char *cmd, const xpi_tokenizer *tok, const xpi_chat_message *msgs, size_t n,
                    const char *conversation, const cli_gen *g, char **text, size_t *len);

#endif
