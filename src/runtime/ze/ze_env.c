/* ZE_AFFINITY_MASK syntax check and the ordering switch, mirroring Intel's compute-runtime. The library never
 * applies the mask itself (the driver already did); it only warns about a mask the driver will choke on. */
#include "runtime/ze/ze_env.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const xpi_ze_env_names[] = {"ZE_AFFINITY_MASK", "ZE_ENABLE_PCI_ID_DEVICE_ORDER", "ZE_FLAT_DEVICE_HIERARCHY",
                                        "ZE_ENABLE_ALT_DRIVERS", NULL};

/* std::stoul(s, nullptr, 0) succeeds: optional spaces and sign, then at least one digit of the base. */
static int stoul_ok(const char *s, size_t n) {
  size_t i = 0;
  while (i < n && isspace((unsigned char)s[i])) i++;
  if (i < n && (s[i] == '+' || s[i] == '-')) i++;
  return i < n && isdigit((unsigned char)s[i]);
}

int xpi_ze_mask_check(const char *mask, char *why, size_t cap) {
  if (!mask || !*mask || !strcmp(mask, "default")) return 0;
  const char *p = mask;
  for (;;) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n > 0 || end) {
      const char *dot1 = memchr(p, '.', n);
      size_t n0 = dot1 ? (size_t)(dot1 - p) : n;
      int ok = stoul_ok(p, n0);
      if (ok && dot1) {
        const char *q = dot1 + 1;
        size_t n1 = n - n0 - 1;
        const char *dot2 = memchr(q, '.', n1);
        ok = stoul_ok(q, dot2 ? (size_t)(dot2 - q) : n1) && !dot2;
      }
      if (!ok) {
        snprintf(why, cap, "ZE_AFFINITY_MASK='%s': entry '%.*s' is not a device index (\"N\" or \"N.M\"); "
                 "Intel's driver fails to initialize with it, so no XPU is visible", mask, (int)n, p);
        return -1;
      }
    }
    if (!end) break;
    p = end + 1;
  }
  return 0;
}

int xpi_ze_pci_order_enabled(void) {
  const char *e = getenv("ZE_ENABLE_PCI_ID_DEVICE_ORDER");
  return e && atoi(e) != 0;
}
