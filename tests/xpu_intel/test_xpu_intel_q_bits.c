/* The tuned tier's q8/q4 decode and prefill path gives the portable tier's bits: xpu:0 runs the
 * Intel-tuned kernels, xpu:1 is opened with XPI_XPU_TIER=portable (the tier is chosen per device when it is first
 * acquired), and the same ops on the same inputs must give byte-identical outputs, so that a q8/q4 model on a real
 * Intel GPU gives the portable tier's tokens. The activations are quantized to int8 after float reductions (the
 * RMSNorm's sum of squares and scale), so one ulp of the normalised row can move a quant by one and the
 * divergence grows through the layers (tests/xpu/test_xpu_quant_model.c). Ops: rmsnorm (with and without the
 * residual add), the q8/q4 matmul at decode (n = 1: xpi_gemv_sg_q8/q4) and prefill (n = 7: xpi_gemm_sg_q8/q4),
 * matmul_multi (alone and with the input's RMSNorm) and matmul_glu (with it): the fused decode forms, and
 * matmul_add. Shapes: cols 67 (a partial block), 256 (8 blocks: no full run of 16), 576 (18: a run and a partial
 * one), 2048 (runs of 16 blocks); rows 37 / 19. Fails where xpu:0 is not on the tuned tier (tests.cmake runs it on
 * Intel's CPU OpenCL runtime). */
#include "ops/cpu/quant.h"
#include "ops/half.h"
#include "ops/xpu/xpu_backend.h"
#include "../xpu/xpu_test_util.h"

static xpi_backend *tb, *pb; /* tuned, portable */

/* The n floats at a_dev (tuned) and b_dev (portable) are the same bits. */
static void same(const char *what, const void *a_dev, const void *b_dev, size_t n) {
  xt_same_bits(what, tb, a_dev, pb, b_dev, n);
}

typedef struct side {
  xpi_backend *be;
  xpi_weight w[3], gate, nw;
  float *x, *res, *o[3], *tmp, *h;
} side;

static void side_make(side *s, xpi_backend *be, xpi_dtype dt, const int *rows, int cols, int n, const float *x,
                      const float *res, float *const *wv, const float *gv, const float *nv) {
  s->be = be;
  for (int j = 0; j < 3; j++) CHECK_OK(be->ops->weight_create(be, &s->w[j], wv[j], XPI_DT_F32, rows[j], cols, dt));
  CHECK_OK(be->ops->weight_create(be, &s->gate, gv, XPI_DT_F32, rows[0], cols, dt));
  CHECK_OK(be->ops->weight_create(be, &s->nw, nv, XPI_DT_F32, 1, cols, XPI_DT_BF16));
  s->x = xt_up(be, x, (size_t)n * cols * 4), s->res = xt_up(be, res, (size_t)n * cols * 4);
  s->h = xt_up(be, NULL, (size_t)n * cols * 4), s->tmp = xt_up(be, NULL, (size_t)n * rows[0] * 4);
  for (int j = 0; j < 3; j++) s->o[j] = xt_up(be, NULL, (size_t)n * rows[j] * 4);
}

static void side_free(side *s) {
  xpi_backend *be = s->be;
  for (int j = 0; j < 3; j++) be->ops->weight_free(be, &s->w[j]), be->ops->free(be, s->o[j]);
  be->ops->weight_free(be, &s->gate), be->ops->weight_free(be, &s->nw);
  be->ops->free(be, s->x), be->ops->free(be, s->res), be->ops->free(be, s->h), be->ops->free(be, s->tmp);
}

static void check(xpi_dtype dt, int cols, int n) {
  const int rows[3] = {37, 19, 19};
  float *x = xt_randv((size_t)n * cols), *res = xt_randv((size_t)n * cols), *nv = xt_randv((size_t)cols);
  for (size_t i = 0; i < (size_t)n * cols; i++) x[i] *= (float)(1 + i / 32 % 7) * 8.0f; /* block scales differ */
  float *wv[3], *gv = xt_randv((size_t)rows[0] * cols);
  for (int j = 0; j < 3; j++) wv[j] = xt_randv((size_t)rows[j] * cols);
  side t, p;
  side_make(&t, tb, dt, rows, cols, n, x, res, wv, gv, nv);
  side_make(&p, pb, dt, rows, cols, n, x, res, wv, gv, nv);
  char *what = xpi_test_strf("%s cols %d n %d", xpi_dtype_name(dt), cols, n);
  char *w2 = NULL;
  side *s2[2] = {&t, &p};
  /* rmsnorm, no residual, then with the residual add (x written) */
  for (int k = 0; k < 2; k++) CHECK_OK(s2[k]->be->ops->rmsnorm(s2[k]->be, s2[k]->h, s2[k]->x, NULL, &s2[k]->nw, n, cols, 1e-6f));
  same((w2 = xpi_test_strf("%s: rmsnorm", what)), t.h, p.h, (size_t)n * cols), free(w2);
  /* the matmul alone, on the same input (decode: GEMV; prefill: GEMM) */
  for (int k = 0; k < 2; k++) CHECK_OK(s2[k]->be->ops->matmul(s2[k]->be, s2[k]->o[0], s2[k]->x, &s2[k]->w[0], NULL, n));
  same((w2 = xpi_test_strf("%s: matmul", what)), t.o[0], p.o[0], (size_t)n * rows[0]), free(w2);
  if (n == 1) {
    const xpi_weight *ws[2][3] = {{&t.w[0], &t.w[1], &t.w[2]}, {&p.w[0], &p.w[1], &p.w[2]}};
    for (int k = 0; k < 2; k++) /* the fused kernel alone */
      CHECK_OK(s2[k]->be->ops->matmul_multi(s2[k]->be, 3, s2[k]->o, s2[k]->x, NULL, 1e-6f, s2[k]->h, ws[k], NULL, 1));
    for (int j = 0; j < 3; j++)
      same((w2 = xpi_test_strf("%s: matmul_multi matrix %d", what, j)), t.o[j], p.o[j], (size_t)rows[j]), free(w2);
    for (int k = 0; k < 2; k++)
      CHECK_OK(s2[k]->be->ops->matmul_multi(s2[k]->be, 3, s2[k]->o, s2[k]->x, &s2[k]->nw, 1e-6f, s2[k]->h, ws[k],
                                            NULL, 1));
    for (int j = 0; j < 3; j++)
      same((w2 = xpi_test_strf("%s: matmul_multi (norm) matrix %d", what, j)), t.o[j], p.o[j], (size_t)rows[j]),
          free(w2);
    for (int act = 0; act < 2; act++) {
      for (int k = 0; k < 2; k++)
        CHECK_OK(s2[k]->be->ops->matmul_glu(s2[k]->be, s2[k]->o[0], s2[k]->tmp, s2[k]->x, &s2[k]->nw, 1e-6f, s2[k]->h,
                                            &s2[k]->gate, &s2[k]->w[0], (xpi_glu_act)act, 1));
      same((w2 = xpi_test_strf("%s: matmul_glu (norm) act %d", what, act)), t.o[0], p.o[0], (size_t)rows[0]),
          free(w2);
    }
    for (int k = 0; k < 2; k++) /* residual += in @ w^T, in = the previous GLU output (rows[0] = 37 cols) */
      CHECK_OK(s2[k]->be->ops->matmul_add(s2[k]->be, s2[k]->res, s2[k]->tmp, s2[k]->x, &s2[k]->gate, NULL, 1));
    same((w2 = xpi_test_strf("%s: matmul_add", what)), t.res, p.res, (size_t)rows[0]), free(w2);
  }
  for (int k = 0; k < 2; k++)
    CHECK_OK(s2[k]->be->ops->rmsnorm(s2[k]->be, s2[k]->h, s2[k]->x, s2[k]->res, &s2[k]->nw, n, cols, 1e-6f));
  same((w2 = xpi_test_strf("%s: rmsnorm + residual (out)", what)), t.h, p.h, (size_t)n * cols), free(w2);
  same((w2 = xpi_test_strf("%s: rmsnorm + residual (x)", what)), t.x, p.x, (size_t)n * cols), free(w2);
  side_free(&t), side_free(&p);
  for (int j = 0; j < 3; j++) free(wv[j]);
  free(x), free(res), free(nv), free(gv), free(what);
}

int main(void) {
  int rc = xt_open_xpu("xpu:0", &tb);
  if (rc) return rc == 77 ? 77 : xpi_test_done();
  setenv("XPI_XPU_TIER", "portable", 1);
  rc = xt_open_xpu("xpu:1", &pb);
  unsetenv("XPI_XPU_TIER");
  if (rc) return xpi_test_done();
  printf("xpu:0 kernel tier: %s; xpu:1: %s\n", xpi_xpu_tier(tb), xpi_xpu_tier(pb));
  CHECK(!strcmp(xpi_xpu_tier(tb), "tuned"), "xpu:0 is on the %s tier, not the tuned one", xpi_xpu_tier(tb));
  CHECK(!strcmp(xpi_xpu_tier(pb), "portable"), "xpu:1 is on the %s tier, not the portable one", xpi_xpu_tier(pb));
  const xpi_dtype dts[2] = {XPI_DT_Q8, XPI_DT_Q4};
  const int cols[] = {67, 256, 576, 2048}, ns[] = {1, 7};
  for (int d = 0; d < 2; d++)
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
      for (int k = 0; k < 2; k++) check(dts[d], cols[c], ns[k]);
  tb->ops->destroy(tb);
  pb->ops->destroy(pb);
  return xpi_test_done();
}
