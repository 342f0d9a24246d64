/* Device list, name resolution and ZE_AFFINITY_MASK checking through the C API. tests.cmake runs this test
 * twice: with zesim (3 cards in unsorted order, ZE_AFFINITY_MASK=0,2, DPAS on) and with no driver at all.
 * XPI_EXPECT_XPUS lists the PCI addresses expected as xpu:0, xpu:1, ... ("" for none). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "runtime/device.h"
#include "runtime/ze/ze_devices.h"
#include "runtime/ze/ze_env.h"

static void test_mask_syntax(void) {
  char why[512];
  const char *ok[] = {NULL, "", "default", "0", "0,2", "2,0", "0,5,99", "0x1", "010", "1abc", "0.1", "1.0,2", " 1",
                      "-1", "1,1,1"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    CHECK(xpi_ze_mask_check(ok[i], why, sizeof why) == 0, "mask '%s' is accepted by Intel's parser: %s",
          ok[i] ? ok[i] : "(null)", why);
  const char *bad[] = {"a", "a,1", "0,,1", ",", "x0", "0.a", "0.1.2", "gpu0"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    why[0] = 0;
    CHECK(xpi_ze_mask_check(bad[i], why, sizeof why) == -1 && strstr(why, "ZE_AFFINITY_MASK") && strstr(why, bad[i]),
          "mask '%s' must be reported: %s", bad[i], why);
  }
}

static void test_list(void) {
  const char *expect = getenv("XPI_EXPECT_XPUS"); /* unset or empty: no XPU expected */
  if (!expect) expect = "";
  char want[8][32];
  size_t n_want = 0;
  char *copy = strdup(expect), *save = NULL;
  for (char *t = strtok_r(copy, ",", &save); t && n_want < 8; t = strtok_r(NULL, ",", &save))
    snprintf(want[n_want++], sizeof want[0], "%s", t);
  free(copy);

  xpi_device_list *l = NULL;
  CHECK_OK(xpi_device_list_create(&l));
  if (!l) return;
  size_t n = xpi_device_list_count_xpu(l);
  CHECK(n == n_want, "%zu XPUs, expected %zu (%s); summary: %s", n, n_want, expect, xpi_device_list_summary(l));
  for (size_t i = 0; i < n && i < n_want; i++) {
    xpi_device_info d = {.struct_size = sizeof d};
    CHECK_OK(xpi_device_list_get(l, i, &d));
    char id[16];
    snprintf(id, sizeof id, "xpu:%zu", i);
    CHECK(!strcmp(d.pci_bdf, want[i]), "xpu:%zu at %s, expected %s", i, d.pci_bdf, want[i]);
    CHECK(!strcmp(d.id, id) && d.index == (int)i, "id %s index %d", d.id, d.index);
    CHECK(!strcmp(d.name, "zesim Software XPU"), "name %s", d.name);
    /* zesim's shape: 1 slice x 16 subslices x 8 EUs, 8 threads per EU, subgroups 8/16/32. */
    CHECK(d.eu_count == 128 && d.threads_per_eu == 8, "eu %u threads %u", d.eu_count, d.threads_per_eu);
    CHECK(d.n_subgroup_sizes == 3 && d.subgroup_sizes[0] == 8 && d.subgroup_sizes[2] == 32, "subgroups %u",
          d.n_subgroup_sizes);
    CHECK(d.total_memory == 8ull << 30 && d.max_alloc_size == 4ull << 30, "memory %llu max alloc %llu",
          (unsigned long long)d.total_memory, (unsigned long long)d.max_alloc_size);
    CHECK(d.has_bf16 == 1, "zesim advertises ZE_extension_bfloat16_conversions by default");
    CHECK(d.has_dpas == 1, "ZESIM_DPAS=1 reports DPAS through Intel's module dot-product properties");
    CHECK(d.has_fp64 == 1, "PoCL has cl_khr_fp64");
  }
  xpi_device_info cpu = {.struct_size = sizeof cpu};
  CHECK_OK(xpi_device_list_get(l, n, &cpu));
  CHECK(!strcmp(cpu.id, "cpu") && cpu.index == -1 && cpu.total_memory > 0, "cpu entry %s %d", cpu.id, cpu.index);
  xpi_device_info bad = {.struct_size = sizeof bad};
  CHECK_ERR(xpi_device_list_get(l, n + 1, &bad), XPI_ERR_INVALID_ARGUMENT, "out of range");
  CHECK(strstr(xpi_device_list_summary(l), n ? "GPU device" : "zeInit") != NULL, "summary: %s", xpi_device_list_summary(l));
  xpi_device_list_free(l);
  xpi_device_list_free(NULL);

  /* The internal list gives the same devices with their handles. */
  const xpi_ze_device *devs = NULL;
  size_t nd = 0;
  CHECK_OK(xpi_ze_devices(&devs, &nd));
  CHECK(nd == n, "xpi_ze_devices %zu", nd);
  for (size_t i = 0; i < nd; i++)
    CHECK(devs[i].driver && devs[i].device && devs[i].api_version >= ZE_API_VERSION_1_0, "handles of xpu:%zu", i);

  /* Names. */
  int idx = 99;
  CHECK_OK(xpi_device_resolve("cpu", &idx));
  CHECK(idx == -1, "cpu -> %d", idx);
  CHECK_OK(xpi_device_resolve("auto", &idx));
  CHECK(idx == (n ? 0 : -1), "auto -> %d", idx);
  CHECK_OK(xpi_device_resolve(NULL, &idx));
  CHECK(idx == (n ? 0 : -1), "NULL -> %d", idx);
  CHECK_ERR(xpi_device_resolve("gpu", &idx), XPI_ERR_INVALID_ARGUMENT, "expected auto, cpu, xpu or xpu:N");
  CHECK_ERR(xpi_device_resolve("xpu:x", &idx), XPI_ERR_INVALID_ARGUMENT, "xpu:N");
  CHECK_ERR(xpi_device_resolve("xpu:1x", &idx), XPI_ERR_INVALID_ARGUMENT, "xpu:N");
  CHECK_ERR(xpi_device_resolve("xpu:-1", &idx), XPI_ERR_INVALID_ARGUMENT, "xpu:N");
  if (n) {
    CHECK_OK(xpi_device_resolve("xpu", &idx));
    CHECK(idx == 0, "xpu -> %d", idx);
    CHECK_OK(xpi_device_parse_xpu("xpu:1", &idx));
    CHECK(idx == 1, "xpu:1 -> %d", idx);
    CHECK_ERR(xpi_device_resolve("xpu:7", &idx), XPI_ERR_DEVICE, "only 2 XPUs are visible");
  } else {
    CHECK_ERR(xpi_device_resolve("xpu", &idx), XPI_ERR_DEVICE, "no XPU is visible");
    CHECK_ERR(xpi_device_resolve("xpu:0", &idx), XPI_ERR_DEVICE, "no XPU is visible");
  }
}

int main(void) {
  test_mask_syntax();
  test_list();
  return xpi_test_done();
}
