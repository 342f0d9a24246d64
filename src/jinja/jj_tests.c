/* jinja2's tests (tests.py): `x is defined`, `x is string`, ... with Python's isinstance semantics (a bool is a
 * number, an undefined is iterable and a sequence, a dict is a mapping but a namespace is not). */
#include <string.h>

#include "jinja/jj_internal.h"

enum {
  T_ODD, T_EVEN, T_DIVISIBLEBY, T_DEFINED, T_UNDEFINED, T_FILTER, T_TEST, T_NONE, T_BOOLEAN, T_FALSE, T_TRUE,
  T_INTEGER, T_FLOAT, T_LOWER, T_UPPER, T_STRING, T_MAPPING, T_NUMBER, T_SEQUENCE, T_ITERABLE, T_CALLABLE,
  T_SAMEAS, T_ESCAPED, T_IN, T_EQ, T_EQ2, T_EQUALTO, T_NE, T_NE2, T_GT, T_GT2, T_GREATERTHAN, T_GE, T_GE2, T_LT,
  T_LT2, T_LESSTHAN, T_LE, T_LE2, T_N
};
static const char *const NAMES[T_N] = {
    "odd", "even", "divisibleby", "defined", "undefined", "filter", "test", "none", "boolean", "false", "true",
    "integer", "float", "lower", "upper", "string", "mapping", "number", "sequence", "iterable", "callable",
    "sameas", "escaped", "in", "==", "eq", "equalto", "!=", "ne", ">", "gt", "greaterthan", ">=", "ge", "<", "lt",
    "lessthan", "<=", "le"};

int jj_test_id(const char *name, size_t len) {
  for (int i = 0; i < T_N; i++)
    if (strlen(NAMES[i]) == len && !memcmp(NAMES[i], name, len)) return i;
  return -1;
}

static jv *need(jj_ctx *c, jj_args *a, const char *test) {
  jv *x = jj_arg(c, a, 0, NULL);
  if (!x) jj_fail(c, "TypeError: test '%s' needs an argument", test);
  jj_args_done(c, a, 1);
  return x;
}

static int str_pred(jj_ctx *c, jv v, int upper) {
  jj_str *s = jj_to_str(c, v);
  int any = 0;
  for (size_t i = 0; i < s->len;) {
    size_t adv;
    uint32_t cp = jj_u8_dec(s->p + i, &adv);
    if (upper ? jj_py_islower_cp(cp) : jj_py_isupper_cp(cp)) return 0;
    any |= upper ? jj_py_isupper_cp(cp) : jj_py_islower_cp(cp);
    i += adv;
  }
  return any;
}

int jj_test_apply(jj_ctx *c, int id, jv v, jj_args *a) {
  jj_charge(c, 1);
  switch (id) {
    case T_ODD:
    case T_EVEN: {
      jj_args_done(c, a, 0);
      jv r = jj_binop(c, OP_MOD, v, jv_int(2));
      return jj_eq(c, r, jv_int(id == T_ODD ? 1 : 0));
    }
    case T_DIVISIBLEBY: {
      jv *n = need(c, a, "divisibleby");
      return jj_eq(c, jj_binop(c, OP_MOD, v, *n), jv_int(0));
    }
    case T_DEFINED: jj_args_done(c, a, 0); return v.t != JT_UNDEF;
    case T_UNDEFINED: jj_args_done(c, a, 0); return v.t == JT_UNDEF;
    case T_FILTER:
      jj_args_done(c, a, 0);
      return v.t == JT_STR && jj_filter_id(v.s->p, v.s->len) >= 0;
    case T_TEST:
      jj_args_done(c, a, 0);
      return v.t == JT_STR && jj_test_id(v.s->p, v.s->len) >= 0;
    case T_NONE: jj_args_done(c, a, 0); return v.t == JT_NONE;
    case T_BOOLEAN: jj_args_done(c, a, 0); return v.t == JT_BOOL;
    case T_FALSE: jj_args_done(c, a, 0); return v.t == JT_BOOL && !v.i;
    case T_TRUE: jj_args_done(c, a, 0); return v.t == JT_BOOL && v.i;
    case T_INTEGER: jj_args_done(c, a, 0); return v.t == JT_INT || v.t == JT_BIGINT;
    case T_FLOAT: jj_args_done(c, a, 0); return v.t == JT_FLOAT;
    case T_LOWER: jj_args_done(c, a, 0); return str_pred(c, v, 0);
    case T_UPPER: jj_args_done(c, a, 0); return str_pred(c, v, 1);
    case T_STRING: jj_args_done(c, a, 0); return v.t == JT_STR;
    case T_MAPPING: jj_args_done(c, a, 0); return v.t == JT_DICT;
    case T_NUMBER: jj_args_done(c, a, 0); return jj_is_number(v) || v.t == JT_BIGINT;
    case T_SEQUENCE:
      jj_args_done(c, a, 0);
      return v.t == JT_UNDEF || v.t == JT_STR || v.t == JT_DICT ||
             (v.t == JT_LIST && (v.l->kind == JL_LIST || v.l->kind == JL_TUPLE || v.l->kind == JL_RANGE));
    case T_ITERABLE: jj_args_done(c, a, 0); return jj_is_iterable(v);
    case T_CALLABLE:
      jj_args_done(c, a, 0);
      return v.t == JT_FUNC || v.t == JT_UNDEF || v.t == JT_LOOP || (v.t == JT_OBJ && v.o->kind == JO_JOINER);
    case T_SAMEAS: {
      jv *o = need(c, a, "sameas");
      if (v.t != o->t) return 0;
      switch (v.t) {
        case JT_NONE: return 1;
        case JT_BOOL: return v.i == o->i;
        case JT_INT: return v.i == o->i && v.i >= -5 && v.i <= 256; /* CPython's cached small ints */
        case JT_UNDEF: return v.u == o->u;
        default: return v.p == o->p;
      }
    }
    case T_ESCAPED: jj_args_done(c, a, 0); return v.t == JT_STR && v.markup;
    case T_IN: return jj_contains(c, *need(c, a, "in"), v);
    case T_EQ: case T_EQ2: case T_EQUALTO: return jj_eq(c, v, *need(c, a, "=="));
    case T_NE: case T_NE2: return !jj_eq(c, v, *need(c, a, "!="));
    default: {
      jv *o = need(c, a, NAMES[id]);
      const char *op = id <= T_GREATERTHAN ? ">" : id <= T_GE2 ? ">=" : id <= T_LESSTHAN ? "<" : "<=";
      int r = jj_cmp(c, v, *o, op);
      if (r == 2) return 0;
      if (id <= T_GREATERTHAN) return r > 0;
      if (id <= T_GE2) return r >= 0;
      if (id <= T_LESSTHAN) return r < 0;
      return r <= 0;
    }
  }
}
