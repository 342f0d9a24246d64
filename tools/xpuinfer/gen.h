/* xpuinfer generate: the prompts of one run (gen_input.c), their JSON lines (gen_output.c), and the command that
 * runs them all through one engine (cmd_generate.c). */
#ifndef XPI_CLI_GEN_ITEMS_H
#define XPI_CLI_GEN_ITEMS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "chat_args.h"
#include "cli.h"

#define GEN_MAX_STOPS 64

/* One prompt: a line of -f (or -p), its options and, once run, its output. */
typedef struct gen_item {
  int index;                   /* 0-based, in input order (empty lines of a text file are not counted) */
  long line;                   /* its line in the file (1-based; 0 for -p) */
  char *prompt;                /* the text as given ("prompt"), or NULL for "messages" */
  char *conversation;          /* "messages" of a .jsonl line (or --messages): JSON for the chat template */
  xpi_gen_options go;          /* the run's options, then the line's own */
  char *stops[GEN_MAX_STOPS];  /* the line's "stop" strings (owned) */
  char *error;                 /* why the line cannot run or failed (owned), or NULL */
  int32_t *ids;
  size_t n_ids;
  /* output */
  uint64_t seq;
  int done, stream;            /* stream: the text goes to stdout as it comes (-p without --json) */
  cli_buf text, out_ids, lp;
  int n_out;
  xpi_gen_result res;
} gen_item;

typedef struct gen_defaults {
  const xpi_gen_options *go;   /* from the model and the command line */
  int chat, no_special;
  const char *system;
  const cli_chat *chat_opts;   /* --chat-template, --tools, --var, --no-think, ... */
} gen_defaults;

/* Reads the prompts of f (named name in messages): one per non-empty line, or with jsonl one JSON object per
 * line with "prompt" or "messages" and optional max_tokens, temperature, top_p, seed, stop. A line that cannot
 * be used becomes an item with its error set (a NUL byte, bad JSON or fields). Returns 0, or 1 after printing
 * why the file cannot be read. */
int gen_read_file(const char *cmd, FILE *f, const char *name, int jsonl, const gen_defaults *d, gen_item **items,
                  int *n);
/* One item for -p TEXT, or (prompt NULL) for --messages' conversation. */
int gen_one(const char *prompt, const char *conversation, const gen_defaults *d, gen_item **items, int *n);
/* Renders (chat) and tokenizes an item; sets item->error on failure. */
void gen_tokenize(const xpi_tokenizer *tok, const gen_defaults *d, gen_item *it);
void gen_items_free(gen_item *items, int n);
/* item->error = a copy of msg (kept if one is set already). */
void gen_set_error(gen_item *it, const char *msg);

/* The item as one JSON line on stdout: index, prompt (the text, or the messages' JSON), text, prompt_ids, ids, finish_reason, prompt_tokens,
 * completion_tokens, ttft_s, tok_s (+ logprobs); or {"index", "error"}. Returns 0 or -1 out of memory. */
int gen_print_json(const gen_item *it, int logprobs);

#endif
