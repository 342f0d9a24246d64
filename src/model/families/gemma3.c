/* Gemma 3 (text): the Gemma 2 layer without softcaps, with per-head (1 + w) q/k norms, and local/global
 * layers: sliding layers (layer_types, or all but every sliding_window_pattern-th) use their own RoPE base —
 * rope_parameters.sliding_attention (transformers 5) or rope_local_base_freq (4) — the full layers the global
 * parameters (rope_parameters.full_attention, or rope_theta + rope_scaling). */
#include "core/status.h"
#include "model/family.h"

static xpi_status parse(const char *path, const cJSON *root, xpi_config *c) {
  int have_types = 0;
  XPI_TRY(xpi_parse_gemma_like(path, root, c, 0.0, 0.0, &have_types));
  c->qk_norm = XPI_QK_PER_HEAD;
  xpi_family_defaults(root, c, 1e-6, 1000000.0); /* Gemma3TextConfig: the global layers' base */
  if (!have_types) {
    int32_t pattern = 6; /* Gemma3TextConfig default */
    XPI_TRY(xpi_cfg_int(path, root, "_sliding_window_pattern", 1, INT32_MAX, &pattern));
    XPI_TRY(xpi_cfg_int(path, root, "sliding_window_pattern", 1, INT32_MAX, &pattern));
    for (int32_t l = 0; l < c->n_layers; l++) c->layer_sliding[l] = (l + 1) % pattern != 0;
  }
  if (c->n_rope == 1) { /* transformers 4 layout: the local layers' base is rope_local_base_freq, unscaled */
    double local = 10000.0;
    XPI_TRY(xpi_cfg_num(path, root, "rope_local_base_freq", 0.0, 1, 1e12, &local, NULL));
    c->rope[1] = c->rope[0];
    c->rope[1].p.type = XPI_ROPE_DEFAULT;
    c->rope[1].p.theta = (float)local;
    c->rope[1].linear_factor = 1.0f;
    c->n_rope = 2;
  }
  return XPI_OK;
}

const xpi_family xpi_family_gemma3 = {"gemma3_text", "Gemma3ForCausalLM", 256, parse, xpi_load_sandwich_layer,
                                      xpi_blk_prenorm_layer};
