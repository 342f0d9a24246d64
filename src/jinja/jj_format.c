/* Python string formatting: printf-style `str % args` (the |format filter and the % operator) and str.format with
 * the format-spec mini-language (fill, align, sign, #, 0, width, grouping, precision, type). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jj_internal.h"

typedef struct spec {
  uint32_t fill; char align; char sign; int alt, zero; int64_t width; char group; int64_t prec; char type;
} spec;

static size_t ncp(const char *s, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
  return k;
}

/* Pads body (with its sign/prefix already in front when align is '=') to the spec's width. */
static void emit_padded(jj_ctx *c, jj_buf *b, const spec *sp, const char *prefix, const char *body, size_t blen,
                        char dflt_align) {
  size_t plen = strlen(prefix), w = ncp(prefix, plen) + ncp(body, blen);
  char align = sp->align ? sp->align : dflt_align;
  uint32_t fill = sp->fill ? sp->fill : ' ';
  int64_t pad = sp->width > (int64_t)w ? sp->width - (int64_t)w : 0;
  if (pad > (int64_t)c->out_limit) jj_fail_limit(c, "the template builds a string longer than %zu MiB", c->out_limit >> 20);
  int64_t left = align == '<' ? 0 : align == '^' ? pad / 2 : pad;
  if (align == '=') {
    jj_buf_put(b, prefix, plen);
    for (int64_t i = 0; i < pad; i++) jj_buf_cp(b, fill);
    jj_buf_put(b, body, blen);
    return;
  }
  for (int64_t i = 0; i < left; i++) jj_buf_cp(b, fill);
  jj_buf_put(b, prefix, plen);
  jj_buf_put(b, body, blen);
  for (int64_t i = 0; i < pad - left; i++) jj_buf_cp(b, fill);
}

/* Inserts a group separator every 3 digits of the integer part of digits. */
static void group_digits(char *out, size_t cap, const char *digits, char sep) {
  size_t n = strlen(digits), ip = 0;
  while (ip < n && digits[ip] >= '0' && digits[ip] <= '9') ip++;
  size_t o = 0;
  for (size_t i = 0; i < ip && o + 2 < cap; i++) {
    out[o++] = digits[i];
    size_t rem = ip - i - 1;
    if (sep && rem && rem % 3 == 0) out[o++] = sep;
  }
  for (size_t i = ip; i < n && o + 1 < cap; i++) out[o++] = digits[i];
  out[o] = 0;
}

static void format_float(jj_ctx *c, jj_buf *b, double x, const spec *sp) {
  char type = sp->type;
  int64_t prec = sp->prec;
  if (prec > 10000) jj_fail(c, "ValueError: precision too big");
  size_t cap = (size_t)(prec > 0 ? prec : 0) * 2 + 800; /* %f of 1e308 has 309 digits, then the grouping */
  char *body = jj_alloc(&c->arena, cap), *tmp = jj_alloc(&c->arena, cap);
#define body_size cap
#define tmp_size cap
  double ax = fabs(x);
  int neg = signbit(x) && !(x != x);
  if (x != x || isinf(x)) {
    snprintf(body, body_size, "%s", x != x ? "nan" : "inf");
    if (type == 'E' || type == 'F' || type == 'G') { body[0] -= 32; body[1] -= 32; body[2] -= 32; }
  } else if (type == '%') {
    snprintf(tmp, tmp_size, "%.*f", (int)(prec < 0 ? 6 : prec), ax * 100);
    group_digits(body, body_size - 1, tmp, sp->group);
    strcat(body, "%");
  } else if (!type) {
    if (prec < 0) {
      jj_buf *t = jj_tmpbuf(c);
      jj_write_float(t, ax);
      snprintf(tmp, tmp_size, "%s", t->p ? t->p : "");
      jj_buf_pop(c, t);
    } else {
      snprintf(tmp, tmp_size, "%.*g", (int)(prec ? prec : 1), ax);
      if (!strpbrk(tmp, ".e")) strcat(tmp, ".0");
    }
    group_digits(body, body_size, tmp, sp->group);
  } else {
    char f[16];
    snprintf(f, sizeof f, "%%%s.*%c", sp->alt ? "#" : "", type);
    snprintf(tmp, tmp_size, f, (int)(prec < 0 ? 6 : prec), ax);
    group_digits(body, body_size, tmp, sp->group);
  }
  char prefix[4] = {0};
  if (neg) prefix[0] = '-';
  else if (sp->sign == '+') prefix[0] = '+';
  else if (sp->sign == ' ') prefix[0] = ' ';
  emit_padded(c, b, sp, prefix, body, strlen(body), '>');
#undef body_size
#undef tmp_size
}

static void format_int(jj_ctx *c, jj_buf *b, int64_t v, const spec *sp) {
  char type = sp->type ? sp->type : 'd';
  if (strchr("eEfFgG%", type)) { format_float(c, b, (double)v, sp); return; }
  if (type == 'c') {
    if (v < 0 || v > 0x10FFFF) jj_fail(c, "OverflowError: %%c arg not in range(0x110000)");
    char t[4];
    size_t l = jj_u8_enc((uint32_t)v, t);
    emit_padded(c, b, sp, "", t, l, '<');
    return;
  }
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  char digits[80], body[120];
  size_t n = 0;
  int base = type == 'b' ? 2 : type == 'o' ? 8 : (type == 'x' || type == 'X') ? 16 : 10;
  if (base == 10 && type != 'd' && type != 'n') jj_fail(c, "ValueError: Unknown format code '%c' for object of type 'int'", type);
  const char *dig = type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
  do { digits[n++] = dig[u % (unsigned)base]; u /= (unsigned)base; } while (u);
  char rev[80];
  for (size_t i = 0; i < n; i++) rev[i] = digits[n - 1 - i];
  rev[n] = 0;
  char sep = sp->group;
  if (sep && base != 10) { /* '_' groups every 4 digits in b/o/x */
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
      body[o++] = rev[i];
      size_t rem = n - i - 1;
      if (rem && rem % 4 == 0) body[o++] = sep;
    }
    body[o] = 0;
  } else {
    group_digits(body, sizeof body, rev, sep);
  }
  char prefix[8] = {0};
  size_t p = 0;
  if (v < 0) prefix[p++] = '-';
  else if (sp->sign == '+') prefix[p++] = '+';
  else if (sp->sign == ' ') prefix[p++] = ' ';
  if (sp->alt && base != 10) {
    prefix[p++] = '0';
    prefix[p++] = type == 'X' ? 'X' : type;
  }
  emit_padded(c, b, sp, prefix, body, strlen(body), '>');
}

static void parse_spec(jj_ctx *c, const char *s, size_t n, spec *sp) {
  memset(sp, 0, sizeof *sp);
  sp->prec = -1;
  size_t i = 0;
  if (n) {
    size_t adv = jj_u8_len((unsigned char)s[0]);
    if (adv < n && strchr("<>=^", s[adv])) {
      sp->fill = jj_u8_dec(s, &adv);
      sp->align = s[adv];
      i = adv + 1;
    } else if (strchr("<>=^", s[0])) {
      sp->align = s[0];
      i = 1;
    }
  }
  if (i < n && strchr("+- ", s[i])) sp->sign = s[i++];
  if (i < n && s[i] == 'z') i++;
  if (i < n && s[i] == '#') { sp->alt = 1; i++; }
  if (i < n && s[i] == '0') {
    sp->zero = 1;
    if (!sp->align) { sp->align = '='; sp->fill = '0'; }
    i++;
  }
  while (i < n && s[i] >= '0' && s[i] <= '9') {
    sp->width = sp->width * 10 + (s[i++] - '0');
    if (sp->width > 1 << 24) jj_fail(c, "ValueError: Too many decimal digits in format string");
  }
  if (i < n && (s[i] == ',' || s[i] == '_')) sp->group = s[i++];
  if (i < n && s[i] == '.') {
    i++;
    if (i >= n || s[i] < '0' || s[i] > '9') jj_fail(c, "ValueError: Format specifier missing precision");
    sp->prec = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
      sp->prec = sp->prec * 10 + (s[i++] - '0');
      if (sp->prec > 1 << 24) jj_fail(c, "ValueError: Too many decimal digits in format string");
    }
  }
  if (i < n) sp->type = s[i++];
  if (i < n) jj_fail(c, "ValueError: Invalid format specifier '%.*s'", (int)n, s);
}

void jj_format_spec(jj_ctx *c, jj_buf *b, jv v, const char *s, size_t n) {
  if (v.t == JT_UNDEF && n) jj_fail_undefined(c, v);
  if (!n || (v.t != JT_STR && v.t != JT_INT && v.t != JT_FLOAT && v.t != JT_BOOL)) {
    if (n) jj_fail(c, "TypeError: unsupported format string passed to %s.__format__", jj_type_name(v));
    jj_write_str(c, b, v);
    return;
  }
  spec sp;
  parse_spec(c, s, n, &sp);
  if (v.t == JT_STR) {
    if (sp.type && sp.type != 's') jj_fail(c, "ValueError: Unknown format code '%c' for object of type 'str'", sp.type);
    if (sp.align == '=') jj_fail(c, "ValueError: '=' alignment not allowed in string format specifier");
    size_t len = v.s->len;
    if (sp.prec >= 0 && (size_t)sp.prec < jj_str_ncp(v.s)) len = jj_u8_offset(v.s, (size_t)sp.prec);
    emit_padded(c, b, &sp, "", v.s->p, len, '<');
    return;
  }
  if (v.t == JT_FLOAT) {
    if (sp.type && !strchr("eEfFgGn%", sp.type))
      jj_fail(c, "ValueError: Unknown format code '%c' for object of type 'float'", sp.type);
    if (sp.type == 'n') sp.type = 'g';
    format_float(c, b, v.f, &sp);
    return;
  }
  format_int(c, b, v.i, &sp);
}

/* ---------------------------------------------------------------- str % args */
jv jj_percent_format(jj_ctx *c, jj_str *fmt, jv args) {
  jj_list *tuple = NULL;
  jj_dict *map = NULL;
  if (args.t == JT_LIST && args.l->kind == JL_TUPLE) tuple = args.l;
  else if (args.t == JT_DICT) map = args.d;
  size_t argi = 0;
  int used_map = 0;
  jj_buf *b = jj_tmpbuf(c);
  const char *s = fmt->p;
  size_t n = fmt->len;
  jj_charge(c, n / 16);
  for (size_t i = 0; i < n;) {
    if (s[i] != '%') { jj_buf_putc(b, s[i++]); continue; }
    i++;
    if (i >= n) jj_fail(c, "ValueError: incomplete format");
    jv *arg = NULL;
    jv keyed;
    if (s[i] == '(') {
      if (!map) jj_fail(c, "TypeError: format requires a mapping");
      size_t st = ++i;
      int depth = 1;
      while (i < n && depth) {
        if (s[i] == '(') depth++;
        else if (s[i] == ')') depth--;
        if (depth) i++;
      }
      if (i >= n) jj_fail(c, "ValueError: incomplete format key");
      jv *v = jj_dict_get(c, map, jj_strv(&c->arena, s + st, i - st));
      i++;
      if (!v) jj_fail(c, "KeyError: '%.*s'", (int)(i - st - 1), s + st);
      keyed = *v;
      arg = &keyed;
      used_map = 1;
    }
    spec sp;
    memset(&sp, 0, sizeof sp);
    sp.prec = -1;
    for (; i < n && strchr("-+ #0", s[i]); i++) {
      if (s[i] == '-') sp.align = '<';
      else if (s[i] == '+') sp.sign = '+';
      else if (s[i] == ' ') { if (sp.sign != '+') sp.sign = ' '; }
      else if (s[i] == '#') sp.alt = 1;
      else sp.zero = 1;
    }
#define NEXT_ARG() (tuple ? (argi < tuple->n ? &tuple->v[argi++] : NULL) : (argi++ == 0 ? &args : NULL))
    if (i < n && s[i] == '*') {
      jv *w = NEXT_ARG();
      if (!w || (w->t != JT_INT && w->t != JT_BOOL)) jj_fail(c, "TypeError: * wants int");
      sp.width = w->i < 0 ? -w->i : w->i;
      if (w->i < 0) sp.align = '<';
      i++;
    } else {
      while (i < n && s[i] >= '0' && s[i] <= '9') {
        sp.width = sp.width * 10 + (s[i++] - '0');
        if (sp.width > 1 << 24) jj_fail(c, "ValueError: width too big");
      }
    }
    if (i < n && s[i] == '.') {
      i++;
      sp.prec = 0;
      if (i < n && s[i] == '*') {
        jv *w = NEXT_ARG();
        if (!w || (w->t != JT_INT && w->t != JT_BOOL)) jj_fail(c, "TypeError: * wants int");
        sp.prec = w->i < 0 ? 0 : w->i;
        i++;
      } else {
        while (i < n && s[i] >= '0' && s[i] <= '9') {
          sp.prec = sp.prec * 10 + (s[i++] - '0');
          if (sp.prec > 1 << 24) jj_fail(c, "ValueError: precision too big");
        }
      }
    }
    while (i < n && (s[i] == 'h' || s[i] == 'l' || s[i] == 'L')) i++;
    if (i >= n) jj_fail(c, "ValueError: incomplete format");
    char t = s[i++];
    if (t == '%') { jj_buf_putc(b, '%'); continue; }
    if (!arg) {
      if (map && !tuple) arg = &args; /* '%s' % {'a': 1} formats the dict */
      else arg = NEXT_ARG();
      if (!arg) jj_fail(c, "TypeError: not enough arguments for format string");
    }
    jv v = *arg;
    if (sp.zero && sp.align != '<' && strchr("diuoxXeEfFgG", t)) { sp.align = '='; sp.fill = '0'; }
    switch (t) {
      case 's': case 'r': case 'a': {
        jj_buf *tb = jj_tmpbuf(c);
        if (t == 's') jj_write_str(c, tb, v);
        else jj_write_repr(c, tb, v);
        size_t len = tb->len;
        if (sp.prec >= 0) {
          size_t k = 0, cps = 0;
          while (k < len && cps < (size_t)sp.prec) { k += jj_u8_len((unsigned char)tb->p[k]); cps++; }
          len = k;
        }
        emit_padded(c, b, &sp, "", tb->p ? tb->p : "", len, '>');
        jj_buf_pop(c, tb);
        break;
      }
      case 'c':
        if (v.t == JT_STR && jj_str_ncp(v.s) == 1) emit_padded(c, b, &sp, "", v.s->p, v.s->len, '>');
        else if (v.t == JT_INT) { sp.type = 'c'; format_int(c, b, v.i, &sp); }
        else jj_fail(c, "TypeError: %%c requires int or char");
        break;
      case 'd': case 'i': case 'u': case 'o': case 'x': case 'X': {
        if (v.t == JT_UNDEF) jj_fail_undefined(c, v);
        int64_t iv;
        if (v.t == JT_INT || v.t == JT_BOOL) iv = v.i;
        else if (v.t == JT_FLOAT && strchr("diu", t)) {
          if (!isfinite(v.f) || fabs(v.f) >= 9.2e18) jj_fail(c, "OverflowError: cannot convert float to integer");
          iv = (int64_t)v.f;
        } else
          jj_fail(c, "TypeError: %%%c format: %s is required, not %s", t, strchr("diu", t) ? "a real number" : "an integer",
                  jj_type_name(v));
        sp.type = t == 'i' || t == 'u' ? 'd' : t;
        if (sp.prec >= 0) { /* precision is a minimum digit count */
          spec q = sp;
          q.width = 0;
          q.align = 0;
          q.sign = 0;
          jj_buf *tb = jj_tmpbuf(c);
          q.alt = 0;
          format_int(c, tb, iv < 0 ? -iv : iv, &q);
          char prefix[8] = {0};
          size_t p = 0;
          if (iv < 0) prefix[p++] = '-';
          else if (sp.sign) prefix[p++] = sp.sign;
          if (sp.alt && sp.type != 'd') { prefix[p++] = '0'; prefix[p++] = sp.type; }
          jj_buf *body = jj_tmpbuf(c);
          for (int64_t k = (int64_t)tb->len; k < sp.prec; k++) jj_buf_putc(body, '0');
          jj_buf_put(body, tb->p, tb->len);
          emit_padded(c, b, &sp, prefix, body->p ? body->p : "", body->len, '>');
          jj_buf_pop(c, body);
          jj_buf_pop(c, tb);
        } else {
          format_int(c, b, iv, &sp);
        }
        break;
      }
      case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': {
        if (v.t == JT_UNDEF) jj_fail_undefined(c, v);
        if (!jj_is_number(v)) jj_fail(c, "TypeError: must be real number, not %s", jj_type_name(v));
        sp.type = t;
        format_float(c, b, jj_num(v), &sp);
        break;
      }
      default:
        jj_fail(c, "ValueError: unsupported format character '%c' (0x%x)", t, (unsigned)(unsigned char)t);
    }
  }
  if (tuple ? argi < tuple->n : (!map && argi == 0 && !used_map))
    jj_fail(c, "TypeError: not all arguments converted during string formatting");
  jv r = jv_strv(jj_buf_pop(c, b));
  r.markup = 0;
  return r;
#undef NEXT_ARG
}

/* ---------------------------------------------------------------- str.format */
static jv field_value(jj_ctx *c, const char *f, size_t n, jj_args *a, int *auto_idx) {
  size_t i = 0;
  while (i < n && f[i] != '.' && f[i] != '[') i++;
  jv v;
  if (i == 0) {
    if (*auto_idx < 0) jj_fail(c, "ValueError: cannot switch from manual field specification to automatic field numbering");
    size_t k = (size_t)(*auto_idx)++;
    if (k >= a->n_pos) jj_fail(c, "IndexError: Replacement index %zu out of range for positional args tuple", k);
    v = a->pos[k];
  } else {
    int digits = 1;
    for (size_t k = 0; k < i; k++) digits &= f[k] >= '0' && f[k] <= '9';
    if (digits) {
      if (*auto_idx > 0) jj_fail(c, "ValueError: cannot switch from automatic field numbering to manual field specification");
      *auto_idx = -1;
      size_t k = (size_t)strtoull(f, NULL, 10);
      if (i > 9 || k >= a->n_pos) jj_fail(c, "IndexError: Replacement index %.*s out of range for positional args tuple", (int)i, f);
      v = a->pos[k];
    } else {
      size_t k;
      for (k = 0; k < a->n_kw; k++)
        if (a->kwn[k]->len == i && !memcmp(a->kwn[k]->p, f, i)) break;
      if (k == a->n_kw) jj_fail(c, "KeyError: '%.*s'", (int)i, f);
      a->used_kw |= 1u << k;
      v = a->kwv[k];
    }
  }
  while (i < n) {
    if (f[i] == '.') {
      size_t st = ++i;
      while (i < n && f[i] != '.' && f[i] != '[') i++;
      if (i == st) jj_fail(c, "ValueError: Empty attribute in format string");
      v = jj_getattr(c, v, jj_str_new(&c->arena, f + st, i - st));
    } else {
      size_t st = ++i;
      while (i < n && f[i] != ']') i++;
      if (i >= n) jj_fail(c, "ValueError: Missing ']' in format string");
      int digits = i > st;
      for (size_t k = st; k < i; k++) digits &= f[k] >= '0' && f[k] <= '9';
      jv key = digits && i - st < 18 ? jv_int(strtoll(f + st, NULL, 10)) : jj_strv(&c->arena, f + st, i - st);
      v = jj_getitem(c, v, key);
      i++;
      if (i < n && f[i] != '.' && f[i] != '[') jj_fail(c, "ValueError: Only '.' or '[' may follow ']' in format field specifier");
    }
  }
  return v;
}

static void format_into(jj_ctx *c, jj_buf *b, const char *s, size_t n, jj_args *a, int *auto_idx, int depth) {
  if (depth > 2) jj_fail(c, "ValueError: Max string recursion exceeded");
  for (size_t i = 0; i < n;) {
    char ch = s[i];
    if (ch == '}') {
      if (i + 1 < n && s[i + 1] == '}') { jj_buf_putc(b, '}'); i += 2; continue; }
      jj_fail(c, "ValueError: Single '}' encountered in format string");
    }
    if (ch != '{') { jj_buf_putc(b, ch); i++; continue; }
    if (i + 1 < n && s[i + 1] == '{') { jj_buf_putc(b, '{'); i += 2; continue; }
    /* {field!conv:spec} with nested {} in spec */
    size_t st = ++i;
    int level = 1;
    while (i < n && level) {
      if (s[i] == '{') level++;
      else if (s[i] == '}') level--;
      if (level) i++;
    }
    if (i >= n) jj_fail(c, "ValueError: expected '}' before end of string");
    const char *f = s + st;
    size_t fl = i - st;
    i++;
    size_t name_end = 0;
    while (name_end < fl && f[name_end] != '!' && f[name_end] != ':') {
      if (f[name_end] == '[')
        while (name_end < fl && f[name_end] != ']') name_end++;
      if (name_end < fl) name_end++;
    }
    if (name_end > fl) name_end = fl;
    jv v = field_value(c, f, name_end, a, auto_idx);
    size_t k = name_end;
    char conv = 0;
    if (k < fl && f[k] == '!') {
      if (k + 1 >= fl) jj_fail(c, "ValueError: end of string while looking for conversion specifier");
      conv = f[k + 1];
      k += 2;
      if (k < fl && f[k] != ':') jj_fail(c, "ValueError: expected ':' after conversion specifier");
    }
    const char *spec_s = "";
    size_t spec_n = 0;
    jj_buf *sb = NULL;
    if (k < fl && f[k] == ':') {
      sb = jj_tmpbuf(c);
      format_into(c, sb, f + k + 1, fl - k - 1, a, auto_idx, depth + 1);
      spec_s = sb->p ? sb->p : "";
      spec_n = sb->len;
    }
    if (conv) {
      jj_buf *t = jj_tmpbuf(c);
      if (conv == 's') jj_write_str(c, t, v);
      else if (conv == 'r' || conv == 'a') jj_write_repr(c, t, v);
      else jj_fail(c, "ValueError: Unknown conversion specifier %c", conv);
      v = jv_strv(jj_buf_pop(c, t));
    }
    jj_format_spec(c, b, v, spec_s, spec_n);
    if (sb) jj_buf_pop(c, sb);
  }
}

jv jj_str_format(jj_ctx *c, jj_str *fmt, jj_args *a) {
  jj_buf *b = jj_tmpbuf(c);
  int auto_idx = 0;
  jj_charge(c, fmt->len / 16);
  format_into(c, b, fmt->p, fmt->len, a, &auto_idx, 0);
  a->used_kw = ~0u; /* str.format ignores unused arguments */
  return jv_strv(jj_buf_pop(c, b));
}
