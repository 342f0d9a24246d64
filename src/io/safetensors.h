/* safetensors over mmap: one file, or a sharded checkpoint through model.safetensors.index.json.
 * Headers are validated fully before any tensor is used (see safetensors.c); tensor data may be unaligned. */
#ifndef XPI_IO_SAFETENSORS_H
#define XPI_IO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include "ops/ops.h"

#define XPI_ST_MAX_DIMS 8

typedef struct xpi_st_tensor {
  const char *name;
  xpi_dtype dtype;                 /* F32, F16, BF16 (others are rejected with a clear message) */
  int32_t ndim;
  int64_t shape[XPI_ST_MAX_DIMS];
  const void *data;                /* inside the mapping; valid until xpi_st_close */
  size_t nbytes;
  const char *file;                /* the shard it lives in (for messages) */
} xpi_st_tensor;

typedef struct xpi_safetensors xpi_safetensors;

/* Opens dir/model.safetensors, or dir/model.safetensors.index.json and every shard it names. */
xpi_status xpi_st_open_dir(const char *dir, xpi_safetensors **out);
/* Opens one file. */
xpi_status xpi_st_open_file(const char *path, xpi_safetensors **out);
void xpi_st_close(xpi_safetensors *st);

/* NULL when absent. */
const xpi_st_tensor *xpi_st_find(const xpi_safetensors *st, const char *name);
size_t xpi_st_count(const xpi_safetensors *st);
const xpi_st_tensor *xpi_st_at(const xpi_safetensors *st, size_t i);
/* Total bytes of tensor data (the mapped payload). */
uint64_t xpi_st_total_bytes(const xpi_safetensors *st);

#endif
