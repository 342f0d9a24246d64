/* SHA-256 of a downloaded file through OpenSSL's libcrypto: LFS files are named by their sha256 on the Hub,
 * and the bytes are checked against it before they enter the cache. */
#include "io/hub.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"

xpi_status hub_sha256_file(const char *path, char hex[65]) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return xpi_err(XPI_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  enum { BUF = 1 << 20 };
  unsigned char *buf = malloc(BUF);
  xpi_status s = XPI_OK;
  if (!ctx || !buf || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
    s = xpi_err(XPI_ERR_OUT_OF_MEMORY, "cannot start SHA-256 for %s", path);
  while (s == XPI_OK) {
    ssize_t r = read(fd, buf, BUF);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) s = xpi_err(XPI_ERR_IO, "%s: read failed: %s", path, strerror(errno));
    if (r <= 0) break;
    if (EVP_DigestUpdate(ctx, buf, (size_t)r) != 1) s = xpi_err(XPI_ERR_INTERNAL, "SHA-256 update failed");
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (s == XPI_OK && (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen != 32))
    s = xpi_err(XPI_ERR_INTERNAL, "SHA-256 finalisation failed");
  if (s == XPI_OK)
    for (unsigned i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
  EVP_MD_CTX_free(ctx);
  free(buf);
  close(fd);
  return s;
}
