/* SmolLM3: the Llama layer where some layers apply no RoPE at all: no_rope_layers[l] == 0 (or, without the
 * list, every no_rope_layer_interval-th layer), as SmolLM3Config derives it. Tied embeddings by default. */
#include "core/json.h"
#include "core/status.h"
#include "model/family.h"

static xpi_status parse(const char *path, const cJSON *root, xpi_config *c) {
  XPI_TRY(xpi_parse_llama_like(path, root, c));
  if (!xpi_cfg_get(root, "tie_word_embeddings")) c->tie_word_embeddings = 1;
  xpi_family_defaults(root, c, 1e-6, 2000000.0); /* SmolLM3Config */
  XPI_TRY(xpi_cfg_qwen_window(path, root, c));
  const cJSON *nr = xpi_cfg_get(root, "no_rope_layers");
  if (nr) {
    if (!cJSON_IsArray(nr) || cJSON_GetArraySize(nr) != c->n_layers)
      return xpi_err(XPI_ERR_FORMAT, "%s: \"no_rope_layers\" must be a list of %d values 0 or 1 (one per layer)", path,
                     c->n_layers);
    int l = 0;
    for (const cJSON *v = nr->child; v; v = v->next, l++) {
      if (!cJSON_IsNumber(v) || (v->valuedouble != 0 && v->valuedouble != 1))
        return xpi_err(XPI_ERR_FORMAT, "%s: \"no_rope_layers\"[%d] must be 0 or 1", path, l);
      c->layer_norope[l] = v->valuedouble == 0; /* the list says which layers USE rope */
    }
  } else {
    int32_t every = 4; /* SmolLM3Config default */
    XPI_TRY(xpi_cfg_int(path, root, "no_rope_layer_interval", 1, INT32_MAX, &every));
    for (int32_t l = 0; l < c->n_layers; l++) c->layer_norope[l] = (l + 1) % every == 0;
  }
  return XPI_OK;
}

const xpi_family xpi_family_smollm3 = {"smollm3", "SmolLM3ForCausalLM", 0, parse, xpi_load_llama_layer,
                                       xpi_blk_prenorm_layer};
