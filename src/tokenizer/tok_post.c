/* Post-processors of tokenizer.json (TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence),
 * reduced to what encode(add_special_tokens=True) does to a single sequence: ids placed before and after it.
 * ByteLevel and the offset options of Roberta change offsets only, which this library does not report. A
 * Sequence may hold one processor that adds tokens (tokenizers itself cannot apply a second one: it panics). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

typedef struct { int32_t *v; size_t n; } idlist;

static xpi_status push(idlist *l, int32_t id) {
  int32_t *v = realloc(l->v, (l->n + 1) * sizeof *v);
  if (!v) return tok_oom();
  v[l->n++] = id;
  l->v = v;
  return XPI_OK;
}

/* t->post_single = pre + (current before) + (current after) + post (current: none, see parse) */
static xpi_status wrap(xpi_tokenizer *t, const idlist *pre, const idlist *post) {
  size_t n = pre->n + t->n_post_single + post->n;
  int32_t *v = malloc((n ? n : 1) * sizeof *v);
  if (!v) return tok_oom();
  if (pre->n) memcpy(v, pre->v, pre->n * sizeof *v);
  if (t->n_post_single) memcpy(v + pre->n, t->post_single, t->n_post_single * sizeof *v);
  if (post->n) memcpy(v + pre->n + t->n_post_single, post->v, post->n * sizeof *v);
  free(t->post_single);
  t->post_single = v;
  t->n_post_single = n;
  t->post_seq_pos += (int)pre->n;
  t->has_post = 1;
  return XPI_OK;
}

static xpi_status check_id(const xpi_tokenizer *t, const char *what, const cJSON *v, int32_t *id) {
  if (!tok_json_id(v, id) || *id >= t->n_ids)
    return xpi_err(XPI_ERR_FORMAT, "%s: %s must be a token id (vocabulary size %d)", t->path, what, t->n_ids);
  return XPI_OK;
}

static xpi_status template_proc(xpi_tokenizer *t, const cJSON *pp, const char *what, idlist *pre, idlist *post) {
  const cJSON *single = cJSON_GetObjectItemCaseSensitive(pp, "single");
  const cJSON *specials = cJSON_GetObjectItemCaseSensitive(pp, "special_tokens");
  if (!cJSON_IsArray(single)) return xpi_err(XPI_ERR_FORMAT, "%s: %s.single must be an array", t->path, what);
  int seen_seq = 0;
  size_t k = 0;
  const cJSON *item;
  cJSON_ArrayForEach(item, single) {
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(item, "SpecialToken");
    const cJSON *sq = cJSON_GetObjectItemCaseSensitive(item, "Sequence");
    if (sq) {
      const cJSON *sid = cJSON_GetObjectItemCaseSensitive(sq, "id");
      if (seen_seq || !cJSON_IsString(sid) || strcmp(sid->valuestring, "A"))
        return xpi_err(XPI_ERR_UNSUPPORTED, "%s: %s.single[%zu]: a single-sequence template must hold the sequence "
                       "\"A\" once", t->path, what, k);
      seen_seq = 1;
      k++;
      continue;
    }
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(sp, "id");
    if (!cJSON_IsString(name))
      return xpi_err(XPI_ERR_FORMAT, "%s: %s.single[%zu] must be a SpecialToken or a Sequence", t->path, what, k);
    const cJSON *def = cJSON_GetObjectItemCaseSensitive(specials, name->valuestring);
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(def, "ids");
    char field[512];
    snprintf(field, sizeof field, "%s.special_tokens[\"%.200s\"].ids", what, name->valuestring);
    if (!cJSON_IsArray(ids)) return xpi_err(XPI_ERR_FORMAT, "%s: %s is missing", t->path, field);
    const cJSON *x;
    cJSON_ArrayForEach(x, ids) {
      int32_t id;
      XPI_TRY(check_id(t, field, x, &id));
      XPI_TRY(push(seen_seq ? post : pre, id));
    }
    k++;
  }
  if (!seen_seq) return xpi_err(XPI_ERR_FORMAT, "%s: %s.single has no Sequence", t->path, what);
  return XPI_OK;
}

/* Bert: [CLS] A [SEP]; Roberta: <s> A </s>; cls and sep are [token, id]. */
static xpi_status cls_sep(xpi_tokenizer *t, const cJSON *pp, const char *what, idlist *pre, idlist *post) {
  const cJSON *cls = cJSON_GetObjectItemCaseSensitive(pp, "cls"), *sep = cJSON_GetObjectItemCaseSensitive(pp, "sep");
  if (!cJSON_IsArray(cls) || !cJSON_IsArray(sep))
    return xpi_err(XPI_ERR_FORMAT, "%s: %s.cls and .sep must be [token, id]", t->path, what);
  char f1[300], f2[300];
  snprintf(f1, sizeof f1, "%s.cls[1]", what);
  snprintf(f2, sizeof f2, "%s.sep[1]", what);
  int32_t c, s;
  XPI_TRY(check_id(t, f1, cJSON_GetArrayItem(cls, 1), &c));
  XPI_TRY(check_id(t, f2, cJSON_GetArrayItem(sep, 1), &s));
  XPI_TRY(push(pre, c));
  return push(post, s);
}

static xpi_status parse(xpi_tokenizer *t, const cJSON *pp, const char *what) {
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(pp, "type");
  if (!cJSON_IsObject(pp) || !cJSON_IsString(type))
    return xpi_err(XPI_ERR_FORMAT, "%s: %s must be an object with a string \"type\"", t->path, what);
  const char *ty = type->valuestring;
  if (!strcmp(ty, "ByteLevel")) return XPI_OK; /* offsets only: ids unchanged */
  if (!strcmp(ty, "Sequence")) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(pp, "processors"), *e;
    if (!cJSON_IsArray(arr)) return xpi_err(XPI_ERR_FORMAT, "%s: %s.processors must be an array", t->path, what);
    long i = 0;
    cJSON_ArrayForEach(e, arr) {
      char *kw = tok_path_child(what, "processors", i++);
      if (!kw) return tok_oom();
      xpi_status st = parse(t, e, kw);
      free(kw);
      if (st) return st;
    }
    return XPI_OK;
  }
  if (t->has_post)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: %s: a second processor that adds special tokens is not supported "
                   "(tokenizers cannot apply it either)", t->path, what);
  idlist pre = {0}, post = {0};
  xpi_status st;
  if (!strcmp(ty, "TemplateProcessing")) st = template_proc(t, pp, what, &pre, &post);
  else if (!strcmp(ty, "BertProcessing") || !strcmp(ty, "RobertaProcessing")) st = cls_sep(t, pp, what, &pre, &post);
  else
    st = xpi_err(XPI_ERR_UNSUPPORTED, "%s: %s: type \"%s\" is not supported (supported post-processors: "
                 "TemplateProcessing, ByteLevel, BertProcessing, RobertaProcessing, Sequence)", t->path, what, ty);
  if (!st) st = wrap(t, &pre, &post);
  free(pre.v);
  free(post.v);
  return st;
}

xpi_status tok_post_parse(xpi_tokenizer *t, const cJSON *pp, int *n_templates) {
  (void)n_templates;
  return parse(t, pp, "post_processor");
}
