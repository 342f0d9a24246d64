/* RoPE inverse frequencies as transformers computes them (_compute_default_rope_parameters and
 * _compute_llama3_parameters), evaluated in double and stored as f32. */
#include <math.h>

#include "ops/ops.h"

void xpi_rope_inv_freq(const xpi_rope_params *p, float *inv_freq) {
  int32_t hd = p->head_dim, half = hd / 2;
  for (int32_t i = 0; i < half; i++) {
    double f = 1.0 / pow((double)p->theta, (double)(2 * i) / (double)hd);
    if (p->type == XPI_ROPE_LLAMA3) {
      /* Long wavelengths are divided by factor, short ones kept, the band between is interpolated. */
      double old = (double)p->original_max_position_embeddings;
      double low_wl = old / p->low_freq_factor, high_wl = old / p->high_freq_factor;
      double wl = 2.0 * M_PI / f;
      double scaled = wl > low_wl ? f / p->factor : f;
      if (!(wl < high_wl) && !(wl > low_wl)) {
        double smooth = (old / wl - p->low_freq_factor) / (p->high_freq_factor - p->low_freq_factor);
        scaled = (1.0 - smooth) * scaled / p->factor + smooth * scaled;
      }
      f = scaled;
    }
    inv_freq[i] = (float)f;
  }
}
