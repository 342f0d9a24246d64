/* jinja2's built-in filters (filters.py) with their Python semantics, and transformers' tojson. map / select /
 * reject / selectattr / rejectattr / unique / items / batch / slice return generators (single use, always true,
 * no len()), as in jinja2; sort and groupby are stable like Python's sorted. */
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jj_internal.h"

enum {
  F_ABS, F_ATTR, F_BATCH, F_CAPITALIZE, F_CENTER, F_COUNT, F_D, F_DEFAULT, F_DICTSORT, F_E, F_ESCAPE,
  F_FILESIZEFORMAT, F_FIRST, F_FLOAT, F_FORCEESCAPE, F_FORMAT, F_GROUPBY, F_INDENT, F_INT, F_JOIN, F_LAST, F_LENGTH,
  F_LIST, F_LOWER, F_ITEMS, F_MAP, F_MIN, F_MAX, F_PPRINT, F_RANDOM, F_REJECT, F_REJECTATTR, F_REPLACE, F_REVERSE,
  F_ROUND, F_SAFE, F_SELECT, F_SELECTATTR, F_SLICE, F_SORT, F_STRING, F_STRIPTAGS, F_SUM, F_TITLE, F_TRIM,
  F_TRUNCATE, F_UNIQUE, F_UPPER, F_URLENCODE, F_URLIZE, F_WORDCOUNT, F_WORDWRAP, F_XMLATTR, F_TOJSON, F_N
};
static const char *const NAMES[F_N] = {
    "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape",
    "filesizeformat", "first", "float", "forceescape", "format", "groupby", "indent", "int", "join", "last", "length",
    "list", "lower", "items", "map", "min", "max", "pprint", "random", "reject", "rejectattr", "replace", "reverse",
    "round", "safe", "select", "selectattr", "slice", "sort", "string", "striptags", "sum", "title", "trim",
    "truncate", "unique", "upper", "urlencode", "urlize", "wordcount", "wordwrap", "xmlattr", "tojson"};

int jj_filter_id(const char *name, size_t len) {
  for (int i = 0; i < F_N; i++)
    if (strlen(NAMES[i]) == len && !memcmp(NAMES[i], name, len)) return i;
  return -1;
}

const char *jj_filter_name(int id) { return NAMES[id]; }

/* ---------------------------------------------------------------- helpers */
static jv gen(jj_list *l, const char *name) {
  l->kind = JL_GEN;
  l->gen_name = name;
  return jv_listv(l);
}

static jv soft_str(jj_ctx *c, jv v) {
  if (v.t == JT_STR) return v;
  return jv_strv(jj_to_str(c, v));
}

static jv str_result(jj_ctx *c, jj_buf *b) { return jv_strv(jj_buf_pop(c, b)); }

static jv lower(jj_ctx *c, jv v) {
  if (v.t != JT_STR) return v;
  jj_buf *b = jj_tmpbuf(c);
  jj_buf_lower(b, v.s->p, v.s->len);
  jv r = str_result(c, b);
  r.markup = v.markup;
  return r;
}

static int truthy_arg(jv *v, int dflt) { return v ? jj_truthy(*v) : dflt; }

/* sorted(reverse=...) takes an int (a bool is one), not any truthy value. */
static int reverse_arg(jj_ctx *c, jv *v) {
  if (!v) return 0;
  if (v->t != JT_INT && v->t != JT_BOOL)
    jj_fail(c, "TypeError: '%s' object cannot be interpreted as an integer", jj_type_name(*v));
  return v->i != 0;
}

static int64_t int_arg(jj_ctx *c, jv *v, int64_t dflt, const char *what) {
  if (!v) return dflt;
  if (v->t == JT_UNDEF) jj_fail_undefined(c, *v);
  if (v->t == JT_INT || v->t == JT_BOOL) return v->i;
  if (v->t == JT_FLOAT) jj_fail(c, "TypeError: %s: 'float' object cannot be interpreted as an integer", what);
  jj_fail(c, "TypeError: %s: '%s' object cannot be interpreted as an integer", what, jj_type_name(*v));
}

/* make_attrgetter: "a.b.0" -> getitem chain (digit parts are indices). */
typedef struct getter { jv parts[16]; int n; int none; } getter;

static void getter_init(jj_ctx *c, getter *g, jv *attr) {
  g->n = 0;
  g->none = !attr || attr->t == JT_NONE;
  if (g->none) return;
  if (attr->t != JT_STR) { g->parts[g->n++] = *attr; return; }
  const char *s = attr->s->p;
  size_t n = attr->s->len, st = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && s[i] != '.') continue;
    if (g->n == 16) jj_fail(c, "attribute path '%s' too long", s);
    int digits = i > st;
    for (size_t k = st; k < i; k++) digits &= s[k] >= '0' && s[k] <= '9';
    if (digits && i - st < 18) g->parts[g->n++] = jv_int(strtoll(s + st, NULL, 10));
    else g->parts[g->n++] = jj_strv(&c->arena, s + st, i - st);
    st = i + 1;
  }
}

static jv getter_get(jj_ctx *c, const getter *g, jv item, jv *dflt) {
  for (int i = 0; i < g->n; i++) {
    item = jj_getitem(c, item, g->parts[i]);
    if (dflt && dflt->t != JT_NONE && item.t == JT_UNDEF) item = *dflt;
  }
  return item;
}

/* Stable merge sort of v[0..n) by keys (jj_cmp; reverse flips the order, ties keep theirs). */
static void msort(jj_ctx *c, jv *v, jv *keys, size_t n, int reverse, jv *tv, jv *tk) {
  if (n < 2) return;
  size_t h = n / 2;
  msort(c, v, keys, h, reverse, tv, tk);
  msort(c, v + h, keys + h, n - h, reverse, tv, tk);
  size_t i = 0, j = h, o = 0;
  while (i < h && j < n) {
    int r = jj_cmp(c, keys[j], keys[i], "<");
    int take_right = reverse ? jj_cmp(c, keys[i], keys[j], "<") < 0 && r != 2 : r < 0;
    if (r == 2) take_right = 0;
    if (take_right) { tv[o] = v[j]; tk[o++] = keys[j++]; }
    else { tv[o] = v[i]; tk[o++] = keys[i++]; }
  }
  while (i < h) { tv[o] = v[i]; tk[o++] = keys[i++]; }
  while (j < n) { tv[o] = v[j]; tk[o++] = keys[j++]; }
  jj_copy(v, tv, n * sizeof *v);
  jj_copy(keys, tk, n * sizeof *keys);
}

static jj_list *sorted(jj_ctx *c, jj_list *src, jv *keys, int reverse) {
  jj_list *l = jj_list_new(c, src->n, JL_LIST);
  jj_copy(l->v, src->v, src->n * sizeof(jv));
  l->n = src->n;
  jv *tv = jj_alloc_array(&c->arena, src->n + 1, sizeof(jv)), *tk = jj_alloc_array(&c->arena, src->n + 1, sizeof(jv));
  jj_charge(c, src->n * 4);
  msort(c, l->v, keys, l->n, reverse, tv, tk);
  return l;
}

static jj_list *iter_arg(jj_ctx *c, jv v) {
  if (v.t == JT_UNDEF && v.u && v.u->security) jj_fail_undefined(c, v);
  return jj_iter(c, v);
}

/* call_test / call_filter by name, for select / map. */
static jv call_named(jj_ctx *c, int is_test, jv name, jv item, jj_args *rest) {
  if (name.t != JT_STR) jj_fail(c, "TemplateRuntimeError: No %s named %s.", is_test ? "test" : "filter", "(not a string)");
  jj_args a = *rest;
  a.used_kw = 0;
  if (is_test) {
    int id = jj_test_id(name.s->p, name.s->len);
    if (id < 0) jj_fail(c, "TemplateRuntimeError: No test named '%s'.", name.s->p);
    a.fname = name.s->p;
    return jv_bool(jj_test_apply(c, id, item, &a));
  }
  int id = jj_filter_id(name.s->p, name.s->len);
  if (id < 0) jj_fail(c, "TemplateRuntimeError: No filter named '%s'.", name.s->p);
  a.fname = name.s->p;
  return jj_filter_apply(c, id, item, &a);
}

static jv select_reject(jj_ctx *c, jv value, jj_args *a, int reject, int lookup_attr, const char *gname) {
  jj_list *out = jj_list_new(c, 0, JL_LIST);
  if (!jj_truthy(value)) return gen(out, gname);
  getter g = {0};
  size_t off = 0;
  if (lookup_attr) {
    if (!a->n_pos) jj_fail(c, "FilterArgumentError: Missing parameter for attribute name");
    getter_init(c, &g, &a->pos[0]);
    off = 1;
  }
  int has_test = a->n_pos > off;
  jj_args rest = {.pos = a->pos + off + has_test, .n_pos = has_test ? a->n_pos - off - 1 : 0, .kwn = a->kwn,
                  .kwv = a->kwv, .n_kw = a->n_kw};
  if (!has_test && a->n_kw) jj_fail(c, "TypeError: %s() got unexpected keyword arguments", gname);
  jj_list *items = iter_arg(c, value);
  for (size_t i = 0; i < items->n; i++) {
    jv x = lookup_attr ? getter_get(c, &g, items->v[i], NULL) : items->v[i];
    int ok = has_test ? jj_truthy(call_named(c, 1, a->pos[off], x, &rest)) : jj_truthy(x);
    if (ok != reject) jj_list_push(c, out, items->v[i]);
  }
  a->used_kw = ~0u;
  return gen(out, gname);
}

static jv minmax(jj_ctx *c, jv value, jj_args *a, int is_max) {
  jv *cs = jj_arg(c, a, 0, "case_sensitive"), *attr = jj_arg(c, a, 1, "attribute");
  jj_args_done(c, a, 2);
  jj_list *items = iter_arg(c, value);
  if (!items->n) return jj_undef_hint(c, "No aggregated item, sequence was empty.");
  getter g;
  getter_init(c, &g, attr);
  int ci = !truthy_arg(cs, 0);
  size_t best = 0;
  jv bk = getter_get(c, &g, items->v[0], NULL);
  if (ci) bk = lower(c, bk);
  for (size_t i = 1; i < items->n; i++) {
    jv k = getter_get(c, &g, items->v[i], NULL);
    if (ci) k = lower(c, k);
    int r = jj_cmp(c, k, bk, is_max ? ">" : "<");
    if (r != 2 && (is_max ? r > 0 : r < 0)) { best = i; bk = k; }
  }
  return items->v[best];
}

/* Python int(str, base) as do_int tries it; returns 0 on failure. */
static int parse_int(const char *s, size_t n, int base, int64_t *out) {
  size_t i = 0;
  while (i < n && jj_py_isspace((unsigned char)s[i])) i++;
  while (n > i && jj_py_isspace((unsigned char)s[n - 1])) n--;
  int neg = 0;
  if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if (i + 1 < n && s[i] == '0') {
    char p = s[i + 1] | 0x20;
    if ((p == 'x' && base == 16) || (p == 'o' && base == 8) || (p == 'b' && base == 2)) i += 2;
  }
  if (i >= n) return 0;
  uint64_t v = 0;
  int digits = 0, prev_us = 1;
  for (; i < n; i++) {
    char ch = s[i];
    if (ch == '_') {
      if (prev_us) return 0;
      prev_us = 1;
      continue;
    }
    int d = ch >= '0' && ch <= '9' ? ch - '0' : (ch | 0x20) >= 'a' && (ch | 0x20) <= 'z' ? (ch | 0x20) - 'a' + 10 : 99;
    if (d >= base) return 0;
    if (v > (UINT64_MAX - (unsigned)d) / (unsigned)base) return 0;
    v = v * (unsigned)base + (unsigned)d;
    digits++;
    prev_us = 0;
  }
  if (!digits || prev_us) return 0;
  if (v > (uint64_t)INT64_MAX + neg) return 0;
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return 1;
}

/* Python float(str): strtod over the stripped text, with Python's spellings of inf and nan. */
static int parse_float(const char *s, size_t n, double *out) {
  size_t i = 0;
  while (i < n && jj_py_isspace((unsigned char)s[i])) i++;
  while (n > i && jj_py_isspace((unsigned char)s[n - 1])) n--;
  if (i >= n || n - i > 400) return 0;
  char tmp[420];
  size_t m = 0;
  for (size_t k = i; k < n; k++) {
    if (s[k] == '_') {
      if (k == i || k + 1 >= n || !(s[k - 1] >= '0' && s[k - 1] <= '9') || !(s[k + 1] >= '0' && s[k + 1] <= '9')) return 0;
      continue;
    }
    tmp[m++] = s[k];
  }
  tmp[m] = 0;
  const char *t = tmp;
  int neg = 0;
  if (*t == '+' || *t == '-') neg = *t++ == '-';
  if (!strcasecmp(t, "inf") || !strcasecmp(t, "infinity")) { *out = neg ? -INFINITY : INFINITY; return 1; }
  if (!strcasecmp(t, "nan")) { *out = NAN; return 1; }
  for (const char *q = t; *q; q++)
    if (!((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' || *q == '-')) return 0;
  char *end;
  double v = strtod(tmp, &end);
  if (*end || end == tmp) return 0;
  *out = v;
  return 1;
}

static jv do_round(jj_ctx *c, jv value, jj_args *a) {
  jv *precv = jj_arg(c, a, 0, "precision"), *method = jj_arg(c, a, 1, "method");
  jj_args_done(c, a, 2);
  int64_t prec = int_arg(c, precv, 0, "round");
  const char *m = method ? (method->t == JT_STR ? method->s->p : "?") : "common";
  if (strcmp(m, "common") && strcmp(m, "ceil") && strcmp(m, "floor"))
    jj_fail(c, "FilterArgumentError: method must be common, ceil or floor");
  if (value.t == JT_UNDEF) jj_fail_undefined(c, value);
  if (!jj_is_number(value)) jj_fail(c, "TypeError: type %s doesn't define __round__ method", jj_type_name(value));
  if (!strcmp(m, "common")) {
    if (value.t != JT_FLOAT) { /* round(int, n): an int */
      if (prec >= 0) return jv_int(value.i);
      int64_t p = 1;
      for (int64_t k = 0; k < -prec && p < INT64_MAX / 10; k++) p *= 10;
      int64_t q = value.i / p, r = value.i % p;
      if (r < 0) { q--; r += p; }
      if (2 * r > p || (2 * r == p && (q & 1))) q++;
      return jv_int(q * p);
    }
    double x = value.f;
    if (!isfinite(x)) return value;
    if (prec > 300) return value;
    if (prec >= 0) {
      char buf[420];
      snprintf(buf, sizeof buf, "%.*f", (int)prec, x); /* correctly rounded, half to even on the exact value */
      return jv_float(strtod(buf, NULL));
    }
    double p = pow(10.0, (double)-prec);
    double y = x / p, r = nearbyint(y);
    if (fabs(y - trunc(y)) == 0.5) r = 2.0 * nearbyint(y / 2.0);
    return jv_float(r * p);
  }
  double p = pow(10.0, (double)prec), x = jj_num(value) * p;
  double r = !strcmp(m, "ceil") ? ceil(x) : floor(x);
  return jv_float(r / p);
}

static jv do_indent(jj_ctx *c, jv s, jj_args *a) {
  jv *w = jj_arg(c, a, 0, "width"), *first = jj_arg(c, a, 1, "first"), *blank = jj_arg(c, a, 2, "blank");
  jj_args_done(c, a, 3);
  jj_str *ind;
  if (w && w->t == JT_STR) ind = w->s;
  else {
    int64_t n = int_arg(c, w, 4, "indent");
    if (n > 1 << 20) jj_fail_limit(c, "the template builds a string longer than %zu MiB", c->out_limit >> 20);
    if (n < 0) n = 0;
    ind = jj_alloc(&c->arena, sizeof(jj_str) + (size_t)n + 1);
    memset(ind->p, ' ', (size_t)n);
    ind->p[n] = 0;
    ind->len = (size_t)n;
    ind->ncp = (size_t)n;
  }
  if (s.t == JT_UNDEF) jj_fail_undefined(c, s);
  if (s.t != JT_STR) jj_fail(c, "TypeError: unsupported operand type(s) for +=: '%s' and 'str'", jj_type_name(s));
  jv nl = jj_strv(&c->arena, "\n", 1);
  jv src = jj_binop(c, OP_ADD, s, nl);
  jj_list *lines = jj_py_splitlines(c, src, 0).l;
  jj_buf *b = jj_tmpbuf(c);
  if (truthy_arg(first, 0)) jj_buf_put(b, ind->p, ind->len);
  for (size_t i = 0; i < lines->n; i++) {
    jj_str *ln = lines->v[i].s;
    if (i) jj_buf_putc(b, '\n');
    if (i && (ln->len || truthy_arg(blank, 0))) jj_buf_put(b, ind->p, ind->len);
    jj_buf_put(b, ln->p, ln->len);
  }
  jv r = str_result(c, b);
  r.markup = s.markup;
  return r;
}

static jv do_title(jj_ctx *c, jv v) {
  jv s = soft_str(c, v);
  /* re.split(r"([-\s({\[<]+)"): separators are kept; each piece gets item[0].upper() + item[1:].lower() */
  jj_buf *b = jj_tmpbuf(c);
  const char *p = s.s->p;
  size_t n = s.s->len, i = 0;
  while (i < n) {
    size_t j = i, adv;
    int sep = 0;
    for (;;) {
      if (j >= n) break;
      uint32_t cp = jj_u8_dec(p + j, &adv);
      int is_sep = cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || jj_py_isspace(cp);
      if (j == i) sep = is_sep;
      else if (is_sep != sep) break;
      j += adv;
    }
    if (j == i) break;
    uint32_t first = jj_u8_dec(p + i, &adv);
    char tmp[4];
    size_t tl = jj_u8_enc(first, tmp);
    jj_buf_upper(b, tmp, tl);
    jj_buf_lower(b, p + i + adv, j - i - adv);
    i = j;
  }
  jv r = str_result(c, b);
  r.markup = s.markup;
  return r;
}

static void url_quote(jj_buf *b, jj_str *s, int for_qs) {
  static const char hx[] = "0123456789ABCDEF";
  for (size_t i = 0; i < s->len; i++) {
    unsigned char ch = (unsigned char)s->p[i];
    int safe = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
               ch == '.' || ch == '-' || ch == '~' || (!for_qs && ch == '/');
    if (safe) jj_buf_putc(b, (char)ch);
    else if (for_qs && ch == ' ') jj_buf_putc(b, '+');
    else {
      jj_buf_putc(b, '%');
      jj_buf_putc(b, hx[ch >> 4]);
      jj_buf_putc(b, hx[ch & 15]);
    }
  }
}

static jv do_tojson(jj_ctx *c, jv value, jj_args *a) {
  jv *ea = jj_arg(c, a, 0, "ensure_ascii"), *indent = jj_arg(c, a, 1, "indent"), *seps = jj_arg(c, a, 2, "separators"),
     *sk = jj_arg(c, a, 3, "sort_keys");
  jj_args_done(c, a, 4);
  jj_dumps_opts o = {.ensure_ascii = truthy_arg(ea, 0), .sort_keys = truthy_arg(sk, 0)};
  if (indent && indent->t != JT_NONE) {
    o.has_indent = 1;
    if (indent->t == JT_STR) {
      o.indent = indent->s->p;
      o.indent_len = indent->s->len;
    } else {
      int64_t n = int_arg(c, indent, 0, "indent");
      if (n > 256) jj_fail(c, "tojson: indent %lld is too large", (long long)n);
      char *sp = jj_alloc(&c->arena, (size_t)(n > 0 ? n : 0) + 1);
      memset(sp, ' ', (size_t)(n > 0 ? n : 0));
      o.indent = sp;
      o.indent_len = (size_t)(n > 0 ? n : 0);
    }
  }
  o.item_sep = o.has_indent ? "," : ", ";
  o.key_sep = ": ";
  if (seps && seps->t != JT_NONE) {
    if (seps->t == JT_UNDEF) jj_fail_undefined(c, *seps);
    jj_list *l = iter_arg(c, *seps);
    if (l->n != 2 || l->v[0].t != JT_STR || l->v[1].t != JT_STR)
      jj_fail(c, "TypeError: tojson: separators must be a pair of strings");
    o.item_sep = l->v[0].s->p;
    o.key_sep = l->v[1].s->p;
    o.item_sep_len = l->v[0].s->len;
    o.key_sep_len = l->v[1].s->len;
  }
  if (!o.item_sep_len) o.item_sep_len = strlen(o.item_sep);
  if (!o.key_sep_len) o.key_sep_len = strlen(o.key_sep);
  jj_buf *b = jj_tmpbuf(c);
  jj_json_dumps(c, b, value, &o);
  return str_result(c, b);
}

/* ---------------------------------------------------------------- the filters */
static jv filter_impl(jj_ctx *c, int id, jv v, jj_args *a);

/* jinja2's map, select, unique, batch, ... are generators: their errors come when they are iterated, not when the
 * filter is applied (a generator that is only printed, or never used, does not fail). These run eagerly here, so an
 * error is caught and handed to a generator that raises it when iterated. Limits and out of memory still stop. */
static jv lazily(jj_ctx *c, int id, jv v, jj_args *a, const char *gname) {
  jmp_buf saved;
  memcpy(saved, c->err.jb, sizeof saved);
  unsigned depth = c->depth;
  int ctl = c->loop_ctl;
  jj_buf *out = c->out;
  uint32_t line = c->line, col = c->col;
  if (setjmp(c->err.jb)) {
    memcpy(c->err.jb, saved, sizeof saved);
    if (c->err.limit || c->err.raised || c->err.status != XPI_ERR_INVALID_ARGUMENT) longjmp(c->err.jb, 1);
    c->depth = depth;
    c->loop_ctl = ctl;
    c->out = out;
    c->line = line;
    c->col = col;
    jj_list *l = jj_list_new(c, 0, JL_LIST);
    l->deferred_error = jj_strndup(&c->arena, c->err.msg, strlen(c->err.msg));
    return gen(l, gname);
  }
  jv r = filter_impl(c, id, v, a);
  memcpy(c->err.jb, saved, sizeof saved);
  return r;
}

jv jj_filter_apply(jj_ctx *c, int id, jv v, jj_args *a) {
  switch (id) {
    case F_MAP: return lazily(c, id, v, a, "sync_do_map");
    case F_SELECT: case F_REJECT: case F_SELECTATTR: case F_REJECTATTR:
      return lazily(c, id, v, a, "select_or_reject");
    case F_UNIQUE: return lazily(c, id, v, a, "sync_do_unique");
    case F_BATCH: return lazily(c, id, v, a, "do_batch");
    case F_SLICE: return lazily(c, id, v, a, "sync_do_slice");
    default: return filter_impl(c, id, v, a);
  }
}

static jv filter_impl(jj_ctx *c, int id, jv v, jj_args *a) {
  jj_charge(c, 1);
  switch (id) {
    case F_ABS:
      jj_args_done(c, a, 0);
      if (v.t == JT_UNDEF) jj_fail_undefined(c, v);
      if (v.t == JT_FLOAT) return jv_float(fabs(v.f));
      if (v.t == JT_INT || v.t == JT_BOOL) {
        if (v.i == INT64_MIN) jj_fail(c, "OverflowError: integer result beyond 64 bits");
        return jv_int(v.i < 0 ? -v.i : v.i);
      }
      jj_fail(c, "TypeError: bad operand type for abs(): '%s'", jj_type_name(v));
    case F_ATTR: {
      jv *name = jj_arg(c, a, 0, "name");
      jj_args_done(c, a, 1);
      if (!name || name->t != JT_STR) jj_fail(c, "TypeError: attribute name must be string");
      if (v.t == JT_UNDEF) jj_fail_undefined(c, v);
      if (v.t == JT_DICT && !jj_method_lookup(c, v, name->s, &(jv){0})) return jj_undef_new(c, NULL, v, *name);
      return jj_getattr(c, v, name->s);
    }
    case F_BATCH:
    case F_SLICE: {
      int64_t n = int_arg(c, jj_arg(c, a, 0, id == F_BATCH ? "linecount" : "slices"), 0, NAMES[id]);
      jv *fill = jj_arg(c, a, 1, "fill_with");
      jj_args_done(c, a, 2);
      jj_list *items = iter_arg(c, v), *out = jj_list_new(c, 0, JL_LIST);
      int has_fill = fill && fill->t != JT_NONE;
      if (id == F_BATCH) { /* do_batch, step for step (a size of 0 yields an empty batch first, as it does) */
        jj_list *cur = jj_list_new(c, 0, JL_LIST);
        for (size_t i = 0; i < items->n; i++) {
          if ((int64_t)cur->n == n) {
            jj_list_push(c, out, jv_listv(cur));
            cur = jj_list_new(c, 0, JL_LIST);
          }
          jj_list_push(c, cur, items->v[i]);
        }
        if (cur->n) {
          if (has_fill)
            while ((int64_t)cur->n < n) jj_list_push(c, cur, *fill);
          jj_list_push(c, out, jv_listv(cur));
        }
        return gen(out, "do_batch");
      }
      if (n < 0) return gen(out, "sync_do_slice"); /* range(slices) is empty */
      if (n <= 0) jj_fail(c, "ZeroDivisionError: integer division or modulo by zero");
      if (n > 100000) jj_fail(c, "slice: too many slices");
      size_t len = items->n, per = len / (size_t)n, extra = len % (size_t)n, off = 0;
      for (size_t k = 0; k < (size_t)n; k++) {
        size_t start = off + k * per;
        if (k < extra) off++;
        size_t end = off + (k + 1) * per;
        jj_list *t = jj_list_new(c, end - start + 1, JL_LIST);
        for (size_t i = start; i < end; i++) t->v[t->n++] = items->v[i];
        if (has_fill && k >= extra) jj_list_push(c, t, *fill);
        jj_list_push(c, out, jv_listv(t));
      }
      return gen(out, "sync_do_slice");
    }
    case F_CAPITALIZE: {
      jj_args_done(c, a, 0);
      jv s = soft_str(c, v);
      jj_func m = {.kind = JF_METHOD, .self = s, .name = "capitalize"};
      jv meth;
      jj_method_lookup(c, s, jj_str_c(&c->arena, "capitalize"), &meth);
      m.id = meth.fn->id;
      jj_args none = {.fname = "capitalize"};
      return jj_method_call(c, &m, &none);
    }
    case F_CENTER: {
      jv *w = jj_arg(c, a, 0, "width");
      jj_args_done(c, a, 1);
      jv s = soft_str(c, v), meth;
      jj_method_lookup(c, s, jj_str_c(&c->arena, "center"), &meth);
      jv wv = w ? *w : jv_int(80);
      jj_args ca = {.pos = &wv, .n_pos = 1, .fname = "center"};
      return jj_method_call(c, meth.fn, &ca);
    }
    case F_COUNT:
    case F_LENGTH:
      jj_args_done(c, a, 0);
      return jv_int(jj_len(c, v));
    case F_D:
    case F_DEFAULT: {
      jv *dv = jj_arg(c, a, 0, "default_value"), *boolean = jj_arg(c, a, 1, "boolean");
      jj_args_done(c, a, 2);
      if (v.t == JT_UNDEF || (truthy_arg(boolean, 0) && !jj_truthy(v))) return dv ? *dv : jj_strv(&c->arena, "", 0);
      return v;
    }
    case F_DICTSORT: {
      jv *cs = jj_arg(c, a, 0, "case_sensitive"), *by = jj_arg(c, a, 1, "by"), *rev = jj_arg(c, a, 2, "reverse");
      jj_args_done(c, a, 3);
      int pos = 0;
      if (by) {
        if (by->t == JT_STR && !strcmp(by->s->p, "value")) pos = 1;
        else if (!(by->t == JT_STR && !strcmp(by->s->p, "key")))
          jj_fail(c, "FilterArgumentError: You can only sort by either \"key\" or \"value\"");
      }
      if (v.t == JT_UNDEF) jj_fail_undefined(c, v);
      if (v.t != JT_DICT) jj_fail(c, "AttributeError: '%s' object has no attribute 'items'", jj_type_name(v));
      jj_list *items = jj_dict_items(c, v.d).l;
      jv *keys = jj_alloc_array(&c->arena, items->n + 1, sizeof(jv));
      for (size_t i = 0; i < items->n; i++) {
        keys[i] = items->v[i].l->v[pos];
        if (!truthy_arg(cs, 0)) keys[i] = lower(c, keys[i]);
      }
      return jv_listv(sorted(c, items, keys, reverse_arg(c, rev)));
    }
    case F_E:
    case F_ESCAPE:
      jj_args_done(c, a, 0);
      return jj_markup_escape(c, v);
    case F_FORCEESCAPE: {
      jj_args_done(c, a, 0);
      jv s = jv_strv(jj_to_str(c, v));
      return jj_markup_escape(c, s);
    }
    case F_FILESIZEFORMAT: {
      jv *bin = jj_arg(c, a, 0, "binary");
      jj_args_done(c, a, 1);
      double bytes;
      if (v.t == JT_STR) {
        if (!parse_float(v.s->p, v.s->len, &bytes))
          jj_fail(c, "ValueError: could not convert string to float: '%s'", v.s->p);
      } else if (jj_is_number(v)) bytes = jj_num(v);
      else if (v.t == JT_UNDEF) jj_fail_undefined(c, v);
      else jj_fail(c, "TypeError: float() argument must be a string or a real number, not '%s'", jj_type_name(v));
      int binary = truthy_arg(bin, 0);
      double base = binary ? 1024 : 1000;
      static const char *const dec[] = {"kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
      static const char *const bi[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
      jj_buf *b = jj_tmpbuf(c);
      if (bytes == 1) jj_buf_puts(b, "1 Byte");
      else if (bytes < base) jj_buf_printf(b, "%lld Bytes", (long long)bytes);
      else {
        int i;
        double unit = base;
        for (i = 0; i < 8; i++) {
          unit = pow(base, i + 2);
          if (bytes < unit) break;
        }
        if (i == 8) i = 7;
        jj_buf_printf(b, "%.1f %s", base * bytes / unit, binary ? bi[i] : dec[i]);
      }
      return str_result(c, b);
    }
    case F_FIRST: {
      jj_args_done(c, a, 0);
      jj_list *items = iter_arg(c, v);
      return items->n ? items->v[0] : jj_undef_hint(c, "No first item, sequence was empty.");
    }
    case F_LAST: {
      jj_args_done(c, a, 0);
      if (v.t == JT_LIST && (v.l->kind == JL_GEN || v.l->kind == JL_REVITER))
        jj_fail(c, "TypeError: '%s' object is not reversible", jj_type_name(v));
      jj_list *items = iter_arg(c, v);
      return items->n ? items->v[items->n - 1] : jj_undef_hint(c, "No last item, sequence was empty.");
    }
    case F_FLOAT: {
      jv *dflt = jj_arg(c, a, 0, "default");
      jj_args_done(c, a, 1);
      if (v.t == JT_UNDEF) jj_fail_undefined(c, v);
      if (v.t == JT_BIGINT) return jv_float(strtod(v.s->p, NULL));
      if (jj_is_number(v)) return jv_float(jj_num(v));
      double f;
      if (v.t == JT_STR && parse_float(v.s->p, v.s->len, &f)) return jv_float(f);
      return dflt ? *dflt : jv_float(0.0);
    }
    case F_FORMAT: {
      if (a->n_pos && a->n_kw)
        jj_fail(c, "FilterArgumentError: can't handle positional and keyword arguments at the same time");
      jv s = soft_str(c, v);
      jv args;
      if (a->n_kw) {
        jj_dict *d = jj_dict_new(c, a->n_kw);
        for (size_t k = 0; k < a->n_kw; k++) jj_dict_set(c, d, jv_strv(a->kwn[k]), a->kwv[k]);
        args = jv_dictv(d);
      } else {
        jj_list *t = jj_list_new(c, a->n_pos, JL_TUPLE);
        jj_copy(t->v, a->pos, a->n_pos * sizeof(jv));
        t->n = a->n_pos;
        args = jv_listv(t);
      }
      return jj_percent_format(c, s.s, args);
    }
    case F_GROUPBY: {
      jv *attr = jj_arg(c, a, 0, "attribute"), *dflt = jj_arg(c, a, 1, "default"), *cs = jj_arg(c, a, 2, "case_sensitive");
      jj_args_done(c, a, 3);
      if (!attr) jj_fail(c, "TypeError: groupby() missing 1 required positional argument: 'attribute'");
      getter g;
      getter_init(c, &g, attr);
      jj_list *items = iter_arg(c, v);
      int ci = !truthy_arg(cs, 0);
      jv *keys = jj_alloc_array(&c->arena, items->n + 1, sizeof(jv));
      for (size_t i = 0; i < items->n; i++) {
        keys[i] = getter_get(c, &g, items->v[i], dflt);
        if (ci) keys[i] = lower(c, keys[i]);
      }
      jj_list *s = sorted(c, items, keys, 0);
      static const char *const fields[] = {"grouper", "list", NULL};
      jj_list *out = jj_list_new(c, 0, JL_LIST);
      for (size_t i = 0; i < s->n;) {
        size_t j = i + 1;
        while (j < s->n && jj_eq(c, keys[j], keys[i])) j++;
        jj_list *grp = jj_list_new(c, j - i, JL_LIST);
        for (size_t k = i; k < j; k++) grp->v[grp->n++] = s->v[k];
        jj_list *t = jj_list_new(c, 2, JL_TUPLE);
        t->v[0] = ci ? getter_get(c, &g, s->v[i], dflt) : keys[i];
        t->v[1] = jv_listv(grp);
        t->n = 2;
        t->fields = fields;
        jj_list_push(c, out, jv_listv(t));
        i = j;
      }
      return jv_listv(out);
    }
    case F_INDENT: return do_indent(c, v, a);
    case F_INT: {
      jv *dflt = jj_arg(c, a, 0, "default"), *basev = jj_arg(c, a, 1, "base");
      jj_args_done(c, a, 2);
      int64_t base = int_arg(c, basev, 10, "int");
      if (v.t == JT_UNDEF) jj_fail_undefined(c, v);
      if (v.t == JT_BIGINT) return v;
      if (v.t == JT_INT || v.t == JT_BOOL) return jv_int(v.i);
      if (v.t == JT_FLOAT) {
        if (isinf(v.f)) jj_fail(c, "OverflowError: cannot convert float infinity to integer");
        if (v.f != v.f || fabs(v.f) >= 9.2e18) return dflt ? *dflt : jv_int(0);
        return jv_int((int64_t)v.f);
      }
      if (v.t == JT_STR) {
        int64_t i;
        double f;
        if (base >= 2 && base <= 36 && parse_int(v.s->p, v.s->len, (int)base, &i)) return jv_int(i);
        if (parse_float(v.s->p, v.s->len, &f) && isfinite(f) && fabs(f) < 9.2e18) return jv_int((int64_t)f);
      }
      return dflt ? *dflt : jv_int(0);
    }
    case F_JOIN: {
      jv *d = jj_arg(c, a, 0, "d"), *attr = jj_arg(c, a, 1, "attribute");
      jj_args_done(c, a, 2);
      jj_str *sep = d ? jj_to_str(c, *d) : jj_str_new(&c->arena, "", 0);
      getter g;
      getter_init(c, &g, attr);
      jj_list *items = iter_arg(c, v);
      jj_buf *b = jj_tmpbuf(c);
      for (size_t i = 0; i < items->n; i++) {
        if (i) jj_buf_put(b, sep->p, sep->len);
        jj_write_str(c, b, g.none ? items->v[i] : getter_get(c, &g, items->v[i], NULL));
      }
      return str_result(c, b);
    }
    case F_LIST: {
      jj_args_done(c, a, 0);
      jj_list *items = iter_arg(c, v), *l = jj_list_new(c, items->n, JL_LIST);
      jj_copy(l->v, items->v, items->n * sizeof(jv));
      l->n = items->n;
      return jv_listv(l);
    }
    case F_LOWER:
    case F_UPPER: {
      jj_args_done(c, a, 0);
      jv s = soft_str(c, v);
      jj_buf *b = jj_tmpbuf(c);
      if (id == F_LOWER) jj_buf_lower(b, s.s->p, s.s->len);
      else jj_buf_upper(b, s.s->p, s.s->len);
      jv r = str_result(c, b);
      r.markup = s.markup;
      return r;
    }
    case F_ITEMS: {
      jj_args_done(c, a, 0);
      if (v.t == JT_UNDEF) return gen(jj_list_new(c, 0, JL_LIST), "do_items");
      if (v.t != JT_DICT) { /* do_items is a generator: it fails when iterated */
        jj_list *l = jj_list_new(c, 0, JL_LIST);
        l->deferred_error = "TypeError: Can only get item pairs from a mapping.";
        return gen(l, "do_items");
      }
      jv items = jj_dict_items(c, v.d);
      return gen(items.l, "do_items");
    }
    case F_MAP: {
      jj_list *out = jj_list_new(c, 0, JL_LIST);
      if (!jj_truthy(v)) { a->used_kw = ~0u; return gen(out, "sync_do_map"); }
      jj_list *items = iter_arg(c, v);
      if (!a->n_pos && jj_arg(c, a, 99, "attribute")) {
        jv *attr = jj_arg(c, a, 99, "attribute"), *dflt = jj_arg(c, a, 99, "default");
        for (size_t k = 0; k < a->n_kw; k++)
          if (!(a->used_kw & (1u << k)))
            jj_fail(c, "FilterArgumentError: Unexpected keyword argument '%s'", a->kwn[k]->p);
        getter g;
        getter_init(c, &g, attr);
        for (size_t i = 0; i < items->n; i++) jj_list_push(c, out, getter_get(c, &g, items->v[i], dflt));
        return gen(out, "sync_do_map");
      }
      if (!a->n_pos) jj_fail(c, "FilterArgumentError: map requires a filter argument");
      jj_args rest = {.pos = a->pos + 1, .n_pos = a->n_pos - 1, .kwn = a->kwn, .kwv = a->kwv, .n_kw = a->n_kw};
      for (size_t i = 0; i < items->n; i++) jj_list_push(c, out, call_named(c, 0, a->pos[0], items->v[i], &rest));
      a->used_kw = ~0u;
      return gen(out, "sync_do_map");
    }
    case F_MIN: return minmax(c, v, a, 0);
    case F_MAX: return minmax(c, v, a, 1);
    case F_PPRINT: {
      jj_args_done(c, a, 0);
      jj_buf *b = jj_tmpbuf(c);
      jj_write_repr(c, b, v);
      if (b->len > 80 && (v.t == JT_LIST || v.t == JT_DICT))
        jj_fail(c, "pprint of a value longer than 80 characters is not supported (Python wraps its lines)");
      return str_result(c, b);
    }
    case F_RANDOM: jj_fail(c, "the 'random' filter is not supported: chat templates render reproducibly");
    case F_URLIZE: jj_fail(c, "the 'urlize' filter is not supported in chat templates");
    case F_WORDWRAP: jj_fail(c, "the 'wordwrap' filter is not supported in chat templates");
    case F_REJECT: return select_reject(c, v, a, 1, 0, "select_or_reject");
    case F_REJECTATTR: return select_reject(c, v, a, 1, 1, "select_or_reject");
    case F_SELECT: return select_reject(c, v, a, 0, 0, "select_or_reject");
    case F_SELECTATTR: return select_reject(c, v, a, 0, 1, "select_or_reject");
    case F_REPLACE: {
      jv *old = jj_arg(c, a, 0, "old"), *new_ = jj_arg(c, a, 1, "new"), *count = jj_arg(c, a, 2, "count");
      jj_args_done(c, a, 3);
      if (!old || !new_) jj_fail(c, "TypeError: do_replace() missing required arguments 'old' and 'new'");
      jv s = jv_strv(jj_to_str(c, v));
      jv args[3] = {jv_strv(jj_to_str(c, *old)), jv_strv(jj_to_str(c, *new_)), count && count->t != JT_NONE ? *count : jv_int(-1)};
      jv meth;
      jj_method_lookup(c, s, jj_str_c(&c->arena, "replace"), &meth);
      jj_args ra = {.pos = args, .n_pos = 3, .fname = "replace"};
      return jj_method_call(c, meth.fn, &ra);
    }
    case F_REVERSE: {
      jj_args_done(c, a, 0);
      if (v.t == JT_STR) return jj_slice(c, v, jv_none(), jv_none(), jv_int(-1));
      if (v.t == JT_LIST || v.t == JT_DICT || v.t == JT_UNDEF) {
        int iter_kind = v.t == JT_LIST && (v.l->kind == JL_GEN || v.l->kind == JL_REVITER);
        jj_list *items = iter_arg(c, v), *l = jj_list_new(c, items->n, JL_LIST);
        for (size_t i = 0; i < items->n; i++) l->v[i] = items->v[items->n - 1 - i];
        l->n = items->n;
        if (iter_kind) return jv_listv(l); /* reversed() refused: list(value) reversed */
        l->kind = JL_REVITER;
        return jv_listv(l);
      }
      jj_fail(c, "FilterArgumentError: argument must be iterable");
    }
    case F_ROUND: return do_round(c, v, a);
    case F_SAFE: {
      jj_args_done(c, a, 0);
      jv s = jv_strv(jj_to_str(c, v));
      s.markup = 1;
      return s;
    }
    case F_SORT: {
      jv *rev = jj_arg(c, a, 0, "reverse"), *cs = jj_arg(c, a, 1, "case_sensitive"), *attr = jj_arg(c, a, 2, "attribute");
      jj_args_done(c, a, 3);
      jj_list *items = iter_arg(c, v);
      /* make_multi_attrgetter: "a,b" sorts by several attributes */
      getter gs[8];
      int ng = 0;
      if (attr && attr->t == JT_STR && memchr(attr->s->p, ',', attr->s->len)) {
        const char *p = attr->s->p;
        size_t n = attr->s->len, st = 0;
        for (size_t i = 0; i <= n && ng < 8; i++)
          if (i == n || p[i] == ',') {
            jv part = jj_strv(&c->arena, p + st, i - st);
            getter_init(c, &gs[ng++], &part);
            st = i + 1;
          }
      } else {
        getter_init(c, &gs[ng++], attr);
      }
      jv *keys = jj_alloc_array(&c->arena, items->n + 1, sizeof(jv));
      for (size_t i = 0; i < items->n; i++) {
        jj_list *k = jj_list_new(c, (size_t)ng, JL_LIST);
        for (int q = 0; q < ng; q++) {
          jv x = getter_get(c, &gs[q], items->v[i], NULL);
          k->v[k->n++] = truthy_arg(cs, 0) ? x : lower(c, x);
        }
        keys[i] = jv_listv(k);
      }
      return jv_listv(sorted(c, items, keys, reverse_arg(c, rev)));
    }
    case F_STRING:
      jj_args_done(c, a, 0);
      return soft_str(c, v);
    case F_STRIPTAGS: {
      jj_args_done(c, a, 0);
      jj_str *s = jj_to_str(c, v);
      /* markupsafe: drop comments and tags, collapse whitespace, unescape the basic entities */
      jj_buf *b = jj_tmpbuf(c);
      for (size_t i = 0; i < s->len;) {
        if (!strncmp(s->p + i, "<!--", 4)) {
          const char *e = strstr(s->p + i + 4, "-->");
          if (e) { i = (size_t)(e - s->p) + 3; continue; }
        }
        if (s->p[i] == '<') {
          const char *e = memchr(s->p + i, '>', s->len - i);
          if (e) { i = (size_t)(e - s->p) + 1; continue; }
        }
        jj_buf_putc(b, s->p[i++]);
      }
      jv t = str_result(c, b);
      jj_list *words = NULL;
      {
        jv meth;
        jj_method_lookup(c, t, jj_str_c(&c->arena, "split"), &meth);
        jj_args sa = {.fname = "split"};
        words = jj_method_call(c, meth.fn, &sa).l;
      }
      jj_buf *o = jj_tmpbuf(c);
      for (size_t i = 0; i < words->n; i++) {
        if (i) jj_buf_putc(o, ' ');
        jj_str *w = words->v[i].s;
        for (size_t k = 0; k < w->len;) {
          static const char *const ent[][2] = {{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&#39;", "'"},
                                               {"&#34;", "\""}, {"&quot;", "\""}, {"&#x27;", "'"}};
          int done = 0;
          for (size_t e = 0; e < sizeof ent / sizeof *ent && !done; e++) {
            size_t l = strlen(ent[e][0]);
            if (k + l <= w->len && !memcmp(w->p + k, ent[e][0], l)) {
              jj_buf_puts(o, ent[e][1]);
              k += l;
              done = 1;
            }
          }
          if (!done) jj_buf_putc(o, w->p[k++]);
        }
      }
      return str_result(c, o);
    }
    case F_SUM: {
      jv *attr = jj_arg(c, a, 0, "attribute"), *start = jj_arg(c, a, 1, "start");
      jj_args_done(c, a, 2);
      getter g;
      getter_init(c, &g, attr);
      jv acc = start ? *start : jv_int(0);
      if (acc.t == JT_STR) jj_fail(c, "TypeError: sum() can't sum strings [use ''.join(seq) instead]");
      jj_list *items = iter_arg(c, v);
      for (size_t i = 0; i < items->n; i++) acc = jj_binop(c, OP_ADD, acc, getter_get(c, &g, items->v[i], NULL));
      return acc;
    }
    case F_TITLE:
      jj_args_done(c, a, 0);
      return do_title(c, v);
    case F_TRIM: {
      jv *chars = jj_arg(c, a, 0, "chars");
      jj_args_done(c, a, 1);
      jv s = soft_str(c, v);
      if (chars && chars->t != JT_NONE && chars->t != JT_STR)
        jj_fail(c, "TypeError: strip arg must be None or str");
      return jj_py_strip(c, s, chars && chars->t == JT_STR ? chars->s : NULL, 1, 1);
    }
    case F_TRUNCATE: {
      jv *lenv = jj_arg(c, a, 0, "length"), *kill = jj_arg(c, a, 1, "killwords"), *end = jj_arg(c, a, 2, "end"),
         *lw = jj_arg(c, a, 3, "leeway");
      jj_args_done(c, a, 4);
      int64_t length = int_arg(c, lenv, 255, "truncate"), leeway = int_arg(c, lw, 5, "truncate");
      jv e = end ? *end : jj_strv(&c->arena, "...", 3);
      if (e.t != JT_STR) jj_fail(c, "TypeError: truncate: end must be a string");
      int64_t elen = (int64_t)jj_str_ncp(e.s);
      if (length < elen) jj_fail(c, "AssertionError: expected length >= %lld, got %lld", (long long)elen, (long long)length);
      if (leeway < 0) jj_fail(c, "AssertionError: expected leeway >= 0, got %lld", (long long)leeway);
      if (v.t != JT_STR) jj_fail(c, "TypeError: object of type '%s' has no len()", jj_type_name(v));
      if ((int64_t)jj_str_ncp(v.s) <= length + leeway) return v;
      jv head = jj_slice(c, v, jv_none(), jv_int(length - elen), jv_none());
      if (!truthy_arg(kill, 0)) {
        const char *sp = NULL;
        for (size_t i = head.s->len; i-- > 0;)
          if (head.s->p[i] == ' ') { sp = head.s->p + i; break; }
        if (sp) head = jj_strv(&c->arena, head.s->p, (size_t)(sp - head.s->p));
      }
      return jj_binop(c, OP_ADD, head, e);
    }
    case F_UNIQUE: {
      jv *cs = jj_arg(c, a, 0, "case_sensitive"), *attr = jj_arg(c, a, 1, "attribute");
      jj_args_done(c, a, 2);
      getter g;
      getter_init(c, &g, attr);
      jj_list *items = iter_arg(c, v), *out = jj_list_new(c, 0, JL_LIST);
      jj_dict *seen = jj_dict_new(c, 0);
      for (size_t i = 0; i < items->n; i++) {
        jv k = getter_get(c, &g, items->v[i], NULL);
        if (!truthy_arg(cs, 0)) k = lower(c, k);
        if (!jj_dict_get(c, seen, k)) {
          jj_dict_set(c, seen, k, jv_none());
          jj_list_push(c, out, items->v[i]);
        }
      }
      return gen(out, "sync_do_unique");
    }
    case F_URLENCODE: {
      jj_args_done(c, a, 0);
      jj_buf *b = jj_tmpbuf(c);
      if (v.t == JT_STR || !jj_is_iterable(v)) {
        url_quote(b, jj_to_str(c, v), 0);
        return str_result(c, b);
      }
      jj_list *items = v.t == JT_DICT ? jj_dict_items(c, v.d).l : iter_arg(c, v);
      for (size_t i = 0; i < items->n; i++) {
        jj_list *kv = jj_iter(c, items->v[i]);
        if (kv->n != 2) jj_fail(c, "ValueError: too many values to unpack (expected 2)");
        if (i) jj_buf_putc(b, '&');
        url_quote(b, jj_to_str(c, kv->v[0]), 1);
        jj_buf_putc(b, '=');
        url_quote(b, jj_to_str(c, kv->v[1]), 1);
      }
      return str_result(c, b);
    }
    case F_WORDCOUNT: {
      jj_args_done(c, a, 0);
      jv s = soft_str(c, v);
      int64_t n = 0;
      int in_word = 0;
      for (size_t i = 0; i < s.s->len;) {
        size_t adv;
        uint32_t cp = jj_u8_dec(s.s->p + i, &adv);
        int w = cp == '_' || jj_py_isalnum(cp);
        if (w && !in_word) n++;
        in_word = w;
        i += adv;
      }
      return jv_int(n);
    }
    case F_XMLATTR: {
      jv *autospace = jj_arg(c, a, 0, "autospace");
      jj_args_done(c, a, 1);
      if (v.t != JT_DICT) jj_fail(c, "AttributeError: '%s' object has no attribute 'items'", jj_type_name(v));
      jj_buf *b = jj_tmpbuf(c);
      int first = 1;
      for (size_t i = 0; i < v.d->n; i++) {
        jv k = v.d->e[i].key, x = v.d->e[i].val;
        if (x.t == JT_NONE || x.t == JT_UNDEF) continue;
        if (k.t != JT_STR) jj_fail(c, "TypeError: xmlattr keys must be strings");
        for (size_t q = 0; q < k.s->len; q++) {
          char ch = k.s->p[q];
          if (ch == '/' || ch == '>' || ch == '=' || jj_py_isspace((unsigned char)ch))
            jj_fail(c, "ValueError: Invalid character in attribute name: '%s'", k.s->p);
        }
        if (!first || truthy_arg(autospace, 1)) jj_buf_putc(b, ' ');
        first = 0;
        jv ek = jj_markup_escape(c, k), ev = jj_markup_escape(c, x);
        jj_buf_put(b, ek.s->p, ek.s->len);
        jj_buf_puts(b, "=\"");
        jj_buf_put(b, ev.s->p, ev.s->len);
        jj_buf_putc(b, '"');
      }
      return str_result(c, b);
    }
    case F_TOJSON: return do_tojson(c, v, a);
    default: jj_fail(c, "internal error: filter %d", id);
  }
}
