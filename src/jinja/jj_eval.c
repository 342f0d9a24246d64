/* The evaluator: statements and expressions over the AST with jinja2's scoping (a loop iteration, macro call,
 * with/filter/set block each get a scope; if does not), the sandbox's attribute and item lookup, macros with
 * jinja2's argument rules, Python operators, and the render entry point with its limits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/status.h"
#include "jinja/jj_internal.h"

/* ---------------------------------------------------------------- errors, work, buffers */
void jj_fail_status(jj_ctx *c, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err.msg, sizeof c->err.msg, fmt, ap);
  va_end(ap);
  c->err.status = status;
  c->err.line = c->line;
  c->err.col = c->col;
  longjmp(c->err.jb, 1);
}

void jj_fail_limit(jj_ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err.msg, sizeof c->err.msg, fmt, ap);
  va_end(ap);
  c->err.status = XPI_ERR_INVALID_ARGUMENT;
  c->err.limit = 1;
  c->err.line = c->line;
  c->err.col = c->col;
  longjmp(c->err.jb, 1);
}

void jj_fail(jj_ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err.msg, sizeof c->err.msg, fmt, ap);
  va_end(ap);
  c->err.status = XPI_ERR_INVALID_ARGUMENT;
  c->err.line = c->line;
  c->err.col = c->col;
  longjmp(c->err.jb, 1);
}

void jj_fail_undefined(jj_ctx *c, jv v) {
  const jj_undef *u = v.u;
  const char *cls = u && u->security ? "SecurityError" : "UndefinedError";
  if (!u) jj_fail(c, "%s: undefined value", cls);
  if (u->hint) jj_fail(c, "%s: %s", cls, u->hint);
  jj_buf *b = jj_tmpbuf(c);
  if (!u->obj_type) {
    jj_write_repr(c, b, u->name);
    jj_fail(c, "%s: %s is undefined", cls, b->p ? b->p : "");
  }
  jj_write_repr(c, b, u->name);
  if (u->name.t != JT_STR) jj_fail(c, "%s: %s has no element %s", cls, u->obj_type, b->p ? b->p : "");
  jj_fail(c, "%s: '%s' has no attribute %s", cls, u->obj_type, b->p ? b->p : "");
}

void jj_charge(jj_ctx *c, size_t units) {
  c->work += units;
  if (c->work > c->work_limit) {
    c->err.limit = 1;
    jj_fail(c, "the template ran too long (more than %llu steps): an endless loop?",
            (unsigned long long)c->work_limit);
  }
}

static jj_buf *buf_new(jj_ctx *c) {
  if (c->n_bufs == c->cap_bufs) {
    size_t cap = c->cap_bufs ? c->cap_bufs * 2 : 16;
    jj_buf **nb = realloc(c->bufs, cap * sizeof *nb);
    if (!nb) jj_fail_status(c, XPI_ERR_OUT_OF_MEMORY, "out of memory");
    c->bufs = nb;
    c->cap_bufs = cap;
  }
  jj_buf *b = calloc(1, sizeof *b);
  if (!b) jj_fail_status(c, XPI_ERR_OUT_OF_MEMORY, "out of memory");
  b->limit = c->out_limit;
  b->err = &c->err;
  c->bufs[c->n_bufs++] = b;
  return b;
}

jj_buf *jj_buf_push(jj_ctx *c) { return buf_new(c); }
jj_buf *jj_tmpbuf(jj_ctx *c) { return buf_new(c); }

jj_str *jj_buf_pop(jj_ctx *c, jj_buf *b) {
  jj_str *s = jj_str_new(&c->arena, b->p ? b->p : "", b->len);
  jj_charge(c, b->len / 16);
  for (size_t i = c->n_bufs; i-- > 0;)
    if (c->bufs[i] == b) {
      memmove(c->bufs + i, c->bufs + i + 1, (c->n_bufs - i - 1) * sizeof *c->bufs);
      c->n_bufs--;
      break;
    }
  free(b->p);
  free(b);
  return s;
}

static void at(jj_ctx *c, const jj_node *n) {
  c->line = n->line;
  c->col = n->col;
}

static void enter(jj_ctx *c) {
  if (++c->depth > c->depth_limit) {
    c->err.limit = 1;
    jj_fail(c, "RecursionError: the template nests calls or expressions more than %u deep", c->depth_limit);
  }
}
static void leave(jj_ctx *c) { c->depth--; }

/* ---------------------------------------------------------------- scopes */
static jj_scope *scope_new(jj_ctx *c, jj_scope *parent) {
  jj_scope *s = jj_zalloc(&c->arena, sizeof *s);
  s->parent = parent;
  return s;
}

static jv *scope_find(jj_scope *s, int32_t id) {
  for (; s; s = s->parent)
    for (uint32_t i = 0; i < s->n; i++)
      if (s->v[i].id == id) return &s->v[i].v;
  return NULL;
}

static void scope_set(jj_ctx *c, jj_scope *s, int32_t id, jv v) {
  for (uint32_t i = 0; i < s->n; i++)
    if (s->v[i].id == id) { s->v[i].v = v; return; }
  if (s->n == s->cap) {
    uint32_t cap = s->cap ? s->cap * 2 : 4;
    jj_sym *nv = jj_alloc_array(&c->arena, cap, sizeof *nv);
    if (s->n) memcpy(nv, s->v, s->n * sizeof *nv);
    s->v = nv;
    s->cap = cap;
  }
  s->v[s->n].id = id;
  s->v[s->n].v = v;
  s->n++;
}

static jv lookup(jj_ctx *c, jj_scope *s, int32_t id) {
  jv *v = scope_find(s, id);
  if (v) return *v;
  const char *name = c->tpl->names[id];
  int g = jj_global_id(name);
  if (g >= 0) {
    jj_func *f = jj_zalloc(&c->arena, sizeof *f);
    f->kind = JF_BUILTIN;
    f->id = g;
    f->name = jj_global_name(g);
    jv r = {.t = JT_FUNC};
    r.fn = f;
    return r;
  }
  return jj_undef_name(c, name);
}

/* ---------------------------------------------------------------- arguments */
jv *jj_arg(jj_ctx *c, jj_args *a, size_t i, const char *name) {
  jv *pos = i < a->n_pos ? &a->pos[i] : NULL;
  if (name)
    for (size_t k = 0; k < a->n_kw; k++)
      if (!strcmp(a->kwn[k]->p, name)) {
        if (pos) jj_fail(c, "TypeError: %s() got multiple values for argument '%s'", a->fname, name);
        a->used_kw |= 1u << k;
        return &a->kwv[k];
      }
  return pos;
}

void jj_args_done(jj_ctx *c, jj_args *a, size_t max_pos) {
  if (a->n_pos > max_pos)
    jj_fail(c, "TypeError: %s() takes at most %zu argument%s (%zu given)", a->fname, max_pos, max_pos == 1 ? "" : "s",
            a->n_pos);
  for (size_t k = 0; k < a->n_kw; k++)
    if (!(a->used_kw & (1u << k)))
      jj_fail(c, "TypeError: %s() got an unexpected keyword argument '%s'", a->fname, a->kwn[k]->p);
}

/* ---------------------------------------------------------------- attribute and item access */
static int is_dunder(const jj_str *n) {
  return n->len > 4 && n->p[0] == '_' && n->p[1] == '_' && n->p[n->len - 1] == '_' && n->p[n->len - 2] == '_';
}

static jv unsafe(jj_ctx *c, jv obj, jj_str *name) {
  jv u = jj_undef_hint(c, "access to attribute '%s' of '%s' object is unsafe.", name->p, jj_type_name(obj));
  u.u->security = 1;
  return u;
}

static jv loop_attr(jj_ctx *c, jj_loop *l, jj_str *name, int *found) {
  size_t n = l->items->n, i = l->index0;
  const char *s = name->p;
  *found = 1;
  if (!strcmp(s, "index")) return jv_int((int64_t)i + 1);
  if (!strcmp(s, "index0")) return jv_int((int64_t)i);
  if (!strcmp(s, "revindex")) return jv_int((int64_t)(n - i));
  if (!strcmp(s, "revindex0")) return jv_int((int64_t)(n - i - 1));
  if (!strcmp(s, "first")) return jv_bool(i == 0);
  if (!strcmp(s, "last")) return jv_bool(i + 1 == n);
  if (!strcmp(s, "length")) return jv_int((int64_t)n);
  if (!strcmp(s, "depth")) return jv_int(l->depth0 + 1);
  if (!strcmp(s, "depth0")) return jv_int(l->depth0);
  if (!strcmp(s, "previtem"))
    return i ? l->items->v[i - 1] : jj_undef_hint(c, "there is no previous item");
  if (!strcmp(s, "nextitem"))
    return i + 1 < n ? l->items->v[i + 1] : jj_undef_hint(c, "there is no next item");
  if (!strcmp(s, "cycle") || !strcmp(s, "changed")) {
    jj_func *f = jj_zalloc(&c->arena, sizeof *f);
    f->kind = JF_METHOD;
    f->id = s[1] == 'y' ? -1 : -2; /* loop methods */
    f->name = s[1] == 'y' ? "cycle" : "changed";
    f->loop = l;
    f->self.t = JT_LOOP;
    f->self.loop = l;
    jv r = {.t = JT_FUNC};
    r.fn = f;
    return r;
  }
  *found = 0;
  return jv_undef();
}

/* The attribute of obj, without the item fallback; *found = 0 when it has none. */
static jv attribute(jj_ctx *c, jv obj, jj_str *name, int *found) {
  *found = 0;
  if (is_dunder(name)) { *found = 1; return unsafe(c, obj, name); }
  switch (obj.t) {
    case JT_STR: case JT_DICT: case JT_INT: case JT_FLOAT: case JT_BOOL: {
      jv m;
      if (jj_method_lookup(c, obj, name, &m)) { *found = 1; return m; }
      return jv_undef();
    }
    case JT_NS: {
      jv *v = jj_dict_gets(obj.d, name->p);
      if (v) { *found = 1; return *v; }
      return jv_undef();
    }
    case JT_LOOP: return loop_attr(c, obj.loop, name, found);
    case JT_LIST:
      if (obj.l->fields) /* a named tuple (groupby) */
        for (size_t i = 0; obj.l->fields[i] && i < obj.l->n; i++)
          if (!strcmp(obj.l->fields[i], name->p)) { *found = 1; return obj.l->v[i]; }
      {
        jv m;
        if (jj_method_lookup(c, obj, name, &m)) { *found = 1; return m; }
      }
      return jv_undef();
    case JT_OBJ:
      if (obj.o->kind == JO_CYCLER) {
        if (!strcmp(name->p, "current")) { *found = 1; return obj.o->items->v[obj.o->pos]; }
        if (!strcmp(name->p, "next") || !strcmp(name->p, "reset")) {
          jj_func *f = jj_zalloc(&c->arena, sizeof *f);
          f->kind = JF_METHOD;
          f->id = name->p[0] == 'n' ? -3 : -4;
          f->name = name->p[0] == 'n' ? "next" : "reset";
          f->self = obj;
          jv r = {.t = JT_FUNC};
          r.fn = f;
          *found = 1;
          return r;
        }
      }
      return jv_undef();
    default: return jv_undef();
  }
}

/* obj[key] without the attribute fallback; *found = 0 on Python's TypeError/LookupError. */
static jv item(jj_ctx *c, jv obj, jv key, int *found) {
  *found = 0;
  if (obj.t == JT_DICT) {
    int h;
    jj_hash(key, &h);
    if (!h) return jv_undef();
    jv *v = jj_dict_get(c, obj.d, key);
    if (v) { *found = 1; return *v; }
    return jv_undef();
  }
  if ((obj.t == JT_LIST && obj.l->kind <= JL_RANGE) || obj.t == JT_STR) {
    if (key.t != JT_INT && key.t != JT_BOOL) return jv_undef();
    int64_t n = obj.t == JT_STR ? (int64_t)jj_str_ncp(obj.s) : (int64_t)obj.l->n, i = key.i;
    if (i < 0) i += n;
    if (i < 0 || i >= n) return jv_undef();
    *found = 1;
    if (obj.t == JT_LIST) return obj.l->v[i];
    size_t off = jj_u8_offset(obj.s, (size_t)i);
    jv r = jj_strv(&c->arena, obj.s->p + off, jj_u8_len((unsigned char)obj.s->p[off]));
    r.markup = obj.markup;
    return r;
  }
  return jv_undef();
}

jv jj_getattr(jj_ctx *c, jv obj, jj_str *name) {
  if (obj.t == JT_UNDEF) jj_fail_undefined(c, obj);
  int found;
  jv v = attribute(c, obj, name, &found);
  if (found) return v;
  v = item(c, obj, jv_strv(name), &found);
  if (found) return v;
  return jj_undef_new(c, NULL, obj, jv_strv(name));
}

jv jj_getitem(jj_ctx *c, jv obj, jv key) {
  if (obj.t == JT_UNDEF) jj_fail_undefined(c, obj);
  int found;
  jv v = item(c, obj, key, &found);
  if (found) return v;
  if (key.t == JT_STR) {
    v = attribute(c, obj, key.s, &found);
    if (found) return v;
  }
  return jj_undef_new(c, NULL, obj, key);
}

/* Python slice.indices(). */
static void slice_indices(jj_ctx *c, int64_t n, jv start, jv stop, jv step, int64_t *s0, int64_t *s1, int64_t *st) {
  int64_t k = 1;
  if (step.t != JT_NONE) {
    k = step.i;
    if (k == 0) jj_fail(c, "ValueError: slice step cannot be zero");
  }
  int64_t lo = k < 0 ? -1 : 0, hi = k < 0 ? n - 1 : n;
  int64_t a, b;
  if (start.t == JT_NONE) a = k < 0 ? hi : lo;
  else {
    a = start.i;
    if (a < 0) { a += n; if (a < lo) a = lo; }
    else if (a > hi) a = hi;
  }
  if (stop.t == JT_NONE) b = k < 0 ? lo : hi;
  else {
    b = stop.i;
    if (b < 0) { b += n; if (b < lo) b = lo; }
    else if (b > hi) b = hi;
  }
  *s0 = a;
  *s1 = b;
  *st = k;
}

jv jj_slice(jj_ctx *c, jv obj, jv start, jv stop, jv step) {
  if (obj.t == JT_UNDEF) jj_fail_undefined(c, obj);
  jv bounds[3] = {start, stop, step};
  for (int i = 0; i < 3; i++) {
    if (bounds[i].t == JT_UNDEF) jj_fail_undefined(c, bounds[i]);
    if (bounds[i].t != JT_NONE && bounds[i].t != JT_INT && bounds[i].t != JT_BOOL)
      return jj_undef_new(c, NULL, obj, jv_none()); /* TypeError: getitem gives undefined */
  }
  int is_str = obj.t == JT_STR;
  if (!is_str && !(obj.t == JT_LIST && obj.l->kind <= JL_RANGE)) return jj_undef_new(c, NULL, obj, jv_none());
  int64_t n = is_str ? (int64_t)jj_str_ncp(obj.s) : (int64_t)obj.l->n, a, b, k;
  slice_indices(c, n, start, stop, step, &a, &b, &k);
  int64_t count = k > 0 ? (b > a ? (b - a + k - 1) / k : 0) : (a > b ? (a - b - k - 1) / -k : 0);
  jj_charge(c, (size_t)count);
  if (is_str) {
    jj_buf *buf = jj_tmpbuf(c);
    if (obj.s->ncp == obj.s->len) {
      for (int64_t i = 0, p = a; i < count; i++, p += k) jj_buf_putc(buf, obj.s->p[p]);
    } else {
      /* offsets of every character, then pick */
      size_t *off = jj_alloc_array(&c->arena, (size_t)n + 1, sizeof *off);
      size_t q = 0;
      for (int64_t i = 0; i < n; i++) {
        off[i] = q;
        q += jj_u8_len((unsigned char)obj.s->p[q]);
      }
      off[n] = q;
      for (int64_t i = 0, p = a; i < count; i++, p += k) jj_buf_put(buf, obj.s->p + off[p], off[p + 1] - off[p]);
    }
    jv r = jv_strv(jj_buf_pop(c, buf));
    r.markup = obj.markup;
    return r;
  }
  jj_list *src = obj.l;
  jj_list *l = jj_list_new(c, (size_t)count, src->kind == JL_TUPLE ? JL_TUPLE : src->kind == JL_RANGE ? JL_RANGE : JL_LIST);
  for (int64_t i = 0, p = a; i < count; i++, p += k) l->v[l->n++] = src->v[p];
  if (src->kind == JL_RANGE) {
    l->r_step = src->r_step * k;
    l->r_start = src->r_start + a * src->r_step;
    l->r_stop = src->r_start + b * src->r_step;
    if (count) l->r_stop = l->r_start + count * l->r_step;
    else l->r_stop = l->r_start;
  }
  return jv_listv(l);
}

/* ---------------------------------------------------------------- operators */
static int is_intlike(jv v) { return v.t == JT_INT || v.t == JT_BOOL; }

JJ_NORETURN static void unsupported(jj_ctx *c, const char *op, jv a, jv b) {
  jj_fail(c, "TypeError: unsupported operand type(s) for %s: '%s' and '%s'", op, jj_type_name(a), jj_type_name(b));
}

static jv concat_str(jj_ctx *c, jv a, jv b) {
  if (a.markup != b.markup) { /* Markup + str escapes the str (markupsafe) */
    if (!a.markup) a = jj_markup_escape(c, a);
    if (!b.markup) b = jj_markup_escape(c, b);
  }
  if (a.s->len > SIZE_MAX / 2 || a.s->len + b.s->len > c->out_limit)
    jj_fail_limit(c, "the template builds a string longer than %zu MiB", c->out_limit >> 20);
  jj_str *s = jj_alloc(&c->arena, sizeof(jj_str) + a.s->len + b.s->len + 1);
  memcpy(s->p, a.s->p, a.s->len);
  memcpy(s->p + a.s->len, b.s->p, b.s->len);
  s->len = a.s->len + b.s->len;
  s->p[s->len] = 0;
  s->ncp = a.s->ncp != SIZE_MAX && b.s->ncp != SIZE_MAX ? a.s->ncp + b.s->ncp : SIZE_MAX;
  jj_charge(c, s->len / 16);
  jv r = jv_strv(s);
  r.markup = a.markup;
  return r;
}

static jv repeat(jj_ctx *c, jv seq, int64_t times) {
  if (times < 0) times = 0;
  if (seq.t == JT_STR) {
    if (times && seq.s->len > c->out_limit / (uint64_t)times)
      jj_fail_limit(c, "the template builds a string longer than %zu MiB", c->out_limit >> 20);
    jj_buf *b = jj_tmpbuf(c);
    for (int64_t i = 0; i < times; i++) jj_buf_put(b, seq.s->p, seq.s->len);
    jv r = jv_strv(jj_buf_pop(c, b));
    r.markup = seq.markup;
    return r;
  }
  jj_list *src = seq.l;
  if (times && src->n > (c->arena.limit / sizeof(jv)) / (uint64_t)times)
    jj_fail_limit(c, "the template builds a list too large for its memory limit");
  jj_list *l = jj_list_new(c, src->n * (size_t)times, src->kind == JL_TUPLE ? JL_TUPLE : JL_LIST);
  for (int64_t i = 0; i < times; i++) {
    jj_copy(l->v + l->n, src->v, src->n * sizeof(jv));
    l->n += src->n;
  }
  jj_charge(c, l->n);
  return jv_listv(l);
}

static double py_fmod(double x, double y) {
  double m = fmod(x, y);
  if (m) {
    if ((y < 0) != (m < 0)) m += y;
  } else {
    m = copysign(0.0, y);
  }
  return m;
}

static double py_floordiv(double x, double y) {
  double m = fmod(x, y), div = (x - m) / y;
  if (m && ((y < 0) != (m < 0))) div -= 1.0;
  if (div) {
    double f = floor(div);
    if (div - f > 0.5) f += 1.0;
    return f;
  }
  return copysign(0.0, x / y);
}

jv jj_binop(jj_ctx *c, int op, jv a, jv b) {
  static const char *const names[] = {"+", "-", "*", "/", "//", "%", "**"};
  if (a.t == JT_UNDEF) jj_fail_undefined(c, a);
  if (b.t == JT_UNDEF) jj_fail_undefined(c, b);
  if (a.t == JT_BIGINT || b.t == JT_BIGINT)
    jj_fail(c, "OverflowError: arithmetic on an integer beyond 64 bits (the engine's integers are 64-bit)");
  int na = jj_is_number(a), nb = jj_is_number(b);
  if (na && nb) {
    int ints = is_intlike(a) && is_intlike(b);
    int64_t r;
    double x = jj_num(a), y = jj_num(b);
    switch (op) {
      case OP_ADD:
        if (ints) {
          if (__builtin_add_overflow(a.i, b.i, &r)) break;
          return jv_int(r);
        }
        return jv_float(x + y);
      case OP_SUB:
        if (ints) {
          if (__builtin_sub_overflow(a.i, b.i, &r)) break;
          return jv_int(r);
        }
        return jv_float(x - y);
      case OP_MUL:
        if (ints) {
          if (__builtin_mul_overflow(a.i, b.i, &r)) break;
          return jv_int(r);
        }
        return jv_float(x * y);
      case OP_DIV:
        if (y == 0) jj_fail(c, "ZeroDivisionError: %sdivision by zero", ints ? "" : "float ");
        if (ints && llabs(a.i) < (1ll << 53) && llabs(b.i) < (1ll << 53)) return jv_float((double)a.i / (double)b.i);
        return jv_float(x / y);
      case OP_FLOORDIV:
        if (ints) {
          if (!b.i) jj_fail(c, "ZeroDivisionError: integer division or modulo by zero");
          if (a.i == INT64_MIN && b.i == -1) break;
          int64_t q = a.i / b.i;
          if ((a.i % b.i) && ((a.i < 0) != (b.i < 0))) q--;
          return jv_int(q);
        }
        if (y == 0) jj_fail(c, "ZeroDivisionError: float floor division by zero");
        return jv_float(py_floordiv(x, y));
      case OP_MOD:
        if (ints) {
          if (!b.i) jj_fail(c, "ZeroDivisionError: integer modulo by zero");
          if (b.i == -1) return jv_int(0);
          int64_t m = a.i % b.i;
          if (m && ((m < 0) != (b.i < 0))) m += b.i;
          return jv_int(m);
        }
        if (y == 0) jj_fail(c, "ZeroDivisionError: float modulo");
        return jv_float(py_fmod(x, y));
      case OP_POW:
        if (ints && b.i >= 0) {
          int64_t base = a.i, e = b.i, acc = 1;
          int ovf = 0;
          while (e && !ovf) {
            if (e & 1) ovf |= __builtin_mul_overflow(acc, base, &acc);
            e >>= 1;
            if (e) ovf |= __builtin_mul_overflow(base, base, &base);
          }
          if (ovf) break;
          return jv_int(acc);
        }
        if (x == 0 && y < 0) jj_fail(c, "ZeroDivisionError: 0.0 cannot be raised to a negative power");
        if (x < 0 && y != floor(y)) jj_fail(c, "ValueError: a negative number to a fractional power has a complex result");
        {
          double p = pow(x, y);
          if (isinf(p) && !isinf(x) && !isinf(y)) jj_fail(c, "OverflowError: (34, 'Numerical result out of range')");
          return jv_float(p);
        }
    }
    jj_fail(c, "OverflowError: integer result of %s beyond 64 bits (the engine's integers are 64-bit)", names[op]);
  }
  switch (op) {
    case OP_ADD:
      if (a.t == JT_STR && b.t == JT_STR) return concat_str(c, a, b);
      if (a.t == JT_LIST && b.t == JT_LIST && (a.l->kind == JL_LIST || a.l->kind == JL_TUPLE) && a.l->kind == b.l->kind) {
        jj_list *l = jj_list_new(c, a.l->n + b.l->n, a.l->kind);
        jj_copy(l->v, a.l->v, a.l->n * sizeof(jv));
        jj_copy(l->v + a.l->n, b.l->v, b.l->n * sizeof(jv));
        l->n = a.l->n + b.l->n;
        jj_charge(c, l->n / 4);
        return jv_listv(l);
      }
      if (a.t == JT_STR || (a.t == JT_LIST && (a.l->kind == JL_LIST || a.l->kind == JL_TUPLE)))
        jj_fail(c, "TypeError: can only concatenate %s (not \"%s\") to %s", jj_type_name(a) , jj_type_name(b),
                jj_type_name(a));
      unsupported(c, "+", a, b);
    case OP_MUL: {
      jv seq = a, n = b;
      if (is_intlike(a)) { seq = b; n = a; }
      int is_seq = seq.t == JT_STR || (seq.t == JT_LIST && (seq.l->kind == JL_LIST || seq.l->kind == JL_TUPLE));
      if (is_seq && is_intlike(n)) return repeat(c, seq, n.i);
      if (is_seq) jj_fail(c, "TypeError: can't multiply sequence by non-int of type '%s'", jj_type_name(n));
      unsupported(c, "*", a, b);
    }
    case OP_MOD:
      if (a.t == JT_STR && a.markup) { /* Markup % args escapes the arguments (markupsafe) */
        if (b.t == JT_LIST && b.l->kind == JL_TUPLE) {
          jj_list *t = jj_list_new(c, b.l->n, JL_TUPLE);
          for (size_t i = 0; i < b.l->n; i++) t->v[t->n++] = b.l->v[i].t == JT_STR ? jj_markup_escape(c, b.l->v[i]) : b.l->v[i];
          b = jv_listv(t);
        } else if (b.t == JT_DICT) {
          jj_dict *d = jj_dict_new(c, b.d->n);
          for (size_t i = 0; i < b.d->n; i++)
            jj_dict_set(c, d, b.d->e[i].key, b.d->e[i].val.t == JT_STR ? jj_markup_escape(c, b.d->e[i].val) : b.d->e[i].val);
          b = jv_dictv(d);
        } else if (b.t == JT_STR) {
          b = jj_markup_escape(c, b);
        }
        jv r = jj_percent_format(c, a.s, b);
        r.markup = 1;
        return r;
      }
      if (a.t == JT_STR) return jj_percent_format(c, a.s, b);
      unsupported(c, "%", a, b);
    default:
      unsupported(c, names[op], a, b);
  }
}

int jj_contains(jj_ctx *c, jv hay, jv x) {
  switch (hay.t) {
    case JT_UNDEF: return 0;
    case JT_STR: {
      if (x.t == JT_UNDEF) jj_fail_undefined(c, x);
      if (x.t != JT_STR) jj_fail(c, "TypeError: 'in <string>' requires string as left operand, not %s", jj_type_name(x));
      jj_charge(c, hay.s->len / 16);
      if (!x.s->len) return 1;
      return memmem(hay.s->p, hay.s->len, x.s->p, x.s->len) != NULL;
    }
    case JT_LIST: {
      jj_list *l = jj_iter(c, hay);
      jj_charge(c, l->n);
      for (size_t i = 0; i < l->n; i++)
        if (jj_eq(c, l->v[i], x)) return 1;
      return 0;
    }
    case JT_DICT: {
      int h;
      jj_hash(x, &h);
      if (!h) jj_fail(c, "TypeError: unhashable type: '%s'", jj_type_name(x));
      return jj_dict_get(c, hay.d, x) != NULL;
    }
    default: jj_fail(c, "TypeError: argument of type '%s' is not iterable", jj_type_name(hay));
  }
}

/* ---------------------------------------------------------------- evaluation */
static jv eval(jj_ctx *c, jj_scope *s, const jj_node *n);
static void exec_body(jj_ctx *c, jj_scope *s, jj_node *const *body, uint32_t n);
static jv call_macro(jj_ctx *c, jj_func *m, jj_args *a);

static void write_value(jj_ctx *c, jv v) {
  if (v.t == JT_STR) jj_buf_put(c->out, v.s->p, v.s->len);
  else if (v.t != JT_UNDEF) jj_write_str(c, c->out, v);
}

/* Evaluates call arguments (positional, keywords, *args, **kwargs) of n into a. */
static void eval_args(jj_ctx *c, jj_scope *s, const jj_node *n, jj_args *a, size_t extra_front) {
  size_t np = n->n_items + extra_front;
  jj_list *dyn = NULL;
  jj_dict *dkw = NULL;
  if (n->b) {
    jv d = eval(c, s, n->b);
    dyn = jj_iter(c, d);
    np += dyn->n;
  }
  if (n->c) {
    jv d = eval(c, s, n->c);
    if (d.t != JT_DICT) jj_fail(c, "TypeError: argument after ** must be a mapping, not %s", jj_type_name(d));
    dkw = d.d;
  }
  a->pos = jj_alloc_array(&c->arena, np ? np : 1, sizeof(jv));
  a->n_pos = extra_front;
  for (uint32_t i = 0; i < n->n_items; i++) a->pos[a->n_pos++] = eval(c, s, n->items[i]);
  if (dyn)
    for (size_t i = 0; i < dyn->n; i++) a->pos[a->n_pos++] = dyn->v[i];
  size_t nk = n->n_items2 + (dkw ? dkw->n : 0);
  if (nk > 32) jj_fail(c, "TypeError: too many keyword arguments (%zu)", nk);
  a->kwn = jj_alloc_array(&c->arena, nk ? nk : 1, sizeof(jj_str *));
  a->kwv = jj_alloc_array(&c->arena, nk ? nk : 1, sizeof(jv));
  a->n_kw = 0;
  for (uint32_t i = 0; i < n->n_items2; i++) {
    a->kwn[a->n_kw] = n->names[i];
    a->kwv[a->n_kw++] = eval(c, s, n->items2[i]);
  }
  if (dkw)
    for (size_t i = 0; i < dkw->n; i++) {
      if (dkw->e[i].key.t != JT_STR) jj_fail(c, "TypeError: keywords must be strings");
      for (size_t k = 0; k < a->n_kw; k++)
        if (!strcmp(a->kwn[k]->p, dkw->e[i].key.s->p))
          jj_fail(c, "TypeError: got multiple values for keyword argument '%s'", dkw->e[i].key.s->p);
      a->kwn[a->n_kw] = dkw->e[i].key.s;
      a->kwv[a->n_kw++] = dkw->e[i].val;
    }
  a->used_kw = 0;
}

static jv apply_filter(jj_ctx *c, jj_scope *s, const jj_node *f, jv base) {
  jv v = f->a ? eval(c, s, f->a) : base;
  jj_args a = {0};
  eval_args(c, s, f, &a, 0);
  at(c, f);
  if (f->id < 0) jj_fail(c, "TemplateRuntimeError: No filter named '%s' found.", f->val.s->p);
  a.fname = jj_filter_name(f->id);
  return jj_filter_apply(c, f->id, v, &a);
}

/* A filter chain whose innermost operand is the given value (filter blocks, set blocks). */
static jv apply_filter_chain(jj_ctx *c, jj_scope *s, const jj_node *f, jv base) {
  if (!f) return base;
  jv inner = f->a ? apply_filter_chain(c, s, f->a, base) : base;
  jj_args a = {0};
  eval_args(c, s, f, &a, 0);
  at(c, f);
  if (f->id < 0) jj_fail(c, "TemplateRuntimeError: No filter named '%s' found.", f->val.s->p);
  a.fname = jj_filter_name(f->id);
  return jj_filter_apply(c, f->id, inner, &a);
}

static const char *cmp_op_name(int op) {
  static const char *const n[] = {"==", "!=", "<", "<=", ">", ">="};
  return n[op];
}

static int compare(jj_ctx *c, int op, jv a, jv b) {
  switch (op) {
    case CMP_EQ: return jj_eq(c, a, b);
    case CMP_NE: return !jj_eq(c, a, b);
    case CMP_IN: return jj_contains(c, b, a);
    case CMP_NOTIN: return !jj_contains(c, b, a);
    default: {
      int r = jj_cmp(c, a, b, cmp_op_name(op));
      if (r == 2) return 0;
      return op == CMP_LT ? r < 0 : op == CMP_LE ? r <= 0 : op == CMP_GT ? r > 0 : r >= 0;
    }
  }
}

static jv eval(jj_ctx *c, jj_scope *s, const jj_node *n) {
  enter(c);
  jj_charge(c, 1);
  at(c, n);
  jv r;
  switch (n->kind) {
    case N_CONST: r = n->val; break;
    case N_NAME: r = lookup(c, s, n->id); break;
    case N_LIST:
    case N_TUPLE: {
      jj_list *l = jj_list_new(c, n->n_items, n->kind == N_LIST ? JL_LIST : JL_TUPLE);
      for (uint32_t i = 0; i < n->n_items; i++) l->v[l->n++] = eval(c, s, n->items[i]);
      r = jv_listv(l);
      break;
    }
    case N_DICT: {
      jj_dict *d = jj_dict_new(c, n->n_items);
      for (uint32_t i = 0; i < n->n_items; i++) {
        jv k = eval(c, s, n->items[i]);
        jv v = eval(c, s, n->items2[i]);
        at(c, n);
        jj_dict_set(c, d, k, v);
      }
      r = jv_dictv(d);
      break;
    }
    case N_GETATTR: {
      jv o = eval(c, s, n->a);
      at(c, n);
      r = jj_getattr(c, o, n->val.s);
      break;
    }
    case N_GETITEM: {
      jv o = eval(c, s, n->a);
      if (n->b->kind == N_SLICE) {
        const jj_node *sl = n->b;
        jv a = sl->a ? eval(c, s, sl->a) : jv_none();
        jv b = sl->b ? eval(c, s, sl->b) : jv_none();
        jv st = sl->c ? eval(c, s, sl->c) : jv_none();
        at(c, n);
        r = jj_slice(c, o, a, b, st);
      } else {
        jv k = eval(c, s, n->b);
        at(c, n);
        r = jj_getitem(c, o, k);
      }
      break;
    }
    case N_CALL: {
      jv f = eval(c, s, n->a);
      jj_args a = {0};
      eval_args(c, s, n, &a, 0);
      at(c, n);
      r = jj_call(c, f, a.pos, a.n_pos, a.kwn, a.kwv, a.n_kw);
      break;
    }
    case N_FILTER: r = apply_filter(c, s, n, jv_undef()); break;
    case N_TEST: {
      jv v = eval(c, s, n->a);
      jj_args a = {0};
      eval_args(c, s, n, &a, 0);
      at(c, n);
      if (n->id < 0) jj_fail(c, "TemplateRuntimeError: No test named '%s' found.", n->val.s->p);
      a.fname = n->val.s->p;
      r = jv_bool(jj_test_apply(c, n->id, v, &a));
      break;
    }
    case N_NOT: r = jv_bool(!jj_truthy(eval(c, s, n->a))); break;
    case N_NEG:
    case N_POS: {
      jv v = eval(c, s, n->a);
      at(c, n);
      if (v.t == JT_UNDEF) jj_fail_undefined(c, v);
      if (v.t == JT_FLOAT) r = jv_float(n->kind == N_NEG ? -v.f : v.f);
      else if (v.t == JT_INT || v.t == JT_BOOL) {
        if (n->kind == N_NEG && v.i == INT64_MIN) jj_fail(c, "OverflowError: integer result beyond 64 bits");
        r = jv_int(n->kind == N_NEG ? -v.i : v.i);
      } else {
        jj_fail(c, "TypeError: bad operand type for unary %c: '%s'", n->kind == N_NEG ? '-' : '+', jj_type_name(v));
      }
      break;
    }
    case N_BINOP: {
      jv a = eval(c, s, n->a);
      jv b = eval(c, s, n->b);
      at(c, n);
      r = jj_binop(c, n->op, a, b);
      break;
    }
    case N_AND: {
      jv a = eval(c, s, n->a);
      r = jj_truthy(a) ? eval(c, s, n->b) : a;
      break;
    }
    case N_OR: {
      jv a = eval(c, s, n->a);
      r = jj_truthy(a) ? a : eval(c, s, n->b);
      break;
    }
    case N_COMPARE: {
      jv left = eval(c, s, n->a);
      r = jv_bool(1);
      for (uint32_t i = 0; i < n->n_items; i++) {
        jv right = eval(c, s, n->items[i]);
        at(c, n);
        if (!compare(c, n->ops[i], left, right)) { r = jv_bool(0); break; }
        left = right;
      }
      break;
    }
    case N_CONDEXPR:
      if (jj_truthy(eval(c, s, n->a))) r = eval(c, s, n->b);
      else if (n->c) r = eval(c, s, n->c);
      else r = jj_undef_hint(c, "the inline if-expression on line %u evaluated to false and no else section was "
                                "defined.", n->line);
      break;
    case N_CONCAT: {
      jj_buf *b = jj_tmpbuf(c);
      for (uint32_t i = 0; i < n->n_items; i++) jj_write_str(c, b, eval(c, s, n->items[i]));
      r = jv_strv(jj_buf_pop(c, b));
      break;
    }
    default: jj_fail(c, "internal error: node %d is not an expression", n->kind);
  }
  leave(c);
  return r;
}

/* ---------------------------------------------------------------- assignment */
static void assign(jj_ctx *c, jj_scope *s, const jj_node *t, jv v) {
  if (t->kind == N_NAME) { scope_set(c, s, t->id, v); return; }
  if (t->kind == N_NSREF) {
    jv ns = lookup(c, s, t->id);
    at(c, t);
    if (ns.t != JT_NS) jj_fail(c, "TemplateRuntimeError: cannot assign attribute on non-namespace object");
    jj_dict_set(c, ns.d, t->val, v);
    return;
  }
  /* tuple / list unpacking */
  if (v.t == JT_UNDEF) jj_fail_undefined(c, v);
  if (!jj_is_iterable(v)) jj_fail(c, "TypeError: cannot unpack non-iterable %s object", jj_type_name(v));
  jj_list *items = jj_iter(c, v);
  if (items->n < t->n_items)
    jj_fail(c, "ValueError: not enough values to unpack (expected %u, got %zu)", t->n_items, items->n);
  if (items->n > t->n_items) jj_fail(c, "ValueError: too many values to unpack (expected %u)", t->n_items);
  for (uint32_t i = 0; i < t->n_items; i++) assign(c, s, t->items[i], items->v[i]);
}

/* ---------------------------------------------------------------- statements */
static void exec_for_items(jj_ctx *c, jj_scope *outer, const jj_node *n, jv iterable, int64_t depth0);

static void exec_stmt(jj_ctx *c, jj_scope *s, const jj_node *n) {
  enter(c);
  jj_charge(c, 1);
  at(c, n);
  switch (n->kind) {
    case N_OUTPUT:
      for (uint32_t i = 0; i < n->n_items; i++) {
        const jj_node *x = n->items[i];
        if (x->kind == N_DATA) jj_buf_put(c->out, x->val.s->p, x->val.s->len);
        else write_value(c, eval(c, s, x));
      }
      break;
    case N_IF:
      if (jj_truthy(eval(c, s, n->a))) exec_body(c, s, n->items, n->n_items);
      else exec_body(c, s, n->items2, n->n_items2);
      break;
    case N_FOR: exec_for_items(c, s, n, eval(c, s, n->b), 0); break;
    case N_SET: {
      jv v = eval(c, s, n->b);
      assign(c, s, n->a, v);
      break;
    }
    case N_SETBLOCK: {
      jj_buf *saved = c->out;
      c->out = jj_buf_push(c);
      exec_body(c, scope_new(c, s), n->items, n->n_items);
      jj_buf *b = c->out;
      c->out = saved;
      jv v = jv_strv(jj_buf_pop(c, b));
      v = apply_filter_chain(c, s, n->b, v);
      assign(c, s, n->a, v);
      break;
    }
    case N_MACRO: {
      for (jj_scope *p = s; p; p = p->parent) p->captured = 1;
      jj_func *f = jj_zalloc(&c->arena, sizeof *f);
      f->kind = JF_MACRO;
      f->node = n;
      f->closure = s;
      f->name = n->val.s->p;
      jv v = {.t = JT_FUNC};
      v.fn = f;
      scope_set(c, s, n->id, v);
      break;
    }
    case N_CALLBLOCK: {
      for (jj_scope *p = s; p; p = p->parent) p->captured = 1;
      jj_func *f = jj_zalloc(&c->arena, sizeof *f);
      f->kind = JF_MACRO;
      f->node = n;
      f->closure = s;
      f->name = "caller";
      jv caller = {.t = JT_FUNC};
      caller.fn = f;
      const jj_node *call = n->a;
      jv fn = eval(c, s, call->a);
      jj_args a = {0};
      eval_args(c, s, call, &a, 0);
      if (a.n_kw >= 32) jj_fail(c, "TypeError: too many keyword arguments");
      jj_str **kwn = jj_alloc_array(&c->arena, a.n_kw + 1, sizeof *kwn);
      jv *kwv = jj_alloc_array(&c->arena, a.n_kw + 1, sizeof *kwv);
      jj_copy(kwn, a.kwn, a.n_kw * sizeof *kwn);
      jj_copy(kwv, a.kwv, a.n_kw * sizeof *kwv);
      kwn[a.n_kw] = jj_str_c(&c->arena, "caller");
      kwv[a.n_kw] = caller;
      at(c, n);
      write_value(c, jj_call(c, fn, a.pos, a.n_pos, kwn, kwv, a.n_kw + 1));
      break;
    }
    case N_FILTERBLOCK: {
      jj_buf *saved = c->out;
      c->out = jj_buf_push(c);
      exec_body(c, scope_new(c, s), n->items, n->n_items);
      jj_buf *b = c->out;
      c->out = saved;
      jv v = apply_filter_chain(c, s, n->b, jv_strv(jj_buf_pop(c, b)));
      if (v.t != JT_STR) /* jinja2 yields the result into the output's "".join */
        jj_fail(c, "TypeError: sequence item 0: expected str instance, %s found", jj_type_name(v));
      write_value(c, v);
      break;
    }
    case N_WITH: {
      jj_scope *w = scope_new(c, s);
      for (uint32_t i = 0; i < n->a->n_items; i++) assign(c, w, n->a->items[i], eval(c, s, n->b->items[i]));
      exec_body(c, w, n->items, n->n_items);
      break;
    }
    case N_BREAK: c->loop_ctl = 1; break;
    case N_CONTINUE: c->loop_ctl = 2; break;
    case N_BLOCK:
    case N_GENERATION: exec_body(c, scope_new(c, s), n->items, n->n_items); break;
    case N_UNSUPPORTED:
      if (!strcmp(n->val.s->p, "autoescape"))
        jj_fail(c, "{%% autoescape %%} is not supported: chat templates render with autoescaping off");
      jj_fail(c, "TypeError: no loader for this environment specified ({%% %s %%} needs other templates; a chat "
                 "template is rendered on its own)", n->val.s->p);
    default: jj_fail(c, "internal error: node %d is not a statement", n->kind);
  }
  leave(c);
}

static void exec_body(jj_ctx *c, jj_scope *s, jj_node *const *body, uint32_t n) {
  for (uint32_t i = 0; i < n && !c->loop_ctl; i++) exec_stmt(c, s, body[i]);
}

static void exec_for_items(jj_ctx *c, jj_scope *outer, const jj_node *n, jv iterable, int64_t depth0) {
  at(c, n);
  if (iterable.t == JT_UNDEF && iterable.u && iterable.u->security) jj_fail_undefined(c, iterable);
  jj_list *src = jj_iter(c, iterable);
  jj_list *items = src;
  int32_t loop_id = jj_name_id(c->tpl, "loop", 4);
  if (n->c) { /* for x in y if cond: the filter sees the loop variables, not loop */
    items = jj_list_new(c, src->n, JL_LIST);
    jj_scope *f = scope_new(c, outer);
    for (size_t i = 0; i < src->n; i++) {
      if (f->captured) f = scope_new(c, outer);
      f->n = 0;
      assign(c, f, n->a, src->v[i]);
      if (jj_truthy(eval(c, f, n->c))) jj_list_push(c, items, src->v[i]);
    }
  }
  jj_loop *l = jj_zalloc(&c->arena, sizeof *l);
  l->items = items;
  l->depth0 = depth0;
  l->node = n;
  l->scope = outer;
  jv lv = {.t = JT_LOOP};
  lv.loop = l;
  jj_scope *it = NULL;
  /* jinja2 runs the else block unless an iteration reached the end of the body: with no items, and also when every
   * iteration left through break or continue */
  int completed = 0;
  for (size_t i = 0; i < items->n; i++) {
    jj_charge(c, 1);
    l->index0 = i;
    /* a fresh scope per iteration (jinja2: assignments do not carry over), reused when nothing closed over it, so a
     * long loop does not grow the arena */
    if (!it || it->captured) it = scope_new(c, outer);
    else it->n = 0;
    if (loop_id >= 0) scope_set(c, it, loop_id, lv);
    assign(c, it, n->a, items->v[i]);
    exec_body(c, it, n->items, n->n_items);
    completed |= !c->loop_ctl;
    if (c->loop_ctl == 1) { c->loop_ctl = 0; break; }
    c->loop_ctl = 0;
  }
  if (!completed && n->n_items2) exec_body(c, scope_new(c, outer), n->items2, n->n_items2);
}

/* ---------------------------------------------------------------- calls */
static jv call_macro(jj_ctx *c, jj_func *m, jj_args *a) {
  const jj_node *n = m->node;
  jj_scope *s = scope_new(c, m->closure);
  uint32_t np = n->n_names;
  int is_call_block = n->kind == N_CALLBLOCK;
  const char *name = m->name;
  int explicit_caller = 0;
  for (uint32_t i = 0; i < np; i++) explicit_caller |= !strcmp(n->names[i]->p, "caller");
  /* positional first, then keywords, then defaults (evaluated in the macro's scope, in order) */
  uint32_t ndef = n->n_items2, first_def = np - ndef;
  int found_caller = 0;
  for (uint32_t i = 0; i < np; i++) {
    jv v;
    int have = 0;
    if (i < a->n_pos) { v = a->pos[i]; have = 1; }
    else {
      for (size_t k = 0; k < a->n_kw; k++)
        if (!(a->used_kw & (1u << k)) && !strcmp(a->kwn[k]->p, n->names[i]->p)) {
          v = a->kwv[k];
          a->used_kw |= 1u << k;
          have = 1;
          break;
        }
      if (!strcmp(n->names[i]->p, "caller")) found_caller = 1;
    }
    if (!have) {
      if (i >= first_def) v = eval(c, s, n->items2[i - first_def]);
      else v = jj_undef_hint(c, "parameter '%s' was not provided", n->names[i]->p);
    }
    scope_set(c, s, n->ids[i], v);
  }
  if (a->n_pos >= np) found_caller = explicit_caller;
  int32_t id;
  if ((n->flags & NF_USES_CALLER) && !found_caller) {
    jv caller = jv_undef();
    int have = 0;
    for (size_t k = 0; k < a->n_kw; k++)
      if (!(a->used_kw & (1u << k)) && !strcmp(a->kwn[k]->p, "caller")) {
        caller = a->kwv[k];
        a->used_kw |= 1u << k;
        have = 1;
      }
    if (!have || caller.t == JT_NONE) caller = jj_undef_hint(c, "No caller defined");
    if ((id = jj_name_id(c->tpl, "caller", 6)) >= 0) scope_set(c, s, id, caller);
  }
  if (n->flags & NF_USES_KWARGS) {
    jj_dict *kw = jj_dict_new(c, 0);
    for (size_t k = 0; k < a->n_kw; k++)
      if (!(a->used_kw & (1u << k))) jj_dict_set(c, kw, jv_strv(a->kwn[k]), a->kwv[k]);
    if ((id = jj_name_id(c->tpl, "kwargs", 6)) >= 0) scope_set(c, s, id, jv_dictv(kw));
  } else {
    for (size_t k = 0; k < a->n_kw; k++)
      if (!(a->used_kw & (1u << k))) {
        if (!strcmp(a->kwn[k]->p, "caller"))
          jj_fail(c, "TypeError: macro '%s' was invoked with two values for the special caller argument. This is "
                     "most likely a bug.", name);
        jj_fail(c, "TypeError: macro '%s' takes no keyword argument '%s'", name, a->kwn[k]->p);
      }
  }
  if (n->flags & NF_USES_VARARGS) {
    jj_list *va = jj_list_new(c, a->n_pos > np ? a->n_pos - np : 0, JL_TUPLE);
    for (size_t i = np; i < a->n_pos; i++) va->v[va->n++] = a->pos[i];
    if ((id = jj_name_id(c->tpl, "varargs", 7)) >= 0) scope_set(c, s, id, jv_listv(va));
  } else if (a->n_pos > np) {
    jj_fail(c, "TypeError: macro '%s' takes not more than %u argument(s)", name, np);
  }
  (void)is_call_block;
  jj_buf *saved = c->out;
  int saved_ctl = c->loop_ctl;
  c->out = jj_buf_push(c);
  exec_body(c, s, n->items, n->n_items);
  jj_buf *b = c->out;
  c->out = saved;
  c->loop_ctl = saved_ctl;
  return jv_strv(jj_buf_pop(c, b));
}

jv jj_call(jj_ctx *c, jv fn, jv *pos, size_t n_pos, jj_str **kwn, jv *kwv, size_t n_kw) {
  jj_args a = {.pos = pos, .n_pos = n_pos, .kwn = kwn, .kwv = kwv, .n_kw = n_kw};
  if (n_kw > 32) jj_fail(c, "TypeError: too many keyword arguments (%zu)", n_kw);
  if (fn.t == JT_UNDEF) jj_fail_undefined(c, fn);
  if (fn.t == JT_OBJ && fn.o->kind == JO_JOINER) {
    jj_args_done(c, &a, 0);
    if (!fn.o->used) { fn.o->used = 1; return jj_cstrv(&c->arena, ""); }
    return fn.o->sep;
  }
  if (fn.t == JT_LOOP) { /* loop(iterable) in a recursive loop renders its body for the iterable */
    a.fname = "loop";
    jv *it = jj_arg(c, &a, 0, NULL);
    if (!(fn.loop->node->flags & NF_RECURSIVE))
      jj_fail(c, "TypeError: The loop must have the 'recursive' marker to be called recursively.");
    if (!it) jj_fail(c, "TypeError: __call__() missing 1 required positional argument: 'iterable'");
    jj_args_done(c, &a, 1);
    enter(c);
    jj_buf *saved = c->out;
    c->out = jj_buf_push(c);
    exec_for_items(c, fn.loop->scope, fn.loop->node, *it, fn.loop->depth0 + 1);
    jj_buf *b = c->out;
    c->out = saved;
    leave(c);
    return jv_strv(jj_buf_pop(c, b));
  }
  if (fn.t != JT_FUNC) jj_fail(c, "TypeError: '%s' object is not callable", jj_type_name(fn));
  jj_func *f = fn.fn;
  enter(c);
  jv r;
  switch (f->kind) {
    case JF_MACRO: r = call_macro(c, f, &a); break;
    case JF_BUILTIN:
      a.fname = f->name;
      r = jj_global_call(c, f->id, &a);
      break;
    default:
      a.fname = f->name;
      r = jj_method_call(c, f, &a);
      break;
  }
  leave(c);
  return r;
}

/* ---------------------------------------------------------------- entry point */
xpi_status jj_render(const jj_template *t, const jj_var *vars, size_t n_vars, const jj_render_opts *o, char **out,
                     size_t *len) {
  *out = NULL;
  *len = 0;
  jj_render_opts defaults = {0};
  if (!o) o = &defaults;
  jj_ctx *c = calloc(1, sizeof *c);
  if (!c) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "template: out of memory");
  c->tpl = t;
  c->opts = o;
  c->arena.err = &c->err;
  c->arena.limit = o->max_memory ? o->max_memory : (size_t)256 << 20;
  c->out_limit = o->max_output ? o->max_output : (size_t)64 << 20;
  c->work_limit = o->max_work ? o->max_work : 50000000ull;
  c->depth_limit = o->max_depth ? o->max_depth : 1000;
  xpi_status st = XPI_OK;
  if (setjmp(c->err.jb)) {
    st = (xpi_status)c->err.status;
    if (!c->err.line) { /* limits hit inside the arena or a buffer: where the evaluator was */
      c->err.line = c->line;
      c->err.col = c->col;
    }
    if (c->err.raised)
      xpi_err(st, "%s (raised by the template at line %u, column %u)", c->err.msg, c->err.line, c->err.col);
    else if (c->err.line)
      xpi_err(st, "line %u, column %u: %s", c->err.line, c->err.col, c->err.msg);
    else
      xpi_err(st, "%s", c->err.msg);
    goto done;
  }
  c->out = jj_buf_push(c);
  c->globals = scope_new(c, NULL);
  for (size_t i = 0; i < n_vars; i++) {
    if (!vars[i].name) { /* a JSON object: every key is a variable */
      jv obj = jj_json_parse(c, vars[i].json ? vars[i].json : "", vars[i].json ? vars[i].json_len : 0, "variables");
      if (obj.t != JT_DICT) jj_fail(c, "the variables must be a JSON object");
      for (size_t k = 0; k < obj.d->n; k++) {
        jv key = obj.d->e[k].key;
        int32_t id = jj_name_id(t, key.s->p, key.s->len);
        if (id >= 0) scope_set(c, c->globals, id, obj.d->e[k].val);
      }
      continue;
    }
    int32_t id = jj_name_id(t, vars[i].name, strlen(vars[i].name));
    if (id < 0) continue; /* the template never names it */
    jv v;
    if (vars[i].json) v = jj_json_parse(c, vars[i].json, vars[i].json_len, vars[i].name);
    else v = jj_strv(&c->arena, vars[i].str ? vars[i].str : "", vars[i].str ? vars[i].str_len : 0);
    scope_set(c, c->globals, id, v);
  }
  jj_scope *root = scope_new(c, c->globals);
  c->line = c->col = 0;
  exec_body(c, root, t->body, t->n_body);
  c->loop_ctl = 0;
  {
    jj_buf *b = c->out;
    char *p = b->p ? b->p : malloc(1);
    if (!p) jj_fail_status(c, XPI_ERR_OUT_OF_MEMORY, "out of memory");
    if (!b->p) p[0] = 0;
    *len = b->len;
    *out = p;
    b->p = NULL;
  }
done:
  for (size_t i = 0; i < c->n_bufs; i++) {
    free(c->bufs[i]->p);
    free(c->bufs[i]);
  }
  free(c->bufs);
  jj_arena_free(&c->arena);
  free(c);
  return st;
}
