/* tokenizer.json loading and encode/decode through the public API, on arbitrary bytes: the input is
 * tokenizer.json, then after NUL bytes an optional tokenizer_config.json and a text to encode. Properties: no
 * crash, leak or undefined behaviour; encode rejects invalid UTF-8 with XPI_ERR_INVALID_ARGUMENT and fails on
 * valid text only with a message; every id it returns is in the vocabulary; decode of those ids succeeds, returns
 * valid UTF-8, and the size query agrees with the decode. */
#include "fuzz_common.h"
#include "tokenizer/tokenizer.h"

/* 1 if s[0..n) is valid UTF-8 (no surrogates, no overlongs, <= U+10FFFF). */
static int valid_utf8(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!k || i + k > n) return 0;
    unsigned cp = k == 1 ? c : k == 2 ? c & 31 : k == 3 ? c & 15 : c & 7;
    for (size_t j = 1; j < k; j++) {
      if ((s[i + j] & 0xC0) != 0x80) return 0;
      cp = cp << 6 | (s[i + j] & 63);
    }
    if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return 0;
    i += k;
  }
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_part parts[3];
  int n = fuzz_split(data, size, parts, 3);
  fuzz_file("", "tokenizer.json", parts[0].p, parts[0].n);
  fuzz_file("", "tokenizer_config.json", n > 2 ? parts[1].p : NULL, n > 2 ? parts[1].n : 0);
  static const char k_text[] = "Hello, world! 123 \xc3\xa9t\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd";
  const fuzz_part text = n > 1 ? parts[n - 1] : (fuzz_part){(const uint8_t *)k_text, sizeof k_text - 1};
  xpi_tokenizer *tok = NULL;
  if (xpi_tokenizer_load(fuzz_dir(), &tok) != XPI_OK) return 0;
  int32_t vocab = xpi_tokenizer_vocab_size(tok);
  for (int add_special = 0; add_special < 2; add_special++) {
    size_t nids = 0;
    xpi_status s = xpi_tokenize(tok, (const char *)text.p, text.n, add_special, NULL, 0, &nids);
    if (!valid_utf8(text.p, text.n)) {
      FUZZ_ASSERT(s == XPI_ERR_INVALID_ARGUMENT, "invalid UTF-8 gave %s", xpi_status_name(s));
      break;
    }
    /* A tokenizer may be unable to encode some text, as in tokenizers (e.g. an unk_token missing from the
     * vocabulary): a clear error, never a crash or an internal one. */
    if (s == XPI_ERR_FORMAT || s == XPI_ERR_UNSUPPORTED || s == XPI_ERR_OUT_OF_MEMORY) {
      FUZZ_ASSERT(xpi_last_error()[0], "encode: %s without a message", xpi_status_name(s));
      break;
    }
    FUZZ_ASSERT(s == XPI_OK || s == XPI_ERR_BUFFER_TOO_SMALL, "encode: %s: %s", xpi_status_name(s), xpi_last_error());
    int32_t *ids = malloc((nids ? nids : 1) * sizeof *ids);
    size_t got = 0;
    s = xpi_tokenize(tok, (const char *)text.p, text.n, add_special, ids, nids, &got);
    FUZZ_ASSERT(s == XPI_OK && got == nids, "encode: %s, %zu ids after a size query of %zu", xpi_status_name(s), got,
                nids);
    for (size_t i = 0; i < got; i++) FUZZ_ASSERT(ids[i] >= 0 && ids[i] < vocab, "id %d outside the vocabulary %d", ids[i], vocab);
    for (int skip = 0; skip < 2; skip++) {
      size_t len = 0;
      s = xpi_detokenize(tok, ids, got, skip, NULL, 0, &len);
      FUZZ_ASSERT(s == XPI_OK || s == XPI_ERR_BUFFER_TOO_SMALL, "decode: %s: %s", xpi_status_name(s), xpi_last_error());
      char *out = malloc(len + 1);
      size_t len2 = 0;
      s = xpi_detokenize(tok, ids, got, skip, out, len + 1, &len2);
      FUZZ_ASSERT(s == XPI_OK && len2 == len && out[len] == 0, "decode: %s, %zu bytes after a size query of %zu",
                  xpi_status_name(s), len2, len);
      FUZZ_ASSERT(valid_utf8((const unsigned char *)out, len), "decode gave invalid UTF-8");
      free(out);
    }
    free(ids);
  }
  xpi_tokenizer_free(tok);
  return 0;
}
