/* One request's sequence. The engine's thread calls on_event with each token: its text (final: the engine's
 * sequence output holds back what could still become a stop string, and leaves out special tokens) and logprobs
 * become SSE chunks for a stream, or accumulate for one response. The HTTP thread of the request waits on the
 * job, watches its client's socket, and cancels the sequence when the client goes. A job is freed by whichever
 * side lets go last (the HTTP side, and the engine's final event). */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve.h"

struct serve_job {
  serve_state *srv;
  serve_job *prev, *next;      /* srv->jobs while submitted */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int refs;
  oai_request r;
  oai_meta meta;
  char id[48];
  uint64_t seq;
  int32_t n_prompt;
  double t_submit;
  size_t text_len;             /* bytes of text the events have given so far */
  int first_token;
  cli_buf text;                /* not streaming: the whole text */
  oai_logprob *lps;            /* not streaming: every token's */
  size_t n_lps, cap_lps;
  cli_buf out;                 /* streaming: SSE bytes; [out_pos, out.len) not yet read by the HTTP side */
  size_t out_pos;
  int oom, done, http_gone;
  xpi_status status;           /* of the sequence */
  char *error;
  xpi_finish_reason finish;
  int32_t n_gen, cached;
};

/* Queues a formatted chunk (taking it); NULL means out of memory. */
static void queue(serve_job *j, char *chunk) {
  if (chunk) cli_buf_puts(&j->out, chunk);
  if (!chunk || j->out.oom) j->oom = 1;
  free(chunk);
}

static char *token_text(const xpi_tokenizer *tok, int32_t id) {
  size_t n = 0;
  xpi_status s = xpi_detokenize(tok, &id, 1, 0, NULL, 0, &n);
  if (s != XPI_OK && s != XPI_ERR_BUFFER_TOO_SMALL) return calloc(1, 1);
  char *t = malloc(n + 1);
  if (t && xpi_detokenize(tok, &id, 1, 0, t, n + 1, &n) != XPI_OK) *t = 0;
  return t;
}

static int make_logprob(serve_job *j, const xpi_token_event *t, oai_logprob *lp) {
  memset(lp, 0, sizeof *lp);
  lp->token = token_text(j->srv->tok, t->id);
  lp->logprob = t->logprob;
  lp->text_offset = j->text_len;
  int32_t n = j->r.top_logprobs < t->n_top ? j->r.top_logprobs : t->n_top;
  if (n > 0 && (lp->top = calloc((size_t)n, sizeof *lp->top)))
    for (int32_t i = 0; i < n; i++) {
      lp->top[i].token = token_text(j->srv->tok, t->top[i].id);
      lp->top[i].logprob = t->top[i].logprob;
      lp->n_top = i + 1;
      if (!lp->top[i].token) return -1;
    }
  return lp->token && (n <= 0 || lp->top) ? 0 : -1;
}

static void job_unref(serve_job *j) {
  pthread_mutex_lock(&j->mu);
  int left = --j->refs;
  pthread_mutex_unlock(&j->mu);
  if (left) return;
  serve_state *srv = j->srv;
  oai_request_free(&j->r);
  cli_buf_free(&j->text);
  for (size_t i = 0; i < j->n_lps; i++) oai_logprob_free(&j->lps[i]);
  free(j->lps);
  cli_buf_free(&j->out);
  free(j->error);
  pthread_cond_destroy(&j->cv);
  pthread_mutex_destroy(&j->mu);
  free(j);
  pthread_mutex_lock(&srv->mu);
  srv->n_live--;
  pthread_cond_broadcast(&srv->cv);
  pthread_mutex_unlock(&srv->mu);
}

/* Keeps a token's logprobs for the response (taking lp). */
static void keep_logprob(serve_job *j, oai_logprob *lp) {
  if (j->n_lps == j->cap_lps) {
    size_t c = j->cap_lps ? 2 * j->cap_lps : 64;
    oai_logprob *q = realloc(j->lps, c * sizeof *q);
    if (q) j->lps = q, j->cap_lps = c;
  }
  if (j->n_lps < j->cap_lps) j->lps[j->n_lps++] = *lp;
  else j->oom = 1, oai_logprob_free(lp);
}

static int on_token(serve_job *j, const xpi_token_event *t) {
  pthread_mutex_lock(&j->mu);
  if (j->http_gone) {
    pthread_mutex_unlock(&j->mu);
    return 1;
  }
  if (!j->first_token) {
    j->first_token = 1;
    metrics_ttft(&j->srv->metrics, cli_now_s() - j->t_submit);
  }
  oai_logprob lp, *lpp = NULL;
  if (j->r.logprobs) {
    if (make_logprob(j, t, &lp)) j->oom = 1;
    lpp = &lp;
  }
  if (j->r.stream) {
    if (t->text_len || lpp)
      queue(j, oai_format_chunk(&j->meta, t->text, t->text_len, 0, lpp, j->r.logprobs, NULL, j->r.include_usage));
    if (lpp) oai_logprob_free(lpp);
  } else {
    cli_buf_add(&j->text, t->text, t->text_len);
    if (j->text.oom) j->oom = 1;
    if (lpp) keep_logprob(j, lpp);
  }
  j->text_len += t->text_len;
  const int stop = j->oom; /* out of memory: the sequence ends, the client gets a 500 */
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
  return stop;
}

static const char *finish_name(const serve_job *j) { return j->finish == XPI_FINISH_STOP ? "stop" : "length"; }

/* Ended by the server (shutdown), not by its own rules or its client. */
static int cancelled(const serve_job *j) { return j->status == XPI_OK && j->finish == XPI_FINISH_CANCELLED; }

static void on_done(serve_job *j, const xpi_seq_result *res) {
  serve_state *srv = j->srv;
  pthread_mutex_lock(&j->mu);
  j->status = res->status;
  j->finish = res->gen.finish_reason;
  j->n_gen = res->gen.n_generated;
  j->cached = res->n_cached_tokens;
  if (res->status != XPI_OK && !(j->error = strdup(res->error))) j->oom = 1;
  if (j->r.stream && !j->http_gone) {
    if (j->oom || res->status != XPI_OK || cancelled(j)) {
      serve_error e;
      if (j->oom) serve_error_set(&e, 500, "server_error", NULL, NULL, "out of memory");
      else if (cancelled(j)) serve_error_set(&e, 503, "server_error", NULL, NULL, "the server is shutting down");
      else serve_error_set(&e, 500, "server_error", NULL, NULL, "generation failed: %s", res->error);
      char *js = serve_error_json(&e);
      if (js) {
        cli_buf_puts(&j->out, "data: ");
        cli_buf_puts(&j->out, js);
        cli_buf_puts(&j->out, "\n\n");
      }
      free(js);
    } else {
      queue(j, oai_format_chunk(&j->meta, "", 0, 0, NULL, j->r.logprobs, finish_name(j), j->r.include_usage));
      if (j->r.include_usage) {
        oai_usage u = {j->n_prompt, j->n_gen, j->cached};
        queue(j, oai_format_usage_chunk(&j->meta, &u));
      }
    }
    cli_buf_puts(&j->out, "data: [DONE]\n\n");
  }
  metrics_finished(&srv->metrics, j->n_prompt, j->n_gen);
  j->done = 1;
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);

  pthread_mutex_lock(&srv->mu);
  if (j->prev) j->prev->next = j->next;
  else srv->jobs = j->next;
  if (j->next) j->next->prev = j->prev;
  j->prev = j->next = NULL;
  srv->n_jobs--;
  pthread_cond_broadcast(&srv->cv);
  pthread_mutex_unlock(&srv->mu);
  job_unref(j);
}

static int on_event(const xpi_seq_event *ev, void *user) {
  if (ev->token) return on_token(user, ev->token);
  on_done(user, ev->done);
  return 0;
}

static void unlink_job(serve_state *srv, serve_job *j) {
  pthread_mutex_lock(&srv->mu);
  if (j->prev) j->prev->next = j->next;
  else srv->jobs = j->next;
  if (j->next) j->next->prev = j->prev;
  srv->n_jobs--;
  pthread_cond_broadcast(&srv->cv);
  pthread_mutex_unlock(&srv->mu);
}

int job_start(serve_state *srv, oai_request *r, int32_t *ids, size_t n, serve_job **out, serve_error *err) {
  *out = NULL;
  if (n > (size_t)srv->max_len) {
    serve_error_set(err, 400, "invalid_request_error", r->kind == OAI_CHAT ? "messages" : "prompt",
                    "context_length_exceeded",
                    "the prompt has %zu tokens, but this server's context holds %d (prompt plus completion)", n,
                    srv->max_len);
    free(ids);
    return -1;
  }
  /* no max_tokens: the server's -n, else (and at most) the rest of the context */
  const int32_t room = srv->max_len - (int32_t)n + 1;
  int32_t max_new = room;
  if (r->has_max_tokens) max_new = r->max_tokens;
  else if (srv->default_max_tokens && srv->default_max_tokens < room) max_new = srv->default_max_tokens;
  if ((int64_t)n + max_new - 1 > srv->max_len) {
    serve_error_set(err, 400, "invalid_request_error", "max_tokens", "context_length_exceeded",
                    "the prompt has %zu tokens and max_tokens is %d, but this server's context holds %d positions "
                    "(prompt + max_tokens - 1): lower max_tokens or shorten the prompt",
                    n, max_new, srv->max_len);
    free(ids);
    return -1;
  }
  serve_job *j = calloc(1, sizeof *j);
  if (!j) {
    free(ids);
    serve_error_set(err, 503, "server_error", NULL, NULL, "out of memory");
    return -1;
  }
  pthread_mutex_init(&j->mu, NULL);
  pthread_cond_init(&j->cv, NULL);
  j->srv = srv;
  pthread_mutex_lock(&srv->mu);
  srv->n_live++;
  pthread_mutex_unlock(&srv->mu);
  j->r = *r;
  memset(r, 0, sizeof *r);
  j->n_prompt = (int32_t)n;
  unsigned long long k = atomic_fetch_add(&srv->next_id, 1);
  snprintf(j->id, sizeof j->id, "%s-%llx%08llx", j->r.kind == OAI_CHAT ? "chatcmpl" : "cmpl",
           (unsigned long long)time(NULL), k);
  j->meta = (oai_meta){j->r.kind, j->id, (long)time(NULL), srv->cfg.model_name};
  if (j->r.stream && j->r.kind == OAI_CHAT)
    queue(j, oai_format_chunk(&j->meta, "", 0, 1, NULL, j->r.logprobs, NULL, j->r.include_usage));
  xpi_gen_options go;
  oai_gen_options(&j->r, &srv->defaults, &go);
  go.max_new_tokens = max_new;

  pthread_mutex_lock(&srv->mu);
  const int busy = srv->n_jobs >= srv->cfg.parallel + srv->cfg.max_queue, stopping = atomic_load(&srv->stopping);
  if (!busy && !stopping) {
    j->next = srv->jobs;
    if (srv->jobs) srv->jobs->prev = j;
    srv->jobs = j;
    srv->n_jobs++;
  }
  pthread_mutex_unlock(&srv->mu);
  if (busy || stopping) {
    if (stopping) serve_error_set(err, 503, "server_error", NULL, NULL, "the server is shutting down");
    else
      serve_error_set(err, 503, "server_error", NULL, "server_busy",
                      "the server is busy: %d requests are running or waiting (--parallel %d + --max-queue %d); "
                      "retry later",
                      srv->cfg.parallel + srv->cfg.max_queue, srv->cfg.parallel, srv->cfg.max_queue);
    free(ids);
    j->refs = 1;
    job_unref(j);
    return -1;
  }
  j->refs = 2; /* the HTTP side, and the engine's final event */
  j->t_submit = cli_now_s();
  uint64_t seq = 0;
  xpi_status s = xpi_engine_submit(srv->engine, ids, n, &go, on_event, j, &seq);
  free(ids);
  if (s != XPI_OK) {
    if (s == XPI_ERR_CONTEXT_LENGTH)
      serve_error_set(err, 400, "invalid_request_error", "max_tokens", "context_length_exceeded", "%s", xpi_last_error());
    else if (s == XPI_ERR_INVALID_ARGUMENT) /* what the engine checks of the options: stop strings' UTF-8 */
      serve_error_set(err, 400, "invalid_request_error", strstr(xpi_last_error(), "stop") ? "stop" : NULL, NULL, "%s",
                      xpi_last_error());
    else if (s == XPI_ERR_OUT_OF_MEMORY)
      serve_error_set(err, 503, "server_error", NULL, NULL, "%s", xpi_last_error());
    else
      serve_error_set(err, 500, "server_error", NULL, NULL, "%s", xpi_last_error());
    unlink_job(srv, j);
    j->refs = 1;
    job_unref(j);
    return -1;
  }
  pthread_mutex_lock(&j->mu);
  j->seq = seq;
  pthread_mutex_unlock(&j->mu);
  *out = j;
  return 0;
}

int job_is_stream(const serve_job *j) { return j->r.stream; }

/* The peer closed its side or the connection broke (a request is fully read before we wait on a job, so a
 * well-behaved client sends nothing more until the response has come). */
static int client_gone(int fd) {
  if (fd < 0) return 0;
  struct pollfd p = {.fd = fd, .events = POLLRDHUP};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* Marks the client gone and cancels the sequence (j->mu held on entry, released on return). */
static void gone_unlock(serve_job *j) {
  const int cancel = !j->done && !j->http_gone;
  const uint64_t seq = j->seq;
  j->http_gone = 1;
  pthread_mutex_unlock(&j->mu);
  if (cancel) {
    xpi_engine_cancel(j->srv->engine, seq);
    metrics_disconnect(&j->srv->metrics);
  }
}

static void wait_a_little(serve_job *j) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += 50 * 1000000L;
  if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
  pthread_cond_timedwait(&j->cv, &j->mu, &ts);
}

long job_read(serve_job *j, char *buf, size_t max, int fd) {
  pthread_mutex_lock(&j->mu);
  for (;;) {
    if (j->out_pos < j->out.len) {
      size_t n = j->out.len - j->out_pos < max ? j->out.len - j->out_pos : max;
      memcpy(buf, j->out.p + j->out_pos, n);
      j->out_pos += n;
      if (j->out_pos == j->out.len) j->out_pos = j->out.len = 0;
      pthread_mutex_unlock(&j->mu);
      return (long)n;
    }
    if (j->done) {
      pthread_mutex_unlock(&j->mu);
      return 0;
    }
    if (client_gone(fd)) {
      gone_unlock(j);
      return -1;
    }
    wait_a_little(j);
  }
}

int job_wait(serve_job *j, int fd, char **body, int *status) {
  *body = NULL;
  pthread_mutex_lock(&j->mu);
  while (!j->done) {
    if (client_gone(fd)) {
      gone_unlock(j);
      return -1;
    }
    wait_a_little(j);
  }
  serve_error e;
  if (j->oom) serve_error_set(&e, 500, "server_error", NULL, NULL, "out of memory");
  else if (j->status != XPI_OK)
    serve_error_set(&e, 500, "server_error", NULL, NULL, "generation failed: %s", j->error ? j->error : "");
  else if (cancelled(j)) serve_error_set(&e, 503, "server_error", NULL, NULL, "the server is shutting down");
  if (j->oom || j->status != XPI_OK || cancelled(j)) {
    *status = e.status;
    *body = serve_error_json(&e);
  } else {
    oai_usage u = {j->n_prompt, j->n_gen, j->cached};
    *status = 200;
    *body = oai_format_response(&j->meta, j->text.p ? j->text.p : "", j->text.len, j->lps, j->n_lps, j->r.logprobs,
                                finish_name(j), &u);
  }
  pthread_mutex_unlock(&j->mu);
  return 0;
}

void job_release(serve_job *j) {
  if (!j) return;
  pthread_mutex_lock(&j->mu);
  gone_unlock(j);
  job_unref(j);
}

void jobs_cancel_all(serve_state *srv) {
  pthread_mutex_lock(&srv->mu);
  for (serve_job *j = srv->jobs; j; j = j->next) {
    pthread_mutex_lock(&j->mu);
    uint64_t seq = j->seq;
    pthread_mutex_unlock(&j->mu);
    if (seq) xpi_engine_cancel(srv->engine, seq);
  }
  pthread_mutex_unlock(&srv->mu);
}

static int wait_count(serve_state *srv, const int *count, double deadline) {
  pthread_mutex_lock(&srv->mu);
  while (*count > 0 && cli_now_s() < deadline) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(&srv->cv, &srv->mu, &ts);
  }
  int left = *count;
  pthread_mutex_unlock(&srv->mu);
  return left;
}

int jobs_wait(serve_state *srv, double deadline) { return wait_count(srv, &srv->n_jobs, deadline); }
int jobs_wait_freed(serve_state *srv, double deadline) { return wait_count(srv, &srv->n_live, deadline); }
