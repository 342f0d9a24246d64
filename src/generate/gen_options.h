/* Generation options as a caller passes them: a struct from an older header (smaller struct_size) keeps the
 * defaults of the fields it lacks; the values every generation checks. */
#ifndef XPI_GENERATE_GEN_OPTIONS_H
#define XPI_GENERATE_GEN_OPTIONS_H

#include "xpuinfer.h"

/* *out = defaults, then in's fields (in may be NULL); XPI_ERR_INVALID_ARGUMENT naming a bad value. */
xpi_status xpi_gen_options_resolve(const xpi_gen_options *in, xpi_gen_options *out);

#endif
