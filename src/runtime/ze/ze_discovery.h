/* Discovery internals shared by the device list. */
#ifndef XPI_ZE_DISCOVERY_H
#define XPI_ZE_DISCOVERY_H

#include <stdint.h>
#include "runtime/ze/ze_loader.h"

/* Fills info (all but id/index) from the driver's queries; pci_known/pci get the PCI address if reported. */
void xpi_ze_fill_info(const xpi_ze_api *ze, ze_driver_handle_t drv, ze_device_handle_t dev, xpi_device_info *info,
                      int *pci_known, uint32_t pci[4]);

/* Why XPUs are or are not visible (loader, drivers, device count, mask problems). */
const char *xpi_ze_devices_summary(void);

/* The loader wraps every handle (several drivers, or ZE_ENABLE_LOADER_INTERCEPT=1). Loader 1.8 then returns a
 * failed zeModuleCreate's build log unwrapped, and reading it crashes: callers must not ask for it. */
int xpi_ze_handles_wrapped(void);

#endif
