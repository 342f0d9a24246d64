/* Post-processors of tokenizer.json (TemplateProcessing, Bert/RobertaProcessing, ByteLevel, Sequence), reduced to
 * the ids placed before and after a single sequence when add_special is asked. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

static xpi_status oom(void) { return xpi_err(XPI_ERR_OUT_OF_MEMORY, "tokenizer: out of memory"); }

/* ------------------------------------------------------------------ post-processor */
static xpi_status add_post_ids(xpi_tokenizer *t, const int32_t *ids, size_t n, int before) {
  int32_t *v = realloc(t->post_single, (t->n_post_single + n + 1) * sizeof *v);
  if (!v) return oom();
  t->post_single = v;
  if (before) {
    memmove(v + t->post_seq_pos + n, v + t->post_seq_pos, (t->n_post_single - (size_t)t->post_seq_pos) * sizeof *v);
    memcpy(v + t->post_seq_pos, ids, n * sizeof *v);
    t->post_seq_pos += (int)n;
  } else {
    memcpy(v + t->n_post_single, ids, n * sizeof *v);
  }
  t->n_post_single += n;
  return XPI_OK;
}

static xpi_status check_post_id(const xpi_tokenizer *t, const char *what, double d) {
  if (d < 0 || d >= t->n_ids || d != (double)(int64_t)d)
    return xpi_err(XPI_ERR_FORMAT, "%s: %s: id %.0f is not a token id (vocabulary size %d)", t->path, what, d,
                   t->n_ids);
  return XPI_OK;
}

xpi_status tok_post_parse(xpi_tokenizer *t, const cJSON *pp, int *n_templates) {
  const char *path = t->path;
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(pp, "type");
  if (!cJSON_IsObject(pp) || !cJSON_IsString(type))
    return xpi_err(XPI_ERR_FORMAT, "%s: post_processor must be an object with a string \"type\"", path);
  const char *ty = type->valuestring;
  if (!strcmp(ty, "ByteLevel")) return XPI_OK; /* offsets only: ids unchanged */
  if (!strcmp(ty, "Sequence")) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(pp, "processors"), *e;
    if (!cJSON_IsArray(arr)) return xpi_err(XPI_ERR_FORMAT, "%s: post_processor.processors must be an array", path);
    cJSON_ArrayForEach(e, arr) XPI_TRY(tok_post_parse(t, e, n_templates));
    return XPI_OK;
  }
  if (++*n_templates > 1)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: post_processor: more than one template processor", path);
  t->has_post = 1;
  if (!strcmp(ty, "TemplateProcessing")) {
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(pp, "single");
    const cJSON *specials = cJSON_GetObjectItemCaseSensitive(pp, "special_tokens");
    if (!cJSON_IsArray(single)) return xpi_err(XPI_ERR_FORMAT, "%s: post_processor.single must be an array", path);
    int seen_seq = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, single) {
      const cJSON *sp = cJSON_GetObjectItemCaseSensitive(item, "SpecialToken");
      const cJSON *sq = cJSON_GetObjectItemCaseSensitive(item, "Sequence");
      if (sq) { seen_seq = 1; continue; }
      const cJSON *name = cJSON_GetObjectItemCaseSensitive(sp, "id");
      if (!cJSON_IsString(name))
        return xpi_err(XPI_ERR_FORMAT, "%s: post_processor.single: items must be SpecialToken or Sequence", path);
      const cJSON *def = cJSON_GetObjectItemCaseSensitive(specials, name->valuestring);
      const cJSON *ids = cJSON_GetObjectItemCaseSensitive(def, "ids");
      if (!cJSON_IsArray(ids))
        return xpi_err(XPI_ERR_FORMAT, "%s: post_processor.special_tokens[\"%s\"].ids is missing", path,
                       name->valuestring);
      const cJSON *x;
      cJSON_ArrayForEach(x, ids) {
        if (!cJSON_IsNumber(x))
          return xpi_err(XPI_ERR_FORMAT, "%s: post_processor.special_tokens[\"%s\"].ids must be integers", path,
                         name->valuestring);
        XPI_TRY(check_post_id(t, "post_processor.special_tokens", x->valuedouble));
        int32_t id = (int32_t)x->valuedouble;
        XPI_TRY(add_post_ids(t, &id, 1, !seen_seq));
      }
    }
    if (!seen_seq) return xpi_err(XPI_ERR_FORMAT, "%s: post_processor.single has no Sequence", path);
    return XPI_OK;
  }
  if (!strcmp(ty, "BertProcessing") || !strcmp(ty, "RobertaProcessing")) {
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(pp, "cls"), *sep = cJSON_GetObjectItemCaseSensitive(pp, "sep");
    const cJSON *ci = cJSON_GetArrayItem(cls, 1), *si = cJSON_GetArrayItem(sep, 1);
    if (!cJSON_IsNumber(ci) || !cJSON_IsNumber(si))
      return xpi_err(XPI_ERR_FORMAT, "%s: post_processor.cls/sep must be [token, id]", path);
    XPI_TRY(check_post_id(t, "post_processor.cls", ci->valuedouble));
    XPI_TRY(check_post_id(t, "post_processor.sep", si->valuedouble));
    int32_t c = (int32_t)ci->valuedouble, s = (int32_t)si->valuedouble;
    XPI_TRY(add_post_ids(t, &c, 1, 1));
    return add_post_ids(t, &s, 1, 0);
  }
  return xpi_err(XPI_ERR_UNSUPPORTED, "%s: post_processor type \"%s\" is not supported (supported: "
                 "TemplateProcessing, ByteLevel, BertProcessing, RobertaProcessing, Sequence)", path, ty);
}
