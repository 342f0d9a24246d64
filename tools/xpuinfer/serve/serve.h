/* xpuinfer serve: an OpenAI-compatible HTTP server over one engine, a client of include/xpuinfer.h only.
 *   serve_http.c     HTTP plumbing on libmicrohttpd: limits, routing, auth, error responses, the SSE response
 *   serve_request.c  OpenAI request parsing and validation, and the prompt (chat template, tokenizer)
 *   serve_format.c   OpenAI response objects: completions, chat completions, their stream chunks, errors
 *   serve_job.c      one request's sequence: engine callbacks, what goes out (SSE chunks or one response), cancel
 *   serve_metrics.c  counters and the Prometheus text of GET /metrics
 *   cmd_serve.c      (one folder up) options, loading, signals and shutdown
 * The model, engine, sampling and chat-template options are the CLI's shared tables (cli_gen.h, cli_engine.h);
 * texts, stop strings and logprobs come from the engine's sequences (xpi_gen_options.skip_special: no special
 * tokens, as OpenAI servers return text): the server maps OpenAI fields to xpi options and formats events. */
#ifndef XPI_SERVE_H
#define XPI_SERVE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "chat_args.h"
#include "xpuinfer.h"

/* ------------------------------------------------------------------ configuration and server state */
typedef struct serve_config {
  const char *host;           /* "127.0.0.1" */
  int port;                   /* 0: any free port (printed) */
  int parallel;               /* sequences generated at once (--parallel) */
  int max_queue;              /* requests waiting beyond those; more get 503 */
  const char *api_key;        /* NULL: no auth */
  size_t max_body;            /* bytes */
  size_t max_header;          /* bytes for the request line and headers */
  double shutdown_timeout;    /* seconds running streams get to finish after SIGINT/SIGTERM */
  const char *model_name;     /* what /v1/models lists and requests must name */
  const cli_chat *chat;       /* --chat-template, --template-name, --var, --no-think, --now (loaded) */
  int quiet;
} serve_config;

enum { EP_CHAT, EP_COMPLETIONS, EP_MODELS, EP_HEALTH, EP_METRICS, EP_OTHER, EP_COUNT };
#define METRICS_STATUS_SLOTS 16
#define METRICS_TTFT_BUCKETS 12

typedef struct serve_metrics {
  pthread_mutex_t mu;
  int status_code[METRICS_STATUS_SLOTS];                /* the codes seen, in order of first use */
  uint64_t requests[EP_COUNT][METRICS_STATUS_SLOTS];
  uint64_t ttft_bucket[METRICS_TTFT_BUCKETS + 1];      /* time to first token histogram (+Inf last) */
  double ttft_sum;
  uint64_t ttft_count;
  uint64_t disconnects;                                  /* streams/requests cancelled because the client left */
  uint64_t prompt_tokens, completion_tokens;             /* of finished requests */
} serve_metrics;

typedef struct serve_job serve_job;

typedef struct serve_state {
  serve_config cfg;
  xpi_model *model;
  const xpi_tokenizer *tok;
  xpi_model_info info;
  xpi_engine *engine;
  xpi_gen_options defaults;   /* generation_config.json's, then the command line's (-n, --temperature, --stop, ...) */
  int32_t default_max_tokens; /* -n; 0: a request without max_tokens may fill the context */
  int32_t max_len;            /* longest sequence a request may have (context and KV pool) */
  long created;               /* start time (unix seconds) for /v1/models */
  atomic_int ready;           /* model loaded, engine running */
  atomic_int stopping;        /* no new requests */
  pthread_mutex_t mu;         /* jobs */
  pthread_cond_t cv;          /* a job ended */
  serve_job *jobs;            /* submitted, not ended */
  int n_jobs;
  int n_live;                 /* jobs not yet freed (the HTTP side may still be sending their end) */
  atomic_ullong next_id;
  serve_metrics metrics;
} serve_state;

/* ------------------------------------------------------------------ errors (OpenAI error objects) */
typedef struct serve_error {
  int status;                 /* HTTP status */
  const char *type;           /* "invalid_request_error", "authentication_error", "server_error", ... */
  const char *param;          /* the offending field or NULL */
  const char *code;           /* e.g. "context_length_exceeded" or NULL */
  char message[512];
} serve_error;
void serve_error_set(serve_error *e, int status, const char *type, const char *param, const char *code,
                     const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* {"error": {"message", "type", "param", "code"}} (malloc'd), or NULL out of memory. */
char *serve_error_json(const serve_error *e);

/* ------------------------------------------------------------------ requests */
typedef enum { OAI_CHAT, OAI_COMPLETION } oai_kind;
#define OAI_MAX_STOPS 16

typedef struct oai_request {
  oai_kind kind;
  char *model;
  char *conversation;          /* chat: {"messages", "tools", "add_generation_prompt", ...} for the template */
  char *prompt;                /* completion: the text, or NULL when given as token ids */
  int32_t *prompt_ids;         /* completion: ids given directly */
  size_t n_prompt_ids;
  int has_max_tokens;
  int32_t max_tokens;
  int has_temperature, has_top_p, has_top_k, has_min_p, has_rep, has_seed;
  double temperature, top_p, min_p, repetition_penalty;
  int32_t top_k;
  uint64_t seed;
  char *stops[OAI_MAX_STOPS];
  size_t n_stops;
  int has_stop;                /* "stop" given (even empty): the server's --stop defaults do not apply */
  int stream, include_usage;
  int ignore_eos;              /* -1: not given */
  int logprobs;                /* chat: logprobs true; completion: logprobs given (>= 0) */
  int top_logprobs;            /* alternatives per token (chat: top_logprobs; completion: logprobs N) */
} oai_request;

/* Parses and checks a request body (types and ranges; unknown fields ignored). 0, or -1 with *err set. */
int oai_parse(oai_kind kind, const char *body, size_t len, oai_request *r, serve_error *err);
void oai_request_free(oai_request *r);
/* The prompt's token ids (chat: the conversation rendered by the model's template, or chat's; chat's variables
 * (--var, --no-think) are defaults that the request's chat_template_kwargs override; completion: the text
 * tokenized as transformers' tokenizer(text), or the given ids). chat may be NULL. 0, or -1 with *err set.
 * *ids malloc'd. */
int oai_prompt_ids(const oai_request *r, const xpi_tokenizer *tok, const cli_chat *chat, int32_t **ids, size_t *n,
                   serve_error *err);
/* Generation options: the server's defaults, then the request's fields; the text without special tokens.
 * go->stop_strings may point into r (valid while r is). */
void oai_gen_options(const oai_request *r, const xpi_gen_options *defaults, xpi_gen_options *go);

/* ------------------------------------------------------------------ responses */
typedef struct oai_meta {
  oai_kind kind;
  const char *id;              /* "chatcmpl-..." / "cmpl-..." */
  long created;
  const char *model;
} oai_meta;

typedef struct oai_usage { int64_t prompt, completion, cached; } oai_usage;

/* Logprobs of one generated token, as the chat API has them; completions are formatted from the same. */
typedef struct oai_lp_alt { char *token; float logprob; } oai_lp_alt;
typedef struct oai_logprob {
  char *token;
  float logprob;
  size_t text_offset;          /* completions: the token's offset in the returned text */
  oai_lp_alt *top;
  int32_t n_top;
} oai_logprob;
void oai_logprob_free(oai_logprob *lp);

/* A whole response (stream false). finish: "stop" or "length". malloc'd JSON or NULL. */
char *oai_format_response(const oai_meta *m, const char *text, size_t len, const oai_logprob *lps, size_t n_lps,
                          int with_logprobs, const char *finish, const oai_usage *u);
/* One stream chunk: the text delta (role_first: the chat's first chunk, delta {"role": "assistant"}), a
 * token's logprobs (lp may be NULL), or the finish reason (finish not NULL: empty delta). with_usage_field:
 * "usage": null (stream_options.include_usage). Returns "data: {...}\n\n" malloc'd, or NULL. */
char *oai_format_chunk(const oai_meta *m, const char *delta, size_t len, int role_first, const oai_logprob *lp,
                       int with_logprobs, const char *finish, int with_usage_field);
/* The last chunk of include_usage: choices [] and the usage. */
char *oai_format_usage_chunk(const oai_meta *m, const oai_usage *u);

/* ------------------------------------------------------------------ jobs */
/* Creates a job for a parsed request (taking r's contents) and its prompt ids (taking ids), and submits it to
 * the engine. 0 with *out, or -1 with *err (503 when the queue is full, 400 for what the engine refuses: the
 * context, bad stop strings). */
int job_start(serve_state *srv, oai_request *r, int32_t *ids, size_t n, serve_job **out, serve_error *err);
/* Stream: waits for output and copies up to max bytes of SSE into buf. Returns the bytes (> 0), 0 at the end
 * of the stream, -1 when the client at fd has gone (the sequence is then cancelled). */
long job_read(serve_job *j, char *buf, size_t max, int fd);
/* Not streaming: waits for the end. Returns 0 with the response body (malloc'd) and its HTTP status, or -1
 * when the client at fd has gone (the sequence is then cancelled). */
int job_wait(serve_job *j, int fd, char **body, int *status);
/* The HTTP side is done with the job (cancels its sequence if still running). */
void job_release(serve_job *j);
int job_is_stream(const serve_job *j);
/* Ends every running job's sequence (shutdown). */
void jobs_cancel_all(serve_state *srv);
/* Waits until no job runs or until the deadline (monotonic seconds); returns the jobs left. */
int jobs_wait(serve_state *srv, double deadline);
/* Waits until every job has been freed, i.e. its response sent or abandoned (or the deadline); returns those left. */
int jobs_wait_freed(serve_state *srv, double deadline);

/* ------------------------------------------------------------------ metrics */
void metrics_init(serve_metrics *m);
void metrics_free(serve_metrics *m);
void metrics_request(serve_metrics *m, int endpoint, int status);
void metrics_ttft(serve_metrics *m, double seconds);
void metrics_finished(serve_metrics *m, int64_t prompt, int64_t completion);
void metrics_disconnect(serve_metrics *m);
/* The Prometheus text exposition (malloc'd), or NULL out of memory. */
char *metrics_render(serve_state *srv);

/* ------------------------------------------------------------------ HTTP */
/* Starts listening (cfg host/port) with the handlers; *port_out gets the port bound. 0, or -1 (message printed). */
int http_start(serve_state *srv, int *port_out);
/* Stops accepting new connections (requests on open connections get 503 from here on). */
void http_quiesce(void);
/* Closes every connection and stops the server's threads. */
void http_stop(void);


#endif
