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
/* Character classes as tokenizers (Rust std + its unicode crates) define them: tok_unicode.c. */
int tok_is_punct(int32_t cp);          /* ASCII punctuation or general category P* */
int tok_is_numeric(int32_t cp);        /* Nd, Nl, No (char::is_numeric) */
int tok_is_other(int32_t cp);          /* Cc, Cf, Co (BertNormalizer's "control") */
int tok_is_mark_nonspacing(int32_t cp); /* Mn */
int tok_is_combining_mark(int32_t cp); /* Mn, Mc, Me */
int tok_is_cjk(int32_t cp);            /* BertNormalizer's "Chinese character" ranges */
int tok_is_word(int32_t cp);           /* Rust regex \w (the Whitespace pre-tokenizer) */
int tok_norm_unknown(int32_t cp);
int tok_script(int32_t cp);            /* UnicodeScripts' script id (sentencepiece's table); -1: none */      /* a character tokenizers' NFx tables predate: never normalized */
/* Appends the full lowercase mapping of cp (char::to_lowercase: U+0130 becomes two characters). */
xpi_status tok_put_lower(tok_buf *out, int32_t cp);
/* Decodes the character before offset i (i > 0) of valid UTF-8 s; *start gets its offset. */
int32_t tok_utf8_prev(const char *s, size_t i, size_t *start);

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
/* at_start: the piece begins at original offset 0 of the input, as tokenizers' offsets_original().0 == 0
 * (Metaspace's prepend_scheme "first"): the segment starts the input, the normalizer did not delete its first
 * characters, and the piece starts the segment. lead_deleted: set when the pieces' text lost its first characters
 * to the normalizer (the encoder folds it into at_start; the split engine takes it for callers that do not). */
typedef struct tok_span { size_t off, len; int at_start; } tok_span;
typedef struct tok_pieces { tok_buf text; tok_span *v; size_t n, cap; int lead_deleted; } tok_pieces;
xpi_status tok_pieces_add(tok_pieces *p, const char *s, size_t n, int at_start);
void tok_pieces_free(tok_pieces *p);

/* ---- regex (PCRE2, UTF + UCP, JIT when available) */
typedef struct tok_regex { pcre2_code *code; } tok_regex;
xpi_status tok_regex_compile(const char *pattern, const char *what, tok_regex *re);
void tok_regex_free(tok_regex *re);
/* Calls cb for each match [start, end) of re in s, left to right, as Oniguruma's find_iter (tokenizers' SysRegex):
 * empty matches included, except one right at the end of the previous match; no match in an empty s. */
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
enum { NORM_SEQ, NORM_NFC, NORM_NFD, NORM_NFKC, NORM_NFKD, NORM_PREPEND, NORM_REPLACE, NORM_STRIP, NORM_LOWERCASE,
       NORM_STRIP_ACCENTS, NORM_BERT, NORM_PRECOMPILED };
typedef struct tok_charsmap tok_charsmap; /* sentencepiece's precompiled charsmap (tok_precompiled.c) */
typedef struct tok_norm {
  int type;
  struct tok_norm *kids; size_t n_kids;
  char *str;             /* prepend text / replace content */
  tok_pattern pat;       /* replace pattern */
  int left, right;       /* strip */
  int clean_text, chinese, strip_accents, lowercase; /* BertNormalizer */
  tok_charsmap *charsmap; /* Precompiled */
} tok_norm;
/* what: the component's JSON path for messages, e.g. "tokenizer.json: normalizer.normalizers[2]". On failure
 * the partly parsed component is freed (nothing leaks, n is zeroed). */
xpi_status tok_norm_parse(const cJSON *j, const char *what, tok_norm *n);
void tok_norm_free(tok_norm *n);
/* out = normalize(s); *lead_deleted (may be NULL) is set to 1 when characters at the start were deleted, so the
 * first normalized character no longer aligns with original offset 0 (left unchanged otherwise). */
xpi_status tok_norm_apply(const tok_norm *n, const char *s, size_t len, tok_buf *out, int *lead_deleted);
/* Unicode normalizers on a whole string (tok_norm_unicode.c). */
xpi_status tok_norm_unicode(int type, const char *s, size_t len, tok_buf *out);
xpi_status tok_norm_lowercase(const char *s, size_t len, tok_buf *out);
xpi_status tok_norm_strip_accents(const char *s, size_t len, tok_buf *out, int *lead_deleted);
xpi_status tok_norm_bert(const tok_norm *n, const char *s, size_t len, tok_buf *out, int *lead_deleted);
/* Precompiled (tok_precompiled.c): parses the base64 charsmap of a Precompiled normalizer. */
xpi_status tok_charsmap_parse(const cJSON *j, const char *what, tok_charsmap **out);
void tok_charsmap_free(tok_charsmap *m);
xpi_status tok_charsmap_apply(const tok_charsmap *m, const char *s, size_t len, tok_buf *out, int *lead_deleted);
/* A child's JSON path: "<what>.<key>[<i>]" (i < 0: no index). NULL when out of memory. */
char *tok_path_child(const char *what, const char *key, long i);

/* ---- pre-tokenizers */
enum { PRE_SEQ, PRE_SPLIT, PRE_BYTELEVEL, PRE_METASPACE, PRE_DIGITS, PRE_WHITESPACE, PRE_WHITESPACE_SPLIT,
       PRE_PUNCTUATION, PRE_BERT, PRE_CHAR_DELIMITER, PRE_UNICODE_SCRIPTS };
enum { SPLIT_REMOVED, SPLIT_ISOLATED, SPLIT_MERGED_PREV, SPLIT_MERGED_NEXT, SPLIT_CONTIGUOUS };
typedef struct tok_pretok {
  int type;
  struct tok_pretok *kids; size_t n_kids;
  tok_pattern pat; int behavior, invert;     /* Split; Punctuation's behavior; Whitespace's and UnicodeScripts' regex */
  int add_prefix_space, use_regex;           /* ByteLevel */
  unsigned char bl_map[256][3];              /* ByteLevel: UTF-8 length and bytes of each byte's stand-in */
  char repl[8]; size_t repl_len; int prepend_scheme, split; /* Metaspace: 0 never, 1 first, 2 always */
  int individual;                            /* Digits */
  int32_t delim;                             /* CharDelimiterSplit */
} tok_pretok;
xpi_status tok_pretok_parse(const cJSON *j, const char *what, tok_pretok *p);
void tok_pretok_free(tok_pretok *p);
/* Replaces *pieces by the pre-tokenized pieces. */
xpi_status tok_pretok_apply(const tok_pretok *p, tok_pieces *pieces);
/* Splits one piece: the matches of pat (or, pat NULL, the characters for which cls(cp) is true, each its own
 * match), then the behavior, as tokenizers' NormalizedString::split. Appends the kept pieces to out. */
typedef int (*tok_cp_class)(int32_t cp, const void *arg);
xpi_status tok_split_piece(const tok_pattern *pat, tok_cp_class cls, const void *arg, int behavior, int invert,
                           const char *s, size_t n, int at_start, int lead_deleted, tok_pieces *out);
/* Family parsers/appliers (tok_pre_bytelevel.c, tok_metaspace.c, tok_pre_classes.c). */
xpi_status tok_pre_bytelevel_parse(const cJSON *j, const char *what, tok_pretok *p);
xpi_status tok_pre_bytelevel_piece(const tok_pretok *p, const char *s, size_t n, int at_start, tok_pieces *out);
xpi_status tok_pre_metaspace_parse(const cJSON *j, const char *what, tok_pretok *p);
xpi_status tok_pre_metaspace_piece(const tok_pretok *p, const char *s, size_t n, int at_start, int lead_deleted,
                                   tok_pieces *out);
/* Whitespace, WhitespaceSplit, Punctuation, Digits, BertPreTokenizer, CharDelimiterSplit, UnicodeScripts; 0 when
 * t names none of them. */
int tok_pre_class_type(const char *t);
xpi_status tok_pre_class_parse(const cJSON *j, const char *what, tok_pretok *p);
xpi_status tok_pre_class_piece(const tok_pretok *p, const char *s, size_t n, int at_start, int lead_deleted,
                               tok_pieces *out);
/* SplitDelimiterBehavior from its JSON name; -1 if unknown. */
int tok_split_behavior(const char *name);
/* Metaspace's prepend_scheme from the JSON object (prepend_scheme / legacy add_prefix_space). */
xpi_status tok_metaspace_scheme(const cJSON *j, const char *what, int *scheme);
/* ByteLevel tables (GPT-2 bytes_to_unicode). */
size_t tok_bytelevel_char(unsigned char b, char out[4]); /* UTF-8 of the char standing for byte b */
int tok_bytelevel_byte(int32_t cp); /* the byte a char stands for, -1 if cp is not a byte-level char */

/* ---- decoders */
enum { DEC_SEQ, DEC_BYTELEVEL, DEC_REPLACE, DEC_BYTEFALLBACK, DEC_FUSE, DEC_STRIP, DEC_METASPACE, DEC_WORDPIECE,
       DEC_BPE, DEC_CTC };
typedef struct tok_dec {
  int type;
  struct tok_dec *kids; size_t n_kids;
  tok_pattern pat; char *content;            /* Replace; WordPiece prefix; BPEDecoder suffix; CTC pad token */
  char *delim;                               /* CTC word delimiter */
  int cleanup;                               /* WordPiece, CTC */
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
/* WordPiece, BPEDecoder, CTC (tok_dec_words.c). */
xpi_status tok_dec_words_parse(const cJSON *j, const char *what, const char *type, tok_dec *d);
xpi_status tok_dec_words_run(const tok_dec *d, tok_strs *s);
/* In place: replaces every occurrence of from (non-empty) by to. */
xpi_status tok_buf_replace(tok_buf *b, const char *from, const char *to);

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

/* Byte trie over the vocabulary for Unigram's common-prefix search: children of a node are the sorted edge
 * range [first, first + n) of edge_byte/edge_node. */
typedef struct tok_ptrie {
  int32_t *first, *n_children, *token; unsigned char *edge_byte; int32_t *edge_node; size_t n_nodes;
} tok_ptrie;

enum { MODEL_BPE, MODEL_UNIGRAM, MODEL_WORDPIECE, MODEL_WORDLEVEL };

struct xpi_tokenizer {
  char *path;                  /* tokenizer.json path, for messages */
  cJSON *json;                 /* kept: vocab keys point into it */
  /* model */
  int model_type;              /* MODEL_* */
  tok_strmap vocab;            /* model vocabulary */
  tok_pairmap merges;          /* BPE: (left id << 32 | right id) -> (rank, merged id) */
  int ignore_merges, byte_fallback, fuse_unk;
  int32_t unk_id;              /* -1 if none; -2: named (unk_token) but not in the vocabulary, an error when needed */
  char *model_unk;             /* the model's unk_token text (for messages), or NULL */
  char *prefix, *suffix;       /* BPE continuing_subword_prefix / end_of_word_suffix; WordPiece prefix; NULL if none */
  size_t prefix_len, suffix_len;
  int max_chars;               /* WordPiece max_input_chars_per_word */
  double *scores;              /* Unigram: score of each id */
  int32_t n_pieces;            /* Unigram: vocabulary size (ids 0..n_pieces-1; added tokens may follow) */
  double min_score;            /* Unigram: lowest score (unknown pieces score min_score - 10) */
  tok_ptrie ptrie;             /* Unigram: vocabulary trie */
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
  int meta_first;              /* a Metaspace pre-tokenizer with prepend_scheme "first": track at_start */
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
/* Appends the model's ids of one pre-token (dispatches on model_type). */
xpi_status tok_model_word(const xpi_tokenizer *t, const char *w, size_t n, tok_ids *out);
xpi_status tok_bpe_word(const xpi_tokenizer *t, const char *w, size_t n, tok_ids *out);
xpi_status tok_unigram_word(const xpi_tokenizer *t, const char *w, size_t n, tok_ids *out);
xpi_status tok_wordpiece_word(const xpi_tokenizer *t, const char *w, size_t n, tok_ids *out);
xpi_status tok_wordlevel_word(const xpi_tokenizer *t, const char *w, size_t n, tok_ids *out);
/* Model loading (tok_model.c dispatches; tok_bpe_load.c, tok_unigram.c, tok_wordpiece.c). */
xpi_status tok_model_load(xpi_tokenizer *t, const cJSON *model);
xpi_status tok_bpe_load(xpi_tokenizer *t, const cJSON *model);
xpi_status tok_unigram_load(xpi_tokenizer *t, const cJSON *model);
xpi_status tok_wordpiece_load(xpi_tokenizer *t, const cJSON *model, int wordlevel);
/* Shared by the loaders: vocab object {token: id} into t->vocab (texts copied into t->vocab_arena). */
xpi_status tok_load_vocab_object(xpi_tokenizer *t, const cJSON *model);
/* A JSON number that is an integer id in [0, TOK_MAX_ID); the range is checked before any conversion. */
int tok_json_id(const cJSON *v, int32_t *id);
/* Optional string field: NULL (absent/null) or a copy in *out; error if not a string. */
xpi_status tok_json_opt_string(const cJSON *o, const char *key, const char *what, char **out);
void tok_ptrie_free(tok_ptrie *t);
xpi_status tok_oom(void);

#endif
