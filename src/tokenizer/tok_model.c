/* The model of tokenizer.json: picks BPE, Unigram, WordPiece or WordLevel from "type" (or, without one, from
 * the fields present, as tokenizers' untagged deserialization does) and dispatches encoding of one pre-token.
 * Also the JSON helpers the model loaders share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

xpi_status tok_oom(void) { return xpi_err(XPI_ERR_OUT_OF_MEMORY, "tokenizer: out of memory"); }

int tok_json_id(const cJSON *v, int32_t *id) {
  if (!cJSON_IsNumber(v)) return 0;
  double d = v->valuedouble;
  /* range first: converting 1e300 or inf to an integer is undefined behaviour */
  if (!(d >= 0 && d < TOK_MAX_ID) || d != (double)(int32_t)d) return 0;
  *id = (int32_t)d;
  return 1;
}

xpi_status tok_json_opt_string(const cJSON *o, const char *key, const char *what, char **out) {
  *out = NULL;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v || cJSON_IsNull(v)) return XPI_OK;
  if (!cJSON_IsString(v)) return xpi_err(XPI_ERR_FORMAT, "%s.%s must be a string or null", what, key);
  if (!(*out = strdup(v->valuestring))) return tok_oom();
  return XPI_OK;
}

xpi_status tok_load_vocab_object(xpi_tokenizer *t, const cJSON *model) {
  const char *path = t->path;
  const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
  if (!cJSON_IsObject(vocab)) return xpi_err(XPI_ERR_FORMAT, "%s: model.vocab must be an object", path);
  size_t n = 0, bytes = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, vocab) {
    n++;
    bytes += strlen(e->string) + 1;
  }
  t->vocab_arena = malloc(bytes ? bytes : 1);
  if (!t->vocab_arena) return tok_oom();
  XPI_TRY(tok_strmap_init(&t->vocab, n));
  char *p = t->vocab_arena;
  cJSON_ArrayForEach(e, vocab) {
    int32_t id;
    if (!cJSON_IsNumber(e))
      return xpi_err(XPI_ERR_FORMAT, "%s: model.vocab[\"%s\"] must be an integer id", path, e->string);
    if (!tok_json_id(e, &id)) {
      if (e->valuedouble >= 0 && e->valuedouble < TOK_MAX_ID)
        return xpi_err(XPI_ERR_FORMAT, "%s: model.vocab[\"%s\"] must be an integer id", path, e->string);
      return xpi_err(XPI_ERR_FORMAT, "%s: model.vocab[\"%s\"] = %g is out of range [0, %d)", path, e->string,
                     e->valuedouble, TOK_MAX_ID);
    }
    size_t l = strlen(e->string);
    memcpy(p, e->string, l + 1);
    int32_t old;
    XPI_TRY(tok_strmap_put(&t->vocab, p, l, id, &old));
    if (old >= 0) return xpi_err(XPI_ERR_FORMAT, "%s: model.vocab has the token \"%s\" twice", path, e->string);
    if (id >= t->n_ids) t->n_ids = id + 1;
    p += l + 1;
  }
  return XPI_OK;
}

xpi_status tok_model_load(xpi_tokenizer *t, const cJSON *model) {
  const char *path = t->path;
  if (!cJSON_IsObject(model)) return xpi_err(XPI_ERR_FORMAT, "%s: \"model\" must be an object", path);
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
  if (type && !cJSON_IsString(type)) return xpi_err(XPI_ERR_FORMAT, "%s: model.type must be a string", path);
  const char *ty = type ? type->valuestring : NULL;
  if (!ty) { /* untagged: the first variant whose fields fit, in tokenizers' order */
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    if (cJSON_GetObjectItemCaseSensitive(model, "merges")) ty = "BPE";
    else if (cJSON_IsArray(v)) ty = "Unigram";
    else if (cJSON_GetObjectItemCaseSensitive(model, "continuing_subword_prefix") ||
             cJSON_GetObjectItemCaseSensitive(model, "max_input_chars_per_word")) ty = "WordPiece";
    else if (cJSON_IsObject(v)) ty = "WordLevel";
    else return xpi_err(XPI_ERR_FORMAT, "%s: model has no \"type\" and its fields match no model", path);
  }
  for (int b = 0; b < 256; b++) t->byte_ids[b] = -1;
  t->unk_id = -1;
  if (!strcmp(ty, "BPE")) { t->model_type = MODEL_BPE; XPI_TRY(tok_bpe_load(t, model)); }
  else if (!strcmp(ty, "Unigram")) { t->model_type = MODEL_UNIGRAM; XPI_TRY(tok_unigram_load(t, model)); }
  else if (!strcmp(ty, "WordPiece")) { t->model_type = MODEL_WORDPIECE; XPI_TRY(tok_wordpiece_load(t, model, 0)); }
  else if (!strcmp(ty, "WordLevel")) { t->model_type = MODEL_WORDLEVEL; XPI_TRY(tok_wordpiece_load(t, model, 1)); }
  else
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: model: type \"%s\" is not supported (supported: BPE, Unigram, "
                   "WordPiece, WordLevel)", path, ty);
  for (int b = 0; b < 256; b++) {
    char name[8];
    snprintf(name, sizeof name, "<0x%02X>", b);
    t->byte_ids[b] = tok_strmap_get(&t->vocab, name, 6);
  }
  return XPI_OK;
}

xpi_status tok_model_word(const xpi_tokenizer *t, const char *w, size_t n, tok_ids *out) {
  switch (t->model_type) {
    case MODEL_BPE: return tok_bpe_word(t, w, n, out);
    case MODEL_UNIGRAM: return tok_unigram_word(t, w, n, out);
    case MODEL_WORDPIECE: return tok_wordpiece_word(t, w, n, out);
    default: return tok_wordlevel_word(t, w, n, out);
  }
}
