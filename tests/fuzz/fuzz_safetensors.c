/* safetensors header validation (xpi_st_parse_header) on arbitrary bytes: never a crash, leak or undefined
 * behaviour, and whatever it accepts is safe to use: every tensor's bytes lie inside the image, its byte count
 * is its shape times its dtype size, and the tensors tile the payload. */
#include "fuzz_common.h"
#include "ops/ops.h"
#include "io/safetensors_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  xpi_st_tensor *ts = NULL;
  size_t n = 0;
  uint64_t payload = 0;
  if (xpi_st_parse_header("fuzz.safetensors", data, size, &ts, &n, &payload) != XPI_OK) return 0;
  const uint8_t *lo = data + size - payload, *hi = data + size;
  uint64_t covered = 0;
  for (size_t i = 0; i < n; i++) {
    const xpi_st_tensor *t = &ts[i];
    FUZZ_ASSERT(t->name != NULL, "tensor %zu has no name", i);
    uint64_t nel = 1;
    for (int d = 0; d < t->ndim; d++) nel *= (uint64_t)t->shape[d];
    FUZZ_ASSERT(t->ndim >= 0 && t->ndim <= XPI_ST_MAX_DIMS, "%s: %d dims", t->name, t->ndim);
    FUZZ_ASSERT(nel * xpi_dtype_size(t->dtype) == t->nbytes, "%s: %zu bytes for %llu elements", t->name, t->nbytes,
                (unsigned long long)nel);
    const uint8_t *p = t->data;
    FUZZ_ASSERT(p >= lo && p <= hi && t->nbytes <= (size_t)(hi - p), "%s: bytes outside the payload", t->name);
    covered += t->nbytes;
  }
  FUZZ_ASSERT(covered == payload, "tensors cover %llu of %llu payload bytes", (unsigned long long)covered,
              (unsigned long long)payload);
  for (size_t i = 0; i < n; i++) free((char *)ts[i].name);
  free(ts);
  return 0;
}
