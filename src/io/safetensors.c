/* safetensors over mmap: header validation and lookup for one file (sharded checkpoints: safetensors_index.c).
 *
 * File layout (https://github.com/huggingface/safetensors): u64 little-endian header length N, N bytes of UTF-8
 * JSON {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}, then the payload.
 * The header is untrusted: everything is checked before a tensor is exposed, so a tensor's bytes always lie
 * inside the mapping. Data is used in place (no copy, no page touched here), so pointers may be unaligned. */
#include "io/safetensors_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/json.h"
#include "core/status.h"

/* Same cap as the reference implementation (MAX_HEADER_SIZE in safetensors/src/tensor.rs). */
#define ST_MAX_HEADER (100u * 1000u * 1000u)
/* Integers above 2^53 do not survive cJSON's double; no valid offset or dim can exceed it anyway. */
#define ST_MAX_INT 9007199254740992.0

typedef struct dtype_name {
  const char *name;
  int supported;
  xpi_dtype dt;
  size_t size;
} dtype_name;

/* Every dtype the safetensors format defines; only the first three are supported by the kernels. */
static const dtype_name k_dtypes[] = {
    {"F32", 1, XPI_DT_F32, 4}, {"F16", 1, XPI_DT_F16, 2}, {"BF16", 1, XPI_DT_BF16, 2},
    {"BOOL", 0, 0, 0},         {"U8", 0, 0, 0},           {"I8", 0, 0, 0},
    {"I16", 0, 0, 0},          {"U16", 0, 0, 0},          {"I32", 0, 0, 0},
    {"U32", 0, 0, 0},          {"F64", 0, 0, 0},          {"I64", 0, 0, 0},
    {"U64", 0, 0, 0},          {"F8_E5M2", 0, 0, 0},      {"F8_E4M3", 0, 0, 0},
    {"F8_E8M0", 0, 0, 0},      {"F6_E2M3", 0, 0, 0},      {"F6_E3M2", 0, 0, 0},
    {"F4", 0, 0, 0},           {"C64", 0, 0, 0},
};

static const dtype_name *find_dtype(const char *s) {
  for (size_t i = 0; i < sizeof k_dtypes / sizeof k_dtypes[0]; i++)
    if (strcmp(k_dtypes[i].name, s) == 0) return &k_dtypes[i];
  return NULL;
}

/* A JSON number that is an exact non-negative integer no larger than max. */
static int json_uint(const cJSON *v, double max, uint64_t *out) {
  if (!cJSON_IsNumber(v)) return 0;
  double d = v->valuedouble;
  if (!(d >= 0.0) || d > max || d != floor(d)) return 0;
  *out = (uint64_t)d;
  return 1;
}

/* Parses one tensor entry; name is already copied into t->name. */
static xpi_status parse_entry(const char *path, const cJSON *e, uint64_t payload, xpi_st_tensor *t,
                              uint64_t *begin, uint64_t *end) {
  const char *nm = t->name;
  if (!cJSON_IsObject(e)) return xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s': entry is not a JSON object", path, nm);
  const cJSON *dt = NULL, *shape = NULL, *offs = NULL;
  for (const cJSON *f = e->child; f; f = f->next) {
    const cJSON **slot = NULL;
    if (strcmp(f->string, "dtype") == 0) slot = &dt;
    else if (strcmp(f->string, "shape") == 0) slot = &shape;
    else if (strcmp(f->string, "data_offsets") == 0) slot = &offs;
    else continue; /* other fields are ignored, as by the reference implementation */
    if (*slot) return xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s': field \"%s\" given twice", path, nm, f->string);
    *slot = f;
  }
  if (!dt || !cJSON_IsString(dt) || !dt->valuestring)
    return xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s': \"dtype\" missing or not a string", path, nm);
  const dtype_name *d = find_dtype(dt->valuestring);
  if (!d) return xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s': unknown dtype \"%.32s\"", path, nm, dt->valuestring);
  if (!d->supported)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: tensor '%s': dtype %s is not supported (supported: F32, F16, BF16)",
                   path, nm, d->name);
  t->dtype = d->dt;

  if (!shape || !cJSON_IsArray(shape))
    return xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s': \"shape\" missing or not an array", path, nm);
  int nd = cJSON_GetArraySize(shape);
  if (nd > XPI_ST_MAX_DIMS)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: tensor '%s': %d dimensions, at most %d supported", path, nm, nd,
                   XPI_ST_MAX_DIMS);
  uint64_t nel = 1;
  int k = 0;
  int overflow = 0;
  for (const cJSON *v = shape->child; v; v = v->next, k++) {
    uint64_t dim;
    if (!json_uint(v, ST_MAX_INT, &dim))
      return xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s': shape[%d] is not a non-negative integer", path, nm, k);
    t->shape[k] = (int64_t)dim;
    /* A product above the payload can never match the byte range; stop multiplying before it wraps. */
    if (dim != 0 && nel > UINT64_MAX / dim) overflow = 1;
    else nel *= dim;
  }
  t->ndim = nd;
  if (overflow || nel > UINT64_MAX / d->size)
    return xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s': shape's element count overflows", path, nm);

  if (!offs || !cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2)
    return xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s': \"data_offsets\" missing or not [begin, end]", path, nm);
  if (!json_uint(offs->child, ST_MAX_INT, begin) || !json_uint(offs->child->next, ST_MAX_INT, end))
    return xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s': \"data_offsets\" are not non-negative integers", path, nm);
  if (*begin > *end || *end > payload)
    return xpi_err(XPI_ERR_FORMAT,
                   "%s: tensor '%s': data_offsets [%llu, %llu] outside the %llu-byte payload (or reversed)", path,
                   nm, (unsigned long long)*begin, (unsigned long long)*end, (unsigned long long)payload);
  uint64_t want = nel * d->size;
  if (*end - *begin != want)
    return xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s': data_offsets span %llu bytes, dtype %s x shape needs %llu",
                   path, nm, (unsigned long long)(*end - *begin), d->name, (unsigned long long)want);
  t->nbytes = (size_t)want;
  return XPI_OK;
}

static xpi_status check_metadata(const char *path, const cJSON *m) {
  if (cJSON_IsNull(m)) return XPI_OK;
  if (!cJSON_IsObject(m)) return xpi_err(XPI_ERR_FORMAT, "%s: \"__metadata__\" is not a JSON object", path);
  for (const cJSON *v = m->child; v; v = v->next)
    if (!cJSON_IsString(v))
      return xpi_err(XPI_ERR_FORMAT, "%s: \"__metadata__\" value of \"%s\" is not a string", path, v->string);
  return XPI_OK;
}

typedef struct span {
  uint64_t begin, end;
  size_t idx;
} span;

static int span_cmp(const void *a, const void *b) {
  const span *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return 0;
}

/* The spec requires the byte ranges to tile the payload: sorted by offset, each starts where the last ended. */
static xpi_status check_tiling(const char *path, span *sp, size_t n, const xpi_st_tensor *ts, uint64_t payload) {
  if (n) qsort(sp, n, sizeof *sp, span_cmp);
  uint64_t at = 0;
  for (size_t i = 0; i < n; i++) {
    if (sp[i].begin != at)
      return xpi_err(XPI_ERR_FORMAT,
                     "%s: tensor '%s': data_offsets begin at %llu but the previous tensor ends at %llu "
                     "(tensors must be contiguous and not overlap)",
                     path, ts[sp[i].idx].name, (unsigned long long)sp[i].begin, (unsigned long long)at);
    at = sp[i].end;
  }
  if (at != payload)
    return xpi_err(XPI_ERR_FORMAT, "%s: tensors cover %llu bytes but the payload after the header is %llu bytes",
                   path, (unsigned long long)at, (unsigned long long)payload);
  return XPI_OK;
}

xpi_status xpi_st_parse_header(const char *path, const unsigned char *data, size_t size, xpi_st_tensor **out,
                               size_t *n_out, uint64_t *payload_out) {
  *out = NULL;
  *n_out = 0;
  *payload_out = 0;
  if (size < 8)
    return xpi_err(XPI_ERR_FORMAT, "%s: %zu bytes, too small for a safetensors file (8-byte header length)", path,
                   size);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | data[i];
  if (hlen < 2 || hlen > size - 8 || hlen > ST_MAX_HEADER)
    return xpi_err(XPI_ERR_FORMAT, "%s: header length %llu is invalid (must be 2..%llu for this %zu-byte file)", path,
                   (unsigned long long)hlen,
                   (unsigned long long)((size - 8) < ST_MAX_HEADER ? (size - 8) : ST_MAX_HEADER), size);
  const char *hdr = (const char *)data + 8;
  if (memchr(hdr, 0, (size_t)hlen)) return xpi_err(XPI_ERR_FORMAT, "%s: header contains a NUL byte", path);
  size_t bad = xpi_utf8_invalid_at(hdr, (size_t)hlen); /* as the reference implementation (from_utf8) */
  if (bad < hlen)
    return xpi_err(XPI_ERR_FORMAT, "%s: header is not valid UTF-8 (byte 0x%02x at offset %zu of the header)", path,
                   (unsigned char)hdr[bad], bad);
  uint64_t payload = (uint64_t)size - 8 - hlen;

  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(hdr, (size_t)hlen, &end, 0);
  if (!root) {
    size_t off = end && end >= hdr ? (size_t)(end - hdr) : 0;
    return xpi_err(XPI_ERR_FORMAT, "%s: header is not valid JSON (near byte %zu of %llu)", path, off,
                   (unsigned long long)hlen);
  }
  /* The writer pads the header with spaces to align the payload; anything else after the JSON is garbage. */
  for (const char *p = end; p < hdr + hlen; p++) {
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
      cJSON_Delete(root);
      return xpi_err(XPI_ERR_FORMAT, "%s: unexpected bytes after the header JSON (at byte %zu)", path,
                     (size_t)(p - hdr));
    }
  }
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return xpi_err(XPI_ERR_FORMAT, "%s: header is not a JSON object", path);
  }

  xpi_status s = XPI_OK;
  size_t n = 0, k = 0;
  for (const cJSON *e = root->child; e; e = e->next)
    if (strcmp(e->string, "__metadata__") != 0) n++;
  xpi_st_tensor *ts = n ? calloc(n, sizeof *ts) : NULL;
  span *sp = n ? calloc(n, sizeof *sp) : NULL;
  if (n && (!ts || !sp)) {
    s = xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu tensor entries", path, n);
    goto done;
  }
  int have_meta = 0;
  for (const cJSON *e = root->child; e; e = e->next) {
    if (strcmp(e->string, "__metadata__") == 0) {
      if (have_meta) {
        s = xpi_err(XPI_ERR_FORMAT, "%s: \"__metadata__\" given twice", path);
        goto done;
      }
      have_meta = 1;
      if ((s = check_metadata(path, e)) != XPI_OK) goto done;
      continue;
    }
    xpi_st_tensor *t = &ts[k];
    char *nm = strdup(e->string);
    if (!nm) {
      s = xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
      goto done;
    }
    t->name = nm;
    t->file = path;
    k++;
    uint64_t b = 0, en = 0;
    if ((s = parse_entry(path, e, payload, t, &b, &en)) != XPI_OK) goto done;
    t->data = data + 8 + hlen + b;
    sp[k - 1] = (span){b, en, k - 1};
  }
  s = check_tiling(path, sp, n, ts, payload);

done:
  cJSON_Delete(root);
  free(sp);
  if (s != XPI_OK) {
    for (size_t i = 0; i < k; i++) free((char *)ts[i].name);
    free(ts);
    return s;
  }
  *out = ts;
  *n_out = n;
  *payload_out = payload;
  return XPI_OK;
}

/* ---- the opened set: shards' mappings plus all tensors sorted by name ---- */

static int tensor_cmp(const void *a, const void *b) {
  return strcmp(((const xpi_st_tensor *)a)->name, ((const xpi_st_tensor *)b)->name);
}

xpi_status xpi_st_add_file(xpi_safetensors *st, const char *path) {
  if (st->n_files == st->cap_files) {
    size_t cap = st->cap_files ? st->cap_files * 2 : 4;
    xpi_st_file *f = realloc(st->files, cap * sizeof *f);
    if (!f) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    st->files = f;
    st->cap_files = cap;
  }
  xpi_st_file *f = &st->files[st->n_files];
  memset(f, 0, sizeof *f);
  f->path = strdup(path);
  if (!f->path) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  xpi_status s = xpi_map_file(path, &f->map);
  if (s == XPI_OK) s = xpi_st_parse_header(f->path, f->map.data, f->map.size, &f->tensors, &f->n, &f->payload);
  if (s != XPI_OK) {
    xpi_unmap_file(&f->map);
    free(f->path);
    return s;
  }
  st->n_files++;
  return XPI_OK;
}

/* Gathers every file's tensors into one name-sorted array; a name in two files is an error. */
xpi_status xpi_st_finish(xpi_safetensors *st) {
  size_t n = 0;
  for (size_t i = 0; i < st->n_files; i++) {
    n += st->files[i].n;
    st->total += st->files[i].payload;
  }
  if (n) {
    st->all = malloc(n * sizeof *st->all);
    if (!st->all) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory for %zu tensors", n);
  }
  size_t k = 0;
  for (size_t i = 0; i < st->n_files; i++)
    for (size_t j = 0; j < st->files[i].n; j++) st->all[k++] = st->files[i].tensors[j];
  st->n = n;
  if (n) qsort(st->all, n, sizeof *st->all, tensor_cmp);
  for (size_t i = 1; i < n; i++) {
    if (strcmp(st->all[i - 1].name, st->all[i].name) == 0) {
      if (st->all[i - 1].file == st->all[i].file)
        return xpi_err(XPI_ERR_FORMAT, "%s: tensor '%s' is defined twice", st->all[i].file, st->all[i].name);
      return xpi_err(XPI_ERR_FORMAT, "tensor '%s' is present in two shards: %s and %s", st->all[i].name,
                     st->all[i - 1].file, st->all[i].file);
    }
  }
  return XPI_OK;
}

xpi_status xpi_st_open_file(const char *path, xpi_safetensors **out) {
  *out = NULL;
  xpi_safetensors *st = calloc(1, sizeof *st);
  if (!st) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  xpi_status s = xpi_st_add_file(st, path);
  if (s == XPI_OK) s = xpi_st_finish(st);
  if (s != XPI_OK) {
    xpi_st_close(st);
    return s;
  }
  *out = st;
  return XPI_OK;
}

void xpi_st_close(xpi_safetensors *st) {
  if (!st) return;
  for (size_t i = 0; i < st->n_files; i++) {
    xpi_st_file *f = &st->files[i];
    for (size_t j = 0; j < f->n; j++) free((char *)f->tensors[j].name);
    free(f->tensors);
    xpi_unmap_file(&f->map);
    free(f->path);
  }
  free(st->files);
  free(st->all);
  free(st);
}

const xpi_st_tensor *xpi_st_find(const xpi_safetensors *st, const char *name) {
  if (!st || !name || !st->n) return NULL;
  xpi_st_tensor key;
  key.name = name;
  return bsearch(&key, st->all, st->n, sizeof *st->all, tensor_cmp);
}

size_t xpi_st_count(const xpi_safetensors *st) { return st ? st->n : 0; }

const xpi_st_tensor *xpi_st_at(const xpi_safetensors *st, size_t i) {
  return st && i < st->n ? &st->all[i] : NULL;
}

uint64_t xpi_st_total_bytes(const xpi_safetensors *st) { return st ? st->total : 0; }
