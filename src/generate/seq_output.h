/* What one sequence gives back while it generates, apart from the model: streaming detokenization, stop
 * tokens, stop strings, the token budget and the finish reason. It knows nothing of requests or KV caches, so
 * a batching scheduler can keep one per sequence and push each sequence's sampled tokens into it.
 *
 * Semantics (the contract of xpi_request_generate, see include/xpuinfer.h):
 * - Every pushed token counts toward max_new_tokens; the push that reaches it finishes with LENGTH.
 * - A stop token (an eos id, unless ignore_eos) finishes with STOP; its text is never part of the text.
 * - With skip_special, no special added token's text is part of the text (stop strings included).
 * - Stop strings are matched on the decoded text: the text ends at the first byte position where it
 *   contains one (the earliest end; of several ending there, the longest), just before it (include_stop 0)
 *   or just after it (include_stop 1); what follows, even in the same token, is dropped. STOP.
 * - With stop strings excluded, a text tail that is a proper prefix of a stop string is held back until the
 *   text goes on differently or the sequence finishes. Held-back text never gets emitted then withdrawn: the
 *   pieces returned by the pushes, concatenated, are always the final text.
 * - A character split over tokens is emitted once complete; at the end, an incomplete one decodes as
 *   tokenizers' decode would (U+FFFD).
 * - xpi_seq_output_cancel finishes with CANCELLED; held-back text is dropped. */
#ifndef XPI_GENERATE_SEQ_OUTPUT_H
#define XPI_GENERATE_SEQ_OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include "xpuinfer.h"

typedef struct xpi_seq_output {
  /* read-only for callers */
  int finished;                /* no more tokens may be pushed */
  xpi_finish_reason reason;    /* valid once finished */
  int32_t n_generated;         /* tokens pushed */
  /* private */
  xpi_detok_stream *ds;
  int32_t max_new_tokens, n_eos;
  int32_t *eos;                /* copies: the options may go away while the sequence lives */
  char **stops;
  size_t n_stops;
  int include_stop;
  char *text;                  /* decoded text so far; [0, emitted) is final and was returned */
  size_t len, cap, emitted, scanned; /* scanned: stop strings were searched for every end <= scanned */
} xpi_seq_output;

/* Checks the stop strings (valid UTF-8) and copies what it needs from o. eos: the stop token ids. A
 * max_new_tokens of 0 finishes at once (LENGTH). On error nothing is left to free. */
xpi_status xpi_seq_output_init(xpi_seq_output *so, const xpi_tokenizer *tok, const int32_t *eos, int32_t n_eos,
                               const xpi_gen_options *o);
void xpi_seq_output_free(xpi_seq_output *so);

/* One generated token. *piece (valid until the next call) gets the text that became final. Check
 * so->finished afterwards. Pushing into a finished sequence is XPI_ERR_INVALID_ARGUMENT. */
xpi_status xpi_seq_output_push(xpi_seq_output *so, int32_t id, const char **piece, size_t *piece_len);

/* Finishes with CANCELLED unless already finished. */
void xpi_seq_output_cancel(xpi_seq_output *so);

/* The text returned so far (the final text once finished). Not NUL-terminated. */
const char *xpi_seq_output_text(const xpi_seq_output *so, size_t *len);

#endif
