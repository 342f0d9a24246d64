/* Memory for the weights the CPU backend makes at load (q8/q4 quantized), in transparent huge pages.
 *
 * Why: decode streams every weight from memory once per token. With 4 KiB pages a core crosses a page every 4 KiB:
 * a TLB miss and a page walk (two-dimensional under a hypervisor), and the hardware prefetcher, which does not
 * cross pages, starting over. llama.cpp reads its GGUF through the file mapping, in 4 KiB pages. Weights are
 * carved from chunks of XPI_CPU_ARENA_CHUNK bytes, 2 MiB aligned and madvise(MADV_HUGEPAGE)d (the setting Linux
 * ships, "madvise", gives huge pages only to regions that ask). A chunk is returned to the OS when its last weight
 * is freed; pages of a chunk nobody touched cost no memory.
 * XPI_CPU_HUGEPAGES=0 keeps the chunks but does not ask for huge pages (to measure what they bring). */
#ifndef XPI_CPU_WEIGHT_ARENA_H
#define XPI_CPU_WEIGHT_ARENA_H

#include <stddef.h>

#define XPI_CPU_ARENA_CHUNK ((size_t)64 << 20)

/* bytes of 64-byte aligned memory (NULL when out of memory) */
void *xpi_cpu_walloc(size_t bytes);
/* frees what xpi_cpu_walloc returned (NULL: nothing) */
void xpi_cpu_wfree(void *p);

#endif
