/* The DPAS kernels with their matrix builtins emulated (kernels/CMakeLists.txt: the dpas_emu / dpas8_emu modules of
 * the test-only library xpi_kernels_test, the builtins written with sub-group shuffles in the same A/B/C layouts),
 * put into an XPU backend's DPAS slots as device creation puts the real module there, so that the backend's own
 * dispatch launches them. No CPU OpenCL runtime has the builtins; Intel's runs these modules at sub-group sizes 16
 * and 8. Used by test_xpu_intel_dpas_emu and by the op-case list's xpu:dpas-emu16 / xpu:dpas-emu8 targets. */
#ifndef XPI_TEST_DPAS_EMU_H
#define XPI_TEST_DPAS_EMU_H

#include <string.h>

#include "check.h"
#include "ops/xpu/xpu_internal.h"
#include "ops/xpu/xpu_spirv.h"
#include "runtime/ze/ze_memory.h"

extern const unsigned char xpi_spv_dpas_emu[], xpi_spv_dpas8_emu[];
extern const size_t xpi_spv_dpas_emu_size, xpi_spv_dpas8_emu_size;

typedef struct xt_dpas_emu {
  ze_module_handle_t mod;
  ze_kernel_handle_t k[3];
} xt_dpas_emu;

static const xpu_kid xt_dpas_kids[3] = {XK_GEMM_DPAS_BF16, XK_GEMM_DPAS_Q8, XK_GEMM_DPAS_Q4};

/* Installs the emulated variant of sub-group size sg (16 or 8) into xpu's DPAS slots, which must be empty (a CPU
 * runtime builds no DPAS module). 1 when installed (the tier then reads "tuned+dpas" / "tuned+dpas8"). */
static inline int xt_dpas_emu_install(xpi_backend *xpu, int sg, xt_dpas_emu *st) {
  xpu_device *d = im_of(xpu)->d;
  memset(st, 0, sizeof *st);
  CHECK(d->dpas == 0 && d->k[XK_GEMM_DPAS_BF16] == NULL && d->k[XK_GEMM_DPAS_Q8] == NULL &&
            d->k[XK_GEMM_DPAS_Q4] == NULL,
        "xpu:0 already has a DPAS kernel (a CPU runtime has none)");
  xpi_status s = xpi_ze_module_from_spirv(d->ctx, d->dev, sg == 8 ? "dpas8_emu" : "dpas_emu",
                                          sg == 8 ? xpi_spv_dpas8_emu : xpi_spv_dpas_emu,
                                          sg == 8 ? xpi_spv_dpas8_emu_size : xpi_spv_dpas_emu_size, NULL, &st->mod);
  CHECK(s == XPI_OK, "building the emulated DPAS module (sub-group %d): %s", sg, xpi_last_error());
  if (s != XPI_OK) return 0;
  int made = 0;
  for (int i = 0; i < 3; i++) {
    ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC, .pKernelName = xpu_kernel_name(xt_dpas_kids[i])};
    ze_result_t r = d->ze->zeKernelCreate(st->mod, &kd, &st->k[i]);
    CHECK(r == ZE_RESULT_SUCCESS, "zeKernelCreate(%s): %s", kd.pKernelName, xpu_ze_result_name(r));
    made += r == ZE_RESULT_SUCCESS;
  }
  if (made < 3) return 0;
  for (int i = 0; i < 3; i++) d->k[xt_dpas_kids[i]] = st->k[i];
  d->dpas = sg;
  return 1;
}

/* Takes the emulated kernels out of the slots (if installed) and frees them. */
static inline void xt_dpas_emu_remove(xpi_backend *xpu, xt_dpas_emu *st) {
  xpu_device *d = im_of(xpu)->d;
  for (int i = 0; i < 3; i++)
    if (st->k[i] && d->k[xt_dpas_kids[i]] == st->k[i]) d->k[xt_dpas_kids[i]] = NULL;
  if (d->k[XK_GEMM_DPAS_BF16] == NULL) d->dpas = 0;
  for (int i = 0; i < 3; i++)
    if (st->k[i]) d->ze->zeKernelDestroy(st->k[i]);
  if (st->mod) d->ze->zeModuleDestroy(st->mod);
  memset(st, 0, sizeof *st);
}

#endif
