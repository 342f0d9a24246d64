/* The Jinja engine's internals, shared by its files: the arena every parse and render allocates from, values with
 * Python semantics, the AST, and the render context. Errors leave through longjmp to the parse or render entry
 * point (everything is in the arena or registered with the context, so nothing leaks on the way out). */
#ifndef XPI_JINJA_INTERNAL_H
#define XPI_JINJA_INTERNAL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "jinja/jinja.h"

#if defined(__GNUC__)
#define JJ_NORETURN __attribute__((noreturn))
#define JJ_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define JJ_NORETURN
#define JJ_PRINTF(a, b)
#endif

/* ------------------------------------------------------------------ errors */
/* Where a failure goes: the message, its position (0 = unknown) and the jump back to the entry point. */
typedef struct jj_err {
  jmp_buf jb;
  char msg[1024];
  uint32_t line, col;
  int status; /* xpi_status of the failure */
  int raised; /* raise_exception: msg is the template's own message */
  int limit;  /* a limit (time, memory, output, depth) stopped the render */
} jj_err;

JJ_NORETURN void jj_throw(jj_err *e, int status, uint32_t line, uint32_t col, const char *fmt, ...) JJ_PRINTF(5, 6);

/* memcpy that accepts NULL when n is 0 (empty lists have no storage). */
static inline void jj_copy(void *dst, const void *src, size_t n) {
  if (n) __builtin_memcpy(dst, src, n);
}

/* ------------------------------------------------------------------ arena */
typedef struct jj_chunk { struct jj_chunk *next; size_t used, cap; } jj_chunk;
typedef struct jj_arena {
  jj_chunk *head;
  size_t total, limit; /* bytes allocated from the system, and the most allowed */
  jj_err *err;         /* out of memory or over the limit throws here */
} jj_arena;

void *jj_alloc(jj_arena *a, size_t n);           /* 16-byte aligned, uninitialized; throws on failure */
void *jj_zalloc(jj_arena *a, size_t n);
void *jj_alloc_array(jj_arena *a, size_t n, size_t size); /* n * size with an overflow check */
char *jj_strndup(jj_arena *a, const char *s, size_t n);  /* NUL-terminated copy */
void jj_arena_free(jj_arena *a);

/* A growable byte buffer on malloc (output and string building); cap bounds its size. */
typedef struct jj_buf { char *p; size_t len, cap, limit; jj_err *err; } jj_buf;
void jj_buf_put(jj_buf *b, const char *s, size_t n);
void jj_buf_putc(jj_buf *b, char c);
void jj_buf_puts(jj_buf *b, const char *s);
void jj_buf_printf(jj_buf *b, const char *fmt, ...) JJ_PRINTF(2, 3);
void jj_buf_cp(jj_buf *b, uint32_t cp); /* one code point as UTF-8 */

/* ------------------------------------------------------------------ values */
typedef enum {
  JT_UNDEF, JT_NONE, JT_BOOL, JT_INT, JT_FLOAT, JT_STR, JT_LIST, JT_DICT, JT_NS, JT_FUNC, JT_LOOP, JT_OBJ,
  JT_BIGINT /* an integer beyond 64 bits from the caller's JSON: kept as its digits (s), printed exactly; arithmetic
               on it is refused */
} jj_type;

/* Sequence kinds: what Python type a jj_list stands for (repr, JSON, indexing and reuse differ). */
enum {
  JL_LIST, JL_TUPLE, JL_RANGE, JL_GEN, JL_REVITER, JL_ITEMS, JL_KEYS, JL_VALUES
};

typedef struct jj_str { size_t len; size_t ncp; /* code points; SIZE_MAX until counted */ char p[]; } jj_str;
struct jj_list;
struct jj_dict;
struct jj_func;
struct jj_undef;
struct jj_loop;
struct jj_obj;

typedef struct jv {
  uint8_t t;      /* jj_type */
  uint8_t markup; /* JT_STR: a markupsafe.Markup (|safe, |escape) */
  union {
    int64_t i;    /* JT_INT, JT_BOOL */
    double f;
    jj_str *s;
    struct jj_list *l;
    struct jj_dict *d; /* JT_DICT, JT_NS */
    struct jj_func *fn;
    struct jj_undef *u; /* NULL: plain Undefined */
    struct jj_loop *loop;
    struct jj_obj *o;
    void *p;      /* identity of any heap value */
  };
} jv;

typedef struct jj_list {
  size_t n, cap;
  jv *v;
  uint8_t kind;     /* JL_* */
  uint8_t consumed; /* JL_GEN / JL_REVITER: iterated once already (Python iterators are single use) */
  const char *gen_name; /* JL_GEN: the generator function's name, for repr */
  const char *deferred_error; /* JL_GEN: what iterating it raises (jinja2's generators fail only when run) */
  int64_t r_start, r_stop, r_step; /* JL_RANGE */
  const char *const *fields;       /* a named tuple's field names (groupby's grouper, list), or NULL */
} jj_list;

typedef struct jj_entry { jv key, val; } jj_entry;
typedef struct jj_dict {
  size_t n, cap;
  jj_entry *e;
  uint32_t *index; size_t index_cap; /* open-addressing slots (entry+1, 0 empty) once n is large */
} jj_dict;

/* Undefined: why it is undefined, for the error its use raises. */
typedef struct jj_undef {
  const char *hint;     /* a complete message, or NULL */
  const char *obj_type; /* "dict object", "None", ... (NULL: a missing name) */
  jv name;              /* the missing name, attribute (str) or index (int) */
  uint8_t security;     /* SecurityError (the sandbox's refusal) rather than UndefinedError */
} jj_undef;

struct jj_node;
struct jj_scope;

/* Callables. */
enum {
  JF_BUILTIN,   /* a global function: id indexes jj_globals.c's table */
  JF_METHOD,    /* a bound method of self: id indexes jj_methods.c's (negative: loop and cycler methods) */
  JF_MACRO      /* a macro or a call block's caller */
};
typedef struct jj_func {
  uint8_t kind;
  int id;
  jv self;
  const struct jj_node *node;   /* JF_MACRO: N_MACRO / N_CALLBLOCK */
  struct jj_scope *closure;     /* JF_MACRO: the scope it was defined in */
  const char *name;             /* for messages and repr */
  struct jj_loop *loop;         /* loop.cycle / loop.changed: their loop */
} jj_func;

typedef struct jj_loop {
  jj_list *items;       /* what is iterated (filtered) */
  size_t index0;
  int64_t depth0;
  jv last_changed; int has_changed;
  const struct jj_node *node; /* recursive loops: the N_FOR */
  struct jj_scope *scope;
} jj_loop;

/* Stateful helper objects from globals. */
enum { JO_CYCLER, JO_JOINER };
typedef struct jj_obj {
  uint8_t kind;
  jj_list *items; size_t pos; /* cycler */
  jv sep; int used;           /* joiner */
} jj_obj;

static inline jv jv_undef(void) { jv v = {.t = JT_UNDEF}; v.u = NULL; return v; }
static inline jv jv_none(void) { jv v = {.t = JT_NONE}; v.i = 0; return v; }
static inline jv jv_bool(int b) { jv v = {.t = JT_BOOL}; v.i = b != 0; return v; }
static inline jv jv_int(int64_t i) { jv v = {.t = JT_INT}; v.i = i; return v; }
static inline jv jv_float(double f) { jv v = {.t = JT_FLOAT}; v.f = f; return v; }
static inline jv jv_strv(jj_str *s) { jv v = {.t = JT_STR}; v.s = s; return v; }
static inline jv jv_listv(jj_list *l) { jv v = {.t = JT_LIST}; v.l = l; return v; }
static inline jv jv_dictv(jj_dict *d) { jv v = {.t = JT_DICT}; v.d = d; return v; }

/* ------------------------------------------------------------------ AST */
enum {
  /* expressions */
  N_CONST, N_NAME, N_LIST, N_TUPLE, N_DICT, N_GETATTR, N_GETITEM, N_SLICE, N_CALL, N_FILTER, N_TEST, N_NOT,
  N_NEG, N_POS, N_BINOP, N_AND, N_OR, N_COMPARE, N_CONDEXPR, N_CONCAT, N_NSREF,
  /* statements */
  N_OUTPUT, N_DATA, N_IF, N_FOR, N_SET, N_SETBLOCK, N_MACRO, N_CALLBLOCK, N_FILTERBLOCK, N_WITH, N_BREAK,
  N_CONTINUE, N_BLOCK, N_GENERATION, N_UNSUPPORTED
};
enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW };
enum { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_IN, CMP_NOTIN };

/* Node flags. */
enum {
  NF_RECURSIVE = 1,     /* N_FOR */
  NF_USES_CALLER = 2,   /* N_MACRO: the body reads caller / varargs / kwargs */
  NF_USES_VARARGS = 4,
  NF_USES_KWARGS = 8,
  NF_SOFT = 16          /* N_FILTER / N_TEST with an unknown name inside a conditional: fails when run */
};

/* One AST node; which fields mean what depends on kind (see jj_parse.c). */
typedef struct jj_node {
  uint8_t kind, op;
  uint16_t flags;
  uint32_t line, col;
  struct jj_node *a, *b, *c;
  struct jj_node **items; uint32_t n_items;   /* body, positional args, list items, compare operands */
  struct jj_node **items2; uint32_t n_items2; /* else body, kwarg values, dict values, macro defaults */
  jj_str **names; uint32_t n_names;           /* kwarg names, macro parameters */
  uint8_t *ops;                               /* N_COMPARE: CMP_* per operand */
  int32_t id;    /* N_NAME/N_NSREF/N_MACRO: interned name; N_FILTER/N_TEST: table index (-1 unknown) */
  int32_t *ids;  /* interned parameter names (macros, call blocks) */
  jv val;        /* N_CONST value; N_DATA text; N_GETATTR/N_NSREF attribute; N_FILTER/N_TEST name */
} jj_node;

struct jj_template {
  jj_arena arena;
  jj_node **body; uint32_t n_body;
  char **names; uint32_t n_names; /* interned identifiers */
  jj_err err;
};

/* Interning (jj_parse.c): the id of a name in a template, or -1. */
int32_t jj_name_id(const jj_template *t, const char *name, size_t len);

/* ------------------------------------------------------------------ lexer */
enum {
  TK_EOF, TK_DATA, TK_VAR_BEGIN, TK_VAR_END, TK_BLOCK_BEGIN, TK_BLOCK_END, TK_NAME, TK_STRING, TK_INT, TK_FLOAT,
  TK_OP
};
typedef struct jj_token {
  uint8_t type;
  uint32_t line, col;
  const char *s; size_t len; /* TK_DATA / TK_NAME / TK_OP text; TK_STRING unescaped value */
  int64_t i; double f;
} jj_token;
typedef struct jj_tokens { jj_token *v; size_t n, cap; } jj_tokens;
/* Tokenizes src (valid UTF-8) as jinja2's lexer with trim_blocks and lstrip_blocks; throws on errors. */
void jj_lex(jj_arena *a, const char *src, size_t len, jj_tokens *out);

/* ------------------------------------------------------------------ strings (jj_str.c) */
jj_str *jj_str_new(jj_arena *a, const char *s, size_t n);
jj_str *jj_str_c(jj_arena *a, const char *s);
jv jj_strv(jj_arena *a, const char *s, size_t n);
jv jj_cstrv(jj_arena *a, const char *s);
size_t jj_str_ncp(jj_str *s);                      /* code points */
int jj_is_ascii(const char *s, size_t n);
/* UTF-8 helpers (input is valid UTF-8). */
size_t jj_u8_len(unsigned char c);                 /* bytes of the character that starts with c */
uint32_t jj_u8_dec(const char *s, size_t *adv);    /* decodes one character */
size_t jj_u8_enc(uint32_t cp, char *out);          /* up to 4 bytes */
size_t jj_u8_offset(const jj_str *s, size_t cp_index); /* byte offset of a code point index */
int jj_py_isspace(uint32_t cp);                    /* Python str.isspace for one character */
int jj_py_isprintable(uint32_t cp);
int jj_py_isalnum(uint32_t cp);
int jj_py_isalpha(uint32_t cp);
int jj_py_isdigit(uint32_t cp);
int jj_py_isdecimal(uint32_t cp);
int jj_py_isnumeric(uint32_t cp);
int jj_py_islower_cp(uint32_t cp);
int jj_py_isupper_cp(uint32_t cp);
int jj_py_iscased(uint32_t cp);
uint32_t jj_py_lower(uint32_t cp);
uint32_t jj_py_upper(uint32_t cp);
uint32_t jj_py_title(uint32_t cp);
/* Python's str.lower/upper with the full mappings Python applies (ß -> SS). */
void jj_buf_lower(jj_buf *b, const char *s, size_t n);
void jj_buf_upper(jj_buf *b, const char *s, size_t n);
void jj_lower_at(jj_buf *b, const char *s, size_t n, size_t i, size_t adv, uint32_t c); /* one char, in context */
void jj_title_cp(jj_buf *b, uint32_t c);
void jj_buf_casefold(jj_buf *b, const char *s, size_t n);

/* ------------------------------------------------------------------ render context */
typedef struct jj_sym { int32_t id; jv v; } jj_sym;
typedef struct jj_scope {
  struct jj_scope *parent;
  jj_sym *v;
  uint32_t n, cap;
  uint8_t captured; /* a macro or caller closes over it: a loop must not reuse it for the next iteration */
} jj_scope;

typedef struct jj_ctx {
  jj_arena arena;
  jj_err err;
  const jj_template *tpl;
  const jj_render_opts *opts;
  jj_buf *out;                 /* the buffer {{ }} and data write to (captures push a new one) */
  jj_buf **bufs; size_t n_bufs, cap_bufs; /* every live buffer, freed on the way out */
  jj_scope *globals;           /* the caller's variables */
  uint64_t work, work_limit;   /* evaluation steps plus bytes processed */
  unsigned depth, depth_limit; /* evaluator recursion */
  int loop_ctl;                /* 1 break, 2 continue, pending */
  uint32_t line, col;          /* the node being evaluated, for errors */
  size_t out_limit;
} jj_ctx;

JJ_NORETURN void jj_fail(jj_ctx *c, const char *fmt, ...) JJ_PRINTF(2, 3);
JJ_NORETURN void jj_fail_status(jj_ctx *c, int status, const char *fmt, ...) JJ_PRINTF(3, 4);
JJ_NORETURN void jj_fail_limit(jj_ctx *c, const char *fmt, ...) JJ_PRINTF(2, 3); /* a render limit was reached */
/* Raises the error an Undefined's use raises (UndefinedError, or the sandbox's SecurityError). */
JJ_NORETURN void jj_fail_undefined(jj_ctx *c, jv u);
void jj_charge(jj_ctx *c, size_t units);  /* counts work; fails past the limit */
jj_buf *jj_buf_push(jj_ctx *c);            /* a new capture buffer registered for cleanup */
jj_str *jj_buf_pop(jj_ctx *c, jj_buf *b);  /* its text as an arena string; the buffer is released */
jj_buf *jj_tmpbuf(jj_ctx *c);              /* a scratch buffer (release with jj_buf_pop) */

/* ------------------------------------------------------------------ values (jj_value.c) */
jj_list *jj_list_new(jj_ctx *c, size_t cap, int kind);
void jj_list_push(jj_ctx *c, jj_list *l, jv v);
jj_dict *jj_dict_new(jj_ctx *c, size_t cap);
void jj_dict_set(jj_ctx *c, jj_dict *d, jv key, jv val); /* insert or replace, keeps first insertion order */
jv *jj_dict_get(jj_ctx *c, const jj_dict *d, jv key);     /* NULL when absent */
jv *jj_dict_gets(const jj_dict *d, const char *key);       /* string key lookup without a context */
jv jj_undef_new(jj_ctx *c, const char *hint, jv obj, jv name);
jv jj_undef_hint(jj_ctx *c, const char *fmt, ...) JJ_PRINTF(2, 3);
jv jj_undef_name(jj_ctx *c, const char *name);

const char *jj_type_name(jv v);          /* Python's type name: 'str', 'int', 'list', 'NoneType' ... */
int jj_truthy(jv v);
int jj_eq(jj_ctx *c, jv a, jv b);
int jj_cmp(jj_ctx *c, jv a, jv b, const char *op); /* <0, 0, >0; TypeError when unorderable */
uint64_t jj_hash(jv v, int *hashable);
int jj_is_number(jv v);                  /* int, float or bool */
double jj_num(jv v);
/* Iteration: the items of an iterable (strings give characters, dicts keys); TypeError otherwise. Consumes
 * single-use iterators (generators). */
jj_list *jj_iter(jj_ctx *c, jv v);
int jj_is_iterable(jv v);
int64_t jj_len(jj_ctx *c, jv v);         /* Python len(); TypeError when it has none */

/* str() and repr() as Python (floats shortest round-trip, containers as their repr). */
jj_str *jj_to_str(jj_ctx *c, jv v);
void jj_write_str(jj_ctx *c, jj_buf *b, jv v);
void jj_write_repr(jj_ctx *c, jj_buf *b, jv v);
void jj_write_float(jj_buf *b, double f); /* Python repr(float) */
jv jj_markup_escape(jj_ctx *c, jv v);    /* markupsafe.escape */

/* ------------------------------------------------------------------ evaluation (jj_eval.c) */
jv jj_getattr(jj_ctx *c, jv obj, jj_str *name);  /* environment.getattr: attribute first, then item */
jv jj_getitem(jj_ctx *c, jv obj, jv key);        /* environment.getitem: item first, then attribute */
jv jj_call(jj_ctx *c, jv fn, jv *args, size_t n_args, jj_str **kwnames, jv *kwvals, size_t n_kw);
jv jj_binop(jj_ctx *c, int op, jv a, jv b);
int jj_contains(jj_ctx *c, jv container, jv item);
jv jj_slice(jj_ctx *c, jv obj, jv start, jv stop, jv step);

/* Call arguments, as filters, tests, methods and globals receive them. */
typedef struct jj_args {
  jv *pos; size_t n_pos;
  jj_str **kwn; jv *kwv; size_t n_kw;
  uint32_t used_kw; /* bit per keyword consumed */
  const char *fname; /* for messages */
} jj_args;
/* Argument i by position or by keyword name (NULL: absent). */
jv *jj_arg(jj_ctx *c, jj_args *a, size_t i, const char *name);
void jj_args_done(jj_ctx *c, jj_args *a, size_t max_pos); /* TypeError on unexpected arguments */

/* ------------------------------------------------------------------ built-ins */
int jj_filter_id(const char *name, size_t len);   /* -1 unknown */
int jj_test_id(const char *name, size_t len);
jv jj_filter_apply(jj_ctx *c, int id, jv value, jj_args *a);
int jj_test_apply(jj_ctx *c, int id, jv value, jj_args *a);
const char *jj_filter_name(int id);

/* Shared string operations (jj_methods.c). */
jv jj_py_strip(jj_ctx *c, jv self, const jj_str *chars, int left, int right);
jv jj_py_splitlines(jj_ctx *c, jv self, int keepends);
jv jj_dict_items(jj_ctx *c, jj_dict *d);

/* Methods of str, dict, list (jj_methods.c): the bound method for an attribute name, or undef (t = JT_UNDEF
 * with u == NULL) when the type has no such method. Refused mutating methods give the sandbox's undefined. */
int jj_method_lookup(jj_ctx *c, jv self, jj_str *name, jv *out);
jv jj_method_call(jj_ctx *c, jj_func *m, jj_args *a);

/* Globals (jj_globals.c): range, dict, namespace, cycler, joiner, lipsum-free set plus raise_exception and
 * strftime_now. */
int jj_global_id(const char *name);       /* -1 unknown */
jv jj_global_call(jj_ctx *c, int id, jj_args *a);
const char *jj_global_name(int id);

/* Python string formatting (jj_format.c): str % args, str.format. */
jv jj_percent_format(jj_ctx *c, jj_str *fmt, jv args);
jv jj_str_format(jj_ctx *c, jj_str *fmt, jj_args *a);
void jj_format_spec(jj_ctx *c, jj_buf *b, jv v, const char *spec, size_t spec_len);

/* JSON (jj_json.c): json.dumps and parsing into values. */
typedef struct jj_dumps_opts {
  int ensure_ascii, sort_keys;
  const char *indent; size_t indent_len; int has_indent;
  const char *item_sep, *key_sep; size_t item_sep_len, key_sep_len;
} jj_dumps_opts;
void jj_json_dumps(jj_ctx *c, jj_buf *b, jv v, const jj_dumps_opts *o);
/* Parses JSON text into values (ints stay ints, floats floats, objects keep their order). */
jv jj_json_parse(jj_ctx *c, const char *s, size_t n, const char *what);

#endif
