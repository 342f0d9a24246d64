/* TEMPORARY placeholder so other parts link; the tokenizer engineer deletes this file. */
#include "core/status.h"
#define NOTYET xpi_err(XPI_ERR_UNSUPPORTED, "tokenizer not built yet")
xpi_status xpi_tokenizer_load(const char *dir, xpi_tokenizer **out) { (void)dir; *out = 0; return NOTYET; }
void xpi_tokenizer_free(xpi_tokenizer *tok) { (void)tok; }
int32_t xpi_tokenizer_vocab_size(const xpi_tokenizer *tok) { (void)tok; return 0; }
xpi_status xpi_tokenize(const xpi_tokenizer *tok, const char *text, size_t len, int add_special, int32_t *ids,
                        size_t cap, size_t *n_out) { (void)tok; (void)text; (void)len; (void)add_special; (void)ids; (void)cap; (void)n_out; return NOTYET; }
xpi_status xpi_detokenize(const xpi_tokenizer *tok, const int32_t *ids, size_t n, int skip_special, char *text,
                          size_t cap, size_t *len_out) { (void)tok; (void)ids; (void)n; (void)skip_special; (void)text; (void)cap; (void)len_out; return NOTYET; }
xpi_status xpi_detok_stream_create(const xpi_tokenizer *tok, int skip_special, xpi_detok_stream **out) { (void)tok; (void)skip_special; *out = 0; return NOTYET; }
void xpi_detok_stream_free(xpi_detok_stream *s) { (void)s; }
xpi_status xpi_detok_stream_push(xpi_detok_stream *s, int32_t id, const char **piece, size_t *piece_len) { (void)s; (void)id; (void)piece; (void)piece_len; return NOTYET; }
xpi_status xpi_detok_stream_flush(xpi_detok_stream *s, const char **piece, size_t *piece_len) { (void)s; (void)piece; (void)piece_len; return NOTYET; }
xpi_status xpi_apply_chat_template(const xpi_tokenizer *tok, const xpi_chat_message *msgs, size_t n_msgs,
                                   int add_generation_prompt, int enable_thinking, char *text, size_t cap,
                                   size_t *len_out) { (void)tok; (void)msgs; (void)n_msgs; (void)add_generation_prompt; (void)enable_thinking; (void)text; (void)cap; (void)len_out; return NOTYET; }
