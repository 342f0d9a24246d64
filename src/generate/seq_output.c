/* Per-sequence output: detokenization, stop tokens and stop strings (see seq_output.h). */
#include "generate/seq_output.h"

#include <stdlib.h>
#include <string.h>

#include "core/status.h"

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
  xpi_status st = XPI_OK;
  if (o->n_stop_strings && !(so->stops = calloc(o->n_stop_strings, sizeof *so->stops)))
    st = xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  for (size_t i = 0; st == XPI_OK && i < o->n_stop_strings; i++) {
    const char *s = o->stop_strings[i];
    if (!s || !*s) continue;
    if (!(so->stops[so->n_stops++] = strdup(s))) st = xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  }
  if (st == XPI_OK && !o->ignore_eos && n_eos > 0) {
    if (!(so->eos = malloc((size_t)n_eos * sizeof *so->eos))) st = xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
    else memcpy(so->eos, eos, (size_t)n_eos * sizeof *eos), so->n_eos = n_eos;
  }
  if (st == XPI_OK) st = xpi_detok_stream_create(tok, 0, &so->ds);
  if (st != XPI_OK) {
    xpi_seq_output_free(so);
    return st;
  }
  so->max_new_tokens = o->max_new_tokens;
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

/* Did the text that now ends at len gain a stop string? Only the tail that new text can touch is searched. */
static int hit_stop(const xpi_seq_output *so, size_t old_len) {
  for (size_t i = 0; i < so->n_stops; i++) {
    size_t sl = strlen(so->stops[i]);
    if (sl > so->len) continue;
    size_t from = old_len >= sl ? old_len - sl + 1 : 0;
    for (size_t p = from; p + sl <= so->len; p++)
      if (!memcmp(so->text + p, so->stops[i], sl)) return 1;
  }
  return 0;
}

xpi_status xpi_seq_output_push(xpi_seq_output *so, int32_t id, const char **piece, size_t *piece_len) {
  if (!so || !piece || !piece_len) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_seq_output_push: NULL argument");
  *piece = "";
  *piece_len = 0;
  if (so->finished) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_seq_output_push: the sequence has finished");
  const char *p;
  size_t pl, old = so->len;
  XPI_TRY(xpi_detok_stream_push(so->ds, id, &p, &pl));
  XPI_TRY(append(so, p, pl));
  so->n_generated++;
  int stop = is_eos(so, id) || hit_stop(so, old);
  int last = stop || so->n_generated >= so->max_new_tokens;
  if (last) { /* an incomplete character held by the stream decodes now, as tokenizers' decode would */
    XPI_TRY(xpi_detok_stream_flush(so->ds, &p, &pl));
    XPI_TRY(append(so, p, pl));
    so->finished = 1;
    so->reason = stop ? XPI_FINISH_STOP : XPI_FINISH_LENGTH;
  }
  *piece = so->text + old;
  *piece_len = so->len - old;
  return XPI_OK;
}

void xpi_seq_output_cancel(xpi_seq_output *so) {
  if (!so || so->finished) return;
  so->finished = 1;
  so->reason = XPI_FINISH_CANCELLED;
}

const char *xpi_seq_output_text(const xpi_seq_output *so, size_t *len) {
  if (len) *len = so && so->text ? so->len : 0;
  return so && so->text ? so->text : "";
}
