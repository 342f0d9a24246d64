/* Every rejection path of the safetensors reader and the sharded index, each with a crafted file; then a
 * deterministic mutation loop over a valid file's header that must never crash, leak or read out of bounds
 * (run under ASan: the mutated images are exact-size heap buffers, so any stray read is caught). */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "io/safetensors.h"
#include "io/safetensors_internal.h"
#include "st_build.h"

static char *g_dir;

/* Files rejected as malformed, kept for the reference check (check_reference_rejects). */
static char *g_kept[128];
static int g_nkept;
static void keep_or_remove(char *path, xpi_status code) {
  if (code == XPI_ERR_FORMAT && g_nkept < 128) g_kept[g_nkept++] = xpi_test_strf("%s", path);
  else remove(path);
}

/* Writes header+payload as dir/name and opens it: expects code, and a message naming the file and needle. */
static void expect_file(int line, const char *name, const char *header, size_t plen, xpi_status code,
                        const char *needle) {
  char *path = xpi_test_strf("%s/%s", g_dir, name);
  unsigned char *payload = calloc(1, plen + 1);
  CHECK(st_write(path, header, payload, plen) == 0, "write %s", path);
  xpi_safetensors *st = (xpi_safetensors *)1;
  xpi_status s = xpi_st_open_file(path, &st);
  const char *msg = xpi_last_error();
  CHECK(s == code && st == NULL && strstr(msg, path) && strstr(msg, needle),
        "case at line %d (%s): got %s \"%s\", want %s naming the file and \"%s\"", line, name, xpi_status_name(s),
        msg, xpi_status_name(code), needle);
  if (s == XPI_OK) xpi_st_close(st);
  keep_or_remove(path, code);
  free(payload);
  free(path);
}
#define BAD(name, header, plen, code, needle) expect_file(__LINE__, name, header, plen, code, needle)

/* A raw image whose 8-byte length may lie. */
static void expect_raw(int line, const char *name, const char *header, size_t hlen, uint64_t declared, size_t plen,
                       const char *needle) {
  char *path = xpi_test_strf("%s/%s", g_dir, name);
  unsigned char *payload = calloc(1, plen + 1);
  size_t len;
  unsigned char *img = st_image(header, hlen, declared, payload, plen, &len);
  CHECK(xpi_test_write_file(path, img, len) == 0, "write");
  xpi_safetensors *st = NULL;
  xpi_status s = xpi_st_open_file(path, &st);
  const char *msg = xpi_last_error();
  CHECK(s == XPI_ERR_FORMAT && strstr(msg, path) && strstr(msg, needle),
        "case at line %d (%s): got %s \"%s\", want XPI_ERR_FORMAT naming the file and \"%s\"", line, name,
        xpi_status_name(s), msg, needle);
  xpi_st_close(st);
  keep_or_remove(path, XPI_ERR_FORMAT);
  free(img);
  free(payload);
  free(path);
}
#define RAW(name, header, hlen, declared, plen, needle) expect_raw(__LINE__, name, header, hlen, declared, plen, needle)

static void header_cases(void) {
  /* Too small for the length prefix, including an empty file. */
  char *path = xpi_test_strf("%s/short.safetensors", g_dir);
  CHECK(xpi_test_write_file(path, "\x02\0\0\0", 4) == 0, "write");
  xpi_safetensors *st = NULL;
  CHECK_ERR(xpi_st_open_file(path, &st), XPI_ERR_FORMAT, "too small");
  CHECK(strstr(xpi_last_error(), path) != NULL, "names file: %s", xpi_last_error());
  CHECK(xpi_test_write_file(path, "", 0) == 0, "write");
  CHECK_ERR(xpi_st_open_file(path, &st), XPI_ERR_FORMAT, "too small");
  remove(path);
  free(path);

  RAW("len1.safetensors", "{}", 2, 1, 0, "header length 1");
  RAW("len0.safetensors", "{}", 2, 0, 0, "header length 0");
  RAW("lenbig.safetensors", "{}", 2, 3, 0, "header length 3");
  RAW("lenhuge.safetensors", "{}", 2, UINT64_MAX, 0, "header length");
  RAW("nul.safetensors", "{\"a\0\":1}", 8, 8, 0, "NUL");
  BAD("array.safetensors", "[]", 0, XPI_ERR_FORMAT, "header is not a JSON object");
  BAD("string.safetensors", "\"{}\"", 0, XPI_ERR_FORMAT, "header is not a JSON object");
  BAD("notjson.safetensors", "{\"w\":", 0, XPI_ERR_FORMAT, "not valid JSON");
  BAD("trailing.safetensors", "{} x", 0, XPI_ERR_FORMAT, "after the header JSON");
  BAD("trailing2.safetensors", "{}{}", 0, XPI_ERR_FORMAT, "after the header JSON");
  BAD("meta_array.safetensors", "{\"__metadata__\":[]}", 0, XPI_ERR_FORMAT, "__metadata__");
  BAD("meta_num.safetensors", "{\"__metadata__\":{\"format\":1}}", 0, XPI_ERR_FORMAT, "\"format\"");
  BAD("meta_twice.safetensors", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, XPI_ERR_FORMAT, "twice");
  /* Valid header, payload bytes no tensor claims. */
  BAD("uncovered.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8, XPI_ERR_FORMAT,
      "payload");
  BAD("uncovered0.safetensors", "{}", 1, XPI_ERR_FORMAT, "payload");

  /* Header length above the 100 MB cap: a sparse file, so the test stays small on disk. */
  char *big = xpi_test_strf("%s/cap.safetensors", g_dir);
  int fd = open(big, O_CREAT | O_TRUNC | O_WRONLY, 0600);
  uint64_t hl = 100000001;
  unsigned char le[8];
  for (int i = 0; i < 8; i++) le[i] = (unsigned char)(hl >> (8 * i));
  CHECK(fd >= 0 && write(fd, le, 8) == 8 && write(fd, "{}", 2) == 2 && ftruncate(fd, (off_t)(8 + hl + 16)) == 0,
        "sparse file");
  if (fd >= 0) close(fd);
  CHECK_ERR(xpi_st_open_file(big, &st), XPI_ERR_FORMAT, "header length 100000001");
  remove(big);
  free(big);
}

#define T(body) "{\"w\":" body "}"
static void tensor_cases(void) {
  BAD("not_obj.safetensors", T("3"), 0, XPI_ERR_FORMAT, "'w': entry is not a JSON object");
  BAD("no_dtype.safetensors", T("{\"shape\":[1],\"data_offsets\":[0,4]}"), 4, XPI_ERR_FORMAT, "'w': \"dtype\"");
  BAD("dtype_num.safetensors", T("{\"dtype\":5,\"shape\":[1],\"data_offsets\":[0,4]}"), 4, XPI_ERR_FORMAT,
      "'w': \"dtype\"");
  BAD("dtype_unknown.safetensors", T("{\"dtype\":\"F17\",\"shape\":[1],\"data_offsets\":[0,4]}"), 4, XPI_ERR_FORMAT,
      "'w': unknown dtype \"F17\"");
  BAD("dtype_lower.safetensors", T("{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}"), 4, XPI_ERR_FORMAT,
      "unknown dtype");
  BAD("dtype_i64.safetensors", T("{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}"), 8, XPI_ERR_UNSUPPORTED,
      "'w': dtype I64 is not supported");
  BAD("dtype_f8.safetensors", T("{\"dtype\":\"F8_E4M3\",\"shape\":[1],\"data_offsets\":[0,1]}"), 1,
      XPI_ERR_UNSUPPORTED, "'w': dtype F8_E4M3");
  BAD("dtype_bool.safetensors", T("{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[0,1]}"), 1,
      XPI_ERR_UNSUPPORTED, "dtype BOOL");
  BAD("no_shape.safetensors", T("{\"dtype\":\"F32\",\"data_offsets\":[0,4]}"), 4, XPI_ERR_FORMAT, "'w': \"shape\"");
  BAD("shape_obj.safetensors", T("{\"dtype\":\"F32\",\"shape\":{},\"data_offsets\":[0,4]}"), 4, XPI_ERR_FORMAT,
      "'w': \"shape\"");
  BAD("shape_neg.safetensors", T("{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}"), 4, XPI_ERR_FORMAT,
      "'w': shape[0]");
  BAD("shape_frac.safetensors", T("{\"dtype\":\"F32\",\"shape\":[2,1.5],\"data_offsets\":[0,12]}"), 12,
      XPI_ERR_FORMAT, "'w': shape[1]");
  BAD("shape_str.safetensors", T("{\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]}"), 4, XPI_ERR_FORMAT,
      "'w': shape[0]");
  BAD("shape_huge.safetensors", T("{\"dtype\":\"F32\",\"shape\":[1e300],\"data_offsets\":[0,4]}"), 4,
      XPI_ERR_FORMAT, "'w': shape[0]");
  BAD("ndim9.safetensors", T("{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}"), 4,
      XPI_ERR_UNSUPPORTED, "'w': 9 dimensions");
  BAD("overflow.safetensors",
      T("{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,4]}"), 4,
      XPI_ERR_FORMAT, "'w': shape's element count overflows");
  BAD("overflow2.safetensors", T("{\"dtype\":\"F32\",\"shape\":[4503599627370496,4096],\"data_offsets\":[0,4]}"),
      4, XPI_ERR_FORMAT, "'w': shape's element count overflows");
  /* 2^62 elements fit in 64 bits, 2^62 * 4 bytes do not. */
  BAD("overflow3.safetensors", T("{\"dtype\":\"F32\",\"shape\":[4503599627370496,1024],\"data_offsets\":[0,4]}"),
      4, XPI_ERR_FORMAT, "'w': shape's element count overflows");
  /* 2^32 * 2^32 wraps to 0 in 64 bits: must not be taken as an empty tensor. */
  BAD("wrap0.safetensors", T("{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}"), 0,
      XPI_ERR_FORMAT, "'w': shape's element count overflows");
  BAD("no_offsets.safetensors", T("{\"dtype\":\"F32\",\"shape\":[1]}"), 4, XPI_ERR_FORMAT, "'w': \"data_offsets\"");
  BAD("offsets_1.safetensors", T("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4]}"), 4, XPI_ERR_FORMAT,
      "'w': \"data_offsets\"");
  BAD("offsets_3.safetensors", T("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}"), 8, XPI_ERR_FORMAT,
      "'w': \"data_offsets\"");
  BAD("offsets_neg.safetensors", T("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}"), 4, XPI_ERR_FORMAT,
      "'w': \"data_offsets\" are not");
  BAD("offsets_str.safetensors", T("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[\"0\",4]}"), 4,
      XPI_ERR_FORMAT, "'w': \"data_offsets\" are not");
  BAD("reversed.safetensors", T("{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,0]}"), 4, XPI_ERR_FORMAT,
      "'w': data_offsets [4, 0]");
  BAD("past_end.safetensors", T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"), 4, XPI_ERR_FORMAT,
      "'w': data_offsets [0, 8] outside the 4-byte payload");
  BAD("far_past_end.safetensors", T("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[9007199254740988,9007199254740992]}"),
      4, XPI_ERR_FORMAT, "'w': data_offsets");
  BAD("size_mismatch.safetensors", T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,6]}"), 6, XPI_ERR_FORMAT,
      "'w': data_offsets span 6 bytes, dtype F32 x shape needs 8");
  BAD("bf16_mismatch.safetensors", T("{\"dtype\":\"BF16\",\"shape\":[3,2],\"data_offsets\":[0,24]}"), 24,
      XPI_ERR_FORMAT, "'w': data_offsets span 24 bytes, dtype BF16 x shape needs 12");
  BAD("field_twice.safetensors", T("{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}"), 4,
      XPI_ERR_FORMAT, "'w': field \"dtype\" given twice");
  /* Two tensors: a gap, an overlap, the same bytes twice, a duplicate name. */
  BAD("gap.safetensors",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
      "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
      12, XPI_ERR_FORMAT, "'w': data_offsets begin at 8 but the previous tensor ends at 4");
  BAD("late_start.safetensors", T("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}"), 8, XPI_ERR_FORMAT,
      "'w': data_offsets begin at 4 but the previous tensor ends at 0");
  BAD("overlap.safetensors",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
      12, XPI_ERR_FORMAT, "'w': data_offsets begin at 4 but the previous tensor ends at 8");
  BAD("aliased.safetensors",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
      "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
      4, XPI_ERR_FORMAT, "previous tensor ends at 4");
  BAD("dup.safetensors",
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
      "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
      8, XPI_ERR_FORMAT, "tensor 'w' is defined twice");

  /* And what must be accepted (as by the Python safetensors library): leading/trailing whitespace, zero-size
   * tensors sharing an offset, a scalar, metadata, unknown fields in an entry, any order of entries. */
  char *path = xpi_test_strf("%s/good.safetensors", g_dir);
  const char *good =
      " \n{\"__metadata__\":{\"format\":\"pt\"},\"e\":{\"dtype\":\"F16\",\"shape\":[0,3],\"data_offsets\":[0,0]},"
      "\"z\":{\"dtype\":\"F32\",\"shape\":[2,0],\"data_offsets\":[0,0]},"
      "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[6,10],\"note\":[1,{}]},"
      "\"h\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[0,6]}}     ";
  unsigned char payload[10] = {1, 2, 3, 4, 5, 6, 0, 0, 0x80, 0x3f};
  CHECK(st_write(path, good, payload, sizeof payload) == 0, "write");
  xpi_safetensors *st = NULL;
  CHECK_OK(xpi_st_open_file(path, &st));
  if (st) {
    const xpi_st_tensor *s = xpi_st_find(st, "s"), *e = xpi_st_find(st, "e"), *h = xpi_st_find(st, "h");
    float one = 0;
    if (s) memcpy(&one, s->data, 4);
    CHECK(s && s->ndim == 0 && s->nbytes == 4 && one == 1.0f, "scalar");
    CHECK(e && e->ndim == 2 && e->nbytes == 0 && e->dtype == XPI_DT_F16, "empty tensor");
    CHECK(h && h->nbytes == 6 && memcmp(h->data, payload, 6) == 0 && h->dtype == XPI_DT_BF16, "bf16");
    CHECK(xpi_st_count(st) == 4 && xpi_st_total_bytes(st) == 10, "count");
  }
  xpi_st_close(st);
  st = NULL;
  CHECK(st_write(path, "{\"__metadata__\":null,\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                 payload, 4) == 0,
        "write");
  CHECK_OK(xpi_st_open_file(path, &st)); /* null metadata and an empty name, both accepted by the reference */
  CHECK(st && xpi_st_count(st) == 1 && xpi_st_find(st, "") != NULL, "empty name");
  xpi_st_close(st);
  remove(path);
  free(path);
}

/* ---- sharded checkpoints ---- */

#define ONE_W "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}"
#define ONE_V "{\"v\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}"

/* A fresh folder with shards a.safetensors (w) and b.safetensors (v, or what b_header says) and the index. */
static void expect_index(int line, const char *index, const char *b_header, xpi_status code, const char *n1,
                         const char *n2) {
  char *dir = xpi_test_tmpdir("badindex");
  char *a = xpi_test_strf("%s/a.safetensors", dir), *b = xpi_test_strf("%s/b.safetensors", dir);
  char *ip = xpi_test_strf("%s/model.safetensors.index.json", dir);
  unsigned char z[4] = {0};
  CHECK(st_write(a, ONE_W, z, 4) == 0 && st_write(b, b_header, z, 4) == 0 &&
            xpi_test_write_file(ip, index, strlen(index)) == 0,
        "write");
  xpi_safetensors *st = (xpi_safetensors *)1;
  xpi_status s = xpi_st_open_dir(dir, &st);
  const char *msg = xpi_last_error();
  CHECK(s == code && (s == XPI_OK) == (st != NULL) && strstr(msg, n1) && strstr(msg, n2),
        "index case at line %d: got %s \"%s\", want %s with \"%s\" and \"%s\"", line, xpi_status_name(s), msg,
        xpi_status_name(code), n1, n2);
  if (s == XPI_OK) xpi_st_close(st);
  remove(a);
  remove(b);
  remove(ip);
  remove(dir);
  free(a);
  free(b);
  free(ip);
  free(dir);
}
#define IDX(index, b, code, n1, n2) expect_index(__LINE__, index, b, code, n1, n2)

static void index_cases(void) {
  const char *ix = "model.safetensors.index.json";
  /* The well-formed case first, so the failures below are known to come from the one thing changed. */
  IDX("{\"weight_map\":{\"w\":\"a.safetensors\",\"v\":\"b.safetensors\"}}", ONE_V, XPI_OK, "", "");
  IDX("{\"weight_map\":{\"w\":\"a.safetensors\",\"v\":\"../b.safetensors\"}}", ONE_V, XPI_ERR_FORMAT, ix, "'v'");
  IDX("{\"weight_map\":{\"w\":\"a.safetensors\",\"v\":\"sub/b.safetensors\"}}", ONE_V, XPI_ERR_FORMAT, ix,
      "\"sub/b.safetensors\" is not a plain file name");
  IDX("{\"weight_map\":{\"w\":\"a.safetensors\",\"v\":\"/etc/passwd\"}}", ONE_V, XPI_ERR_FORMAT, ix, "'v'");
  IDX("{\"weight_map\":{\"w\":\"a.safetensors\",\"v\":\"..\"}}", ONE_V, XPI_ERR_FORMAT, ix, "'v'");
  IDX("{\"weight_map\":{\"w\":\"a.safetensors\",\"v\":\"\"}}", ONE_V, XPI_ERR_FORMAT, ix, "'v'");
  IDX("{\"weight_map\":{\"w\":\"a.safetensors\",\"v\":\"c.safetensors\"}}", ONE_V, XPI_ERR_NOT_FOUND, ix,
      "shard \"c.safetensors\" does not exist");
  /* Listed in a shard that lacks it; listed but in no shard; in two shards. */
  IDX("{\"weight_map\":{\"w\":\"a.safetensors\",\"v\":\"a.safetensors\",\"x\":\"b.safetensors\"}}", ONE_V,
      XPI_ERR_FORMAT, "'v' is listed in shard \"a.safetensors\" but that shard does not contain it", "b.safetensors");
  IDX("{\"weight_map\":{\"w\":\"a.safetensors\",\"v\":\"b.safetensors\",\"u\":\"b.safetensors\"}}", ONE_V,
      XPI_ERR_FORMAT, ix, "'u' is listed in shard \"b.safetensors\"");
  IDX("{\"weight_map\":{\"w\":\"a.safetensors\",\"v\":\"b.safetensors\"}}", ONE_W, XPI_ERR_FORMAT,
      "tensor 'w' is present in two shards", "b.safetensors");
  IDX("{\"weight_map\":{\"w\":\"a.safetensors\",\"v\":3}}", ONE_V, XPI_ERR_FORMAT, ix, "'v'");
  IDX("{\"weight_map\":[]}", ONE_V, XPI_ERR_FORMAT, ix, "weight_map");
  IDX("{\"metadata\":{}}", ONE_V, XPI_ERR_FORMAT, ix, "weight_map");
  IDX("{\"weight_map\":{}}", ONE_V, XPI_ERR_FORMAT, ix, "no tensors");
  IDX("[]", ONE_V, XPI_ERR_FORMAT, ix, "weight_map");
  IDX("{\"weight_map\":", ONE_V, XPI_ERR_FORMAT, ix, "invalid JSON");
  /* A broken shard is reported with the shard's own path and tensor. */
  IDX("{\"weight_map\":{\"w\":\"a.safetensors\",\"v\":\"b.safetensors\"}}",
      "{\"v\":{\"dtype\":\"I8\",\"shape\":[4],\"data_offsets\":[0,4]}}", XPI_ERR_UNSUPPORTED, "b.safetensors",
      "'v': dtype I8");

  /* A folder with no weights at all. */
  char *dir = xpi_test_tmpdir("noweights");
  xpi_safetensors *st = NULL;
  CHECK_ERR(xpi_st_open_dir(dir, &st), XPI_ERR_NOT_FOUND, "no model.safetensors");
  CHECK(strstr(xpi_last_error(), dir) != NULL, "names the folder: %s", xpi_last_error());
  char *bin = xpi_test_strf("%s/pytorch_model.bin", dir);
  CHECK(xpi_test_write_file(bin, "PK", 2) == 0, "write");
  CHECK_ERR(xpi_st_open_dir(dir, &st), XPI_ERR_UNSUPPORTED, "only safetensors weights are supported");
  remove(bin);
  free(bin);
  remove(dir);
  free(dir);
  CHECK_ERR(xpi_st_open_file("/nonexistent/model.safetensors", &st), XPI_ERR_IO, "/nonexistent/model.safetensors");
}

/* ---- mutations ---- */

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n) { /* xorshift64*: deterministic across runs and machines */
  g_rng ^= g_rng >> 12;
  g_rng ^= g_rng << 25;
  g_rng ^= g_rng >> 27;
  return (uint32_t)((g_rng * 2685821657736338717ull) >> 32) % n;
}

/* Parses an exact-size heap copy; on success reads every tensor byte so ASan sees any out-of-range pointer. */
static int parse_image(const unsigned char *img, size_t len, unsigned *sum) {
  unsigned char *buf = malloc(len ? len : 1);
  if (len) memcpy(buf, img, len);
  xpi_st_tensor *ts = NULL;
  size_t n = 0;
  uint64_t payload = 0;
  xpi_status s = xpi_st_parse_header("mutant.safetensors", buf, len, &ts, &n, &payload);
  if (s == XPI_OK) {
    for (size_t i = 0; i < n; i++) {
      const unsigned char *p = ts[i].data;
      CHECK(p >= buf && p + ts[i].nbytes <= buf + len, "tensor %s outside the image", ts[i].name);
      for (size_t k = 0; k < ts[i].nbytes; k++) *sum += p[k];
      free((char *)ts[i].name);
    }
    free(ts);
  } else {
    CHECK(ts == NULL && strstr(xpi_last_error(), "mutant.safetensors") != NULL, "error must name the file: %s",
          xpi_last_error());
  }
  free(buf);
  return s == XPI_OK;
}

static void mutation_loop(void) {
  const char *hdr =
      "{\"__metadata__\":{\"format\":\"pt\"},"
      "\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
      "\"b.weight\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[16,22]},"
      "\"c.bias\":{\"dtype\":\"BF16\",\"shape\":[1,1,2],\"data_offsets\":[22,26]}}  ";
  unsigned char payload[26];
  for (int i = 0; i < 26; i++) payload[i] = (unsigned char)(i * 7 + 1);
  size_t len;
  unsigned char *img = st_image(hdr, strlen(hdr), strlen(hdr), payload, sizeof payload, &len);
  unsigned sum = 0;
  CHECK(parse_image(img, len, &sum), "the unmutated image must parse: %s", xpi_last_error());
  size_t hend = 8 + strlen(hdr);
  static const char alphabet[] = "{}[]\",:0123456789-.eE \\u\x01\xff" "FBI";
  int accepted = 0;
  unsigned char *m = malloc(len + 16);
  for (int it = 0; it < 3000; it++) {
    memcpy(m, img, len);
    size_t mlen = len;
    int edits = 1 + (int)rnd(3);
    for (int e = 0; e < edits; e++) {
      switch (rnd(6)) {
        case 0: /* flip a bit anywhere in length prefix + header */
          m[rnd((uint32_t)hend)] ^= (unsigned char)(1u << rnd(8));
          break;
        case 1: /* replace a header byte with a JSON-significant one */
          m[8 + rnd((uint32_t)(hend - 8))] = (unsigned char)alphabet[rnd(sizeof alphabet - 1)];
          break;
        case 2: /* truncate */
          mlen = rnd((uint32_t)mlen + 1);
          break;
        case 3: /* change one byte of the length prefix */
          m[rnd(8)] = (unsigned char)rnd(256);
          break;
        case 4: /* digit changes: offsets and shapes off by a little */
          for (size_t k = 8; k < hend && k < mlen; k++)
            if (m[k] >= '0' && m[k] <= '9' && rnd(8) == 0) m[k] = (unsigned char)('0' + rnd(10));
          break;
        case 5: /* delete a header byte (the declared length then overshoots by one) */
          if (mlen > 9) {
            size_t at = 8 + rnd((uint32_t)(mlen - 8));
            memmove(m + at, m + at + 1, mlen - at - 1);
            mlen--;
          }
          break;
      }
    }
    accepted += parse_image(m, mlen, &sum);
  }
  free(m);
  free(img);
  /* Some mutations (e.g. inside "pt" or a name) keep the file valid; most must be rejected. */
  CHECK(accepted > 0 && accepted < 1500, "accepted %d of 3000 mutants", accepted);
  printf("mutation loop: %d of 3000 mutants accepted (checksum %u)\n", accepted, sum);
}

/* The index is untrusted too: mutate its text and open the folder; any outcome but a crash or leak is fine,
 * and a success must still list exactly the two tensors. */
static void index_mutation_loop(void) {
  char *dir = xpi_test_tmpdir("idxfuzz");
  char *a = xpi_test_strf("%s/a.safetensors", dir), *b = xpi_test_strf("%s/b.safetensors", dir);
  char *ip = xpi_test_strf("%s/model.safetensors.index.json", dir);
  unsigned char z[4] = {0};
  CHECK(st_write(a, ONE_W, z, 4) == 0 && st_write(b, ONE_V, z, 4) == 0, "write");
  const char *index = "{\"metadata\":{\"total_size\":8},\"weight_map\":{\"w\":\"a.safetensors\",\"v\":\"b.safetensors\"}}";
  size_t n = strlen(index);
  char *m = malloc(n + 1);
  static const char alphabet[] = "{}[]\",:./ab0";
  int ok = 0;
  for (int it = 0; it < 300; it++) {
    memcpy(m, index, n + 1);
    for (int e = 0, k = 1 + (int)rnd(2); e < k; e++) m[rnd((uint32_t)n)] = alphabet[rnd(sizeof alphabet - 1)];
    CHECK(xpi_test_write_file(ip, m, n) == 0, "write");
    xpi_safetensors *st = NULL;
    if (xpi_st_open_dir(dir, &st) == XPI_OK) {
      ok++;
      CHECK(xpi_st_count(st) == 2, "mutated index accepted with %zu tensors: %s", xpi_st_count(st), m);
      xpi_st_close(st);
    } else {
      CHECK(st == NULL && strlen(xpi_last_error()) > 0, "failure without a message");
    }
  }
  CHECK(ok > 0 && ok < 300, "index mutation loop accepted %d of 300", ok);
  printf("index mutation loop: %d of 300 accepted\n", ok);
  free(m);
  remove(a);
  remove(b);
  remove(ip);
  remove(dir);
  free(a);
  free(b);
  free(ip);
  free(dir);
}

/* Every file rejected above as malformed must be rejected by the Python safetensors library too: our
 * format rules are the spec's, not stricter. */
static void check_reference_rejects(void) {
  const char *py = getenv("XPI_PYTHON");
  CHECK(py && *py, "XPI_PYTHON is not set");
  size_t len = 0;
  for (int i = 0; i < g_nkept; i++) len += strlen(g_kept[i]) + 3;
  char *cmd = xpi_test_strf("'%s' '%s/tests/io/st_reference.py' --verdicts", py ? py : "python3",
                            xpi_test_env("XPI_SOURCE_DIR"));
  char *all = malloc(strlen(cmd) + len + 1);
  strcpy(all, cmd);
  for (int i = 0; i < g_nkept; i++) strcat(strcat(strcat(all, " '"), g_kept[i]), "'");
  FILE *p = popen(all, "r");
  char verdict[16], path[1024];
  int n = 0;
  while (p && fscanf(p, "%15s %1023s", verdict, path) == 2) {
    n++;
    CHECK(strcmp(verdict, "REJECT") == 0, "the reference accepts %s, which we reject", path);
  }
  CHECK(p && pclose(p) == 0 && n == g_nkept, "reference check ran on %d of %d files", n, g_nkept);
  for (int i = 0; i < g_nkept; i++) {
    remove(g_kept[i]);
    free(g_kept[i]);
  }
  free(all);
  free(cmd);
}

int main(void) {
  g_dir = xpi_test_tmpdir("badst");
  header_cases();
  tensor_cases();
  check_reference_rejects();
  index_cases();
  mutation_loop();
  index_mutation_loop();
  remove(g_dir);
  free(g_dir);
  return xpi_test_done();
}
