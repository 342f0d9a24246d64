/* safetensors reader on real files.
 * - Every tensor of tinyfortunes, the random models and tests/data/models is compared with the Python
 *   `safetensors` library's own parse (st_reference.py): dtype, shape, a checksum of every byte, and three
 *   element values. Exact equality: both sides read the same bytes and convert bf16/f16 to f32 exactly.
 * - Shapes must agree with config.json (the loader's two halves checked against each other).
 * - A few values are also hardcoded (verified once with numpy) so the test fails even if Python misbehaves.
 * - A sharded copy (3 shards + index, headers padded so tensor data is unaligned) loads byte-identical. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "st_build.h"

static uint64_t checksum(const unsigned char *p, size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; i++) s += (uint64_t)p[i] * (uint64_t)(i % 65521 + 1);
  return s;
}

static const char *dt_name(xpi_dtype d) {
  return d == XPI_DT_F32 ? "F32" : d == XPI_DT_F16 ? "F16" : d == XPI_DT_BF16 ? "BF16" : "?";
}

static float half_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023, bits;
  if (e == 0) {
    if (m == 0) {
      bits = sign;
    } else { /* subnormal: normalize */
      e = 127 - 15 + 1;
      while (!(m & 1024)) { m <<= 1; e--; }
      bits = sign | e << 23 | (m & 1023) << 13;
    }
  } else if (e == 31) {
    bits = sign | 0xFFu << 23 | m << 13;
  } else {
    bits = sign | (e + 127 - 15) << 23 | m << 13;
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* Element i as f32; data may be unaligned, hence memcpy. */
static float elem(const xpi_st_tensor *t, size_t i) {
  const unsigned char *p = t->data;
  if (t->dtype == XPI_DT_F32) {
    float f;
    memcpy(&f, p + 4 * i, 4);
    return f;
  }
  uint16_t h;
  memcpy(&h, p + 2 * i, 2);
  if (t->dtype == XPI_DT_F16) return half_to_f32(h);
  uint32_t b = (uint32_t)h << 16;
  float f;
  memcpy(&f, &b, 4);
  return f;
}

static size_t nelem(const xpi_st_tensor *t) {
  size_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= (size_t)t->shape[i];
  return n;
}

static int same_value(float got, const char *want) {
  if (strcmp(want, "-") == 0) return 0;
  float w = strtof(want, NULL); /* %.9g round-trips float32 exactly */
  return memcmp(&got, &w, 4) == 0 || (got != got && w != w);
}

/* Compares every tensor of st with the reference dump of file made by st_reference.py. */
static void compare_with_python(const char *file, const xpi_safetensors *st) {
  const char *py = getenv("XPI_PYTHON");
  if (!py || !*py) {
    CHECK(0, "XPI_PYTHON is not set; cannot run the safetensors reference");
    return;
  }
  char *cmd = xpi_test_strf("'%s' '%s/tests/io/st_reference.py' '%s'", py, xpi_test_env("XPI_SOURCE_DIR"), file);
  FILE *p = popen(cmd, "r");
  CHECK(p != NULL, "cannot run %s", cmd);
  size_t lines = 0;
  char name[512], dtype[16], dims[256], v[3][64];
  unsigned long long sum;
  while (p && fscanf(p, "%511s %15s %255s %llu %63s %63s %63s", name, dtype, dims, &sum, v[0], v[1], v[2]) == 7) {
    lines++;
    const xpi_st_tensor *t = xpi_st_find(st, name);
    CHECK(t != NULL, "%s: tensor %s missing", file, name);
    if (!t) continue;
    CHECK(strcmp(dt_name(t->dtype), dtype) == 0, "%s: %s dtype %s, reference %s", file, name, dt_name(t->dtype),
          dtype);
    char mine[256] = "-";
    size_t k = 0;
    for (int i = 0; i < t->ndim; i++)
      k += (size_t)snprintf(mine + k, sizeof mine - k, "%s%lld", i ? "," : "", (long long)t->shape[i]);
    CHECK(strcmp(mine, dims) == 0, "%s: %s shape %s, reference %s", file, name, mine, dims);
    CHECK(checksum(t->data, t->nbytes) == sum, "%s: %s checksum differs", file, name);
    size_t n = nelem(t);
    CHECK(t->nbytes == n * (t->dtype == XPI_DT_F32 ? 4 : 2), "%s: %s nbytes %zu", file, name, t->nbytes);
    if (n) {
      size_t at[3] = {0, n / 2, n - 1};
      for (int j = 0; j < 3; j++)
        CHECK(same_value(elem(t, at[j]), v[j]), "%s: %s[%zu] = %.9g, reference %s", file, name, at[j],
              elem(t, at[j]), v[j]);
    }
  }
  int rc = p ? pclose(p) : -1;
  CHECK(rc == 0, "reference script failed (%d): %s", rc, cmd);
  CHECK(lines == xpi_st_count(st), "%s: reference lists %zu tensors, we have %zu", file, lines, xpi_st_count(st));
  free(cmd);
}

/* One tensor's shape as config.json implies it (ndim 1 or 2). */
static int expect(const xpi_safetensors *st, const char *name, int64_t d0, int64_t d1, int required) {
  const xpi_st_tensor *t = xpi_st_find(st, name);
  if (!t) {
    CHECK(!required, "tensor %s missing", name);
    return 0;
  }
  if (d1 == 0) CHECK(t->ndim == 1 && t->shape[0] == d0, "%s: want [%lld]", name, (long long)d0);
  else CHECK(t->ndim == 2 && t->shape[0] == d0 && t->shape[1] == d1, "%s: want [%lld, %lld]", name, (long long)d0,
             (long long)d1);
  return 1;
}

/* Every tensor the config implies is there with the implied shape, and nothing else. */
static void check_against_config(const char *dir, const xpi_safetensors *st) {
  xpi_config c;
  xpi_status s = xpi_config_load(dir, &c);
  CHECK(s == XPI_OK, "%s: %s", dir, xpi_last_error());
  if (s != XPI_OK) return;
  int64_t H = c.hidden_size, q = (int64_t)c.n_heads * c.head_dim, kv = (int64_t)c.n_kv_heads * c.head_dim;
  size_t n = 0;
  n += (size_t)expect(st, "model.embed_tokens.weight", c.vocab_size, H, 1);
  n += (size_t)expect(st, "lm_head.weight", c.vocab_size, H, !c.tie_word_embeddings);
  n += (size_t)expect(st, "model.norm.weight", H, 0, 1);
  for (int l = 0; l < c.n_layers; l++) {
    char nm[128];
#define L(suffix, d0, d1, req)                                               \
  do {                                                                       \
    snprintf(nm, sizeof nm, "model.layers.%d.%s", l, suffix);                \
    n += (size_t)expect(st, nm, d0, d1, req);                                \
  } while (0)
    L("input_layernorm.weight", H, 0, 1);
    L("post_attention_layernorm.weight", H, 0, 1);
    L("self_attn.q_proj.weight", q, H, 1);
    L("self_attn.k_proj.weight", kv, H, 1);
    L("self_attn.v_proj.weight", kv, H, 1);
    L("self_attn.o_proj.weight", H, q, 1);
    L("mlp.gate_proj.weight", c.intermediate_size, H, 1);
    L("mlp.up_proj.weight", c.intermediate_size, H, 1);
    L("mlp.down_proj.weight", H, c.intermediate_size, 1);
    if (c.qk_norm) {
      L("self_attn.q_norm.weight", c.head_dim, 0, 1);
      L("self_attn.k_norm.weight", c.head_dim, 0, 1);
    }
    if (c.attention_bias) {
      L("self_attn.q_proj.bias", q, 0, 1);
      L("self_attn.k_proj.bias", kv, 0, 1);
      L("self_attn.v_proj.bias", kv, 0, 1);
    }
    if (c.o_proj_bias) L("self_attn.o_proj.bias", H, 0, 1);
#undef L
  }
  CHECK(n == xpi_st_count(st), "%s: config implies %zu tensors, file has %zu", dir, n, xpi_st_count(st));
  for (size_t i = 0; i < xpi_st_count(st); i++) {
    const xpi_st_tensor *t = xpi_st_at(st, i);
    CHECK(t->dtype == c.torch_dtype, "%s: %s dtype differs from config's", dir, t->name);
  }
}

/* Lookup agrees with iteration; names are sorted and unique; data lies inside the file's payload. */
static void check_table(const xpi_safetensors *st) {
  uint64_t sum = 0;
  for (size_t i = 0; i < xpi_st_count(st); i++) {
    const xpi_st_tensor *t = xpi_st_at(st, i);
    CHECK(xpi_st_find(st, t->name) == t, "find(%s) != at(%zu)", t->name, i);
    if (i) CHECK(strcmp(xpi_st_at(st, i - 1)->name, t->name) < 0, "not sorted at %zu", i);
    sum += t->nbytes;
  }
  CHECK(sum == xpi_st_total_bytes(st), "sum of tensor bytes %llu != total %llu", (unsigned long long)sum,
        (unsigned long long)xpi_st_total_bytes(st));
  CHECK(xpi_st_at(st, xpi_st_count(st)) == NULL, "at(count) must be NULL");
  CHECK(xpi_st_find(st, "no.such.tensor") == NULL, "find of an absent name must be NULL");
  CHECK(xpi_st_find(st, "") == NULL, "find of an empty name must be NULL");
}

static void check_model(const char *dir, int with_python) {
  xpi_safetensors *st = NULL;
  xpi_status s = xpi_st_open_dir(dir, &st);
  CHECK(s == XPI_OK, "%s: %s", dir, xpi_last_error());
  if (s != XPI_OK) return;
  check_table(st);
  check_against_config(dir, st);
  if (with_python) {
    char *file = xpi_test_strf("%s/model.safetensors", dir);
    compare_with_python(file, st);
    free(file);
  }
  xpi_st_close(st);
}

/* Known values, verified with numpy (st_reference.py) once. */
static void check_known_values(const char *tiny, const char *models) {
  xpi_safetensors *st = NULL;
  char *file = xpi_test_strf("%s/model.safetensors", tiny);
  CHECK_OK(xpi_st_open_file(file, &st));
  if (st) {
    CHECK(xpi_st_count(st) == 46, "tinyfortunes tensors: %zu", xpi_st_count(st));
    CHECK(xpi_st_total_bytes(st) == 8394240, "tinyfortunes bytes");
    const xpi_st_tensor *t = xpi_st_find(st, "model.embed_tokens.weight");
    CHECK(t && t->dtype == XPI_DT_BF16 && t->ndim == 2 && t->shape[0] == 4096 && t->shape[1] == 256, "embed");
    if (t) {
      CHECK(checksum(t->data, t->nbytes) == 8405604776453ull, "embed checksum");
      CHECK(elem(t, 0) == 0.14453125f && elem(t, 4096 * 256 / 2) == -0.0859375f &&
                elem(t, 4096 * 256 - 1) == 0.0205078125f, "embed values");
    }
    t = xpi_st_find(st, "model.layers.0.input_layernorm.weight");
    CHECK(t && checksum(t->data, t->nbytes) == 15421701ull && elem(t, 0) == 0.458984375f, "layernorm 0");
    CHECK(t && strcmp(t->file, file) == 0, "tensor file");
  }
  xpi_st_close(st);
  free(file);

  /* 1.2 GB: checked through the header and two small tensors only (the Python reference would read it all). */
  char *big = xpi_test_strf("%s/qwen3-0.6b-rand", models);
  st = NULL;
  CHECK_OK(xpi_st_open_dir(big, &st));
  if (st) {
    CHECK(xpi_st_count(st) == 310, "0.6b count %zu", xpi_st_count(st));
    CHECK(xpi_st_total_bytes(st) == 1192099840ull, "0.6b bytes");
    const xpi_st_tensor *t = xpi_st_find(st, "model.norm.weight");
    CHECK(t && t->nbytes == 2048 && checksum(t->data, t->nbytes) == 197158450ull && elem(t, 0) == 1.0078125f &&
              elem(t, 512) == 0.984375f && elem(t, 1023) == 0.96484375f, "0.6b final norm");
    t = xpi_st_find(st, "model.layers.27.self_attn.k_norm.weight");
    CHECK(t && checksum(t->data, t->nbytes) == 3110186ull && elem(t, 127) == 1.015625f, "0.6b k_norm 27");
    xpi_st_close(st);
    check_model(big, 0);
  }
  free(big);
}

/* Writes tinyfortunes as 3 shards (round-robin, each header padded by a different odd amount so data is
 * unaligned) plus an index, and checks every tensor loads byte-identical from the right shard. */
static void check_sharded(const char *tiny) {
  xpi_safetensors *one = NULL, *sh = NULL;
  char *file = xpi_test_strf("%s/model.safetensors", tiny);
  CHECK_OK(xpi_st_open_file(file, &one));
  free(file);
  if (!one) return;
  char *dir = xpi_test_tmpdir("shards");
  enum { NS = 3 };
  cJSON *index = cJSON_CreateObject(), *wm = cJSON_AddObjectToObject(index, "weight_map");
  cJSON_AddObjectToObject(index, "metadata");
  size_t n = xpi_st_count(one);
  for (int s = 0; s < NS; s++) {
    char shard[64];
    snprintf(shard, sizeof shard, "model-%05d-of-%05d.safetensors", s + 1, NS);
    cJSON *h = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(h, "__metadata__");
    cJSON_AddStringToObject(meta, "format", "pt");
    size_t off = 0, plen = 0;
    for (size_t i = (size_t)s; i < n; i += NS) plen += xpi_st_at(one, i)->nbytes;
    unsigned char *payload = malloc(plen);
    for (size_t i = (size_t)s; i < n; i += NS) {
      const xpi_st_tensor *t = xpi_st_at(one, i);
      cJSON *e = cJSON_AddObjectToObject(h, t->name);
      cJSON_AddStringToObject(e, "dtype", dt_name(t->dtype));
      cJSON *shp = cJSON_AddArrayToObject(e, "shape");
      for (int d = 0; d < t->ndim; d++) cJSON_AddItemToArray(shp, cJSON_CreateNumber((double)t->shape[d]));
      cJSON *o = cJSON_AddArrayToObject(e, "data_offsets");
      cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
      cJSON_AddItemToArray(o, cJSON_CreateNumber((double)(off + t->nbytes)));
      memcpy(payload + off, t->data, t->nbytes);
      off += t->nbytes;
      cJSON_AddStringToObject(wm, t->name, shard);
    }
    char *js = cJSON_PrintUnformatted(h);
    /* Pad with spaces (as the spec allows) so the header length is 1, 3, 5 mod 8: odd, hence unaligned data. */
    int pad = (int)(((size_t)(2 * s + 1) + 8 - strlen(js) % 8) % 8);
    char *padded = xpi_test_strf("%s%.*s", js, pad, "        ");
    char *path = xpi_test_strf("%s/%s", dir, shard);
    CHECK(st_write(path, padded, payload, plen) == 0, "write %s", path);
    free(path);
    free(padded);
    free(js);
    free(payload);
    cJSON_Delete(h);
  }
  char *ij = cJSON_Print(index);
  char *ipath = xpi_test_strf("%s/model.safetensors.index.json", dir);
  CHECK(xpi_test_write_file(ipath, ij, strlen(ij)) == 0, "write index");
  free(ij);
  cJSON_Delete(index);

  CHECK_OK(xpi_st_open_dir(dir, &sh));
  if (sh) {
    CHECK(xpi_st_count(sh) == n, "sharded count %zu vs %zu", xpi_st_count(sh), n);
    CHECK(xpi_st_total_bytes(sh) == xpi_st_total_bytes(one), "sharded total bytes");
    check_table(sh);
    int unaligned = 0;
    for (size_t i = 0; i < n; i++) {
      const xpi_st_tensor *a = xpi_st_at(one, i), *b = xpi_st_find(sh, a->name);
      CHECK(b != NULL, "sharded: %s missing", a->name);
      if (!b) continue;
      CHECK(b->dtype == a->dtype && b->ndim == a->ndim && memcmp(b->shape, a->shape, sizeof a->shape) == 0 &&
                b->nbytes == a->nbytes && memcmp(b->data, a->data, a->nbytes) == 0,
            "sharded: %s differs", a->name);
      char want[64];
      snprintf(want, sizeof want, "model-%05d-of-%05d.safetensors", (int)(i % NS) + 1, NS);
      size_t fl = strlen(b->file), wl = strlen(want);
      CHECK(fl >= wl && strcmp(b->file + fl - wl, want) == 0, "sharded: %s in %s, want %s", a->name, b->file, want);
      unaligned |= ((uintptr_t)b->data & 1) != 0;
    }
    CHECK(unaligned, "the padded shards should have produced unaligned tensor data");
  }
  xpi_st_close(sh);
  xpi_st_close(one);
  /* Remove the folder (3 shards + index). */
  for (int s = 0; s < NS; s++) {
    char *p = xpi_test_strf("%s/model-%05d-of-%05d.safetensors", dir, s + 1, NS);
    remove(p);
    free(p);
  }
  remove(ipath);
  free(ipath);
  remove(dir);
  free(dir);
}

int main(void) {
  const char *src = xpi_test_env("XPI_SOURCE_DIR");
  const char *models = xpi_test_env("XPI_MODELS_DIR");
  char *tiny = xpi_test_strf("%s/examples/models/tinyfortunes", src);

  check_known_values(tiny, models);
  check_model(tiny, 1);
  check_sharded(tiny);

  /* The small random models of random_models.json, and the transformers-reference models in tests/data. */
  char *rm = xpi_test_strf("%s/goldens/random_models.json", xpi_test_env("XPI_TEST_DATA"));
  cJSON *j = xpi_test_load_json(rm);
  int checked = 0;
  for (cJSON *m = j->child; m; m = m->next) {
    if (strcmp(m->string, "qwen3-0.6b-rand") == 0) continue; /* above */
    char *dir = xpi_test_strf("%s/%s", models, m->string);
    check_model(dir, 1);
    checked++;
    free(dir);
  }
  CHECK(checked >= 4, "random_models.json lists %d small models", checked);
  cJSON_Delete(j);
  free(rm);
  const char *extra[] = {"llama3-rope", "mistral"};
  for (size_t i = 0; i < 2; i++) {
    char *dir = xpi_test_strf("%s/models/%s", xpi_test_env("XPI_TEST_DATA"), extra[i]);
    check_model(dir, 1);
    free(dir);
  }
  free(tiny);
  return xpi_test_done();
}
