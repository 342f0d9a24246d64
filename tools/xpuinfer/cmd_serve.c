/* xpuinfer serve: an OpenAI-compatible HTTP server (serve/serve.h says which file does what). This file holds
 * the options and the life of the server: listen first (GET /health answers 503 while the model loads), load the
 * model and start the engine's thread, then wait for SIGINT/SIGTERM: stop accepting, give running requests
 * --shutdown-timeout seconds, cancel what is left, close every connection, free, exit 0. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cli_load.h"

#define CMD "serve"

#ifndef XPI_HAVE_SERVE
int cmd_serve(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "xpuinfer serve: this xpuinfer was built without libmicrohttpd, which the server needs: install "
                  "it (Debian: apt-get install libmicrohttpd-dev; scripts/setup.sh does it) and build again\n");
  return 1;
}
#else
#include "serve/serve.h"

static void help(void) {
  printf(
    "usage: xpuinfer serve -m MODEL [options]\n"
    "\n"
    "An OpenAI-compatible HTTP/1.1 server: POST /v1/chat/completions, POST /v1/completions (stream: Server-Sent\n"
    "Events), GET /v1/models, GET /health (503 while the model loads), GET /metrics (Prometheus text).\n"
    "SIGINT/SIGTERM: stop accepting, let running requests finish (--shutdown-timeout), cancel the rest, exit 0.\n"
    "\n"
    "      --host ADDR          address to listen on (default 127.0.0.1; 0.0.0.0 or :: for every interface)\n"
    "      --port N             TCP port (default 8080; 0: any free port, printed on stderr)\n"
    "      --parallel N         sequences generated at once (default 16)\n"
    "      --max-queue N        requests that may wait beyond those; more get 503 (default 64)\n"
    "      --api-key KEY        require 'Authorization: Bearer KEY' (all but /health); also XPUINFER_API_KEY\n"
    "      --model-name NAME    the model's name in the API (default: the -m argument as given)\n"
    "      --chat-template-file FILE  Jinja chat template to use instead of the model's\n"
    "      --max-body SIZE      largest request body (K, M suffixes; default 8M): larger is 413\n"
    "      --max-header BYTES   memory for a request's line and headers (default 32768)\n"
    "      --shutdown-timeout S seconds running requests get to finish after SIGINT/SIGTERM (default 10)\n"
    "  -q, --quiet              no log lines on stderr\n"
    "\nmodel and engine:\n%s",
    cli_load_help);
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t len = 0, cap = 0, n;
  char tmp[65536];
  while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) {
    if (len + n + 1 > cap) {
      cap = (len + n + 1) * 2;
      char *q = realloc(buf, cap);
      if (!q) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = q;
    }
    memcpy(buf + len, tmp, n);
    len += n;
  }
  fclose(f);
  if (!buf) buf = calloc(1, 1);
  else buf[len] = 0;
  return buf;
}

typedef struct loader {
  serve_state *srv;
  cli_load_opts *lo;
  int rc;          /* 0 ok, 1 failed */
  atomic_int done;
} loader;

/* Loads the model and starts the engine (its own thread: the main thread waits for signals meanwhile). */
static void *load_main(void *arg) {
  loader *L = arg;
  serve_state *srv = L->srv;
  L->rc = 1;
  xpi_model *m = NULL;
  if (cli_load_model(CMD, L->lo, srv->cfg.quiet, &m)) goto out;
  xpi_engine_options eo;
  cli_engine_options(L->lo, &eo);
  eo.max_seqs = srv->cfg.parallel;
  xpi_engine *e = NULL;
  xpi_status s = xpi_engine_create(m, &eo, &e);
  if (s != XPI_OK) {
    cli_fail(CMD, "creating the engine", s);
    xpi_model_free(m);
    goto out;
  }
  srv->model = m;
  srv->engine = e;
  srv->tok = xpi_model_tokenizer(m);
  srv->info.struct_size = sizeof srv->info;
  xpi_model_get_info(m, &srv->info);
  xpi_gen_options_from_model(m, &srv->defaults);
  xpi_engine_stats st = {.struct_size = sizeof st};
  xpi_engine_get_stats(e, &st);
  const int64_t ctx = L->lo->n_ctx ? L->lo->n_ctx : srv->info.max_position_embeddings;
  const int64_t pool = (int64_t)st.kv_blocks_total * st.block_size;
  srv->max_len = (int32_t)(ctx < pool ? ctx : pool);
  /* the chat template: rendered once now so that a broken one shows at start, not on the first request */
  xpi_chat_options co;
  xpi_chat_options_default(&co);
  co.chat_template = srv->cfg.chat_template;
  size_t len = 0;
  static const char k_probe[] = "[{\"role\": \"user\", \"content\": \"hi\"}]";
  s = xpi_apply_chat_template_json(srv->tok, k_probe, sizeof k_probe - 1, &co, NULL, 0, &len);
  if (s != XPI_OK && s != XPI_ERR_BUFFER_TOO_SMALL) {
    if (srv->cfg.chat_template) {
      cli_fail(CMD, "the --chat-template-file template", s);
      goto out; /* the engine and model are freed by the caller */
    }
    if (!srv->cfg.quiet)
      fprintf(stderr, "xpuinfer serve: no usable chat template (%s): /v1/chat/completions will answer 400; give "
                      "--chat-template-file\n", xpi_last_error());
  }
  s = xpi_engine_start(e);
  if (s != XPI_OK) {
    cli_fail(CMD, "starting the engine", s);
    goto out;
  }
  L->rc = 0;
  atomic_store(&srv->ready, 1);
  if (!srv->cfg.quiet)
    fprintf(stderr, "xpuinfer serve: ready: %s (%s, %s on %s), %d sequences at once, context %d, KV pool %d blocks of %d\n",
            srv->cfg.model_name, srv->info.architecture, srv->info.weight_dtype, srv->info.device, srv->cfg.parallel,
            srv->max_len, st.kv_blocks_total, st.block_size);
out:
  atomic_store(&L->done, 1);
  return NULL;
}

int cmd_serve(int argc, char **argv) {
  cli_load_opts lo;
  cli_load_opts_init(&lo);
  serve_config cfg = {.host = "127.0.0.1", .port = 8080, .parallel = 16, .max_queue = 64, .max_body = 8u << 20,
                      .max_header = 32768, .shutdown_timeout = 10};
  cfg.api_key = getenv("XPUINFER_API_KEY");
  if (cfg.api_key && !*cfg.api_key) cfg.api_key = NULL;
  const char *template_file = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    long long t;
    double d;
    int shared = cli_load_opt(CMD, argc, argv, &i, &lo);
    if (shared < 0) return 2;
    if (shared) continue;
#define ARG(name) (!strcmp(a, name))
#define NEED() do { if (!v) return cli_usage_error(CMD, "%s needs a value", a); i++; } while (0)
#define INT(dst, lo_, hi_) do { NEED(); if (cli_parse_int(v, lo_, hi_, &t)) return cli_usage_error(CMD, "%s: '%s' is not an integer in [%lld, %lld]", a, v, (long long)(lo_), (long long)(hi_)); dst = (int)t; } while (0)
    if (ARG("-h") || ARG("--help")) { help(); return 0; }
    else if (ARG("--host")) { NEED(); cfg.host = v; }
    else if (ARG("--port")) INT(cfg.port, 0, 65535);
    else if (ARG("--parallel")) INT(cfg.parallel, 1, 4096);
    else if (ARG("--max-queue")) INT(cfg.max_queue, 0, 1 << 20);
    else if (ARG("--api-key")) { NEED(); cfg.api_key = *v ? v : NULL; }
    else if (ARG("--model-name")) { NEED(); cfg.model_name = v; }
    else if (ARG("--chat-template-file")) { NEED(); template_file = v; }
    else if (ARG("--max-body")) { NEED(); if (cli_parse_size(v, &t) || t > (1LL << 40)) return cli_usage_error(CMD, "--max-body: '%s' is not a size (e.g. 8M)", v); cfg.max_body = (size_t)t; }
    else if (ARG("--max-header")) { NEED(); if (cli_parse_int(v, 1024, 1 << 24, &t)) return cli_usage_error(CMD, "--max-header: '%s' is not an integer in [1024, 16777216]", v); cfg.max_header = (size_t)t; }
    else if (ARG("--shutdown-timeout")) { NEED(); if (cli_parse_float(v, &d) || d < 0) return cli_usage_error(CMD, "--shutdown-timeout: '%s' is not a number of seconds", v); cfg.shutdown_timeout = d; }
    else if (ARG("-q") || ARG("--quiet")) cfg.quiet = 1;
    else return cli_usage_error(CMD, "unknown option '%s'", a);
#undef ARG
#undef NEED
#undef INT
  }
  if (cli_load_check(CMD, &lo)) return 2;
  if (!cfg.model_name) cfg.model_name = lo.model;
  char *tmpl = NULL;
  if (template_file && !(tmpl = read_file(template_file))) {
    fprintf(stderr, "xpuinfer serve: cannot read --chat-template-file %s\n", template_file);
    return 1;
  }
  cfg.chat_template = tmpl;

  /* Signals are taken by sigwait below: blocked here, before any thread starts, so every thread inherits it. */
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN); /* a client gone mid-write is an error return, not the end of the server */

  static serve_state srv; /* static: the HTTP threads may outlive a return path only through http_stop */
  memset(&srv, 0, sizeof srv);
  srv.cfg = cfg;
  srv.created = (long)time(NULL);
  pthread_mutex_init(&srv.mu, NULL);
  pthread_cond_init(&srv.cv, NULL);
  atomic_init(&srv.next_id, 1);
  metrics_init(&srv.metrics);
  int port = 0;
  if (http_start(&srv, &port)) {
    free(tmpl);
    return 1;
  }
  if (!cfg.quiet) {
    const int v6 = strchr(cfg.host, ':') != NULL;
    fprintf(stderr, "xpuinfer serve: listening on http://%s%s%s:%d (loading %s)\n", v6 ? "[" : "", cfg.host,
            v6 ? "]" : "", port, lo.model);
  }
  loader L = {.srv = &srv, .lo = &lo};
  atomic_init(&L.done, 0);
  pthread_t lt;
  int rc = 0;
  if (pthread_create(&lt, NULL, load_main, &L)) {
    fprintf(stderr, "xpuinfer serve: cannot start a thread\n");
    http_stop();
    free(tmpl);
    return 1;
  }
  int sig = 0;
  for (;;) {
    struct timespec ts = {0, 100 * 1000000L};
    sig = sigtimedwait(&sigs, NULL, &ts);
    if (sig > 0) break;
    if (atomic_load(&L.done) && L.rc) { /* the load failed: said why */
      rc = 1;
      break;
    }
  }
  atomic_store(&srv.stopping, 1);
  http_quiesce();
  if (sig > 0 && !cfg.quiet)
    fprintf(stderr, "xpuinfer serve: %s: no new connections; %d requests running get %.0f s to finish\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM", srv.n_jobs, cfg.shutdown_timeout);
  pthread_join(lt, NULL);
  /* a second signal skips the grace period */
  const double deadline = serve_now() + cfg.shutdown_timeout;
  while (jobs_wait(&srv, serve_now() + 0.1 < deadline ? serve_now() + 0.1 : deadline) > 0 && serve_now() < deadline) {
    struct timespec zero = {0, 0};
    if (sigtimedwait(&sigs, NULL, &zero) > 0) break;
  }
  for (int tries = 0; tries < 100 && jobs_wait(&srv, serve_now() + 0.1) > 0; tries++) jobs_cancel_all(&srv);
  jobs_wait_freed(&srv, serve_now() + 10); /* the streams' last chunks go out before the connections close */
  http_stop();
  if (srv.engine) xpi_engine_free(srv.engine);
  xpi_model_free(srv.model);
  metrics_free(&srv.metrics);
  pthread_cond_destroy(&srv.cv);
  pthread_mutex_destroy(&srv.mu);
  free(tmpl);
  if (!cfg.quiet && rc == 0) fprintf(stderr, "xpuinfer serve: stopped\n");
  return rc;
}
#endif
