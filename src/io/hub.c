/* Model source resolution. TEMPORARY until the Hub client lands: folders only. */
#include <stdio.h>
#include <string.h>

#include "core/fileio.h"
#include "core/status.h"

void xpi_download_options_default(xpi_download_options *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
}

xpi_status xpi_hub_download(const char *repo_or_path, const xpi_download_options *opts, char *path, size_t cap,
                            size_t *len_out) {
  (void)opts;
  if (!repo_or_path || !len_out) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_hub_download: NULL argument");
  if (!xpi_dir_exists(repo_or_path))
    return xpi_err(XPI_ERR_NOT_FOUND, "%s: no such folder (Hub download not available yet)", repo_or_path);
  size_t n = strlen(repo_or_path);
  *len_out = n;
  if (!path || cap < n + 1) return XPI_ERR_BUFFER_TOO_SMALL;
  memcpy(path, repo_or_path, n + 1);
  return XPI_OK;
}
