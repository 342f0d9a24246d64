/* Shared between safetensors.c (one file's header, the lookup table) and safetensors_index.c (shards). */
#ifndef XPI_IO_SAFETENSORS_INTERNAL_H
#define XPI_IO_SAFETENSORS_INTERNAL_H

#include "core/fileio.h"
#include "io/safetensors.h"

typedef struct xpi_st_file {
  char *path;
  xpi_mapping map;
  xpi_st_tensor *tensors; /* in header order; names owned here */
  size_t n;
  uint64_t payload;       /* bytes after the header */
} xpi_st_file;

struct xpi_safetensors {
  xpi_st_file *files;
  size_t n_files, cap_files;
  xpi_st_tensor *all;     /* every file's tensors, sorted by name for bsearch */
  size_t n;
  uint64_t total;
};

/* Validates a whole safetensors image (data, size) read from path; *out gets calloc'd tensors whose names
 * the caller frees, and data pointers into the image. */
xpi_status xpi_st_parse_header(const char *path, const unsigned char *data, size_t size, xpi_st_tensor **out,
                               size_t *n_out, uint64_t *payload_out);
/* Maps and validates one more file into st. */
xpi_status xpi_st_add_file(xpi_safetensors *st, const char *path);
/* Builds the sorted lookup table; rejects a name present twice. */
xpi_status xpi_st_finish(xpi_safetensors *st);

#endif
