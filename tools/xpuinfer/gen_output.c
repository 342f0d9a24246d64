/* xpuinfer generate --json: one object per prompt and line, in input order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

static const char *reason_name(xpi_finish_reason r) {
  return r == XPI_FINISH_STOP ? "stop" : r == XPI_FINISH_CANCELLED ? "cancelled" : "length";
}

int gen_print_json(const gen_item *it, int logprobs) {
  gbuf out = {0};
  int e = gbuf_printf(&out, "{\"index\": %d", it->index);
  if (it->error) {
    e |= gbuf_add(&out, ", \"error\": ", 11) | gbuf_json_str(&out, it->error, strlen(it->error)) | gbuf_add(&out, "}", 1);
  } else {
    const xpi_gen_result *g = &it->res.gen;
    e |= gbuf_add(&out, ", \"prompt\": ", 12);
    e |= it->prompt ? gbuf_json_str(&out, it->prompt, strlen(it->prompt)) : gbuf_add(&out, "null", 4);
    e |= gbuf_add(&out, ", \"text\": ", 10) | gbuf_json_str(&out, it->text.p ? it->text.p : "", it->text.len);
    e |= gbuf_add(&out, ", \"prompt_ids\": [", 17);
    for (size_t i = 0; i < it->n_ids; i++) e |= gbuf_printf(&out, "%s%d", i ? ", " : "", it->ids[i]);
    e |= gbuf_add(&out, "], \"ids\": [", 11) | gbuf_add(&out, it->out_ids.p ? it->out_ids.p : "", it->out_ids.len);
    e |= gbuf_printf(&out, "], \"finish_reason\": \"%s\"", reason_name(g->finish_reason));
    /* tok_s: the tokens after the first, over the time they took (time to first token apart) */
    const double tok_s = g->n_generated > 1 && g->generate_seconds > 0 ? (g->n_generated - 1) / g->generate_seconds : 0;
    e |= gbuf_printf(&out, ", \"prompt_tokens\": %d, \"completion_tokens\": %d, \"ttft_s\": %.4f, \"tok_s\": %.2f",
                     g->n_prompt_tokens, g->n_generated, g->prompt_seconds, tok_s);
    if (logprobs)
      e |= gbuf_add(&out, ", \"logprobs\": [", 15) | gbuf_add(&out, it->lp.p ? it->lp.p : "", it->lp.len) |
           gbuf_add(&out, "]", 1);
    e |= gbuf_add(&out, "}", 1);
  }
  if (!e) {
    printf("%s\n", out.p);
    fflush(stdout);
  }
  free(out.p);
  return e ? -1 : 0;
}
