/* A model folder's weights: model.safetensors, or a sharded checkpoint described by
 * model.safetensors.index.json ({"metadata": {...}, "weight_map": {tensor: shard file name}}).
 * The index is untrusted: shard names must be plain file names in the folder, every shard must exist and be a
 * valid safetensors file, every tensor the index lists must be in the shard it names, and no tensor may be in
 * two shards. Tensors a shard holds beyond the index are kept (transformers loads whole shards too). */
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/status.h"
#include "io/safetensors_internal.h"

#define ST_INDEX_NAME "model.safetensors.index.json"
#define ST_SINGLE_NAME "model.safetensors"
#define ST_MAX_INDEX_BYTES (64u << 20)

static int str_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Shard names come from a downloaded file: keep them inside the model folder. */
static xpi_status check_shard_name(const char *ipath, const char *tensor, const char *shard) {
  if (!shard[0] || strchr(shard, '/') || strchr(shard, '\\') || strstr(shard, ".."))
    return xpi_err(XPI_ERR_FORMAT,
                   "%s: tensor '%s': shard \"%s\" is not a plain file name in the model folder "
                   "(no '/', '\\' or '..' allowed)",
                   ipath, tensor, shard);
  return XPI_OK;
}

static xpi_status open_index(const char *dir, const char *ipath, xpi_safetensors *st) {
  cJSON *root = NULL;
  XPI_TRY(xpi_json_load_file(ipath, ST_MAX_INDEX_BYTES, &root));
  xpi_status s = XPI_OK;
  const char **shards = NULL;
  char *spath = NULL;
  const cJSON *wm = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
  if (!cJSON_IsObject(wm)) {
    s = xpi_err(XPI_ERR_FORMAT, "%s: \"weight_map\" is missing or not a JSON object", ipath);
    goto done;
  }
  size_t n = 0;
  for (const cJSON *e = wm->child; e; e = e->next) {
    if (!cJSON_IsString(e) || !e->valuestring) {
      s = xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s': weight_map value is not a file name string", ipath, e->string);
      goto done;
    }
    if ((s = check_shard_name(ipath, e->string, e->valuestring)) != XPI_OK) goto done;
    n++;
  }
  if (n == 0) {
    s = xpi_err(XPI_ERR_FORMAT, "%s: \"weight_map\" lists no tensors", ipath);
    goto done;
  }
  /* The distinct shard names, sorted, so files[i] is shard i. */
  shards = malloc(n * sizeof *shards);
  if (!shards) {
    s = xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: out of memory", ipath);
    goto done;
  }
  size_t k = 0;
  for (const cJSON *e = wm->child; e; e = e->next) shards[k++] = e->valuestring;
  qsort(shards, n, sizeof *shards, str_cmp);
  size_t ns = 0;
  for (size_t i = 0; i < n; i++)
    if (ns == 0 || strcmp(shards[ns - 1], shards[i]) != 0) shards[ns++] = shards[i];

  for (size_t i = 0; i < ns; i++) {
    spath = xpi_path_join(dir, shards[i]);
    if (!spath) {
      s = XPI_ERR_OUT_OF_MEMORY;
      goto done;
    }
    if (!xpi_file_exists(spath)) {
      s = xpi_err(XPI_ERR_NOT_FOUND, "%s: shard \"%s\" does not exist (%s)", ipath, shards[i], spath);
      goto done;
    }
    if ((s = xpi_st_add_file(st, spath)) != XPI_OK) goto done;
    free(spath);
    spath = NULL;
  }
  if ((s = xpi_st_finish(st)) != XPI_OK) goto done;

  for (const cJSON *e = wm->child; e; e = e->next) {
    const xpi_st_tensor *t = xpi_st_find(st, e->string);
    const char **sh = bsearch(&e->valuestring, shards, ns, sizeof *shards, str_cmp);
    const char *want = sh ? st->files[sh - shards].path : "";
    if (!t || strcmp(t->file, want) != 0) {
      s = xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s' is listed in shard \"%s\" but that shard does not contain it%s%s",
                  ipath, e->string, e->valuestring, t ? "; it is in " : "", t ? t->file : "");
      goto done;
    }
  }

done:
  free(spath);
  free(shards);
  cJSON_Delete(root);
  return s;
}

xpi_status xpi_st_open_dir(const char *dir, xpi_safetensors **out) {
  *out = NULL;
  char *single = xpi_path_join(dir, ST_SINGLE_NAME);
  char *index = xpi_path_join(dir, ST_INDEX_NAME);
  xpi_safetensors *st = calloc(1, sizeof *st);
  xpi_status s = XPI_OK;
  if (!single || !index || !st) {
    s = xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: out of memory", dir);
  } else if (xpi_file_exists(single)) {
    /* transformers prefers the single file when both exist; so do we. */
    s = xpi_st_add_file(st, single);
    if (s == XPI_OK) s = xpi_st_finish(st);
  } else if (xpi_file_exists(index)) {
    s = open_index(dir, index, st);
  } else {
    /* Say why when the weights are there in PyTorch's pickle format (which we do not read: it can run code). */
    char *pt = xpi_path_join(dir, "pytorch_model.bin"), *pti = xpi_path_join(dir, "pytorch_model.bin.index.json");
    if (pt && pti && (xpi_file_exists(pt) || xpi_file_exists(pti)))
      s = xpi_err(XPI_ERR_UNSUPPORTED, "%s: only safetensors weights are supported, this folder has %s", dir,
                  xpi_file_exists(pt) ? "pytorch_model.bin" : "pytorch_model.bin.index.json");
    else
      s = xpi_err(XPI_ERR_NOT_FOUND, "%s: no %s or %s in this folder", dir, ST_SINGLE_NAME, ST_INDEX_NAME);
    free(pt);
    free(pti);
  }
  free(single);
  free(index);
  if (s != XPI_OK) {
    xpi_st_close(st);
    return s;
  }
  *out = st;
  return XPI_OK;
}
