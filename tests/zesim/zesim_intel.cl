/* Intel-tuned kernels for the zesim conformance test: run only on Intel's CPU OpenCL engine (cl_intel_subgroups). */
/* cl_intel_subgroups: out[i] = x of the next lane in the subgroup (wrapping), sizes[group] = subgroup size. */
kernel void sg_rotate(global const int *x, global int *out, global int *size) {
  size_t i = get_global_id(0);
  uint n = get_sub_group_size(), lane = get_sub_group_local_id();
  out[i] = intel_sub_group_shuffle(x[i], (lane + 1) % n);
  if (i == 0) size[0] = (int)n;
}
