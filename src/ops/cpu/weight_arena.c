/* Weight memory in transparent huge pages (weight_arena.h): a list of chunks, each a bump allocator with a
 * count of its live blocks, under one mutex (weights are made and freed at model load and unload only). */
#define _DEFAULT_SOURCE
#include "ops/cpu/weight_arena.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

typedef struct chunk {
  struct chunk *next;
  unsigned char *base; /* HUGE_PAGE aligned */
  size_t size, used, live;
} chunk;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static chunk *g_chunks; /* the first one is where new blocks go */

/* size bytes (a multiple of HUGE_PAGE) at a HUGE_PAGE aligned address: map one huge page more, trim the ends */
static unsigned char *map_aligned(size_t size) {
  unsigned char *p = mmap(NULL, size + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  const size_t lead = (HUGE_PAGE - (uintptr_t)p % HUGE_PAGE) % HUGE_PAGE;
  if (lead) munmap(p, lead);
  if (HUGE_PAGE - lead) munmap(p + lead + size, HUGE_PAGE - lead);
  p += lead;
#ifdef MADV_HUGEPAGE
  const char *env = getenv("XPI_CPU_HUGEPAGES");
  if (!env || strcmp(env, "0") != 0) madvise(p, size, MADV_HUGEPAGE); /* advice: failing it only costs speed */
#endif
  return p;
}

void *xpi_cpu_walloc(size_t bytes) {
  if (bytes > SIZE_MAX - 2 * HUGE_PAGE) return NULL;
  bytes = bytes ? (bytes + 63) & ~(size_t)63 : 64;
  pthread_mutex_lock(&g_mu);
  chunk *c = g_chunks;
  if (!c || c->size - c->used < bytes) {
    const size_t size = bytes > XPI_CPU_ARENA_CHUNK ? (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1) : XPI_CPU_ARENA_CHUNK;
    c = malloc(sizeof *c);
    unsigned char *base = c ? map_aligned(size) : NULL;
    if (!base) {
      free(c);
      pthread_mutex_unlock(&g_mu);
      return NULL;
    }
    *c = (chunk){g_chunks, base, size, 0, 0};
    g_chunks = c;
  }
  void *p = c->base + c->used;
  c->used += bytes;
  c->live++;
  pthread_mutex_unlock(&g_mu);
  return p;
}

void xpi_cpu_wfree(void *p) {
  if (!p) return;
  pthread_mutex_lock(&g_mu);
  for (chunk **pc = &g_chunks; *pc; pc = &(*pc)->next) {
    chunk *c = *pc;
    if ((unsigned char *)p < c->base || (unsigned char *)p >= c->base + c->size) continue;
    if (--c->live == 0) { /* its last block: back to the OS (a later weight starts a new chunk) */
      *pc = c->next;
      munmap(c->base, c->size);
      free(c);
    }
    break;
  }
  pthread_mutex_unlock(&g_mu);
}
