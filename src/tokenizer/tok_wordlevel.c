/* The WordLevel model: a pre-token is one vocabulary entry, else unk_token (loaded by tok_wordpiece_load). */
#include "core/status.h"
#include "tokenizer/tok_internal.h"

xpi_status tok_wordlevel_word(const xpi_tokenizer *t, const char *w, size_t n, tok_ids *out) {
  if (!n) return XPI_OK;
  int32_t id = tok_strmap_get(&t->vocab, w, n);
  if (id >= 0) return tok_ids_add(out, id);
  if (t->unk_id < 0)
    return xpi_err(XPI_ERR_FORMAT, "%s: model.unk_token \"%s\" is not in the vocabulary (needed for an unknown word)",
                   t->path, t->model_unk ? t->model_unk : "");
  return tok_ids_add(out, t->unk_id);
}
