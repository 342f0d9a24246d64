/* Methods templates call on values: Python's str methods (code-point indices, Python's whitespace), dict.get /
 * items / keys / values, list.index / count, loop.cycle / loop.changed and cycler.next / reset. The sandbox's
 * refusal of mutating methods (list.append, dict.update, ...) is an undefined that raises SecurityError when used,
 * as jinja2's ImmutableSandboxedEnvironment does. */
#include <string.h>

#include "jinja/jj_internal.h"

enum {
  /* str */
  M_CAPITALIZE, M_CASEFOLD, M_CENTER, M_COUNT, M_ENDSWITH, M_EXPANDTABS, M_FIND, M_FORMAT, M_INDEX, M_ISALNUM,
  M_ISALPHA, M_ISASCII, M_ISDECIMAL, M_ISDIGIT, M_ISIDENTIFIER, M_ISLOWER, M_ISNUMERIC, M_ISPRINTABLE, M_ISSPACE,
  M_ISTITLE, M_ISUPPER, M_JOIN, M_LJUST, M_LOWER, M_LSTRIP, M_PARTITION, M_REMOVEPREFIX, M_REMOVESUFFIX, M_REPLACE,
  M_RFIND, M_RINDEX, M_RJUST, M_RPARTITION, M_RSPLIT, M_RSTRIP, M_SPLIT, M_SPLITLINES, M_STARTSWITH, M_STRIP,
  M_SWAPCASE, M_TITLE, M_UPPER, M_ZFILL,
  /* dict */
  M_GET, M_ITEMS, M_KEYS, M_VALUES, M_COPY,
  /* list, tuple: M_INDEX, M_COUNT, M_COPY */
  /* int / float */
  M_IS_INTEGER, M_BIT_LENGTH, M_CONJUGATE
};

static const char *const STR_METHODS[] = {
    "capitalize", "casefold", "center", "count", "endswith", "expandtabs", "find", "format", "index", "isalnum",
    "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier", "islower", "isnumeric", "isprintable", "isspace",
    "istitle", "isupper", "join", "ljust", "lower", "lstrip", "partition", "removeprefix", "removesuffix", "replace",
    "rfind", "rindex", "rjust", "rpartition", "rsplit", "rstrip", "split", "splitlines", "startswith", "strip",
    "swapcase", "title", "upper", "zfill"};

static const char *const DICT_UNSAFE[] = {"clear", "pop", "popitem", "setdefault", "update"};
static const char *const LIST_UNSAFE[] = {"append", "clear", "pop", "reverse", "insert", "sort", "extend", "remove"};

static jv bound(jj_ctx *c, jv self, int id, const char *name) {
  jj_func *f = jj_zalloc(&c->arena, sizeof *f);
  f->kind = JF_METHOD;
  f->id = id;
  f->self = self;
  f->name = name;
  jv r = {.t = JT_FUNC};
  r.fn = f;
  return r;
}

static int find_name(const char *const *names, size_t n, const char *s) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(names[i], s)) return (int)i;
  return -1;
}

int jj_method_lookup(jj_ctx *c, jv self, jj_str *name, jv *out) {
  const char *s = name->p;
  int i;
  switch (self.t) {
    case JT_STR:
      if ((i = find_name(STR_METHODS, sizeof STR_METHODS / sizeof *STR_METHODS, s)) >= 0) {
        *out = bound(c, self, i, STR_METHODS[i]);
        return 1;
      }
      return 0;
    case JT_DICT:
      if (!strcmp(s, "get")) { *out = bound(c, self, M_GET, "get"); return 1; }
      if (!strcmp(s, "items")) { *out = bound(c, self, M_ITEMS, "items"); return 1; }
      if (!strcmp(s, "keys")) { *out = bound(c, self, M_KEYS, "keys"); return 1; }
      if (!strcmp(s, "values")) { *out = bound(c, self, M_VALUES, "values"); return 1; }
      if (!strcmp(s, "copy")) { *out = bound(c, self, M_COPY, "copy"); return 1; }
      if (find_name(DICT_UNSAFE, sizeof DICT_UNSAFE / sizeof *DICT_UNSAFE, s) >= 0) {
        *out = jj_undef_hint(c, "access to attribute '%s' of 'dict' object is unsafe.", s);
        out->u->security = 1;
        return 1;
      }
      return 0;
    case JT_LIST: {
      int kind = self.l->kind;
      if (kind == JL_LIST || kind == JL_TUPLE || kind == JL_RANGE) {
        if (!strcmp(s, "index")) { *out = bound(c, self, M_INDEX, "index"); return 1; }
        if (!strcmp(s, "count")) { *out = bound(c, self, M_COUNT, "count"); return 1; }
      }
      if (kind == JL_LIST) {
        if (!strcmp(s, "copy")) { *out = bound(c, self, M_COPY, "copy"); return 1; }
        if (find_name(LIST_UNSAFE, sizeof LIST_UNSAFE / sizeof *LIST_UNSAFE, s) >= 0) {
          *out = jj_undef_hint(c, "access to attribute '%s' of 'list' object is unsafe.", s);
          out->u->security = 1;
          return 1;
        }
      }
      return 0;
    }
    case JT_FLOAT:
      if (!strcmp(s, "is_integer")) { *out = bound(c, self, M_IS_INTEGER, "is_integer"); return 1; }
      if (!strcmp(s, "real")) { *out = self; return 1; }
      if (!strcmp(s, "imag")) { *out = jv_float(0); return 1; }
      if (!strcmp(s, "conjugate")) { *out = bound(c, self, M_CONJUGATE, "conjugate"); return 1; }
      return 0;
    case JT_INT:
    case JT_BOOL:
      if (!strcmp(s, "bit_length")) { *out = bound(c, self, M_BIT_LENGTH, "bit_length"); return 1; }
      if (!strcmp(s, "conjugate")) { *out = bound(c, self, M_CONJUGATE, "conjugate"); return 1; }
      if (!strcmp(s, "real") || !strcmp(s, "numerator")) { *out = jv_int(self.i); return 1; }
      if (!strcmp(s, "imag")) { *out = jv_int(0); return 1; }
      if (!strcmp(s, "denominator")) { *out = jv_int(1); return 1; }
      return 0;
    default: return 0;
  }
}

/* ---------------------------------------------------------------- helpers */
static jv retstr(jj_ctx *c, jv self, jj_buf *b) {
  jv r = jv_strv(jj_buf_pop(c, b));
  r.markup = self.markup;
  return r;
}

static jj_str *str_arg(jj_ctx *c, jv *v, const char *fn, int allow_none) {
  if (!v || (allow_none && v->t == JT_NONE)) return NULL;
  if (v->t == JT_UNDEF) jj_fail_undefined(c, *v);
  if (v->t != JT_STR) jj_fail(c, "TypeError: %s arg must be None or str, not %s", fn, jj_type_name(*v));
  return v->s;
}

static int64_t int_arg(jj_ctx *c, jv *v, int64_t dflt, const char *what) {
  if (!v || v->t == JT_NONE) return dflt;
  if (v->t == JT_UNDEF) jj_fail_undefined(c, *v);
  if (v->t != JT_INT && v->t != JT_BOOL)
    jj_fail(c, "TypeError: '%s' object cannot be interpreted as an integer (%s)", jj_type_name(*v), what);
  return v->i;
}

/* Byte offsets of code point indices [start, end) after Python's slice clamping. */
static void cp_range(jj_ctx *c, jj_str *s, jv *start, jv *end, size_t *bs, size_t *be, int64_t *cs) {
  int64_t n = (int64_t)jj_str_ncp(s);
  int64_t a = int_arg(c, start, 0, "start"), b = int_arg(c, end, n, "end");
  if (a < 0) { a += n; if (a < 0) a = 0; }
  if (b < 0) { b += n; if (b < 0) b = 0; }
  if (a > n) a = n;
  if (b > n) b = n;
  *cs = a;
  *bs = jj_u8_offset(s, (size_t)a);
  *be = b < a ? *bs : jj_u8_offset(s, (size_t)b);
}

static size_t cp_count(const char *s, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
  return k;
}

/* Does the character at s[i] belong to chars (NULL: Python whitespace)? Returns its length or 0. */
static size_t in_set(const char *s, size_t n, size_t i, const jj_str *chars) {
  size_t adv;
  if (i >= n) return 0;
  uint32_t cp = jj_u8_dec(s + i, &adv);
  if (!chars) return jj_py_isspace(cp) ? adv : 0;
  for (size_t k = 0; k < chars->len;) {
    size_t a2;
    uint32_t q = jj_u8_dec(chars->p + k, &a2);
    if (q == cp) return adv;
    k += a2;
  }
  return 0;
}

static size_t prev_char(const char *s, size_t i) {
  size_t k = i - 1;
  while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
  return k;
}

jv jj_py_strip(jj_ctx *c, jv self, const jj_str *chars, int left, int right) {
  const char *s = self.s->p;
  size_t a = 0, b = self.s->len, l;
  jj_charge(c, b / 16);
  if (left)
    while (a < b && (l = in_set(s, b, a, chars))) a += l;
  if (right)
    while (b > a) {
      size_t k = prev_char(s, b);
      if (in_set(s, b, k, chars) != b - k) break;
      b = k;
    }
  if (a == 0 && b == self.s->len) return self;
  jv r = jj_strv(&c->arena, s + a, b - a);
  r.markup = self.markup;
  return r;
}

static jv mklist(jj_ctx *c, int kind) { return jv_listv(jj_list_new(c, 0, kind)); }

static jv sub(jj_ctx *c, jv self, size_t a, size_t b) {
  jv r = jj_strv(&c->arena, self.s->p + a, b - a);
  r.markup = self.markup;
  return r;
}

/* str.split / rsplit. */
static jv split(jj_ctx *c, jv self, jj_str *sep, int64_t maxsplit, int from_right) {
  const char *s = self.s->p;
  size_t n = self.s->len;
  jv out = mklist(c, JL_LIST);
  jj_list *l = out.l;
  jj_charge(c, n / 8);
  if (sep && !sep->len) jj_fail(c, "ValueError: empty separator");
  if (maxsplit < 0) maxsplit = INT64_MAX;
  if (!from_right) {
    if (!sep) {
      size_t i = 0, w;
      for (;;) {
        while (i < n && (w = in_set(s, n, i, NULL))) i += w;
        if (i >= n) break;
        if (maxsplit == 0) { /* the rest as it is, trailing whitespace included */
          jj_list_push(c, l, sub(c, self, i, n));
          break;
        }
        size_t j = i;
        while (j < n && !in_set(s, n, j, NULL)) j += jj_u8_len((unsigned char)s[j]);
        jj_list_push(c, l, sub(c, self, i, j));
        maxsplit--;
        i = j;
      }
      return out;
    }
    size_t i = 0;
    while (maxsplit > 0) {
      const char *h = memmem(s + i, n - i, sep->p, sep->len);
      if (!h) break;
      size_t j = (size_t)(h - s);
      jj_list_push(c, l, sub(c, self, i, j));
      i = j + sep->len;
      maxsplit--;
    }
    jj_list_push(c, l, sub(c, self, i, n));
    return out;
  }
  /* from the right: collect reversed, then reverse */
  if (!sep) {
    size_t e = n, w;
    for (;;) {
      while (e > 0) {
        size_t k = prev_char(s, e);
        if ((w = in_set(s, e, k, NULL)) != e - k) break;
        e = k;
      }
      if (e == 0) break;
      if (maxsplit == 0) { /* the rest as it is, leading whitespace included */
        jj_list_push(c, l, sub(c, self, 0, e));
        break;
      }
      size_t b = e;
      while (b > 0) {
        size_t k = prev_char(s, b);
        if (in_set(s, b, k, NULL) == b - k) break;
        b = k;
      }
      jj_list_push(c, l, sub(c, self, b, e));
      maxsplit--;
      e = b;
    }
  } else {
    size_t e = n;
    while (maxsplit > 0 && e >= sep->len) {
      size_t found = SIZE_MAX;
      for (size_t k = e - sep->len + 1; k-- > 0;)
        if (!memcmp(s + k, sep->p, sep->len)) { found = k; break; }
      if (found == SIZE_MAX) break;
      jj_list_push(c, l, sub(c, self, found + sep->len, e));
      e = found;
      maxsplit--;
    }
    jj_list_push(c, l, sub(c, self, 0, e));
  }
  for (size_t i = 0, j = l->n ? l->n - 1 : 0; i < j; i++, j--) {
    jv t = l->v[i];
    l->v[i] = l->v[j];
    l->v[j] = t;
  }
  return out;
}

/* Python's line boundaries: the length of the one at s[i], 0 when none. */
static size_t line_break(const char *s, size_t n, size_t i) {
  unsigned char u = (unsigned char)s[i];
  if (u == '\r') return i + 1 < n && s[i + 1] == '\n' ? 2 : 1;
  if (u == '\n' || u == 0x0B || u == 0x0C || u == 0x1C || u == 0x1D || u == 0x1E) return 1;
  if (u >= 0x80) {
    size_t adv;
    uint32_t cp = jj_u8_dec(s + i, &adv);
    if (cp == 0x85 || cp == 0x2028 || cp == 0x2029) return adv;
  }
  return 0;
}

jv jj_py_splitlines(jj_ctx *c, jv self, int keepends) {
  const char *s = self.s->p;
  size_t n = self.s->len, i = 0, start = 0;
  jv out = mklist(c, JL_LIST);
  jj_charge(c, n / 8);
  while (i < n) {
    size_t lb = line_break(s, n, i);
    if (!lb) { i += jj_u8_len((unsigned char)s[i]); continue; }
    jj_list_push(c, out.l, sub(c, self, start, keepends ? i + lb : i));
    i += lb;
    start = i;
  }
  if (start < n) jj_list_push(c, out.l, sub(c, self, start, n));
  return out;
}

static int affix(jj_ctx *c, jv self, jv *what, jv *start, jv *end, int suffix, const char *fn) {
  if (!what) jj_fail(c, "TypeError: %s() takes at least 1 argument (0 given)", fn);
  size_t bs, be;
  int64_t cs;
  cp_range(c, self.s, start, end, &bs, &be, &cs);
  const char *s = self.s->p + bs;
  size_t n = be - bs;
  jv *opts = what;
  size_t n_opts = 1;
  if (what->t == JT_LIST && what->l->kind == JL_TUPLE) {
    opts = what->l->v;
    n_opts = what->l->n;
  }
  for (size_t i = 0; i < n_opts; i++) {
    if (opts[i].t != JT_STR)
      jj_fail(c, "TypeError: %s first arg must be str or a tuple of str, not %s", fn, jj_type_name(opts[i]));
    const jj_str *p = opts[i].s;
    if (p->len > n) continue;
    if (!memcmp(suffix ? s + n - p->len : s, p->p, p->len)) return 1;
  }
  return 0;
}

static int64_t find(jj_ctx *c, jv self, jj_args *a, int reverse, const char *fn) {
  jj_str *needle = str_arg(c, jj_arg(c, a, 0, NULL), fn, 0);
  if (!needle) jj_fail(c, "TypeError: %s() takes at least 1 argument (0 given)", fn);
  size_t bs, be;
  int64_t cs;
  cp_range(c, self.s, jj_arg(c, a, 1, NULL), jj_arg(c, a, 2, NULL), &bs, &be, &cs);
  jj_args_done(c, a, 3);
  jj_charge(c, self.s->len / 16);
  if (be < bs || needle->len > be - bs) return -1;
  const char *s = self.s->p;
  size_t pos = SIZE_MAX;
  if (!reverse) {
    const char *h = needle->len ? memmem(s + bs, be - bs, needle->p, needle->len) : s + bs;
    if (h) pos = (size_t)(h - s);
  } else {
    for (size_t k = be - needle->len + 1; k-- > bs;)
      if (!memcmp(s + k, needle->p, needle->len)) { pos = k; break; }
  }
  if (pos == SIZE_MAX) return -1;
  return cs + (int64_t)cp_count(s + bs, pos - bs);
}

static jv pad(jj_ctx *c, jv self, jj_args *a, int mode /* 0 center 1 ljust 2 rjust */) {
  int64_t width = int_arg(c, jj_arg(c, a, 0, NULL), 0, "width");
  jv *fillv = jj_arg(c, a, 1, NULL);
  jj_args_done(c, a, 2);
  const char *fill = " ";
  size_t fl = 1;
  if (fillv) {
    if (fillv->t != JT_STR || jj_str_ncp(fillv->s) != 1)
      jj_fail(c, "TypeError: The fill character must be exactly one character long");
    fill = fillv->s->p;
    fl = fillv->s->len;
  }
  int64_t n = (int64_t)jj_str_ncp(self.s);
  if (width <= n) return self;
  if (width > (int64_t)c->out_limit) jj_fail_limit(c, "the template builds a string longer than %zu MiB", c->out_limit >> 20);
  int64_t total = width - n, left = mode == 1 ? 0 : mode == 2 ? total : total / 2 + (total & width & 1);
  jj_buf *b = jj_tmpbuf(c);
  for (int64_t i = 0; i < left; i++) jj_buf_put(b, fill, fl);
  jj_buf_put(b, self.s->p, self.s->len);
  for (int64_t i = 0; i < total - left; i++) jj_buf_put(b, fill, fl);
  return retstr(c, self, b);
}

static jv str_method(jj_ctx *c, jj_func *m, jj_args *a) {
  jv self = m->self;
  jj_str *s = self.s;
  switch (m->id) {
    case M_STRIP:
    case M_LSTRIP:
    case M_RSTRIP: {
      jj_str *chars = str_arg(c, jj_arg(c, a, 0, NULL), m->name, 1);
      jj_args_done(c, a, 1);
      return jj_py_strip(c, self, chars, m->id != M_RSTRIP, m->id != M_LSTRIP);
    }
    case M_SPLIT:
    case M_RSPLIT: {
      jj_str *sep = str_arg(c, jj_arg(c, a, 0, "sep"), m->name, 1);
      int64_t maxsplit = int_arg(c, jj_arg(c, a, 1, "maxsplit"), -1, "maxsplit");
      jj_args_done(c, a, 2);
      return split(c, self, sep, maxsplit, m->id == M_RSPLIT);
    }
    case M_SPLITLINES: {
      jv *k = jj_arg(c, a, 0, "keepends");
      jj_args_done(c, a, 1);
      return jj_py_splitlines(c, self, k && jj_truthy(*k));
    }
    case M_STARTSWITH:
    case M_ENDSWITH: {
      jv *what = jj_arg(c, a, 0, NULL), *st = jj_arg(c, a, 1, NULL), *en = jj_arg(c, a, 2, NULL);
      jj_args_done(c, a, 3);
      if (what && what->t == JT_UNDEF) jj_fail_undefined(c, *what);
      return jv_bool(affix(c, self, what, st, en, m->id == M_ENDSWITH, m->name));
    }
    case M_REPLACE: {
      jj_str *old = str_arg(c, jj_arg(c, a, 0, NULL), "replace", 0), *new_ = str_arg(c, jj_arg(c, a, 1, NULL), "replace", 0);
      if (!old || !new_) jj_fail(c, "TypeError: replace() takes at least 2 arguments");
      int64_t count = int_arg(c, jj_arg(c, a, 2, "count"), -1, "count");
      jj_args_done(c, a, 3);
      if (count < 0) count = INT64_MAX;
      jj_charge(c, s->len / 16);
      jj_buf *b = jj_tmpbuf(c);
      if (!old->len) {
        size_t i = 0;
        while (count > 0) {
          jj_buf_put(b, new_->p, new_->len);
          count--;
          if (i >= s->len) break;
          size_t l = jj_u8_len((unsigned char)s->p[i]);
          jj_buf_put(b, s->p + i, l);
          i += l;
        }
        jj_buf_put(b, s->p + i, s->len - i);
        return retstr(c, self, b);
      }
      size_t i = 0;
      while (count > 0) {
        const char *h = memmem(s->p + i, s->len - i, old->p, old->len);
        if (!h) break;
        size_t j = (size_t)(h - s->p);
        jj_buf_put(b, s->p + i, j - i);
        jj_buf_put(b, new_->p, new_->len);
        i = j + old->len;
        count--;
      }
      jj_buf_put(b, s->p + i, s->len - i);
      return retstr(c, self, b);
    }
    case M_LOWER:
    case M_CASEFOLD:
    case M_UPPER: {
      jj_args_done(c, a, 0);
      jj_buf *b = jj_tmpbuf(c);
      if (m->id == M_UPPER) jj_buf_upper(b, s->p, s->len);
      else if (m->id == M_CASEFOLD) jj_buf_casefold(b, s->p, s->len);
      else jj_buf_lower(b, s->p, s->len);
      return retstr(c, self, b);
    }
    case M_SWAPCASE: {
      jj_args_done(c, a, 0);
      jj_buf *b = jj_tmpbuf(c);
      for (size_t i = 0; i < s->len;) {
        size_t adv;
        uint32_t cp = jj_u8_dec(s->p + i, &adv);
        if (jj_py_isupper_cp(cp)) jj_lower_at(b, s->p, s->len, i, adv, cp);
        else if (jj_py_islower_cp(cp)) jj_buf_upper(b, s->p + i, adv);
        else jj_buf_put(b, s->p + i, adv);
        i += adv;
      }
      return retstr(c, self, b);
    }
    case M_TITLE:
    case M_CAPITALIZE: {
      jj_args_done(c, a, 0);
      jj_buf *b = jj_tmpbuf(c);
      int prev_cased = 0, first = 1;
      for (size_t i = 0; i < s->len;) {
        size_t adv;
        uint32_t cp = jj_u8_dec(s->p + i, &adv);
        int upper = m->id == M_TITLE ? !prev_cased : first;
        if (upper) jj_title_cp(b, cp);
        else jj_lower_at(b, s->p, s->len, i, adv, cp);
        prev_cased = jj_py_iscased(cp);
        first = 0;
        i += adv;
      }
      return retstr(c, self, b);
    }
    case M_FIND:
    case M_RFIND:
    case M_INDEX:
    case M_RINDEX: {
      int rev = m->id == M_RFIND || m->id == M_RINDEX;
      int64_t r = find(c, self, a, rev, m->name);
      if (r < 0 && (m->id == M_INDEX || m->id == M_RINDEX)) jj_fail(c, "ValueError: substring not found");
      return jv_int(r);
    }
    case M_COUNT: {
      jj_str *needle = str_arg(c, jj_arg(c, a, 0, NULL), "count", 0);
      if (!needle) jj_fail(c, "TypeError: count() takes at least 1 argument (0 given)");
      size_t bs, be;
      int64_t cs;
      cp_range(c, s, jj_arg(c, a, 1, NULL), jj_arg(c, a, 2, NULL), &bs, &be, &cs);
      jj_args_done(c, a, 3);
      jj_charge(c, s->len / 16);
      if (!needle->len) return jv_int((int64_t)cp_count(s->p + bs, be - bs) + 1);
      int64_t k = 0;
      for (size_t i = bs; i + needle->len <= be;) {
        const char *h = memmem(s->p + i, be - i, needle->p, needle->len);
        if (!h) break;
        k++;
        i = (size_t)(h - s->p) + needle->len;
      }
      return jv_int(k);
    }
    case M_FORMAT: return jj_str_format(c, s, a);
    case M_JOIN: {
      jv *it = jj_arg(c, a, 0, NULL);
      jj_args_done(c, a, 1);
      if (!it) jj_fail(c, "TypeError: str.join() takes exactly one argument (0 given)");
      if (it->t == JT_UNDEF) jj_fail_undefined(c, *it);
      jj_list *l = jj_iter(c, *it);
      jj_buf *b = jj_tmpbuf(c);
      for (size_t i = 0; i < l->n; i++) {
        if (l->v[i].t != JT_STR)
          jj_fail(c, "TypeError: sequence item %zu: expected str instance, %s found", i, jj_type_name(l->v[i]));
        if (i) jj_buf_put(b, s->p, s->len);
        jj_buf_put(b, l->v[i].s->p, l->v[i].s->len);
      }
      return retstr(c, self, b);
    }
    case M_CENTER: return pad(c, self, a, 0);
    case M_LJUST: return pad(c, self, a, 1);
    case M_RJUST: return pad(c, self, a, 2);
    case M_ZFILL: {
      int64_t width = int_arg(c, jj_arg(c, a, 0, NULL), 0, "width");
      jj_args_done(c, a, 1);
      int64_t n = (int64_t)jj_str_ncp(s);
      if (width <= n) return self;
      if (width > (int64_t)c->out_limit) jj_fail_limit(c, "the template builds a string longer than %zu MiB", c->out_limit >> 20);
      jj_buf *b = jj_tmpbuf(c);
      size_t i = 0;
      if (s->len && (s->p[0] == '+' || s->p[0] == '-')) jj_buf_putc(b, s->p[i++]);
      for (int64_t k = 0; k < width - n; k++) jj_buf_putc(b, '0');
      jj_buf_put(b, s->p + i, s->len - i);
      return retstr(c, self, b);
    }
    case M_PARTITION:
    case M_RPARTITION: {
      jj_str *sep = str_arg(c, jj_arg(c, a, 0, NULL), m->name, 0);
      jj_args_done(c, a, 1);
      if (!sep) jj_fail(c, "TypeError: %s() takes exactly one argument (0 given)", m->name);
      if (!sep->len) jj_fail(c, "ValueError: empty separator");
      jj_list *l = jj_list_new(c, 3, JL_TUPLE);
      size_t pos = SIZE_MAX;
      if (m->id == M_PARTITION) {
        const char *h = memmem(s->p, s->len, sep->p, sep->len);
        if (h) pos = (size_t)(h - s->p);
      } else if (sep->len <= s->len) {
        for (size_t k = s->len - sep->len + 1; k-- > 0;)
          if (!memcmp(s->p + k, sep->p, sep->len)) { pos = k; break; }
      }
      jv empty = jj_strv(&c->arena, "", 0);
      if (pos == SIZE_MAX) {
        l->v[0] = m->id == M_PARTITION ? self : empty;
        l->v[1] = empty;
        l->v[2] = m->id == M_PARTITION ? empty : self;
      } else {
        l->v[0] = sub(c, self, 0, pos);
        l->v[1] = jv_strv(sep);
        l->v[2] = sub(c, self, pos + sep->len, s->len);
      }
      l->n = 3;
      return jv_listv(l);
    }
    case M_REMOVEPREFIX:
    case M_REMOVESUFFIX: {
      jj_str *x = str_arg(c, jj_arg(c, a, 0, NULL), m->name, 0);
      jj_args_done(c, a, 1);
      if (!x) jj_fail(c, "TypeError: %s() takes exactly one argument (0 given)", m->name);
      if (x->len > s->len) return self;
      if (m->id == M_REMOVEPREFIX) return memcmp(s->p, x->p, x->len) ? self : sub(c, self, x->len, s->len);
      return memcmp(s->p + s->len - x->len, x->p, x->len) ? self : sub(c, self, 0, s->len - x->len);
    }
    case M_EXPANDTABS: {
      int64_t ts = int_arg(c, jj_arg(c, a, 0, "tabsize"), 8, "tabsize");
      jj_args_done(c, a, 1);
      jj_buf *b = jj_tmpbuf(c);
      int64_t col = 0;
      for (size_t i = 0; i < s->len;) {
        size_t adv = jj_u8_len((unsigned char)s->p[i]);
        if (s->p[i] == '\t') {
          if (ts > 0) {
            int64_t k = ts - col % ts;
            if (k > (int64_t)c->out_limit) k = (int64_t)c->out_limit;
            for (int64_t q = 0; q < k; q++) jj_buf_putc(b, ' ');
            col += k;
          }
        } else {
          jj_buf_put(b, s->p + i, adv);
          col = line_break(s->p, s->len, i) ? 0 : col + 1;
        }
        i += adv;
      }
      return retstr(c, self, b);
    }
    default: break;
  }
  /* predicates */
  jj_args_done(c, a, 0);
  if (!s->len) return jv_bool(m->id == M_ISASCII || m->id == M_ISPRINTABLE);
  int all = 1, any_cased = 0, prev_cased = 0, title_ok = 1;
  for (size_t i = 0; i < s->len;) {
    size_t adv;
    uint32_t cp = jj_u8_dec(s->p + i, &adv);
    int ok = 1;
    switch (m->id) {
      case M_ISALNUM: ok = jj_py_isalnum(cp); break;
      case M_ISALPHA: ok = jj_py_isalpha(cp); break;
      case M_ISASCII: ok = cp < 0x80; break;
      case M_ISDECIMAL: ok = jj_py_isdecimal(cp); break;
      case M_ISDIGIT: ok = jj_py_isdigit(cp); break;
      case M_ISNUMERIC: ok = jj_py_isnumeric(cp); break;
      case M_ISPRINTABLE: ok = jj_py_isprintable(cp); break;
      case M_ISSPACE: ok = jj_py_isspace(cp); break;
      case M_ISIDENTIFIER: ok = i == 0 ? (jj_py_isalpha(cp) || cp == '_') : (jj_py_isalnum(cp) || cp == '_'); break;
      case M_ISLOWER:
        if (jj_py_isupper_cp(cp)) ok = 0;
        any_cased |= jj_py_islower_cp(cp);
        break;
      case M_ISUPPER:
        if (jj_py_islower_cp(cp)) ok = 0;
        any_cased |= jj_py_isupper_cp(cp);
        break;
      case M_ISTITLE:
        if (jj_py_isupper_cp(cp)) {
          if (prev_cased) title_ok = 0;
          prev_cased = 1;
          any_cased = 1;
        } else if (jj_py_islower_cp(cp)) {
          if (!prev_cased) title_ok = 0;
          prev_cased = 1;
          any_cased = 1;
        } else {
          prev_cased = 0;
        }
        break;
      default: jj_fail(c, "internal error: str method %d", m->id);
    }
    if (!ok) { all = 0; break; }
    i += adv;
  }
  if (m->id == M_ISLOWER || m->id == M_ISUPPER) return jv_bool(all && any_cased);
  if (m->id == M_ISTITLE) return jv_bool(title_ok && any_cased);
  return jv_bool(all);
}

static jv items_view(jj_ctx *c, jj_dict *d, int kind) {
  jj_list *l = jj_list_new(c, d->n, kind);
  for (size_t i = 0; i < d->n; i++) {
    if (kind == JL_ITEMS) {
      jj_list *t = jj_list_new(c, 2, JL_TUPLE);
      t->v[0] = d->e[i].key;
      t->v[1] = d->e[i].val;
      t->n = 2;
      l->v[i] = jv_listv(t);
    } else {
      l->v[i] = kind == JL_KEYS ? d->e[i].key : d->e[i].val;
    }
  }
  l->n = d->n;
  jj_charge(c, d->n);
  return jv_listv(l);
}

jv jj_dict_items(jj_ctx *c, jj_dict *d) { return items_view(c, d, JL_ITEMS); }

jv jj_method_call(jj_ctx *c, jj_func *m, jj_args *a) {
  jv self = m->self;
  if (m->id < 0) { /* loop.cycle, loop.changed, cycler.next, cycler.reset */
    switch (m->id) {
      case -1: {
        if (!a->n_pos) jj_fail(c, "TypeError: no items for cycling given");
        jj_args_done(c, a, a->n_pos);
        return a->pos[self.loop->index0 % a->n_pos];
      }
      case -2: {
        jj_args_done(c, a, a->n_pos);
        jj_list *t = jj_list_new(c, a->n_pos, JL_TUPLE);
        jj_copy(t->v, a->pos, a->n_pos * sizeof(jv));
        t->n = a->n_pos;
        jv v = jv_listv(t);
        jj_loop *l = self.loop;
        if (!l->has_changed || !jj_eq(c, v, l->last_changed)) {
          l->has_changed = 1;
          l->last_changed = v;
          return jv_bool(1);
        }
        return jv_bool(0);
      }
      case -3: {
        jj_args_done(c, a, 0);
        jj_obj *o = self.o;
        jv r = o->items->v[o->pos];
        o->pos = (o->pos + 1) % o->items->n;
        return r;
      }
      default:
        jj_args_done(c, a, 0);
        self.o->pos = 0;
        return jv_none();
    }
  }
  switch (self.t) {
    case JT_STR: return str_method(c, m, a);
    case JT_DICT:
      switch (m->id) {
        case M_GET: {
          jv *k = jj_arg(c, a, 0, NULL), *d = jj_arg(c, a, 1, NULL);
          jj_args_done(c, a, 2);
          if (!k) jj_fail(c, "TypeError: get expected at least 1 argument, got 0");
          jv *v = jj_dict_get(c, self.d, *k);
          return v ? *v : d ? *d : jv_none();
        }
        case M_ITEMS: jj_args_done(c, a, 0); return items_view(c, self.d, JL_ITEMS);
        case M_KEYS: jj_args_done(c, a, 0); return items_view(c, self.d, JL_KEYS);
        case M_VALUES: jj_args_done(c, a, 0); return items_view(c, self.d, JL_VALUES);
        default: {
          jj_args_done(c, a, 0);
          jj_dict *d = jj_dict_new(c, self.d->n);
          for (size_t i = 0; i < self.d->n; i++) jj_dict_set(c, d, self.d->e[i].key, self.d->e[i].val);
          return jv_dictv(d);
        }
      }
    case JT_LIST: {
      jj_list *l = self.l;
      if (m->id == M_COPY) {
        jj_args_done(c, a, 0);
        jj_list *n = jj_list_new(c, l->n, JL_LIST);
        jj_copy(n->v, l->v, l->n * sizeof(jv));
        n->n = l->n;
        return jv_listv(n);
      }
      jv *x = jj_arg(c, a, 0, NULL);
      if (!x) jj_fail(c, "TypeError: %s() takes exactly one argument (0 given)", m->name);
      if (m->id == M_COUNT) {
        jj_args_done(c, a, 1);
        int64_t k = 0;
        for (size_t i = 0; i < l->n; i++) k += jj_eq(c, l->v[i], *x);
        return jv_int(k);
      }
      jj_args_done(c, a, 3);
      for (size_t i = 0; i < l->n; i++)
        if (jj_eq(c, l->v[i], *x)) return jv_int((int64_t)i);
      jj_buf *b = jj_tmpbuf(c);
      jj_write_repr(c, b, *x);
      jj_fail(c, "ValueError: %s is not in %s", b->p ? b->p : "", l->kind == JL_TUPLE ? "tuple" : "list");
    }
    case JT_FLOAT:
      jj_args_done(c, a, 0);
      if (m->id == M_IS_INTEGER) return jv_bool(self.f == (double)(int64_t)self.f);
      return self;
    default:
      jj_args_done(c, a, 0);
      if (m->id == M_BIT_LENGTH) {
        uint64_t v = self.i < 0 ? (uint64_t)(-(self.i + 1)) + 1 : (uint64_t)self.i;
        int64_t bits = 0;
        while (v) { bits++; v >>= 1; }
        return jv_int(bits);
      }
      return jv_int(self.i);
  }
}
