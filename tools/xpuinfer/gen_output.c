/* xpuinfer generate --json: one object per prompt and line, in input order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_gen.h"
#include "gen.h"

int gen_print_json(const gen_item *it, int logprobs) {
  cli_buf out = {0};
  cli_buf_printf(&out, "{\"index\": %d", it->index);
  if (it->error) {
    cli_buf_puts(&out, ", \"error\": ");
    cli_json_str(&out, it->error, strlen(it->error));
    cli_buf_puts(&out, "}");
  } else {
    const xpi_gen_result *g = &it->res;
    cli_buf_puts(&out, ", \"prompt\": ");
    const char *given = it->prompt ? it->prompt : it->conversation ? it->conversation : ""; /* text, or messages */
    cli_json_str(&out, given, strlen(given));
    cli_buf_puts(&out, ", \"text\": ");
    cli_json_str(&out, it->text.p ? it->text.p : "", it->text.len);
    cli_buf_puts(&out, ", \"prompt_ids\": [");
    for (size_t i = 0; i < it->n_ids; i++) cli_buf_printf(&out, "%s%d", i ? ", " : "", it->ids[i]);
    cli_buf_puts(&out, "], \"ids\": [");
    cli_buf_add(&out, it->out_ids.p ? it->out_ids.p : "", it->out_ids.len);
    cli_buf_printf(&out, "], \"finish_reason\": \"%s\"", cli_finish_name(g->finish_reason));
    /* tok_s: the tokens after the first, over the time they took (the time to the first token apart) */
    const double tok_s = g->n_generated > 1 && g->generate_seconds > 0 ? (g->n_generated - 1) / g->generate_seconds : 0;
    cli_buf_printf(&out, ", \"prompt_tokens\": %d, \"completion_tokens\": %d, \"ttft_s\": ", g->n_prompt_tokens,
                   g->n_generated);
    cli_json_num(&out, g->prompt_seconds, 4);
    cli_buf_puts(&out, ", \"tok_s\": ");
    cli_json_num(&out, tok_s, 2);
    if (logprobs) {
      cli_buf_puts(&out, ", \"logprobs\": [");
      cli_buf_add(&out, it->lp.p ? it->lp.p : "", it->lp.len);
      cli_buf_puts(&out, "]");
    }
    cli_buf_puts(&out, "}");
  }
  const int oom = out.oom;
  if (!oom) {
    printf("%s\n", out.p);
    fflush(stdout);
  }
  cli_buf_free(&out);
  return oom ? -1 : 0;
}
