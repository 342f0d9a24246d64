/* zesim devices: ZESIM_DEVICES parsing, Intel's ordering and affinity-mask rules, and the driver/device
 * queries. The ordering and mask semantics follow Intel's compute-runtime (shared/source/os_interface/
 * device_factory.cpp, execution_environment.cpp): cards are sorted first (discrete before integrated unless
 * ZE_ENABLE_PCI_ID_DEVICE_ORDER=1, then PCI domain/bus/device/function), the mask is applied to the sorted
 * list, and the survivors keep sorted order (never mask order). */
#include "zesim.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

zs_driver zs_drv;
pthread_mutex_t zs_lock = PTHREAD_MUTEX_INITIALIZER;

void zs_debug(const char *fmt, ...) {
  const char *e = getenv("ZESIM_DEBUG");
  if (!e || strcmp(e, "1")) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "zesim: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

/* Configuration errors are the user's to fix; zesim is a developer tool, so it says why on stderr. */
static void zs_config_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void zs_config_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "zesim: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

/* ------------------------------------------------------------------ ZESIM_DEVICES */
typedef struct card {
  uint32_t domain, bus, dev, fn;
  uint64_t mem, max_alloc;
  int integrated;
  uint32_t tiles;
  uint32_t sg[8], n_sg; /* sub-group sizes to report */
  uint32_t index; /* position in ZESIM_DEVICES */
} card;

static int parse_size(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return -1;
  uint64_t mul = 1;
  if (*end) {
    switch (toupper((unsigned char)*end)) {
      case 'K': mul = 1ull << 10; break;
      case 'M': mul = 1ull << 20; break;
      case 'G': mul = 1ull << 30; break;
      case 'T': mul = 1ull << 40; break;
      default: return -1;
    }
    end++;
    if (*end == 'i' || *end == 'I') end++;
    if (*end == 'B' || *end == 'b') end++;
    if (*end) return -1;
  }
  if (v == 0 || v > UINT64_MAX / mul) return -1;
  *out = v * mul;
  return 0;
}

/* "8.16.32": up to 8 sub-group sizes, each a power of two in 1..128, ascending (as drivers list them). */
static int parse_sg(const char *s, card *c) {
  c->n_sg = 0;
  while (*s) {
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (end == s || v < 1 || v > 128 || (v & (v - 1)) || c->n_sg == 8 || (c->n_sg && v <= c->sg[c->n_sg - 1]))
      return -1;
    c->sg[c->n_sg++] = (uint32_t)v;
    if (*end == '.') end++;
    else if (*end) return -1;
    s = end;
  }
  return c->n_sg ? 0 : -1;
}

/* "DDDD:BB:DD.F[=SIZE][/integrated][/tiles=N][/maxalloc=SIZE][/sg=A.B...]" */
static int parse_card(char *s, card *c) {
  memset(c, 0, sizeof *c);
  c->mem = 8ull << 30;
  c->tiles = 1;
  c->n_sg = 3; /* like Intel's Xe-HPG (Arc, DG2): 8, 16, 32; Xe-HPC (Max, PVC) reports 16, 32 */
  c->sg[0] = 8, c->sg[1] = 16, c->sg[2] = 32;
  char *opts = strchr(s, '/');
  if (opts) *opts++ = 0;
  char *eq = strchr(s, '=');
  if (eq) {
    *eq++ = 0;
    if (parse_size(eq, &c->mem)) return -1;
  }
  int n = 0;
  if (sscanf(s, "%x:%x:%x.%x%n", &c->domain, &c->bus, &c->dev, &c->fn, &n) != 4 || s[n] || c->domain > 0xffff ||
      c->bus > 0xff || c->dev > 0x1f || c->fn > 7)
    return -1;
  while (opts && *opts) {
    char *next = strchr(opts, '/');
    if (next) *next++ = 0;
    if (!strcmp(opts, "integrated")) {
      c->integrated = 1;
    } else if (!strncmp(opts, "tiles=", 6)) {
      char *end;
      unsigned long t = strtoul(opts + 6, &end, 10);
      if (*end || t < 1 || t > ZS_MAX_TILES) return -1;
      c->tiles = (uint32_t)t;
    } else if (!strncmp(opts, "maxalloc=", 9)) {
      if (parse_size(opts + 9, &c->max_alloc)) return -1;
    } else if (!strncmp(opts, "sg=", 3)) {
      if (parse_sg(opts + 3, c)) return -1;
    } else {
      return -1;
    }
    opts = next;
  }
  if (!c->max_alloc) {
    /* Like Intel's discrete GPUs: one allocation may not exceed a fraction of the memory unless relaxed. */
    c->max_alloc = c->mem / 2 < (4ull << 30) ? c->mem / 2 : (4ull << 30);
  }
  return 0;
}

/* A second zesim build may read another variable, so that tests can load two zesim drivers at once. */
#ifndef ZESIM_DEVICES_ENV
#define ZESIM_DEVICES_ENV "ZESIM_DEVICES"
#endif

static int parse_devices(card *cards, uint32_t *n) {
  const char *env = getenv(ZESIM_DEVICES_ENV);
  if (!env || !*env) env = "0000:03:00.0";
  char *copy = strdup(env);
  if (!copy) return -1;
  *n = 0;
  int rc = 0;
  char *save = NULL;
  for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    while (isspace((unsigned char)*tok)) tok++;
    if (*n == ZS_MAX_DEVICES) {
      zs_config_error(ZESIM_DEVICES_ENV " lists more than %d devices", ZS_MAX_DEVICES);
      rc = -1;
      break;
    }
    char entry[256];
    snprintf(entry, sizeof entry, "%s", tok);
    if (parse_card(tok, &cards[*n])) {
      zs_config_error(ZESIM_DEVICES_ENV " entry '%s' is not DDDD:BB:DD.F[=SIZE][/integrated][/tiles=N][/maxalloc=SIZE]",
                      entry);
      rc = -1;
      break;
    }
    cards[*n].index = *n;
    (*n)++;
  }
  free(copy);
  return rc;
}

/* ------------------------------------------------------------------ ordering and mask */
static int g_pci_order;
static int card_less(const card *a, const card *b) {
  if (!g_pci_order && a->integrated != b->integrated) return b->integrated;
  if (a->domain != b->domain) return a->domain < b->domain;
  if (a->bus != b->bus) return a->bus < b->bus;
  if (a->dev != b->dev) return a->dev < b->dev;
  return a->fn < b->fn;
}

static void sort_cards(card *c, uint32_t n) { /* stable insertion sort: n is small */
  for (uint32_t i = 1; i < n; i++) {
    card t = c[i];
    uint32_t j = i;
    while (j > 0 && card_less(&t, &c[j - 1])) {
      c[j] = c[j - 1];
      j--;
    }
    c[j] = t;
  }
}

/* stoul(s, nullptr, 0) as compute-runtime calls it: base prefix, trailing junk ignored, no digits throws
 * (reported here as -1), the result truncated to uint32. */
static int mask_index(const char *s, uint32_t *out) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 0);
  if (end == s || errno == ERANGE) return -1;
  *out = (uint32_t)v;
  return 0;
}

typedef enum { H_COMPOSITE, H_FLAT, H_COMBINED } hierarchy;

/* enabled[c] = bitmask of enabled tiles of sorted card c. Returns -1 for a mask the real driver dies on. */
static int apply_mask(const char *mask, const card *cards, uint32_t n, hierarchy h, uint32_t *enabled) {
  for (uint32_t c = 0; c < n; c++) enabled[c] = (1u << cards[c].tiles) - 1;
  if (!mask || !*mask || !strcmp(mask, "default")) return 0;
  for (uint32_t c = 0; c < n; c++) enabled[c] = 0;
  /* flat index -> (card, tile) */
  uint32_t flat_card[ZS_MAX_DEVICES * ZS_MAX_TILES], flat_tile[ZS_MAX_DEVICES * ZS_MAX_TILES], n_flat = 0;
  for (uint32_t c = 0; c < n; c++)
    for (uint32_t t = 0; t < cards[c].tiles; t++) {
      flat_card[n_flat] = c;
      flat_tile[n_flat++] = t;
    }
  char *copy = strdup(mask);
  if (!copy) return -1;
  int rc = 0;
  char *p = copy;
  for (;;) {
    char *comma = strchr(p, ',');
    if (comma) *comma = 0;
    if (*p || comma) {
      char *parts[4];
      int np = 0;
      for (char *q = p; np < 4;) {
        parts[np++] = q;
        char *dot = strchr(q, '.');
        if (!dot) break;
        *dot = 0;
        q = dot + 1;
      }
      uint32_t idx, sub = 0;
      if (mask_index(parts[0], &idx) || (np > 1 && mask_index(parts[1], &sub))) {
        rc = -1;
        break;
      }
      if (h != H_COMPOSITE) {
        if (idx < n_flat && np == 1) enabled[flat_card[idx]] |= 1u << flat_tile[idx];
      } else if (idx < n) {
        if (np == 1) {
          enabled[idx] = (1u << cards[idx].tiles) - 1;
        } else if (sub < cards[idx].tiles) {
          if (np != 2) { /* X.Y.Z: the real driver stops on an internal check */
            rc = -1;
            break;
          }
          enabled[idx] |= 1u << sub;
        }
      }
    }
    if (!comma) break;
    p = comma + 1;
  }
  free(copy);
  return rc;
}

/* ------------------------------------------------------------------ building the device objects */
static zs_device *new_device(const card *c, uint32_t tile, uint32_t tiles_in_device) {
  zs_device *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  d->magic = ZS_MAGIC_DEVICE;
  d->domain = c->domain;
  d->bus = c->bus;
  d->dev = c->dev;
  d->fn = c->fn;
  d->integrated = c->integrated;
  d->card = c->index;
  d->tile = tile;
  uint64_t per_tile = c->mem / c->tiles;
  d->mem_size = per_tile * tiles_in_device;
  d->max_alloc = c->max_alloc < d->mem_size ? c->max_alloc : d->mem_size;
  /* A modest Xe-like shape: 16 subslices x 8 EUs per tile, 8 threads per EU. */
  d->slices = tiles_in_device;
  d->subslices_per_slice = 16;
  d->eus_per_subslice = 8;
  d->threads_per_eu = 8;
  memcpy(d->sg_sizes, c->sg, sizeof d->sg_sizes);
  d->n_sg_sizes = c->n_sg;
  return d;
}

static int env_flag(const char *name, int dflt) {
  const char *e = getenv(name);
  if (!e || !*e) return dflt;
  return strcmp(e, "0") != 0;
}

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static ze_result_t g_init_result = ZE_RESULT_ERROR_UNINITIALIZED;

static void init_once(void) {
  card cards[ZS_MAX_DEVICES];
  uint32_t n = 0;
  if (parse_devices(cards, &n)) return;
  const char *po = getenv("ZE_ENABLE_PCI_ID_DEVICE_ORDER");
  g_pci_order = po && atoi(po) != 0;
  /* ZESIM_ORDER=probe: behave like a driver that lists devices in probe order (tests the library's own sort). */
  const char *order = getenv("ZESIM_ORDER");
  if (!order || strcmp(order, "probe")) sort_cards(cards, n);
  const char *hs = getenv("ZE_FLAT_DEVICE_HIERARCHY");
  hierarchy h = H_FLAT; /* the default of Intel's multi-tile GPUs */
  if (hs && !strcmp(hs, "COMPOSITE")) h = H_COMPOSITE;
  else if (hs && !strcmp(hs, "COMBINED")) h = H_COMBINED;
  uint32_t enabled[ZS_MAX_DEVICES];
  if (apply_mask(getenv("ZE_AFFINITY_MASK"), cards, n, h, enabled)) {
    zs_config_error("ZE_AFFINITY_MASK='%s' is not a list of device indices (Intel's driver fails on it too)",
                    getenv("ZE_AFFINITY_MASK"));
    return;
  }
  zs_drv.magic = ZS_MAGIC_DRIVER;
  for (uint32_t c = 0; c < n; c++) {
    if (!enabled[c]) continue;
    uint32_t k = (uint32_t)__builtin_popcount(enabled[c]);
    if (h != H_COMPOSITE || k == 1) {
      /* FLAT/COMBINED: every enabled tile is a device; a single-tile card is the card itself. */
      for (uint32_t t = 0; t < cards[c].tiles; t++) {
        if (!(enabled[c] & (1u << t))) continue;
        if (zs_drv.n_devices == ZS_MAX_DEVICES) break;
        zs_device *d = new_device(&cards[c], cards[c].tiles > 1 ? t : ~0u, 1);
        if (!d) return;
        zs_drv.devices[zs_drv.n_devices++] = d;
      }
    } else {
      if (zs_drv.n_devices == ZS_MAX_DEVICES) break;
      zs_device *root = new_device(&cards[c], ~0u, k);
      if (!root) return;
      for (uint32_t t = 0; t < cards[c].tiles; t++) {
        if (!(enabled[c] & (1u << t))) continue;
        zs_device *s = new_device(&cards[c], t, 1);
        if (!s) return;
        s->is_subdevice = 1;
        root->sub[root->n_sub++] = s;
      }
      zs_drv.devices[zs_drv.n_devices++] = root;
    }
  }
  if (zs_drv.n_devices == 0) {
    zs_debug("no devices left after ZE_AFFINITY_MASK");
    return;
  }
  zs_drv.bf16_conversions = env_flag("ZESIM_BF16", 1);
  zs_drv.dpas = env_flag("ZESIM_DPAS", 0);
  zs_drv.out_of_order = env_flag("ZESIM_OUT_OF_ORDER", 0);
  zs_drv.in_order_api = env_flag("ZESIM_IN_ORDER", 1);
  zs_drv.copy_engine = env_flag("ZESIM_COPY_ENGINE", 1);
  char why[512] = "";
  if (zs_engine_start(why, sizeof why) != ZE_RESULT_SUCCESS) {
    zs_config_error("OpenCL engine unavailable: %s", why);
    zs_drv.n_devices = 0;
    return;
  }
  zs_drv.fp16 = zs_cl.fp16 && env_flag("ZESIM_FP16", 1);
  zs_drv.fp64 = zs_cl.fp64 && env_flag("ZESIM_FP64", 1);
  g_init_result = ZE_RESULT_SUCCESS;
}

ze_result_t zs_init_once(void) {
  pthread_once(&g_once, init_once);
  return g_init_result;
}

zs_device *zs_dev(ze_device_handle_t h) {
  zs_device *d = (zs_device *)h;
  return d && d->magic == ZS_MAGIC_DEVICE ? d : NULL;
}

static zs_driver *drv(ze_driver_handle_t h) {
  return (zs_driver *)h == &zs_drv && zs_drv.magic == ZS_MAGIC_DRIVER ? &zs_drv : NULL;
}

/* ------------------------------------------------------------------ driver entry points */
ze_result_t zs_zeInit(ze_init_flags_t flags) {
  if (flags && !(flags & ZE_INIT_FLAG_GPU_ONLY)) return ZE_RESULT_ERROR_UNINITIALIZED; /* VPU only: not us */
  return zs_init_once();
}

ze_result_t zs_zeDriverGet(uint32_t *pCount, ze_driver_handle_t *phDrivers) {
  if (!pCount) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (zs_init_once() != ZE_RESULT_SUCCESS) {
    *pCount = 0;
    return ZE_RESULT_SUCCESS;
  }
  if (*pCount == 0 || !phDrivers) {
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
  }
  phDrivers[0] = (ze_driver_handle_t)&zs_drv;
  *pCount = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeDriverGetApiVersion(ze_driver_handle_t h, ze_api_version_t *v) {
  if (!drv(h)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!v) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  /* 1.7 brings the in-order command list flags, which zesim honours (also in its out-of-order mode) */
  *v = zs_drv.in_order_api ? ZE_MAKE_VERSION(1, 7) : ZE_API_VERSION_1_4;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeDriverGetProperties(ze_driver_handle_t h, ze_driver_properties_t *p) {
  if (!drv(h)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  memset(p->uuid.id, 0, sizeof p->uuid.id);
  memcpy(p->uuid.id, "zesim-driver", 12);
  p->driverVersion = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeDriverGetExtensionProperties(ze_driver_handle_t h, uint32_t *pCount, ze_driver_extension_properties_t *p) {
  if (!drv(h)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!pCount) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const char *names[4];
  uint32_t n = 0;
  names[n++] = ZE_RELAXED_ALLOCATION_LIMITS_EXP_NAME;
  names[n++] = ZE_PCI_PROPERTIES_EXT_NAME;
  /* The Level Zero name of cl_intel_bfloat16_conversions (spec 1.5; Debian's 1.4 headers lack the macro). */
  if (zs_drv.bf16_conversions) names[n++] = "ZE_extension_bfloat16_conversions";
  if (*pCount == 0 || !p) {
    *pCount = n;
    return ZE_RESULT_SUCCESS;
  }
  if (*pCount > n) *pCount = n;
  for (uint32_t i = 0; i < *pCount; i++) {
    snprintf(p[i].name, sizeof p[i].name, "%s", names[i]);
    p[i].version = 1;
  }
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeDeviceGet(ze_driver_handle_t h, uint32_t *pCount, ze_device_handle_t *ph) {
  if (!drv(h)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!pCount) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*pCount == 0 || !ph) {
    *pCount = zs_drv.n_devices;
    return ZE_RESULT_SUCCESS;
  }
  if (*pCount > zs_drv.n_devices) *pCount = zs_drv.n_devices;
  for (uint32_t i = 0; i < *pCount; i++) ph[i] = (ze_device_handle_t)zs_drv.devices[i];
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeDeviceGetSubDevices(ze_device_handle_t h, uint32_t *pCount, ze_device_handle_t *ph) {
  zs_device *d = zs_dev(h);
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!pCount) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*pCount == 0 || !ph) {
    *pCount = d->n_sub;
    return ZE_RESULT_SUCCESS;
  }
  if (*pCount > d->n_sub) *pCount = d->n_sub;
  for (uint32_t i = 0; i < *pCount; i++) ph[i] = (ze_device_handle_t)d->sub[i];
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeDeviceGetProperties(ze_device_handle_t h, ze_device_properties_t *p) {
  zs_device *d = zs_dev(h);
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  p->type = ZE_DEVICE_TYPE_GPU;
  p->vendorId = 0x8086;
  p->deviceId = 0x5a53; /* "ZS" */
  p->flags = (d->integrated ? ZE_DEVICE_PROPERTY_FLAG_INTEGRATED : 0) |
             (d->is_subdevice ? ZE_DEVICE_PROPERTY_FLAG_SUBDEVICE : 0);
  p->subdeviceId = d->tile == ~0u ? 0 : d->tile;
  p->coreClockRate = 1000;
  p->maxMemAllocSize = d->max_alloc;
  p->maxHardwareContexts = 64;
  p->maxCommandQueuePriority = 0;
  p->numThreadsPerEU = d->threads_per_eu;
  p->physicalEUSimdWidth = 8;
  p->numEUsPerSubslice = d->eus_per_subslice;
  p->numSubslicesPerSlice = d->subslices_per_slice;
  p->numSlices = d->slices;
  p->timerResolution = 1;
  p->timestampValidBits = 64;
  p->kernelTimestampValidBits = 64;
  memset(p->uuid.id, 0, sizeof p->uuid.id);
  p->uuid.id[0] = 'z';
  p->uuid.id[1] = 's';
  p->uuid.id[2] = (uint8_t)(d->domain >> 8);
  p->uuid.id[3] = (uint8_t)d->domain;
  p->uuid.id[4] = (uint8_t)d->bus;
  p->uuid.id[5] = (uint8_t)d->dev;
  p->uuid.id[6] = (uint8_t)d->fn;
  p->uuid.id[7] = (uint8_t)(d->tile == ~0u ? 0xff : d->tile);
  if (d->tile == ~0u)
    snprintf(p->name, sizeof p->name, "zesim Software XPU");
  else
    snprintf(p->name, sizeof p->name, "zesim Software XPU (tile %u)", d->tile);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeDeviceGetComputeProperties(ze_device_handle_t h, ze_device_compute_properties_t *p) {
  zs_device *d = zs_dev(h);
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  p->maxTotalGroupSize = 1024;
  p->maxGroupSizeX = 1024;
  p->maxGroupSizeY = 1024;
  p->maxGroupSizeZ = 64;
  p->maxGroupCountX = 0xffffffffu;
  p->maxGroupCountY = 0xffffffffu;
  p->maxGroupCountZ = 0xffffffffu;
  p->maxSharedLocalMemory = 64 * 1024;
  p->numSubGroupSizes = d->n_sg_sizes;
  memset(p->subGroupSizes, 0, sizeof p->subGroupSizes);
  for (uint32_t i = 0; i < d->n_sg_sizes && i < ZE_SUBGROUPSIZE_COUNT; i++) p->subGroupSizes[i] = d->sg_sizes[i];
  return ZE_RESULT_SUCCESS;
}

/* Intel's dot-product module properties (ze_intel_gpu.h, driver 24.05+): stype 0x00030013, DPAS = bit 1. */
#define ZS_STYPE_INTEL_MODULE_DP 0x00030013u
typedef struct {
  ze_structure_type_t stype;
  void *pNext;
  uint32_t flags;
} zs_intel_module_dp_props;

ze_result_t zs_zeDeviceGetModuleProperties(ze_device_handle_t h, ze_device_module_properties_t *p) {
  if (!zs_dev(h)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  p->spirvVersionSupported = ZE_MAKE_VERSION(1, 2);
  p->flags = ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS | ZE_DEVICE_MODULE_FLAG_DP4A;
  ze_device_fp_flags_t fpf = ZE_DEVICE_FP_FLAG_DENORM | ZE_DEVICE_FP_FLAG_INF_NAN | ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST |
                             ZE_DEVICE_FP_FLAG_ROUND_TO_ZERO | ZE_DEVICE_FP_FLAG_ROUND_TO_INF | ZE_DEVICE_FP_FLAG_FMA;
  p->fp16flags = 0;
  p->fp64flags = 0;
  if (zs_drv.fp16) {
    p->flags |= ZE_DEVICE_MODULE_FLAG_FP16;
    p->fp16flags = fpf;
  }
  if (zs_drv.fp64) {
    p->flags |= ZE_DEVICE_MODULE_FLAG_FP64;
    p->fp64flags = fpf;
  }
  p->fp32flags = fpf;
  p->maxArgumentsSize = 2048;
  p->printfBufferSize = 4 * 1024 * 1024;
  memset(&p->nativeKernelSupported, 0, sizeof p->nativeKernelSupported);
  for (ze_base_properties_t *e = p->pNext; e; e = e->pNext)
    if ((uint32_t)e->stype == ZS_STYPE_INTEL_MODULE_DP)
      ((zs_intel_module_dp_props *)e)->flags = 1u /* DP4A */ | (zs_drv.dpas ? 2u : 0u);
  return ZE_RESULT_SUCCESS;
}

uint32_t zs_queue_groups(void) { return zs_drv.copy_engine ? 2u : 1u; }

ze_result_t zs_zeDeviceGetCommandQueueGroupProperties(ze_device_handle_t h, uint32_t *pCount,
                                                      ze_command_queue_group_properties_t *p) {
  if (!zs_dev(h)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!pCount) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  uint32_t groups = zs_queue_groups();
  if (*pCount == 0 || !p) {
    *pCount = groups;
    return ZE_RESULT_SUCCESS;
  }
  if (*pCount > groups) *pCount = groups;
  for (uint32_t i = 0; i < *pCount; i++) {
    if (i == ZS_ORDINAL_COMPUTE) {
      p[i].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY |
                   ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COOPERATIVE_KERNELS | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_METRICS;
      p[i].maxMemoryFillPatternSize = 128;
    } else {
      p[i].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
      p[i].maxMemoryFillPatternSize = ZS_COPY_FILL_PATTERN_MAX;
    }
    p[i].numQueues = 1;
  }
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeDeviceGetMemoryProperties(ze_device_handle_t h, uint32_t *pCount, ze_device_memory_properties_t *p) {
  zs_device *d = zs_dev(h);
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!pCount) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*pCount == 0 || !p) {
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
  }
  *pCount = 1;
  p->flags = 0;
  p->maxClockRate = 1000;
  p->maxBusWidth = 64;
  p->totalSize = d->mem_size;
  snprintf(p->name, sizeof p->name, "%s", "HBM");
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeDeviceGetMemoryAccessProperties(ze_device_handle_t h, ze_device_memory_access_properties_t *p) {
  if (!zs_dev(h)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  ze_memory_access_cap_flags_t all = ZE_MEMORY_ACCESS_CAP_FLAG_RW | ZE_MEMORY_ACCESS_CAP_FLAG_ATOMIC |
                                     ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT | ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT_ATOMIC;
  p->hostAllocCapabilities = all;
  p->deviceAllocCapabilities = all;
  p->sharedSingleDeviceAllocCapabilities = all;
  p->sharedCrossDeviceAllocCapabilities = all;
  p->sharedSystemAllocCapabilities = 0;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeDevicePciGetPropertiesExt(ze_device_handle_t h, ze_pci_ext_properties_t *p) {
  zs_device *d = zs_dev(h);
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  p->address.domain = d->domain;
  p->address.bus = d->bus;
  p->address.device = d->dev;
  p->address.function = d->fn;
  p->maxSpeed.genVersion = 4;
  p->maxSpeed.width = 16;
  p->maxSpeed.maxBandwidth = 32ll * 1000 * 1000 * 1000;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeDeviceCanAccessPeer(ze_device_handle_t a, ze_device_handle_t b, ze_bool_t *v) {
  if (!zs_dev(a) || !zs_dev(b)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!v) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *v = 1; /* all memory is host memory underneath */
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeDeviceGetStatus(ze_device_handle_t h) {
  return zs_dev(h) ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}
