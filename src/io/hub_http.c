/* Hub HTTP protocol over the libcurl easy interface, as huggingface_hub's file_download.py speaks it:
 * a HEAD on {endpoint}/{repo}/resolve/{revision}/{file} (redirects not followed, except relative ones)
 * gives the commit, etag and size; the GET then goes to the redirect target ("CDN") with Range resume,
 * retries with exponential backoff, and no Authorization header once the host differs from the Hub's. */
#include "io/hub.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/status.h"

static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;
static CURLcode g_curl_init_rc = CURLE_OK;
static void curl_init_once(void) { g_curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

xpi_status hub_http_init(void) {
  pthread_once(&g_curl_once, curl_init_once);
  if (g_curl_init_rc != CURLE_OK)
    return xpi_err(XPI_ERR_NETWORK, "libcurl initialisation failed: %s", curl_easy_strerror(g_curl_init_rc));
  return XPI_OK;
}

/* Response headers are parsed by hub_headers.c (pure, fuzzed by tests/fuzz/fuzz_hub.c). */
static size_t on_header(char *buf, size_t size, size_t nitems, void *user) {
  hub_headers_line(user, buf, size * nitems);
  return size * nitems;
}

/* ---- helpers */

static void sleep_ms(long ms) {
  if (ms <= 0) return;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static long backoff_ms(const hub_client *c, int attempt) {
  long d = c->retry_delay_ms;
  for (int i = 0; i < attempt && d < 8 * c->retry_delay_ms; i++) d *= 2; /* 1, 2, 4, 8, 8, ... x base */
  return d;
}

/* Same scheme, host and port: only then does the Hub's token travel with a request. */
static int same_origin(const char *a, const char *b) {
  CURLU *ua = curl_url(), *ub = curl_url();
  int same = 0;
  if (ua && ub && curl_url_set(ua, CURLUPART_URL, a, 0) == CURLUE_OK &&
      curl_url_set(ub, CURLUPART_URL, b, 0) == CURLUE_OK) {
    static const CURLUPart parts[] = {CURLUPART_SCHEME, CURLUPART_HOST, CURLUPART_PORT};
    same = 1;
    for (size_t i = 0; i < 3 && same; i++) {
      char *pa = NULL, *pb = NULL;
      unsigned fl = parts[i] == CURLUPART_PORT ? CURLU_DEFAULT_PORT : 0;
      if (curl_url_get(ua, parts[i], &pa, fl) != CURLUE_OK || curl_url_get(ub, parts[i], &pb, fl) != CURLUE_OK ||
          strcasecmp(pa, pb) != 0)
        same = 0;
      curl_free(pa);
      curl_free(pb);
    }
  }
  curl_url_cleanup(ua);
  curl_url_cleanup(ub);
  return same;
}

static struct curl_slist *base_headers(const hub_client *c, int with_auth, int *oom) {
  struct curl_slist *l = NULL, *t;
  *oom = 0;
  if (!(t = curl_slist_append(l, "Accept-Encoding: identity"))) goto fail;
  l = t;
  if (with_auth && c->token) {
    size_t n = strlen(c->token) + 32;
    char *h = malloc(n);
    if (!h) goto fail;
    snprintf(h, n, "Authorization: Bearer %s", c->token);
    t = curl_slist_append(l, h);
    free(h);
    if (!t) goto fail;
    l = t;
  }
  return l;
fail:
  curl_slist_free_all(l);
  *oom = 1;
  return NULL;
}

static void common_opts(CURL *h, const char *url, hub_headers *hdr, char *errbuf) {
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "libxpuinfer/" XPI_VERSION_STRING);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, hdr);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
  errbuf[0] = 0;
}

static const char *curl_reason(CURLcode rc, const char *errbuf) {
  return errbuf && *errbuf ? errbuf : curl_easy_strerror(rc);
}

/* Failures where nothing answered: the Hub is unreachable (the cache may stand in). */
static int is_unreachable(CURLcode rc) {
  return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY;
}

/* Failures worth another try: resets, truncated transfers, timeouts. */
static int is_transient(CURLcode rc) {
  return rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR ||
         rc == CURLE_PARTIAL_FILE || rc == CURLE_GOT_NOTHING || rc == CURLE_HTTP2 || rc == CURLE_HTTP2_STREAM ||
         rc == CURLE_SSL_CONNECT_ERROR;
}

static int is_transient_http(long code) { return code >= 500 || code == 429 || code == 408; }

/* The file part of the URL: each path segment escaped, the '/' between them kept. */
static char *file_url(const hub_client *c, const char *revision, const char *file) {
  char *rev = curl_easy_escape(NULL, revision, 0);
  size_t cap = strlen(c->endpoint) + strlen(c->repo_id) + (rev ? strlen(rev) : 0) + strlen(file) * 3 + 32;
  char *url = rev ? malloc(cap) : NULL;
  if (!url) {
    curl_free(rev);
    xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory building a URL");
    return NULL;
  }
  int n = snprintf(url, cap, "%s/%s/resolve/%s/", c->endpoint, c->repo_id, rev);
  curl_free(rev);
  size_t pos = (size_t)n;
  for (const char *p = file; *p; p++) {
    unsigned char ch = (unsigned char)*p;
    if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || strchr("-_.~/", ch))
      url[pos++] = (char)ch;
    else
      pos += (size_t)snprintf(url + pos, cap - pos, "%%%02X", ch);
  }
  url[pos] = 0;
  return url;
}

/* ---- metadata */

void hub_meta_release(hub_meta *m) {
  free(m->url);
  m->url = NULL;
}

xpi_status hub_http_head(const hub_client *c, const char *revision, const char *file, hub_meta *m) {
  memset(m, 0, sizeof *m);
  XPI_TRY(hub_http_init());
  char *url = file_url(c, revision, file);
  if (!url) return XPI_ERR_OUT_OF_MEMORY;
  CURL *h = curl_easy_init();
  hub_headers *hdr = calloc(1, sizeof *hdr);
  char errbuf[CURL_ERROR_SIZE];
  xpi_status s = XPI_OK;
  if (!h || !hdr) s = xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory starting a request");
  for (int redirects = 0; s == XPI_OK; redirects++) {
    if (redirects > 10) {
      s = xpi_err(XPI_ERR_NETWORK, "%s: too many redirects", url);
      break;
    }
    long code = 0;
    CURLcode rc = CURLE_OK;
    int oom = 0;
    struct curl_slist *hl = base_headers(c, same_origin(url, c->endpoint), &oom);
    if (oom) {
      s = xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
      break;
    }
    for (int attempt = 0;; attempt++) {
      curl_easy_reset(h);
      common_opts(h, url, hdr, errbuf);
      curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
      curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
      curl_easy_setopt(h, CURLOPT_TIMEOUT, c->etag_timeout_s);
      curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
      memset(hdr, 0, sizeof *hdr);
      rc = curl_easy_perform(h);
      code = 0;
      if (rc == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
      /* A timeout is not retried here: as huggingface_hub, fall back to the cache at once. */
      int retry = rc == CURLE_OK ? is_transient_http(code) : rc != CURLE_OPERATION_TIMEDOUT && is_transient(rc);
      if (!retry || attempt >= c->max_retries) break;
      xpi_log(2, "%s: %s; retrying", url, rc == CURLE_OK ? "server error" : curl_reason(rc, errbuf));
      sleep_ms(backoff_ms(c, attempt));
    }
    curl_slist_free_all(hl);
    if (rc != CURLE_OK) {
      m->unreachable = 1;
      s = xpi_err(XPI_ERR_NETWORK,
                  "cannot reach the Hub at %s for '%s' (%s): check the network connection and HF_ENDPOINT, or set "
                  "HF_HUB_OFFLINE=1 to use models already in the cache",
                  c->endpoint, c->repo_id, curl_reason(rc, errbuf));
      break;
    }
    if (code >= 300 && code < 400) {
      char *target = NULL;
      curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &target);
      if (!target || !hdr->location[0]) {
        s = xpi_err(XPI_ERR_NETWORK, "%s: HTTP %ld redirect without a Location", url, code);
        break;
      }
      char *next = strdup(target);
      if (!next) {
        s = xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
        break;
      }
      if (hdr->location[0] == '/') { /* relative: a renamed repo on the Hub itself; follow it */
        free(url);
        url = next;
        continue;
      }
      m->url = next; /* absolute: the file lives elsewhere (CDN); these headers describe it */
    } else if (code >= 200 && code < 300) {
      m->url = url;
      url = NULL;
    } else {
      snprintf(m->commit, sizeof m->commit, "%s", hdr->commit);
      m->unreachable = is_transient_http(code); /* a Hub outage: cached models still serve */
      s = hub_http_error(c, code, hdr, revision, file, m);
      break;
    }
    s = hub_meta_from_headers(c, file, hdr, m);
    break;
  }
  if (s != XPI_OK) {
    free(m->url);
    m->url = NULL;
  }
  free(hdr);
  free(url);
  if (h) curl_easy_cleanup(h);
  return s;
}

/* ---- download */

typedef struct get_state {
  const hub_client *c;
  CURL *h;
  const char *what;
  hub_headers *hdr;
  int fd;
  uint64_t have;      /* bytes in the file when this attempt started (after any truncation) */
  uint64_t written;   /* bytes appended by this attempt */
  uint64_t expected;
  int started;        /* first body bytes seen: response code checked */
  int to_file;        /* the body is the file (200/206), not an error page */
  int write_errno;
  int oversize, bad_range, cancelled, too_slow;
  double window_t0;   /* low-speed limit: start of the current window and the bytes received by then */
  uint64_t window_bytes;
} get_state;

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *user) {
  get_state *g = user;
  size_t len = size * nmemb;
  if (!g->started) {
    g->started = 1;
    long code = 0;
    curl_easy_getinfo(g->h, CURLINFO_RESPONSE_CODE, &code);
    if (code == 206) {
      /* The part must start where the file ends, or appending would corrupt it. */
      uint64_t a = 0;
      if (!hub_content_range_start(g->hdr, &a) || a != g->have) {
        g->bad_range = 1;
        return 0;
      }
      g->to_file = 1;
    } else if (code == 200) {
      if (g->have) { /* the server ignored Range: start over */
        if (ftruncate(g->fd, 0) != 0) {
          g->write_errno = errno;
          return 0;
        }
        g->have = 0;
      }
      g->to_file = 1;
    }
  }
  if (!g->to_file) return len; /* error page: the status code tells what happened */
  if (g->have + g->written + len > g->expected) {
    g->oversize = 1;
    return 0;
  }
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(g->fd, ptr + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      g->write_errno = w < 0 ? errno : EIO;
      return 0;
    }
    off += (size_t)w;
  }
  g->written += len;
  return len;
}

/* Also the overall low-speed limit: libcurl's own (CURLOPT_LOW_SPEED_*) is spent on the stall timeout, so a
 * server that keeps sending a few bytes a second would otherwise hold the download forever. The average over
 * each window of low_speed_time_s must reach low_speed_limit bytes/s (libcurl calls this at least once a
 * second, also while nothing arrives). */
static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
  (void)dltotal, (void)ultotal, (void)ulnow, (void)dlnow;
  get_state *g = user;
  if (g->c->progress && g->c->progress(g->what, g->have + g->written, g->expected, g->c->progress_user)) {
    g->cancelled = 1;
    return 1;
  }
  if (g->c->low_speed_limit > 0) {
    double now = xpi_now_s(), span = now - g->window_t0;
    if (span >= (double)g->c->low_speed_time_s) {
      if ((double)(g->written - g->window_bytes) < (double)g->c->low_speed_limit * span) {
        g->too_slow = 1;
        return 1;
      }
      g->window_t0 = now;
      g->window_bytes = g->written;
    }
  }
  return 0;
}

static xpi_status io_error(const char *path, int e) {
  if (e == ENOSPC || e == EDQUOT)
    return xpi_err(XPI_ERR_IO, "%s: disk full (%s): free space in the Hugging Face cache or point HF_HUB_CACHE "
                               "elsewhere; the partial download is kept and resumes next time",
                   path, strerror(e));
  return xpi_err(XPI_ERR_IO, "%s: write failed: %s", path, strerror(e));
}

xpi_status hub_http_get(const hub_client *c, const char *url, const char *part_path, uint64_t expected,
                        const char *what) {
  XPI_TRY(hub_http_init());
  int oom = 0;
  struct curl_slist *hl = base_headers(c, same_origin(url, c->endpoint), &oom);
  if (oom) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  CURL *h = curl_easy_init();
  hub_headers *hdr = calloc(1, sizeof *hdr);
  char errbuf[CURL_ERROR_SIZE], last[CURL_ERROR_SIZE + 64] = "";
  xpi_status s = XPI_OK;
  int done = 0;
  if (!h || !hdr) s = xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory starting a download");
  for (int attempt = 0; s == XPI_OK && !done; attempt++) {
    int fd = open(part_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      s = errno == ENOSPC ? io_error(part_path, errno)
                          : xpi_err(XPI_ERR_IO, "%s: cannot open for writing: %s", part_path, strerror(errno));
      break;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
      s = xpi_err(XPI_ERR_IO, "%s: cannot stat: %s", part_path, strerror(errno));
      close(fd);
      break;
    }
    uint64_t have = (uint64_t)st.st_size;
    if (have > expected) { /* not ours to resume: start over */
      if (ftruncate(fd, 0) != 0) {
        s = io_error(part_path, errno);
        close(fd);
        break;
      }
      have = 0;
    }
    if (have == expected) {
      close(fd);
      done = 1;
      break;
    }
    get_state g = {.c = c, .h = h, .what = what, .hdr = hdr, .fd = fd, .have = have, .expected = expected,
                   .window_t0 = xpi_now_s()};
    char range[48];
    snprintf(range, sizeof range, "%" PRIu64 "-", have);
    curl_easy_reset(h);
    common_opts(h, url, hdr, errbuf);
    memset(hdr, 0, sizeof *hdr);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    /* Further redirects: libcurl drops Authorization itself when the host changes (CURLOPT_UNRESTRICTED_AUTH
     * stays off). */
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, c->download_timeout_s);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &g);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &g);
    if (have) curl_easy_setopt(h, CURLOPT_RANGE, range); /* not RESUME_FROM: a 200 answer restarts instead */
    CURLcode rc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    int close_err = close(fd) != 0 ? errno : 0;
    uint64_t now = g.have + g.written;
    int retry = 0;
    if (g.cancelled) {
      s = xpi_err(XPI_ERR_CANCELLED, "download of '%s' cancelled at %" PRIu64 " of %" PRIu64 " bytes", what, now,
                  expected);
    } else if (g.too_slow) { /* a stalled attempt: retried, resuming what it got */
      snprintf(last, sizeof last, "slower than %ld bytes/s for %ld s", c->low_speed_limit, c->low_speed_time_s);
      retry = 1;
    } else if (g.write_errno || close_err) {
      s = io_error(part_path, g.write_errno ? g.write_errno : close_err);
    } else if (g.oversize) {
      unlink(part_path);
      s = xpi_err(XPI_ERR_NETWORK,
                  "download of '%s' from %s: the server sent more than the %" PRIu64 " bytes the Hub announced "
                  "(X-Linked-Size); the file was discarded",
                  what, c->repo_id, expected);
    } else if (g.bad_range) {
      if (truncate(part_path, 0) != 0) unlink(part_path);
      snprintf(last, sizeof last, "the server answered a Range request with the wrong part");
      retry = 1;
    } else if (rc == CURLE_OK && (code == 200 || code == 206)) {
      if (now == expected) {
        done = 1;
      } else {
        unlink(part_path);
        s = xpi_err(XPI_ERR_NETWORK,
                    "download of '%s' from %s ended at %" PRIu64 " bytes but the Hub announced %" PRIu64
                    " (X-Linked-Size): the file is incomplete and was discarded",
                    what, c->repo_id, now, expected);
      }
    } else if (rc == CURLE_OK && code == 416) {
      if (truncate(part_path, 0) != 0) unlink(part_path);
      snprintf(last, sizeof last, "HTTP 416 for a resumed range");
      retry = 1;
    } else if (rc == CURLE_OK && is_transient_http(code)) {
      snprintf(last, sizeof last, "HTTP %ld from the server", code);
      retry = 1;
    } else if (rc == CURLE_OK) {
      s = hub_http_error(c, code, hdr, "(resolved)", what, NULL);
    } else if (is_transient(rc) || is_unreachable(rc)) {
      snprintf(last, sizeof last, "%s", curl_reason(rc, errbuf));
      retry = 1;
    } else {
      s = xpi_err(XPI_ERR_NETWORK, "download of '%s' from %s failed: %s", what, c->repo_id, curl_reason(rc, errbuf));
    }
    if (retry) {
      if (attempt >= c->max_retries) {
        s = xpi_err(XPI_ERR_NETWORK,
                    "download of '%s' from %s failed after %d attempts (%s) at %" PRIu64 " of %" PRIu64
                    " bytes; run again to resume",
                    what, c->repo_id, attempt + 1, last, now, expected);
      } else {
        xpi_log(2, "download of '%s': %s; retrying", what, last);
        sleep_ms(backoff_ms(c, attempt));
      }
    }
  }
  if (s == XPI_OK && c->progress && c->progress(what, expected, expected, c->progress_user))
    s = xpi_err(XPI_ERR_CANCELLED, "download of '%s' cancelled", what);
  free(hdr);
  if (h) curl_easy_cleanup(h);
  curl_slist_free_all(hl);
  return s;
}
