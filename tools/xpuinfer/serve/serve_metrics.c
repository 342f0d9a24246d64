/* GET /metrics: the server's counters and the engine's statistics in Prometheus' text exposition format. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

static const char *const k_endpoints[EP_COUNT] = {"/v1/chat/completions", "/v1/completions", "/v1/models",
                                                  "/health", "/metrics", "other"};
/* time to first token buckets, seconds */
static const double k_ttft_le[METRICS_TTFT_BUCKETS] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};

void metrics_init(serve_metrics *m) {
  memset(m, 0, sizeof *m);
  pthread_mutex_init(&m->mu, NULL);
}

void metrics_free(serve_metrics *m) { pthread_mutex_destroy(&m->mu); }

void metrics_request(serve_metrics *m, int endpoint, int status) {
  if (endpoint < 0 || endpoint >= EP_COUNT) endpoint = EP_OTHER;
  pthread_mutex_lock(&m->mu);
  int slot = 0;
  while (slot < METRICS_STATUS_SLOTS && m->status_code[slot] && m->status_code[slot] != status) slot++;
  if (slot == METRICS_STATUS_SLOTS) slot = METRICS_STATUS_SLOTS - 1; /* more distinct codes than slots: lumped */
  if (!m->status_code[slot]) m->status_code[slot] = status;
  m->requests[endpoint][slot]++;
  pthread_mutex_unlock(&m->mu);
}

void metrics_ttft(serve_metrics *m, double s) {
  pthread_mutex_lock(&m->mu);
  int b = 0;
  while (b < METRICS_TTFT_BUCKETS && s > k_ttft_le[b]) b++;
  m->ttft_bucket[b]++;
  m->ttft_sum += s;
  m->ttft_count++;
  pthread_mutex_unlock(&m->mu);
}

void metrics_finished(serve_metrics *m, int64_t prompt, int64_t completion) {
  pthread_mutex_lock(&m->mu);
  m->prompt_tokens += (uint64_t)prompt;
  m->completion_tokens += (uint64_t)completion;
  pthread_mutex_unlock(&m->mu);
}

void metrics_disconnect(serve_metrics *m) {
  pthread_mutex_lock(&m->mu);
  m->disconnects++;
  pthread_mutex_unlock(&m->mu);
}

typedef struct out { char *p; size_t len, cap; int oom; } out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out *o, const char *fmt, ...) {
  if (o->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->p ? o->p + o->len : NULL, o->p ? o->cap - o->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
      o->oom = 1;
      return;
    }
    if (o->p && o->len + (size_t)n < o->cap) {
      o->len += (size_t)n;
      return;
    }
    size_t c = o->cap ? o->cap * 2 : 4096;
    while (c < o->len + (size_t)n + 1) c *= 2;
    char *q = realloc(o->p, c);
    if (!q) {
      o->oom = 1;
      return;
    }
    o->p = q;
    o->cap = c;
  }
}

static void metric(out *o, const char *name, const char *type, const char *help) {
  put(o, "# HELP xpuinfer_%s %s\n# TYPE xpuinfer_%s %s\n", name, help, name, type);
}

char *metrics_render(serve_state *srv) {
  out o = {0};
  serve_metrics *m = &srv->metrics;
  const int ready = atomic_load(&srv->ready);
  xpi_engine_stats st = {.struct_size = sizeof st};
  const int have = ready && xpi_engine_get_stats(srv->engine, &st) == XPI_OK;
  pthread_mutex_lock(&srv->mu);
  const int in_flight = srv->n_jobs;
  pthread_mutex_unlock(&srv->mu);

  metric(&o, "ready", "gauge", "1 once the model is loaded and requests are served");
  put(&o, "xpuinfer_ready %d\n", ready);
  pthread_mutex_lock(&m->mu);
  metric(&o, "requests_total", "counter", "HTTP requests by endpoint and status code");
  for (int e = 0; e < EP_COUNT; e++)
    for (int s = 0; s < METRICS_STATUS_SLOTS && m->status_code[s]; s++)
      if (m->requests[e][s])
        put(&o, "xpuinfer_requests_total{endpoint=\"%s\",status=\"%d\"} %llu\n", k_endpoints[e], m->status_code[s],
            (unsigned long long)m->requests[e][s]);
  metric(&o, "client_disconnects_total", "counter", "requests cancelled because their client went away");
  put(&o, "xpuinfer_client_disconnects_total %llu\n", (unsigned long long)m->disconnects);
  metric(&o, "request_prompt_tokens_total", "counter", "prompt tokens of finished requests");
  put(&o, "xpuinfer_request_prompt_tokens_total %llu\n", (unsigned long long)m->prompt_tokens);
  metric(&o, "request_completion_tokens_total", "counter", "tokens generated for finished requests");
  put(&o, "xpuinfer_request_completion_tokens_total %llu\n", (unsigned long long)m->completion_tokens);
  metric(&o, "time_to_first_token_seconds", "histogram", "from a request's submission to its first token");
  uint64_t cum = 0;
  for (int b = 0; b <= METRICS_TTFT_BUCKETS; b++) {
    cum += m->ttft_bucket[b];
    if (b < METRICS_TTFT_BUCKETS)
      put(&o, "xpuinfer_time_to_first_token_seconds_bucket{le=\"%g\"} %llu\n", k_ttft_le[b], (unsigned long long)cum);
    else put(&o, "xpuinfer_time_to_first_token_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
  }
  put(&o, "xpuinfer_time_to_first_token_seconds_sum %.6f\n", m->ttft_sum);
  put(&o, "xpuinfer_time_to_first_token_seconds_count %llu\n", (unsigned long long)m->ttft_count);
  pthread_mutex_unlock(&m->mu);
  metric(&o, "requests_in_flight", "gauge", "requests submitted and not yet ended");
  put(&o, "xpuinfer_requests_in_flight %d\n", in_flight);
  if (have) {
    metric(&o, "sequences_running", "gauge", "sequences admitted by the engine (holding KV blocks)");
    put(&o, "xpuinfer_sequences_running %d\n", st.running);
    metric(&o, "sequences_waiting", "gauge", "sequences waiting for admission");
    put(&o, "xpuinfer_sequences_waiting %d\n", st.waiting);
    metric(&o, "kv_blocks_total", "gauge", "KV cache blocks in the pool");
    put(&o, "xpuinfer_kv_blocks_total %d\n", st.kv_blocks_total);
    metric(&o, "kv_blocks_used", "gauge", "KV cache blocks held by sequences");
    put(&o, "xpuinfer_kv_blocks_used %d\n", st.kv_blocks_used);
    metric(&o, "kv_blocks_cached", "gauge", "KV cache blocks kept for the prefix cache (reclaimable)");
    put(&o, "xpuinfer_kv_blocks_cached %d\n", st.kv_blocks_cached);
    metric(&o, "kv_block_size", "gauge", "positions per KV block");
    put(&o, "xpuinfer_kv_block_size %d\n", st.block_size);
    metric(&o, "prompt_tokens_total", "counter", "prompt tokens of admitted sequences");
    put(&o, "xpuinfer_prompt_tokens_total %llu\n", (unsigned long long)st.prompt_tokens);
    metric(&o, "prompt_tokens_cached_total", "counter", "prompt tokens found in the prefix cache");
    put(&o, "xpuinfer_prompt_tokens_cached_total %llu\n", (unsigned long long)st.prompt_tokens_cached);
    metric(&o, "prefix_cache_hits_total", "counter", "KV blocks found in the prefix cache");
    put(&o, "xpuinfer_prefix_cache_hits_total %llu\n", (unsigned long long)st.prefix_cache_hits);
    metric(&o, "completion_tokens_total", "counter", "tokens generated");
    put(&o, "xpuinfer_completion_tokens_total %llu\n", (unsigned long long)st.completion_tokens);
    metric(&o, "prefill_tokens_total", "counter", "tokens run through the model as prefill (recomputation included)");
    put(&o, "xpuinfer_prefill_tokens_total %llu\n", (unsigned long long)st.prefill_tokens);
    metric(&o, "preemptions_total", "counter", "sequences preempted when the KV pool was full");
    put(&o, "xpuinfer_preemptions_total %llu\n", (unsigned long long)st.preemptions);
    metric(&o, "engine_steps_total", "counter", "engine steps");
    put(&o, "xpuinfer_engine_steps_total %llu\n", (unsigned long long)st.steps);
    metric(&o, "engine_step_seconds_total", "counter", "time spent in engine steps");
    put(&o, "xpuinfer_engine_step_seconds_total %.6f\n", st.step_seconds);
    metric(&o, "tokens_per_second", "gauge", "generated tokens per second of engine step time, since start");
    put(&o, "xpuinfer_tokens_per_second %.3f\n", st.step_seconds > 0 ? (double)st.completion_tokens / st.step_seconds : 0.0);
  }
  if (o.oom) {
    free(o.p);
    return NULL;
  }
  return o.p;
}
