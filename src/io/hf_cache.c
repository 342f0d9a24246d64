/* The Hugging Face cache on disk, laid out exactly as huggingface_hub does (file_download.py):
 *   <cache>/models--org--name/blobs/<etag>                 file contents, named by their etag
 *   <cache>/models--org--name/snapshots/<commit>/<file>    relative symlink to ../../blobs/<etag>
 *   <cache>/models--org--name/refs/<revision>              the commit a branch/tag pointed at
 *   <cache>/models--org--name/.no_exist/<commit>/<file>    an optional file the Hub does not have
 *   <cache>/.locks/models--org--name/<etag>.lock           flock'ed while a blob is being downloaded */
#include "io/hub.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/status.h"

static char *dup_printf2(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char *s = malloc(n);
  if (!s) {
    xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory building a cache path");
    return NULL;
  }
  snprintf(s, n, "%s/%s", a, b);
  return s;
}

/* malloc'd copy of an environment path with a leading "~/" expanded, as Python's os.path.expanduser. */
static char *env_path(const char *v) {
  const char *home = getenv("HOME");
  if (v[0] == '~' && (v[1] == '/' || !v[1]) && home && *home) return dup_printf2(home, v[1] ? v + 2 : ".");
  char *s = strdup(v);
  if (!s) xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  return s;
}

char *hf_home(void) {
  const char *e = getenv("HF_HOME");
  if (e && *e) return env_path(e);
  const char *xdg = getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) {
    char *x = env_path(xdg), *s = x ? dup_printf2(x, "huggingface") : NULL;
    free(x);
    return s;
  }
  const char *home = getenv("HOME");
  if (!home || !*home) {
    xpi_err(XPI_ERR_INVALID_ARGUMENT, "cannot locate the Hugging Face cache: set HF_HOME or HF_HUB_CACHE (HOME is unset)");
    return NULL;
  }
  return dup_printf2(home, ".cache/huggingface");
}

char *hf_cache_root(void) {
  const char *e = getenv("HF_HUB_CACHE");
  if (e && *e) return env_path(e);
  char *home = hf_home();
  if (!home) return NULL;
  char *s = dup_printf2(home, "hub");
  free(home);
  return s;
}

int hf_is_commit_hash(const char *s) {
  size_t n = 0;
  for (; s[n]; n++)
    if (!isxdigit((unsigned char)s[n]) || isupper((unsigned char)s[n])) return 0;
  return n == 40;
}

int hf_is_safe_relpath(const char *s) {
  if (!s || !*s || s[0] == '/') return 0;
  const char *p = s;
  while (*p) {
    const char *q = strchr(p, '/');
    size_t n = q ? (size_t)(q - p) : strlen(p);
    if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) return 0;
    for (size_t i = 0; i < n; i++)
      if ((unsigned char)p[i] < 0x20 || p[i] == '\\' || p[i] == 0x7f) return 0;
    if (!q) break;
    p = q + 1;
    if (!*p) return 0; /* trailing '/' */
  }
  return 1;
}

xpi_status hf_mkdirs(const char *path, int whole_path) {
  char *buf = strdup(path);
  if (!buf) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  if (!whole_path) {
    char *slash = strrchr(buf, '/');
    if (!slash) {
      free(buf);
      return XPI_OK;
    }
    *slash = 0;
  }
  for (char *p = buf + 1;; p++) {
    if (*p == '/' || *p == 0) {
      char c = *p;
      *p = 0;
      if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
        int e = errno;
        xpi_status s = xpi_err(XPI_ERR_IO, "%s: cannot create directory: %s%s", buf, strerror(e),
                               e == ENOSPC ? " (disk full)" : "");
        free(buf);
        return s;
      }
      *p = c;
      if (!c) break;
    }
  }
  free(buf);
  return XPI_OK;
}

static char *repo_path3(const char *repo_dir, const char *a, const char *b, const char *c) {
  size_t n = strlen(repo_dir) + strlen(a) + strlen(b) + (c ? strlen(c) : 0) + 4;
  char *s = malloc(n);
  if (!s) {
    xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory building a cache path");
    return NULL;
  }
  if (c)
    snprintf(s, n, "%s/%s/%s/%s", repo_dir, a, b, c);
  else
    snprintf(s, n, "%s/%s/%s", repo_dir, a, b);
  return s;
}

xpi_status hf_read_ref(const char *repo_dir, const char *revision, char *commit, size_t cap) {
  char *p = repo_path3(repo_dir, "refs", revision, NULL);
  if (!p) return XPI_ERR_OUT_OF_MEMORY;
  FILE *f = fopen(p, "rb");
  if (!f) {
    free(p);
    return XPI_ERR_NOT_FOUND;
  }
  size_t n = fread(commit, 1, cap - 1, f);
  fclose(f);
  commit[n] = 0;
  while (n && isspace((unsigned char)commit[n - 1])) commit[--n] = 0; /* Python may add a newline */
  if (!n) {
    free(p);
    return XPI_ERR_NOT_FOUND;
  }
  if (!hf_is_commit_hash(commit)) {
    xpi_status s = xpi_err(XPI_ERR_FORMAT, "%s: does not hold a 40-hex commit hash", p);
    free(p);
    return s;
  }
  free(p);
  return XPI_OK;
}

xpi_status hf_write_ref(const char *repo_dir, const char *revision, const char *commit) {
  char cur[128];
  if (hf_read_ref(repo_dir, revision, cur, sizeof cur) == XPI_OK && !strcmp(cur, commit)) return XPI_OK;
  char *p = repo_path3(repo_dir, "refs", revision, NULL);
  if (!p) return XPI_ERR_OUT_OF_MEMORY;
  xpi_status s = hf_mkdirs(p, 0);
  size_t tn = strlen(p) + 32;
  char *tmp = s == XPI_OK ? malloc(tn) : NULL;
  if (s == XPI_OK && !tmp) s = xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  if (s == XPI_OK) {
    /* Unique per process so that concurrent writers never share a temporary file. */
    snprintf(tmp, tn, "%s.tmp%ld", p, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
      s = xpi_err(XPI_ERR_IO, "%s: cannot write: %s", tmp, strerror(errno));
    } else {
      int bad = fputs(commit, f) < 0;
      int e = errno;
      if (fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
      }
      if (bad) {
        s = xpi_err(XPI_ERR_IO, "%s: write failed: %s%s", tmp, strerror(e), e == ENOSPC ? " (disk full)" : "");
        unlink(tmp);
      } else if (rename(tmp, p) != 0) {
        s = xpi_err(XPI_ERR_IO, "%s: cannot rename to %s: %s", tmp, p, strerror(errno));
        unlink(tmp);
      }
    }
  }
  free(tmp);
  free(p);
  return s;
}

char *hf_snapshot_path(const char *repo_dir, const char *commit, const char *file) {
  return repo_path3(repo_dir, "snapshots", commit, file);
}

xpi_status hf_link_snapshot(const char *repo_dir, const char *commit, const char *file, const char *etag) {
  char *link = hf_snapshot_path(repo_dir, commit, file);
  if (!link) return XPI_ERR_OUT_OF_MEMORY;
  xpi_status s = hf_mkdirs(link, 0);
  /* snapshots/<commit>/<a>/<b> needs one "../" per directory level below the repo folder. */
  size_t depth = 2;
  for (const char *p = file; *p; p++) depth += *p == '/';
  size_t tn = depth * 3 + strlen("blobs/") + strlen(etag) + 1;
  size_t ln = strlen(link) + 32;
  char *target = malloc(tn), *tmp = malloc(ln);
  if (s == XPI_OK && (!target || !tmp)) s = xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  if (s == XPI_OK) {
    target[0] = 0;
    for (size_t i = 0; i < depth; i++) strcat(target, "../");
    strcat(target, "blobs/");
    strcat(target, etag);
    snprintf(tmp, ln, "%s.tmp%ld", link, (long)getpid());
    unlink(tmp);
    if (symlink(target, tmp) != 0) {
      s = xpi_err(XPI_ERR_IO, "%s: cannot create symlink: %s", tmp, strerror(errno));
    } else if (rename(tmp, link) != 0) {
      s = xpi_err(XPI_ERR_IO, "%s: cannot rename symlink into place: %s", link, strerror(errno));
      unlink(tmp);
    }
  }
  free(target);
  free(tmp);
  free(link);
  return s;
}

xpi_status hf_mark_no_exist(const char *repo_dir, const char *commit, const char *file) {
  char *p = repo_path3(repo_dir, ".no_exist", commit, file);
  if (!p) return XPI_ERR_OUT_OF_MEMORY;
  xpi_status s = hf_mkdirs(p, 0);
  if (s == XPI_OK) {
    int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      s = xpi_err(XPI_ERR_IO, "%s: cannot create: %s", p, strerror(errno));
    else
      close(fd);
  }
  free(p);
  return s;
}

int hf_no_exist(const char *repo_dir, const char *commit, const char *file) {
  char *p = repo_path3(repo_dir, ".no_exist", commit, file);
  if (!p) return 0;
  int r = access(p, F_OK) == 0;
  free(p);
  return r;
}

xpi_status hf_lock_blob(const char *cache_root, const char *repo_folder, const char *etag, int *fd_out) {
  *fd_out = -1;
  size_t n = strlen(cache_root) + strlen(repo_folder) + strlen(etag) + 32;
  char *p = malloc(n);
  if (!p) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  snprintf(p, n, "%s/.locks/%s/%s.lock", cache_root, repo_folder, etag);
  xpi_status s = hf_mkdirs(p, 0);
  if (s == XPI_OK) {
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      s = xpi_err(XPI_ERR_IO, "%s: cannot open lock file: %s", p, strerror(errno));
    } else {
      int r;
      while ((r = flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
      }
      if (r != 0) {
        s = xpi_err(XPI_ERR_IO, "%s: cannot lock: %s", p, strerror(errno));
        close(fd);
      } else {
        *fd_out = fd;
      }
    }
  }
  free(p);
  return s;
}

void hf_unlock(int fd) {
  if (fd >= 0) {
    flock(fd, LOCK_UN);
    close(fd);
  }
}

int hf_is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}
