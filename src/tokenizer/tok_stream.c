/* Streaming decode. The text is decoded over a window that starts at an "anchor" token whose text is
 * context-free (decodes alone to clean UTF-8, not a byte token, not skipped): decoders only treat the first
 * token of a window specially (Strip, Metaspace) and byte runs never cross such a token, so
 *   decode(all) = emitted-before-window + decode(window) - decode(anchor alone).
 * Trailing U+FFFD is held back until the next token tells whether it completes a character, and a run of
 * byte-fallback tokens until it ends (the whole run turns into U+FFFDs if it is not valid UTF-8). */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

struct xpi_detok_stream {
  const xpi_tokenizer *tok;
  int skip_special;
  tok_ids win;       /* window: win.v[0] is the anchor when anchored */
  size_t emitted;    /* bytes of decode(window) already given out (anchor text included) */
  tok_buf text;      /* decode(window) */
  tok_buf piece;     /* what the last call returned */
};

xpi_status xpi_detok_stream_create(const xpi_tokenizer *tok, int skip_special, xpi_detok_stream **out) {
  if (!out) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_detok_stream_create: out is NULL");
  *out = NULL;
  if (!tok) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_detok_stream_create: tok is NULL");
  xpi_detok_stream *s = calloc(1, sizeof *s);
  if (!s) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
  s->tok = tok;
  s->skip_special = skip_special;
  *out = s;
  return XPI_OK;
}

void xpi_detok_stream_free(xpi_detok_stream *s) {
  if (!s) return;
  free(s->win.v);
  tok_buf_free(&s->text);
  tok_buf_free(&s->piece);
  free(s);
}

/* Bytes of trailing U+FFFD at the end of t. */
static size_t trailing_fffd(const tok_buf *t) {
  size_t n = t->len;
  while (n >= 3 && !memcmp(t->p + n - 3, "\xEF\xBF\xBD", 3)) n -= 3;
  return t->len - n;
}

static xpi_status safe_anchor(const xpi_detok_stream *s, int32_t id, int *safe, size_t *text_len) {
  const xpi_tokenizer *t = s->tok;
  *safe = 0;
  if (t->strip_stop || (s->skip_special && t->id_special[id])) return XPI_OK;
  size_t l;
  const char *p = tok_id_text(t, id, &l);
  if (l == 6 && !memcmp(p, "<0x", 3) && p[5] == '>') return XPI_OK;
  tok_buf one = {0};
  xpi_status st = tok_decode(t, &id, 1, s->skip_special, &one);
  if (!st && one.len && !strstr(one.p, "\xEF\xBF\xBD") && strlen(one.p) == one.len) {
    *safe = 1;
    *text_len = one.len;
  }
  tok_buf_free(&one);
  return st;
}

static xpi_status emit(xpi_detok_stream *s, size_t upto, const char **piece, size_t *piece_len) {
  s->piece.len = 0;
  XPI_TRY(tok_buf_put(&s->piece, "", 0));
  if (upto > s->emitted) {
    XPI_TRY(tok_buf_put(&s->piece, s->text.p + s->emitted, upto - s->emitted));
    s->emitted = upto;
  }
  *piece = s->piece.p;
  *piece_len = s->piece.len;
  return XPI_OK;
}

xpi_status xpi_detok_stream_push(xpi_detok_stream *s, int32_t id, const char **piece, size_t *piece_len) {
  if (!s || !piece || !piece_len)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_detok_stream_push: s, piece and piece_len must not be NULL");
  *piece = "";
  *piece_len = 0;
  XPI_TRY(tok_check_ids(s->tok, &id, 1));
  /* decode(skip_special) drops special tokens before the decoder chain sees anything, so the stream ignores them
   * altogether: a skipped token inside a run of <0xNN> tokens must not end the run */
  if (s->skip_special && s->tok->id_special[id]) {
    s->piece.len = 0;
    XPI_TRY(tok_buf_put(&s->piece, "", 0));
    *piece = s->piece.p;
    return XPI_OK;
  }
  XPI_TRY(tok_ids_add(&s->win, id));
  if (s->tok->dec_byte_fallback) {
    /* a run of <0xNN> tokens decodes as a whole (valid UTF-8, or U+FFFD for every byte): wait for its end */
    size_t l;
    const char *p = tok_id_text(s->tok, id, &l);
    if (l == 6 && !memcmp(p, "<0x", 3) && p[5] == '>' && !(s->skip_special && s->tok->id_special[id])) {
      s->piece.len = 0;
      XPI_TRY(tok_buf_put(&s->piece, "", 0));
      *piece = s->piece.p;
      return XPI_OK;
    }
  }
  s->text.len = 0;
  XPI_TRY(tok_decode(s->tok, s->win.v, s->win.n, s->skip_special, &s->text));
  size_t hold = trailing_fffd(&s->text);
  /* a decoder whose earlier text changes (never for the supported chains) would show up here: wait for flush */
  size_t upto = s->text.len - hold;
  if (upto < s->emitted) upto = s->emitted;
  XPI_TRY(emit(s, upto, piece, piece_len));
  if (!hold && s->emitted == s->text.len) {
    int safe;
    size_t alone = 0;
    XPI_TRY(safe_anchor(s, id, &safe, &alone));
    if (safe) { /* the new token becomes the anchor of a fresh window */
      s->win.v[0] = id;
      s->win.n = 1;
      s->text.len = 0;
      XPI_TRY(tok_decode(s->tok, s->win.v, 1, s->skip_special, &s->text));
      s->emitted = alone;
    }
  }
  return XPI_OK;
}

xpi_status xpi_detok_stream_flush(xpi_detok_stream *s, const char **piece, size_t *piece_len) {
  if (!s || !piece || !piece_len)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_detok_stream_flush: s, piece and piece_len must not be NULL");
  s->text.len = 0;
  XPI_TRY(tok_decode(s->tok, s->win.v, s->win.n, s->skip_special, &s->text));
  XPI_TRY(emit(s, s->text.len, piece, piece_len));
  s->win.n = 0;
  s->emitted = 0;
  s->text.len = 0;
  return XPI_OK;
}
