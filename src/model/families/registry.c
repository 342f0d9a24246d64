/* The families by model_type / architectures[0]. Adding a family: its file in this folder and a line here. */
#include <string.h>

#include "core/status.h"
#include "model/family.h"

static const xpi_family *const k_families[] = {
    &xpi_family_llama, &xpi_family_mistral, &xpi_family_qwen2, &xpi_family_qwen3, &xpi_family_smollm3,
    &xpi_family_granite, &xpi_family_phi3, &xpi_family_olmo2, &xpi_family_gemma2, &xpi_family_gemma3,
    &xpi_family_qwen2_moe, &xpi_family_qwen3_moe,
};
#define N_FAMILIES (sizeof k_families / sizeof k_families[0])


const xpi_family *xpi_family_by_type(const char *model_type) {
  for (size_t i = 0; i < N_FAMILIES; i++)
    if (!strcmp(model_type, k_families[i]->name)) return k_families[i];
  return NULL;
}

const xpi_family *xpi_family_by_arch(const char *architecture) {
  for (size_t i = 0; i < N_FAMILIES; i++)
    if (!strcmp(architecture, k_families[i]->architecture)) return k_families[i];
  return NULL;
}

/* "a, b, c" of one field of every family, built once (the table is constant). */
static const char *list(int arch) {
  static char buf[2][512];
  char *b = buf[arch];
  if (!b[0])
    for (size_t i = 0; i < N_FAMILIES; i++) {
      size_t o = strlen(b);
      const char *s = arch ? k_families[i]->architecture : k_families[i]->name;
      if (o + strlen(s) + 3 < sizeof buf[0]) memcpy(b + o, i ? ", " : "", i ? 3 : 1), strcat(b, s);
    }
  return b;
}

const char *xpi_family_types(void) { return list(0); }
const char *xpi_family_archs(void) { return list(1); }
