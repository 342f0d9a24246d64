/* Helpers shared by every kernel: dtype codes (the values of xpi_dtype in src/ops/ops.h) and f32 <-> f16/bf16
 * loads and stores. Only OpenCL C 1.2 builtins, so the portable tier runs on any SPIR-V consumer (PoCL too). */
#ifndef XPI_CL_H
#define XPI_CL_H

#define XPI_DT_F32 0
#define XPI_DT_F16 1
#define XPI_DT_BF16 2

/* bf16 is the high half of an f32. */
static inline float xpi_bf16_to_f32(ushort u) { return as_float((uint)u << 16); }

/* Round to nearest even, as torch's .to(torch.bfloat16); NaN stays a (quiet) NaN. */
static inline ushort xpi_f32_to_bf16(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (ushort)(u >> 16);
}

/* Element i of a tensor of dtype dt as f32. dt is uniform over a launch, so the branch costs little. */
static inline float xpi_load(const global void *p, int dt, ulong i) {
  if (dt == XPI_DT_BF16) return xpi_bf16_to_f32(((const global ushort *)p)[i]);
  if (dt == XPI_DT_F16) return vload_half(i, (const global half *)p);
  return ((const global float *)p)[i];
}

static inline void xpi_store(global void *p, int dt, ulong i, float v) {
  if (dt == XPI_DT_BF16) ((global ushort *)p)[i] = xpi_f32_to_bf16(v);
  else if (dt == XPI_DT_F16) vstore_half_rte(v, i, (global half *)p);
  else ((global float *)p)[i] = v;
}

/* v as it reads back after xpi_store in dtype dt (a value used straight from a step's inputs where the others read
 * the stored copy). */
static inline float xpi_round_dt(float v, int dt) {
  if (dt == XPI_DT_BF16) return xpi_bf16_to_f32(xpi_f32_to_bf16(v));
  if (dt == XPI_DT_F16) {
    ushort u;
    vstore_half_rte(v, 0, (half *)&u);
    return vload_half(0, (const half *)&u);
  }
  return v;
}

/* a / b correctly rounded. OpenCL allows 2.5 ulp for f32 division unless the module is built with
 * -cl-fp32-correctly-rounded-divide-sqrt; the CPU's quotients are IEEE, and one ulp of 127/amax can move an
 * activation quant. The correctly rounded quotient is the candidate within a few ulps of the approximate one
 * whose residual a - q*b (fma: one rounding of a near-exact value) is smallest; ties cannot occur (a quotient of
 * two 24-bit significands is never a 25-bit midpoint unless b is a power of two, where division is exact). */
static inline float xpi_div_rn(float a, float b) {
  const float q0 = a / b;
  float best = q0, be = fabs(fma(-q0, b, a)), up = q0, dn = q0;
  for (int k = 0; k < 3; k++) {
    up = nextafter(up, INFINITY);
    dn = nextafter(dn, -INFINITY);
    const float eu = fabs(fma(-up, b, a)), ed = fabs(fma(-dn, b, a));
    if (eu < be) best = up, be = eu;
    if (ed < be) best = dn, be = ed;
  }
  return best;
}

/* sqrt(a), a > 0, as the candidate within 3 ulps of OpenCL's (3-ulp) sqrt whose residual a - s*s (fma) is
 * smallest: the two floats around the root have the smallest residuals, so the pick does not depend on which
 * approximation the runtime's sqrt was, and it is the correctly rounded root except where the root lies within
 * about 2^-26 ulp of a midpoint. */
static inline float xpi_sqrt_rn(float a) {
  const float s0 = sqrt(a);
  float best = s0, be = fabs(fma(-s0, s0, a)), up = s0, dn = s0;
  for (int k = 0; k < 3; k++) {
    up = nextafter(up, INFINITY);
    dn = nextafter(dn, 0.0f);
    const float eu = fabs(fma(-up, up, a)), ed = fabs(fma(-dn, dn, a));
    if (eu < be) best = up, be = eu;
    if (ed < be) best = dn, be = ed;
  }
  return best;
}

/* The RMSNorm scale 1 / sqrt(ss / d + eps) from the row's sum of squares, with the CPU's operations
 * (src/ops/cpu: 1.0f / sqrtf(ss / (float)d + eps)), each rounded as IEEE rounds it, rather than OpenCL's rsqrt
 * and division: their error bounds let two compilations of the same kernel (the portable and the tuned tier,
 * or one runtime's scalar and vector code) return different ulps, and the q8/q4 path quantizes the normalised
 * row to int8, where one ulp can move a quant. */
static inline float xpi_rms_inv(float ss, int d, float eps) {
  return xpi_div_rn(1.0f, xpi_sqrt_rn(xpi_div_rn(ss, (float)d) + eps));
}

/* The gated-MLP activations times up, as torch computes them: one definition for the element-wise kernels and
 * the fused GEMV epilogues, so that both give the same bits. act 0: silu(g) = g / (1 + exp(-g)); 1: gelu_tanh,
 * 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))). */
static inline float xpi_glu(float g, float u, int act) {
#pragma OPENCL FP_CONTRACT OFF /* g + 0.044715 g^3 as a multiply and an add, whichever module includes this */
  if (act == 1) {
    float inner = 0.7978845608028654f * (g + 0.044715f * g * g * g);
    return 0.5f * g * (1.0f + tanh(inner)) * u;
  }
  return g / (1.0f + exp(-g)) * u;
}

#endif
