/* HTTP/1.1 on libmicrohttpd: one thread per connection (a request's thread waits on its job and watches its
 * socket), limits on headers (the connection memory limit) and bodies (413), bearer-token auth (401), routing
 * (404 unknown path, 405 wrong method), OpenAI error objects, and the streamed response as Server-Sent Events
 * (chunked transfer encoding). */
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "serve.h"

static struct MHD_Daemon *g_daemon;
static MHD_socket g_listen = MHD_INVALID_SOCKET; /* after quiesce: closed once the daemon has stopped */

typedef struct conn {
  int endpoint;
  char *body;
  size_t len, cap;
  int too_large;
} conn;

/* ------------------------------------------------------------------ responses */
static enum MHD_Result send_body(struct MHD_Connection *c, serve_state *srv, int ep, int status, char *body,
                                 const char *type) {
  if (!body) { /* out of memory formatting the response */
    static const char k_oom[] = "{\"error\": {\"message\": \"out of memory\", \"type\": \"server_error\", "
                                "\"param\": null, \"code\": null}}";
    body = malloc(sizeof k_oom);
    if (!body) return MHD_NO;
    memcpy(body, k_oom, sizeof k_oom);
    status = 500;
    type = "application/json";
  }
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  if (status == 401) MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
  if (status == 405)
    MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, ep == EP_CHAT || ep == EP_COMPLETIONS ? "POST" : "GET, HEAD");
  if (atomic_load(&srv->stopping)) MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
  enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
  MHD_destroy_response(r);
  metrics_request(&srv->metrics, ep, status);
  return ok;
}

static enum MHD_Result send_error(struct MHD_Connection *c, serve_state *srv, int ep, const serve_error *e) {
  return send_body(c, srv, ep, e->status, serve_error_json(e), "application/json");
}

static enum MHD_Result fail(struct MHD_Connection *c, serve_state *srv, int ep, int status, const char *type,
                            const char *code, const char *msg) {
  serve_error e;
  serve_error_set(&e, status, type, NULL, code, "%s", msg);
  return send_error(c, srv, ep, &e);
}

/* ------------------------------------------------------------------ streams */
typedef struct stream_ctx {
  serve_job *job;
  int fd;
} stream_ctx;

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  stream_ctx *s = cls;
  long n = job_read(s->job, buf, max, s->fd);
  if (n > 0) return (ssize_t)n;
  return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void stream_free(void *cls) { /* the response is done (sent, or the connection broke) */
  stream_ctx *s = cls;
  job_release(s->job);
  free(s);
}

static int conn_fd(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  return ci ? ci->connect_fd : -1;
}

/* ------------------------------------------------------------------ endpoints */
static enum MHD_Result completions(struct MHD_Connection *c, serve_state *srv, conn *k) {
  const int ep = k->endpoint;
  serve_error e;
  oai_request r;
  if (oai_parse(ep == EP_CHAT ? OAI_CHAT : OAI_COMPLETION, k->body ? k->body : "", k->len, &r, &e))
    return send_error(c, srv, ep, &e);
  if (strcmp(r.model, srv->cfg.model_name)) {
    serve_error_set(&e, 404, "invalid_request_error", "model", "model_not_found",
                    "The model '%.200s' does not exist: this server serves '%.200s' (GET /v1/models)", r.model,
                    srv->cfg.model_name);
    oai_request_free(&r);
    return send_error(c, srv, ep, &e);
  }
  int32_t *ids = NULL;
  size_t n = 0;
  if (oai_prompt_ids(&r, srv->tok, srv->cfg.chat, &ids, &n, &e)) {
    oai_request_free(&r);
    return send_error(c, srv, ep, &e);
  }
  serve_job *j = NULL;
  if (job_start(srv, &r, ids, n, &j, &e)) { /* takes r and ids */
    oai_request_free(&r);
    return send_error(c, srv, ep, &e);
  }
  const int fd = conn_fd(c);
  if (job_is_stream(j)) {
    stream_ctx *s = malloc(sizeof *s);
    struct MHD_Response *resp =
      s ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, s, stream_free) : NULL;
    if (!resp) {
      free(s);
      job_release(j);
      return fail(c, srv, ep, 500, "server_error", NULL, "out of memory");
    }
    s->job = j;
    s->fd = fd;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp); /* stream_free runs when MHD is done with it */
    metrics_request(&srv->metrics, ep, 200);
    return ok;
  }
  char *body = NULL;
  int status = 0;
  if (job_wait(j, fd, &body, &status)) { /* the client left: close the connection */
    job_release(j);
    metrics_request(&srv->metrics, ep, 499); /* nginx's "client closed request" */
    return MHD_NO;
  }
  job_release(j);
  return send_body(c, srv, ep, status, body, "application/json");
}

static cJSON *model_object(const serve_state *srv) {
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "id", srv->cfg.model_name);
  cJSON_AddStringToObject(m, "object", "model");
  cJSON_AddNumberToObject(m, "created", (double)srv->created);
  cJSON_AddStringToObject(m, "owned_by", "xpuinfer");
  return m;
}

/* GET /v1/models (list) or /v1/models/NAME. */
static char *models_json(const serve_state *srv, int list) {
  cJSON *o = model_object(srv);
  if (list) {
    cJSON *l = cJSON_CreateObject(), *data = cJSON_AddArrayToObject(l, "data");
    cJSON_AddStringToObject(l, "object", "list");
    if (data) cJSON_AddItemToArray(data, o);
    else cJSON_Delete(o);
    o = l;
  }
  char *s = o ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  return s;
}

static int auth_ok(struct MHD_Connection *c, const serve_state *srv) {
  if (!srv->cfg.api_key) return 1;
  const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
  if (!h || strncasecmp(h, "Bearer ", 7)) return 0;
  h += 7;
  while (*h == ' ') h++;
  const char *key = srv->cfg.api_key;
  size_t hl = strlen(h), kl = strlen(key);
  unsigned char diff = hl != kl; /* compared in time independent of where they differ */
  for (size_t i = 0; i < kl; i++) diff |= (unsigned char)(key[i] ^ (i < hl ? h[i] : 0));
  return diff == 0;
}

static int route(const char *url) {
  if (!strcmp(url, "/v1/chat/completions")) return EP_CHAT;
  if (!strcmp(url, "/v1/completions")) return EP_COMPLETIONS;
  if (!strcmp(url, "/v1/models") || !strncmp(url, "/v1/models/", 11)) return EP_MODELS;
  if (!strcmp(url, "/health") || !strcmp(url, "/v1/health")) return EP_HEALTH;
  if (!strcmp(url, "/metrics")) return EP_METRICS;
  return EP_OTHER;
}

/* What can be answered before the body: 404, 405, 401, 503, 413 by Content-Length, and the GET endpoints.
 * Returns 1 when a response was queued (*res), 0 to read the body. */
static int early(struct MHD_Connection *c, serve_state *srv, conn *k, const char *url, const char *method,
                 enum MHD_Result *res) {
  const int ep = k->endpoint, post = ep == EP_CHAT || ep == EP_COMPLETIONS;
  const int is_get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
  if (ep == EP_OTHER) {
    char msg[300];
    snprintf(msg, sizeof msg, "Unknown path: %s %.200s", method, url);
    return *res = fail(c, srv, ep, 404, "invalid_request_error", "unknown_url", msg), 1;
  }
  if (post ? strcmp(method, "POST") : !is_get) {
    char msg[300];
    snprintf(msg, sizeof msg, "Method %s is not allowed on %.200s (use %s)", method, url, post ? "POST" : "GET");
    return *res = fail(c, srv, ep, 405, "invalid_request_error", "method_not_allowed", msg), 1;
  }
  if (ep != EP_HEALTH && !auth_ok(c, srv))
    return *res = fail(c, srv, ep, 401, "invalid_request_error", "invalid_api_key",
                       "Incorrect or missing API key: send the header 'Authorization: Bearer <key>'"),
           1;
  if (ep == EP_METRICS) return *res = send_body(c, srv, ep, 200, metrics_render(srv), "text/plain; version=0.0.4"), 1;
  if (!atomic_load(&srv->ready)) {
    return *res = fail(c, srv, ep, 503, "unavailable_error", "model_loading", "the model is loading"), 1;
  }
  if (atomic_load(&srv->stopping))
    return *res = fail(c, srv, ep, 503, "unavailable_error", "shutting_down", "the server is shutting down"), 1;
  if (ep == EP_HEALTH) return *res = send_body(c, srv, ep, 200, strdup("{\"status\": \"ok\"}"), "application/json"), 1;
  if (ep == EP_MODELS) {
    if (url[10] == '/' && strcmp(url + 11, srv->cfg.model_name)) {
      char msg[300];
      snprintf(msg, sizeof msg, "The model '%.200s' does not exist", url + 11);
      return *res = fail(c, srv, ep, 404, "invalid_request_error", "model_not_found", msg), 1;
    }
    return *res = send_body(c, srv, ep, 200, models_json(srv, url[10] != '/'), "application/json"), 1;
  }
  const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  if (cl && strtoull(cl, NULL, 10) > srv->cfg.max_body) {
    char msg[200];
    snprintf(msg, sizeof msg, "the request body is larger than %zu bytes (--max-body)", srv->cfg.max_body);
    return *res = fail(c, srv, ep, 413, "invalid_request_error", "request_too_large", msg), 1;
  }
  return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
  (void)version;
  serve_state *srv = cls;
  conn *k = *con_cls;
  if (!k) {
    if (!(k = calloc(1, sizeof *k))) return MHD_NO;
    *con_cls = k;
    k->endpoint = route(url);
    enum MHD_Result res;
    if (early(c, srv, k, url, method, &res)) return res;
    return MHD_YES;
  }
  if (*upload_size) {
    if (!k->too_large && k->len + *upload_size > srv->cfg.max_body) {
      k->too_large = 1; /* the rest is read and dropped; 413 at the end */
      free(k->body);
      k->body = NULL;
      k->len = k->cap = 0;
    }
    if (!k->too_large) {
      if (k->len + *upload_size + 1 > k->cap) {
        size_t cap = k->cap ? k->cap : 4096;
        while (cap < k->len + *upload_size + 1) cap *= 2;
        char *q = realloc(k->body, cap);
        if (!q) return MHD_NO;
        k->body = q;
        k->cap = cap;
      }
      memcpy(k->body + k->len, upload, *upload_size);
      k->len += *upload_size;
      k->body[k->len] = 0;
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (k->too_large) {
    char msg[200];
    snprintf(msg, sizeof msg, "the request body is larger than %zu bytes (--max-body)", srv->cfg.max_body);
    return fail(c, srv, k->endpoint, 413, "invalid_request_error", "request_too_large", msg);
  }
  return completions(c, srv, k);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)c;
  (void)toe;
  conn *k = *con_cls;
  if (k) {
    free(k->body);
    free(k);
  }
  *con_cls = NULL;
}

static void on_log(void *cls, const char *fmt, va_list ap) {
  const serve_state *srv = cls;
  if (srv->cfg.quiet) return;
  fprintf(stderr, "xpuinfer serve: http: ");
  vfprintf(stderr, fmt, ap);
}

int http_start(serve_state *srv, int *port_out) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
  struct addrinfo *ai = NULL;
  char port[16];
  snprintf(port, sizeof port, "%d", srv->cfg.port);
  int rc = getaddrinfo(srv->cfg.host, port, &hints, &ai);
  if (rc || !ai) {
    fprintf(stderr, "xpuinfer serve: --host %s: %s\n", srv->cfg.host, rc ? gai_strerror(rc) : "no address");
    return -1;
  }
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
                   MHD_USE_ERROR_LOG;
  if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
  const unsigned limit = (unsigned)(srv->cfg.parallel + srv->cfg.max_queue + 64);
  g_daemon = MHD_start_daemon(flags, (uint16_t)srv->cfg.port, NULL, NULL, on_request, srv,
                              MHD_OPTION_EXTERNAL_LOGGER, on_log, srv, /* first: the messages of the others too */
                              MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                              MHD_OPTION_CONNECTION_MEMORY_LIMIT, srv->cfg.max_header,
                              MHD_OPTION_CONNECTION_LIMIT, limit,
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
                              MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
                              MHD_OPTION_END);
  freeaddrinfo(ai);
  if (!g_daemon) {
    fprintf(stderr, "xpuinfer serve: cannot listen on %s:%d (in use, or not an address of this machine)\n",
            srv->cfg.host, srv->cfg.port);
    return -1;
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(g_daemon, MHD_DAEMON_INFO_BIND_PORT);
  *port_out = di ? di->port : srv->cfg.port;
  return 0;
}

void http_quiesce(void) {
  if (g_daemon && g_listen == MHD_INVALID_SOCKET) g_listen = MHD_quiesce_daemon(g_daemon);
}

void http_stop(void) {
  if (g_daemon) MHD_stop_daemon(g_daemon);
  g_daemon = NULL;
  if (g_listen != MHD_INVALID_SOCKET) close(g_listen);
  g_listen = MHD_INVALID_SOCKET;
}
