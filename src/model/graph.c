/* The graph object (see graph.h): which device runs which layers (the split of device_map) and the constants
 * every device holds (RoPE inverse frequencies). The state, the memory accounting, the step and its helpers are
 * in the other graph_*.c files (graph_internal.h). */
#include "model/graph.h"

#include <math.h>
#include <stdlib.h>

#include "core/status.h"

xpi_status xpi_graph_split(int32_t n_layers, const double *weight, int n_dev, int32_t *first) {
  double total = 0;
  for (int d = 0; d < n_dev; d++) {
    if (!(weight[d] >= 0)) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "device_map: device %d has a negative weight", d);
    total += weight[d];
  }
  if (n_dev <= 0 || total <= 0) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "device_map: no device to place layers on");
  double cum = 0;
  first[0] = 0;
  for (int d = 0; d < n_dev; d++) { /* boundaries at the rounded cumulative share */
    cum += weight[d];
    int32_t b = d == n_dev - 1 ? n_layers : (int32_t)floor((double)n_layers * cum / total + 0.5);
    first[d + 1] = b < first[d] ? first[d] : b;
  }
  return XPI_OK;
}

void xpi_graph_layer_backends(const xpi_graph *g, int32_t n_layers, xpi_backend **layer_be) {
  for (int d = 0; d < g->n_backends; d++)
    for (int32_t l = g->layer_dev[d]; l < g->layer_dev[d + 1] && l < n_layers; l++) layer_be[l] = g->backends[d];
}

/* inv_freq of RoPE set r: transformers' table for the type, divided by a linear factor and, for longrope, by
 * the short factors (1 / (ext[i] * theta^(2i/d))). */
static void inv_freq_of(const xpi_config *c, int r, float *out) {
  const xpi_rope_set *rs = &c->rope[r];
  xpi_rope_params rp = rs->p;
  rp.head_dim = c->head_dim;
  const int32_t half = c->head_dim / 2;
  xpi_rope_inv_freq(&rp, out);
  for (int32_t i = 0; i < half; i++) {
    double f = out[i];
    if (rs->has_ext) f = 1.0 / ((double)rs->ext[i] * pow((double)rp.theta, (double)(2 * i) / c->head_dim));
    out[i] = (float)(f / rs->linear_factor);
    if (rs->long_from > 0) /* the long factors' table follows: [2][hd/2] */
      out[half + i] = (float)(1.0 / ((double)rs->ext_long[i] * pow((double)rp.theta, (double)(2 * i) / c->head_dim)) /
                              rs->linear_factor);
  }
}

xpi_status xpi_graph_init(xpi_graph *g) {
  int32_t half = g->cfg->head_dim / 2;
  float *tmp = malloc(2 * (size_t)half * sizeof *tmp);
  if (!tmp) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  for (int r = 0; r < g->cfg->n_rope; r++) {
    inv_freq_of(g->cfg, r, tmp);
    const size_t bytes = (g->cfg->rope[r].long_from > 0 ? 2 : 1) * (size_t)half * sizeof *tmp;
    for (int d = 0; d < g->n_backends; d++) {
      xpi_backend *be = g->backends[d];
      g->inv_freq[r][d] = be->ops->alloc(be, bytes);
      xpi_status s = g->inv_freq[r][d] ? be->ops->write(be, g->inv_freq[r][d], tmp, bytes)
                                       : XPI_ERR_OUT_OF_MEMORY;
      if (s != XPI_OK) {
        free(tmp);
        xpi_graph_release(g);
        return s;
      }
    }
  }
  free(tmp);
  return XPI_OK;
}

void xpi_graph_release(xpi_graph *g) {
  for (int r = 0; r < 2; r++)
    for (int d = 0; d < g->n_backends; d++)
      if (g->inv_freq[r][d]) {
        g->backends[d]->ops->free(g->backends[d], g->inv_freq[r][d]);
        g->inv_freq[r][d] = NULL;
      }
}
