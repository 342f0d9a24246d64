/* Per-sequence output (src/generate/seq_output.c) against a plain reference of its contract: stop strings
 * split across tokens and inside multi-byte characters, overlapping stop strings, hold-back (what is streamed
 * is always final, and nothing that cannot start a stop string is held), include_stop, stop tokens (eos) whose
 * text never appears, the token budget, cancellation, and bad stop strings. Texts are fed as tokens of the
 * bundled tinyfortunes byte-level tokenizer: one token per byte (characters split across tokens), the BPE
 * tokens of the whole text, and random mixtures of both. */
#include "check.h"
#include "generate/seq_output.h"
#include "tokenizer/tok_internal.h"
#include "tokenizer/tokenizer.h"

#define EOS 4093 /* <|endoftext|> */

static const xpi_tokenizer *g_tok;

typedef struct toks { int32_t id[512]; size_t end[512]; int n; } toks; /* end: text bytes after token i */

static int32_t byte_id(unsigned char b) {
  char c[5] = {0};
  tok_bytelevel_char(b, c);
  int32_t id = xpi_tokenizer_token_id(g_tok, c);
  if (id < 0) fprintf(stderr, "no token for byte %02x\n", b), exit(3);
  return id;
}

static void add_bytes(toks *t, const char *s, size_t from, size_t to) {
  for (size_t i = from; i < to; i++) t->id[t->n] = byte_id((unsigned char)s[i]), t->end[t->n++] = i + 1;
}

/* The BPE tokens of s[from, to) (a whole-character range), each ending where its bytes end. */
static void add_bpe(toks *t, const char *s, size_t from, size_t to) {
  int32_t ids[512];
  size_t n = 0;
  CHECK_OK(xpi_tokenize(g_tok, s + from, to - from, 0, ids, 512, &n));
  size_t at = from;
  for (size_t i = 0; i < n; i++) { /* a byte-level token's text has one character per byte */
    const char *tt = xpi_tokenizer_token_text(g_tok, ids[i]);
    for (size_t k = 0, l = strlen(tt); k < l; at++) {
      size_t c = tok_utf8_valid_len((const unsigned char *)tt + k, l - k);
      k += c ? c : 1;
    }
    t->id[t->n] = ids[i], t->end[t->n++] = at;
  }
  CHECK(at == to, "BPE tokens of [%zu, %zu) cover %zu bytes", from, to, at - from);
}

static uint64_t g_rng = 88172645463325252ull;
static uint32_t rnd(uint32_t n) {
  g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng % n);
}

/* Bytes of the complete-character prefix of s[0, n) (the rest is a character still arriving). */
static size_t complete(const char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    size_t l = tok_utf8_valid_len((const unsigned char *)s + i, n - i);
    if (!l) break;
    i += l;
  }
  return i;
}

typedef struct ref { size_t stop_end, stop_start; int has_stop; } ref;

/* The reference contract over the whole text: the earliest end of a stop string, the longest there. */
static ref ref_stop(const char *T, size_t n, const char *const *stops, size_t ns) {
  ref r = {0};
  for (size_t e = 1; e <= n && !r.has_stop; e++)
    for (size_t i = 0; i < ns; i++) {
      size_t sl = strlen(stops[i]);
      if (sl && sl <= e && !memcmp(T + e - sl, stops[i], sl) && (!r.has_stop || e - sl < r.stop_start))
        r.has_stop = 1, r.stop_end = e, r.stop_start = e - sl;
    }
  return r;
}

/* Text that may still begin a stop string: the longest tail of T[0, v) that is a proper prefix of one. */
static size_t ref_held(const char *T, size_t v, const char *const *stops, size_t ns) {
  size_t h = 0;
  for (size_t i = 0; i < ns; i++) {
    size_t sl = strlen(stops[i]);
    for (size_t k = 1; k < sl && k <= v; k++)
      if (!memcmp(T + v - k, stops[i], k) && k > h) h = k;
  }
  return h;
}

/* Feeds t (then the eos token when eos) and checks every push against the reference. */
static void run_case(const char *what, const char *T, const toks *t, const char *const *stops, size_t ns,
                     int include, int eos) {
  size_t n = strlen(T);
  ref r = ref_stop(T, n, stops, ns);
  xpi_gen_options o;
  xpi_gen_options_default(&o);
  o.stop_strings = stops;
  o.n_stop_strings = ns;
  o.include_stop = include;
  o.max_new_tokens = t->n + (eos ? 1 : 0);
  int32_t eos_id = EOS;
  xpi_seq_output so;
  CHECK_OK(xpi_seq_output_init(&so, g_tok, &eos_id, 1, &o));
  char got[4096];
  size_t glen = 0;
  int steps = t->n + (eos ? 1 : 0), bad = 0;
  for (int i = 0; i < steps && !so.finished && !bad; i++) {
    const char *p;
    size_t pl;
    int is_eos = i == t->n;
    CHECK_OK(xpi_seq_output_push(&so, is_eos ? EOS : t->id[i], &p, &pl));
    if (tok_utf8_check(p, pl) != pl) {
      CHECK(0, "%s: piece %d is not valid UTF-8", what, i);
      bad = 1;
    }
    memcpy(got + glen, p, pl);
    glen += pl;
    size_t seen = is_eos ? n : t->end[i], vis = i + 1 == steps ? seen : complete(T, seen), want;
    int done;
    if (r.has_stop && r.stop_end <= vis) want = include ? r.stop_end : r.stop_start, done = 1;
    else if (i + 1 == steps) want = vis, done = 1;
    else want = vis - (include ? 0 : ref_held(T, vis, stops, ns)), done = 0;
    if (glen != want || memcmp(got, T, glen) || so.finished != done) {
      CHECK(0, "%s, token %d: streamed '%.*s' (finished %d), want '%.*s' (finished %d)", what, i, (int)glen, got,
            so.finished, (int)want, T, done);
      bad = 1;
    }
  }
  xpi_finish_reason want_reason = r.has_stop || eos ? XPI_FINISH_STOP : XPI_FINISH_LENGTH;
  CHECK(bad || (so.finished && so.reason == want_reason), "%s: finished %d reason %d, want %d", what, so.finished,
        so.reason, want_reason);
  size_t tl;
  const char *tx = xpi_seq_output_text(&so, &tl);
  CHECK(bad || (tl == glen && !memcmp(tx, got, glen)), "%s: text accessor differs from the stream", what);
  xpi_seq_output_free(&so);
}

/* Every text with one-token-per-byte, whole-text BPE and 20 random mixtures. */
static void run_all(const char *what, const char *T, const char *const *stops, size_t ns) {
  size_t n = strlen(T);
  for (int mode = 0; mode < 22; mode++) {
    toks t = {.n = 0};
    if (mode == 0) add_bytes(&t, T, 0, n);
    else if (mode == 1) add_bpe(&t, T, 0, n);
    else
      for (size_t at = 0; at < n;) { /* random whole-character chunks, as bytes or as BPE tokens */
        size_t to = at + 1 + rnd(6);
        if (to > n) to = n;
        while (to < n && ((unsigned char)T[to] & 0xC0) == 0x80) to++;
        if (rnd(2)) add_bytes(&t, T, at, to);
        else add_bpe(&t, T, at, to);
        at = to;
      }
    for (int include = 0; include < 2; include++)
      for (int eos = 0; eos < 2; eos++) {
        char name[256];
        snprintf(name, sizeof name, "%s [mode %d, include %d, eos %d]", what, mode, include, eos);
        run_case(name, T, &t, stops, ns, include, eos);
      }
  }
}

static void crafted(void) {
  const char *rais[] = {"rais"};
  run_all("stop split across tokens", " is like a raisin, not a stain", rais, 1);
  const char *none[] = {"zzz"};
  run_all("prefix of a stop string released", "a zz b z c zzy", none, 1);
  const char *mb[] = {"日本", "é!"};
  run_all("multi-byte stop strings and text", "naïve café! 日本語 😀 end", mb, 2);
  const char *emoji[] = {"😀 e"};
  run_all("stop string inside a 4-byte character run", "x 😀😀 end", emoji, 1);
  const char *overlap[] = {"abc", "bcd", "cd"};
  run_all("overlapping stop strings: earliest end wins", "xx abcd yy", overlap, 3);
  const char *tie[] = {"c", "bc"};
  run_all("stop strings ending together: longest excluded", "ab bc", tie, 2);
  const char *self[] = {"aab"};
  run_all("self-overlapping stop string", "aaaab", self, 1);
  const char *nostop[] = {"never"};
  run_all("no stop string in the text", "plain text, nothing else", nostop, 1);
  run_all("no stop strings at all", "plain text", NULL, 0);
}

/* Stop tokens, budget, cancel, ignore_eos, an incomplete character at the end, bad options. */
static void edges(void) {
  int32_t eos = EOS;
  xpi_gen_options o;
  xpi_gen_options_default(&o);
  xpi_seq_output so;
  const char *p;
  size_t pl;
  /* an incomplete character cut by the stop token decodes as tokenizers' decode does: U+FFFD */
  const char *e = "é";
  o.max_new_tokens = 10;
  CHECK_OK(xpi_seq_output_init(&so, g_tok, &eos, 1, &o));
  CHECK_OK(xpi_seq_output_push(&so, byte_id('a'), &p, &pl));
  CHECK_OK(xpi_seq_output_push(&so, byte_id((unsigned char)e[0]), &p, &pl));
  CHECK(pl == 0 && !so.finished, "half a character is held");
  CHECK_OK(xpi_seq_output_push(&so, EOS, &p, &pl));
  CHECK(so.finished && so.reason == XPI_FINISH_STOP && pl == 3 && !memcmp(p, "\xEF\xBF\xBD", 3),
        "eos flushes the half character as U+FFFD, no eos text: '%.*s'", (int)pl, p);
  CHECK_ERR(xpi_seq_output_push(&so, byte_id('a'), &p, &pl), XPI_ERR_INVALID_ARGUMENT, "finished");
  xpi_seq_output_free(&so);

  /* ignore_eos: the eos id is an ordinary token, its text included */
  o.ignore_eos = 1;
  CHECK_OK(xpi_seq_output_init(&so, g_tok, &eos, 1, &o));
  CHECK_OK(xpi_seq_output_push(&so, EOS, &p, &pl));
  CHECK(!so.finished && pl == 13 && !memcmp(p, "<|endoftext|>", 13), "ignore_eos: '%.*s'", (int)pl, p);
  xpi_seq_output_free(&so);
  o.ignore_eos = 0;

  /* cancel: held-back text is dropped, the reason is CANCELLED */
  const char *stops[] = {"abc"};
  o.stop_strings = stops;
  o.n_stop_strings = 1;
  CHECK_OK(xpi_seq_output_init(&so, g_tok, &eos, 1, &o));
  CHECK_OK(xpi_seq_output_push(&so, byte_id('x'), &p, &pl));
  CHECK_OK(xpi_seq_output_push(&so, byte_id('a'), &p, &pl));
  CHECK(pl == 0, "'a' may start 'abc': held");
  xpi_seq_output_cancel(&so);
  size_t tl;
  const char *tx = xpi_seq_output_text(&so, &tl);
  CHECK(so.finished && so.reason == XPI_FINISH_CANCELLED && tl == 1 && tx[0] == 'x', "cancel keeps the streamed 'x'");
  xpi_seq_output_cancel(&so); /* idempotent */
  CHECK(so.reason == XPI_FINISH_CANCELLED, "cancel twice");
  xpi_seq_output_free(&so);

  /* budget: the last token releases held text; max 0 finishes at once */
  o.max_new_tokens = 2;
  CHECK_OK(xpi_seq_output_init(&so, g_tok, &eos, 1, &o));
  CHECK_OK(xpi_seq_output_push(&so, byte_id('x'), &p, &pl));
  CHECK_OK(xpi_seq_output_push(&so, byte_id('a'), &p, &pl));
  CHECK(so.finished && so.reason == XPI_FINISH_LENGTH && pl == 1 && p[0] == 'a' && so.n_generated == 2,
        "length: held 'a' released");
  xpi_seq_output_free(&so);
  o.max_new_tokens = 0;
  CHECK_OK(xpi_seq_output_init(&so, g_tok, &eos, 1, &o));
  CHECK(so.finished && so.reason == XPI_FINISH_LENGTH, "max_new_tokens 0");
  xpi_seq_output_free(&so);

  /* empty stop strings are ignored; invalid UTF-8 ones refused; options are copied */
  char mutable_stop[] = "ab";
  const char *bad[] = {"", mutable_stop, "\xC3"};
  o.max_new_tokens = 10;
  o.stop_strings = bad;
  o.n_stop_strings = 3;
  CHECK_ERR(xpi_seq_output_init(&so, g_tok, &eos, 1, &o), XPI_ERR_INVALID_ARGUMENT, "stop string 2 is not valid UTF-8");
  o.n_stop_strings = 2;
  CHECK_OK(xpi_seq_output_init(&so, g_tok, &eos, 1, &o));
  mutable_stop[0] = 'z'; /* the caller's strings may change once init returns */
  CHECK_OK(xpi_seq_output_push(&so, byte_id('a'), &p, &pl));
  CHECK_OK(xpi_seq_output_push(&so, byte_id('b'), &p, &pl));
  CHECK(so.finished && so.reason == XPI_FINISH_STOP && xpi_seq_output_text(&so, &tl) && tl == 0, "stop 'ab' copied");
  xpi_seq_output_free(&so);
  o.stop_strings = NULL;
  CHECK_ERR(xpi_seq_output_init(&so, g_tok, &eos, 1, &o), XPI_ERR_INVALID_ARGUMENT, "stop_strings is NULL");
}

int main(void) {
  char *dir = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
  xpi_tokenizer *tok = NULL;
  CHECK_OK(xpi_tokenizer_load(dir, &tok));
  g_tok = tok;
  if (tok) {
    crafted();
    edges();
  }
  xpi_tokenizer_free(tok);
  free(dir);
  return xpi_test_done();
}
