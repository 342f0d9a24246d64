/* Loading tokenizer.json: the model (tok_model.c), added tokens, normalizer, pre-tokenizer, post-processor and
 * decoder. Every problem is reported with the file and the JSON path of the field. */
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
    int32_t idv;
    if (!cJSON_IsNumber(id)) return xpi_err(XPI_ERR_FORMAT, "%s: %s.id must be an integer", path, what);
    if (!(id->valuedouble >= 0 && id->valuedouble < TOK_MAX_ID)) /* before any conversion: 1e300 is UB */
      return xpi_err(XPI_ERR_FORMAT, "%s: %s.id = %g is out of range [0, %d)", path, what, id->valuedouble,
                     TOK_MAX_ID);
    if (!tok_json_id(id, &idv)) return xpi_err(XPI_ERR_FORMAT, "%s: %s.id must be an integer", path, what);
    if (!cJSON_IsString(content) || !content->valuestring[0])
      return xpi_err(XPI_ERR_FORMAT, "%s: %s.content must be a non-empty string", path, what);
    static const char *const flags[] = {"special", "lstrip", "rstrip", "normalized", "single_word"};
    for (size_t k = 0; k < 5; k++) XPI_TRY(check_bool(path, what, e, flags[k]));
    tok_added *a = &t->added[t->n_added];
    a->content = xstrdup(content->valuestring);
    if (!a->content) return oom();
    t->n_added++;
    a->len = strlen(a->content);
    a->id = idv;
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
  if (t->model_type == MODEL_UNIGRAM) { /* ids by position; a repeated piece keeps its text under every id */
    const char *p = t->vocab_arena;
    for (size_t i = 0; i < (size_t)t->n_pieces; i++) {
      t->id_text[i] = p;
      t->id_len[i] = strlen(p);
      p += t->id_len[i] + 1;
    }
  }
  for (size_t e = 0; t->model_type != MODEL_UNIGRAM && e < t->vocab.n; e++) {
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
      xpi_status st = tok_norm_apply(t->norm, a->content, a->len, &nb, NULL);
      if (st) { tok_buf_free(&nb); return st; }
      a->norm_content = nb.p;
      a->norm_len = nb.len;
    }
    const char *pat = a->norm_content ? a->norm_content : a->content;
    size_t pl = a->norm_content ? a->norm_len : a->len;
    if (pl) XPI_TRY(trie_insert(a->normalized ? &t->trie_norm : &t->trie_raw, pat, pl, (int32_t)i));
  }
  /* decode(skip_special_tokens) drops by token text, so a vocabulary twin of a special token goes too (in a
   * Unigram vocabulary a piece may repeat: every id of it) */
  for (size_t id = 0; t->model_type == MODEL_UNIGRAM && id < (size_t)t->n_pieces; id++) {
    int32_t a = tok_strmap_get(&t->added_map, t->id_text[id], t->id_len[id]);
    if (a >= 0 && t->id_text[a] && t->id_len[a] == t->id_len[id] && !memcmp(t->id_text[a], t->id_text[id], t->id_len[id]))
      for (size_t i = 0; i < t->n_added; i++)
        if (t->added[i].special && t->added[i].id == a) t->id_special[id] = 1;
  }
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
  free(t->model_unk);
  free(t->prefix);
  free(t->suffix);
  free(t->scores);
  tok_ptrie_free(&t->ptrie);
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

/* Whether a Metaspace pre-tokenizer prepends on the first piece only (then pieces track at_start). */
static int pre_has_first(const tok_pretok *p) {
  if (p->type == PRE_METASPACE && p->prepend_scheme == 1) return 1;
  for (size_t i = 0; i < p->n_kids; i++)
    if (pre_has_first(&p->kids[i])) return 1;
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
    t->meta_first = pre_has_first(t->pretok);
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
  XPI_TRY(tok_model_load(t, cJSON_GetObjectItemCaseSensitive(t->json, "model")));
  XPI_TRY(load_added(t, t->json));
  XPI_TRY(load_components(t, t->json));
  XPI_TRY(build_tables(t));
  /* The post-processor lists its ids itself: each must name a token, or encode would give ids that decode
   * refuses (found by tests/fuzz/fuzz_tokenizer). */
  for (size_t i = 0; i < t->n_post_single; i++)
    if (!tok_id_text(t, t->post_single[i], NULL))
      return xpi_err(XPI_ERR_FORMAT, "%s: post_processor: id %d is not the id of a token in the vocabulary or "
                     "added_tokens", t->path, t->post_single[i]);
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
