/* zesim: a software Level Zero driver. The stock loader (libze_loader) loads it through
 * ZE_ENABLE_ALT_DRIVERS; it runs SPIR-V kernels on the CPU through PoCL (OpenCL) so that the XPU path of
 * libxpuinfer can be exercised without an Intel GPU. Internal header shared by the zesim sources. */
#ifndef ZESIM_H
#define ZESIM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <level_zero/ze_api.h>

#include "zesim_counters.h"

#define ZS_MAX_DEVICES 64
#define ZS_MAX_TILES 4

/* ------------------------------------------------------------ devices (zesim_devices.c) */
typedef struct zs_device {
  uint32_t magic;
  uint32_t domain, bus, dev, fn; /* PCI address */
  uint64_t mem_size;             /* bytes this device exposes (a tile's share when it is a tile) */
  uint64_t max_alloc;            /* maxMemAllocSize */
  uint64_t mem_used;             /* device allocations now live (guarded by zs_lock) */
  int integrated;
  uint32_t slices, subslices_per_slice, eus_per_subslice, threads_per_eu;
  uint32_t sg_sizes[8], n_sg_sizes; /* reported sub-group sizes (ZESIM_DEVICES /sg=...; default 8, 16, 32) */
  int is_subdevice;              /* a tile reached through zeDeviceGetSubDevices (COMPOSITE) */
  uint32_t tile;                 /* tile index on its card; ~0u when the device is the whole card */
  uint32_t card;                 /* index of the card in ZESIM_DEVICES order (for the UUID) */
  uint32_t n_sub;                /* COMPOSITE: tiles reachable with zeDeviceGetSubDevices */
  struct zs_device *sub[ZS_MAX_TILES];
} zs_device;

typedef struct zs_driver {
  uint32_t magic;
  uint32_t n_devices;
  zs_device *devices[ZS_MAX_DEVICES];
  int bf16_conversions; /* advertise ZE_extension_bfloat16_conversions */
  int dpas;             /* report DPAS in the Intel module dot-product properties */
  int fp16, fp64;
  int out_of_order;     /* ZESIM_OUT_OF_ORDER=1: lists without the in-order flag run launches out of order */
  int in_order_api;     /* ZESIM_IN_ORDER=0 reports API 1.4 (before the in-order flags) instead of 1.7 */
  int copy_engine;      /* ZESIM_COPY_ENGINE=0 hides the copy-only queue group (ordinal 1), as on a GPU without one */
} zs_driver;

/* Queue groups as Intel's compute-runtime reports them on discrete GPUs: ordinal 0 the compute engines
 * (compute, copy, cooperative kernels, metrics), ordinal 1 the main copy engine (BCS: copy only, fill patterns
 * up to 4 bytes). Lists and queues of ordinal 1 take copies, fills, barriers, signals and waits, no kernels. */
#define ZS_ORDINAL_COMPUTE 0u
#define ZS_ORDINAL_COPY 1u
#define ZS_COPY_FILL_PATTERN_MAX 4u
uint32_t zs_queue_groups(void); /* 2 with the copy engine, else 1 */

/* API call counters (zesim_counters.h; guarded by zs_lock). */
extern zesim_counters zs_count;

/* The in-order flags of Level Zero 1.7 (ze_api.h 1.7+; the Debian 12 header is 1.4). */
#define ZS_COMMAND_QUEUE_FLAG_IN_ORDER (1u << 1) /* immediate command lists */
#define ZS_COMMAND_LIST_FLAG_IN_ORDER (1u << 3)  /* regular command lists */

/* One driver, one OpenCL engine for the whole process. */
extern zs_driver zs_drv;
extern pthread_mutex_t zs_lock; /* guards allocation tables, kernel args, execution */

ze_result_t zs_init_once(void);   /* parses the environment, starts the OpenCL engine; idempotent */
zs_device *zs_dev(ze_device_handle_t h);

/* ------------------------------------------------------------ OpenCL engine (zesim_engine.c) */
typedef struct zs_engine {
  cl_platform_id platform;
  cl_device_id device;
  cl_context ctx;
  cl_command_queue queue;
  int fp16, fp64;
  int spirv_il; /* takes SPIR-V with clCreateProgramWithIL (Intel's runtime); else llvm-spirv -r + bitcode */
  char name[128];
} zs_engine;
extern zs_engine zs_cl;
ze_result_t zs_engine_start(char *why, size_t cap);
const char *zs_cache_dir(void); /* per-user folder for converted modules */

/* ------------------------------------------------------------ memory (zesim_mem.c) */
typedef struct zs_alloc {
  void *ptr;
  size_t size;
  ze_memory_type_t type;
  zs_device *device; /* NULL for host allocations */
  uint64_t id;
} zs_alloc;
const zs_alloc *zs_alloc_find(const void *p); /* the allocation containing p (zs_lock held) */

/* ------------------------------------------------------------ modules and kernels (zesim_module.c) */
enum { ZS_ARG_UNSET = 0, ZS_ARG_PTR, ZS_ARG_LOCAL, ZS_ARG_VALUE };
typedef struct zs_arg {
  int kind;
  size_t size;             /* ZS_ARG_LOCAL: bytes of local memory; ZS_ARG_VALUE: bytes of the value */
  unsigned char value[64]; /* pointer or by-value bytes (larger by-value arguments in heap) */
  unsigned char *big;
} zs_arg;

typedef struct zs_kernel {
  uint32_t magic;
  struct zs_module *module;
  cl_kernel k;
  char name[256];
  uint32_t n_args;
  cl_kernel_arg_address_qualifier *quals;
  zs_arg *args;
  uint32_t gx, gy, gz;      /* group size */
  size_t reqd[3];           /* compile-time work-group size (0 if none) */
} zs_kernel;

typedef struct zs_module {
  uint32_t magic;
  cl_program prog;
  uint32_t *spirv;        /* a copy of the module, for the argument kinds of its kernels */
  size_t spirv_size;
  char *names;            /* kernel names, filled at the first zeModuleGetKernelNames */
  const char **name_ptrs;
  uint32_t n_names;
  int large_buffers;      /* built with -ze-opt-greater-than-4GB-buffer-required: kernels may take buffers over
                             maxMemAllocSize (zesim's stand-in for Intel's 4 GiB stateful-addressing limit) */
} zs_module;

/* quals[i] for the n_args parameters of kernel in the SPIR-V module; 0 on success, -1 if it cannot tell. */
int zs_spirv_arg_quals(const void *spirv, size_t size, const char *kernel, cl_kernel_arg_address_qualifier *quals,
                       uint32_t n_args);

/* Structural check of a SPIR-V module (magic, instruction lengths); -1 with a reason in why. */
int zs_spirv_check(const void *spirv, size_t size, char *why, size_t cap);

/* Sets every argument of a launch on the cl_kernel (zs_lock held). */
cl_int zs_kernel_apply_args(cl_kernel k, const zs_arg *args, uint32_t n);
void zs_args_free(zs_arg *args, uint32_t n);
int zs_args_copy(zs_arg *dst, const zs_arg *src, uint32_t n);

/* ------------------------------------------------------------ command lists, queues, events (zesim_cmd.c) */
typedef struct zs_event {
  uint32_t magic;
  struct zs_event_pool *pool;
  int signaled;  /* 1 once the work before it completed */
  int pending;   /* signal requested, completes at the next flush */
} zs_event;

typedef struct zs_event_pool {
  uint32_t magic;
  uint32_t count;
  zs_event *events;
} zs_event_pool;

/* Completes everything enqueued on the engine and marks pending events and fences signaled (zs_lock held). */
ze_result_t zs_flush(void);

/* Logs to stderr when ZESIM_DEBUG=1. */
void zs_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define ZS_MAGIC_DEVICE 0x5a534456u
#define ZS_MAGIC_DRIVER 0x5a534452u
#define ZS_MAGIC_CONTEXT 0x5a534358u
#define ZS_MAGIC_MODULE 0x5a534d44u
#define ZS_MAGIC_KERNEL 0x5a534b4eu
#define ZS_MAGIC_LIST 0x5a53434cu
#define ZS_MAGIC_QUEUE 0x5a534351u
#define ZS_MAGIC_EVENT 0x5a534556u
#define ZS_MAGIC_POOL 0x5a535050u
#define ZS_MAGIC_FENCE 0x5a534646u
#define ZS_MAGIC_LOG 0x5a534c47u

#endif
