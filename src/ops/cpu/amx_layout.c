/* Plain-C reference packers of the AMX GEMMs' layouts (amx_layout.h). */
#include "ops/cpu/amx_layout.h"

#include <string.h>

#include "ops/cpu/quant.h"
#include "ops/half.h"

size_t xpi_amx_bf16_pack_bytes(int32_t n, int64_t cols) {
  const size_t np = (size_t)xpi_amx_np(n), kp = (size_t)xpi_amx_kp(cols);
  if (kp > SIZE_MAX / 8 / XPI_AMX_BF16_TERMS / (np + 1)) return SIZE_MAX;
  return np * XPI_AMX_BF16_TERMS * kp * sizeof(uint16_t);
}

void xpi_amx_bf16_pack_ref(void *P, const float *X, int32_t n, int64_t cols, int32_t t0, int32_t t1) {
  const int64_t kp = xpi_amx_kp(cols), te = t1 == n ? xpi_amx_np(n) : t1, tail = n / XPI_AMX_TT;
  const int compact = xpi_amx_bf16_tail_slots(n) > 0;
  for (int64_t t = t0; t < te; t++) {
    const int64_t p = t / XPI_AMX_TT;
    if (compact && p == tail && t % XPI_AMX_TT == 0) /* its unused columns and slot */
      memset((uint16_t *)P + p * XPI_AMX_BF16_TERMS * kp * XPI_AMX_TT, 0,
             sizeof(uint16_t) * XPI_AMX_BF16_TERMS * (size_t)kp * XPI_AMX_TT);
    if (compact && p == tail && t >= n) continue; /* padding: zeros already (and no place of its own) */
    for (int64_t c = 0; c < kp; c++) {
      float x = t < n && c < cols ? X[t * cols + c] : 0.0f;
      for (int s = 0; s < XPI_AMX_BF16_TERMS; s++) {
        const uint16_t h = xpi_f32_to_bf16(x);
        ((uint16_t *)P)[xpi_amx_bf16_at(n, cols, t, s, c / 2) * 2 + c % 2] = h;
        x -= xpi_bf16_to_f32(h); /* exact: h is x rounded to its leading 8 bits */
      }
    }
  }
}

void xpi_amx_bf16_weights(uint16_t *pad, const void *W, int64_t r, int nr, int64_t cols) {
  const int64_t kc = xpi_amx_kp(cols) / 32;
  for (int64_t k = 0; k < kc; k++)
    for (int i = 0; i < 2 * XPI_AMX_TR; i++) {
      uint16_t *o = pad + (k * 2 * XPI_AMX_TR + i) * 32;
      const int64_t m = i < nr ? (cols - k * 32 < 32 ? cols - k * 32 : 32) : 0;
      if (m > 0) memcpy(o, (const uint16_t *)W + (r + i) * cols + k * 32, (size_t)m * sizeof(uint16_t));
      memset(o + (m > 0 ? m : 0), 0, (size_t)(32 - (m > 0 ? m : 0)) * sizeof(uint16_t));
    }
}

size_t xpi_amx_i8_pack_bytes(int32_t n, int64_t cols) {
  const size_t np = (size_t)xpi_amx_np(n), nb = (size_t)xpi_q_nblocks(cols);
  if (nb > SIZE_MAX / 64 / (np + 1)) return SIZE_MAX;
  return ((np * nb * XPI_QK + 63) & ~(size_t)63) + np * nb * sizeof(float);
}

void xpi_amx_i8_pack_ref(void *P, const float *X, int32_t n, int64_t cols, int32_t t0, int32_t t1) {
  const int64_t nb = xpi_q_nblocks(cols), te = t1 == n ? xpi_amx_np(n) : t1;
  int8_t xq[XPI_QK];
  for (int64_t t = t0; t < te; t++) {
    int8_t *panel = (int8_t *)xpi_amx_i8_panel(P, cols, t / XPI_AMX_TT);
    float *dx = (float *)xpi_amx_i8_dx(P, n, cols, t / XPI_AMX_TT);
    for (int64_t b = 0; b < nb; b++) {
      float d = 0, sx;
      const int64_t w = cols - b * XPI_QK < XPI_QK ? cols - b * XPI_QK : XPI_QK;
      if (t < n) xpi_quantize_act_scalar(xq, &d, &sx, X + t * cols + b * XPI_QK, w);
      else memset(xq, 0, sizeof xq);
      for (int g = 0; g < XPI_QK / 4; g++) memcpy(panel + ((b * 8 + g) * XPI_AMX_TT + t % XPI_AMX_TT) * 4, xq + 4 * g, 4);
      dx[b * XPI_AMX_TT + t % XPI_AMX_TT] = d;
    }
  }
}

void xpi_amx_i8_weights_ref(xpi_dtype dt, int8_t *pw, const void *W, int64_t r, int nr, int64_t nb) {
  const int64_t rb = xpi_q_row_bytes(dt, nb * XPI_QK);
  memset(pw, 0, (size_t)(nb * 2 * XPI_AMX_TR * XPI_QK));
  for (int i = 0; i < nr; i++) {
    const uint8_t *row = (const uint8_t *)W + (r + i) * rb;
    for (int64_t b = 0; b < nb; b++) {
      int8_t *o = pw + (b * 2 * XPI_AMX_TR + i) * XPI_QK;
      if (dt == XPI_DT_Q8) memcpy(o, row + b * XPI_QK, XPI_QK);
      else
        for (int j = 0; j < XPI_QK / 2; j++) { /* byte j: element j low, element 16 + j high */
          o[j] = (int8_t)((row[b * 16 + j] & 15) - 8);
          o[j + 16] = (int8_t)((row[b * 16 + j] >> 4) - 8);
        }
    }
  }
}

void xpi_amx_i8_scales(float *D, const void *d, int64_t r, int nr, int64_t nb) {
  const uint16_t *h = d;
  for (int64_t b = 0; b < nb; b++)
    for (int i = 0; i < 2 * XPI_AMX_TR; i++) D[b * 2 * XPI_AMX_TR + i] = i < nr ? xpi_f16_to_f32(h[(r + i) * nb + b]) : 0.0f;
}
