/* Command-line parsing shared by every subcommand: option tables, "--opt=value", ranges checked before any
 * work, usage errors on one line with exit code 2, and -v installing the library's log callback. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_fail(const char *cmd, const char *what, xpi_status s) {
  const char *msg = xpi_last_error();
  fprintf(stderr, "xpuinfer %s: %s: %s\n", cmd, what, msg && *msg ? msg : xpi_status_name(s));
  return 1;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "xpuinfer %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (see xpuinfer %s --help)\n", cmd);
  return 2;
}

int cli_parse_int(const char *s, long long min, long long max, long long *out) {
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || v < min || v > max) return -1;
  *out = v;
  return 0;
}

int cli_parse_float(const char *s, double *out) {
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !isfinite(v)) return -1;
  *out = v;
  return 0;
}

int cli_parse_size(const char *v, long long *out) {
  if (!v || !*v) return -1;
  char *end = NULL;
  errno = 0;
  double x = strtod(v, &end);
  if (errno || end == v || !(x > 0)) return -1;
  double mul = 1;
  if (*end == 'K' || *end == 'k') mul = 1024, end++;
  else if (*end == 'M' || *end == 'm') mul = 1024.0 * 1024, end++;
  else if (*end == 'G' || *end == 'g') mul = 1024.0 * 1024 * 1024, end++;
  if (!strcmp(end, "i") || !strcmp(end, "iB") || !strcmp(end, "B")) end += strlen(end);
  if (*end || x * mul > 9.0e18) return -1;
  *out = (long long)(x * mul);
  return 0;
}

static void on_log(int level, const char *message, void *user) {
  (void)user;
  fprintf(stderr, "xpuinfer: %s: %s\n", level >= 2 ? "warning" : level == 1 ? "note" : "debug", message);
}

void cli_verbose(void) { xpi_set_log_callback(on_log, NULL); }

/* "in (0, 1]", ">= 0", "> 0" */
static void range_text(const cli_opt *o, char *buf, size_t cap) {
  if (isinf(o->fmax)) snprintf(buf, cap, "%s %g", o->open_min ? ">" : ">=", o->fmin);
  else snprintf(buf, cap, "in %c%g, %g]", o->open_min ? '(' : '[', o->fmin, o->fmax);
}

static int take(const char *cmd, const cli_opt *o, const char *name, const char *v) {
  switch (o->kind) {
    case CLI_FLAG: *(int *)o->dst = 1; break;
    case CLI_STR: *(const char **)o->dst = v; break;
    case CLI_INT: {
      long long x;
      if (cli_parse_int(v, o->imin, o->imax, &x))
        return cli_usage_error(cmd, "%s: '%s' is not an integer in [%lld, %lld]", name, v, o->imin, o->imax);
      *(long long *)o->dst = x;
      break;
    }
    case CLI_NUM: {
      double x;
      char r[64];
      range_text(o, r, sizeof r);
      if (cli_parse_float(v, &x)) return cli_usage_error(cmd, "%s: '%s' is not a number (it must be %s)", name, v, r);
      if (x < o->fmin || x > o->fmax || (o->open_min && x == o->fmin))
        return cli_usage_error(cmd, "%s: %s is out of range: it must be %s", name, v, r);
      *(double *)o->dst = x;
      break;
    }
    case CLI_STRS: {
      cli_strs *l = o->dst;
      if (l->n == l->max) return cli_usage_error(cmd, "%s: at most %zu of them", name, l->max);
      l->v[l->n++] = v;
      break;
    }
  }
  if (o->given) *o->given = 1;
  return 0;
}

int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts, size_t n_opts, const char **pos,
              size_t max_pos, size_t *n_pos) {
  int verbose = 0, only_pos = 0;
  if (n_pos) *n_pos = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int is_opt = !only_pos && a[0] == '-' && a[1] && !(a[1] >= '0' && a[1] <= '9'); /* "-" and "-5" are values */
    if (is_opt && !strcmp(a, "--")) {
      only_pos = 1;
      continue;
    }
    if (!is_opt) {
      if (!n_pos || *n_pos == max_pos)
        return cli_usage_error(cmd, max_pos ? "unexpected argument '%s'" : "unexpected argument '%s' (options start "
                                                                          "with -)", a);
      pos[(*n_pos)++] = a;
      continue;
    }
    /* "--name=value": the value is part of the argument */
    char name[64];
    const char *eq = a[1] == '-' ? strchr(a, '=') : NULL, *inline_v = NULL;
    size_t nl = eq ? (size_t)(eq - a) : strlen(a);
    if (nl >= sizeof name) return cli_usage_error(cmd, "unknown option '%.40s...'", a);
    memcpy(name, a, nl);
    name[nl] = 0;
    if (eq) inline_v = eq + 1;
    if (!strcmp(name, "-h") || !strcmp(name, "--help")) return CLI_HELP;
    if (!strcmp(name, "-v") || !strcmp(name, "--verbose")) {
      if (inline_v) return cli_usage_error(cmd, "%s takes no value", name);
      verbose = 1;
      continue;
    }
    const cli_opt *o = NULL;
    for (size_t k = 0; k < n_opts && !o; k++)
      if ((opts[k].shrt && !strcmp(name, opts[k].shrt)) || (opts[k].lng && !strcmp(name, opts[k].lng))) o = &opts[k];
    if (!o) return cli_usage_error(cmd, "unknown option '%s'", name);
    const char *v = inline_v;
    if (o->kind == CLI_FLAG) {
      if (inline_v) return cli_usage_error(cmd, "%s takes no value", name);
    } else if (!v) {
      if (i + 1 >= argc) return cli_usage_error(cmd, "%s needs a value", name);
      v = argv[++i];
    }
    int rc = take(cmd, o, name, v);
    if (rc) return rc;
  }
  if (verbose) cli_verbose();
  return 0;
}
