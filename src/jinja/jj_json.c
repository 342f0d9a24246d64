/* JSON both ways: json.dumps exactly as Python writes it (ensure_ascii, indent, separators, sort_keys, float repr,
 * NaN/Infinity, the TypeError for what JSON cannot hold), and a parser from the caller's JSON text into values
 * that keeps what Python's json.loads keeps (ints vs floats, object order, duplicate keys as the last value). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jj_internal.h"

/* ---------------------------------------------------------------- dumps */
static void dump_str(jj_buf *b, const char *s, size_t n, int ensure_ascii) {
  static const char hx[] = "0123456789abcdef";
  jj_buf_putc(b, '"');
  size_t run = 0;
  for (size_t i = 0; i < n;) {
    unsigned char ch = (unsigned char)s[i];
    const char *esc = NULL;
    switch (ch) {
      case '"': esc = "\\\""; break;
      case '\\': esc = "\\\\"; break;
      case '\n': esc = "\\n"; break;
      case '\r': esc = "\\r"; break;
      case '\t': esc = "\\t"; break;
      case '\b': esc = "\\b"; break;
      case '\f': esc = "\\f"; break;
      default: break;
    }
    if (!esc && ch >= 0x20 && (ch < 0x80 || !ensure_ascii)) { i++; run++; continue; }
    jj_buf_put(b, s + i - run, run);
    run = 0;
    if (esc) { jj_buf_puts(b, esc); i++; continue; }
    if (ch < 0x20) {
      char u[7] = {'\\', 'u', '0', '0', hx[ch >> 4], hx[ch & 15], 0};
      jj_buf_puts(b, u);
      i++;
      continue;
    }
    size_t adv;
    uint32_t cp = jj_u8_dec(s + i, &adv);
    i += adv;
    if (cp >= 0x10000) {
      uint32_t v = cp - 0x10000, hi = 0xD800 | (v >> 10), lo = 0xDC00 | (v & 0x3FF);
      jj_buf_printf(b, "\\u%04x\\u%04x", hi, lo);
    } else {
      jj_buf_printf(b, "\\u%04x", cp);
    }
  }
  jj_buf_put(b, s + n - run, run);
  jj_buf_putc(b, '"');
}

static void dump_float(jj_buf *b, double f) {
  if (f != f) jj_buf_puts(b, "NaN");
  else if (isinf(f)) jj_buf_puts(b, f < 0 ? "-Infinity" : "Infinity");
  else jj_write_float(b, f);
}

static void newline_indent(jj_buf *b, const jj_dumps_opts *o, int level) {
  jj_buf_putc(b, '\n');
  for (int i = 0; i < level; i++) jj_buf_put(b, o->indent, o->indent_len);
}

/* A dict key as json.dumps converts it. */
static void dump_key(jj_ctx *c, jj_buf *b, jv k, const jj_dumps_opts *o) {
  jj_buf *t;
  switch (k.t) {
    case JT_STR: dump_str(b, k.s->p, k.s->len, o->ensure_ascii); return;
    case JT_BOOL: jj_buf_puts(b, k.i ? "\"true\"" : "\"false\""); return;
    case JT_NONE: jj_buf_puts(b, "\"null\""); return;
    case JT_INT: jj_buf_printf(b, "\"%lld\"", (long long)k.i); return;
    case JT_BIGINT: jj_buf_putc(b, '"'); jj_buf_put(b, k.s->p, k.s->len); jj_buf_putc(b, '"'); return;
    case JT_FLOAT:
      t = jj_tmpbuf(c);
      dump_float(t, k.f);
      jj_buf_putc(b, '"');
      jj_buf_put(b, t->p, t->len);
      jj_buf_putc(b, '"');
      jj_buf_pop(c, t);
      return;
    default:
      jj_fail(c, "TypeError: keys must be str, int, float, bool or None, not %s", jj_type_name(k));
  }
}

static void dump(jj_ctx *c, jj_buf *b, jv v, const jj_dumps_opts *o, int level) {
  jj_charge(c, 1);
  switch (v.t) {
    case JT_NONE: jj_buf_puts(b, "null"); return;
    case JT_BOOL: jj_buf_puts(b, v.i ? "true" : "false"); return;
    case JT_INT: jj_buf_printf(b, "%lld", (long long)v.i); return;
    case JT_FLOAT: dump_float(b, v.f); return;
    case JT_BIGINT: jj_buf_put(b, v.s->p, v.s->len); return;
    case JT_STR: jj_charge(c, v.s->len / 16); dump_str(b, v.s->p, v.s->len, o->ensure_ascii); return;
    case JT_LIST:
      if (v.l->kind == JL_LIST || v.l->kind == JL_TUPLE) break;
      /* fallthrough */
    case JT_UNDEF: case JT_NS: case JT_FUNC: case JT_LOOP: case JT_OBJ:
      jj_fail(c, "TypeError: Object of type %s is not JSON serializable", jj_type_name(v));
    default: break;
  }
  if (level > 500) jj_fail_limit(c, "RecursionError: maximum recursion depth exceeded while encoding a JSON object");
  if (v.t == JT_LIST) {
    jj_list *l = v.l;
    if (!l->n) { jj_buf_puts(b, "[]"); return; }
    jj_buf_putc(b, '[');
    for (size_t i = 0; i < l->n; i++) {
      if (i) jj_buf_put(b, o->item_sep, o->item_sep_len);
      if (o->has_indent) newline_indent(b, o, level + 1);
      dump(c, b, l->v[i], o, level + 1);
    }
    if (o->has_indent) newline_indent(b, o, level);
    jj_buf_putc(b, ']');
    return;
  }
  jj_dict *d = v.d;
  if (!d->n) { jj_buf_puts(b, "{}"); return; }
  size_t *order = jj_alloc_array(&c->arena, d->n, sizeof *order);
  for (size_t i = 0; i < d->n; i++) order[i] = i;
  if (o->sort_keys) { /* insertion sort: stable, keys compared as Python does (mixed types fail) */
    for (size_t i = 1; i < d->n; i++) {
      size_t x = order[i], j = i;
      while (j > 0 && jj_cmp(c, d->e[x].key, d->e[order[j - 1]].key, "<") < 0) {
        order[j] = order[j - 1];
        j--;
      }
      order[j] = x;
    }
    jj_charge(c, d->n * d->n / 8);
  }
  jj_buf_putc(b, '{');
  for (size_t i = 0; i < d->n; i++) {
    jj_entry *e = &d->e[order[i]];
    if (i) jj_buf_put(b, o->item_sep, o->item_sep_len);
    if (o->has_indent) newline_indent(b, o, level + 1);
    dump_key(c, b, e->key, o);
    jj_buf_put(b, o->key_sep, o->key_sep_len);
    dump(c, b, e->val, o, level + 1);
  }
  if (o->has_indent) newline_indent(b, o, level);
  jj_buf_putc(b, '}');
}

void jj_json_dumps(jj_ctx *c, jj_buf *b, jv v, const jj_dumps_opts *o) { dump(c, b, v, o, 0); }

/* ---------------------------------------------------------------- parse */
typedef struct jp { jj_ctx *c; const char *s; size_t n, i; const char *what; int depth; } jp;

JJ_NORETURN static void perr(jp *p, const char *msg) {
  size_t line = 1, col = 1;
  for (size_t k = 0; k < p->i && k < p->n; k++) {
    if (p->s[k] == '\n') { line++; col = 1; }
    else col++;
  }
  p->c->line = p->c->col = 0;
  jj_fail_status(p->c, XPI_ERR_INVALID_ARGUMENT, "%s: invalid JSON at line %zu, column %zu: %s", p->what, line, col, msg);
}

static void ws(jp *p) {
  while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')) p->i++;
}

static int hex4(jp *p, uint32_t *out) {
  if (p->i + 4 > p->n) return 0;
  uint32_t v = 0;
  for (int k = 0; k < 4; k++) {
    char ch = p->s[p->i + k];
    int d = ch >= '0' && ch <= '9' ? ch - '0' : (ch | 0x20) >= 'a' && (ch | 0x20) <= 'f' ? (ch | 0x20) - 'a' + 10 : -1;
    if (d < 0) return 0;
    v = v * 16 + (uint32_t)d;
  }
  p->i += 4;
  *out = v;
  return 1;
}

static jv pstring(jp *p) {
  p->i++; /* " */
  jj_buf *b = jj_tmpbuf(p->c);
  for (;;) {
    if (p->i >= p->n) perr(p, "unterminated string");
    unsigned char ch = (unsigned char)p->s[p->i];
    if (ch == '"') { p->i++; break; }
    if (ch < 0x20) perr(p, "control character in string");
    if (ch == '\\') {
      p->i++;
      if (p->i >= p->n) perr(p, "unterminated string");
      char e = p->s[p->i++];
      switch (e) {
        case '"': jj_buf_putc(b, '"'); break;
        case '\\': jj_buf_putc(b, '\\'); break;
        case '/': jj_buf_putc(b, '/'); break;
        case 'b': jj_buf_putc(b, '\b'); break;
        case 'f': jj_buf_putc(b, '\f'); break;
        case 'n': jj_buf_putc(b, '\n'); break;
        case 'r': jj_buf_putc(b, '\r'); break;
        case 't': jj_buf_putc(b, '\t'); break;
        case 'u': {
          uint32_t cp;
          if (!hex4(p, &cp)) perr(p, "bad \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t lo;
            if (p->i + 2 <= p->n && p->s[p->i] == '\\' && p->s[p->i + 1] == 'u') {
              p->i += 2;
              if (!hex4(p, &lo) || lo < 0xDC00 || lo > 0xDFFF) perr(p, "unpaired surrogate in a \\u escape");
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else {
              perr(p, "unpaired surrogate in a \\u escape");
            }
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            perr(p, "unpaired surrogate in a \\u escape");
          }
          jj_buf_cp(b, cp);
          break;
        }
        default: perr(p, "bad escape");
      }
      continue;
    }
    /* one UTF-8 character, validated */
    size_t l = ch < 0x80 ? 1 : (ch >= 0xC2 && ch <= 0xDF) ? 2 : (ch >= 0xE0 && ch <= 0xEF) ? 3 : (ch >= 0xF0 && ch <= 0xF4) ? 4 : 0;
    int ok = l && p->i + l <= p->n;
    for (size_t k = 1; ok && k < l; k++) ok = ((unsigned char)p->s[p->i + k] & 0xC0) == 0x80;
    if (ok && l == 3) {
      unsigned char d = (unsigned char)p->s[p->i + 1];
      ok = !(ch == 0xE0 && d < 0xA0) && !(ch == 0xED && d >= 0xA0);
    }
    if (ok && l == 4) {
      unsigned char d = (unsigned char)p->s[p->i + 1];
      ok = !(ch == 0xF0 && d < 0x90) && !(ch == 0xF4 && d >= 0x90);
    }
    if (!ok) perr(p, "invalid UTF-8");
    jj_buf_put(b, p->s + p->i, l);
    p->i += l;
  }
  return jv_strv(jj_buf_pop(p->c, b));
}

static jv pvalue(jp *p);

static jv pnumber(jp *p) {
  size_t st = p->i;
  int is_float = 0;
  if (p->i < p->n && p->s[p->i] == '-') p->i++;
  if (p->i >= p->n || !(p->s[p->i] >= '0' && p->s[p->i] <= '9')) perr(p, "bad number");
  if (p->s[p->i] == '0') p->i++;
  else while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
  if (p->i < p->n && p->s[p->i] == '.') {
    is_float = 1;
    p->i++;
    size_t d = p->i;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
    if (p->i == d) perr(p, "bad number");
  }
  if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
    is_float = 1;
    p->i++;
    if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
    size_t d = p->i;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
    if (p->i == d) perr(p, "bad number");
  }
  char tmp[400];
  size_t len = p->i - st;
  if (len >= sizeof tmp) perr(p, "number too long");
  memcpy(tmp, p->s + st, len);
  tmp[len] = 0;
  if (!is_float) {
    errno = 0;
    long long v = strtoll(tmp, NULL, 10);
    if (errno == ERANGE) { /* beyond 64 bits Python keeps a big int: keep its digits (ids pass through exactly) */
      jv r = jj_strv(&p->c->arena, tmp, len);
      r.t = JT_BIGINT;
      return r;
    }
    return jv_int(v);
  }
  return jv_float(strtod(tmp, NULL));
}

static void expect_word(jp *p, const char *w) {
  size_t l = strlen(w);
  if (p->i + l > p->n || memcmp(p->s + p->i, w, l)) perr(p, "unexpected character");
  p->i += l;
}

static jv pvalue(jp *p) {
  ws(p);
  if (p->i >= p->n) perr(p, "unexpected end of input");
  if (++p->depth > 500) perr(p, "nested too deeply");
  jj_charge(p->c, 1);
  char ch = p->s[p->i];
  jv r;
  if (ch == '{') {
    p->i++;
    jj_dict *d = jj_dict_new(p->c, 0);
    ws(p);
    if (p->i < p->n && p->s[p->i] == '}') p->i++;
    else
      for (;;) {
        ws(p);
        if (p->i >= p->n || p->s[p->i] != '"') perr(p, "expected a string key");
        jv k = pstring(p);
        ws(p);
        if (p->i >= p->n || p->s[p->i] != ':') perr(p, "expected ':'");
        p->i++;
        jv v = pvalue(p);
        jj_dict_set(p->c, d, k, v);
        ws(p);
        if (p->i < p->n && p->s[p->i] == ',') { p->i++; continue; }
        if (p->i < p->n && p->s[p->i] == '}') { p->i++; break; }
        perr(p, "expected ',' or '}'");
      }
    r = jv_dictv(d);
  } else if (ch == '[') {
    p->i++;
    jj_list *l = jj_list_new(p->c, 0, JL_LIST);
    ws(p);
    if (p->i < p->n && p->s[p->i] == ']') p->i++;
    else
      for (;;) {
        jj_list_push(p->c, l, pvalue(p));
        ws(p);
        if (p->i < p->n && p->s[p->i] == ',') { p->i++; continue; }
        if (p->i < p->n && p->s[p->i] == ']') { p->i++; break; }
        perr(p, "expected ',' or ']'");
      }
    r = jv_listv(l);
  } else if (ch == '"') {
    r = pstring(p);
  } else if (ch == 't') {
    expect_word(p, "true");
    r = jv_bool(1);
  } else if (ch == 'f') {
    expect_word(p, "false");
    r = jv_bool(0);
  } else if (ch == 'n') {
    expect_word(p, "null");
    r = jv_none();
  } else if (ch == 'N') {
    expect_word(p, "NaN");
    r = jv_float(NAN);
  } else if (ch == 'I') {
    expect_word(p, "Infinity");
    r = jv_float(INFINITY);
  } else if (ch == '-' && p->i + 1 < p->n && p->s[p->i + 1] == 'I') {
    p->i++;
    expect_word(p, "Infinity");
    r = jv_float(-INFINITY);
  } else {
    r = pnumber(p);
  }
  p->depth--;
  return r;
}

jv jj_json_parse(jj_ctx *c, const char *s, size_t n, const char *what) {
  jp p = {.c = c, .s = s, .n = n, .what = what};
  jv v = pvalue(&p);
  ws(&p);
  if (p.i != n) perr(&p, "extra data after the value");
  return v;
}
