/* File reading and mapping with messages that name the path and the OS reason. */
#include "core/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/status.h"

/* Opens path read-only and checks it is a regular file; *fd is open only on success. */
static xpi_status open_regular(const char *path, int *fd, struct stat *st) {
  *fd = open(path, O_RDONLY | O_CLOEXEC);
  if (*fd < 0) return xpi_err(XPI_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  if (fstat(*fd, st) != 0 || !S_ISREG(st->st_mode)) {
    close(*fd);
    return xpi_err(XPI_ERR_IO, "%s: not a regular file", path);
  }
  return XPI_OK;
}

xpi_status xpi_read_file(const char *path, size_t max_bytes, char **out, size_t *len) {
  *out = NULL;
  *len = 0;
  int fd;
  struct stat st;
  XPI_TRY(open_regular(path, &fd, &st));
  if ((unsigned long long)st.st_size > max_bytes) {
    close(fd);
    return xpi_err(XPI_ERR_FORMAT, "%s: file is %lld bytes, more than the %zu allowed", path,
                   (long long)st.st_size, max_bytes);
  }
  size_t n = (size_t)st.st_size;
  char *buf = malloc(n + 1);
  if (!buf) {
    close(fd);
    return xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: out of memory reading %zu bytes", path, n);
  }
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      int e = errno;
      free(buf);
      close(fd);
      return xpi_err(XPI_ERR_IO, "%s: read failed: %s", path, r == 0 ? "unexpected end of file" : strerror(e));
    }
    got += (size_t)r;
  }
  close(fd);
  buf[n] = 0;
  *out = buf;
  *len = n;
  return XPI_OK;
}

xpi_status xpi_map_file(const char *path, xpi_mapping *m) {
  m->data = NULL;
  m->size = 0;
  int fd;
  struct stat st;
  XPI_TRY(open_regular(path, &fd, &st));
  if (st.st_size == 0) {
    close(fd);
    return XPI_OK;
  }
  void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) return xpi_err(XPI_ERR_IO, "%s: mmap failed: %s", path, strerror(e));
  m->data = p;
  m->size = (size_t)st.st_size;
  return XPI_OK;
}

void xpi_unmap_file(xpi_mapping *m) {
  if (m && m->data) munmap((void *)m->data, m->size);
  if (m) {
    m->data = NULL;
    m->size = 0;
  }
}

char *xpi_path_join(const char *dir, const char *name) {
  size_t a = strlen(dir), b = strlen(name);
  char *p = malloc(a + b + 2);
  if (!p) {
    xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory joining a path");
    return NULL;
  }
  memcpy(p, dir, a);
  size_t k = a;
  if (a && dir[a - 1] != '/') p[k++] = '/';
  memcpy(p + k, name, b + 1);
  return p;
}

int xpi_file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int xpi_dir_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}
