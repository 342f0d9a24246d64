/* Whole-file reads, read-only mappings and path helpers. */
#ifndef XPI_CORE_FILEIO_H
#define XPI_CORE_FILEIO_H

#include <stddef.h>
#include "xpuinfer.h"

/* Reads a whole file (NUL-terminated copy; *len excludes the NUL). Files above max_bytes are refused. */
xpi_status xpi_read_file(const char *path, size_t max_bytes, char **out, size_t *len);

typedef struct xpi_mapping {
  const unsigned char *data;
  size_t size;
} xpi_mapping;
/* Maps a file read-only (size 0 files map to data == NULL). */
xpi_status xpi_map_file(const char *path, xpi_mapping *m);
void xpi_unmap_file(xpi_mapping *m);

/* malloc'd "dir/name". NULL on OOM (error set). */
char *xpi_path_join(const char *dir, const char *name);
int xpi_file_exists(const char *path);
int xpi_dir_exists(const char *path);

#endif
