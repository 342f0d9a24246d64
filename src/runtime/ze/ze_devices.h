/* The process's Level Zero devices in library order (xpu:0, xpu:1, ...), enumerated once. */
#ifndef XPI_ZE_DEVICES_H
#define XPI_ZE_DEVICES_H

#include <stddef.h>
#include <level_zero/ze_api.h>
#include "xpuinfer.h"

typedef struct xpi_ze_device {
  ze_driver_handle_t driver;
  ze_device_handle_t device;
  ze_api_version_t api_version;   /* the driver's: newer entry points only when it has them */
  xpi_device_info info;
  int relaxed_alloc;              /* the driver has ZE_experimental_relaxed_allocation_limits */
  int in_order_lists;             /* driver API >= 1.7: command lists may be created in order (flags below) */
} xpi_ze_device;

/* All visible XPUs (ZE_AFFINITY_MASK / ZE_ENABLE_PCI_ID_DEVICE_ORDER / ZE_FLAT_DEVICE_HIERARCHY applied as
 * Intel's driver applies them, never twice). *n = 0 and XPI_OK when Level Zero is unavailable. Thread safe. */
xpi_status xpi_ze_devices(const xpi_ze_device **devs, size_t *n);

/* Level Zero 1.7's in-order flags (ze_api.h 1.7+; Debian 12's header is 1.4): commands of such a list run in the
 * order appended, without barriers between them. */
#define XPI_ZE_COMMAND_QUEUE_FLAG_IN_ORDER (1u << 1) /* for zeCommandListCreateImmediate */
#define XPI_ZE_COMMAND_LIST_FLAG_IN_ORDER (1u << 3)  /* for zeCommandListCreate */

#endif
