/* xpuinfer generate: the prompts of one run (gen_input.c), their outputs (gen_output.c), and the command that
 * runs them through one engine (cmd_generate.c). */
#ifndef XPI_CLI_GEN_H
#define XPI_CLI_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "xpuinfer.h"

/* A growing NUL-terminated byte buffer. */
typedef struct gbuf {
  char *p;
  size_t len, cap;
} gbuf;
int gbuf_add(gbuf *b, const char *s, size_t n);              /* 0, or -1 out of memory */
int gbuf_printf(gbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int gbuf_json_str(gbuf *b, const char *s, size_t n);         /* a JSON string literal */

#define GEN_MAX_STOPS 64

/* One prompt: a line of -f (or -p), its options and, once run, its output. */
typedef struct gen_item {
  int index;                   /* 0-based, in input order (empty lines of a .txt file are not counted) */
  char *prompt;                /* the text as given ("prompt"), or NULL for "messages" */
  char *conv;                  /* "messages" of a .jsonl line, as JSON for the chat template */
  xpi_gen_options go;          /* the run's options, then the line's own */
  char *stops[GEN_MAX_STOPS];  /* the line's "stop" strings (owned) */
  char *error;                 /* why the line cannot run (owned), or NULL */
  int32_t *ids;
  size_t n_ids;
  /* output */
  uint64_t seq;
  int done, printed;
  gbuf text, out_ids, lp;
  int n_out;
  xpi_seq_result res;          /* the final event (error copied into error) */
} gen_item;

typedef struct gen_defaults {
  const xpi_gen_options *go;   /* from the model and the command line */
  int chat, no_special;
  const char *system;
  const struct cli_chat *ca;   /* chat-template options (tools, variables incl. --no-think, template, --messages) */
} gen_defaults;

/* Reads a prompt file: one prompt per non-empty line, or with jsonl one JSON object per line with "prompt" or
 * "messages" and optional max_tokens, temperature, top_p, seed, stop. A line that cannot be used becomes an
 * item with its error set. Returns 0, or prints why the file cannot be read and returns 1. */
int gen_read_file(const char *path, int jsonl, const gen_defaults *d, gen_item **items, int *n);
/* One item for -p (prompt NULL with --messages: the conversation is d->ca->messages). */
int gen_one(const char *prompt, const gen_defaults *d, gen_item **items, int *n);
/* Renders (chat) and tokenizes an item; sets item->error on failure. */
void gen_tokenize(const xpi_tokenizer *tok, const gen_defaults *d, gen_item *it);
void gen_items_free(gen_item *items, int n);

/* The item as one JSON line on stdout: index, prompt, text, prompt_ids, ids, finish_reason, prompt_tokens,
 * completion_tokens, ttft_s, tok_s (+ logprobs); or {"index", "error"}. Returns 0 or -1 out of memory. */
int gen_print_json(const gen_item *it, int logprobs);

#endif
