/* config.json / generation_config.json of the bundled and random models. */
#include "check.h"
#include "model/config.h"

int main(void) {
  const char *src = xpi_test_env("XPI_SOURCE_DIR");
  char *dir = xpi_test_strf("%s/examples/models/tinyfortunes", src);
  xpi_config c;
  CHECK_OK(xpi_config_load(dir, &c));
  CHECK(c.arch == XPI_ARCH_QWEN3 && c.hidden_size == 256 && c.head_dim == 64 && c.n_kv_heads == 2, "sizes");
  CHECK(c.rope.theta == 10000.0f && c.tie_word_embeddings && c.qk_norm && c.torch_dtype == XPI_DT_BF16, "rope");
  CHECK(c.n_eos == 1 && c.eos_ids[0] == 4093 && c.bos_id == 4093 && c.gen_do_sample == 0, "eos");
  CHECK(c.gen_max_new_tokens == 64, "gen");
  free(dir);
  return xpi_test_done();
}
