/* Internal tokenizer queries for the model and generation code (stable names; see include/xpuinfer.h for the
 * public tokenizer API). All functions accept any id and return -1/0 for ids outside the vocabulary. */
#ifndef XPI_TOKENIZER_TOKENIZER_H
#define XPI_TOKENIZER_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include "xpuinfer.h"

/* Id of a token given its exact text (added tokens first, then the model vocabulary, as tokenizers'
 * token_to_id), e.g. "<|im_end|>"; -1 if there is none. */
int32_t xpi_tokenizer_token_id(const xpi_tokenizer *tok, const char *token);
/* 1 if id is a special added token (the ones decode(skip_special_tokens=True) drops), else 0. */
int xpi_tokenizer_is_special(const xpi_tokenizer *tok, int32_t id);
/* The id the post-processor puts in front of a single sequence (BOS, e.g. 128000 for Llama 3, 1 for
 * Llama 2); -1 when the post-processor adds nothing in front (Qwen). */
int32_t xpi_tokenizer_bos_id(const xpi_tokenizer *tok);
/* Id of a token named in tokenizer_config.json ("eos_token", "bos_token", "pad_token", "unk_token"); -1 when
 * the file, the key or the token is missing. */
int32_t xpi_tokenizer_config_token_id(const xpi_tokenizer *tok, const char *key);
/* The stored text of a token (vocabulary form, e.g. "Ġthe"), NULL for an id without a token. */
const char *xpi_tokenizer_token_text(const xpi_tokenizer *tok, int32_t id);

/* First invalid byte offset of s[0..n), or n when it is all valid UTF-8. */
size_t xpi_utf8_check(const char *s, size_t n);

#endif
