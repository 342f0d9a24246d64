/* Shared state of the XPU backend (Level Zero): the per-device module/kernels and the per-backend queue,
 * command lists and scratch. Internal to src/ops/xpu. */
#ifndef XPI_XPU_INTERNAL_H
#define XPI_XPU_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/ops.h"
#include "ops/xpu/xpu_kernel_table.h"
#include "runtime/ze/ze_devices.h"
#include "runtime/ze/ze_loader.h"

/* Every kernel the backend launches (xpu_kernel_table.h: names, tiers, arguments and costs). */
typedef enum xpu_kid {
#define XPU_KID(id, name, tier, args, wbytes, indirect, cost) XK_##id,
  XPU_KERNELS(XPU_KID)
#undef XPU_KID
  XK_COUNT
} xpu_kid;

/* One per Level Zero device, shared by every backend on it (reference counted): the context, the modules
 * built once from the embedded SPIR-V, and the kernels created once. Kernel objects hold their arguments, so
 * setting arguments + appending a launch happens under lock. */
typedef struct xpu_device {
  int refs;
  int index;
  const xpi_ze_api *ze;
  const xpi_ze_device *dev;
  ze_context_handle_t ctx;
  ze_module_handle_t mod_portable, mod_tuned, mod_dpas;
  ze_kernel_handle_t k[XK_COUNT];
  int tuned;             /* sub-group kernels usable */
  int dpas;              /* DPAS GEMMs (bf16, q8/q4) usable: their sub-group size (8 or 16), 0 if not */
  pthread_mutex_t lock;
} xpu_device;

/* The kernel tiers a device may use, decided from what it reports before any module is built (a tier whose
 * module then fails to build falls back to the one below). tuned: the device has sub-group size 16 (the tuned
 * kernels' reqd_sub_group_size). dpas: tuned, the device reports DPAS, and its smallest sub-group size is 8 or
 * 16; the value is that size, the DPAS kernel variant to build (kernels/dpas8 or kernels/dpas).
 * cl_intel_subgroup_matrix_multiply_accumulate defines each form of the builtin only where its sub-group size
 * is the device's natural (smallest) one: the sub-group-16 form on Arc A-series (DG2, 8/16/32) compiles
 * without a dpas instruction and returns zeros. why_not_dpas says why a DPAS device does not get the tier. */
typedef struct xpu_tier_plan {
  int tuned, dpas;
  char why_not_dpas[160];
} xpu_tier_plan;
void xpu_tier_select(const xpi_device_info *info, int portable_only, xpu_tier_plan *out);

xpi_status xpu_device_acquire(int index, xpu_device **out);
const char *xpu_kernel_name(xpu_kid kid);
void xpu_device_release(xpu_device *d);

/* Scratch buffers replaced while a recording may reference them; freed with the backend. */
typedef struct xpu_retired {
  void *p;
  struct xpu_retired *next;
} xpu_retired;

/* Host USM the backend handed out (alloc_host): written and read by the host in place, read by kernels. */
typedef struct xpu_host_buf {
  void *p;
  size_t size;
  struct xpu_host_buf *next;
} xpu_host_buf;

/* Weight uploads (xpu_upload.c): an immediate list on the copy engine (the compute group where the device has
 * no copy-only group), two host USM staging buffers and their events. Created at the first upload. */
#define XPU_STAGE_BYTES ((size_t)4 << 20)
typedef struct xpu_uploader {
  int ready;
  int copy_engine;                       /* 1: the list is on a copy-only queue group */
  uint32_t ordinal;
  ze_command_list_handle_t list;
  ze_event_pool_handle_t pool;
  ze_event_handle_t ev[2];
  void *stage[2];
  int busy[2];                           /* a copy out of stage[i] may still run: wait ev[i] before refilling */
} xpu_uploader;

typedef struct xpu_impl {
  xpu_device *d;
  const xpi_ze_api *ze;
  ze_command_queue_handle_t queue;       /* runs recorded graphs */
  uint32_t ordinal;                      /* compute queue group */
  int in_order;                          /* immediate and recorded lists are in order: no barrier per launch */
  ze_command_list_handle_t imm;          /* immediate list: ordinary ops, copies */
  ze_command_list_handle_t rec;          /* regular list being recorded by rec_owner, or NULL */
  pthread_t rec_owner;
  pthread_mutex_t lock;                  /* recursive: one thread at a time appends, syncs, copies */
  pthread_mutex_t cap_lock;              /* held from capture_begin to capture_end by the recording thread */
  ze_event_pool_handle_t evpool;
  ze_event_handle_t ev;                  /* host wait for the immediate list */
  int imm_pending, queue_pending;        /* unsynchronized work on either path */
  struct xpu_usage *usage;               /* live allocations (xpu_memory.c) */
  xpu_host_buf *host;                    /* live host USM buffers (alloc_host) */
  xpu_uploader up;                       /* weight uploads */
  void *scratch;                         /* eager attention scores */
  size_t scratch_bytes;
  void *partials;                        /* split kernels' partial results (xpu_partials) */
  size_t partials_bytes;
  int32_t *counters;                     /* split kernels' completion counts (xpu_counters_init) */
  float *splitk_part;                    /* split-K GEMV partial sums, XPU_SPLITK_PART floats (xpu_counters_init) */
  xpu_retired *retired;
  uint64_t bytes_read;                   /* device-to-host bytes through read() (tests check the decode step) */
  xpi_perf_report *perf;                 /* launches counted here when set (xpu_perf.c) */
  uint64_t rec_launches;                 /* kernel launches appended to the recording in progress */
  uint64_t replayed_launches, replays;   /* kernel launches submitted through replay(), and replays (tests count
                                          * the launches of a decode step) */
} xpu_impl;

static inline xpu_impl *im_of(const xpi_backend *be) { return (xpu_impl *)be->impl; }

/* The recording of the calling thread, or NULL: requests on other threads keep using the immediate list
 * while one thread records. */
static inline ze_command_list_handle_t xpu_my_rec(const xpu_impl *im) {
  return im->rec && pthread_equal(im->rec_owner, pthread_self()) ? im->rec : NULL;
}

/* Returns from the calling function with a Level Zero failure as an xpi_status (be in scope). */
#define ZE_CHECK(call, what)                                                                                   \
  do {                                                                                                       \
    ze_result_t r_ = (call);                                                                                 \
    if (r_ != ZE_RESULT_SUCCESS)                                                                             \
      return xpi_err(r_ == ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY ? XPI_ERR_OUT_OF_MEMORY : XPI_ERR_DEVICE,     \
                     "%s: %s failed (%s)", be->device, what, xpu_ze_result_name(r_));                         \
  } while (0)

/* A kernel argument: size and address of the value (pointers by address of the pointer). */
typedef struct xpu_arg {
  size_t size;
  const void *value;
} xpu_arg;
#define XA(v) ((xpu_arg){sizeof(v), &(v)})

/* Appends kernel kid with groups (gx, gy, gz) of (lx, ly, lz) work-items to the current list (the recording
 * if capturing, else the immediate list). The lists are in order where the driver offers it; elsewhere a barrier
 * follows each launch, so ops run in order either way. */
xpi_status xpu_launch(xpi_backend *be, xpu_kid kid, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t lx, uint32_t ly,
                      uint32_t lz, const xpu_arg *args, int nargs);
/* The performance model's cost of one launch (xpu_perf.c), added to im->perf; called by xpu_launch when set. */
xpi_status xpu_perf_count(xpi_backend *be, xpu_kid kid, uint32_t gx, uint32_t gy, uint32_t gz, const xpu_arg *args,
                          int nargs);
/* A device-to-host copy left out of bytes_read (the performance model reading positions). */
xpi_status xpu_read_uncounted(xpi_backend *be, void *dst, const void *src, size_t bytes);
/* Waits for the graph queue if it has work (before the immediate list touches what a replay wrote). */
xpi_status xpu_order_after_queue(xpi_backend *be);
/* Device memory of at least bytes for temporary results (grows; replaced buffers are kept until the backend
 * goes, as recorded graphs may reference them). */
xpi_status xpu_scratch(xpi_backend *be, size_t bytes, void **out);
/* The same for the partial results of split kernels (split-K sdpa, two-stage argmax): never the scratch, which an
 * op's inputs may live in. */
xpi_status xpu_partials(xpi_backend *be, size_t bytes, void **out);
/* im->counters: XPU_COUNTERS zeroed ints (at backend creation; outside any recording). A split kernel's last
 * work-group finds itself by an atomic count there and sets it back to zero: [0, XPU_SDPA_COUNTERS) for sdpa
 * (one per KV head x head chunk), the next XPU_ARGMAX_COUNTERS for argmax (one per row), the last
 * XPU_SPLITK_COUNTERS for the split-K GEMV (one per row block: 8 rows, q8/q4 `splits` rows). With them,
 * im->splitk_part: the split-K GEMV's partial sums, a fixed XPU_SPLITK_PART floats allocated with the backend, so
 * the memory plan (which reads the device's free memory after the backends exist) has counted it and no recording
 * regrows it. */
#define XPU_SDPA_COUNTERS 2048
#define XPU_ARGMAX_COUNTERS 2048
#define XPU_SPLITK_COUNTERS 2048
#define XPU_COUNTERS (XPU_SDPA_COUNTERS + XPU_ARGMAX_COUNTERS + XPU_SPLITK_COUNTERS)
#define XPU_SPLITK_ROWS 8     /* rows a split-K work-group computes (XPI_SKR) */
#define XPU_SPLITK_MAX 16     /* most splits of a row */
#define XPU_SPLITK_MAXROWS 4096 /* rows a split-K GEMV takes at most */
#define XPU_SPLITK_PART ((size_t)XPU_SPLITK_MAXROWS * XPU_SPLITK_MAX)
xpi_status xpu_counters_init(xpi_backend *be);
xpi_status xpu_sync(xpi_backend *be);
xpi_status xpu_sync_imm(xpi_backend *be);

/* Memory (xpu_memory.c): device allocations, counted per device so that device maps can split by free
 * memory; copies. */
void *xpu_alloc(xpi_backend *be, size_t bytes);
/* Host USM (zeMemAllocHost) for per-step inputs and small outputs: write/read copy them with memcpy once the
 * work that may use them has completed, so a replayed decode step needs no copy command; kernels read them
 * directly. Freed with xpu_free. */
void *xpu_alloc_host(xpi_backend *be, size_t bytes);
/* Host -> device copy of weights through host USM staging on the copy engine where the device has one
 * (xpu_upload.c); returns when the bytes have landed. */
xpi_status xpu_upload(xpi_backend *be, void *dst, const void *src, size_t bytes);
/* The upload list and staging (at destroy). */
void xpu_upload_release(xpu_impl *im);
void xpu_free(xpi_backend *be, void *p);
xpi_status xpu_write(xpi_backend *be, void *dst, const void *src, size_t bytes);
xpi_status xpu_read(xpi_backend *be, void *dst, const void *src, size_t bytes);
/* Frees whatever the backend still holds (at destroy) and its bookkeeping. */
void xpu_usage_release(xpu_impl *im);
const char *xpu_ze_result_name(ze_result_t r);

struct xpi_kv {
  xpi_dtype dtype;
  int32_t n_layers, n_blocks, block_size, block_shift, hk, hd;
  void *k, *v; /* device: [n_layers][n_blocks][block_size][hk][hd] each */
};

/* The ops (xpu_ops.c), installed in the table by backend_xpu.c. */
xpi_status xpu_embed(xpi_backend *be, float *out, const xpi_weight *table, const int32_t *ids, int32_t n);
xpi_status xpu_rmsnorm(xpi_backend *be, float *out, float *x, const float *residual, const xpi_weight *w, int32_t n,
                       int32_t d, float eps);
xpi_status xpu_matmul(xpi_backend *be, float *out, const float *in, const xpi_weight *w, const xpi_weight *bias,
                      int32_t n);
xpi_status xpu_rope(xpi_backend *be, float *q, float *k, const int32_t *pos, int32_t n, int32_t hq, int32_t hk,
                    const xpi_rope_params *rp, const float *inv_freq, const xpi_weight *q_norm,
                    const xpi_weight *k_norm, float eps);
xpi_status xpu_attention(xpi_backend *be, float *out, const float *q, const float *k, const float *v, xpi_kv *kv,
                         int32_t layer, const xpi_kv_map *map, int32_t n, int32_t hq, int32_t hk, int32_t hd,
                         const xpi_attn_params *ap);
xpi_status xpu_swiglu(xpi_backend *be, float *out, const float *gate, const float *up, int32_t n, int32_t f);
xpi_status xpu_geglu(xpi_backend *be, float *out, const float *gate, const float *up, int32_t n, int32_t f);
xpi_status xpu_softcap(xpi_backend *be, float *x, int64_t count, float cap);
xpi_status xpu_scale(xpi_backend *be, float *x, int64_t count, float s);
xpi_status xpu_add(xpi_backend *be, float *x, const float *y, int64_t count);
xpi_status xpu_argmax(xpi_backend *be, int32_t *out, const float *x, int32_t rows, int32_t cols);
xpi_status xpu_topk(xpi_backend *be, int32_t *ids, float *vals, float *norm, const float *x, int32_t rows,
                    int32_t cols, int32_t k);
/* xpu_moe.c */
xpi_status xpu_moe_route(xpi_backend *be, int32_t *ids, float *wts, const float *logits, int32_t n, int32_t n_experts,
                         int32_t k, int norm_topk);
xpi_status xpu_moe_matmul(xpi_backend *be, float *out, const float *in, int32_t in_k, const xpi_experts *e,
                          const int32_t *ids, int32_t n, int32_t k);
xpi_status xpu_moe_combine(xpi_backend *be, float *out, const float *y, const int32_t *pos, const float *wts,
                           const float *shared, const float *shared_gate, int32_t n, int32_t k, int32_t d);
xpi_status xpu_matmul_multi(xpi_backend *be, int count, float *const *outs, const float *in, const xpi_weight *norm,
                            float eps, float *hbuf, const xpi_weight *const *ws, const xpi_weight *const *biases,
                            int32_t n);
xpi_status xpu_matmul_glu(xpi_backend *be, float *out, float *tmp, const float *in, const xpi_weight *norm, float eps,
                          float *hbuf, const xpi_weight *gate, const xpi_weight *up, xpi_glu_act act, int32_t n);
xpi_status xpu_matmul_add(xpi_backend *be, float *x, float *tmp, const float *in, const xpi_weight *w,
                          const xpi_weight *bias, int32_t n);
xpi_status xpu_convert(xpi_backend *be, void *dst, xpi_dtype ddt, const void *src, xpi_dtype sdt, size_t count);
/* Capability query of the op table (xpu_ops.c: the dtypes and sizes the ops take). */
int xpu_supports(const xpi_backend *be, const xpi_op_desc *d);

/* Placing a weight (backend_xpu.c, for the float and the q8/q4 paths): device memory for a [rows, cols] weight
 * of dtype dt (out of memory: a status naming the weight); and the end of an upload into buf, which frees buf
 * when s is a failure and returns s. */
xpi_status xpu_weight_alloc(xpi_backend *be, size_t bytes, int64_t rows, int64_t cols, xpi_dtype dt, void **buf);
xpi_status xpu_weight_placed(xpi_backend *be, xpi_status s, void *buf);

/* q8/q4 weights (xpu_quant.c): placement at load, and the matmul over them. */
xpi_status xpu_quant_weight_create(xpi_backend *be, xpi_weight *w, const void *src, xpi_dtype src_dtype,
                                   int64_t rows, int64_t cols, xpi_dtype want);
xpi_status xpu_matmul_q(xpi_backend *be, float *out, const float *in, const xpi_weight *w, const xpi_weight *bias,
                        int32_t n);

/* Split-K decode GEMV (xpu_splitk.c): the splits of the columns a [rows, cols] weight of dtype dt gets at n = 1 on
 * this device (1: the unsplit GEMV fills it); and the launch computing out (+)= in . W^T (+ bias) that way. */
int xpu_splitk_splits(const xpi_backend *be, xpi_dtype dt, int64_t rows, int64_t cols);
xpi_status xpu_gemv_splitk(xpi_backend *be, float *out, const float *in, const xpi_weight *w, const xpi_weight *bias,
                           int splits, int accumulate);

#endif
