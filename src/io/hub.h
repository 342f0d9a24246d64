/* Hugging Face Hub client internals: the cache layout (hf_cache.c), the HTTP protocol (hub_http.c) and the
 * model file resolution (hub.c). Semantics follow huggingface_hub's file_download.py so that a cache written
 * by Python is read here and vice versa. */
#ifndef XPI_IO_HUB_H
#define XPI_IO_HUB_H

#include <stddef.h>
#include <stdint.h>

#include "xpuinfer.h"

/* ---- cache layout (hf_cache.c): <cache>/models--org--name/{blobs,snapshots,refs,.no_exist}, <cache>/.locks/... */

/* malloc'd cache root: HF_HUB_CACHE, else $HF_HOME/hub, HF_HOME defaulting to $XDG_CACHE_HOME/huggingface
 * or ~/.cache/huggingface. NULL with the error set when no home directory is known. */
char *hf_cache_root(void);
/* malloc'd $HF_HOME (same defaults), for the token file. */
char *hf_home(void);
/* 1 when s is a 40-hex commit hash. */
int hf_is_commit_hash(const char *s);
/* 1 when s is safe as one relative path inside the cache: not empty, no leading '/', no "." or ".." part,
 * no empty part, no backslash or control characters. */
int hf_is_safe_relpath(const char *s);
/* mkdir -p of the directory part of path (or of path itself when whole_path). */
xpi_status hf_mkdirs(const char *path, int whole_path);
/* Reads refs/<revision> into commit (cap bytes). XPI_ERR_NOT_FOUND without a message when absent. */
xpi_status hf_read_ref(const char *repo_dir, const char *revision, char *commit, size_t cap);
/* Writes refs/<revision> atomically (temporary file + rename) when its content differs. */
xpi_status hf_write_ref(const char *repo_dir, const char *revision, const char *commit);
/* malloc'd "<repo_dir>/snapshots/<commit>[/<file>]" (file may be NULL). */
char *hf_snapshot_path(const char *repo_dir, const char *commit, const char *file);
/* Points snapshots/<commit>/<file> at ../../blobs/<etag> (relative symlink, replaced atomically). */
xpi_status hf_link_snapshot(const char *repo_dir, const char *commit, const char *file, const char *etag);
/* .no_exist/<commit>/<file>: marks (creates an empty file) / tests an optional file the Hub does not have. */
xpi_status hf_mark_no_exist(const char *repo_dir, const char *commit, const char *file);
int hf_no_exist(const char *repo_dir, const char *commit, const char *file);
/* Exclusive lock shared with huggingface_hub (flock on <cache>/.locks/<repo folder>/<etag>.lock): blocks
 * until held. *fd_out is closed by hf_unlock. */
xpi_status hf_lock_blob(const char *cache_root, const char *repo_folder, const char *etag, int *fd_out);
void hf_unlock(int fd);
/* 1 when path names an existing regular file (following symlinks). */
int hf_is_file(const char *path);

/* ---- HTTP (libcurl; hub_http.c) */

typedef struct hub_client {
  const char *endpoint;      /* e.g. "https://huggingface.co", no trailing '/' */
  const char *token;         /* NULL when anonymous */
  const char *repo_id;       /* "org/name" */
  long etag_timeout_s;       /* metadata request timeout (HF_HUB_ETAG_TIMEOUT, default 10) */
  long download_timeout_s;   /* a transfer below 1 byte/s for this long is a timeout (HF_HUB_DOWNLOAD_TIMEOUT) */
  long low_speed_limit;      /* bytes/s; an attempt averaging less over low_speed_time_s counts as stalled and is
                                retried/resumed (XPI_HUB_LOW_SPEED_LIMIT, default 1024; 0 turns it off) */
  long low_speed_time_s;     /* XPI_HUB_LOW_SPEED_TIME, default 30 */
  int max_retries;           /* transient failures retried this many times (XPI_HUB_MAX_RETRIES, default 5) */
  long retry_delay_ms;       /* first backoff delay, doubled each retry (XPI_HUB_RETRY_DELAY_MS, default 1000) */
  xpi_progress_fn progress;
  void *progress_user;
} hub_client;

/* What the metadata request learned about one file. */
typedef struct hub_meta {
  char commit[128];   /* X-Repo-Commit ("" when the server sent none) */
  char etag[160];     /* X-Linked-Etag else ETag, quotes and W/ removed */
  uint64_t size;      /* X-Linked-Size else Content-Length */
  char *url;          /* malloc'd URL to GET: the redirect target when the Hub redirected, else the file URL */
  int entry_missing;  /* the failure was a 404 for this file (EntryNotFound), not for the repo or revision */
  int unreachable;    /* the failure was at the network level (no HTTP answer): the cache may stand in */
} hub_meta;

/* ---- what the answers say (hub_headers.c: pure functions over untrusted text) */

/* The headers of interest of the last response (reset at each status line, so redirects do not mix in). */
typedef struct hub_headers {
  char commit[128], linked_etag[160], etag[160], error_code[64], error_message[256], content_range[96];
  char location[2048];
  int has_linked_size, has_content_length;
  uint64_t linked_size, content_length;
} hub_headers;
/* One header line as libcurl gives it (status line, "Name: value\r\n"); values too long are cut. */
void hub_headers_line(hub_headers *h, const char *line, size_t len);
/* The first byte of a "Content-Range: bytes A-B/N" answer; 0 when absent or malformed. */
int hub_content_range_start(const hub_headers *h, uint64_t *start);
/* commit, etag and size of a file from a metadata answer, checked (a commit hash, an etag usable as a file
 * name, a size); m->url is left alone. */
xpi_status hub_meta_from_headers(const hub_client *c, const char *file, const hub_headers *h, hub_meta *m);
/* An HTTP error answer turned into an error a person can act on (X-Error-Code as the Hub sends it); sets
 * m->entry_missing for a missing file when m is given. */
xpi_status hub_http_error(const hub_client *c, long code, const hub_headers *h, const char *revision,
                          const char *file, hub_meta *m);

/* ---- model.safetensors.index.json (hub.c): its unique shard names, each a safe relative path. */
xpi_status hub_index_shards(const char *index_path, char ***names_out, size_t *n_out);
void hub_free_names(char **names, size_t n);

/* Process-wide libcurl initialisation (once, thread-safe). */
xpi_status hub_http_init(void);
/* Metadata of {endpoint}/{repo}/resolve/{revision}/{file} by HEAD, following relative redirects only. */
xpi_status hub_http_head(const hub_client *c, const char *revision, const char *file, hub_meta *m);
void hub_meta_release(hub_meta *m);
/* Downloads url into part_path (appending: an existing partial file is resumed with Range) until it holds
 * exactly expected bytes. Retries transient failures with exponential backoff. The Authorization header is
 * sent only while the host is the endpoint's. what names the file in messages and progress. */
xpi_status hub_http_get(const hub_client *c, const char *url, const char *part_path, uint64_t expected,
                        const char *what);
/* Lowercase hex SHA-256 of a file (OpenSSL libcrypto; hub_sha256.c). */
xpi_status hub_sha256_file(const char *path, char hex[65]);

#endif
