/* Global functions: jinja2's range (the sandbox's, at most 100000 items), dict, namespace, cycler, joiner, and the
 * two transformers adds: raise_exception(message) and strftime_now(format) on the caller's clock. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "jinja/jj_internal.h"

enum { G_RANGE, G_DICT, G_NAMESPACE, G_CYCLER, G_JOINER, G_RAISE, G_STRFTIME, G_COUNT };
static const char *const NAMES[G_COUNT] = {"range", "dict", "namespace", "cycler", "joiner", "raise_exception",
                                           "strftime_now"};

int jj_global_id(const char *name) {
  for (int i = 0; i < G_COUNT; i++)
    if (!strcmp(NAMES[i], name)) return i;
  return -1;
}

const char *jj_global_name(int id) { return NAMES[id]; }

static int64_t as_index(jj_ctx *c, jv v) {
  if (v.t == JT_UNDEF) jj_fail_undefined(c, v);
  if (v.t != JT_INT && v.t != JT_BOOL)
    jj_fail(c, "TypeError: '%s' object cannot be interpreted as an integer", jj_type_name(v));
  return v.i;
}

/* dict(*args, **kwargs) into d (dict() and namespace()). */
static void fill_dict(jj_ctx *c, jj_dict *d, jj_args *a, const char *fn) {
  if (a->n_pos > 1) jj_fail(c, "TypeError: %s expected at most 1 argument, got %zu", fn, a->n_pos);
  if (a->n_pos) {
    jv src = a->pos[0];
    if (src.t == JT_DICT || src.t == JT_NS) {
      for (size_t i = 0; i < src.d->n; i++) jj_dict_set(c, d, src.d->e[i].key, src.d->e[i].val);
    } else {
      if (src.t == JT_UNDEF) jj_fail_undefined(c, src);
      jj_list *l = jj_iter(c, src);
      for (size_t i = 0; i < l->n; i++) {
        jv e = l->v[i];
        jj_list *kv = e.t == JT_LIST || e.t == JT_STR ? jj_iter(c, e) : NULL;
        if (!kv) jj_fail(c, "TypeError: cannot convert dictionary update sequence element #%zu to a sequence", i);
        if (kv->n != 2)
          jj_fail(c, "ValueError: dictionary update sequence element #%zu has length %zu; 2 is required", i, kv->n);
        jj_dict_set(c, d, kv->v[0], kv->v[1]);
      }
    }
  }
  for (size_t k = 0; k < a->n_kw; k++) jj_dict_set(c, d, jv_strv(a->kwn[k]), a->kwv[k]);
}

jv jj_global_call(jj_ctx *c, int id, jj_args *a) {
  switch (id) {
    case G_RANGE: {
      if (a->n_kw) jj_fail(c, "TypeError: range() takes no keyword arguments");
      if (!a->n_pos || a->n_pos > 3) jj_fail(c, "TypeError: range expected at most 3 arguments, got %zu", a->n_pos);
      int64_t start = 0, stop, step = 1;
      if (a->n_pos == 1) stop = as_index(c, a->pos[0]);
      else {
        start = as_index(c, a->pos[0]);
        stop = as_index(c, a->pos[1]);
        if (a->n_pos == 3) step = as_index(c, a->pos[2]);
      }
      if (!step) jj_fail(c, "ValueError: range() arg 3 must not be zero");
      double count = step > 0 ? (stop > start ? ((double)stop - (double)start + (double)step - 1) / (double)step : 0)
                              : (start > stop ? ((double)start - (double)stop - (double)step - 1) / -(double)step : 0);
      if (count > 100000)
        jj_fail(c, "OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
      size_t n = (size_t)count;
      jj_list *l = jj_list_new(c, n, JL_RANGE);
      for (size_t i = 0; i < n; i++) l->v[i] = jv_int(start + (int64_t)i * step);
      l->n = n;
      l->r_start = start;
      l->r_stop = stop;
      l->r_step = step;
      jj_charge(c, n);
      return jv_listv(l);
    }
    case G_DICT: {
      jj_dict *d = jj_dict_new(c, a->n_kw);
      fill_dict(c, d, a, "dict");
      return jv_dictv(d);
    }
    case G_NAMESPACE: {
      jj_dict *d = jj_dict_new(c, a->n_kw);
      fill_dict(c, d, a, "namespace");
      jv v = {.t = JT_NS};
      v.d = d;
      return v;
    }
    case G_CYCLER: {
      if (a->n_kw) jj_fail(c, "TypeError: cycler() takes no keyword arguments");
      if (!a->n_pos) jj_fail(c, "RuntimeError: at least one item has to be provided");
      jj_obj *o = jj_zalloc(&c->arena, sizeof *o);
      o->kind = JO_CYCLER;
      o->items = jj_list_new(c, a->n_pos, JL_TUPLE);
      jj_copy(o->items->v, a->pos, a->n_pos * sizeof(jv));
      o->items->n = a->n_pos;
      jv v = {.t = JT_OBJ};
      v.o = o;
      return v;
    }
    case G_JOINER: {
      jv *sep = jj_arg(c, a, 0, "sep");
      jj_args_done(c, a, 1);
      jj_obj *o = jj_zalloc(&c->arena, sizeof *o);
      o->kind = JO_JOINER;
      o->sep = sep ? *sep : jj_cstrv(&c->arena, ", ");
      jv v = {.t = JT_OBJ};
      v.o = o;
      return v;
    }
    case G_RAISE: {
      jv *msg = jj_arg(c, a, 0, "message");
      jj_args_done(c, a, 1);
      if (!msg) jj_fail(c, "TypeError: raise_exception() missing 1 required positional argument: 'message'");
      jj_str *s = jj_to_str(c, *msg);
      c->err.raised = 1;
      jj_fail(c, "%s", s->p);
    }
    case G_STRFTIME: {
      jv *fmt = jj_arg(c, a, 0, NULL);
      jj_args_done(c, a, 1);
      if (!fmt) jj_fail(c, "TypeError: strftime_now() missing 1 required positional argument: 'format'");
      if (fmt->t == JT_UNDEF) jj_fail_undefined(c, *fmt);
      if (fmt->t != JT_STR)
        jj_fail(c, "TypeError: strftime() argument 1 must be str, not %s", jj_type_name(*fmt));
      if (fmt->s->len > 1000) jj_fail(c, "ValueError: strftime format too long");
      time_t now = c->opts->now ? (time_t)c->opts->now : time(NULL);
      struct tm tm;
      if (!localtime_r(&now, &tm)) jj_fail(c, "OverflowError: the clock is out of range");
      /* %f (microseconds) is Python's own; the clock has whole seconds */
      jj_buf *f = jj_tmpbuf(c);
      for (size_t i = 0; i < fmt->s->len; i++) {
        if (fmt->s->p[i] == '%' && i + 1 < fmt->s->len) {
          if (fmt->s->p[i + 1] == 'f') { jj_buf_puts(f, "000000"); i++; continue; }
          jj_buf_putc(f, '%');
          jj_buf_putc(f, fmt->s->p[++i]);
          continue;
        }
        jj_buf_putc(f, fmt->s->p[i]);
      }
      char out[4096];
      size_t n = f->p ? strftime(out, sizeof out, f->p, &tm) : 0;
      jj_buf_pop(c, f);
      return jj_strv(&c->arena, out, n);
    }
    default: jj_fail(c, "internal error: global %d", id);
  }
}
