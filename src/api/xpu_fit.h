/* Device-memory fit of a model's placement on XPUs, checked before any weight is uploaded (xpu engineer). */
#ifndef XPI_API_XPU_FIT_H
#define XPI_API_XPU_FIT_H

#include "io/safetensors.h"
#include "model/config.h"
#include "ops/ops.h"

/* layer_be[l]: the backend of layer l (embedding on layer 0's, final norm and lm_head on the last layer's, as
 * model/weights.c places them); want: the weight dtype asked for, -1 as stored. XPI_ERR_OUT_OF_MEMORY naming
 * the device, the need and the free memory when an XPU's share of the weights exceeds its free memory. */
xpi_status xpi_xpu_fit_check(const xpi_config *cfg, const xpi_safetensors *st, xpi_backend *const *layer_be, int want);

#endif
