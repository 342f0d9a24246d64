/* Small AVX-512 helpers shared by the AVX-512 and AMX kernel files (include only from *_avx512.c / *_amx.c). */
#ifndef XPI_CPU_SIMD_AVX512_H
#define XPI_CPU_SIMD_AVX512_H

#include <immintrin.h>

/* In-register 16 x 16 transpose of 32-bit elements: on return v[k] holds element k of every input row, in row
 * order (the unpacks leave columns 1 and 2 of each group of 4 swapped; the last step's order undoes it). */
static inline void xpi_tr16(__m512 v[16]) {
  __m512 u[16];
  for (int i = 0; i < 16; i += 2) { /* 2x2 blocks */
    u[i] = _mm512_unpacklo_ps(v[i], v[i + 1]);
    u[i + 1] = _mm512_unpackhi_ps(v[i], v[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) /* 4x4 blocks: v[i + m] lane L = column 4L + {0, 2, 1, 3}[m] */
    for (int j = 0; j < 2; j++) {
      v[i + j] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(u[i + j]), _mm512_castps_pd(u[i + j + 2])));
      v[i + j + 2] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(u[i + j]), _mm512_castps_pd(u[i + j + 2])));
    }
  for (int i = 0; i < 16; i += 8) /* 128-bit lanes */
    for (int j = 0; j < 4; j++) {
      u[i + j] = _mm512_shuffle_f32x4(v[i + j], v[i + j + 4], 0x88);
      u[i + j + 4] = _mm512_shuffle_f32x4(v[i + j], v[i + j + 4], 0xdd);
    }
  static const int col[16] = {0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15};
  for (int j = 0; j < 8; j++) {
    v[col[j]] = _mm512_shuffle_f32x4(u[j], u[j + 8], 0x88);
    v[col[j + 8]] = _mm512_shuffle_f32x4(u[j], u[j + 8], 0xdd);
  }
}

#endif
