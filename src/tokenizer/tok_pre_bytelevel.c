/* ByteLevel (GPT-2): the pre-tokenizer (optional prefix space on every piece, the GPT-2 regex, then each byte as
 * its printable stand-in character) and the byte <-> character tables the decoder shares. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

/* GPT-2's pre-tokenization regex (ByteLevel with use_regex). */
static const char k_gpt2_regex[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* GPT-2 bytes_to_unicode: printable bytes stand for themselves, the other 68 map to U+0100.. in byte order. */
static int32_t byte_cp(unsigned char b) {
  if (b <= 32) return 256 + b;
  if (b >= 127 && b <= 160) return 289 + (b - 127);
  if (b == 173) return 323;
  return b;
}

size_t tok_bytelevel_char(unsigned char b, char out[4]) { return tok_utf8_put(byte_cp(b), out); }

int tok_bytelevel_byte(int32_t cp) {
  if (cp >= 256 && cp <= 288) return cp - 256;
  if (cp >= 289 && cp <= 322) return cp - 289 + 127;
  if (cp == 323) return 173;
  if ((cp >= 33 && cp <= 126) || (cp >= 161 && cp <= 172) || (cp >= 174 && cp <= 255)) return cp;
  return -1;
}

xpi_status tok_pre_bytelevel_parse(const cJSON *j, const char *what, tok_pretok *p) {
  p->type = PRE_BYTELEVEL;
  const cJSON *aps = cJSON_GetObjectItemCaseSensitive(j, "add_prefix_space");
  const cJSON *ur = cJSON_GetObjectItemCaseSensitive(j, "use_regex");
  p->add_prefix_space = aps ? cJSON_IsTrue(aps) : 1;
  p->use_regex = ur ? cJSON_IsTrue(ur) : 1;
  for (int b = 0; b < 256; b++) { /* every stand-in is below U+0800: two bytes at most */
    char c[4];
    p->bl_map[b][0] = (unsigned char)tok_bytelevel_char((unsigned char)b, c);
    memcpy(&p->bl_map[b][1], c, 2);
  }
  if (p->use_regex) {
    p->pat.is_regex = 1;
    return tok_regex_compile(k_gpt2_regex, what, &p->pat.re);
  }
  return XPI_OK;
}

xpi_status tok_pre_bytelevel_piece(const tok_pretok *p, const char *s, size_t n, int at_start, tok_pieces *out) {
  tok_buf pre = {0};
  xpi_status st = XPI_OK;
  if (p->add_prefix_space && (n == 0 || s[0] != ' ')) {
    st = tok_buf_put(&pre, " ", 1);
    if (!st) st = tok_buf_put(&pre, s, n);
    s = pre.p;
    n = pre.len;
  }
  tok_pieces parts = {0};
  if (!st) {
    if (p->use_regex) st = tok_split_piece(&p->pat, NULL, NULL, SPLIT_ISOLATED, 0, s, n, at_start, 0, &parts);
    else st = tok_pieces_add(&parts, s, n, at_start);
  }
  unsigned char *mapped = NULL;
  size_t cap = 0;
  for (size_t i = 0; !st && i < parts.n; i++) {
    const unsigned char *u = (const unsigned char *)parts.text.p + parts.v[i].off;
    size_t len = parts.v[i].len, m = 0;
    if (2 * len > cap) {
      unsigned char *nm = realloc(mapped, cap = 2 * len + 16);
      if (!nm) { st = tok_oom(); break; }
      mapped = nm;
    }
    for (size_t k = 0; k < len; k++) {
      const unsigned char *e = p->bl_map[u[k]];
      mapped[m] = e[1];
      mapped[m + 1] = e[2];
      m += e[0];
    }
    st = tok_pieces_add(out, (const char *)mapped, m, parts.v[i].at_start);
  }
  free(mapped);
  tok_pieces_free(&parts);
  tok_buf_free(&pre);
  return st;
}
