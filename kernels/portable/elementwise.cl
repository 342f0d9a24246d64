/* Element-wise kernels: embedding gather, add, SwiGLU, GeGLU, softcap, scale, dtype conversion. One work-item per element. */
#include "xpi_cl.h"

/* out[n, d] = table[ids[i], :] as f32. Grid (d, n). An id outside [0, rows) yields a zero row (the host
 * validates ids it writes; this keeps a bad id from reading outside the table). */
kernel void xpi_embed(global float *out, const global void *table, int dt, const global int *ids, int rows,
                      int d) {
  int j = get_global_id(0), i = get_global_id(1);
  if (j >= d) return;
  int id = ids[i];
  out[(ulong)i * d + j] = (id >= 0 && id < rows) ? xpi_load(table, dt, (ulong)id * d + j) : 0.0f;
}

/* x[i] += y[i] */
kernel void xpi_add(global float *x, const global float *y, ulong count) {
  ulong i = get_global_id(0);
  if (i < count) x[i] += y[i];
}

/* out = silu(gate) * up, silu(g) = g / (1 + exp(-g)) as torch computes it. */
kernel void xpi_swiglu(global float *out, const global float *gate, const global float *up, ulong count) {
  ulong i = get_global_id(0);
  if (i >= count) return;
  out[i] = xpi_glu(gate[i], up[i], 0);
}

/* out = gelu_tanh(gate) * up: 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))), torch's approximate="tanh". */
kernel void xpi_geglu(global float *out, const global float *gate, const global float *up, ulong count) {
  ulong i = get_global_id(0);
  if (i >= count) return;
  out[i] = xpi_glu(gate[i], up[i], 1);
}

/* x = cap * tanh(x / cap) (logit softcapping) */
kernel void xpi_softcap(global float *x, ulong count, float cap) {
  ulong i = get_global_id(0);
  if (i < count) x[i] = cap * tanh(x[i] / cap);
}

/* x *= s */
kernel void xpi_scale(global float *x, ulong count, float s) {
  ulong i = get_global_id(0);
  if (i < count) x[i] *= s;
}

/* dst[i] = src[i] converted between f32 / f16 / bf16 (weights placed in another dtype, KV conversions). */
kernel void xpi_convert(global void *dst, int ddt, const global void *src, int sdt, ulong count) {
  ulong i = get_global_id(0);
  if (i < count) xpi_store(dst, ddt, i, xpi_load(src, sdt, i));
}
