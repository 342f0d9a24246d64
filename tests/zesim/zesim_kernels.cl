/* Kernels for the zesim conformance test (compiled to SPIR-V at build time). */

/* y[i] = a * x[i] + y[i] for i < n: pointer, by-value float and int arguments. */
kernel void axpy(global float *y, global const float *x, float a, int n) {
  int i = (int)get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}

/* out[group] = sum of x over the group, through local memory given as a size-only argument. */
kernel void group_sum(global const float *x, global float *out, local float *tmp) {
  size_t lid = get_local_id(0), n = get_local_size(0);
  tmp[lid] = x[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = n / 2; s > 0; s /= 2) {
    if (lid < s) tmp[lid] += tmp[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) out[get_group_id(0)] = tmp[0];
}

/* buf[i] += step[0]: the step lives in device memory, so a replayed list sees its current value. */
kernel void add_step(global int *buf, global const int *step) {
  buf[get_global_id(0)] += step[0];
}

/* A by-value struct argument. */
typedef struct { int off; float scale; } params;
kernel void scale_at(global float *y, params p) {
  size_t i = get_global_id(0);
  y[i + p.off] *= p.scale;
}
