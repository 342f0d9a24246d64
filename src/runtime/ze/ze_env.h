/* The Level Zero environment variables that decide which devices are visible and in what order. */
#ifndef XPI_ZE_ENV_H
#define XPI_ZE_ENV_H

#include <stddef.h>

/* The variables reported by `xpuinfer devices` (NULL-terminated list). */
extern const char *const xpi_ze_env_names[];

/* Checks ZE_AFFINITY_MASK syntax as Intel's driver parses it (comma-separated "X" or "X.Y" entries, each
 * number in C notation: 0x.. hex, 0.. octal; out-of-range indices are fine, the driver skips them).
 * Returns 0 when the driver will accept it; otherwise -1 and a reason in why: Intel's driver then fails to
 * initialize, so no XPU is visible. NULL or "" is valid (no mask). */
int xpi_ze_mask_check(const char *mask, char *why, size_t cap);

/* ZE_ENABLE_PCI_ID_DEVICE_ORDER is set to a nonzero number. */
int xpi_ze_pci_order_enabled(void);

#endif
