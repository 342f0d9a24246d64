/* xpuinfer devices: what torch.xpu.is_available(), torch.xpu.device_count() would print, then the devices and
 * the Level Zero environment variables that chose them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "cli.h"

static const char *const k_env[] = {"ZE_AFFINITY_MASK", "ZE_ENABLE_PCI_ID_DEVICE_ORDER", "ZE_FLAT_DEVICE_HIERARCHY",
                                    "ZE_ENABLE_ALT_DRIVERS"};

static void usage(FILE *f) {
  fprintf(f,
          "usage: xpuinfer devices [--json]\n\n"
          "Lists the Level Zero GPUs (XPUs) in the order libxpuinfer numbers them (xpu:0, xpu:1, ...) and the CPU.\n"
          "The first line is what `print(torch.xpu.is_available(), torch.xpu.device_count())` prints.\n"
          "bf16 is torch.xpu.is_bf16_supported(including_emulation=False): native bf16 conversions.\n"
          "Visible devices follow ZE_AFFINITY_MASK, ZE_ENABLE_PCI_ID_DEVICE_ORDER and ZE_FLAT_DEVICE_HIERARCHY as\n"
          "Intel's driver applies them; ZE_ENABLE_ALT_DRIVERS=/path/libze_zesim.so selects the software device.\n\n"
          "      --json               print one JSON object instead of the table\n" CLI_COMMON_HELP);
}

static void human_bytes(uint64_t b, char *out, size_t cap) {
  if (b >= (1ull << 30)) snprintf(out, cap, "%.1f GiB", (double)b / (double)(1ull << 30));
  else snprintf(out, cap, "%.0f MiB", (double)b / (double)(1ull << 20));
}

static cJSON *device_json(const xpi_device_info *d) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "id", d->id);
  cJSON_AddNumberToObject(o, "index", d->index);
  cJSON_AddStringToObject(o, "name", d->name);
  if (d->pci_bdf[0]) cJSON_AddStringToObject(o, "pci", d->pci_bdf);
  else cJSON_AddNullToObject(o, "pci");
  cJSON_AddNumberToObject(o, "total_memory", (double)d->total_memory);
  cJSON_AddNumberToObject(o, "max_alloc_size", (double)d->max_alloc_size);
  cJSON_AddNumberToObject(o, "eu_count", d->eu_count);
  cJSON_AddNumberToObject(o, "threads_per_eu", d->threads_per_eu);
  cJSON *sg = cJSON_AddArrayToObject(o, "subgroup_sizes");
  for (uint32_t i = 0; i < d->n_subgroup_sizes && i < 8; i++) cJSON_AddItemToArray(sg, cJSON_CreateNumber(d->subgroup_sizes[i]));
  cJSON_AddBoolToObject(o, "fp16", d->has_fp16);
  cJSON_AddBoolToObject(o, "fp64", d->has_fp64);
  cJSON_AddBoolToObject(o, "bf16", d->has_bf16);
  cJSON_AddBoolToObject(o, "dpas", d->has_dpas);
  return o;
}

int cmd_devices(int argc, char **argv) {
  int json = 0;
  const cli_opt t[] = {{NULL, "--json", CLI_FLAG, &json, 0, 0, 0, 0, 0, NULL}};
  int rc = cli_parse("devices", argc, argv, t, 1, NULL, 0, NULL);
  if (rc == CLI_HELP) {
    usage(stdout);
    return 0;
  }
  if (rc) return rc;
  xpi_device_list *list = NULL;
  xpi_status s = xpi_device_list_create(&list);
  if (s != XPI_OK) return cli_fail("devices", "listing devices", s);
  size_t n = xpi_device_list_count_xpu(list);
  xpi_device_info *infos = calloc(n + 1, sizeof *infos);
  if (!infos) {
    xpi_device_list_free(list);
    fprintf(stderr, "xpuinfer devices: out of memory\n");
    return 1;
  }
  for (size_t i = 0; i <= n; i++) {
    infos[i].struct_size = sizeof infos[i];
    s = xpi_device_list_get(list, i, &infos[i]);
    if (s != XPI_OK) {
      free(infos);
      xpi_device_list_free(list);
      return cli_fail("devices", "reading the device list", s);
    }
  }
  if (json) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddBoolToObject(root, "available", n > 0);
    cJSON_AddNumberToObject(root, "device_count", (double)n);
    cJSON *arr = cJSON_AddArrayToObject(root, "devices");
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(arr, device_json(&infos[i]));
    cJSON_AddItemToObject(root, "cpu", device_json(&infos[n]));
    cJSON *env = cJSON_AddObjectToObject(root, "env");
    for (size_t i = 0; i < sizeof k_env / sizeof k_env[0]; i++) {
      const char *v = getenv(k_env[i]);
      if (v) cJSON_AddStringToObject(env, k_env[i], v);
      else cJSON_AddNullToObject(env, k_env[i]);
    }
    cJSON_AddStringToObject(root, "summary", xpi_device_list_summary(list));
    char *text = cJSON_Print(root);
    if (text) printf("%s\n", text);
    cJSON_free(text);
    cJSON_Delete(root);
  } else {
    printf("%s %zu\n", n > 0 ? "True" : "False", n);
    printf("%-7s %-40s %-13s %-10s %s\n", "index", "name", "PCI", "memory", "bf16");
    for (size_t i = 0; i <= n; i++) {
      char mem[32];
      human_bytes(infos[i].total_memory, mem, sizeof mem);
      printf("%-7s %-40.40s %-13s %-10s %s\n", infos[i].id, infos[i].name, infos[i].pci_bdf[0] ? infos[i].pci_bdf : "-",
             mem, infos[i].has_bf16 ? "True" : "False");
    }
    printf("environment:\n");
    for (size_t i = 0; i < sizeof k_env / sizeof k_env[0]; i++) {
      const char *v = getenv(k_env[i]);
      printf("  %s=%s\n", k_env[i], v ? v : "(unset)");
    }
    printf("summary: %s\n", xpi_device_list_summary(list));
  }
  free(infos);
  xpi_device_list_free(list);
  return 0;
}
