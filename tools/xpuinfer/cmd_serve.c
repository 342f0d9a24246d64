/* xpuinfer serve: an OpenAI-compatible HTTP server (serve/serve.h says which file does what). This file holds
 * the options and the life of the server: listen first (GET /health answers 503 while the model loads), load the
 * model and start the engine's thread, then wait for SIGINT/SIGTERM: stop accepting, give running requests
 * --shutdown-timeout seconds, cancel what is left, close every connection, free, exit 0. The model, sampling,
 * chat-template and engine options are the tables generate uses (cli_gen.h, cli_engine.h). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

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
#include "cli_engine.h"
#include "cli_gen.h"
#include "serve/serve.h"

static void help(void) {
  printf(
    "usage: xpuinfer serve -m MODEL [options]\n"
    "\n"
    "An OpenAI-compatible HTTP/1.1 server: POST /v1/chat/completions, POST /v1/completions (stream: Server-Sent\n"
    "Events), GET /v1/models, GET /health (503 while the model loads), GET /metrics (Prometheus text).\n"
    "Concurrent requests are generated together (continuous batching). SIGINT/SIGTERM: stop accepting, let\n"
    "running requests finish (--shutdown-timeout), cancel the rest, exit 0.\n"
    "\n"
    "      --host ADDR          address to listen on (default 127.0.0.1; 0.0.0.0 or :: for every interface)\n"
    "      --port N             TCP port (default 8080; 0: any free port, printed on stderr)\n"
    "      --max-queue N        requests that may wait beyond --parallel; more get 503 (default 64)\n"
    "      --api-key KEY        require 'Authorization: Bearer KEY' (all but /health); also XPUINFER_API_KEY\n"
    "      --model-name NAME    the model's name in the API (default: the -m argument as given)\n"
    "      --max-body SIZE      largest request body (K, M suffixes; default 8M): larger is 413\n"
    "      --max-header BYTES   memory for a request's line and headers (default 32768)\n"
    "      --shutdown-timeout S seconds running requests get to finish after SIGINT/SIGTERM (default 10)\n"
    "\n"
    "Engine:\n" CLI_ENGINE_HELP("16")
    "\n"
    "Model, defaults for what a request leaves unset, chat template (-n: max_tokens, else the rest of the\n"
    "context; --stop: stop; --var and --no-think: variables the request's chat_template_kwargs override; -q: no\n"
    "log lines on stderr):\n" CLI_GEN_HELP CLI_COMMON_HELP
    "\n"
    "Options take their value as --opt VALUE or --opt=VALUE. A bad option or value exits with 2 before anything\n"
    "loads; a model that cannot load, with 1.\n");
}

typedef struct loader {
  serve_state *srv;
  cli_gen *g;
  const cli_engine *e;
  int rc;          /* 0 ok, 1 failed */
  atomic_int done;
} loader;

/* Loads the model and starts the engine (its own thread: the main thread waits for signals meanwhile). */
static void *load_main(void *arg) {
  loader *L = arg;
  serve_state *srv = L->srv;
  L->rc = 1;
  xpi_model *m = NULL;
  if (cli_gen_load_model(CMD, L->g, &m)) goto out;
  xpi_engine_options eo;
  const int32_t n_ctx = L->g->n_ctx_given ? (int32_t)L->g->n_ctx : 0;
  cli_engine_options(L->e, srv->cfg.parallel, n_ctx, &eo);
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
  cli_gen_options(L->g, m, &srv->defaults);
  srv->default_max_tokens = L->g->n_new_given ? (int32_t)L->g->n_new : 0;
  xpi_engine_stats st = {.struct_size = sizeof st};
  xpi_engine_get_stats(e, &st);
  const int64_t ctx = n_ctx ? n_ctx : srv->info.max_position_embeddings;
  const int64_t pool = (int64_t)st.kv_blocks_total * st.block_size;
  srv->max_len = (int32_t)(ctx < pool ? ctx : pool);
  /* the chat template: rendered once now so that a broken one shows at start, not on the first request */
  static const char k_probe[] = "[{\"role\": \"user\", \"content\": \"hi\"}]";
  char *text = NULL;
  size_t len = 0;
  s = cli_chat_render_status(srv->tok, srv->cfg.chat, NULL, 0, k_probe, 1, &text, &len);
  free(text);
  if (s != XPI_OK) {
    if (srv->cfg.chat->tpl) {
      cli_fail(CMD, "the --chat-template template", s);
      goto out; /* the engine and model are freed by the caller */
    }
    if (!srv->cfg.quiet)
      fprintf(stderr, "xpuinfer serve: no usable chat template (%s): /v1/chat/completions will answer 400; give "
                      "--chat-template\n", xpi_last_error());
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
            srv->cfg.model_name, srv->info.architecture, srv->info.weight_dtype, srv->info.device, eo.max_seqs,
            srv->max_len, st.kv_blocks_total, st.block_size);
out:
  atomic_store(&L->done, 1);
  return NULL;
}

int cmd_serve(int argc, char **argv) {
  cli_gen g;
  cli_engine e = {0};
  cli_gen_init(&g);
  serve_config cfg = {.host = "127.0.0.1", .port = 8080, .max_queue = 64, .max_header = 32768, .shutdown_timeout = 10};
  const char *api_key = NULL, *max_body = "8M";
  long long port = cfg.port, max_queue = cfg.max_queue, max_header = (long long)cfg.max_header;
  cli_opt t[CLI_GEN_MAX_OPTS + CLI_ENGINE_MAX_OPTS + 8];
  size_t n = cli_gen_table(&g, t);
  n += cli_engine_table(&e, t + n);
  t[n++] = (cli_opt){NULL, "--host", CLI_STR, &cfg.host, 0, 0, 0, 0, 0, NULL};
  t[n++] = (cli_opt){NULL, "--port", CLI_INT, &port, 0, 65535, 0, 0, 0, NULL};
  t[n++] = (cli_opt){NULL, "--max-queue", CLI_INT, &max_queue, 0, 1 << 20, 0, 0, 0, NULL};
  t[n++] = (cli_opt){NULL, "--api-key", CLI_STR, &api_key, 0, 0, 0, 0, 0, NULL};
  t[n++] = (cli_opt){NULL, "--model-name", CLI_STR, &cfg.model_name, 0, 0, 0, 0, 0, NULL};
  t[n++] = (cli_opt){NULL, "--max-body", CLI_STR, &max_body, 0, 0, 0, 0, 0, NULL};
  t[n++] = (cli_opt){NULL, "--max-header", CLI_INT, &max_header, 1024, 1 << 24, 0, 0, 0, NULL};
  t[n++] = (cli_opt){NULL, "--shutdown-timeout", CLI_NUM, &cfg.shutdown_timeout, 0, 0, 0, 1e6, 0, NULL};
  int rc = cli_parse(CMD, argc, argv, t, n, NULL, 0, NULL);
  if (rc == CLI_HELP) {
    help();
    cli_gen_free(&g);
    return 0;
  }
  long long body_bytes = 0;
  if (!rc && (cli_parse_size(max_body, &body_bytes) || body_bytes > (1LL << 40)))
    rc = cli_usage_error(CMD, "--max-body: '%s' is not a size up to 1T (e.g. 8M)", max_body);
  if (!rc && (g.system || g.chat.tools_file))
    rc = cli_usage_error(CMD, "%s: a request gives its own messages and tools", g.system ? "--system" : "--tools");
  if (!rc) rc = cli_engine_check(CMD, &e);
  if (!rc) rc = cli_gen_prepare(CMD, &g); /* -m given, template files read, --var checked: before listening */
  if (rc) {
    cli_gen_free(&g);
    return rc;
  }
  cfg.port = (int)port;
  cfg.max_queue = (int)max_queue;
  cfg.max_header = (size_t)max_header;
  cfg.max_body = (size_t)body_bytes;
  cfg.parallel = e.parallel ? (int)e.parallel : 16;
  cfg.quiet = g.quiet;
  cfg.chat = &g.chat;
  if (!api_key) api_key = getenv("XPUINFER_API_KEY");
  cfg.api_key = api_key && *api_key ? api_key : NULL;
  if (!cfg.model_name) cfg.model_name = g.model;
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
  int bound = 0;
  if (http_start(&srv, &bound)) {
    cli_gen_free(&g);
    return 1;
  }
  if (!cfg.quiet) {
    const int v6 = strchr(cfg.host, ':') != NULL;
    fprintf(stderr, "xpuinfer serve: listening on http://%s%s%s:%d (loading %s)\n", v6 ? "[" : "", cfg.host,
            v6 ? "]" : "", bound, g.model);
  }
  loader L = {.srv = &srv, .g = &g, .e = &e};
  atomic_init(&L.done, 0);
  pthread_t lt;
  rc = 0;
  if (pthread_create(&lt, NULL, load_main, &L)) {
    fprintf(stderr, "xpuinfer serve: cannot start a thread\n");
    http_stop();
    cli_gen_free(&g);
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
  const double deadline = cli_now_s() + cfg.shutdown_timeout;
  while (jobs_wait(&srv, cli_now_s() + 0.1 < deadline ? cli_now_s() + 0.1 : deadline) > 0 && cli_now_s() < deadline) {
    struct timespec zero = {0, 0};
    if (sigtimedwait(&sigs, NULL, &zero) > 0) break;
  }
  for (int tries = 0; tries < 100 && jobs_wait(&srv, cli_now_s() + 0.1) > 0; tries++) jobs_cancel_all(&srv);
  jobs_wait_freed(&srv, cli_now_s() + 10); /* the streams' last chunks go out before the connections close */
  http_stop();
  if (srv.engine) xpi_engine_free(srv.engine);
  xpi_model_free(srv.model);
  metrics_free(&srv.metrics);
  pthread_cond_destroy(&srv.cv);
  pthread_mutex_destroy(&srv.mu);
  cli_gen_free(&g);
  if (!cfg.quiet && rc == 0) fprintf(stderr, "xpuinfer serve: stopped\n");
  return rc;
}
#endif
