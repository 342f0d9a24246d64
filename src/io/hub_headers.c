/* What the Hub's HTTP answers say, as huggingface_hub reads them: the response headers of interest, the file
 * metadata they give (commit, etag, size) and the errors they mean. Pure functions over untrusted text (no
 * network), so tests/fuzz/fuzz_hub.c exercises them directly; hub_http.c feeds them from libcurl. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/status.h"
#include "io/hub.h"

static void copy_value(char *dst, size_t cap, const char *v, size_t n) {
  if (n >= cap) n = cap - 1;
  memcpy(dst, v, n);
  dst[n] = 0;
}

static int parse_u64(const char *s, size_t n, uint64_t *out) {
  if (!n || n > 20) return 0;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return 0;
    if (v > (UINT64_MAX - 9) / 10) return 0;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  *out = v;
  return 1;
}

void hub_headers_line(hub_headers *h, const char *buf, size_t len) {
  if (len >= 5 && !strncmp(buf, "HTTP/", 5)) { /* a new response (after a redirect): forget the previous one */
    memset(h, 0, sizeof *h);
    return;
  }
  const char *colon = memchr(buf, ':', len);
  if (!colon) return;
  size_t klen = (size_t)(colon - buf);
  const char *v = colon + 1, *end = buf + len;
  while (v < end && (*v == ' ' || *v == '\t')) v++;
  while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t')) end--;
  size_t vlen = (size_t)(end - v);
#define KEY(name) (klen == sizeof(name) - 1 && !strncasecmp(buf, name, klen))
  if (KEY("X-Repo-Commit")) copy_value(h->commit, sizeof h->commit, v, vlen);
  else if (KEY("X-Linked-Etag")) copy_value(h->linked_etag, sizeof h->linked_etag, v, vlen);
  else if (KEY("ETag")) copy_value(h->etag, sizeof h->etag, v, vlen);
  else if (KEY("X-Error-Code")) copy_value(h->error_code, sizeof h->error_code, v, vlen);
  else if (KEY("X-Error-Message")) copy_value(h->error_message, sizeof h->error_message, v, vlen);
  else if (KEY("Content-Range")) copy_value(h->content_range, sizeof h->content_range, v, vlen);
  else if (KEY("Location")) copy_value(h->location, sizeof h->location, v, vlen);
  else if (KEY("X-Linked-Size")) h->has_linked_size = parse_u64(v, vlen, &h->linked_size);
  else if (KEY("Content-Length")) h->has_content_length = parse_u64(v, vlen, &h->content_length);
#undef KEY
}

int hub_content_range_start(const hub_headers *h, uint64_t *start) {
  const char *p = h->content_range;
  if (strncmp(p, "bytes ", 6)) return 0;
  p += 6;
  size_t n = strspn(p, "0123456789");
  return p[n] == '-' && parse_u64(p, n, start);
}

xpi_status hub_http_error(const hub_client *c, long code, const hub_headers *h, const char *revision,
                          const char *file, hub_meta *m) {
  char extra[300] = "";
  if (h->error_message[0]) snprintf(extra, sizeof extra, " (server: %s)", h->error_message);
  const char *ec = h->error_code;
  if (!strcmp(ec, "RepoNotFound"))
    return xpi_err(XPI_ERR_NOT_FOUND,
                   "repository '%s' not found on %s (HTTP %ld)%s; check the name, or if it is private or gated "
                   "set HF_TOKEN to a token with access",
                   c->repo_id, c->endpoint, code, extra);
  if (!strcmp(ec, "RevisionNotFound"))
    return xpi_err(XPI_ERR_NOT_FOUND, "revision '%s' not found in repository '%s' (HTTP %ld)%s", revision,
                   c->repo_id, code, extra);
  if (!strcmp(ec, "EntryNotFound") || (code == 404 && !ec[0])) {
    if (m) m->entry_missing = 1;
    return xpi_err(XPI_ERR_NOT_FOUND, "file '%s' not found in repository '%s' at revision '%s' (HTTP %ld)%s", file,
                   c->repo_id, revision, code, extra);
  }
  if (!strcmp(ec, "GatedRepo") || code == 401 || code == 403)
    return xpi_err(XPI_ERR_AUTH,
                   "access to '%s' denied (HTTP %ld)%s: the repository is gated or private; %s", c->repo_id, code,
                   extra,
                   c->token ? "the token in HF_TOKEN (or $HF_HOME/token) has no access: accept the model's terms on "
                              "the Hub or use another token"
                            : "accept its terms on the Hub and set HF_TOKEN (or write $HF_HOME/token) to an access "
                              "token");
  return xpi_err(XPI_ERR_NETWORK, "'%s' of '%s': HTTP %ld from the server%s", file, c->repo_id, code, extra);
}

static void strip_etag(const char *in, char *out, size_t cap) {
  if (!strncmp(in, "W/", 2)) in += 2; /* weak etag marker */
  size_t n = strlen(in);
  while (n && *in == '"') in++, n--;
  while (n && in[n - 1] == '"') n--;
  copy_value(out, cap, in, n);
}

/* The etag names a file in the cache (blobs/<etag>): plain characters only, not "." or "..". */
static int etag_is_safe(const char *e) {
  if (!*e || *e == '.') return 0;
  for (; *e; e++)
    if (!((*e >= '0' && *e <= '9') || (*e >= 'a' && *e <= 'z') || (*e >= 'A' && *e <= 'Z') || *e == '-' ||
          *e == '_' || *e == '.'))
      return 0;
  return 1;
}

xpi_status hub_meta_from_headers(const hub_client *c, const char *file, const hub_headers *h, hub_meta *m) {
  /* huggingface_hub's metadata rules: commit from X-Repo-Commit, etag from X-Linked-Etag else ETag,
   * size from X-Linked-Size else Content-Length. */
  snprintf(m->commit, sizeof m->commit, "%s", h->commit);
  strip_etag(h->linked_etag[0] ? h->linked_etag : h->etag, m->etag, sizeof m->etag);
  int has_size = h->has_linked_size || h->has_content_length;
  m->size = h->has_linked_size ? h->linked_size : h->content_length;
  if (!m->commit[0])
    return xpi_err(XPI_ERR_FORMAT,
                   "%s/%s: the server sent no X-Repo-Commit header: is HF_ENDPOINT (%s) a Hugging Face Hub?",
                   c->repo_id, file, c->endpoint);
  if (!hf_is_commit_hash(m->commit))
    return xpi_err(XPI_ERR_FORMAT, "%s/%s: X-Repo-Commit '%s' is not a 40-hex commit hash", c->repo_id, file,
                   m->commit);
  if (!m->etag[0] || !etag_is_safe(m->etag))
    return xpi_err(XPI_ERR_FORMAT, "%s/%s: the server sent %s ETag; cannot name the cached file", c->repo_id, file,
                   m->etag[0] ? "an unusable" : "no");
  if (!has_size)
    return xpi_err(XPI_ERR_FORMAT, "%s/%s: the server sent neither X-Linked-Size nor Content-Length", c->repo_id,
                   file);
  return XPI_OK;
}
