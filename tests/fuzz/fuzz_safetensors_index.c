/* A sharded checkpoint's model.safetensors.index.json (xpi_st_open_dir) and the Hub client's reading of the same
 * file (hub_index_shards), on arbitrary bytes. The folder also holds two valid shards (a.safetensors,
 * b.safetensors: tensors "x" and "y"), so that indexes naming them get past the file checks. Properties: no
 * crash, leak or undefined behaviour; an accepted checkpoint finds every tensor of the index in the shard it
 * names; the Hub's shard names are safe relative paths. */
#include "fuzz_common.h"
#include "io/hub.h"
#include "io/safetensors.h"

/* A safetensors image with one F32 tensor of shape [2] holding {1, 2}. */
static void write_shard(const char *name, const char *tensor) {
  char hdr[128];
  int hl = snprintf(hdr, sizeof hdr, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", tensor);
  uint8_t img[8 + 128 + 8];
  for (int i = 0; i < 8; i++) img[i] = (uint8_t)((uint64_t)hl >> (8 * i));
  memcpy(img + 8, hdr, (size_t)hl);
  float v[2] = {1, 2};
  memcpy(img + 8 + hl, v, 8);
  fuzz_file("", name, img, 8 + (size_t)hl + 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int init;
  if (!init) {
    write_shard("a.safetensors", "x");
    write_shard("b.safetensors", "y");
    init = 1;
  }
  fuzz_file("", "model.safetensors.index.json", data, size);
  xpi_safetensors *st = NULL;
  if (xpi_st_open_dir(fuzz_dir(), &st) == XPI_OK) {
    FUZZ_ASSERT(xpi_st_count(st) > 0, "an accepted checkpoint without tensors");
    for (size_t i = 0; i < xpi_st_count(st); i++) {
      const xpi_st_tensor *t = xpi_st_at(st, i);
      FUZZ_ASSERT(xpi_st_find(st, t->name) == t, "tensor '%s' not found by name", t->name);
    }
    xpi_st_close(st);
  }
  char path[512], **names = NULL;
  size_t n = 0;
  snprintf(path, sizeof path, "%s/model.safetensors.index.json", fuzz_dir());
  if (hub_index_shards(path, &names, &n) == XPI_OK) {
    FUZZ_ASSERT(n > 0, "no shard names");
    for (size_t i = 0; i < n; i++) FUZZ_ASSERT(hf_is_safe_relpath(names[i]), "unsafe shard name '%s'", names[i]);
    hub_free_names(names, n);
  }
  return 0;
}
