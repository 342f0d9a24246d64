/* The WordPiece model (BERT): greedy longest-match-first over the pre-token, continuation pieces carrying the
 * prefix ("##"); a pre-token longer than max_input_chars_per_word characters, or one with a part no piece
 * matches, becomes the single unk_token, as tokenizers' WordPiece::tokenize. Loading is shared with WordLevel
 * (vocab object + unk_token). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

xpi_status tok_wordpiece_load(xpi_tokenizer *t, const cJSON *model, int wordlevel) {
  const char *path = t->path;
  char what[4200];
  snprintf(what, sizeof what, "%s: model", path);
  XPI_TRY(tok_load_vocab_object(t, model));
  XPI_TRY(tok_json_opt_string(model, "unk_token", what, &t->model_unk));
  if (!t->model_unk && !(t->model_unk = strdup(wordlevel ? "<unk>" : "[UNK]"))) return tok_oom();
  t->unk_id = tok_strmap_get(&t->vocab, t->model_unk, strlen(t->model_unk));
  if (t->unk_id < 0) t->unk_id = -2; /* tokenizers fails only when a word needs it */
  if (wordlevel) return XPI_OK;
  XPI_TRY(tok_json_opt_string(model, "continuing_subword_prefix", what, &t->prefix));
  if (!t->prefix && !(t->prefix = strdup("##"))) return tok_oom();
  t->prefix_len = strlen(t->prefix);
  const cJSON *mx = cJSON_GetObjectItemCaseSensitive(model, "max_input_chars_per_word");
  t->max_chars = 100;
  if (mx && !cJSON_IsNull(mx)) {
    if (!cJSON_IsNumber(mx) || !(mx->valuedouble >= 0 && mx->valuedouble <= 1e9) ||
        mx->valuedouble != (double)(int)mx->valuedouble)
      return xpi_err(XPI_ERR_FORMAT, "%s: model.max_input_chars_per_word must be a non-negative integer", path);
    t->max_chars = (int)mx->valuedouble;
  }
  return XPI_OK;
}

static xpi_status unk(const xpi_tokenizer *t, tok_ids *out) {
  if (t->unk_id < 0)
    return xpi_err(XPI_ERR_FORMAT, "%s: model.unk_token \"%s\" is not in the vocabulary (needed for an unknown word)",
                   t->path, t->model_unk ? t->model_unk : "");
  return tok_ids_add(out, t->unk_id);
}

xpi_status tok_wordpiece_word(const xpi_tokenizer *t, const char *w, size_t n, tok_ids *out) {
  if (!n) return XPI_OK;
  size_t chars = 0;
  for (size_t i = 0; i < n; i++) chars += ((unsigned char)w[i] & 0xC0) != 0x80;
  if (chars > (size_t)t->max_chars) return unk(t, out);
  size_t mark = out->n;
  tok_buf sub = {0};
  xpi_status st = XPI_OK;
  for (size_t start = 0; !st && start < n;) {
    size_t end = n;
    int32_t id = -1;
    while (!st && start < end) {
      const char *s = w + start;
      size_t sl = end - start;
      if (start > 0) { /* continuation: prefix + piece */
        sub.len = 0;
        if ((st = tok_buf_put(&sub, t->prefix, t->prefix_len)) || (st = tok_buf_put(&sub, s, sl))) break;
        s = sub.p;
        sl = sub.len;
      }
      if ((id = tok_strmap_get(&t->vocab, s, sl)) >= 0) break;
      size_t k = end - 1; /* drop the last character */
      while (k > start && ((unsigned char)w[k] & 0xC0) == 0x80) k--;
      end = k;
    }
    if (st) break;
    if (id < 0) { /* a part no piece matches: the whole word is unknown */
      out->n = mark;
      st = unk(t, out);
      break;
    }
    st = tok_ids_add(out, id);
    start = end;
  }
  tok_buf_free(&sub);
  return st;
}
