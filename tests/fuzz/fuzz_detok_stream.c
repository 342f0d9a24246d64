/* Streaming decode (xpi_detok_stream_*) against the full decode, on arbitrary id sequences, with a byte-level
 * BPE tokenizer (the bundled tinyfortunes, Qwen-style) and a Llama 2 style one (Metaspace, <0xNN> byte
 * fallback; tests/data/tokenizers/llama2). Input: byte 0 picks the tokenizer (bit 0) and skip_special (bit 1);
 * then 2-byte little-endian values, each an id modulo the vocabulary (0xFFFx: an id outside it). Properties:
 * no crash, leak or undefined behaviour; an out-of-range id is refused; every piece is whole UTF-8 characters;
 * the pieces plus the flush are exactly xpi_detokenize() of the same ids with the same flag. */
#include "fuzz_common.h"
#include "xpuinfer.h"

#define MAX_IDS 256

static int valid_utf8(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!k || i + k > n) return 0;
    for (size_t j = 1; j < k; j++)
      if ((s[i + j] & 0xC0) != 0x80) return 0;
    i += k;
  }
  return 1;
}

static xpi_tokenizer *load(const char *dir) {
  xpi_tokenizer *t = NULL;
  if (xpi_tokenizer_load(dir, &t) != XPI_OK) {
    fprintf(stderr, "fuzz: loading %s: %s\n", dir, xpi_last_error());
    abort();
  }
  return t;
}

static xpi_tokenizer *g_tok[2];

static void free_toks(void) {
  for (int i = 0; i < 2; i++) xpi_tokenizer_free(g_tok[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!g_tok[0]) {
    g_tok[0] = load(XPI_FUZZ_SOURCE_DIR "/examples/models/tinyfortunes");
    g_tok[1] = load(XPI_FUZZ_SOURCE_DIR "/tests/data/tokenizers/llama2");
    atexit(free_toks);
  }
  if (size < 1) return 0;
  const xpi_tokenizer *tok = g_tok[data[0] & 1];
  int skip = (data[0] >> 1) & 1;
  int32_t vocab = xpi_tokenizer_vocab_size(tok), ids[MAX_IDS];
  size_t n = 0;
  for (size_t i = 1; i + 1 < size && n < MAX_IDS; i += 2) {
    unsigned v = data[i] | (unsigned)data[i + 1] << 8;
    ids[n++] = v >= 0xFFF0 ? (v & 1 ? -1 - (int32_t)(v & 14) : vocab + (int32_t)(v & 14)) : (int32_t)(v % (unsigned)vocab);
  }
  xpi_detok_stream *s = NULL;
  if (xpi_detok_stream_create(tok, skip, &s) != XPI_OK) abort();
  char *text = malloc(1);
  size_t len = 0;
  size_t ok = 0; /* ids pushed */
  for (size_t i = 0; i < n; i++) {
    const char *piece = NULL;
    size_t plen = 0;
    xpi_status st = xpi_detok_stream_push(s, ids[i], &piece, &plen);
    if (ids[i] < 0 || ids[i] >= vocab) {
      FUZZ_ASSERT(st == XPI_ERR_INVALID_ARGUMENT, "id %d outside the vocabulary: %s", ids[i], xpi_status_name(st));
      continue; /* the stream is unchanged: go on with the next id */
    }
    FUZZ_ASSERT(st == XPI_OK, "push %d: %s: %s", ids[i], xpi_status_name(st), xpi_last_error());
    FUZZ_ASSERT(valid_utf8((const unsigned char *)piece, plen), "push %d: a piece that is not whole UTF-8", ids[i]);
    text = realloc(text, len + plen + 1);
    memcpy(text + len, piece, plen);
    len += plen;
    ids[ok++] = ids[i];
  }
  const char *piece = NULL;
  size_t plen = 0;
  FUZZ_ASSERT(xpi_detok_stream_flush(s, &piece, &plen) == XPI_OK, "flush: %s", xpi_last_error());
  text = realloc(text, len + plen + 1);
  memcpy(text + len, piece, plen);
  len += plen;
  xpi_detok_stream_free(s);

  size_t flen = 0;
  xpi_detokenize(tok, ids, ok, skip, NULL, 0, &flen);
  char *full = malloc(flen + 1);
  FUZZ_ASSERT(xpi_detokenize(tok, ids, ok, skip, full, flen + 1, &flen) == XPI_OK, "decode: %s", xpi_last_error());
  if (len != flen || memcmp(text, full, len)) {
    fprintf(stderr, "fuzz: skip_special=%d ids:", skip);
    for (size_t i = 0; i < ok; i++) fprintf(stderr, " %d", ids[i]);
    fprintf(stderr, "\n  stream: \"%.*s\"\n  decode: \"%.*s\"\n", (int)len, text, (int)flen, full);
    FUZZ_ASSERT(0, "the streamed text differs from the full decode");
  }
  free(full);
  free(text);
  return 0;
}
