/* The server's OpenAI request parser and response formatter (tools/xpuinfer/serve/serve_request.c,
 * serve_format.c) on their own, under the sanitizers: a table of bodies with the status and the field each
 * error must name, then randomized requests (random JSON over the known fields with values of every type, and
 * byte mutations of valid bodies) through parsing, the chat template and tokenizer (Qwen3's), the generation
 * options and the response formatting: never a crash or a leak, every error an OpenAI error object with a
 * message and a 4xx/5xx status. */
#include <math.h>
#include <stdint.h>

#include "check.h"
#include "serve.h"

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng >> 11);
}

typedef struct { oai_kind kind; const char *body; int status; const char *param; } table_case;

static const table_case k_table[] = {
  {OAI_COMPLETION, "{\"model\": \"m\", \"prompt\": \"hi\"}", 0, NULL},
  {OAI_COMPLETION, "{\"model\": \"m\", \"prompt\": [\"hi\"], \"stop\": null, \"n\": 1, \"x\": {}}", 0, NULL},
  {OAI_COMPLETION, "{\"model\": \"m\", \"prompt\": [[1, 2, 3]], \"logprobs\": 0}", 0, NULL},
  {OAI_COMPLETION, "{\"model\": \"m\", \"prompt\": \"hi\", \"max_tokens\": 0}", 400, "max_tokens"},
  {OAI_COMPLETION, "{\"model\": \"m\", \"prompt\": \"hi\", \"temperature\": -0.1}", 400, "temperature"},
  {OAI_COMPLETION, "{\"model\": \"m\", \"prompt\": \"hi\", \"top_k\": -2}", 400, "top_k"},
  {OAI_COMPLETION, "{\"model\": \"m\", \"prompt\": \"hi\", \"seed\": 1e300}", 400, "seed"},
  {OAI_COMPLETION, "{\"model\": \"m\", \"prompt\": \"hi\", \"best_of\": 2}", 400, "best_of"},
  {OAI_COMPLETION, "{\"model\": \"m\", \"prompt\": \"hi\", \"suffix\": \"s\"}", 400, "suffix"},
  {OAI_COMPLETION, "{\"model\": \"m\", \"prompt\": \"hi\", \"response_format\": {\"type\": \"json_object\"}}", 400,
   "response_format"},
  {OAI_COMPLETION, "{\"model\": \"m\", \"prompt\": \"hi\", \"stream_options\": {\"include_usage\": 1}}", 400,
   "stream_options"},
  {OAI_COMPLETION, "{\"model\": \"m\", \"prompt\": [-1]}", 400, "prompt"},
  {OAI_COMPLETION, "{\"model\": \"m\", \"prompt\": []}", 400, "prompt"},
  {OAI_COMPLETION, "{\"model\": \"m\", \"prompt\": {}}", 400, "prompt"},
  {OAI_COMPLETION, "{\"model\": null, \"prompt\": \"x\"}", 400, "model"},
  {OAI_COMPLETION, "", 400, NULL},
  {OAI_COMPLETION, "null", 400, NULL},
  {OAI_CHAT, "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}", 0, NULL},
  {OAI_CHAT, "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"a\"}, "
             "{\"type\": \"text\", \"text\": \"b\"}]}], \"chat_template_kwargs\": {\"enable_thinking\": false}}", 0, NULL},
  {OAI_CHAT, "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"logprobs\": true, "
             "\"top_logprobs\": 21}", 400, "top_logprobs"},
  {OAI_CHAT, "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": 5}]}", 400, "messages"},
  {OAI_CHAT, "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"chat_template_kwargs\": 1}",
   400, "chat_template_kwargs"},
  {OAI_CHAT, "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"frequency_penalty\": 3}",
   400, "frequency_penalty"},
};

static const char *const k_fields[] = {"model", "prompt", "messages", "max_tokens", "max_completion_tokens",
                                       "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "seed", "stop",
                                       "stream", "stream_options", "logprobs", "top_logprobs", "n", "echo", "suffix",
                                       "best_of", "tools", "chat_template_kwargs", "ignore_eos", "presence_penalty",
                                       "response_format", "role", "content", "type", "text", "include_usage", "zzz"};

static cJSON *random_value(int depth) {
  switch (rnd() % (depth > 3 ? 6 : 9)) {
  case 0: return cJSON_CreateNull();
  case 1: return cJSON_CreateBool(rnd() & 1);
  case 2: {
    static const double k_nums[] = {0, 1, -1, 0.5, 2, 3, 20, 21, 1e9, -1e300, 1e300, 4096, 0.999, 1.5, 5000};
    return cJSON_CreateNumber(k_nums[rnd() % (sizeof k_nums / sizeof k_nums[0])]);
  }
  case 3: return cJSON_CreateNumber((double)(int32_t)rnd() / (double)(1 + rnd() % 1000));
  case 4: {
    static const char *const k_strs[] = {"", "m", "user", "assistant", "system", "tool", "text", "hi there",
                                         "\xc3\xa9t\xc3\xa9", "\xff\xfe", "{{ x }}", "<|im_start|>", "stop"};
    return cJSON_CreateString(k_strs[rnd() % (sizeof k_strs / sizeof k_strs[0])]);
  }
  case 5: return cJSON_CreateNumber(rnd() % 5000);
  case 6: case 7: {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0, n = rnd() % 4; i < n; i++) cJSON_AddItemToArray(a, random_value(depth + 1));
    return a;
  }
  default: {
    cJSON *o = cJSON_CreateObject();
    for (int i = 0, n = rnd() % 5; i < n; i++)
      cJSON_AddItemToObject(o, k_fields[rnd() % (sizeof k_fields / sizeof k_fields[0])], random_value(depth + 1));
    return o;
  }
  }
}

/* A mostly valid request with random values in some fields. */
static char *random_request(oai_kind kind) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "model", "m");
  if (kind == OAI_CHAT) {
    cJSON *msgs = cJSON_AddArrayToObject(o, "messages"), *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "user");
    cJSON_AddStringToObject(m, "content", "hello");
    cJSON_AddItemToArray(msgs, m);
  } else {
    cJSON_AddStringToObject(o, "prompt", "hello");
  }
  for (int i = 0, n = rnd() % 5; i < n; i++) {
    const char *f = k_fields[rnd() % (sizeof k_fields / sizeof k_fields[0])];
    cJSON_DeleteItemFromObjectCaseSensitive(o, f);
    cJSON_AddItemToObject(o, f, random_value(0));
  }
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return s;
}

static void mutate(char *s, size_t *len, size_t cap) {
  for (int k = 0, n = 1 + rnd() % 4; k < n && *len; k++) {
    size_t i = rnd() % *len;
    switch (rnd() % 3) {
    case 0: s[i] = (char)(rnd() & 0xff); break;
    case 1: memmove(s + i, s + i + 1, *len - i - 1), (*len)--; break;
    default:
      if (*len + 1 < cap) memmove(s + i + 1, s + i, *len - i), s[i] = "{}[]\",:0\\"[rnd() % 9], (*len)++;
    }
  }
}

static int g_ok, g_err;

/* Parse, render, tokenize, format: whatever the input. */
static void run_one(const xpi_tokenizer *tok, oai_kind kind, const char *body, size_t len) {
  oai_request r;
  serve_error e;
  memset(&e, 0, sizeof e);
  int rc = oai_parse(kind, body, len, &r, &e);
  int32_t *ids = NULL;
  size_t n = 0;
  cli_chat chat; /* half the time with a server-wide template variable */
  cli_chat_init(&chat);
  char no_think[] = "{\"enable_thinking\": false}";
  if (rnd() & 1) chat.vars_json = no_think;
  if (rc == 0 && oai_prompt_ids(&r, tok, &chat, &ids, &n, &e)) {
    oai_request_free(&r);
    rc = -1;
  }
  if (rc == 0) {
    g_ok++;
    xpi_gen_options d, go;
    xpi_gen_options_default(&d);
    oai_gen_options(&r, &d, &go);
    CHECK(go.logprobs >= 0 && go.logprobs <= 20 && !(go.temperature < 0) && go.skip_special &&
            go.n_stop_strings == r.n_stops && n > 0, "gen options from %.200s", body);
    oai_meta m = {kind, "id-1", 1, r.model};
    oai_lp_alt alt = {"b", -1.5f};
    oai_logprob lp = {"a\xc3\xa9", -0.25f, 0, &alt, 1};
    oai_usage u = {(int64_t)n, 3, 0};
    char *resp = oai_format_response(&m, "text\0with nul", 13, &lp, 1, r.logprobs, "stop", &u);
    char *chunk = oai_format_chunk(&m, "t", 1, kind == OAI_CHAT, &lp, r.logprobs, NULL, r.include_usage);
    cJSON *back = resp ? cJSON_Parse(resp) : NULL;
    CHECK(back && chunk && !strncmp(chunk, "data: {", 7), "formatting for %.200s", body);
    cJSON_Delete(back);
    free(resp);
    free(chunk);
    free(ids);
    oai_request_free(&r);
  } else {
    g_err++;
    CHECK((e.status == 400 || e.status == 500 || e.status == 503) && e.message[0] && e.type,
          "error for %.200s: status %d, message '%s'", body, e.status, e.message);
    char *js = serve_error_json(&e);
    cJSON *back = js ? cJSON_Parse(js) : NULL;
    const cJSON *x = cJSON_GetObjectItem(back, "error");
    CHECK(cJSON_IsString(cJSON_GetObjectItem(x, "message")) && cJSON_GetObjectItem(x, "param") &&
          cJSON_GetObjectItem(x, "code") && cJSON_IsString(cJSON_GetObjectItem(x, "type")), "error object %s", js);
    cJSON_Delete(back);
    free(js);
  }
}

int main(void) {
  const char *data = xpi_test_env("XPI_TEST_DATA");
  char *dir = xpi_test_strf("%s/tokenizers/qwen3", data);
  xpi_tokenizer *tok = NULL;
  CHECK_OK(xpi_tokenizer_load(dir, &tok));
  free(dir);
  if (!tok) return xpi_test_done();

  for (size_t i = 0; i < sizeof k_table / sizeof k_table[0]; i++) {
    const table_case *c = &k_table[i];
    oai_request r;
    serve_error e = {0};
    int rc = oai_parse(c->kind, c->body, strlen(c->body), &r, &e);
    if (c->status == 0) {
      CHECK(rc == 0, "%s: %s", c->body, e.message);
      if (rc == 0) oai_request_free(&r);
    } else {
      CHECK(rc == -1 && e.status == c->status && (c->param ? e.param && !strcmp(e.param, c->param) : 1),
            "%s: rc %d status %d param %s (want %d %s): %s", c->body, rc, e.status, e.param ? e.param : "null",
            c->status, c->param ? c->param : "-", e.message);
    }
  }
  /* content parts join with newlines; chat_template_kwargs reach the conversation */
  oai_request r;
  serve_error e;
  const char *parts = k_table[18].body;
  CHECK(oai_parse(OAI_CHAT, parts, strlen(parts), &r, &e) == 0, "parts: %s", e.message);
  CHECK(strstr(r.conversation, "\"content\":\"a\\nb\"") && strstr(r.conversation, "\"enable_thinking\":false") &&
        strstr(r.conversation, "\"add_generation_prompt\":true"), "conversation %s", r.conversation);
  oai_request_free(&r);

  for (int it = 0; it < 6000; it++) {
    oai_kind kind = rnd() & 1 ? OAI_CHAT : OAI_COMPLETION;
    char *s = random_request(kind);
    size_t len = strlen(s);
    if (it % 2) {
      char buf[4096];
      if (len >= sizeof buf - 8) len = sizeof buf - 8;
      memcpy(buf, s, len);
      mutate(buf, &len, sizeof buf);
      buf[len] = 0;
      run_one(tok, kind, buf, len);
    } else {
      run_one(tok, kind, s, len);
    }
    cJSON_free(s);
  }
  printf("randomized: %d accepted, %d refused\n", g_ok, g_err);
  CHECK(g_ok > 500 && g_err > 500, "both outcomes exercised: %d accepted, %d refused", g_ok, g_err);
  xpi_tokenizer_free(tok);
  return xpi_test_done();
}
