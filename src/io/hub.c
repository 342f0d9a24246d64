/* xpi_hub_download: a model argument that is a folder is used as is; "org/name[@revision]" is resolved to a
 * snapshot folder of the Hugging Face cache, downloading what a causal LM needs (config, tokenizer, weights
 * with every shard) the way huggingface_hub's hf_hub_download does, or reading only the cache when offline. */
#include "io/hub.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/status.h"

void xpi_download_options_default(xpi_download_options *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
}

/* Everything one resolution needs; released by job_free. */
typedef struct hub_job {
  hub_client c;
  char *endpoint, *token, *cache_root, *repo_folder, *repo_dir;
  char repo_id[128], revision[256];
} hub_job;

static void job_free(hub_job *j) {
  free(j->endpoint);
  free(j->token);
  free(j->cache_root);
  free(j->repo_folder);
  free(j->repo_dir);
}

/* huggingface_hub's truthy environment values. */
static int env_true(const char *name) {
  const char *v = getenv(name);
  return v && (!strcasecmp(v, "1") || !strcasecmp(v, "ON") || !strcasecmp(v, "YES") || !strcasecmp(v, "TRUE"));
}

static long env_long(const char *name, long def, long min, long max) {
  const char *v = getenv(name);
  if (!v || !*v) return def;
  char *end;
  double d = strtod(v, &end);
  if (*end || !isfinite(d)) {
    xpi_log(2, "%s='%s' is not a number; using %ld", name, v, def);
    return def;
  }
  d = ceil(d);
  long r = d < (double)min ? min : d > (double)max ? max : (long)d;
  if ((double)r != d) xpi_log(2, "%s=%s is outside [%ld, %ld]; using %ld", name, v, min, max, r);
  return r;
}

/* Repo ids as huggingface_hub's validate_repo_id accepts them: "name" or "org/name", letters, digits, '-',
 * '_', '.', no "--" or "..", not starting or ending with '-' or '.', at most 96 characters. */
static int valid_repo_id(const char *s) {
  size_t n = strlen(s), slashes = 0;
  if (!n || n > 96) return 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (ch == '/') {
      if (++slashes > 1 || i == 0 || i == n - 1) return 0;
      continue;
    }
    if (!(isalnum((unsigned char)ch) || ch == '-' || ch == '_' || ch == '.')) return 0;
  }
  if (strstr(s, "--") || strstr(s, "..")) return 0;
  for (const char *p = s; p; p = strchr(p, '/') ? strchr(p, '/') + 1 : NULL) {
    if (*p == '-' || *p == '.') return 0;
    const char *e = strchr(p, '/');
    char last = e ? e[-1] : s[n - 1];
    if (last == '-' || last == '.') return 0;
  }
  return 1;
}

static char *read_token(void) {
  const char *t = getenv("HF_TOKEN");
  char *buf = NULL;
  if (t && *t) {
    buf = strdup(t);
  } else {
    const char *tp = getenv("HF_TOKEN_PATH");
    char *path = NULL;
    if (tp && *tp) {
      path = strdup(tp);
    } else {
      char *home = hf_home();
      if (home) path = xpi_path_join(home, "token");
      free(home);
    }
    size_t len = 0;
    if (path && xpi_file_exists(path) && xpi_read_file(path, 4096, &buf, &len) != XPI_OK) buf = NULL;
    free(path);
  }
  if (!buf) return NULL;
  char *p = buf;
  while (isspace((unsigned char)*p)) p++;
  size_t n = strlen(p);
  while (n && isspace((unsigned char)p[n - 1])) n--;
  memmove(buf, p, n);
  buf[n] = 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)buf[i] < 0x20) buf[i] = 0; /* never let a token inject header lines */
  if (!buf[0]) {
    free(buf);
    return NULL;
  }
  return buf;
}

static xpi_status job_init(hub_job *j, const char *arg, const xpi_download_options *o) {
  memset(j, 0, sizeof *j);
  const char *at = strchr(arg, '@');
  size_t idlen = at ? (size_t)(at - arg) : strlen(arg);
  if (idlen >= sizeof j->repo_id) idlen = sizeof j->repo_id - 1;
  memcpy(j->repo_id, arg, idlen);
  j->repo_id[idlen] = 0;
  const char *rev = o->revision && *o->revision ? o->revision : at ? at + 1 : "main";
  if (!valid_repo_id(j->repo_id)) {
    if (arg[0] == '/' || arg[0] == '.' || arg[0] == '~' || strchr(arg, '/') != strrchr(arg, '/'))
      return xpi_err(XPI_ERR_NOT_FOUND, "%s: no such folder", arg);
    return xpi_err(XPI_ERR_INVALID_ARGUMENT,
                   "'%s' is neither an existing folder nor a Hugging Face repo id like 'org/name' or 'org/name@revision'",
                   arg);
  }
  if (strlen(rev) >= sizeof j->revision || !hf_is_safe_relpath(rev))
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "revision '%s' of '%s' is not a valid branch, tag or commit", rev,
                   j->repo_id);
  snprintf(j->revision, sizeof j->revision, "%s", rev);

  const char *ep = getenv("HF_ENDPOINT");
  j->endpoint = strdup(ep && *ep ? ep : "https://huggingface.co");
  j->cache_root = hf_cache_root();
  if (!j->endpoint) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  if (!j->cache_root) return XPI_ERR_INVALID_ARGUMENT; /* message set by hf_cache_root */
  size_t el = strlen(j->endpoint);
  while (el > 1 && j->endpoint[el - 1] == '/') j->endpoint[--el] = 0;
  /* models--org--name: the folder name huggingface_hub derives from the repo id */
  size_t fl = strlen("models--") + 2 * idlen + 1;
  j->repo_folder = malloc(fl);
  if (!j->repo_folder) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  char *w = j->repo_folder + snprintf(j->repo_folder, fl, "models--");
  for (const char *p = j->repo_id; *p; p++) {
    if (*p == '/') {
      *w++ = '-';
      *w++ = '-';
    } else {
      *w++ = *p;
    }
  }
  *w = 0;
  j->repo_dir = xpi_path_join(j->cache_root, j->repo_folder);
  if (!j->repo_dir) return XPI_ERR_OUT_OF_MEMORY;
  j->token = read_token();

  j->c.endpoint = j->endpoint;
  j->c.token = j->token;
  j->c.repo_id = j->repo_id;
  j->c.etag_timeout_s = env_long("HF_HUB_ETAG_TIMEOUT", 10, 1, 3600);
  j->c.download_timeout_s = env_long("HF_HUB_DOWNLOAD_TIMEOUT", 10, 1, 3600);
  j->c.low_speed_limit = env_long("XPI_HUB_LOW_SPEED_LIMIT", 1024, 0, 1L << 30);
  j->c.low_speed_time_s = env_long("XPI_HUB_LOW_SPEED_TIME", 30, 1, 3600);
  j->c.max_retries = (int)env_long("XPI_HUB_MAX_RETRIES", 5, 0, 100);
  j->c.retry_delay_ms = env_long("XPI_HUB_RETRY_DELAY_MS", 1000, 0, 600000);
  j->c.progress = o->progress;
  j->c.progress_user = o->progress_user;
  return XPI_OK;
}

/* ---- files of a model */

/* Unique shard names of model.safetensors.index.json, validated as paths inside the snapshot. */
xpi_status hub_index_shards(const char *index_path, char ***names_out, size_t *n_out) {
  *names_out = NULL;
  *n_out = 0;
  cJSON *root = NULL;
  XPI_TRY(xpi_json_load_file(index_path, (size_t)64 << 20, &root));
  const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
  xpi_status s = XPI_OK;
  char **names = NULL;
  size_t n = 0;
  if (!cJSON_IsObject(map)) s = xpi_err(XPI_ERR_FORMAT, "%s: no \"weight_map\" object", index_path);
  const cJSON *it;
  cJSON_ArrayForEach(it, map) {
    if (s != XPI_OK) break;
    if (!cJSON_IsString(it) || !hf_is_safe_relpath(it->valuestring)) {
      s = xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s' names shard %s%s%s, which is not a relative path inside the repo",
                  index_path, it->string ? it->string : "?", cJSON_IsString(it) ? "'" : "",
                  cJSON_IsString(it) ? it->valuestring : "(not a string)", cJSON_IsString(it) ? "'" : "");
      break;
    }
    int seen = 0;
    for (size_t i = 0; i < n && !seen; i++) seen = !strcmp(names[i], it->valuestring);
    if (seen) continue;
    char **grown = realloc(names, (n + 1) * sizeof *names);
    char *copy = strdup(it->valuestring);
    if (!grown || !copy) {
      free(copy);
      if (grown) names = grown;
      s = xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory reading %s", index_path);
      break;
    }
    names = grown;
    names[n++] = copy;
  }
  if (s == XPI_OK && n == 0) s = xpi_err(XPI_ERR_FORMAT, "%s: \"weight_map\" names no shard", index_path);
  cJSON_Delete(root);
  if (s != XPI_OK) {
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return s;
  }
  *names_out = names;
  *n_out = n;
  return XPI_OK;
}

void hub_free_names(char **names, size_t n) {
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

static const char *const k_required[] = {"config.json", "tokenizer.json", "tokenizer_config.json"};

/* Whether snapshots/<commit> holds a whole model; *missing names the first absent file. */
static int snapshot_complete(const hub_job *j, const char *commit, char *missing, size_t cap) {
  char *p;
  for (size_t i = 0; i < sizeof k_required / sizeof *k_required; i++) {
    p = hf_snapshot_path(j->repo_dir, commit, k_required[i]);
    int ok = p && hf_is_file(p);
    free(p);
    if (!ok) {
      snprintf(missing, cap, "%s", k_required[i]);
      return 0;
    }
  }
  p = hf_snapshot_path(j->repo_dir, commit, "model.safetensors");
  int ok = p && hf_is_file(p);
  free(p);
  if (ok) return 1;
  p = hf_snapshot_path(j->repo_dir, commit, "model.safetensors.index.json");
  snprintf(missing, cap, "model.safetensors");
  if (!p || !hf_is_file(p)) {
    free(p);
    return 0;
  }
  char **names = NULL;
  size_t n = 0;
  ok = hub_index_shards(p, &names, &n) == XPI_OK;
  free(p);
  for (size_t i = 0; ok && i < n; i++) {
    char *sp = hf_snapshot_path(j->repo_dir, commit, names[i]);
    ok = sp && hf_is_file(sp);
    if (!ok) snprintf(missing, cap, "%s", names[i]);
    free(sp);
  }
  hub_free_names(names, n);
  return ok;
}

/* The commit the cache knows for the job's revision: the revision itself when it is a commit hash. */
static xpi_status cached_commit(const hub_job *j, char *commit, size_t cap) {
  if (hf_is_commit_hash(j->revision)) {
    snprintf(commit, cap, "%.40s", j->revision);
    return XPI_OK;
  }
  return hf_read_ref(j->repo_dir, j->revision, commit, cap);
}

static xpi_status resolve_from_cache(const hub_job *j, char *commit, size_t cap, const char *why) {
  xpi_status s = cached_commit(j, commit, cap);
  if (s == XPI_ERR_NOT_FOUND)
    return xpi_err(XPI_ERR_NOT_FOUND,
                   "'%s' (revision '%s') is not in the cache %s and %s: run once with network access to download it",
                   j->repo_id, j->revision, j->cache_root, why);
  if (s != XPI_OK) return s;
  char missing[512];
  if (!snapshot_complete(j, commit, missing, sizeof missing))
    return xpi_err(XPI_ERR_NOT_FOUND,
                   "'%s' (revision '%s', commit %s) is only partly in the cache %s (no %s) and %s: run once with "
                   "network access to complete it",
                   j->repo_id, j->revision, commit, j->cache_root, missing, why);
  return XPI_OK;
}

/* ---- one file, as hf_hub_download */

static xpi_status download_blob(hub_job *j, const hub_meta *m, const char *file) {
  char *blobs = xpi_path_join(j->repo_dir, "blobs");
  char *blob = blobs ? xpi_path_join(blobs, m->etag) : NULL;
  size_t pl = blob ? strlen(blob) + 16 : 0;
  char *part = blob ? malloc(pl) : NULL;
  xpi_status s = part ? hf_mkdirs(blobs, 1) : xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  int lock = -1;
  if (s == XPI_OK) s = hf_lock_blob(j->cache_root, j->repo_folder, m->etag, &lock);
  /* Another process may have finished this blob while we waited for the lock. */
  if (s == XPI_OK && !hf_is_file(blob)) {
    snprintf(part, pl, "%s.incomplete", blob);
    s = hub_http_get(&j->c, m->url, part, m->size, file);
    /* LFS files are named by their sha256: check the bytes before they enter the cache. */
    size_t el = strlen(m->etag);
    int lfs = el == 64;
    for (size_t i = 0; lfs && i < el; i++) lfs = isxdigit((unsigned char)m->etag[i]) != 0;
    if (s == XPI_OK && lfs) {
      char hex[65];
      s = hub_sha256_file(part, hex);
      if (s == XPI_OK && strcasecmp(hex, m->etag) != 0) {
        unlink(part);
        s = xpi_err(XPI_ERR_NETWORK,
                    "download of '%s' from %s is corrupted: its sha256 is %s but the Hub announced %s; the file was "
                    "discarded, run again to download it anew",
                    file, j->repo_id, hex, m->etag);
      }
    }
    if (s == XPI_OK && rename(part, blob) != 0) s = xpi_err(XPI_ERR_IO, "%s: cannot rename to %s", part, blob);
  }
  hf_unlock(lock);
  free(part);
  free(blob);
  free(blobs);
  return s;
}

/* Makes snapshots/<commit>/<file> present. revision is the branch/tag/commit asked for; *commit_out gets the
 * commit it resolved to. optional: a 404 for the file sets *absent (and .no_exist) instead of failing.
 * *unreachable tells a network-level failure (no answer) from an answer. */
static xpi_status fetch_file(hub_job *j, const char *revision, const char *file, int optional, int *absent,
                             char *commit_out, size_t cap, int *unreachable) {
  *absent = 0;
  if (unreachable) *unreachable = 0;
  if (hf_is_commit_hash(revision)) { /* a pinned commit never changes: the cache answers alone */
    char *p = hf_snapshot_path(j->repo_dir, revision, file);
    int have = p && hf_is_file(p);
    free(p);
    snprintf(commit_out, cap, "%s", revision);
    if (have) return XPI_OK;
    if (optional && hf_no_exist(j->repo_dir, revision, file)) {
      *absent = 1;
      return XPI_OK;
    }
  }
  hub_meta m;
  xpi_status s = hub_http_head(&j->c, revision, file, &m);
  if (s != XPI_OK) {
    if (unreachable) *unreachable = m.unreachable;
    if (s == XPI_ERR_NOT_FOUND && m.entry_missing && optional) {
      if (hf_is_commit_hash(m.commit)) {
        snprintf(commit_out, cap, "%s", m.commit);
        XPI_TRY(hf_mark_no_exist(j->repo_dir, m.commit, file));
        if (strcmp(revision, m.commit)) XPI_TRY(hf_write_ref(j->repo_dir, revision, m.commit));
      }
      *absent = 1;
      xpi_err_clear();
      return XPI_OK;
    }
    return s;
  }
  snprintf(commit_out, cap, "%s", m.commit);
  if (strcmp(revision, m.commit)) s = hf_write_ref(j->repo_dir, revision, m.commit);
  char *pointer = s == XPI_OK ? hf_snapshot_path(j->repo_dir, m.commit, file) : NULL;
  if (s == XPI_OK && !pointer) s = XPI_ERR_OUT_OF_MEMORY;
  if (s == XPI_OK && !hf_is_file(pointer)) {
    s = download_blob(j, &m, file);
    if (s == XPI_OK) s = hf_link_snapshot(j->repo_dir, m.commit, file, m.etag);
  }
  free(pointer);
  hub_meta_release(&m);
  return s;
}

/* All files of the model at job->revision, online. The first answer pins the commit; the rest is fetched at
 * that commit so a branch moving meanwhile cannot mix two versions. */
static xpi_status fetch_model(hub_job *j, char *commit, size_t cap) {
  int absent = 0, unreachable = 0;
  xpi_status s = fetch_file(j, j->revision, "config.json", 0, &absent, commit, cap, &unreachable);
  if (s != XPI_OK) {
    if (!unreachable) return s;
    /* As huggingface_hub: without the Hub, a complete cached snapshot of the revision still serves. */
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", xpi_last_error());
    char cached[128];
    if (resolve_from_cache(j, cached, sizeof cached, "the Hub is unreachable") == XPI_OK) {
      xpi_log(2, "%s; using the cached snapshot %s", msg, cached);
      snprintf(commit, cap, "%s", cached);
      return XPI_OK;
    }
    return xpi_err(XPI_ERR_NETWORK, "%s (and the model is not in the cache %s)", msg, j->cache_root);
  }
  char rev[128], got[128];
  snprintf(rev, sizeof rev, "%s", commit);
  s = fetch_file(j, rev, "generation_config.json", 1, &absent, got, sizeof got, NULL);
  for (size_t i = 1; s == XPI_OK && i < sizeof k_required / sizeof *k_required; i++)
    s = fetch_file(j, rev, k_required[i], 0, &absent, got, sizeof got, NULL);
  if (s != XPI_OK) return s;
  s = fetch_file(j, rev, "model.safetensors", 1, &absent, got, sizeof got, NULL);
  if (s != XPI_OK || !absent) return s;
  s = fetch_file(j, rev, "model.safetensors.index.json", 1, &absent, got, sizeof got, NULL);
  if (s != XPI_OK) return s;
  if (absent)
    return xpi_err(XPI_ERR_NOT_FOUND,
                   "repository '%s' at revision '%s' has neither model.safetensors nor model.safetensors.index.json",
                   j->repo_id, j->revision);
  char *index = hf_snapshot_path(j->repo_dir, rev, "model.safetensors.index.json");
  if (!index) return XPI_ERR_OUT_OF_MEMORY;
  char **names = NULL;
  size_t n = 0;
  s = hub_index_shards(index, &names, &n);
  free(index);
  for (size_t i = 0; s == XPI_OK && i < n; i++) s = fetch_file(j, rev, names[i], 0, &absent, got, sizeof got, NULL);
  hub_free_names(names, n);
  return s;
}

xpi_status xpi_hub_download(const char *repo_or_path, const xpi_download_options *opts, char *path, size_t cap,
                            size_t *len_out) {
  if (!repo_or_path || !len_out) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_hub_download: NULL argument");
  if (xpi_dir_exists(repo_or_path)) {
    size_t n = strlen(repo_or_path);
    *len_out = n;
    if (!path || cap < n + 1) return XPI_ERR_BUFFER_TOO_SMALL;
    memcpy(path, repo_or_path, n + 1);
    return XPI_OK;
  }
  if (xpi_file_exists(repo_or_path))
    return xpi_err(XPI_ERR_INVALID_ARGUMENT,
                   "%s is a file: give the folder that holds config.json, tokenizer.json and the safetensors, or a "
                   "Hub repo id (org/name)", repo_or_path);
  xpi_download_options o;
  xpi_download_options_default(&o);
  if (opts) {
    size_t n = opts->struct_size && opts->struct_size < sizeof o ? opts->struct_size : sizeof o;
    memcpy(&o, opts, n);
  }
  hub_job j;
  xpi_status s = job_init(&j, repo_or_path, &o);
  char commit[128] = "";
  if (s == XPI_OK) {
    if (o.offline || env_true("HF_HUB_OFFLINE"))
      s = resolve_from_cache(&j, commit, sizeof commit, "offline mode is on (HF_HUB_OFFLINE=1 or --offline)");
    else
      s = fetch_model(&j, commit, sizeof commit);
  }
  char *snap = s == XPI_OK ? hf_snapshot_path(j.repo_dir, commit, NULL) : NULL;
  if (s == XPI_OK && !snap) s = XPI_ERR_OUT_OF_MEMORY;
  if (s == XPI_OK) {
    size_t n = strlen(snap);
    *len_out = n;
    if (!path || cap < n + 1)
      s = XPI_ERR_BUFFER_TOO_SMALL;
    else
      memcpy(path, snap, n + 1);
  }
  free(snap);
  job_free(&j);
  return s;
}
