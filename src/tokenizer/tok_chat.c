/* Chat rendering: a C transcription of each known template family (Qwen3 ChatML with thinking, Qwen2/Qwen2.5
 * ChatML with its default system prompt, Llama 3, Llama 3.1/3.3 Instruct without tools), equal to transformers'
 * apply_chat_template output. The family
 * comes from tok_config.c; anything else is refused. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/status.h"
#include "tokenizer/tok_internal.h"

/* ---------------------------------------------------------------- Python string helpers */
static int py_space(unsigned char c) { return (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x20); }

/* Python str.isspace for a whole character. */
static size_t space_len(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  if (!n) return 0;
  if (u[0] < 0x80) return py_space(u[0]) ? 1 : 0;
  size_t l = tok_utf8_valid_len(u, n);
  if (!l) return 0;
  int32_t c = tok_utf8_cp(u, l);
  return (c == 0x85 || tok_is_whitespace(c)) ? l : 0;
}

static void py_strip(const char **s, size_t *n) {
  size_t l;
  while (*n && (l = space_len(*s, *n))) { *s += l; *n -= l; }
  for (;;) {
    if (!*n) return;
    size_t st = *n - 1;
    while (st > 0 && ((unsigned char)(*s)[st] & 0xC0) == 0x80) st--;
    if (space_len(*s + st, *n - st) != *n - st) return;
    *n = st;
  }
}

static void strip_nl(const char **s, size_t *n, int left, int right) {
  while (left && *n && **s == '\n') { (*s)++; (*n)--; }
  while (right && *n && (*s)[*n - 1] == '\n') (*n)--;
}

/* Offset of the first / last occurrence of needle in s[0..n), or -1. */
static long find_first(const char *s, size_t n, const char *needle) {
  const char *h = memmem(s, n, needle, strlen(needle));
  return h ? (long)(h - s) : -1;
}
static long find_last(const char *s, size_t n, const char *needle) {
  size_t nl = strlen(needle);
  for (size_t i = n >= nl ? n - nl + 1 : 0; i-- > 0;)
    if (!memcmp(s + i, needle, nl)) return (long)i;
  return -1;
}

static int starts_with(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }
static int ends_with(const char *s, const char *p) {
  size_t a = strlen(s), b = strlen(p);
  return a >= b && !memcmp(s + a - b, p, b);
}

/* ---------------------------------------------------------------- Qwen3 */
static xpi_status render_qwen3(const xpi_chat_message *m, size_t n, int gen, int think, tok_buf *o) {
  xpi_status st = tok_buf_put(o, "", 0);
  if (n && !strcmp(m[0].role, "system")) {
    st = tok_buf_puts(o, "<|im_start|>system\n");
    if (!st) st = tok_buf_puts(o, m[0].content);
    if (!st) st = tok_buf_puts(o, "<|im_end|>\n");
  }
  /* the last user message that is not a tool response */
  long last_query = (long)n - 1;
  for (size_t k = n; k-- > 0;) {
    if (!strcmp(m[k].role, "user") &&
        !(starts_with(m[k].content, "<tool_response>") && ends_with(m[k].content, "</tool_response>"))) {
      last_query = (long)k;
      break;
    }
  }
  for (size_t i = 0; !st && i < n; i++) {
    const char *role = m[i].role, *c = m[i].content;
    if (!strcmp(role, "user") || (!strcmp(role, "system") && i > 0)) {
      st = tok_buf_puts(o, "<|im_start|>");
      if (!st) st = tok_buf_puts(o, role);
      if (!st) st = tok_buf_puts(o, "\n");
      if (!st) st = tok_buf_puts(o, c);
      if (!st) st = tok_buf_puts(o, "<|im_end|>\n");
    } else if (!strcmp(role, "assistant")) {
      const char *content = c, *reason = "";
      size_t clen = strlen(c), rlen = 0;
      long close_last = find_last(c, clen, "</think>");
      if (close_last >= 0) {
        content = c + close_last + 8;
        clen = clen - (size_t)close_last - 8;
        strip_nl(&content, &clen, 1, 0);
        size_t before = (size_t)find_first(c, strlen(c), "</think>");
        reason = c;
        rlen = before;
        strip_nl(&reason, &rlen, 0, 1);
        long open = find_last(reason, rlen, "<think>");
        if (open >= 0) { reason += open + 7; rlen -= (size_t)open + 7; }
        strip_nl(&reason, &rlen, 1, 0);
      }
      st = tok_buf_puts(o, "<|im_start|>assistant\n");
      if (!st && (long)i > last_query && (i == n - 1 || rlen)) {
        strip_nl(&reason, &rlen, 1, 1);
        strip_nl(&content, &clen, 1, 0);
        st = tok_buf_puts(o, "<think>\n");
        if (!st) st = tok_buf_put(o, reason, rlen);
        if (!st) st = tok_buf_puts(o, "\n</think>\n\n");
      }
      if (!st) st = tok_buf_put(o, content, clen);
      if (!st) st = tok_buf_puts(o, "<|im_end|>\n");
    } else if (!strcmp(role, "tool")) {
      if (i == 0 || strcmp(m[i - 1].role, "tool")) st = tok_buf_puts(o, "<|im_start|>user");
      if (!st) st = tok_buf_puts(o, "\n<tool_response>\n");
      if (!st) st = tok_buf_puts(o, c);
      if (!st) st = tok_buf_puts(o, "\n</tool_response>");
      if (!st && (i == n - 1 || strcmp(m[i + 1].role, "tool"))) st = tok_buf_puts(o, "<|im_end|>\n");
    }
  }
  if (!st && gen) {
    st = tok_buf_puts(o, "<|im_start|>assistant\n");
    if (!st && !think) st = tok_buf_puts(o, "<think>\n\n</think>\n\n");
  }
  return st;
}

/* ---------------------------------------------------------------- ChatML (Qwen2, Qwen2.5) */
static xpi_status chatml_turn(tok_buf *o, const char *role, const char *content) {
  XPI_TRY(tok_buf_puts(o, "<|im_start|>"));
  XPI_TRY(tok_buf_puts(o, role));
  XPI_TRY(tok_buf_puts(o, "\n"));
  XPI_TRY(tok_buf_puts(o, content));
  return tok_buf_puts(o, "<|im_end|>\n");
}

static xpi_status render_chatml(const xpi_tokenizer *t, const xpi_chat_message *m, size_t n, int gen, tok_buf *o) {
  xpi_status st = tok_buf_put(o, "", 0);
  int has_system = n && !strcmp(m[0].role, "system");
  if (!st && has_system) st = chatml_turn(o, "system", m[0].content);
  else if (!st && t->chat_default_system) st = chatml_turn(o, "system", t->chat_default_system);
  for (size_t i = has_system ? 1 : 0; !st && i < n; i++) {
    const char *role = m[i].role;
    if (!t->chat_tool_response) {
      st = chatml_turn(o, role, m[i].content); /* Qwen2: every role alike */
    } else if (!strcmp(role, "user") || !strcmp(role, "system") || !strcmp(role, "assistant")) {
      st = chatml_turn(o, role, m[i].content);
    } else if (!strcmp(role, "tool")) { /* Qwen2.5 */
      if (i == 0 || strcmp(m[i - 1].role, "tool")) st = tok_buf_puts(o, "<|im_start|>user");
      if (!st) st = tok_buf_puts(o, "\n<tool_response>\n");
      if (!st) st = tok_buf_puts(o, m[i].content);
      if (!st) st = tok_buf_puts(o, "\n</tool_response>");
      if (!st && (i == n - 1 || strcmp(m[i + 1].role, "tool"))) st = tok_buf_puts(o, "<|im_end|>\n");
    }
  }
  if (!st && gen) st = tok_buf_puts(o, "<|im_start|>assistant\n");
  return st;
}

/* ---------------------------------------------------------------- Llama 3 */
static xpi_status render_llama3(const xpi_tokenizer *t, const xpi_chat_message *m, size_t n, int gen, tok_buf *o) {
  xpi_status st = tok_buf_put(o, "", 0);
  for (size_t i = 0; !st && i < n; i++) {
    if (i == 0 && t->bos_token) st = tok_buf_puts(o, t->bos_token);
    if (!st) st = tok_buf_puts(o, "<|start_header_id|>");
    if (!st) st = tok_buf_puts(o, m[i].role);
    if (!st) st = tok_buf_puts(o, "<|end_header_id|>\n\n");
    const char *c = m[i].content;
    size_t cl = strlen(c);
    py_strip(&c, &cl);
    if (!st) st = tok_buf_put(o, c, cl);
    if (!st) st = tok_buf_puts(o, "<|eot_id|>");
  }
  if (!st && gen) st = tok_buf_puts(o, "<|start_header_id|>assistant<|end_header_id|>\n\n");
  return st;
}

/* ---------------------------------------------------------------- Llama 3.1 / 3.3 Instruct (no tools)
 * BOS, then always a system block: the knowledge-cutoff line, "Today Date: " with the template's default date (
 * transformers passes no date_string), a blank line, the trimmed first system message if any; then every other
 * message as a trimmed header turn. Tool results ("tool"/"ipython") need tool calls, which the API cannot express:
 * refused rather than rendered half right. */
/* The Llama 3.2 template dates its system block with strftime_now("%d %b %Y"), which transformers defines as the
 * current local date: render the same, unless XPI_CHAT_DATE fixes it (reproducible prompts and tests). */
static void llama32_date(char *buf, size_t cap) {
  const char *fixed = getenv("XPI_CHAT_DATE");
  if (fixed && *fixed) {
    snprintf(buf, cap, "%s", fixed);
    return;
  }
  time_t now = time(NULL);
  struct tm tm;
  if (!localtime_r(&now, &tm) || !strftime(buf, cap, "%d %b %Y", &tm)) snprintf(buf, cap, "26 Jul 2024");
}

static xpi_status render_llama31(const xpi_tokenizer *t, const xpi_chat_message *m, size_t n, int gen,
                                 const char *date, tok_buf *o) {
  if (!n) /* the template reads messages[0]['role']: transformers fails on an empty conversation too */
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "%s: the Llama 3.1 chat template needs at least one message",
                   t->config_path);
  for (size_t i = 0; i < n; i++)
    if (!strcmp(m[i].role, "tool") || !strcmp(m[i].role, "ipython"))
      return xpi_err(XPI_ERR_UNSUPPORTED, "%s: message %zu has role \"%s\": the Llama 3.1 chat template makes it an "
                     "ipython turn answering an assistant tool call, which xpi_chat_message cannot carry (use system, "
                     "user or assistant)", t->config_path, i, m[i].role);
  size_t first = 0;
  const char *sys = "";
  size_t sl = 0;
  if (!strcmp(m[0].role, "system")) {
    sys = m[0].content;
    sl = strlen(sys);
    py_strip(&sys, &sl);
    first = 1;
  }
  xpi_status st = tok_buf_puts(o, t->bos_token ? t->bos_token : ""); /* an undefined bos_token renders empty */
  if (!st) st = tok_buf_puts(o, "<|start_header_id|>system<|end_header_id|>\n\n"
                                "Cutting Knowledge Date: December 2023\nToday Date: ");
  if (!st) st = tok_buf_puts(o, date);
  if (!st) st = tok_buf_puts(o, "\n\n");
  if (!st) st = tok_buf_put(o, sys, sl);
  if (!st) st = tok_buf_puts(o, "<|eot_id|>");
  for (size_t i = first; !st && i < n; i++) {
    const char *c = m[i].content;
    size_t cl = strlen(c);
    py_strip(&c, &cl);
    st = tok_buf_puts(o, "<|start_header_id|>");
    if (!st) st = tok_buf_puts(o, m[i].role);
    if (!st) st = tok_buf_puts(o, "<|end_header_id|>\n\n");
    if (!st) st = tok_buf_put(o, c, cl);
    if (!st) st = tok_buf_puts(o, "<|eot_id|>");
  }
  if (!st && gen) st = tok_buf_puts(o, "<|start_header_id|>assistant<|end_header_id|>\n\n");
  return st;
}

xpi_status xpi_apply_chat_template(const xpi_tokenizer *tok, const xpi_chat_message *msgs, size_t n_msgs,
                                   int add_generation_prompt, int enable_thinking, char *text, size_t cap,
                                   size_t *len_out) {
  if (!tok || !len_out || (n_msgs && !msgs))
    return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_apply_chat_template: tok, len_out and msgs must not be NULL");
  for (size_t i = 0; i < n_msgs; i++) {
    if (!msgs[i].role || !msgs[i].content)
      return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_apply_chat_template: message %zu has a NULL role or content", i);
    size_t cl = strlen(msgs[i].content);
    if (tok_utf8_check(msgs[i].content, cl) != cl || tok_utf8_check(msgs[i].role, strlen(msgs[i].role)) != strlen(msgs[i].role))
      return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_apply_chat_template: message %zu is not valid UTF-8", i);
  }
  if (tok->chat_family == TOK_CHAT_NONE)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: no \"chat_template\" (and no chat_template.jinja next to it): this "
                   "tokenizer has no chat format", tok->config_path);
  if (tok->chat_family == TOK_CHAT_UNKNOWN)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: \"chat_template\" is not a template family libxpuinfer knows (supported: "
                   "Qwen3 ChatML with thinking, Qwen2/Qwen2.5 ChatML, Llama 3, Llama 3.1/3.2/3.3 Instruct)",
                   tok->config_path);
  char date[64] = "26 Jul 2024"; /* the 3.1/3.3 templates' fixed default */
  if (tok->chat_family == TOK_CHAT_LLAMA32_DATED) llama32_date(date, sizeof date);
  int llama31 = tok->chat_family == TOK_CHAT_LLAMA31 || tok->chat_family == TOK_CHAT_LLAMA32_DATED;
  tok_buf o = {0};
  xpi_status st = tok->chat_family == TOK_CHAT_QWEN3
                      ? render_qwen3(msgs, n_msgs, add_generation_prompt, enable_thinking, &o)
                  : tok->chat_family == TOK_CHAT_CHATML  ? render_chatml(tok, msgs, n_msgs, add_generation_prompt, &o)
                  : llama31 ? render_llama31(tok, msgs, n_msgs, add_generation_prompt, date, &o)
                                                         : render_llama3(tok, msgs, n_msgs, add_generation_prompt, &o);
  if (!st) {
    *len_out = o.len;
    if (!text || cap < o.len + 1)
      st = xpi_err(XPI_ERR_BUFFER_TOO_SMALL, "xpi_apply_chat_template: the text needs %zu bytes plus the NUL, "
                   "capacity is %zu", o.len, cap);
    else
      memcpy(text, o.p, o.len + 1);
  }
  tok_buf_free(&o);
  return st;
}
