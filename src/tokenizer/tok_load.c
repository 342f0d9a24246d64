/* Loading tokenizer.json: the BPE model (vocab, merges in both forms), added tokens, normalizer,
 * pre-tokenizer, post-processor and decoder. Every problem is reported with the file and the field. */
#include <stdio.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/status.h"
#include "tokenizer/tok_internal.h"

#define MAX_TOKENIZER_JSON ((size_t)1 << 30)

static xpi_status oom(void) { return xpi_err(XPI_ERR_OUT_OF_MEMORY, "tokenizer: out of memory"); }

static char *xstrdup(const char *s) { return s ? strdup(s) : NULL; }

static int get_flag(const cJSON *o, const char *key, int dflt) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

/* Checks that an optional field is a bool (or absent/null). */
static xpi_status check_bool(const char *path, const char *obj, const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (v && !cJSON_IsNull(v) && !cJSON_IsBool(v))
    return xpi_err(XPI_ERR_FORMAT, "%s: %s.%s must be true or false", path, obj, key);
  return XPI_OK;
}

/* ------------------------------------------------------------------ trie */
static xpi_status trie_node(tok_trie *t, unsigned char byte, int32_t *out) {
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    tok_trie_node *v = realloc(t->nodes, cap * sizeof *v);
    if (!v) return oom();
    t->nodes = v;
    t->cap = cap;
  }
  t->nodes[t->n] = (tok_trie_node){-1, -1, -1, byte};
  *out = (int32_t)t->n++;
  return XPI_OK;
}

static xpi_status trie_insert(tok_trie *t, const char *s, size_t n, int32_t token) {
  int32_t node;
  if (!t->n) XPI_TRY(trie_node(t, 0, &node));
  node = 0;
  t->first[(unsigned char)s[0] >> 3] |= (unsigned char)(1u << ((unsigned char)s[0] & 7));
  for (size_t i = 0; i < n; i++) {
    unsigned char b = (unsigned char)s[i];
    int32_t c = t->nodes[node].first_child;
    while (c >= 0 && t->nodes[c].byte != b) c = t->nodes[c].next_sibling;
    if (c < 0) {
      XPI_TRY(trie_node(t, b, &c));
      t->nodes[c].next_sibling = t->nodes[node].first_child;
      t->nodes[node].first_child = c;
    }
    node = c;
  }
  t->nodes[node].token = token;
  return XPI_OK;
}

/* ------------------------------------------------------------------ model */
static xpi_status load_vocab(xpi_tokenizer *t, const cJSON *model, char **arena) {
  const char *path = t->path;
  const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
  if (!cJSON_IsObject(vocab)) return xpi_err(XPI_ERR_FORMAT, "%s: model.vocab must be an object", path);
  size_t n = 0, bytes = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, vocab) {
    n++;
    bytes += strlen(e->string) + 1;
  }
  *arena = malloc(bytes ? bytes : 1);
  if (!*arena) return oom();
  XPI_TRY(tok_strmap_init(&t->vocab, n));
  char *p = *arena;
  cJSON_ArrayForEach(e, vocab) {
    if (!cJSON_IsNumber(e) || e->valuedouble != (double)(int64_t)e->valuedouble)
      return xpi_err(XPI_ERR_FORMAT, "%s: model.vocab[\"%s\"] must be an integer id", path, e->string);
    if (e->valuedouble < 0 || e->valuedouble >= TOK_MAX_ID)
      return xpi_err(XPI_ERR_FORMAT, "%s: model.vocab[\"%s\"] = %.0f is out of range [0, %d)", path, e->string,
                     e->valuedouble, TOK_MAX_ID);
    size_t l = strlen(e->string);
    memcpy(p, e->string, l + 1);
    int32_t old;
    XPI_TRY(tok_strmap_put(&t->vocab, p, l, (int32_t)e->valuedouble, &old));
    if (old >= 0) return xpi_err(XPI_ERR_FORMAT, "%s: model.vocab has the token \"%s\" twice", path, e->string);
    if ((int32_t)e->valuedouble >= t->n_ids) t->n_ids = (int32_t)e->valuedouble + 1;
    p += l + 1;
  }
  return XPI_OK;
}

static xpi_status merge_token(const xpi_tokenizer *t, size_t i, const char *s, size_t n, int32_t *id) {
  *id = tok_strmap_get(&t->vocab, s, n);
  if (*id < 0) return xpi_err(XPI_ERR_FORMAT, "%s: model.merges[%zu]: token \"%.*s\" is not in the vocabulary",
                              t->path, i, (int)n, s);
  return XPI_OK;
}

static xpi_status load_merges(xpi_tokenizer *t, const cJSON *model) {
  const char *path = t->path;
  const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
  if (!merges || cJSON_IsNull(merges)) return tok_pairmap_init(&t->merges, 16);
  if (!cJSON_IsArray(merges)) return xpi_err(XPI_ERR_FORMAT, "%s: model.merges must be an array", path);
  XPI_TRY(tok_pairmap_init(&t->merges, (size_t)cJSON_GetArraySize(merges)));
  tok_buf cat = {0};
  size_t i = 0;
  xpi_status st = XPI_OK;
  const cJSON *e;
  cJSON_ArrayForEach(e, merges) {
    const char *a, *b;
    size_t la, lb;
    if (cJSON_IsString(e)) { /* legacy "a b" */
      const char *sp = strchr(e->valuestring, ' ');
      if (!sp || strchr(sp + 1, ' ')) {
        st = xpi_err(XPI_ERR_FORMAT, "%s: model.merges[%zu] = \"%s\" is not two tokens separated by one space",
                     path, i, e->valuestring);
        break;
      }
      a = e->valuestring; la = (size_t)(sp - a);
      b = sp + 1; lb = strlen(b);
    } else if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 && cJSON_IsString(cJSON_GetArrayItem(e, 0)) &&
               cJSON_IsString(cJSON_GetArrayItem(e, 1))) {
      a = cJSON_GetArrayItem(e, 0)->valuestring; la = strlen(a);
      b = cJSON_GetArrayItem(e, 1)->valuestring; lb = strlen(b);
    } else {
      st = xpi_err(XPI_ERR_FORMAT, "%s: model.merges[%zu] must be \"a b\" or [\"a\", \"b\"]", path, i);
      break;
    }
    int32_t ia, ib, im;
    if ((st = merge_token(t, i, a, la, &ia)) || (st = merge_token(t, i, b, lb, &ib))) break;
    cat.len = 0;
    if ((st = tok_buf_put(&cat, a, la)) || (st = tok_buf_put(&cat, b, lb))) break;
    if ((st = merge_token(t, i, cat.p, cat.len, &im))) break;
    if ((st = tok_pairmap_put(&t->merges, ((uint64_t)(uint32_t)ia << 32) | (uint32_t)ib, (int32_t)i, im))) break;
    i++;
  }
  tok_buf_free(&cat);
  return st;
}

static xpi_status load_model(xpi_tokenizer *t, const cJSON *root, char **arena) {
  const char *path = t->path;
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  if (!cJSON_IsObject(model)) return xpi_err(XPI_ERR_FORMAT, "%s: \"model\" must be an object", path);
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
  if (type && !cJSON_IsString(type)) return xpi_err(XPI_ERR_FORMAT, "%s: model.type must be a string", path);
  if (type ? strcmp(type->valuestring, "BPE") != 0 : !cJSON_GetObjectItemCaseSensitive(model, "merges"))
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: model.type \"%s\" is not supported (only BPE)", path,
                   type ? type->valuestring : "(none)");
  static const char *const bools[] = {"byte_fallback", "fuse_unk", "ignore_merges"};
  for (size_t i = 0; i < 3; i++) XPI_TRY(check_bool(path, "model", model, bools[i]));
  t->byte_fallback = get_flag(model, "byte_fallback", 0);
  t->fuse_unk = get_flag(model, "fuse_unk", 0);
  t->ignore_merges = get_flag(model, "ignore_merges", 0);
  static const char *const affixes[] = {"continuing_subword_prefix", "end_of_word_suffix"};
  for (size_t i = 0; i < 2; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(model, affixes[i]);
    if (v && !cJSON_IsNull(v) && !(cJSON_IsString(v) && !v->valuestring[0]))
      return xpi_err(XPI_ERR_UNSUPPORTED, "%s: model.%s is not supported (must be null or \"\")", path, affixes[i]);
  }
  const cJSON *drop = cJSON_GetObjectItemCaseSensitive(model, "dropout");
  if (drop && !cJSON_IsNull(drop) && !(cJSON_IsNumber(drop) && drop->valuedouble == 0))
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: model.dropout is not supported (must be null)", path);
  XPI_TRY(load_vocab(t, model, arena));
  XPI_TRY(load_merges(t, model));
  const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
  t->unk_id = -1;
  if (unk && !cJSON_IsNull(unk)) {
    if (!cJSON_IsString(unk)) return xpi_err(XPI_ERR_FORMAT, "%s: model.unk_token must be a string or null", path);
    t->unk_id = tok_strmap_get(&t->vocab, unk->valuestring, strlen(unk->valuestring));
    if (t->unk_id < 0)
      return xpi_err(XPI_ERR_FORMAT, "%s: model.unk_token \"%s\" is not in the vocabulary", path, unk->valuestring);
  }
  for (int b = 0; b < 256; b++) {
    char name[8];
    snprintf(name, sizeof name, "<0x%02X>", b);
    t->byte_ids[b] = tok_strmap_get(&t->vocab, name, 6);
  }
  return XPI_OK;
}

/* ------------------------------------------------------------------ added tokens */
static xpi_status load_added(xpi_tokenizer *t, const cJSON *root) {
  const char *path = t->path;
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
  XPI_TRY(tok_strmap_init(&t->added_map, 16));
  if (!arr || cJSON_IsNull(arr)) return XPI_OK;
  if (!cJSON_IsArray(arr)) return xpi_err(XPI_ERR_FORMAT, "%s: \"added_tokens\" must be an array", path);
  size_t n = (size_t)cJSON_GetArraySize(arr);
  t->added = calloc(n ? n : 1, sizeof *t->added);
  if (!t->added) return oom();
  const cJSON *e;
  size_t i = 0;
  cJSON_ArrayForEach(e, arr) {
    char what[64];
    snprintf(what, sizeof what, "added_tokens[%zu]", i);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(e, "content");
    if (!cJSON_IsObject(e)) return xpi_err(XPI_ERR_FORMAT, "%s: %s must be an object", path, what);
    if (!cJSON_IsNumber(id) || id->valuedouble != (double)(int64_t)id->valuedouble)
      return xpi_err(XPI_ERR_FORMAT, "%s: %s.id must be an integer", path, what);
    if (id->valuedouble < 0 || id->valuedouble >= TOK_MAX_ID)
      return xpi_err(XPI_ERR_FORMAT, "%s: %s.id = %.0f is out of range [0, %d)", path, what, id->valuedouble,
                     TOK_MAX_ID);
    if (!cJSON_IsString(content) || !content->valuestring[0])
      return xpi_err(XPI_ERR_FORMAT, "%s: %s.content must be a non-empty string", path, what);
    static const char *const flags[] = {"special", "lstrip", "rstrip", "normalized", "single_word"};
    for (size_t k = 0; k < 5; k++) XPI_TRY(check_bool(path, what, e, flags[k]));
    tok_added *a = &t->added[t->n_added];
    a->content = xstrdup(content->valuestring);
    if (!a->content) return oom();
    t->n_added++;
    a->len = strlen(a->content);
    a->id = (int32_t)id->valuedouble;
    a->special = get_flag(e, "special", 0);
    a->lstrip = get_flag(e, "lstrip", 0);
    a->rstrip = get_flag(e, "rstrip", 0);
    a->normalized = get_flag(e, "normalized", !a->special);
    a->single_word = get_flag(e, "single_word", 0);
    if (a->id >= t->n_ids) t->n_ids = a->id + 1;
    i++;
  }
  return XPI_OK;
}

/* Builds the id tables and the added-token tries (needs the normalizer). */
static xpi_status build_tables(xpi_tokenizer *t) {
  size_t n = (size_t)t->n_ids;
  t->id_text = calloc(n ? n : 1, sizeof *t->id_text);
  t->id_len = calloc(n ? n : 1, sizeof *t->id_len);
  t->id_special = calloc(n ? n : 1, 1);
  if (!t->id_text || !t->id_len || !t->id_special) return oom();
  for (size_t e = 0; e < t->vocab.n; e++) {
    int32_t id = t->vocab.vals[e];
    if (t->id_text[id])
      return xpi_err(XPI_ERR_FORMAT, "%s: model.vocab: id %d is given to both \"%s\" and \"%s\"", t->path, id,
                     t->id_text[id], t->vocab.keys[e]);
    t->id_text[t->vocab.vals[e]] = t->vocab.keys[e];
    t->id_len[t->vocab.vals[e]] = t->vocab.klens[e];
  }
  for (size_t i = 0; i < t->n_added; i++) {
    tok_added *a = &t->added[i];
    t->id_text[a->id] = a->content;
    t->id_len[a->id] = a->len;
    XPI_TRY(tok_strmap_put(&t->added_map, a->content, a->len, a->id, NULL));
    if (a->normalized && t->norm) {
      tok_buf nb = {0};
      xpi_status st = tok_norm_apply(t->norm, a->content, a->len, &nb);
      if (st) { tok_buf_free(&nb); return st; }
      a->norm_content = nb.p;
      a->norm_len = nb.len;
    }
    const char *pat = a->norm_content ? a->norm_content : a->content;
    size_t pl = a->norm_content ? a->norm_len : a->len;
    if (pl) XPI_TRY(trie_insert(a->normalized ? &t->trie_norm : &t->trie_raw, pat, pl, (int32_t)i));
  }
  /* decode(skip_special_tokens) drops by token text, so a vocabulary twin of a special token goes too */
  for (size_t i = 0; i < t->n_added; i++) {
    if (!t->added[i].special) continue;
    t->id_special[t->added[i].id] = 1;
    int32_t v = tok_strmap_get(&t->vocab, t->added[i].content, t->added[i].len);
    if (v >= 0 && t->id_text[v] && t->id_len[v] == t->added[i].len &&
        !memcmp(t->id_text[v], t->added[i].content, t->added[i].len))
      t->id_special[v] = 1;
  }
  return XPI_OK;
}

/* ------------------------------------------------------------------ top level */
static void tok_destroy(xpi_tokenizer *t) {
  if (!t) return;
  free(t->path);
  cJSON_Delete(t->json);
  tok_strmap_free(&t->vocab);
  tok_pairmap_free(&t->merges);
  free(t->id_text);
  free(t->id_len);
  free(t->id_special);
  for (size_t i = 0; i < t->n_added; i++) {
    free(t->added[i].content);
    free(t->added[i].norm_content);
  }
  free(t->added);
  tok_strmap_free(&t->added_map);
  free(t->trie_raw.nodes);
  free(t->trie_norm.nodes);
  if (t->norm) tok_norm_free(t->norm);
  free(t->norm);
  if (t->pretok) tok_pretok_free(t->pretok);
  free(t->pretok);
  if (t->dec) tok_dec_free(t->dec);
  free(t->dec);
  free(t->post_single);
  tok_chat_free(t->chat);
  free(t->bos_token);
  free(t->eos_token);
  free(t->pad_token);
  free(t->unk_token);
  free(t->config_path);
  free(t->vocab_arena);
  free(t);
}

/* Whether the decoder chain has a component of this type (Strip: one that strips at the end). */
static int dec_has(const tok_dec *d, int type) {
  if (d->type == type && (type != DEC_STRIP || d->stop > 0)) return 1;
  for (size_t i = 0; i < d->n_kids; i++)
    if (dec_has(&d->kids[i], type)) return 1;
  return 0;
}

static xpi_status load_components(xpi_tokenizer *t, const cJSON *root) {
  char what[4096 + 32];
  const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
  if (n && !cJSON_IsNull(n)) {
    snprintf(what, sizeof what, "%s: normalizer", t->path);
    if (!(t->norm = calloc(1, sizeof *t->norm))) return oom();
    XPI_TRY(tok_norm_parse(n, what, t->norm));
  }
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
  if (p && !cJSON_IsNull(p)) {
    snprintf(what, sizeof what, "%s: pre_tokenizer", t->path);
    if (!(t->pretok = calloc(1, sizeof *t->pretok))) return oom();
    XPI_TRY(tok_pretok_parse(p, what, t->pretok));
  }
  const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "decoder");
  if (d && !cJSON_IsNull(d)) {
    snprintf(what, sizeof what, "%s: decoder", t->path);
    if (!(t->dec = calloc(1, sizeof *t->dec))) return oom();
    XPI_TRY(tok_dec_parse(d, what, t->dec));
    t->strip_stop = dec_has(t->dec, DEC_STRIP);
    t->dec_byte_fallback = dec_has(t->dec, DEC_BYTEFALLBACK);
  }
  const cJSON *pp = cJSON_GetObjectItemCaseSensitive(root, "post_processor");
  if (pp && !cJSON_IsNull(pp)) {
    int n_templates = 0;
    XPI_TRY(tok_post_parse(t, pp, &n_templates));
  }
  return XPI_OK;
}

static xpi_status tok_load(const char *dir, xpi_tokenizer *t) {
  t->path = xpi_path_join(dir, "tokenizer.json");
  if (!t->path) return XPI_ERR_OUT_OF_MEMORY;
  XPI_TRY(xpi_json_load_file(t->path, MAX_TOKENIZER_JSON, &t->json));
  if (!cJSON_IsObject(t->json)) return xpi_err(XPI_ERR_FORMAT, "%s: the top level must be a JSON object", t->path);
  XPI_TRY(load_model(t, t->json, &t->vocab_arena));
  XPI_TRY(load_added(t, t->json));
  XPI_TRY(load_components(t, t->json));
  XPI_TRY(build_tables(t));
  cJSON_Delete(t->json); /* everything needed was copied */
  t->json = NULL;
#ifdef __GLIBC__
  /* The parse tree of a large tokenizer.json (~60 MB for Qwen3's) is freed heap that glibc would otherwise keep
   * resident for the life of the process; the tables kept are ~20 MB. */
  malloc_trim(0);
#endif
  return tok_load_config(t, dir);
}

xpi_status xpi_tokenizer_load(const char *dir, xpi_tokenizer **out) {
  if (!out) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_tokenizer_load: out is NULL");
  *out = NULL;
  if (!dir) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_tokenizer_load: dir is NULL");
  xpi_tokenizer *t = calloc(1, sizeof *t);
  if (!t) return oom();
  xpi_status st = tok_load(dir, t);
  if (st) {
    tok_destroy(t);
    return st;
  }
  *out = t;
  return XPI_OK;
}

void xpi_tokenizer_free(xpi_tokenizer *tok) { tok_destroy(tok); }

int32_t xpi_tokenizer_vocab_size(const xpi_tokenizer *tok) { return tok ? tok->n_ids : 0; }

/* ------------------------------------------------------------------ internal queries (tokenizer.h) */
const char *tok_id_text(const xpi_tokenizer *t, int32_t id, size_t *len) {
  if (!t || id < 0 || id >= t->n_ids || !t->id_text[id]) return NULL;
  if (len) *len = t->id_len[id];
  return t->id_text[id];
}

int32_t xpi_tokenizer_token_id(const xpi_tokenizer *tok, const char *token) {
  if (!tok || !token) return -1;
  size_t l = strlen(token);
  int32_t id = tok_strmap_get(&tok->added_map, token, l);
  return id >= 0 ? id : tok_strmap_get(&tok->vocab, token, l);
}

int xpi_tokenizer_is_special(const xpi_tokenizer *tok, int32_t id) {
  return tok && id >= 0 && id < tok->n_ids && tok->id_special[id];
}

int32_t xpi_tokenizer_bos_id(const xpi_tokenizer *tok) {
  return tok && tok->post_seq_pos > 0 ? tok->post_single[0] : -1;
}

const char *xpi_tokenizer_token_text(const xpi_tokenizer *tok, int32_t id) { return tok_id_text(tok, id, NULL); }

int32_t xpi_tokenizer_config_token_id(const xpi_tokenizer *tok, const char *key) {
  if (!tok || !key) return -1;
  const char *s = !strcmp(key, "eos_token") ? tok->eos_token : !strcmp(key, "bos_token") ? tok->bos_token
                  : !strcmp(key, "pad_token") ? tok->pad_token : !strcmp(key, "unk_token") ? tok->unk_token : NULL;
  return s ? xpi_tokenizer_token_id(tok, s) : -1;
}
