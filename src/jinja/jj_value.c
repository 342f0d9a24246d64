/* Values with Python semantics: lists, tuples, ordered dicts, truthiness, ==, ordering, hashing, iteration, len,
 * str() and repr() (floats as Python's shortest round-trip repr). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jj_internal.h"

/* ---------------------------------------------------------------- containers */
jj_list *jj_list_new(jj_ctx *c, size_t cap, int kind) {
  jj_list *l = jj_zalloc(&c->arena, sizeof *l);
  l->kind = (uint8_t)kind;
  if (cap) {
    l->v = jj_alloc_array(&c->arena, cap, sizeof *l->v);
    l->cap = cap;
  }
  return l;
}

void jj_list_push(jj_ctx *c, jj_list *l, jv v) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 4;
    jv *nv = jj_alloc_array(&c->arena, cap, sizeof *nv);
    if (l->n) memcpy(nv, l->v, l->n * sizeof *nv);
    l->v = nv;
    l->cap = cap;
  }
  l->v[l->n++] = v;
}

jj_dict *jj_dict_new(jj_ctx *c, size_t cap) {
  jj_dict *d = jj_zalloc(&c->arena, sizeof *d);
  if (cap) {
    d->e = jj_alloc_array(&c->arena, cap, sizeof *d->e);
    d->cap = cap;
  }
  return d;
}

static uint64_t fnv(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

uint64_t jj_hash(jv v, int *hashable) {
  *hashable = 1;
  switch (v.t) {
    case JT_NONE: return 0x9e3779b97f4a7c15ull;
    case JT_BOOL:
    case JT_INT: return (uint64_t)v.i * 0x9e3779b97f4a7c15ull;
    case JT_FLOAT:
      if (v.f == floor(v.f) && fabs(v.f) < 9.2e18) return (uint64_t)(int64_t)v.f * 0x9e3779b97f4a7c15ull;
      {
        uint64_t b;
        memcpy(&b, &v.f, 8);
        return b * 0x9e3779b97f4a7c15ull;
      }
    case JT_STR: return fnv(v.s->p, v.s->len);
    case JT_BIGINT: return fnv(v.s->p, v.s->len) ^ 0x5bd1e995;
    case JT_LIST:
      if (v.l->kind == JL_TUPLE) {
        uint64_t h = 0x345678;
        for (size_t i = 0; i < v.l->n; i++) {
          uint64_t e = jj_hash(v.l->v[i], hashable);
          if (!*hashable) return 0;
          h = (h ^ e) * 1000003;
        }
        return h;
      }
      if (v.l->kind == JL_LIST || v.l->kind == JL_ITEMS || v.l->kind == JL_KEYS || v.l->kind == JL_VALUES) break;
      return (uint64_t)(uintptr_t)v.l;
    case JT_DICT: break;
    case JT_UNDEF: return 0x1234567;
    default: return (uint64_t)(uintptr_t)v.p;
  }
  *hashable = 0;
  return 0;
}

static void index_rebuild(jj_ctx *c, jj_dict *d) {
  size_t cap = 16;
  while (cap < d->n * 2 + 2) cap *= 2;
  d->index = jj_alloc_array(&c->arena, cap, sizeof *d->index);
  memset(d->index, 0, cap * sizeof *d->index);
  d->index_cap = cap;
  for (size_t i = 0; i < d->n; i++) {
    int h;
    size_t s = jj_hash(d->e[i].key, &h) & (cap - 1);
    while (d->index[s]) s = (s + 1) & (cap - 1);
    d->index[s] = (uint32_t)(i + 1);
  }
}

static void need_hashable(jj_ctx *c, jv key) {
  int h;
  jj_hash(key, &h);
  if (!h) jj_fail(c, "TypeError: unhashable type: '%s'", jj_type_name(key));
}

jv *jj_dict_get(jj_ctx *c, const jj_dict *d, jv key) {
  need_hashable(c, key);
  if (d->index) {
    int h;
    size_t s = jj_hash(key, &h) & (d->index_cap - 1);
    while (d->index[s]) {
      jj_entry *e = &d->e[d->index[s] - 1];
      if (jj_eq(c, e->key, key)) return &e->val;
      s = (s + 1) & (d->index_cap - 1);
    }
    return NULL;
  }
  for (size_t i = 0; i < d->n; i++)
    if (jj_eq(c, d->e[i].key, key)) return &d->e[i].val;
  return NULL;
}

jv *jj_dict_gets(const jj_dict *d, const char *key) {
  size_t l = strlen(key);
  for (size_t i = 0; i < d->n; i++)
    if (d->e[i].key.t == JT_STR && d->e[i].key.s->len == l && !memcmp(d->e[i].key.s->p, key, l)) return &d->e[i].val;
  return NULL;
}

void jj_dict_set(jj_ctx *c, jj_dict *d, jv key, jv val) {
  jv *old = jj_dict_get(c, d, key);
  if (old) { *old = val; return; }
  if (d->n == d->cap) {
    size_t cap = d->cap ? d->cap * 2 : 4;
    jj_entry *ne = jj_alloc_array(&c->arena, cap, sizeof *ne);
    if (d->n) memcpy(ne, d->e, d->n * sizeof *ne);
    d->e = ne;
    d->cap = cap;
  }
  d->e[d->n].key = key;
  d->e[d->n].val = val;
  d->n++;
  if (d->n >= 8 && (!d->index || d->n * 2 + 2 > d->index_cap)) {
    index_rebuild(c, d);
  } else if (d->index) {
    int h;
    size_t s = jj_hash(key, &h) & (d->index_cap - 1);
    while (d->index[s]) s = (s + 1) & (d->index_cap - 1);
    d->index[s] = (uint32_t)d->n;
  }
}

/* ---------------------------------------------------------------- undefined */
jv jj_undef_new(jj_ctx *c, const char *hint, jv obj, jv name) {
  jj_undef *u = jj_zalloc(&c->arena, sizeof *u);
  u->hint = hint;
  if (obj.t == JT_NONE) u->obj_type = "None";
  else {
    static const char *const names[] = {"Undefined object", "None", "bool object", "int object", "float object",
                                        "str object", "list object", "dict object", "Namespace object",
                                        "function object", "LoopContext object", "object", "int object"};
    u->obj_type = obj.t == JT_STR && obj.markup ? "markupsafe.Markup object" : names[obj.t];
    if (obj.t == JT_LIST) {
      static const char *const ln[] = {"list object", "tuple object", "range object", "generator object",
                                       "list_reverseiterator object", "dict_items object", "dict_keys object",
                                       "dict_values object"};
      u->obj_type = ln[obj.l->kind];
    }
  }
  u->name = name;
  jv v = jv_undef();
  v.u = u;
  return v;
}

jv jj_undef_hint(jj_ctx *c, const char *fmt, ...) {
  char tmp[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  jj_undef *u = jj_zalloc(&c->arena, sizeof *u);
  u->hint = jj_strndup(&c->arena, tmp, strlen(tmp));
  jv v = jv_undef();
  v.u = u;
  return v;
}

jv jj_undef_name(jj_ctx *c, const char *name) {
  jj_undef *u = jj_zalloc(&c->arena, sizeof *u);
  u->name = jj_cstrv(&c->arena, name);
  jv v = jv_undef();
  v.u = u;
  return v;
}

/* ---------------------------------------------------------------- type names, truth */
const char *jj_type_name(jv v) {
  switch (v.t) {
    case JT_UNDEF: return "Undefined";
    case JT_NONE: return "NoneType";
    case JT_BOOL: return "bool";
    case JT_INT: return "int";
    case JT_FLOAT: return "float";
    case JT_STR: return v.markup ? "Markup" : "str";
    case JT_LIST: {
      static const char *const ln[] = {"list", "tuple", "range", "generator", "list_reverseiterator",
                                       "dict_items", "dict_keys", "dict_values"};
      return ln[v.l->kind];
    }
    case JT_DICT: return "dict";
    case JT_NS: return "Namespace";
    case JT_FUNC:
      return v.fn->kind == JF_MACRO ? "Macro" : v.fn->kind == JF_METHOD ? "builtin_function_or_method" : "function";
    case JT_LOOP: return "LoopContext";
    case JT_BIGINT: return "int";
    default: return v.o->kind == JO_CYCLER ? "Cycler" : "Joiner";
  }
}

int jj_truthy(jv v) {
  switch (v.t) {
    case JT_UNDEF: case JT_NONE: return 0;
    case JT_BOOL: case JT_INT: return v.i != 0;
    case JT_FLOAT: return v.f != 0;
    case JT_STR: return v.s->len != 0;
    case JT_LIST:
      if (v.l->kind == JL_GEN || v.l->kind == JL_REVITER) return 1; /* iterators are always true */
      return v.l->n != 0;
    case JT_DICT: return v.d->n != 0;
    default: return 1;
  }
}

int jj_is_number(jv v) { return v.t == JT_INT || v.t == JT_FLOAT || v.t == JT_BOOL; }
double jj_num(jv v) { return v.t == JT_FLOAT ? v.f : (double)v.i; }

/* ---------------------------------------------------------------- equality and order */
static int seq_class(const jj_list *l) {
  return l->kind == JL_LIST ? 0 : l->kind == JL_TUPLE ? 1 : l->kind == JL_RANGE ? 2 : 3;
}

static void enter(jj_ctx *c) {
  if (++c->depth > c->depth_limit) jj_fail_limit(c, "RecursionError: maximum recursion depth exceeded");
}
static void leave(jj_ctx *c) { c->depth--; }

int jj_eq(jj_ctx *c, jv a, jv b) {
  if (jj_is_number(a) && jj_is_number(b)) {
    if (a.t != JT_FLOAT && b.t != JT_FLOAT) return a.i == b.i;
    if (a.t == JT_FLOAT && b.t == JT_FLOAT) return a.f == b.f;
    /* int vs float: exact, as Python */
    double f = a.t == JT_FLOAT ? a.f : b.f;
    int64_t i = a.t == JT_FLOAT ? b.i : a.i;
    if (f != f || f != floor(f) || fabs(f) >= 9.3e18) return 0;
    return (int64_t)f == i && (double)i == f;
  }
  if (a.t != b.t) return 0;
  switch (a.t) {
    case JT_UNDEF: case JT_NONE: return 1;
    case JT_STR: case JT_BIGINT: return a.s->len == b.s->len && !memcmp(a.s->p, b.s->p, a.s->len);
    case JT_LIST: {
      if (a.l == b.l) return 1;
      int ka = seq_class(a.l), kb = seq_class(b.l);
      if (ka != kb || ka == 3) return 0;
      if (a.l->n != b.l->n) return 0;
      enter(c);
      for (size_t i = 0; i < a.l->n; i++)
        if (!jj_eq(c, a.l->v[i], b.l->v[i])) { leave(c); return 0; }
      leave(c);
      return 1;
    }
    case JT_DICT: {
      if (a.d == b.d) return 1;
      if (a.d->n != b.d->n) return 0;
      enter(c);
      for (size_t i = 0; i < a.d->n; i++) {
        jv *o = jj_dict_get(c, b.d, a.d->e[i].key);
        if (!o || !jj_eq(c, a.d->e[i].val, *o)) { leave(c); return 0; }
      }
      leave(c);
      return 1;
    }
    default: return a.p == b.p;
  }
}

static const char *cmp_type_name(jv v) { return jj_type_name(v); }

int jj_cmp(jj_ctx *c, jv a, jv b, const char *op) {
  if (a.t == JT_UNDEF) jj_fail_undefined(c, a);
  if (b.t == JT_UNDEF) jj_fail_undefined(c, b);
  if ((a.t == JT_BIGINT || jj_is_number(a)) && (b.t == JT_BIGINT || jj_is_number(b)) &&
      (a.t == JT_BIGINT || b.t == JT_BIGINT)) { /* beyond 64 bits: by value as doubles, which order them */
    double x = a.t == JT_BIGINT ? strtod(a.s->p, NULL) : jj_num(a), y = b.t == JT_BIGINT ? strtod(b.s->p, NULL) : jj_num(b);
    return x < y ? -1 : x > y;
  }
  if (jj_is_number(a) && jj_is_number(b)) {
    if (a.t != JT_FLOAT && b.t != JT_FLOAT) return a.i < b.i ? -1 : a.i > b.i;
    double x = jj_num(a), y = jj_num(b);
    if (x != x || y != y) return 2; /* unordered: every comparison false */
    return x < y ? -1 : x > y;
  }
  if (a.t == JT_STR && b.t == JT_STR) {
    size_t n = a.s->len < b.s->len ? a.s->len : b.s->len;
    jj_charge(c, n / 16);
    int r = memcmp(a.s->p, b.s->p, n);
    if (r) return r < 0 ? -1 : 1;
    return a.s->len < b.s->len ? -1 : a.s->len > b.s->len;
  }
  if (a.t == JT_LIST && b.t == JT_LIST && seq_class(a.l) == seq_class(b.l) && seq_class(a.l) < 2) {
    enter(c);
    for (size_t i = 0; i < a.l->n && i < b.l->n; i++) {
      if (jj_eq(c, a.l->v[i], b.l->v[i])) continue;
      int r = jj_cmp(c, a.l->v[i], b.l->v[i], op);
      leave(c);
      return r;
    }
    leave(c);
    return a.l->n < b.l->n ? -1 : a.l->n > b.l->n;
  }
  jj_fail(c, "TypeError: '%s' not supported between instances of '%s' and '%s'", op, cmp_type_name(a),
          cmp_type_name(b));
}

/* ---------------------------------------------------------------- iteration, len */
int jj_is_iterable(jv v) {
  return v.t == JT_STR || v.t == JT_LIST || v.t == JT_DICT || v.t == JT_UNDEF || v.t == JT_LOOP;
}

jj_list *jj_iter(jj_ctx *c, jv v) {
  switch (v.t) {
    case JT_UNDEF: return jj_list_new(c, 0, JL_LIST);
    case JT_LIST:
      if (v.l->kind == JL_GEN || v.l->kind == JL_REVITER) {
        if (v.l->deferred_error) jj_fail(c, "%s", v.l->deferred_error);
        if (v.l->consumed) return jj_list_new(c, 0, JL_LIST);
        v.l->consumed = 1;
      }
      return v.l;
    case JT_DICT: {
      jj_list *l = jj_list_new(c, v.d->n, JL_LIST);
      for (size_t i = 0; i < v.d->n; i++) l->v[i] = v.d->e[i].key;
      l->n = v.d->n;
      return l;
    }
    case JT_STR: {
      size_t n = jj_str_ncp(v.s);
      jj_list *l = jj_list_new(c, n, JL_LIST);
      jj_charge(c, n);
      for (size_t i = 0; i < v.s->len;) {
        size_t k = jj_u8_len((unsigned char)v.s->p[i]);
        jv ch = jj_strv(&c->arena, v.s->p + i, k);
        ch.s->ncp = 1;
        ch.markup = v.markup;
        l->v[l->n++] = ch;
        i += k;
      }
      return l;
    }
    default:
      jj_fail(c, "TypeError: '%s' object is not iterable", jj_type_name(v));
  }
}

int64_t jj_len(jj_ctx *c, jv v) {
  switch (v.t) {
    case JT_UNDEF: return 0;
    case JT_STR: return (int64_t)jj_str_ncp(v.s);
    case JT_LIST:
      if (v.l->kind == JL_GEN || v.l->kind == JL_REVITER) break;
      return (int64_t)v.l->n;
    case JT_DICT: return (int64_t)v.d->n;
    case JT_LOOP: return (int64_t)v.loop->items->n;
    default: break;
  }
  jj_fail(c, "TypeError: object of type '%s' has no len()", jj_type_name(v));
}

/* ---------------------------------------------------------------- str() and repr() */
void jj_write_float(jj_buf *b, double f) {
  if (f != f) { jj_buf_puts(b, "nan"); return; }
  if (isinf(f)) { jj_buf_puts(b, f < 0 ? "-inf" : "inf"); return; }
  if (f == 0) { jj_buf_puts(b, signbit(f) ? "-0.0" : "0.0"); return; }
  /* the shortest digits that read back to f */
  char tmp[40];
  int prec;
  for (prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
    if (strtod(tmp, NULL) == f) break;
  }
  /* tmp = [-]d.ddde[+-]XX */
  char digits[24];
  int nd = 0, neg = tmp[0] == '-';
  const char *q = tmp + neg;
  for (; *q && *q != 'e'; q++)
    if (*q >= '0' && *q <= '9') digits[nd++] = *q;
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  int exp10 = atoi(q + 1);
  int decpt = exp10 + 1; /* value = 0.DIGITS x 10^decpt */
  if (neg) jj_buf_putc(b, '-');
  if (decpt > -4 && decpt <= 16) { /* Python repr: fixed notation */
    if (decpt <= 0) {
      jj_buf_puts(b, "0.");
      for (int i = 0; i < -decpt; i++) jj_buf_putc(b, '0');
      jj_buf_put(b, digits, (size_t)nd);
    } else if (decpt >= nd) {
      jj_buf_put(b, digits, (size_t)nd);
      for (int i = nd; i < decpt; i++) jj_buf_putc(b, '0');
      jj_buf_puts(b, ".0");
    } else {
      jj_buf_put(b, digits, (size_t)decpt);
      jj_buf_putc(b, '.');
      jj_buf_put(b, digits + decpt, (size_t)(nd - decpt));
    }
  } else {
    jj_buf_putc(b, digits[0]);
    if (nd > 1) {
      jj_buf_putc(b, '.');
      jj_buf_put(b, digits + 1, (size_t)(nd - 1));
    }
    jj_buf_printf(b, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
  }
}

static void repr_str(jj_buf *b, const char *s, size_t n) {
  int has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
  char q = has_sq && !has_dq ? '"' : '\'';
  jj_buf_putc(b, q);
  for (size_t i = 0; i < n;) {
    unsigned char ch = (unsigned char)s[i];
    if (ch < 0x80) {
      i++;
      if (ch == (unsigned char)q || ch == '\\') { jj_buf_putc(b, '\\'); jj_buf_putc(b, (char)ch); }
      else if (ch == '\t') jj_buf_puts(b, "\\t");
      else if (ch == '\n') jj_buf_puts(b, "\\n");
      else if (ch == '\r') jj_buf_puts(b, "\\r");
      else if (ch < 0x20 || ch == 0x7F) jj_buf_printf(b, "\\x%02x", ch);
      else jj_buf_putc(b, (char)ch);
      continue;
    }
    size_t adv;
    uint32_t cp = jj_u8_dec(s + i, &adv);
    if (jj_py_isprintable(cp)) jj_buf_put(b, s + i, adv);
    else if (cp <= 0xFF) jj_buf_printf(b, "\\x%02x", cp);
    else if (cp <= 0xFFFF) jj_buf_printf(b, "\\u%04x", cp);
    else jj_buf_printf(b, "\\U%08x", cp);
    i += adv;
  }
  jj_buf_putc(b, q);
}

static void write_any(jj_ctx *c, jj_buf *b, jv v, int repr);

static void write_items(jj_ctx *c, jj_buf *b, const jj_list *l, const char *open, const char *close) {
  jj_buf_puts(b, open);
  for (size_t i = 0; i < l->n; i++) {
    if (i) jj_buf_puts(b, ", ");
    write_any(c, b, l->v[i], 1);
  }
  jj_buf_puts(b, close);
}

static void write_dict(jj_ctx *c, jj_buf *b, const jj_dict *d) {
  jj_buf_putc(b, '{');
  for (size_t i = 0; i < d->n; i++) {
    if (i) jj_buf_puts(b, ", ");
    write_any(c, b, d->e[i].key, 1);
    jj_buf_puts(b, ": ");
    write_any(c, b, d->e[i].val, 1);
  }
  jj_buf_putc(b, '}');
}

static void write_any(jj_ctx *c, jj_buf *b, jv v, int repr) {
  jj_charge(c, 1);
  switch (v.t) {
    case JT_UNDEF: if (repr) jj_buf_puts(b, "Undefined"); return;
    case JT_NONE: jj_buf_puts(b, "None"); return;
    case JT_BOOL: jj_buf_puts(b, v.i ? "True" : "False"); return;
    case JT_INT: jj_buf_printf(b, "%lld", (long long)v.i); return;
    case JT_FLOAT: jj_write_float(b, v.f); return;
    case JT_BIGINT: jj_buf_put(b, v.s->p, v.s->len); return;
    case JT_STR:
      if (!repr) { jj_buf_put(b, v.s->p, v.s->len); return; }
      if (v.markup) jj_buf_puts(b, "Markup(");
      repr_str(b, v.s->p, v.s->len);
      if (v.markup) jj_buf_putc(b, ')');
      return;
    default: break;
  }
  enter(c);
  switch (v.t) {
    case JT_LIST: {
      jj_list *l = v.l;
      switch (l->kind) {
        case JL_LIST: write_items(c, b, l, "[", "]"); break;
        case JL_TUPLE: write_items(c, b, l, "(", l->n == 1 ? ",)" : ")"); break;
        case JL_RANGE:
          if (l->r_step == 1) jj_buf_printf(b, "range(%lld, %lld)", (long long)l->r_start, (long long)l->r_stop);
          else jj_buf_printf(b, "range(%lld, %lld, %lld)", (long long)l->r_start, (long long)l->r_stop, (long long)l->r_step);
          break;
        case JL_GEN: jj_buf_printf(b, "<generator object %s at 0x%llx>", l->gen_name ? l->gen_name : "<genexpr>",
                                   (unsigned long long)(uintptr_t)l); break;
        case JL_REVITER: jj_buf_printf(b, "<list_reverseiterator object at 0x%llx>", (unsigned long long)(uintptr_t)l); break;
        case JL_ITEMS: write_items(c, b, l, "dict_items([", "])"); break;
        case JL_KEYS: write_items(c, b, l, "dict_keys([", "])"); break;
        default: write_items(c, b, l, "dict_values([", "])"); break;
      }
      break;
    }
    case JT_DICT: write_dict(c, b, v.d); break;
    case JT_NS:
      jj_buf_puts(b, "<Namespace ");
      write_dict(c, b, v.d);
      jj_buf_putc(b, '>');
      break;
    case JT_FUNC:
      if (v.fn->kind == JF_MACRO && v.fn->node->kind == N_CALLBLOCK) jj_buf_puts(b, "<Macro anonymous>");
      else if (v.fn->kind == JF_MACRO) jj_buf_printf(b, "<Macro '%s'>", v.fn->name);
      else if (v.fn->kind == JF_METHOD && v.fn->self.t == JT_STR && !strcmp(v.fn->name, "format"))
        jj_buf_printf(b, "<function str.format at 0x%llx>", (unsigned long long)(uintptr_t)v.fn); /* the sandbox's */
      else if (v.fn->kind == JF_METHOD)
        jj_buf_printf(b, "<built-in method %s of %s object at 0x%llx>", v.fn->name, jj_type_name(v.fn->self),
                      (unsigned long long)(uintptr_t)v.fn);
      else if (!strcmp(v.fn->name, "dict")) jj_buf_puts(b, "<class 'dict'>");
      else if (!strcmp(v.fn->name, "namespace")) jj_buf_puts(b, "<class 'jinja2.utils.Namespace'>");
      else if (!strcmp(v.fn->name, "cycler")) jj_buf_puts(b, "<class 'jinja2.utils.Cycler'>");
      else if (!strcmp(v.fn->name, "joiner")) jj_buf_puts(b, "<class 'jinja2.utils.Joiner'>");
      else jj_buf_printf(b, "<function %s at 0x%llx>", !strcmp(v.fn->name, "range") ? "safe_range" : v.fn->name,
                         (unsigned long long)(uintptr_t)v.fn);
      break;
    case JT_LOOP:
      jj_buf_printf(b, "<LoopContext %zu/%zu>", v.loop->index0 + 1, v.loop->items->n);
      break;
    default:
      jj_buf_printf(b, "<jinja2.utils.%s object at 0x%llx>", v.o->kind == JO_CYCLER ? "Cycler" : "Joiner",
                    (unsigned long long)(uintptr_t)v.o);
      break;
  }
  leave(c);
}

void jj_write_str(jj_ctx *c, jj_buf *b, jv v) { write_any(c, b, v, 0); }
void jj_write_repr(jj_ctx *c, jj_buf *b, jv v) { write_any(c, b, v, 1); }

jj_str *jj_to_str(jj_ctx *c, jv v) {
  if (v.t == JT_STR) return v.s;
  if (v.t == JT_UNDEF) return jj_str_new(&c->arena, "", 0);
  jj_buf *b = jj_tmpbuf(c);
  write_any(c, b, v, 0);
  return jj_buf_pop(c, b);
}

jv jj_markup_escape(jj_ctx *c, jv v) {
  if (v.t == JT_STR && v.markup) return v;
  jj_str *s = jj_to_str(c, v);
  jj_buf *b = jj_tmpbuf(c);
  for (size_t i = 0; i < s->len; i++) {
    char ch = s->p[i];
    switch (ch) {
      case '&': jj_buf_puts(b, "&amp;"); break;
      case '<': jj_buf_puts(b, "&lt;"); break;
      case '>': jj_buf_puts(b, "&gt;"); break;
      case '\'': jj_buf_puts(b, "&#39;"); break;
      case '"': jj_buf_puts(b, "&#34;"); break;
      default: jj_buf_putc(b, ch);
    }
  }
  jv r = jv_strv(jj_buf_pop(c, b));
  r.markup = 1;
  return r;
}
