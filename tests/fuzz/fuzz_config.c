/* config.json + generation_config.json (xpi_config_load) on arbitrary bytes: the input is config.json, and after
 * a NUL byte generation_config.json (absent without one). Properties: no crash, leak or undefined behaviour;
 * an accepted config has the sizes the graph divides by (heads, head_dim, layers) positive and consistent, and
 * at most XPI_MAX_EOS eos ids. */
#include "fuzz_common.h"
#include "model/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_part parts[2];
  int n = fuzz_split(data, size, parts, 2);
  fuzz_file("", "config.json", parts[0].p, parts[0].n);
  fuzz_file("", "generation_config.json", n > 1 ? parts[1].p : NULL, n > 1 ? parts[1].n : 0);
  xpi_config c;
  if (xpi_config_load(fuzz_dir(), &c) != XPI_OK) return 0;
  FUZZ_ASSERT(c.n_layers > 0 && c.n_heads > 0 && c.n_kv_heads > 0 && c.head_dim > 0 && c.hidden_size > 0 &&
                  c.vocab_size > 0 && c.intermediate_size > 0,
              "sizes %d %d %d %d %d %d %d", c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, c.hidden_size,
              c.vocab_size, c.intermediate_size);
  FUZZ_ASSERT(c.n_heads % c.n_kv_heads == 0, "%d heads over %d kv heads", c.n_heads, c.n_kv_heads);
  FUZZ_ASSERT(c.n_eos >= 0 && c.n_eos <= XPI_MAX_EOS, "%d eos ids", c.n_eos);
  for (int i = 0; i < c.n_eos; i++)
    FUZZ_ASSERT(c.eos_ids[i] >= 0, "eos id %d", c.eos_ids[i]);
  return 0;
}
