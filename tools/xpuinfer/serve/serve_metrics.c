/* GET /metrics: the server's counters and the engine's statistics in Prometheus' text exposition format. */
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

static void metric(cli_buf *o, const char *name, const char *type, const char *help) {
  cli_buf_printf(o, "# HELP xpuinfer_%s %s\n", name, help);
  cli_buf_printf(o, "# TYPE xpuinfer_%s %s\n", name, type);
}

/* One sample without labels: its HELP and TYPE lines, then the value (%.15g: integers up to 10^15 print exactly). */
static void sample(cli_buf *o, const char *name, const char *type, const char *help, double v) {
  metric(o, name, type, help);
  cli_buf_printf(o, "xpuinfer_%s %.15g\n", name, v);
}

char *metrics_render(serve_state *srv) {
  cli_buf o = {0};
  serve_metrics *m = &srv->metrics;
  const int ready = atomic_load(&srv->ready);
  xpi_engine_stats st = {.struct_size = sizeof st};
  const int have = ready && xpi_engine_get_stats(srv->engine, &st) == XPI_OK;
  pthread_mutex_lock(&srv->mu);
  const int in_flight = srv->n_jobs;
  pthread_mutex_unlock(&srv->mu);

  sample(&o, "ready", "gauge", "1 once the model is loaded and requests are served", ready);
  pthread_mutex_lock(&m->mu);
  metric(&o, "requests_total", "counter", "HTTP requests by endpoint and status code");
  for (int e = 0; e < EP_COUNT; e++)
    for (int s = 0; s < METRICS_STATUS_SLOTS && m->status_code[s]; s++)
      if (m->requests[e][s])
        cli_buf_printf(&o, "xpuinfer_requests_total{endpoint=\"%s\",status=\"%d\"} %llu\n", k_endpoints[e],
                       m->status_code[s], (unsigned long long)m->requests[e][s]);
  sample(&o, "client_disconnects_total", "counter", "requests cancelled because their client went away",
         (double)m->disconnects);
  sample(&o, "request_prompt_tokens_total", "counter", "prompt tokens of finished requests", (double)m->prompt_tokens);
  sample(&o, "request_completion_tokens_total", "counter", "tokens generated for finished requests",
         (double)m->completion_tokens);
  metric(&o, "time_to_first_token_seconds", "histogram", "from a request's submission to its first token");
  uint64_t cum = 0;
  for (int b = 0; b <= METRICS_TTFT_BUCKETS; b++) {
    cum += m->ttft_bucket[b];
    if (b < METRICS_TTFT_BUCKETS)
      cli_buf_printf(&o, "xpuinfer_time_to_first_token_seconds_bucket{le=\"%g\"} %llu\n", k_ttft_le[b],
                     (unsigned long long)cum);
    else cli_buf_printf(&o, "xpuinfer_time_to_first_token_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
  }
  cli_buf_printf(&o, "xpuinfer_time_to_first_token_seconds_sum %.6f\n", m->ttft_sum);
  cli_buf_printf(&o, "xpuinfer_time_to_first_token_seconds_count %llu\n", (unsigned long long)m->ttft_count);
  pthread_mutex_unlock(&m->mu);
  sample(&o, "requests_in_flight", "gauge", "requests submitted and not yet ended", in_flight);
  if (have) {
    const struct { const char *name, *type, *help; double v; } k[] = {
      {"sequences_running", "gauge", "sequences admitted by the engine (holding KV blocks)", st.running},
      {"sequences_waiting", "gauge", "sequences waiting for admission", st.waiting},
      {"kv_blocks_total", "gauge", "KV cache blocks in the pool", st.kv_blocks_total},
      {"kv_blocks_used", "gauge", "KV cache blocks held by sequences", st.kv_blocks_used},
      {"kv_blocks_cached", "gauge", "KV cache blocks kept for the prefix cache (reclaimable)", st.kv_blocks_cached},
      {"kv_block_size", "gauge", "positions per KV block", st.block_size},
      {"kv_window_blocks_total", "gauge", "blocks of the window pool of sliding-window layers (0: none)",
       st.kv_window_blocks_total},
      {"kv_window_blocks_used", "gauge", "window-pool blocks held by sequences", st.kv_window_blocks_used},
      {"kv_pool_bytes", "gauge", "bytes the KV pools take over all devices", (double)st.kv_pool_bytes},
      {"prompt_tokens_total", "counter", "prompt tokens of admitted sequences", (double)st.prompt_tokens},
      {"prompt_tokens_cached_total", "counter", "prompt tokens found in the prefix cache",
       (double)st.prompt_tokens_cached},
      {"prefix_cache_hits_total", "counter", "KV blocks found in the prefix cache", (double)st.prefix_cache_hits},
      {"completion_tokens_total", "counter", "tokens generated", (double)st.completion_tokens},
      {"prefill_tokens_total", "counter", "tokens run through the model as prefill (recomputation included)",
       (double)st.prefill_tokens},
      {"preemptions_total", "counter", "sequences preempted when the KV pool was full", (double)st.preemptions},
      {"engine_steps_total", "counter", "engine steps", (double)st.steps},
      {"readback_bytes_total", "counter", "step outputs copied from the device to the host (argmax ids, device top-k, "
       "whole logits rows)", (double)st.readback_bytes},
      {"engine_step_seconds_total", "counter", "time spent in engine steps", st.step_seconds},
      {"tokens_per_second", "gauge", "generated tokens per second of engine step time, since start",
       st.step_seconds > 0 ? (double)st.completion_tokens / st.step_seconds : 0.0},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) sample(&o, k[i].name, k[i].type, k[i].help, k[i].v);
  }
  if (o.oom) { /* cli_buf_printf: out of memory, or a line longer than it prints (none here) */
    cli_buf_free(&o);
    return NULL;
  }
  return o.p;
}
