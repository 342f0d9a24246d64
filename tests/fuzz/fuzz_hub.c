/* What the Hub client reads from the network and the cache, on arbitrary bytes: response header lines (the
 * input, line by line) turned into file metadata and errors (hub_headers.c), a refs/<revision> file
 * (hf_read_ref), and the path and commit checks applied to names from the server. Properties: no crash, leak
 * or undefined behaviour; accepted metadata has a 40-hex commit, an etag usable as one file name in the cache
 * and the size the headers gave; an accepted ref is a commit hash; a "safe" relative path cannot leave the
 * cache folder. */
#include "fuzz_common.h"
#include "io/hub.h"

static void check_headers(const uint8_t *data, size_t size) {
  hub_headers h;
  memset(&h, 0, sizeof h);
  while (size) { /* libcurl hands over one line at a time, "\r\n" included */
    const uint8_t *nl = memchr(data, '\n', size);
    size_t len = nl ? (size_t)(nl - data) + 1 : size;
    hub_headers_line(&h, (const char *)data, len);
    data += len, size -= len;
  }
  hub_client c = {.endpoint = "https://huggingface.co", .repo_id = "org/name", .token = NULL};
  hub_meta m;
  memset(&m, 0, sizeof m);
  if (hub_meta_from_headers(&c, "model.safetensors", &h, &m) == XPI_OK) {
    FUZZ_ASSERT(hf_is_commit_hash(m.commit), "commit '%s'", m.commit);
    FUZZ_ASSERT(m.etag[0] && !strchr(m.etag, '/') && strcmp(m.etag, ".") && strcmp(m.etag, ".."), "etag '%s'", m.etag);
    FUZZ_ASSERT(m.size == (h.has_linked_size ? h.linked_size : h.content_length), "size");
  }
  uint64_t start;
  if (hub_content_range_start(&h, &start)) FUZZ_ASSERT(!strncmp(h.content_range, "bytes ", 6), "content range");
  static const long codes[] = {301, 401, 403, 404, 416, 429, 500, 503};
  for (size_t i = 0; i < sizeof codes / sizeof *codes; i++) {
    c.token = i % 2 ? "hf_token" : NULL;
    xpi_status s = hub_http_error(&c, codes[i], &h, "main", "config.json", &m);
    FUZZ_ASSERT(s != XPI_OK && xpi_last_error()[0], "HTTP %ld: %s without a message", codes[i], xpi_status_name(s));
  }
}

static void check_ref(const uint8_t *data, size_t size) {
  static int init;
  if (!init) {
    char path[512];
    snprintf(path, sizeof path, "%s/repo/refs", fuzz_dir());
    FUZZ_ASSERT(hf_mkdirs(path, 1) == XPI_OK, "mkdir %s", path);
    init = 1;
  }
  fuzz_file("repo/refs", "main", data, size);
  char repo[512], commit[128];
  snprintf(repo, sizeof repo, "%s/repo", fuzz_dir());
  if (hf_read_ref(repo, "main", commit, sizeof commit) == XPI_OK)
    FUZZ_ASSERT(hf_is_commit_hash(commit), "ref '%s' accepted", commit);
  hf_read_ref(repo, "main", commit, 8); /* a buffer shorter than a hash */
}

static void check_names(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  memcpy(s, data, size);
  s[size] = 0;
  if (hf_is_safe_relpath(s)) {
    FUZZ_ASSERT(s[0] != '/' && !strstr(s, "//") && strcmp(s, "..") && strncmp(s, "../", 3) && !strstr(s, "/../") &&
                    (strlen(s) < 3 || strcmp(s + strlen(s) - 3, "/..")) && !strchr(s, '\\'),
                "'%s' passed as a safe relative path", s);
  }
  if (hf_is_commit_hash(s)) FUZZ_ASSERT(strlen(s) == 40 && strspn(s, "0123456789abcdef") == 40, "'%s' as a commit", s);
  free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_headers(data, size);
  check_ref(data, size);
  check_names(data, size);
  return 0;
}
