/* bf16 / f16 <-> f32 conversions shared by all code (weights, KV cache, tests).
 * bf16 -> f32 and f16 -> f32 are exact; f32 -> bf16/f16 round to nearest even, as torch's .to() does. */
#ifndef XPI_OPS_HALF_H
#define XPI_OPS_HALF_H

#include <stdint.h>
#include <string.h>

static inline float xpi_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline uint16_t xpi_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* NaN stays a (quiet) NaN */
  u += 0x7fffu + ((u >> 16) & 1u);                                        /* round to nearest even */
  return (uint16_t)(u >> 16);
}

static inline float xpi_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (man << 13); /* inf / NaN */
  } else if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else { /* subnormal: normalize */
      exp = 127 - 15 + 1;
      while (!(man & 0x400u)) { man <<= 1; exp--; }
      u = sign | (exp << 23) | ((man & 0x3ffu) << 13);
    }
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline uint16_t xpi_f32_to_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);    /* NaN */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);   /* rounds to >= 65520: inf */
  if (a < 0x38800000u) {                                     /* below the smallest normal half */
    if (a < 0x33000000u) return (uint16_t)sign;              /* < half the smallest subnormal: +-0 */
    uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;                                /* 14 + (112 - e) + 1 - 1 */
    uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) r++;
    return (uint16_t)(sign | r);
  }
  uint32_t r = a + 0x0fffu + ((a >> 13) & 1u) - ((127u - 15u) << 23); /* rebias, round to nearest even */
  return (uint16_t)(sign | (r >> 13));
}

#endif
