/* Test helper: writes safetensors files byte by byte, so tests control every field (and can break any). */
#ifndef XPI_TEST_ST_BUILD_H
#define XPI_TEST_ST_BUILD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* [u64 little-endian hlen][header (hlen bytes)][payload] in a malloc'd buffer; *len gets its size. */
static inline unsigned char *st_image(const char *header, size_t hlen, uint64_t declared_hlen, const void *payload,
                                      size_t plen, size_t *len) {
  unsigned char *b = malloc(8 + hlen + plen + 1);
  if (!b) exit(3);
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(declared_hlen >> (8 * i));
  memcpy(b + 8, header, hlen);
  if (plen) memcpy(b + 8 + hlen, payload, plen);
  *len = 8 + hlen + plen;
  return b;
}

/* Writes a file whose header is the given JSON text (declared length = its length). 0 on success. */
static inline int st_write(const char *path, const char *header, const void *payload, size_t plen) {
  size_t len;
  unsigned char *b = st_image(header, strlen(header), strlen(header), payload, plen, &len);
  FILE *f = fopen(path, "wb");
  int ok = f && fwrite(b, 1, len, f) == len;
  if (f && fclose(f) != 0) ok = 0;
  free(b);
  return ok ? 0 : -1;
}

#endif
