/* TEMPORARY placeholder so other parts link; the io engineer deletes this file. */
#include "core/status.h"
#include "model/config.h"
xpi_status xpi_config_load(const char *dir, xpi_config *out) { (void)dir; (void)out; return xpi_err(XPI_ERR_UNSUPPORTED, "config loading not built yet"); }
