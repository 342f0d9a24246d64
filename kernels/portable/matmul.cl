/* Matrix products out[n, rows] = in[n, cols] @ W^T (+ bias), W [rows, cols] row-major in f32/f16/bf16,
 * f32 accumulation. GEMV (decode, n = 1): one work-group of 64 per output, local-memory reduction.
 * GEMM (prefill): 16x16 output tiles with the shared K slices of in and W staged in local memory. */
#include "xpi_cl.h"

#define XPI_MWG 64
#define XPI_T 16

static inline float xpi_ld_f32(const global void *w, ulong i) { return ((const global float *)w)[i]; }
static inline float xpi_ld_f16(const global void *w, ulong i) { return vload_half(i, (const global half *)w); }
static inline float xpi_ld_bf16(const global void *w, ulong i) { return xpi_bf16_to_f32(((const global ushort *)w)[i]); }

/* Grid: (rows, n) groups of 64; group (r, t) writes out[t, r]. */
#define XPI_GEMV(SUFFIX)                                                                                  \
  __attribute__((reqd_work_group_size(XPI_MWG, 1, 1)))                                                    \
  kernel void xpi_gemv_##SUFFIX(global float *out, const global float *in, const global void *w,           \
                                const global void *bias, int bdt, int has_bias, int rows, int cols) {      \
    local float red[XPI_MWG];                                                                             \
    int r = get_group_id(0), t = get_group_id(1), lid = get_local_id(0);                                  \
    ulong wb = (ulong)r * cols;                                                                           \
    const global float *xr = in + (ulong)t * cols;                                                        \
    float acc = 0.0f;                                                                                     \
    for (int c = lid; c < cols; c += XPI_MWG) acc += xr[c] * xpi_ld_##SUFFIX(w, wb + c);                  \
    red[lid] = acc;                                                                                       \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                         \
    for (int s = XPI_MWG / 2; s > 0; s >>= 1) {                                                           \
      if (lid < s) red[lid] += red[lid + s];                                                              \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                       \
    }                                                                                                     \
    if (lid == 0) out[(ulong)t * rows + r] = red[0] + (has_bias ? xpi_load(bias, bdt, r) : 0.0f);         \
  }

/* Grid: local (16, 16), groups (ceil(rows/16), ceil(n/16)); work-item (lx, ly) writes out[t0+ly, r0+lx]. */
#define XPI_GEMM(SUFFIX)                                                                                  \
  __attribute__((reqd_work_group_size(XPI_T, XPI_T, 1)))                                                  \
  kernel void xpi_gemm_##SUFFIX(global float *out, const global float *in, const global void *w,           \
                                const global void *bias, int bdt, int has_bias, int rows, int cols,       \
                                int n) {                                                                  \
    local float xs[XPI_T][XPI_T + 1];                                                                     \
    local float ws[XPI_T][XPI_T + 1];                                                                     \
    int lx = get_local_id(0), ly = get_local_id(1);                                                       \
    int r0 = get_group_id(0) * XPI_T, t0 = get_group_id(1) * XPI_T;                                       \
    float acc = 0.0f;                                                                                     \
    for (int k0 = 0; k0 < cols; k0 += XPI_T) {                                                            \
      int kk = k0 + lx;                                                                                   \
      xs[ly][lx] = (t0 + ly < n && kk < cols) ? in[(ulong)(t0 + ly) * cols + kk] : 0.0f;                  \
      ws[ly][lx] = (r0 + ly < rows && kk < cols) ? xpi_ld_##SUFFIX(w, (ulong)(r0 + ly) * cols + kk) : 0.0f; \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                       \
      for (int k = 0; k < XPI_T; k++) acc += xs[ly][k] * ws[lx][k];                                       \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                       \
    }                                                                                                     \
    int r = r0 + lx, t = t0 + ly;                                                                         \
    if (r < rows && t < n) out[(ulong)t * rows + r] = acc + (has_bias ? xpi_load(bias, bdt, r) : 0.0f);   \
  }

XPI_GEMV(f32)
XPI_GEMV(f16)
XPI_GEMV(bf16)
XPI_GEMM(f32)
XPI_GEMM(f16)
XPI_GEMM(bf16)
