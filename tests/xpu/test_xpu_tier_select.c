/* The kernel-tier rule (xpu_tier_select) for simulated devices: the DPAS tier in the variant whose sub-group
 * size is the device's smallest. Arc A-series (DG2, Xe-HPG) reports 8/16/32 and DPAS: the sub-group-16 form of
 * the matrix builtin is undefined there (Intel's compiler emits no dpas instruction and the GEMM returns the bias
 * only), so it gets the sub-group-8 variant (kernels/dpas8). Data Center GPU Max (PVC, Xe-HPC) reports 16/32 and
 * gets the sub-group-16 one. tests/isa checks with Intel's compiler that each variant has dpas instructions on
 * the targets where it is selected; tests/xpu_intel runs the rule through zesim devices with these sizes. */
#include "check.h"
#include "ops/xpu/xpu_internal.h"

static xpi_device_info device(const uint32_t *sg, uint32_t n, int dpas) {
  xpi_device_info d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  for (uint32_t i = 0; i < n; i++) d.subgroup_sizes[i] = sg[i];
  d.n_subgroup_sizes = n;
  d.has_dpas = dpas;
  return d;
}

static void expect(const char *what, xpi_device_info d, int portable_only, int tuned, int dpas, const char *why) {
  xpu_tier_plan p;
  xpu_tier_select(&d, portable_only, &p);
  CHECK(p.tuned == tuned && p.dpas == dpas, "%s: tuned %d dpas %d, expected tuned %d dpas %d", what, p.tuned, p.dpas,
        tuned, dpas);
  CHECK(strstr(p.why_not_dpas, why) != NULL, "%s: reason \"%s\" lacks \"%s\"", what, p.why_not_dpas, why);
  if (dpas) CHECK(p.why_not_dpas[0] == 0, "%s: a reason (\"%s\") for a selected tier", what, p.why_not_dpas);
}

int main(void) {
  static const uint32_t dg2[] = {8, 16, 32}, dg2_unsorted[] = {32, 8, 16}, pvc[] = {16, 32},
                        pvc_unsorted[] = {32, 16}, no16[] = {8, 32}, only8[] = {8}, odd[] = {4, 16};
  expect("DG2-like (8/16/32, DPAS): sub-group-8 variant", device(dg2, 3, 1), 0, 1, 8, "");
  expect("DG2-like, sizes unsorted", device(dg2_unsorted, 3, 1), 0, 1, 8, "");
  expect("DG2-like with XPI_XPU_TIER=portable", device(dg2, 3, 1), 1, 0, 0, "");
  expect("smallest sub-group 4 (no DPAS variant)", device(odd, 2, 1), 0, 1, 0, "neither 8 nor 16");
  expect("DG2-like without DPAS", device(dg2, 3, 0), 0, 1, 0, "");
  expect("PVC-like (16/32, DPAS): sub-group-16 variant", device(pvc, 2, 1), 0, 1, 16, "");
  expect("PVC-like, sizes listed high to low", device(pvc_unsorted, 2, 1), 0, 1, 16, "");
  expect("PVC-like without DPAS", device(pvc, 2, 0), 0, 1, 0, "");
  expect("PVC-like with XPI_XPU_TIER=portable", device(pvc, 2, 1), 1, 0, 0, "");
  expect("8/32 (no sub-group 16), DPAS", device(no16, 2, 1), 0, 0, 0, "no sub-group size 16");
  expect("8 only", device(only8, 1, 0), 0, 0, 0, "");
  expect("no sub-group sizes reported", device(NULL, 0, 1), 0, 0, 0, "no sub-group size 16");
  return xpi_test_done();
}
