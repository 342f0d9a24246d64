/* Qwen2-MoE / Qwen3-MoE config.json parsing: the bundled tiny models (transformers 5 layouts: qwen3_moe with
 * num_local_experts, qwen2_moe with num_experts, shared_expert_intermediate_size, qkv_bias, sliding_window 0),
 * the transformers 4 layout (rope_theta, num_experts for qwen3_moe), the defaults of Qwen2MoeConfig /
 * Qwen3MoeConfig (norm_topk_prob false, decoder_sparse_step 1), which layers are sparse (decoder_sparse_step,
 * mlp_only_layers, as transformers' decoder layer decides), and the refusals (a model_type contradicting the
 * architectures entry, experts per token above the experts, a bad mlp_only_layers entry). */
#include <string.h>

#include "check.h"
#include "model/config.h"

static char *g_dir;

static xpi_status load_text(const char *cfg, xpi_config *c) {
  char *p = xpi_test_strf("%s/config.json", g_dir);
  CHECK(xpi_test_write_file(p, cfg, strlen(cfg)) == 0, "write");
  xpi_status s = xpi_config_load(g_dir, c);
  remove(p);
  free(p);
  return s;
}

#define BASE                                                                                                  \
  "\"hidden_size\": 64, \"intermediate_size\": 128, \"num_hidden_layers\": 6, \"num_attention_heads\": 4, "    \
  "\"num_key_value_heads\": 2, \"head_dim\": 16, \"vocab_size\": 100, \"max_position_embeddings\": 256, "    \
  "\"rope_theta\": 10000.0, \"moe_intermediate_size\": 32, \"num_experts_per_tok\": 2"

int main(void) {
  const char *data = xpi_test_env("XPI_TEST_DATA");
  xpi_config c;
  char *dir = xpi_test_strf("%s/arch_models/tiny-qwen3_moe", data);
  CHECK_OK(xpi_config_load(dir, &c));
  CHECK(strcmp(c.model_type, "qwen3_moe") == 0 && c.qk_norm == XPI_QK_PER_HEAD && !c.attention_bias, "qwen3_moe");
  CHECK(c.n_experts == 4 && c.n_experts_per_tok == 2 && c.moe_intermediate_size == 64 && c.norm_topk_prob == 1 &&
            c.shared_expert_intermediate_size == 0,
        "qwen3_moe experts: %d top %d of %d", c.n_experts, c.n_experts_per_tok, c.moe_intermediate_size);
  for (int l = 0; l < 4; l++) CHECK(c.layer_moe[l], "qwen3_moe layer %d sparse", l);
  free(dir);
  dir = xpi_test_strf("%s/arch_models/tiny-qwen2_moe", data);
  CHECK_OK(xpi_config_load(dir, &c));
  CHECK(strcmp(c.model_type, "qwen2_moe") == 0 && c.qk_norm == XPI_QK_NONE && c.attention_bias &&
            !c.o_proj_bias,
        "qwen2_moe attention");
  CHECK(c.n_experts == 4 && c.n_experts_per_tok == 2 && c.moe_intermediate_size == 64 &&
            c.shared_expert_intermediate_size == 96 && c.norm_topk_prob == 1,
        "qwen2_moe experts");
  free(dir);
  g_dir = xpi_test_tmpdir("moecfg");

  /* transformers 4 qwen3_moe: num_experts; defaults; decoder_sparse_step 2 + mlp_only_layers [3] */
  CHECK_OK(load_text("{\"model_type\": \"qwen3_moe\", " BASE ", \"num_experts\": 8, \"decoder_sparse_step\": 2, "
                     "\"mlp_only_layers\": [3]}", &c));
  CHECK(c.n_experts == 8 && c.norm_topk_prob == 0, "t4 layout");
  static const int want[6] = {0, 1, 0, 0, 0, 1}; /* (l + 1) % 2 == 0, and not layer 3 */
  for (int l = 0; l < 6; l++) CHECK(c.layer_moe[l] == want[l], "sparse step layer %d", l);
  /* qwen2_moe without qkv_bias: biased (Qwen2MoeConfig's default), shared expert required */
  CHECK_OK(load_text("{\"architectures\": [\"Qwen2MoeForCausalLM\"], " BASE ", \"num_experts\": 8, "
                     "\"shared_expert_intermediate_size\": 48, \"norm_topk_prob\": true, \"sliding_window\": 0}", &c));
  CHECK(c.attention_bias == 1 && c.shared_expert_intermediate_size == 48 && c.norm_topk_prob == 1, "qwen2_moe t4");
  CHECK_OK(load_text("{\"model_type\": \"qwen2_moe\", " BASE ", \"num_experts\": 8, \"qkv_bias\": false, "
                     "\"shared_expert_intermediate_size\": 48}", &c));
  CHECK(c.attention_bias == 0, "qkv_bias false");
  /* a dense config has no experts */
  CHECK_OK(load_text("{\"model_type\": \"qwen3\", " BASE "}", &c));
  CHECK(c.n_experts == 0 && !c.layer_moe[0], "dense qwen3");

  /* refusals, each naming what is wrong */
  CHECK_ERR(load_text("{\"model_type\": \"qwen3\", \"architectures\": [\"Qwen3MoeForCausalLM\"], " BASE "}", &c),
            XPI_ERR_FORMAT, "contradicts");
  CHECK_ERR(load_text("{\"model_type\": \"qwen3_moe\", " BASE "}", &c), XPI_ERR_FORMAT, "num_experts");
  CHECK_ERR(load_text("{\"model_type\": \"qwen3_moe\", " BASE ", \"num_experts\": 1}", &c), XPI_ERR_FORMAT,
            "num_experts_per_tok");
  CHECK_ERR(load_text("{\"model_type\": \"qwen3_moe\", " BASE ", \"num_experts\": 8, \"mlp_only_layers\": [6]}", &c),
            XPI_ERR_FORMAT, "mlp_only_layers");
  CHECK_ERR(load_text("{\"model_type\": \"qwen2_moe\", " BASE ", \"num_experts\": 8}", &c), XPI_ERR_FORMAT,
            "shared_expert_intermediate_size");
  free(g_dir);
  return xpi_test_done();
}
