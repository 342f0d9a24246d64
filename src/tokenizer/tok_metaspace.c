/* Metaspace (sentencepiece's "▁" for spaces): the pre-tokenizer (spaces replaced, the replacement prepended
 * always / on the piece at the input's start only / never, then optionally split before each replacement) and
 * the prepend_scheme parsing the decoder shares. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

xpi_status tok_metaspace_scheme(const cJSON *j, const char *what, int *scheme) {
  const cJSON *ps = cJSON_GetObjectItemCaseSensitive(j, "prepend_scheme");
  const cJSON *aps = cJSON_GetObjectItemCaseSensitive(j, "add_prefix_space");
  *scheme = 2;
  if (cJSON_IsString(ps)) {
    if (!strcmp(ps->valuestring, "always")) *scheme = 2;
    else if (!strcmp(ps->valuestring, "first")) *scheme = 1;
    else if (!strcmp(ps->valuestring, "never")) *scheme = 0;
    else return xpi_err(XPI_ERR_FORMAT, "%s: Metaspace prepend_scheme \"%s\" is unknown (always, first, never)", what,
                        ps->valuestring);
  } else if (ps && !cJSON_IsNull(ps)) {
    return xpi_err(XPI_ERR_FORMAT, "%s: Metaspace prepend_scheme must be a string", what);
  } else if (cJSON_IsFalse(aps)) { /* the legacy form */
    *scheme = 0;
  }
  return XPI_OK;
}

xpi_status tok_pre_metaspace_parse(const cJSON *j, const char *what, tok_pretok *p) {
  p->type = PRE_METASPACE;
  const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "replacement");
  const char *rs = cJSON_IsString(r) ? r->valuestring : "\xE2\x96\x81";
  size_t rl = strlen(rs);
  if (!rl || rl > 4 || tok_utf8_valid_len((const unsigned char *)rs, rl) != rl)
    return xpi_err(XPI_ERR_FORMAT, "%s: Metaspace \"replacement\" must be one character", what);
  memcpy(p->repl, rs, rl);
  p->repl_len = rl;
  XPI_TRY(tok_metaspace_scheme(j, what, &p->prepend_scheme));
  const cJSON *sp = cJSON_GetObjectItemCaseSensitive(j, "split");
  p->split = sp && !cJSON_IsNull(sp) ? cJSON_IsTrue(sp) : 1;
  return XPI_OK;
}

xpi_status tok_pre_metaspace_piece(const tok_pretok *p, const char *s, size_t n, int at_start, int lead_deleted,
                                   tok_pieces *out) {
  tok_buf r = {0};
  xpi_status st = XPI_OK;
  int starts = n >= p->repl_len && !memcmp(s, p->repl, p->repl_len);
  int starts_space = n && s[0] == ' ';
  if (n && !starts && !starts_space && (p->prepend_scheme == 2 || (p->prepend_scheme == 1 && at_start)))
    st = tok_buf_put(&r, p->repl, p->repl_len);
  for (size_t i = 0; !st && i < n; i++)
    st = s[i] == ' ' ? tok_buf_put(&r, p->repl, p->repl_len) : tok_buf_put(&r, s + i, 1);
  if (!st && r.len) {
    if (p->split) {
      tok_pattern pat = {0};
      pat.literal = (char *)p->repl;
      pat.lit_len = p->repl_len;
      st = tok_split_piece(&pat, NULL, NULL, SPLIT_MERGED_NEXT, 0, r.p, r.len, at_start, lead_deleted, out);
    } else {
      st = tok_pieces_add(out, r.p, r.len, at_start);
    }
  }
  tok_buf_free(&r);
  return st;
}
