/* The CPU's scalar reference matmuls over the q8/q4 block formats (ops/quant_format.h). */
#include "ops/cpu/quant.h"

/* Y[t, r] = sum over blocks b of d[r, b] * dx[t, b] * (integer dot of W's quants with X's int8 quants), the
 * definition in ops/quant_format.h, accumulated in double so the oracle carries no order error. Rows go in tiles of 64
 * whose sums live on the stack, so each activation block is quantized once per tile and no buffer that could
 * fail to allocate is needed. */
static void mm_q_scalar(xpi_dtype dt, float *Y, int64_t ldy, const float *X, int32_t n, const void *W,
                        const void *aux, int64_t r0, int64_t r1, int64_t cols) {
  const int64_t nb = xpi_q_nblocks(cols), rb = xpi_q_row_bytes(dt, cols);
  const uint16_t *d = aux;
  for (int64_t rt = r0; rt < r1; rt += 64) {
    const int64_t re = r1 - rt < 64 ? r1 : rt + 64;
    for (int32_t t = 0; t < n; t++) {
      double acc[64] = {0};
      for (int64_t b = 0; b < nb; b++) {
        int8_t xq[XPI_QK];
        float dx, sx;
        const int64_t w = cols - b * XPI_QK < XPI_QK ? cols - b * XPI_QK : XPI_QK;
        xpi_quantize_act_scalar(xq, &dx, &sx, X + t * cols + b * XPI_QK, w);
        for (int64_t r = rt; r < re; r++) {
          const int32_t s = xpi_q_block_dot(dt, W, rb, r, b, xq); /* xq is zero past cols, as the padding quants */
          acc[r - rt] += (double)xpi_f16_to_f32(d[r * nb + b]) * (double)dx * (double)s;
        }
      }
      for (int64_t r = rt; r < re; r++) Y[t * ldy + r] = (float)acc[r - rt];
    }
  }
}

void xpi_mm_q8_scalar(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux,
                      int64_t r0, int64_t r1, int64_t cols) {
  mm_q_scalar(XPI_DT_Q8, Y, ldy, X, n, W, aux, r0, r1, cols);
}
void xpi_mm_q4_scalar(float *Y, int64_t ldy, const float *X, int32_t n, const void *W, const void *aux,
                      int64_t r0, int64_t r1, int64_t cols) {
  mm_q_scalar(XPI_DT_Q4, Y, ldy, X, n, W, aux, r0, r1, cols);
}
