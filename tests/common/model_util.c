#include "model_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

xpi_model *xpi_test_load_opts(const char *dir, xpi_model_options *o) {
  if (!o->n_threads) o->n_threads = 2;
  xpi_model *m = NULL;
  xpi_status s = xpi_model_load(dir, o, &m);
  CHECK(s == XPI_OK, "loading %s on %s%s%s%s%s: %s", dir, o->device ? o->device : "auto",
        o->device_map ? " map " : "", o->device_map ? o->device_map : "", o->quant ? " --quant " : "",
        o->quant ? o->quant : "", xpi_last_error());
  return m;
}

xpi_model *xpi_test_load(const char *dir, const char *device, const char *map, const char *attn, const char *quant) {
  xpi_model_options o;
  xpi_model_options_default(&o);
  o.device = device;
  o.device_map = map;
  o.attn_implementation = attn;
  o.quant = quant;
  return xpi_test_load_opts(dir, &o);
}

float *xpi_test_eval_all(xpi_model *m, const int32_t *ids, int n, int32_t vocab) {
  float *l = malloc(sizeof(float) * (size_t)vocab * (size_t)n);
  xpi_request *r = NULL;
  xpi_request_options ro;
  xpi_request_options_default(&ro);
  ro.n_ctx = 128;
  CHECK_OK(xpi_request_create(m, &ro, &r));
  if (r && l) CHECK_OK(xpi_request_eval(r, ids, (size_t)n, 1, l, (size_t)vocab * (size_t)n));
  xpi_request_free(r);
  return l;
}

void xpi_test_drive(xpi_engine *e, int max_steps) {
  int32_t pending = 1;
  for (int guard = 0; e && pending > 0 && guard < max_steps; guard++)
    if (xpi_engine_step(e, &pending) != XPI_OK) break;
}

char *xpi_test_nan_row_model(const char *src, int32_t bad) {
  char *tmp = xpi_test_tmpdir("nanrow");
  DIR *d = opendir(src);
  CHECK(d != NULL, "open folder %s", src);
  for (struct dirent *de; d && (de = readdir(d));) {
    if (de->d_name[0] == '.' || !strcmp(de->d_name, "model.safetensors")) continue;
    char *a = xpi_test_strf("%s/%s", src, de->d_name), *b = xpi_test_strf("%s/%s", tmp, de->d_name);
    CHECK(symlink(a, b) == 0, "symlink %s", b);
    free(a);
    free(b);
  }
  if (d) closedir(d);
  char *path = xpi_test_strf("%s/model.safetensors", src), *out = xpi_test_strf("%s/model.safetensors", tmp);
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL, "open %s", path);
  unsigned char *buf = NULL;
  long size = 0;
  if (f) {
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)size);
    CHECK(buf && fread(buf, 1, (size_t)size, f) == (size_t)size, "read %s", path);
    fclose(f);
  }
  if (buf) {
    uint64_t hl = 0;
    memcpy(&hl, buf, 8);
    char *hdr = malloc(hl + 1);
    memcpy(hdr, buf + 8, hl);
    hdr[hl] = 0;
    cJSON *h = cJSON_Parse(hdr), *t = cJSON_GetObjectItem(h, "model.embed_tokens.weight");
    const int64_t cols = (int64_t)cJSON_GetArrayItem(cJSON_GetObjectItem(t, "shape"), 1)->valuedouble;
    const int64_t off = (int64_t)cJSON_GetArrayItem(cJSON_GetObjectItem(t, "data_offsets"), 0)->valuedouble;
    const char *dt = cJSON_GetObjectItem(t, "dtype")->valuestring;
    CHECK(!strcmp(dt, "BF16"), "embedding dtype %s (want BF16)", dt);
    const uint16_t nan16 = 0x7fc0;
    for (int64_t c = 0; c < cols; c++) memcpy(buf + 8 + hl + off + ((int64_t)bad * cols + c) * 2, &nan16, 2);
    CHECK(xpi_test_write_file(out, buf, (size_t)size) == 0, "write %s", out);
    cJSON_Delete(h);
    free(hdr);
    free(buf);
  }
  free(path);
  free(out);
  return tmp;
}
