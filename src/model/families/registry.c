/* The families by model_type / architectures[0]. Adding a family: its file in this folder and its row in
 * XPI_FAMILIES below (the symbol xpi_family_<row> that file defines). */
#include <pthread.h>
#include <string.h>

#include "core/status.h"
#include "model/family.h"

/* The one list of families, in the order messages name them. tests/model/tests.cmake reads the rows (one
 * mkrandmodel test per family), so keep one X(symbol) per family here. */
#define XPI_FAMILIES(X)                                                                                            \
  X(llama) X(mistral) X(qwen2) X(qwen3) X(smollm3) X(granite) X(phi3) X(olmo2) X(gemma2) X(gemma3) X(qwen2_moe)   \
  X(qwen3_moe)

#define XPI_FAMILY_DECLARE(f) extern const xpi_family xpi_family_##f;
XPI_FAMILIES(XPI_FAMILY_DECLARE)
#define XPI_FAMILY_ENTRY(f) &xpi_family_##f,
static const xpi_family *const k_families[] = {XPI_FAMILIES(XPI_FAMILY_ENTRY)};
#define N_FAMILIES (sizeof k_families / sizeof k_families[0])

size_t xpi_family_count(void) { return N_FAMILIES; }

const xpi_family *xpi_family_at(size_t i) { return i < N_FAMILIES ? k_families[i] : NULL; }

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

/* "a, b, c" of the names and of the architectures, for messages. The table is constant but its strings live in
 * the family files, so the lists are joined at run time, once: pthread_once lets threads that fail their first
 * load at the same moment all read the finished lists. */
static char g_lists[2][512];
static pthread_once_t g_lists_once = PTHREAD_ONCE_INIT;

static void join_lists(void) {
  for (int arch = 0; arch < 2; arch++) {
    char *b = g_lists[arch];
    size_t o = 0;
    for (size_t i = 0; i < N_FAMILIES; i++) {
      const char *s = arch ? k_families[i]->architecture : k_families[i]->name;
      size_t sep = i ? 2 : 0, n = strlen(s);
      if (o + sep + n >= sizeof g_lists[0]) break; /* the table's lists are far shorter */
      memcpy(b + o, ", ", sep);
      memcpy(b + o + sep, s, n);
      o += sep + n;
    }
    b[o] = '\0';
  }
}

static const char *list(int arch) {
  pthread_once(&g_lists_once, join_lists);
  return g_lists[arch];
}

const char *xpi_family_types(void) { return list(0); }
const char *xpi_family_archs(void) { return list(1); }
