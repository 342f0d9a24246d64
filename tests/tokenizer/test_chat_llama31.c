/* Llama 3.1 / 3.3 Instruct chat template (tests/data/chat_templates, the Hub's official texts) through the Jinja
 * engine: golden renders made with jinja2 as transformers' apply_chat_template runs it (date_string not passed, so
 * "26 Jul 2024"), the ids of the render from Hugging Face tokenizers 0.23.2 encode(text, add_special_tokens=False),
 * the Llama 3.2 template (dated with strftime_now: the current day, or the caller's fixed clock), a tool call and
 * its result, and an empty conversation, on which the template itself fails (messages[0] is undefined). */
#include <time.h>
#include "check.h"

static char *g_dir;

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  char *p = NULL;
  if (f && !fseek(f, 0, SEEK_END)) {
    long l = ftell(f);
    rewind(f);
    p = l >= 0 ? malloc((size_t)l + 1) : NULL;
    if (p && fread(p, 1, (size_t)l, f) != (size_t)l) { free(p); p = NULL; }
    if (p) { p[l] = 0; *n = (size_t)l; }
  }
  if (f) fclose(f);
  CHECK(p != NULL, "cannot read %s", path);
  return p;
}

static void copy(const char *from, const char *to_name) {
  size_t n = 0;
  char *p = slurp(from, &n), *to = xpi_test_strf("%s/%s", g_dir, to_name);
  if (p) CHECK(!xpi_test_write_file(to, p, n), "cannot write %s", to);
  free(p);
  free(to);
}

/* The Llama 3 tokenizer of tests/data with a template from tests/data/chat_templates as chat_template.jinja. */
static xpi_tokenizer *load_with(const char *data, const char *template_file) {
  char *p = xpi_test_strf("%s/tokenizers/llama3_1/tokenizer.json", data);
  copy(p, "tokenizer.json");
  free(p);
  p = xpi_test_strf("%s/tokenizers/llama3_1/tokenizer_config.json", data);
  copy(p, "tokenizer_config.json");
  free(p);
  p = xpi_test_strf("%s/chat_templates/%s", data, template_file);
  copy(p, "chat_template.jinja");
  free(p);
  xpi_tokenizer *t = NULL;
  CHECK_OK(xpi_tokenizer_load(g_dir, &t));
  return t;
}

static char *render_opts(const xpi_tokenizer *t, const xpi_chat_message *m, size_t n, const xpi_chat_options *o) {
  size_t len = 0;
  CHECK_ERR(xpi_apply_chat_template(t, m, n, o, NULL, 0, &len), XPI_ERR_BUFFER_TOO_SMALL, "needs");
  char *text = malloc(len + 1);
  if (xpi_apply_chat_template(t, m, n, o, text, len + 1, &len)) {
    CHECK(0, "render failed: %s", xpi_last_error());
    free(text);
    return NULL;
  }
  return text;
}

static char *render(const xpi_tokenizer *t, const xpi_chat_message *m, size_t n, int gen) {
  xpi_chat_options o;
  xpi_chat_options_default(&o);
  o.add_generation_prompt = gen;
  return render_opts(t, m, n, &o);
}

static const xpi_chat_message PIRATE[] = {
    {.role = "system", .content = "  You are a pirate.\n"},
    {.role = "user", .content = "\tAhoy \xF0\x9F\x8F\xB4\xE2\x80\x8D\xE2\x98\xA0\xEF\xB8\x8F \xE3\x80\x80"}, /* pirate flag, U+3000 */
    {.role = "assistant", .content = "Arr!\n\n"},
    {.role = "user", .content = " Where's the gold? "},
};
static const char PIRATE_TEXT[] =
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday "
    "Date: 26 Jul 2024\n\nYou are a pirate.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nAhoy "
    "\xF0\x9F\x8F\xB4\xE2\x80\x8D\xE2\x98\xA0\xEF\xB8\x8F<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    "Arr!<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhere's the gold?<|eot_id|><|start_header_id|>"
    "assistant<|end_header_id|>\n\n";
static const int32_t PIRATE_IDS[] = {
    128000, 128006, 9125,  128007, 271,    38766,  1303,  33025, 2696,   25,     6790,   220,    2366,  18,
    198,    15724,  2696,  25,     220,    1627,   10263, 220,   2366,   19,     271,    2675,   527,   264,
    55066,  13,     128009, 128006, 882,   128007, 271,   25797, 2303,   11410,  237,    112,    102470, 18107,
    254,    31643,  128009, 128006, 78191, 128007, 271,   9014,  0,      128009, 128006, 882,    128007, 271,
    9241,   596,    279,   6761,  30,     128009, 128006, 78191, 128007, 271};

static void golden(const char *data, const char *template_file) {
  xpi_tokenizer *t = load_with(data, template_file);
  if (!t) return;
  char *text = render(t, PIRATE, 4, 1);
  CHECK(text && !strcmp(text, PIRATE_TEXT), "%s: pirate conversation rendered as \"%s\"", template_file,
        text ? text : "(error)");
  if (text) {
    int32_t ids[128];
    size_t n = 0;
    CHECK_OK(xpi_tokenize(t, text, strlen(text), 0, ids, 128, &n));
    size_t want = sizeof PIRATE_IDS / sizeof *PIRATE_IDS;
    CHECK(n == want && !memcmp(ids, PIRATE_IDS, sizeof PIRATE_IDS), "%s: %zu ids of the render, want %zu",
          template_file, n, want);
  }
  free(text);
  /* no system message: an empty one after the dates; no generation prompt */
  xpi_chat_message hi = {.role = "user", .content = "hi"};
  text = render(t, &hi, 1, 0);
  CHECK(text && !strcmp(text, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge "
                              "Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|"
                              "end_header_id|>\n\nhi<|eot_id|>"),
        "%s: \"hi\" rendered as \"%s\"", template_file, text ? text : "(error)");
  free(text);
  /* a tool call and its result: the template's ipython turn (before the engine, these were refused) */
  xpi_chat_message tool[] = {
      {.role = "user", .content = "weather?"},
      {.role = "assistant", .tool_calls_json = "[{\"type\": \"function\", \"function\": {\"name\": \"w\", "
                                              "\"arguments\": {\"city\": \"Oslo\"}}}]"},
      {.role = "tool", .content = "{\"t\": 21}", .name = "w"}};
  text = render(t, tool, 3, 1);
  CHECK(text && strstr(text, "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"w\", \"parameters\": "
                             "{\"city\": \"Oslo\"}}<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n\n"
                             "\"{\\\"t\\\": 21}\"<|eot_id|>"),
        "%s: tool call rendered as \"%s\"", template_file, text ? text : "(error)");
  free(text);
  /* the template reads messages[0]['role']: an empty conversation fails as it does under jinja2 */
  size_t len;
  CHECK_ERR(xpi_apply_chat_template(t, NULL, 0, NULL, NULL, 0, &len), XPI_ERR_INVALID_ARGUMENT,
            "UndefinedError");
  xpi_tokenizer_free(t);
}

/* The way the Hub ships it: the template as the "chat_template" string of tokenizer_config.json. */
static void in_tokenizer_config(const char *data) {
  xpi_tokenizer *t = load_with(data, "meta-llama-Llama-3.1-8B-Instruct.jinja");
  xpi_tokenizer_free(t);
  char *jinja = xpi_test_strf("%s/chat_template.jinja", g_dir);
  char *cfg_path = xpi_test_strf("%s/tokenizer_config.json", g_dir);
  size_t n = 0;
  char *tpl = slurp(jinja, &n);
  remove(jinja);
  cJSON *cfg = xpi_test_load_json(cfg_path);
  if (tpl && cfg) {
    cJSON_ReplaceItemInObject(cfg, "chat_template", cJSON_CreateString(tpl));
    char *out = cJSON_Print(cfg);
    xpi_test_write_file(cfg_path, out, strlen(out));
    free(out);
    t = NULL;
    CHECK_OK(xpi_tokenizer_load(g_dir, &t));
    char *text = t ? render(t, PIRATE, 4, 1) : NULL;
    CHECK(text && !strcmp(text, PIRATE_TEXT), "tokenizer_config.json: pirate rendered as \"%s\"",
          text ? text : "(error)");
    free(text);
    xpi_tokenizer_free(t);
  }
  cJSON_Delete(cfg);
  free(tpl);
  free(jinja);
  free(cfg_path);
}

/* Llama 3.2 dates its system block with the current local date (strftime_now, as transformers renders it);
 * options.now fixes the clock. Both ways the rest must equal the Llama 3.1 render. */
static char *render_gen(xpi_tokenizer *t, const xpi_chat_message *m, size_t n, int64_t now) {
  xpi_chat_options o;
  xpi_chat_options_default(&o);
  o.now = now;
  size_t len = 0;
  xpi_apply_chat_template(t, m, n, &o, NULL, 0, &len);
  char *buf = malloc(len + 1);
  if (buf && xpi_apply_chat_template(t, m, n, &o, buf, len + 1, &len) != XPI_OK) buf[0] = 0;
  return buf;
}

static void llama32_dated(const char *data) {
  xpi_tokenizer *t32 = load_with(data, "meta-llama-Llama-3.2-3B-Instruct.jinja");
  xpi_tokenizer *t31 = load_with(data, "meta-llama-Llama-3.1-8B-Instruct.jinja");
  if (!t32 || !t31) goto out;
  xpi_chat_message m[2] = {{.role = "system", .content = "Be brief."}, {.role = "user", .content = "hi"}};
  char *want31 = render_gen(t31, m, 2, 0);
  char today[64];
  time_t now = time(NULL);
  struct tm tm;
  localtime_r(&now, &tm);
  strftime(today, sizeof today, "Today Date: %d %b %Y\n", &tm);
  char *got = render_gen(t32, m, 2, 0);
  CHECK(got && strstr(got, today) != NULL, "Llama 3.2 render lacks \"%s\": %s", today, got ? got : "(null)");
  free(got);
  /* the 3.1 template's date (noon local time on 26 Jul 2024): the whole text must then be identical */
  struct tm d = {.tm_year = 124, .tm_mon = 6, .tm_mday = 26, .tm_hour = 12, .tm_isdst = -1};
  got = render_gen(t32, m, 2, (int64_t)mktime(&d));
  CHECK(got && want31 && !strcmp(got, want31), "Llama 3.2 with a fixed date differs from 3.1:\n%s\n---\n%s", got, want31);
  free(got);
  d = (struct tm){.tm_year = 125, .tm_mon = 0, .tm_mday = 2, .tm_hour = 12, .tm_isdst = -1};
  got = render_gen(t32, m, 2, (int64_t)mktime(&d));
  CHECK(got && strstr(got, "Today Date: 02 Jan 2025\n\nBe brief.<|eot_id|>") != NULL, "fixed date: %s", got);
  free(got);
  free(want31);
out:
  xpi_tokenizer_free(t32);
  xpi_tokenizer_free(t31);
}

int main(void) {
  const char *data = xpi_test_env("XPI_TEST_DATA");
  g_dir = xpi_test_tmpdir("tok_llama31");
  golden(data, "meta-llama-Llama-3.1-8B-Instruct.jinja");
  golden(data, "meta-llama-Llama-3.3-70B-Instruct.jinja");
  in_tokenizer_config(data);
  llama32_dated(data);
  const char *names[] = {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja"};
  for (int i = 0; i < 3; i++) {
    char *p = xpi_test_strf("%s/%s", g_dir, names[i]);
    remove(p);
    free(p);
  }
  remove(g_dir);
  free(g_dir);
  return xpi_test_done();
}
