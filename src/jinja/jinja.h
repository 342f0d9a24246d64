/* A Jinja template engine with jinja2's semantics as transformers' apply_chat_template configures it:
 * ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with loopcontrols, the {% generation %}
 * tag, globals raise_exception and strftime_now, and tojson as json.dumps(ensure_ascii=False). Values follow
 * Python (truthiness, str(), repr(), int/float arithmetic, slicing), undefined values jinja2's default Undefined.
 *
 * A parsed template is immutable: any number of threads may render it at once. Every render is bounded in time
 * (work units), memory, output size and recursion depth, so no template or input can hang or crash it; errors
 * name the line and column. */
#ifndef XPI_JINJA_H
#define XPI_JINJA_H

#include <stddef.h>
#include <stdint.h>

#include "xpuinfer.h"

typedef struct jj_template jj_template;

/* Parses src (UTF-8, len bytes). Syntax errors are XPI_ERR_FORMAT with "line L, column C: ..." (what of jinja2's
 * message it would give, plus the column). */
xpi_status jj_template_parse(const char *src, size_t len, jj_template **out);
void jj_template_free(jj_template *t);

/* A variable given to a render: its value as JSON text (json != NULL) or as a plain string (str). With name NULL,
 * json is an object whose every key is a variable. */
typedef struct jj_var {
  const char *name;
  const char *json; size_t json_len;
  const char *str;  size_t str_len;
} jj_var;

typedef struct jj_render_opts {
  int64_t now;          /* strftime_now's clock in seconds since the epoch (local time as datetime.now()); 0: now */
  size_t max_output;    /* bytes; 0: 64 MiB */
  size_t max_memory;    /* bytes the render may allocate; 0: 256 MiB */
  uint64_t max_work;    /* evaluation steps plus bytes processed / 16; 0: 50 million (a real chat template takes
                           thousands; a runaway loop stops within seconds) */
  unsigned max_depth;   /* evaluator recursion (macro calls, nesting); 0: 1000 */
} jj_render_opts;

/* Renders with the given variables (later entries override earlier ones with the same name). *out is malloc'd,
 * NUL-terminated, *len excludes the NUL. Errors: XPI_ERR_INVALID_ARGUMENT for what the template raises
 * (raise_exception's message verbatim, undefined values, type errors, the sandbox's refusals, limits), with
 * the line and column, and for a variable's bad JSON; XPI_ERR_OUT_OF_MEMORY. */
xpi_status jj_render(const jj_template *t, const jj_var *vars, size_t n_vars, const jj_render_opts *opts,
                     char **out, size_t *len);

#endif
