/* Per-sequence output: detokenization, stop tokens and stop strings with hold-back (see seq_output.h). */
#include "generate/seq_output.h"

#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

void xpi_seq_output_free(xpi_seq_output *so) {
  if (!so) return;
  xpi_detok_stream_free(so->ds);
  for (size_t i = 0; i < so->n_stops; i++) free(so->stops[i]);
  free(so->stops);
  free(so->eos);
  free(so->text);
  memset(so, 0, sizeof *so);
}

xpi_status xpi_seq_output_init(xpi_seq_output *so, const xpi_tokenizer *tok, const int32_t *eos, int32_t n_eos,
                               const xpi_gen_options *o) {
  memset(so, 0, sizeof *so);
  if (!tok || !o || (n_eos > 0 && !eos)) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_seq_output_init: NULL argument");
  if (o->max_new_tokens < 0)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "max_new_tokens = %d must be >= 0", o->max_new_tokens);
  if (o->n_stop_strings && !o->stop_strings)
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "n_stop_strings = %zu but stop_strings is NULL", o->n_stop_strings);
  for (size_t i = 0; i < o->n_stop_strings; i++) {
    const char *s = o->stop_strings[i];
    size_t n = s ? strlen(s) : 0;
    if (xpi_utf8_check(s ? s : "", n) != n)
      return xpi_err(XPI_ERR_INVALID_ARGUMENT, "stop string %zu is not valid UTF-8 (byte %zu)", i,
                     xpi_utf8_check(s, n));
  }
  xpi_status st = XPI_OK;
  if (o->n_stop_strings && !(so->stops = calloc(o->n_stop_strings, sizeof *so->stops)))
    st = xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  for (size_t i = 0; st == XPI_OK && i < o->n_stop_strings; i++) {
    const char *s = o->stop_strings[i];
    if (!s || !*s) continue; /* an empty stop string would match everywhere: ignored */
    if (!(so->stops[so->n_stops++] = strdup(s))) st = xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  if (st == XPI_OK && !o->ignore_eos && n_eos > 0) { /* ignore_eos: eos ids are ordinary tokens */
    if (!(so->eos = malloc((size_t)n_eos * sizeof *so->eos))) st = xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
    else memcpy(so->eos, eos, (size_t)n_eos * sizeof *eos), so->n_eos = n_eos;
  }
  if (st == XPI_OK) st = xpi_detok_stream_create(tok, o->skip_special != 0, &so->ds);
  if (st != XPI_OK) {
    xpi_seq_output_free(so);
    return st;
  }
  so->max_new_tokens = o->max_new_tokens;
  so->include_stop = o->include_stop != 0;
  so->reason = XPI_FINISH_LENGTH;
  so->finished = o->max_new_tokens == 0;
  return XPI_OK;
}

static xpi_status append(xpi_seq_output *so, const char *p, size_t n) {
  if (so->len + n + 1 > so->cap) {
    size_t c = so->cap ? so->cap : 256;
    while (c < so->len + n + 1) c *= 2;
    char *q = realloc(so->text, c);
    if (!q) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory for the generated text");
    so->text = q;
    so->cap = c;
  }
  memcpy(so->text + so->len, p, n);
  so->len += n;
  return XPI_OK;
}

static int is_eos(const xpi_seq_output *so, int32_t id) {
  for (int32_t i = 0; i < so->n_eos; i++)
    if (so->eos[i] == id) return 1;
  return 0;
}

/* The earliest end e in (scanned, len] at which the text ends with a stop string; *start: where the longest
 * of those ending at e starts. Ends up to len count as searched afterwards. */
static int find_stop(xpi_seq_output *so, size_t *start, size_t *end) {
  for (size_t e = so->scanned + 1; e <= so->len; e++) {
    int found = 0;
    for (size_t i = 0; i < so->n_stops; i++) {
      size_t sl = strlen(so->stops[i]);
      if (sl <= e && so->text[e - 1] == so->stops[i][sl - 1] && !memcmp(so->text + e - sl, so->stops[i], sl) &&
          (!found || e - sl < *start)) {
        *start = e - sl;
        found = 1;
      }
    }
    if (found) {
      *end = e;
      return 1;
    }
  }
  so->scanned = so->len;
  return 0;
}

/* Bytes at the end of the unreturned text that are a proper prefix of some stop string. */
static size_t held_back(const xpi_seq_output *so) {
  if (so->include_stop) return 0; /* an included stop string never withdraws text returned before it */
  size_t held = 0, avail = so->len - so->emitted;
  for (size_t i = 0; i < so->n_stops; i++) {
    size_t sl = strlen(so->stops[i]);
    for (size_t k = sl - 1 < avail ? sl - 1 : avail; k > held; k--)
      if (!memcmp(so->text + so->len - k, so->stops[i], k)) {
        held = k;
        break;
      }
  }
  return held;
}

static void emit(xpi_seq_output *so, size_t upto, const char **piece, size_t *piece_len) {
  if (upto < so->emitted) upto = so->emitted;
  *piece = so->text + so->emitted;
  *piece_len = upto - so->emitted;
  so->emitted = upto;
}

static void finish(xpi_seq_output *so, xpi_finish_reason why, size_t end, const char **piece, size_t *piece_len) {
  emit(so, end, piece, piece_len);
  so->len = so->emitted; /* anything after the end is dropped */
  so->finished = 1;
  so->reason = why;
}

xpi_status xpi_seq_output_push(xpi_seq_output *so, int32_t id, const char **piece, size_t *piece_len) {
  if (!so || !piece || !piece_len) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_seq_output_push: NULL argument");
  *piece = "";
  *piece_len = 0;
  if (so->finished) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_seq_output_push: the sequence has finished");
  const char *p;
  size_t pl;
  int stop_token = is_eos(so, id);
  if (!stop_token) { /* a stop token's text never enters the text */
    XPI_TRY(xpi_detok_stream_push(so->ds, id, &p, &pl));
    XPI_TRY(append(so, p, pl));
  }
  so->n_generated++;
  int last = stop_token || so->n_generated >= so->max_new_tokens;
  if (last) { /* an incomplete character held by the stream decodes now, as tokenizers' decode would */
    XPI_TRY(xpi_detok_stream_flush(so->ds, &p, &pl));
    XPI_TRY(append(so, p, pl));
  }
  size_t start = 0, end = 0;
  if (find_stop(so, &start, &end)) finish(so, XPI_FINISH_STOP, so->include_stop ? end : start, piece, piece_len);
  else if (last) finish(so, stop_token ? XPI_FINISH_STOP : XPI_FINISH_LENGTH, so->len, piece, piece_len);
  else emit(so, so->len - held_back(so), piece, piece_len);
  return XPI_OK;
}

void xpi_seq_output_cancel(xpi_seq_output *so) {
  if (!so || so->finished) return;
  so->len = so->emitted; /* held-back text is dropped */
  so->finished = 1;
  so->reason = XPI_FINISH_CANCELLED;
}

const char *xpi_seq_output_text(const xpi_seq_output *so, size_t *len) {
  if (len) *len = so && so->text ? so->emitted : 0;
  return so && so->text ? so->text : "";
}
