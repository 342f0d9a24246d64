/* The parser: tokens to AST, function for function as jinja2's parser.py (same precedence, same statements,
 * same error texts), plus the loopcontrols tags and transformers' {% generation %}. Unknown filters and tests
 * fail here unless they sit in a conditional, where jinja2 defers the error to run time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "jinja/jj_internal.h"

#define MAX_NEST 400 /* parser recursion: deeper templates are refused, not overflowed */

typedef struct parser {
  jj_template *t;
  jj_arena *a;
  jj_token *tk;
  size_t n_tk, i;
  unsigned depth;
  int soft;      /* inside an if statement or conditional expression (of the current frame) */
  int in_loop;   /* break/continue allowed */
  jj_node *first_unknown; /* the first unknown filter or test parsed softly */
  uint32_t names_cap;
  /* for jinja2's end-of-template messages */
  const char *end_stack[MAX_NEST][4]; size_t n_end;
  const char *tag_stack[MAX_NEST]; size_t n_tag;
  jj_node *macro_stack[MAX_NEST]; size_t n_macro;
} parser;

/* ---------------------------------------------------------------- errors and tokens */
JJ_NORETURN static void failv(parser *p, const jj_token *at, const char *fmt, va_list ap) {
  char msg[900];
  vsnprintf(msg, sizeof msg, fmt, ap);
  jj_throw(p->a->err, XPI_ERR_FORMAT, at ? at->line : 0, at ? at->col : 0, "%s", msg);
}

JJ_NORETURN JJ_PRINTF(3, 4) static void fail_tok(parser *p, const jj_token *at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  failv(p, at, fmt, ap);
}

#define CUR (&p->tk[p->i])
JJ_NORETURN JJ_PRINTF(2, 3) static void fail(parser *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  failv(p, CUR, fmt, ap);
}

static void next(parser *p) {
  if (p->i + 1 < p->n_tk) p->i++;
}

static const jj_token *look(parser *p) { return p->i + 1 < p->n_tk ? &p->tk[p->i + 1] : &p->tk[p->n_tk - 1]; }

static int tok_is(const jj_token *k, int type, const char *s) {
  if (k->type != type) return 0;
  if (!s) return 1;
  size_t l = strlen(s);
  return k->len == l && !memcmp(k->s, s, l);
}
static int is_name(parser *p, const char *s) { return tok_is(CUR, TK_NAME, s); }
static int is_op(parser *p, const char *s) { return tok_is(CUR, TK_OP, s); }

/* jinja2's describe_token. */
static void describe(const jj_token *k, char *out, size_t cap) {
  switch (k->type) {
    case TK_EOF: snprintf(out, cap, "end of template"); break;
    case TK_BLOCK_END: snprintf(out, cap, "end of statement block"); break;
    case TK_VAR_END: snprintf(out, cap, "end of print statement"); break;
    case TK_BLOCK_BEGIN: snprintf(out, cap, "begin of statement block"); break;
    case TK_VAR_BEGIN: snprintf(out, cap, "begin of print statement"); break;
    case TK_DATA: snprintf(out, cap, "template data / text"); break;
    case TK_STRING: snprintf(out, cap, "string"); break;
    case TK_INT: snprintf(out, cap, "integer"); break;
    case TK_FLOAT: snprintf(out, cap, "float"); break;
    default: snprintf(out, cap, "%.*s", (int)(k->len < 200 ? k->len : 200), k->s); break;
  }
}

static void expect_op(parser *p, const char *op) {
  if (is_op(p, op)) { next(p); return; }
  char d[256];
  describe(CUR, d, sizeof d);
  if (CUR->type == TK_EOF) fail(p, "unexpected end of template, expected '%s'.", op);
  fail(p, "expected token '%s', got '%s'", op, d);
}

static void expect_type(parser *p, int type, const char *what) {
  if (CUR->type == type) { next(p); return; }
  char d[256];
  describe(CUR, d, sizeof d);
  if (CUR->type == TK_EOF) fail(p, "unexpected end of template, expected '%s'.", what);
  fail(p, "expected token '%s', got '%s'", what, d);
}

static const jj_token *expect_name(parser *p, const char *value) {
  const jj_token *k = CUR;
  if (tok_is(k, TK_NAME, value)) { next(p); return k; }
  char d[256];
  describe(k, d, sizeof d);
  if (k->type == TK_EOF) fail(p, "unexpected end of template, expected '%s'.", value ? value : "name");
  fail(p, "expected token '%s', got '%s'", value ? value : "name", d);
}

static void enter(parser *p) {
  if (++p->depth > MAX_NEST) fail(p, "the template nests expressions or blocks too deeply (more than %d)", MAX_NEST);
}
static void leave(parser *p) { p->depth--; }

/* ---------------------------------------------------------------- nodes */
static jj_node *mk(parser *p, int kind, const jj_token *at) {
  jj_node *n = jj_zalloc(p->a, sizeof *n);
  n->kind = (uint8_t)kind;
  n->line = at->line;
  n->col = at->col;
  n->id = -1;
  return n;
}

typedef struct nvec { jj_node **v; uint32_t n, cap; } nvec;
static void push(parser *p, nvec *v, jj_node *x) {
  if (v->n == v->cap) {
    uint32_t cap = v->cap ? v->cap * 2 : 4;
    jj_node **nv = jj_alloc_array(p->a, cap, sizeof *nv);
    if (v->n) memcpy(nv, v->v, v->n * sizeof *nv);
    v->v = nv;
    v->cap = cap;
  }
  v->v[v->n++] = x;
}

int32_t jj_name_id(const jj_template *t, const char *name, size_t len) {
  for (uint32_t i = 0; i < t->n_names; i++)
    if (strlen(t->names[i]) == len && !memcmp(t->names[i], name, len)) return (int32_t)i;
  return -1;
}

static int32_t intern(parser *p, const char *s, size_t len) {
  int32_t id = jj_name_id(p->t, s, len);
  if (id >= 0) return id;
  if (p->t->n_names == p->names_cap) {
    uint32_t cap = p->names_cap ? p->names_cap * 2 : 32;
    char **nv = jj_alloc_array(p->a, cap, sizeof *nv);
    if (p->t->n_names) memcpy(nv, p->t->names, p->t->n_names * sizeof *nv);
    p->t->names = nv;
    p->names_cap = cap;
  }
  p->t->names[p->t->n_names] = jj_strndup(p->a, s, len);
  return (int32_t)p->t->n_names++;
}

static jv tok_str(parser *p, const jj_token *k) { return jj_strv(p->a, k->s, k->len); }

/* ---------------------------------------------------------------- expressions */
static jj_node *parse_expression(parser *p, int with_condexpr);
static jj_node *parse_tuple(parser *p, int simplified, int with_condexpr, const char *extra_end,
                            int explicit_parens, int with_namespace);
static jj_node *parse_primary(parser *p, int with_namespace);
static jj_node *parse_postfix(parser *p, jj_node *node);
static jj_node *parse_filter_expr(parser *p, jj_node *node);
static jj_node *parse_unary(parser *p, int with_filter);

static void note_name_use(parser *p, const jj_token *k) {
  static const char *const special[] = {"caller", "varargs", "kwargs"};
  static const uint16_t flag[] = {NF_USES_CALLER, NF_USES_VARARGS, NF_USES_KWARGS};
  for (int s = 0; s < 3; s++)
    if (tok_is(k, TK_NAME, special[s]))
      for (size_t m = 0; m < p->n_macro; m++) p->macro_stack[m]->flags |= flag[s];
}

/* Call arguments into n (items: positional, names/items2: keywords, b: *args, c: **kwargs). */
static void parse_call_args(parser *p, jj_node *n) {
  const jj_token *open = CUR;
  expect_op(p, "(");
  nvec args = {0}, kwv = {0};
  jj_str **kwn = NULL;
  uint32_t n_kw = 0, kw_cap = 0;
  int require_comma = 0;
  while (!is_op(p, ")")) {
    if (CUR->type == TK_EOF) fail(p, "unexpected end of template, expected ')'.");
    if (require_comma) {
      expect_op(p, ",");
      if (is_op(p, ")")) break;
    }
    if (is_op(p, "*")) {
      if (n->b || n->c) fail_tok(p, open, "invalid syntax for function call expression");
      next(p);
      n->b = parse_expression(p, 1);
    } else if (is_op(p, "**")) {
      if (n->c) fail_tok(p, open, "invalid syntax for function call expression");
      next(p);
      n->c = parse_expression(p, 1);
    } else if (CUR->type == TK_NAME && tok_is(look(p), TK_OP, "=")) {
      if (n->c) fail_tok(p, open, "invalid syntax for function call expression");
      const jj_token *key = CUR;
      next(p);
      next(p);
      jj_node *v = parse_expression(p, 1);
      if (n_kw == kw_cap) {
        kw_cap = kw_cap ? kw_cap * 2 : 4;
        jj_str **nk = jj_alloc_array(p->a, kw_cap, sizeof *nk);
        if (n_kw) memcpy(nk, kwn, n_kw * sizeof *nk);
        kwn = nk;
      }
      kwn[n_kw++] = jj_str_new(p->a, key->s, key->len);
      push(p, &kwv, v);
    } else {
      if (n->b || n->c || n_kw) fail_tok(p, open, "invalid syntax for function call expression");
      push(p, &args, parse_expression(p, 1));
    }
    require_comma = 1;
  }
  expect_op(p, ")");
  n->items = args.v;
  n->n_items = args.n;
  n->items2 = kwv.v;
  n->n_items2 = kwv.n;
  n->names = kwn;
  n->n_names = n_kw;
}

static jj_node *parse_call(parser *p, jj_node *callee) {
  jj_node *n = mk(p, N_CALL, CUR);
  n->line = callee->line; /* errors point at the start of the call expression */
  n->col = callee->col;
  n->a = callee;
  parse_call_args(p, n);
  return n;
}

/* name(.name)* for filters and tests */
static jv dotted_name(parser *p, const jj_token **first) {
  const jj_token *k = expect_name(p, NULL);
  *first = k;
  size_t len = k->len;
  char buf[512];
  memcpy(buf, k->s, len < sizeof buf ? len : sizeof buf - 1);
  while (is_op(p, ".")) {
    next(p);
    const jj_token *m = expect_name(p, NULL);
    if (len + 1 + m->len < sizeof buf) {
      buf[len++] = '.';
      memcpy(buf + len, m->s, m->len);
      len += m->len;
    }
  }
  if (len >= sizeof buf) len = sizeof buf - 1;
  return jj_strv(p->a, buf, len);
}

static jj_node *parse_filter(parser *p, jj_node *node, int start_inline) {
  while (is_op(p, "|") || start_inline) {
    if (!start_inline) next(p);
    const jj_token *k;
    jv name = dotted_name(p, &k);
    jj_node *f = mk(p, N_FILTER, k);
    f->a = node;
    f->val = name;
    f->id = jj_filter_id(name.s->p, name.s->len);
    if (f->id < 0) {
      if (!p->soft) fail_tok(p, k, "No filter named '%s'.", name.s->p);
      f->flags |= NF_SOFT;
      if (!p->first_unknown) p->first_unknown = f;
    }
    if (is_op(p, "(")) parse_call_args(p, f);
    node = f;
    start_inline = 0;
  }
  return node;
}

static jj_node *parse_test(parser *p, jj_node *node) {
  const jj_token *is_tok = CUR;
  next(p);
  int negated = 0;
  if (is_name(p, "not")) { next(p); negated = 1; }
  const jj_token *k;
  jv name = dotted_name(p, &k);
  jj_node *t = mk(p, N_TEST, is_tok);
  t->a = node;
  t->val = name;
  t->id = jj_test_id(name.s->p, name.s->len);
  if (t->id < 0) {
    if (!p->soft) fail_tok(p, k, "No test named '%s'.", name.s->p);
    t->flags |= NF_SOFT;
    if (!p->first_unknown) p->first_unknown = t;
  }
  int ty = CUR->type;
  if (is_op(p, "(")) {
    parse_call_args(p, t);
  } else if ((ty == TK_NAME || ty == TK_STRING || ty == TK_INT || ty == TK_FLOAT || is_op(p, "[") || is_op(p, "{")) &&
             !is_name(p, "else") && !is_name(p, "or") && !is_name(p, "and")) {
    if (is_name(p, "is")) fail(p, "You cannot chain multiple tests with is");
    jj_node *arg = parse_postfix(p, parse_primary(p, 0));
    t->items = jj_alloc(p->a, sizeof *t->items);
    t->items[0] = arg;
    t->n_items = 1;
  }
  if (negated) {
    jj_node *n = mk(p, N_NOT, is_tok);
    n->a = t;
    return n;
  }
  return t;
}

static jj_node *parse_subscribed(parser *p) {
  const jj_token *start = CUR;
  jj_node *args[3] = {NULL, NULL, NULL};
  if (is_op(p, ":")) {
    next(p);
  } else {
    jj_node *node = parse_expression(p, 1);
    if (!is_op(p, ":")) return node;
    next(p);
    args[0] = node;
  }
  if (!is_op(p, ":") && !is_op(p, "]") && !is_op(p, ",")) args[1] = parse_expression(p, 1);
  if (is_op(p, ":")) {
    next(p);
    if (!is_op(p, "]") && !is_op(p, ",")) args[2] = parse_expression(p, 1);
  }
  jj_node *s = mk(p, N_SLICE, start);
  s->a = args[0];
  s->b = args[1];
  s->c = args[2];
  return s;
}

static jj_node *parse_subscript(parser *p, jj_node *node) {
  const jj_token *k = CUR;
  next(p);
  if (tok_is(k, TK_OP, ".")) {
    const jj_token *attr = CUR;
    next(p);
    if (attr->type == TK_NAME) {
      jj_node *g = mk(p, N_GETATTR, k);
      g->a = node;
      g->val = tok_str(p, attr);
      return g;
    }
    if (attr->type != TK_INT) fail_tok(p, attr, "expected name or number");
    jj_node *c = mk(p, N_CONST, attr);
    c->val = jv_int(attr->i);
    jj_node *g = mk(p, N_GETITEM, k);
    g->a = node;
    g->b = c;
    return g;
  }
  /* [ */
  nvec args = {0};
  while (!is_op(p, "]")) {
    if (CUR->type == TK_EOF) fail(p, "unexpected end of template, expected ']'.");
    if (args.n) expect_op(p, ",");
    push(p, &args, parse_subscribed(p));
  }
  expect_op(p, "]");
  jj_node *g = mk(p, N_GETITEM, k);
  g->a = node;
  if (args.n == 1) {
    g->b = args.v[0];
  } else {
    jj_node *tup = mk(p, N_TUPLE, k);
    tup->items = args.v;
    tup->n_items = args.n;
    g->b = tup;
  }
  return g;
}

static jj_node *parse_postfix(parser *p, jj_node *node) {
  for (;;) {
    if (is_op(p, ".") || is_op(p, "[")) node = parse_subscript(p, node);
    else if (is_op(p, "(")) node = parse_call(p, node);
    else return node;
  }
}

static jj_node *parse_filter_expr(parser *p, jj_node *node) {
  for (;;) {
    if (is_op(p, "|")) node = parse_filter(p, node, 0);
    else if (is_name(p, "is")) node = parse_test(p, node);
    else if (is_op(p, "(")) node = parse_call(p, node);
    else return node;
  }
}

static jj_node *parse_list(parser *p) {
  const jj_token *k = CUR;
  expect_op(p, "[");
  nvec items = {0};
  while (!is_op(p, "]")) {
    if (items.n) expect_op(p, ",");
    if (is_op(p, "]")) break;
    push(p, &items, parse_expression(p, 1));
  }
  expect_op(p, "]");
  jj_node *n = mk(p, N_LIST, k);
  n->items = items.v;
  n->n_items = items.n;
  return n;
}

static jj_node *parse_dict(parser *p) {
  const jj_token *k = CUR;
  expect_op(p, "{");
  nvec keys = {0}, vals = {0};
  while (!is_op(p, "}")) {
    if (keys.n) expect_op(p, ",");
    if (is_op(p, "}")) break;
    push(p, &keys, parse_expression(p, 1));
    expect_op(p, ":");
    push(p, &vals, parse_expression(p, 1));
  }
  expect_op(p, "}");
  jj_node *n = mk(p, N_DICT, k);
  n->items = keys.v;
  n->n_items = keys.n;
  n->items2 = vals.v;
  n->n_items2 = vals.n;
  return n;
}

static jj_node *parse_primary(parser *p, int with_namespace) {
  const jj_token *k = CUR;
  jj_node *n;
  enter(p);
  if (k->type == TK_NAME) {
    next(p);
    n = mk(p, N_CONST, k);
    if (tok_is(k, TK_NAME, "true") || tok_is(k, TK_NAME, "True")) n->val = jv_bool(1);
    else if (tok_is(k, TK_NAME, "false") || tok_is(k, TK_NAME, "False")) n->val = jv_bool(0);
    else if (tok_is(k, TK_NAME, "none") || tok_is(k, TK_NAME, "None")) n->val = jv_none();
    else if (with_namespace && is_op(p, ".")) {
      next(p);
      const jj_token *attr = expect_name(p, NULL);
      n->kind = N_NSREF;
      n->id = intern(p, k->s, k->len);
      n->val = tok_str(p, attr);
    } else {
      n->kind = N_NAME;
      n->id = intern(p, k->s, k->len);
      note_name_use(p, k);
    }
  } else if (k->type == TK_STRING) {
    next(p);
    size_t len = k->len;
    size_t j = p->i;
    while (p->tk[j].type == TK_STRING) len += p->tk[j++].len;
    char *buf = jj_alloc(p->a, len + 1);
    memcpy(buf, k->s, k->len);
    size_t o = k->len;
    while (CUR->type == TK_STRING) {
      memcpy(buf + o, CUR->s, CUR->len);
      o += CUR->len;
      next(p);
    }
    n = mk(p, N_CONST, k);
    n->val = jj_strv(p->a, buf, o);
  } else if (k->type == TK_INT || k->type == TK_FLOAT) {
    next(p);
    n = mk(p, N_CONST, k);
    n->val = k->type == TK_FLOAT ? jv_float(k->f) : jv_int(k->i);
  } else if (tok_is(k, TK_OP, "(")) {
    next(p);
    n = parse_tuple(p, 0, 1, NULL, 1, 0);
    expect_op(p, ")");
  } else if (tok_is(k, TK_OP, "[")) {
    n = parse_list(p);
  } else if (tok_is(k, TK_OP, "{")) {
    n = parse_dict(p);
  } else {
    char d[256];
    describe(k, d, sizeof d);
    if (k->type == TK_EOF) fail(p, "unexpected end of template");
    fail(p, "unexpected '%s'", d);
  }
  leave(p);
  return n;
}

static jj_node *parse_unary(parser *p, int with_filter) {
  const jj_token *k = CUR;
  jj_node *n;
  enter(p);
  if (is_op(p, "-") || is_op(p, "+")) {
    next(p);
    n = mk(p, tok_is(k, TK_OP, "-") ? N_NEG : N_POS, k);
    n->a = parse_unary(p, 0);
  } else {
    n = parse_primary(p, 0);
  }
  n = parse_postfix(p, n);
  if (with_filter) n = parse_filter_expr(p, n);
  leave(p);
  return n;
}

static jj_node *binop(parser *p, const jj_token *at, int op, jj_node *l, jj_node *r) {
  jj_node *n = mk(p, N_BINOP, at);
  n->op = (uint8_t)op;
  n->a = l;
  n->b = r;
  return n;
}

static jj_node *parse_pow(parser *p) {
  const jj_token *k = CUR;
  jj_node *left = parse_unary(p, 1);
  while (is_op(p, "**")) {
    next(p);
    left = binop(p, k, OP_POW, left, parse_unary(p, 1));
    k = CUR;
  }
  return left;
}

static jj_node *parse_math2(parser *p) {
  const jj_token *k = CUR;
  jj_node *left = parse_pow(p);
  for (;;) {
    int op = is_op(p, "*") ? OP_MUL : is_op(p, "/") ? OP_DIV : is_op(p, "//") ? OP_FLOORDIV : is_op(p, "%") ? OP_MOD : -1;
    if (op < 0) return left;
    next(p);
    left = binop(p, k, op, left, parse_pow(p));
    k = CUR;
  }
}

static jj_node *parse_concat(parser *p) {
  const jj_token *k = CUR;
  jj_node *first = parse_math2(p);
  if (!is_op(p, "~")) return first;
  nvec args = {0};
  push(p, &args, first);
  while (is_op(p, "~")) {
    next(p);
    push(p, &args, parse_math2(p));
  }
  jj_node *n = mk(p, N_CONCAT, k);
  n->items = args.v;
  n->n_items = args.n;
  return n;
}

static jj_node *parse_math1(parser *p) {
  const jj_token *k = CUR;
  jj_node *left = parse_concat(p);
  for (;;) {
    int op = is_op(p, "+") ? OP_ADD : is_op(p, "-") ? OP_SUB : -1;
    if (op < 0) return left;
    next(p);
    left = binop(p, k, op, left, parse_concat(p));
    k = CUR;
  }
}

static jj_node *parse_compare(parser *p) {
  const jj_token *k = CUR;
  jj_node *expr = parse_math1(p);
  nvec ops = {0};
  uint8_t opv[64];
  uint8_t *opsp = opv;
  uint32_t opcap = 64;
  for (;;) {
    int op = is_op(p, "==") ? CMP_EQ : is_op(p, "!=") ? CMP_NE : is_op(p, "<") ? CMP_LT : is_op(p, "<=") ? CMP_LE
           : is_op(p, ">") ? CMP_GT : is_op(p, ">=") ? CMP_GE : -1;
    if (op >= 0) {
      next(p);
    } else if (is_name(p, "in")) {
      next(p);
      op = CMP_IN;
    } else if (is_name(p, "not") && tok_is(look(p), TK_NAME, "in")) {
      next(p);
      next(p);
      op = CMP_NOTIN;
    } else {
      break;
    }
    if (ops.n == opcap) {
      uint8_t *nv = jj_alloc(p->a, opcap * 2);
      memcpy(nv, opsp, opcap);
      opsp = nv;
      opcap *= 2;
    }
    opsp[ops.n] = (uint8_t)op;
    push(p, &ops, parse_math1(p));
  }
  if (!ops.n) return expr;
  jj_node *n = mk(p, N_COMPARE, k);
  n->a = expr;
  n->items = ops.v;
  n->n_items = ops.n;
  n->ops = jj_alloc(p->a, ops.n);
  memcpy(n->ops, opsp, ops.n);
  return n;
}

static jj_node *parse_not(parser *p) {
  if (is_name(p, "not")) {
    const jj_token *k = CUR;
    next(p);
    enter(p);
    jj_node *n = mk(p, N_NOT, k);
    n->a = parse_not(p);
    leave(p);
    return n;
  }
  return parse_compare(p);
}

static jj_node *parse_and(parser *p) {
  const jj_token *k = CUR;
  jj_node *left = parse_not(p);
  while (is_name(p, "and")) {
    next(p);
    jj_node *n = mk(p, N_AND, k);
    n->a = left;
    n->b = parse_not(p);
    left = n;
    k = CUR;
  }
  return left;
}

static jj_node *parse_or(parser *p) {
  const jj_token *k = CUR;
  jj_node *left = parse_and(p);
  while (is_name(p, "or")) {
    next(p);
    jj_node *n = mk(p, N_OR, k);
    n->a = left;
    n->b = parse_and(p);
    left = n;
    k = CUR;
  }
  return left;
}

/* A conditional expression is a soft frame in jinja2 (unknown filters and tests in it fail only when run), but
 * that is known only after its first operand: operands are parsed softly and checked afterwards. */
static jj_node *parse_condexpr(parser *p) {
  int outer = p->soft;
  jj_node *saved = p->first_unknown;
  p->first_unknown = NULL;
  p->soft = 1;
  const jj_token *k = CUR;
  jj_node *expr1 = parse_or(p);
  int cond = 0;
  while (is_name(p, "if")) {
    cond = 1;
    next(p);
    jj_node *expr2 = parse_or(p);
    jj_node *expr3 = NULL;
    if (is_name(p, "else")) {
      next(p);
      expr3 = parse_condexpr(p);
    }
    jj_node *n = mk(p, N_CONDEXPR, k);
    n->a = expr2;
    n->b = expr1;
    n->c = expr3;
    expr1 = n;
    k = CUR;
  }
  p->soft = outer;
  jj_node *u = p->first_unknown;
  p->first_unknown = saved;
  if (!cond && !outer && u)
    fail_tok(p, &(jj_token){.line = u->line, .col = u->col}, "No %s named '%s'.",
             u->kind == N_FILTER ? "filter" : "test", u->val.s->p);
  if (outer && !saved) p->first_unknown = u;
  return expr1;
}

static jj_node *parse_expression(parser *p, int with_condexpr) {
  enter(p);
  jj_node *n = with_condexpr ? parse_condexpr(p) : parse_or(p);
  leave(p);
  return n;
}

static int is_tuple_end(parser *p, const char *extra_end) {
  int t = CUR->type;
  if (t == TK_VAR_END || t == TK_BLOCK_END || is_op(p, ")")) return 1;
  return extra_end && is_name(p, extra_end);
}

static jj_node *parse_tuple(parser *p, int simplified, int with_condexpr, const char *extra_end, int explicit_parens,
                            int with_namespace) {
  const jj_token *k = CUR;
  nvec args = {0};
  int is_tuple = 0;
  for (;;) {
    if (args.n) expect_op(p, ",");
    if (is_tuple_end(p, extra_end)) break;
    push(p, &args, simplified ? parse_primary(p, with_namespace) : parse_expression(p, with_condexpr));
    if (is_op(p, ",")) is_tuple = 1;
    else break;
  }
  if (!is_tuple) {
    if (args.n) return args.v[0];
    if (!explicit_parens) {
      char d[256];
      describe(CUR, d, sizeof d);
      fail(p, "Expected an expression, got '%s'", d);
    }
  }
  jj_node *n = mk(p, N_TUPLE, k);
  n->items = args.v;
  n->n_items = args.n;
  return n;
}

/* ---------------------------------------------------------------- statements */
static jj_node **subparse(parser *p, const char *const *end_tokens, uint32_t *n_out);

static int can_assign(const jj_node *t) {
  if (t->kind == N_NAME || t->kind == N_NSREF) return 1;
  if (t->kind == N_TUPLE || t->kind == N_LIST) {
    for (uint32_t i = 0; i < t->n_items; i++)
      if (!can_assign(t->items[i])) return 0;
    return 1;
  }
  return 0;
}

static const char *node_kind_name(const jj_node *t) {
  switch (t->kind) {
    case N_CONST: return "const";
    case N_CALL: return "call";
    case N_GETATTR: return "getattr";
    case N_GETITEM: return "getitem";
    case N_FILTER: return "filter";
    case N_TEST: return "test";
    default: return "expression";
  }
}

static jj_node *parse_assign_target(parser *p, int name_only, const char *extra_end, int with_namespace) {
  jj_node *t;
  if (name_only) {
    const jj_token *k = expect_name(p, NULL);
    t = mk(p, N_NAME, k);
    t->id = intern(p, k->s, k->len);
    t->val = tok_str(p, k);
  } else {
    t = parse_tuple(p, 1, 1, extra_end, 0, with_namespace);
  }
  if (!can_assign(t)) fail_tok(p, &(jj_token){.line = t->line, .col = t->col}, "can't assign to '%s'", node_kind_name(t));
  if (t->kind == N_NAME && t->val.t != JT_STR) t->val = jj_cstrv(p->a, p->t->names[t->id]);
  return t;
}

/* Parses a statement body up to one of end_tokens (leaving the current token on it). */
static jj_node **parse_statements(parser *p, const char *const *end_tokens, int drop_needle, uint32_t *n) {
  if (is_op(p, ":")) next(p);
  expect_type(p, TK_BLOCK_END, "end of statement block");
  jj_node **body = subparse(p, end_tokens, n);
  if (CUR->type == TK_EOF) {
    /* fail_eof: the unclosed tags */
    char msg[700];
    size_t o = (size_t)snprintf(msg, sizeof msg, "Unexpected end of template. Jinja was looking for the following tags: ");
    for (int e = 0; end_tokens[e] && o < sizeof msg; e++)
      o += (size_t)snprintf(msg + o, sizeof msg - o, "%s'%s'", e ? " or " : "", end_tokens[e]);
    if (o < sizeof msg) o += (size_t)snprintf(msg + o, sizeof msg - o, ".");
    if (p->n_tag && o < sizeof msg)
      snprintf(msg + o, sizeof msg - o, " The innermost block that needs to be closed is '%s'.", p->tag_stack[p->n_tag - 1]);
    fail(p, "%s", msg);
  }
  if (drop_needle) next(p);
  return body;
}

static void parse_signature(parser *p, jj_node *n) {
  expect_op(p, "(");
  nvec defaults = {0};
  int32_t ids[256];
  jj_str *names[256];
  uint32_t count = 0;
  while (!is_op(p, ")")) {
    if (count) expect_op(p, ",");
    jj_node *arg = parse_assign_target(p, 1, NULL, 0);
    if (is_op(p, "=")) {
      next(p);
      push(p, &defaults, parse_expression(p, 1));
    } else if (defaults.n) {
      fail(p, "non-default argument follows default argument");
    }
    if (count == 256) fail(p, "too many macro parameters");
    ids[count] = arg->id;
    names[count] = arg->val.s;
    count++;
  }
  expect_op(p, ")");
  n->ids = jj_alloc_array(p->a, count ? count : 1, sizeof *n->ids);
  n->names = jj_alloc_array(p->a, count ? count : 1, sizeof *n->names);
  memcpy(n->ids, ids, count * sizeof *ids);
  memcpy(n->names, names, count * sizeof *names);
  n->n_names = count;
  n->items2 = defaults.v;
  n->n_items2 = defaults.n;
}

static jj_node *parse_for(parser *p, const jj_token *k) {
  jj_node *n = mk(p, N_FOR, k);
  n->a = parse_assign_target(p, 0, "in", 0);
  expect_name(p, "in");
  n->b = parse_tuple(p, 0, 0, "recursive", 0, 0);
  int soft = p->soft, in_loop = p->in_loop;
  p->soft = 0;
  if (is_name(p, "if")) {
    next(p);
    n->c = parse_expression(p, 1);
  }
  if (is_name(p, "recursive")) {
    next(p);
    n->flags |= NF_RECURSIVE;
  }
  static const char *const ends[] = {"endfor", "else", NULL};
  p->in_loop = 1;
  n->items = parse_statements(p, ends, 0, &n->n_items);
  p->in_loop = in_loop;
  p->soft = soft;
  int is_else = is_name(p, "else");
  next(p);
  if (is_else) {
    static const char *const ends2[] = {"endfor", NULL};
    n->items2 = parse_statements(p, ends2, 1, &n->n_items2);
  }
  return n;
}

static jj_node *parse_if(parser *p, const jj_token *k) {
  int soft = p->soft;
  p->soft = 1;
  jj_node *result = mk(p, N_IF, k), *node = result;
  static const char *const ends[] = {"elif", "else", "endif", NULL};
  static const char *const ends2[] = {"endif", NULL};
  for (;;) {
    node->a = parse_tuple(p, 0, 0, NULL, 0, 0);
    node->items = parse_statements(p, ends, 0, &node->n_items);
    const jj_token *t = CUR;
    next(p);
    if (tok_is(t, TK_NAME, "elif")) {
      jj_node *e = mk(p, N_IF, CUR);
      node->items2 = jj_alloc(p->a, sizeof *node->items2);
      node->items2[0] = e;
      node->n_items2 = 1;
      node = e;
      continue;
    }
    if (tok_is(t, TK_NAME, "else")) node->items2 = parse_statements(p, ends2, 1, &node->n_items2);
    break;
  }
  p->soft = soft;
  return result;
}

static jj_node *parse_set(parser *p, const jj_token *k) {
  jj_node *target = parse_assign_target(p, 0, NULL, 1);
  if (is_op(p, "=")) {
    next(p);
    jj_node *n = mk(p, N_SET, k);
    n->a = target;
    n->b = parse_tuple(p, 0, 1, NULL, 0, 0);
    return n;
  }
  jj_node *n = mk(p, N_SETBLOCK, k);
  n->a = target;
  n->b = parse_filter(p, NULL, 0);
  int soft = p->soft;
  p->soft = 0;
  static const char *const ends[] = {"endset", NULL};
  n->items = parse_statements(p, ends, 1, &n->n_items);
  p->soft = soft;
  return n;
}

static jj_node *parse_macro_like(parser *p, jj_node *n, const char *end) {
  int soft = p->soft, in_loop = p->in_loop;
  p->soft = 0;
  p->in_loop = 0;
  if (p->n_macro == MAX_NEST) fail(p, "macros nested too deeply");
  p->macro_stack[p->n_macro++] = n;
  const char *ends[] = {end, NULL};
  n->items = parse_statements(p, ends, 1, &n->n_items);
  p->n_macro--;
  p->soft = soft;
  p->in_loop = in_loop;
  return n;
}

static jj_node *parse_statement(parser *p) {
  const jj_token *k = CUR;
  if (k->type != TK_NAME) fail(p, "tag name expected");
  enter(p);
  char tag[64];
  snprintf(tag, sizeof tag, "%.*s", (int)(k->len < 63 ? k->len : 63), k->s);
  if (p->n_tag < MAX_NEST) p->tag_stack[p->n_tag++] = jj_strndup(p->a, tag, strlen(tag));
  jj_node *n = NULL;
  if (!strcmp(tag, "for")) {
    next(p);
    n = parse_for(p, k);
  } else if (!strcmp(tag, "if")) {
    next(p);
    n = parse_if(p, k);
  } else if (!strcmp(tag, "set")) {
    next(p);
    n = parse_set(p, k);
  } else if (!strcmp(tag, "macro")) {
    next(p);
    n = mk(p, N_MACRO, k);
    jj_node *name = parse_assign_target(p, 1, NULL, 0);
    n->id = name->id;
    n->val = name->val;
    parse_signature(p, n);
    parse_macro_like(p, n, "endmacro");
  } else if (!strcmp(tag, "call")) {
    next(p);
    n = mk(p, N_CALLBLOCK, k);
    if (is_op(p, "(")) parse_signature(p, n);
    else {
      n->ids = jj_alloc(p->a, sizeof *n->ids);
      n->names = jj_alloc(p->a, sizeof *n->names);
    }
    n->a = parse_expression(p, 1);
    if (n->a->kind != N_CALL) fail_tok(p, k, "expected call");
    parse_macro_like(p, n, "endcall");
  } else if (!strcmp(tag, "filter")) {
    next(p);
    n = mk(p, N_FILTERBLOCK, k);
    n->b = parse_filter(p, NULL, 1);
    int soft = p->soft;
    p->soft = 0;
    static const char *const ends[] = {"endfilter", NULL};
    n->items = parse_statements(p, ends, 1, &n->n_items);
    p->soft = soft;
  } else if (!strcmp(tag, "with")) {
    next(p);
    n = mk(p, N_WITH, k);
    nvec targets = {0}, values = {0};
    while (CUR->type != TK_BLOCK_END) {
      if (targets.n) expect_op(p, ",");
      push(p, &targets, parse_assign_target(p, 0, NULL, 0));
      expect_op(p, "=");
      push(p, &values, parse_expression(p, 1));
    }
    n->a = mk(p, N_TUPLE, k);
    n->a->items = targets.v;
    n->a->n_items = targets.n;
    n->b = mk(p, N_TUPLE, k);
    n->b->items = values.v;
    n->b->n_items = values.n;
    int soft = p->soft;
    p->soft = 0;
    static const char *const ends[] = {"endwith", NULL};
    n->items = parse_statements(p, ends, 1, &n->n_items);
    p->soft = soft;
  } else if (!strcmp(tag, "block")) {
    next(p);
    n = mk(p, N_BLOCK, k);
    const jj_token *name = expect_name(p, NULL);
    if (is_name(p, "scoped")) next(p);
    if (is_name(p, "required")) next(p);
    if (is_op(p, "-"))
      fail(p, "Block names in Jinja have to be valid Python identifiers and may not contain hyphens, use an "
              "underscore instead.");
    static const char *const ends[] = {"endblock", NULL};
    n->items = parse_statements(p, ends, 1, &n->n_items);
    if (tok_is(CUR, TK_NAME, NULL) && CUR->len == name->len && !memcmp(CUR->s, name->s, name->len)) next(p);
  } else if (!strcmp(tag, "print")) {
    next(p);
    n = mk(p, N_OUTPUT, k);
    nvec items = {0};
    while (CUR->type != TK_BLOCK_END) {
      if (items.n) expect_op(p, ",");
      push(p, &items, parse_expression(p, 1));
    }
    n->items = items.v;
    n->n_items = items.n;
  } else if (!strcmp(tag, "break") || !strcmp(tag, "continue")) {
    if (!p->in_loop) fail(p, "'%s' outside loop", tag);
    next(p);
    n = mk(p, tag[0] == 'b' ? N_BREAK : N_CONTINUE, k);
  } else if (!strcmp(tag, "generation")) {
    next(p);
    n = mk(p, N_GENERATION, k);
    static const char *const ends[] = {"endgeneration", NULL};
    n->items = parse_statements(p, ends, 1, &n->n_items);
  } else if (!strcmp(tag, "extends") || !strcmp(tag, "include") || !strcmp(tag, "import") ||
             !strcmp(tag, "from")) {
    /* Parsed for their syntax; a template rendered from a string has no loader, so running one fails (as in
     * jinja2, where from_string templates cannot load others). */
    next(p);
    n = mk(p, N_UNSUPPORTED, k);
    n->val = jj_cstrv(p->a, tag);
    n->a = parse_expression(p, 1);
    while (CUR->type != TK_BLOCK_END && CUR->type != TK_EOF) next(p);
  } else if (!strcmp(tag, "autoescape")) {
    next(p);
    n = mk(p, N_UNSUPPORTED, k);
    n->val = jj_cstrv(p->a, tag);
    n->a = parse_expression(p, 1);
    static const char *const ends[] = {"endautoescape", NULL};
    n->items = parse_statements(p, ends, 1, &n->n_items);
  } else {
    /* fail_unknown_tag */
    p->n_tag--;
    char msg[700];
    size_t o = (size_t)snprintf(msg, sizeof msg, "Encountered unknown tag '%s'.", tag);
    if (p->n_end) {
      int expected = 0;
      for (size_t s = 0; s < p->n_end; s++)
        for (int e = 0; p->end_stack[s][e]; e++) expected |= !strcmp(p->end_stack[s][e], tag);
      o += (size_t)snprintf(msg + o, sizeof msg - o, expected ? " You probably made a nesting mistake. Jinja is "
                            "expecting this tag, but currently looking for " : " Jinja was looking for the following tags: ");
      for (int e = 0; p->end_stack[p->n_end - 1][e] && o < sizeof msg; e++)
        o += (size_t)snprintf(msg + o, sizeof msg - o, "%s'%s'", e ? " or " : "", p->end_stack[p->n_end - 1][e]);
      if (o < sizeof msg) o += (size_t)snprintf(msg + o, sizeof msg - o, ".");
    }
    if (p->n_tag && o < sizeof msg)
      snprintf(msg + o, sizeof msg - o, " The innermost block that needs to be closed is '%s'.", p->tag_stack[p->n_tag - 1]);
    fail_tok(p, k, "%s", msg);
  }
  p->n_tag--;
  leave(p);
  return n;
}

static jj_node **subparse(parser *p, const char *const *end_tokens, uint32_t *n_out) {
  nvec body = {0}, data = {0};
  if (end_tokens) {
    if (p->n_end == MAX_NEST) fail(p, "the template nests blocks too deeply");
    memset(p->end_stack[p->n_end], 0, sizeof p->end_stack[p->n_end]);
    for (int e = 0; end_tokens[e] && e < 3; e++) p->end_stack[p->n_end][e] = end_tokens[e];
    p->n_end++;
  }
  const jj_token *data_start = NULL;
  for (;;) {
    const jj_token *k = CUR;
    if (k->type == TK_DATA) {
      jj_node *d = mk(p, N_DATA, k);
      d->val = jj_strv(p->a, k->s, k->len);
      if (!data.n) data_start = k;
      push(p, &data, d);
      next(p);
    } else if (k->type == TK_VAR_BEGIN) {
      next(p);
      if (!data.n) data_start = k;
      push(p, &data, parse_tuple(p, 0, 1, NULL, 0, 0));
      expect_type(p, TK_VAR_END, "end of print statement");
    } else if (k->type == TK_BLOCK_BEGIN) {
      if (data.n) {
        jj_node *o = mk(p, N_OUTPUT, data_start);
        o->items = data.v;
        o->n_items = data.n;
        push(p, &body, o);
        data = (nvec){0};
      }
      next(p);
      if (end_tokens)
        for (int e = 0; end_tokens[e]; e++)
          if (is_name(p, end_tokens[e])) goto done;
      jj_node *st = parse_statement(p);
      push(p, &body, st);
      expect_type(p, TK_BLOCK_END, "end of statement block");
    } else if (k->type == TK_EOF) {
      if (data.n) {
        jj_node *o = mk(p, N_OUTPUT, data_start);
        o->items = data.v;
        o->n_items = data.n;
        push(p, &body, o);
      }
      break;
    } else {
      char d[256];
      describe(k, d, sizeof d);
      fail(p, "unexpected '%s'", d);
    }
  }
done:
  if (end_tokens) p->n_end--;
  *n_out = body.n;
  return body.v;
}

xpi_status jj_template_parse(const char *src, size_t len, jj_template **out) {
  *out = NULL;
  jj_template *t = calloc(1, sizeof *t);
  if (!t) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "chat template: out of memory");
  t->arena.err = &t->err;
  t->arena.limit = (size_t)64 << 20;
  parser *volatile p = NULL; /* set after setjmp: volatile, so the error path sees it */
  if (setjmp(t->err.jb)) {
    xpi_status st = (xpi_status)t->err.status;
    if (t->err.line)
      xpi_err(st, "template syntax error at line %u, column %u: %s", t->err.line, t->err.col, t->err.msg);
    else
      xpi_err(st, "template syntax error: %s", t->err.msg);
    free(p);
    jj_arena_free(&t->arena);
    free(t);
    return st;
  }
  /* valid UTF-8 first: everything after relies on it */
  for (size_t i = 0; i < len;) {
    unsigned char c = (unsigned char)src[i];
    size_t l = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    int ok = l && i + l <= len;
    for (size_t k = 1; ok && k < l; k++) ok = ((unsigned char)src[i + k] & 0xC0) == 0x80;
    if (ok && l == 3) {
      unsigned char d = (unsigned char)src[i + 1];
      ok = !(c == 0xE0 && d < 0xA0) && !(c == 0xED && d >= 0xA0);
    }
    if (ok && l == 4) {
      unsigned char d = (unsigned char)src[i + 1];
      ok = !(c == 0xF0 && d < 0x90) && !(c == 0xF4 && d >= 0x90);
    }
    if (!ok) jj_throw(&t->err, XPI_ERR_FORMAT, 0, 0, "the template is not valid UTF-8 (byte %zu)", i);
    i += l;
  }
  if (len > t->arena.limit / 8) jj_throw(&t->err, XPI_ERR_FORMAT, 0, 0, "the template is too large (%zu bytes)", len);
  jj_tokens tk = {0};
  jj_lex(&t->arena, src, len, &tk);
  p = calloc(1, sizeof *p);
  if (!p) jj_throw(&t->err, XPI_ERR_OUT_OF_MEMORY, 0, 0, "out of memory");
  p->t = t;
  p->a = &t->arena;
  p->tk = tk.v;
  p->n_tk = tk.n;
  t->body = subparse(p, NULL, &t->n_body);
  free(p);
  *out = t;
  return XPI_OK;
}

void jj_template_free(jj_template *t) {
  if (!t) return;
  jj_arena_free(&t->arena);
  free(t);
}
