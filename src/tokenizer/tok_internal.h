/* Shared internals of the tokenizer: the loaded pipeline (normalizer, pre-tokenizer, BPE model, added tokens,
 * post-processor, decoder) and small string utilities. Only the tokenizer sources include this. */
#ifndef XPI_TOKENIZER_TOK_INTERNAL_H
#define XPI_TOKENIZER_TOK_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "xpuinfer.h"
#include "tokenizer/tokenizer.h"

/* Ids are dense array indices; bigger ids in a file are refused as out of range. */
#define TOK_MAX_ID (1 << 24)

/* ---- growable byte buffer (always NUL-terminated when p != NULL) */
typedef struct tok_buf { char *p; size_t len, cap; } tok_buf;
xpi_status tok_buf_put(tok_buf *b, const void *data, size_t n);
xpi_status tok_buf_puts(tok_buf *b, const char *s);
void tok_buf_free(tok_buf *b);

/* ---- UTF-8 */
/* Length of the valid UTF-8 sequence at s (n bytes available), 0 if invalid there. */
size_t tok_utf8_valid_len(const unsigned char *s, size_t n);
/* First invalid byte offset, or n if the whole buffer is valid UTF-8. */
size_t tok_utf8_check(const char *s, size_t n);
/* Decodes one valid character at s (length len from tok_utf8_valid_len). */
int32_t tok_utf8_cp(const unsigned char *s, size_t len);
size_t tok_utf8_put(int32_t cp, char out[4]);
/* Appends s with invalid sequences replaced by U+FFFD as Rust's String::from_utf8_lossy does. */
xpi_status tok_utf8_lossy(tok_buf *out, const char *s, size_t n);
/* Unicode White_Space (Rust char::is_whitespace). */
int tok_is_whitespace(int32_t cp);

/* ---- hash maps: string -> int32 and uint64 -> (int32, int32) */
typedef struct tok_strmap { uint64_t *slots; size_t mask, n; const char **keys; size_t *klens; int32_t *vals; size_t cap; } tok_strmap;
xpi_status tok_strmap_init(tok_strmap *m, size_t expected);
/* Inserts or overwrites; key is not copied (must outlive the map). *old gets the previous value or -1. */
xpi_status tok_strmap_put(tok_strmap *m, const char *key, size_t klen, int32_t val, int32_t *old);
int32_t tok_strmap_get(const tok_strmap *m, const char *key, size_t klen);
void tok_strmap_free(tok_strmap *m);

typedef struct tok_pairmap { uint64_t *keys; int32_t *a, *b; size_t mask, n; } tok_pairmap;
xpi_status tok_pairmap_init(tok_pairmap *m, size_t expected);
xpi_status tok_pairmap_put(tok_pairmap *m, uint64_t key, int32_t a, int32_t b);
int tok_pairmap_get(const tok_pairmap *m, uint64_t key, int32_t *a, int32_t *b);
void tok_pairmap_free(tok_pairmap *m);

/* ---- pieces: spans of one text buffer, the unit pre-tokenizers work on */
typedef struct tok_span { size_t off, len; int at_start; /* begins at original offset 0 */ } tok_span;
typedef struct tok_pieces { tok_buf text; tok_span *v; size_t n, cap; } tok_pieces;
xpi_status tok_pieces_add(tok_pieces *p, const char *s, size_t n, int at_start);
void tok_pieces_free(tok_pieces *p);

/* ---- regex (PCRE2, UTF + UCP, JIT when available) */
typedef struct tok_regex { pcre2_code *code; } tok_regex;
xpi_status tok_regex_compile(const char *pattern, const char *what, tok_regex *re);
void tok_regex_free(tok_regex *re);
/* Calls cb for each non-empty match [start, end) of re in s, left to right. */
typedef xpi_status (*tok_match_fn)(size_t start, size_t end, void *user);
xpi_status tok_regex_each(const tok_regex *re, const char *s, size_t n, tok_match_fn cb, void *user);

/* A pattern of Split/Replace: a literal string or a regex. */
typedef struct tok_pattern { char *literal; size_t lit_len; tok_regex re; int is_regex; } tok_pattern;
xpi_status tok_pattern_parse(const cJSON *j, const char *what, tok_pattern *p);
void tok_pattern_free(tok_pattern *p);
xpi_status tok_pattern_each(const tok_pattern *p, const char *s, size_t n, tok_match_fn cb, void *user);
/* out += s with every match of p replaced by content. */
xpi_status tok_pattern_replace(const tok_pattern *p, const char *s, size_t n, const char *content, tok_buf *out);

/* ---- normalizers */
enum { NORM_SEQ, NORM_NFC, NORM_NFD, NORM_NFKC, NORM_NFKD, NORM_PREPEND, NORM_REPLACE, NORM_STRIP };
typedef struct tok_norm {
  int type;
  struct tok_norm *kids; size_t n_kids;
  char *str;             /* prepend text / replace content */
  tok_pattern pat;       /* replace pattern */
  int left, right;       /* strip */
} tok_norm;
xpi_status tok_norm_parse(const cJSON *j, const char *what, tok_norm *n);
void tok_norm_free(tok_norm *n);
/* out = normalize(s). */
xpi_status tok_norm_apply(const tok_norm *n, const char *s, size_t len, tok_buf *out);

/* ---- pre-tokenizers */
enum { PRE_SEQ, PRE_SPLIT, PRE_BYTELEVEL, PRE_METASPACE };
enum { SPLIT_REMOVED, SPLIT_ISOLATED, SPLIT_MERGED_PREV, SPLIT_MERGED_NEXT, SPLIT_CONTIGUOUS };
typedef struct tok_pretok {
  int type;
  struct tok_pretok *kids; size_t n_kids;
  tok_pattern pat; int behavior, invert;     /* Split */
  int add_prefix_space, use_regex;           /* ByteLevel */
  char repl[8]; size_t repl_len; int prepend_scheme, split; /* Metaspace: 0 never, 1 first, 2 always */
} tok_pretok;
xpi_status tok_pretok_parse(const cJSON *j, const char *what, tok_pretok *p);
void tok_pretok_free(tok_pretok *p);
/* Replaces *pieces by the pre-tokenized pieces. */
xpi_status tok_pretok_apply(const tok_pretok *p, tok_pieces *pieces);
/* ByteLevel tables (GPT-2 bytes_to_unicode). */
size_t tok_bytelevel_char(unsigned char b, char out[4]); /* UTF-8 of the char standing for byte b */
int tok_bytelevel_byte(int32_t cp); /* the byte a char stands for, -1 if cp is not a byte-level char */

/* ---- decoders */
enum { DEC_SEQ, DEC_BYTELEVEL, DEC_REPLACE, DEC_BYTEFALLBACK, DEC_FUSE, DEC_STRIP, DEC_METASPACE };
typedef struct tok_dec {
  int type;
  struct tok_dec *kids; size_t n_kids;
  tok_pattern pat; char *content;            /* Replace */
  int32_t strip_cp; int start, stop;         /* Strip */
  char repl[8]; size_t repl_len; int prepend_scheme; /* Metaspace */
} tok_dec;
xpi_status tok_dec_parse(const cJSON *j, const char *what, tok_dec *d);
void tok_dec_free(tok_dec *d);
/* A list of token strings, the decoder chain's working value. */
typedef struct tok_strs { tok_buf *v; size_t n, cap; } tok_strs;
void tok_strs_free(tok_strs *s);
xpi_status tok_strs_add(tok_strs *s, const char *p, size_t n);
/* Runs the chain and joins: out = decode(tokens). */
xpi_status tok_dec_run(const tok_dec *d, tok_strs *tokens, tok_buf *out);

/* Chat templates (tok_config.c): each named template parsed once, or the error that kept it from parsing. */
struct jj_template;
typedef struct tok_chat_template {
  char *name;                /* "default", "tool_use", ... */
  char *origin;              /* the file it came from, for messages */
  struct jj_template *tpl;   /* NULL when it did not parse */
  char *error;               /* the parse error, or NULL */
} tok_chat_template;
typedef struct tok_chat { tok_chat_template *v; size_t n; } tok_chat;
void tok_chat_free(tok_chat *c);

/* ---- the tokenizer */
typedef struct tok_added {
  char *content; size_t len; int32_t id;
  int special, lstrip, rstrip, normalized, single_word;
  char *norm_content; size_t norm_len; /* content after the normalizer (normalized tokens) */
} tok_added;

/* Byte trie over added-token contents for leftmost-longest matching. */
typedef struct tok_trie_node { int32_t first_child, next_sibling, token; unsigned char byte; } tok_trie_node;
typedef struct tok_trie { tok_trie_node *nodes; size_t n, cap; unsigned char first[32]; } tok_trie;

struct xpi_tokenizer {
  char *path;                  /* tokenizer.json path, for messages */
  cJSON *json;                 /* kept: vocab keys point into it */
  /* model */
  tok_strmap vocab;            /* model vocabulary */
  tok_pairmap merges;          /* (left id << 32 | right id) -> (rank, merged id) */
  int ignore_merges, byte_fallback, fuse_unk;
  int32_t unk_id;              /* -1 if none */
  int32_t byte_ids[256];       /* <0xNN> tokens, -1 if missing */
  /* ids */
  int32_t n_ids;               /* max id + 1 */
  const char **id_text; size_t *id_len; unsigned char *id_special;
  /* added tokens */
  tok_added *added; size_t n_added;
  tok_strmap added_map;        /* content -> id */
  tok_trie trie_raw, trie_norm;
  /* pipeline */
  tok_norm *norm; tok_pretok *pretok; tok_dec *dec;
  int32_t *post_single; size_t n_post_single; int post_seq_pos; /* ids before/after the sequence */
  int has_post;
  /* tokenizer_config.json */
  char *bos_token; char *eos_token; char *pad_token; char *unk_token;
  char *config_path;
  tok_chat *chat;              /* chat templates (src/chat renders them) */
  char *vocab_arena;           /* the vocabulary's token strings */
  int dec_byte_fallback;       /* decoder has ByteFallback */
  int strip_stop;              /* decoder has Strip with stop > 0 (streaming cannot anchor) */
};

/* id -> token text (added content overrides the vocabulary); NULL if none. */
const char *tok_id_text(const xpi_tokenizer *t, int32_t id, size_t *len);
/* out = decode(ids). Ids must have been range-checked. */
xpi_status tok_decode(const xpi_tokenizer *t, const int32_t *ids, size_t n, int skip_special, tok_buf *out);
/* XPI_ERR_INVALID_ARGUMENT naming the first id without a token. */
xpi_status tok_check_ids(const xpi_tokenizer *t, const int32_t *ids, size_t n);
/* Post-processor: fills post_single / post_seq_pos; n_templates counts template processors seen. */
xpi_status tok_post_parse(xpi_tokenizer *t, const cJSON *pp, int *n_templates);
/* Loads tokenizer_config.json fields (optional file). */
xpi_status tok_load_config(xpi_tokenizer *t, const char *dir);

/* ---- encoding pieces */
typedef struct tok_ids { int32_t *v; size_t n, cap; } tok_ids;
xpi_status tok_ids_add(tok_ids *ids, int32_t id);
/* Appends the BPE ids of one pre-token. */
xpi_status tok_bpe_word(const xpi_tokenizer *t, const char *w, size_t n, tok_ids *out);

#endif
