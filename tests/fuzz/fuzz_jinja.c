/* The Jinja engine (src/jinja) on arbitrary bytes: the input is a template, and after a NUL byte the JSON object of
 * its variables (default: a small chat conversation). Parse, then render under small limits. Properties: no
 * crash, hang, leak or undefined behaviour on any input; every failure carries a message; a render's output is
 * valid UTF-8 and within the output limit. Replayed over the seed corpus (corpus/jinja) in every build
 * (jinja/fuzz_jinja_corpus, FUZZ_REPLAY_MAIN); fuzzed by libFuzzer in the fuzzing build (tests/fuzz/CMakeLists.txt:
 * scripts/test.sh --fuzz in CI, scripts/fuzz.sh [SECONDS] fuzz_jinja by hand). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jinja.h"

#define FUZZ_CHECK(cond, ...)                                                                                    \
  do {                                                                                                         \
    if (!(cond)) {                                                                                             \
      fprintf(stderr, "fuzz_jinja: %s:%d: property failed: %s: ", __FILE__, __LINE__, #cond);                  \
      fprintf(stderr, __VA_ARGS__);                                                                            \
      fprintf(stderr, "\n");                                                                                   \
      abort();                                                                                                 \
    }                                                                                                          \
  } while (0)

static const char DEFAULT_VARS[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"Hi \xc3\xa9\"}, "
    "{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{\"id\": \"c1\", \"type\": \"function\", \"function\": "
    "{\"name\": \"f\", \"arguments\": {\"a\": 1, \"b\": [1.5, null, true]}}}]}, {\"role\": \"tool\", \"content\": \"42\"}], "
    "\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\"}}}], "
    "\"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"enable_thinking\": false}";

static int valid_utf8(const char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)s[i];
    size_t l = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    if (!l || i + l > n) return 0;
    for (size_t k = 1; k < l; k++)
      if (((unsigned char)s[i + k] & 0xC0) != 0x80) return 0;
    i += l;
  }
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *z = memchr(data, 0, size);
  size_t tl = z ? (size_t)(z - data) : size;
  jj_template *t = NULL;
  xpi_status st = jj_template_parse((const char *)data, tl, &t);
  if (st) {
    FUZZ_CHECK(*xpi_last_error(), "a parse failure (%s) without a message", xpi_status_name(st));
    FUZZ_CHECK(t == NULL, "a failed parse returned a template");
    return 0;
  }
  jj_var v = {.json = DEFAULT_VARS, .json_len = sizeof DEFAULT_VARS - 1};
  if (z) {
    v.json = (const char *)z + 1;
    v.json_len = size - tl - 1;
  }
  /* small limits: a runaway template must stop quickly and cleanly */
  jj_render_opts o = {.now = 1785067200, .max_output = 1 << 20, .max_memory = 32 << 20, .max_work = 2000000,
                      .max_depth = 200};
  char *out = NULL;
  size_t len = 0;
  st = jj_render(t, &v, 1, &o, &out, &len);
  if (st) {
    FUZZ_CHECK(*xpi_last_error(), "a render failure (%s) without a message", xpi_status_name(st));
    FUZZ_CHECK(out == NULL, "a failed render returned text");
  } else {
    FUZZ_CHECK(out && out[len] == 0, "output not NUL-terminated");
    FUZZ_CHECK(len <= o.max_output, "output of %zu bytes past the limit", len);
    FUZZ_CHECK(valid_utf8(out, len), "output is not valid UTF-8");
  }
  free(out);
  jj_template_free(t);
  return 0;
}

#ifdef FUZZ_REPLAY_MAIN
#include "fuzz_replay.h"
#endif
