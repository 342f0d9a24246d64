/* The load's op check (src/model/op_check.c): a graph whose backend says no to an op it would place is refused
 * before the first step, by a message naming the op, the weight's dtype and shape, where the graph uses it and the
 * device; the same graph on the CPU as it is passes. tinyfortunes on the CPU, its weights as stored. */
#include "check.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/graph.h"
#include "model/op_check.h"
#include "model/weights.h"
#include "ops/ops.h"

static xpi_dtype g_refused; /* the matmul dtype the test backend refuses */

static int refuse_matmul(const xpi_backend *be, const xpi_op_desc *d) {
  (void)be;
  return !(d->op == XPI_OP_MATMUL && d->wdtype == g_refused);
}

static int refuse_attention(const xpi_backend *be, const xpi_op_desc *d) {
  (void)be;
  return d->op != XPI_OP_ATTENTION;
}

int main(void) {
  char *dir = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
  xpi_config cfg;
  xpi_safetensors *st = NULL;
  xpi_backend *be = NULL;
  CHECK_OK(xpi_config_load(dir, &cfg));
  CHECK_OK(xpi_st_open_dir(dir, &st));
  xpi_backend_config bc = {"cpu", 2, 1};
  CHECK_OK(xpi_backend_cpu_create(&bc, &be));
  if (!st || !be) return xpi_test_done();
  xpi_backend *layer_be[64];
  for (int32_t l = 0; l < cfg.n_layers && l < 64; l++) layer_be[l] = be;
  xpi_model_weights w = {0};
  CHECK_OK(xpi_weights_load_opt(&cfg, st, layer_be, -1, 0, &w));
  xpi_graph g = {.cfg = &cfg, .w = &w, .backends = {be}, .n_backends = 1, .layer_dev = {0, cfg.n_layers}};

  /* the CPU runs every op of the model */
  CHECK_OK(xpi_graph_check_ops(&g));

  /* a backend without matmuls of the model's weight dtype: the first projection of layer 0 says so */
  const xpi_backend_ops *cpu_ops = be->ops;
  xpi_backend_ops ops = *cpu_ops;
  ops.supports = refuse_matmul;
  be->ops = &ops;
  g_refused = w.layers[0].wq.dtype;
  char want[160];
  snprintf(want, sizeof want, "layer 0: op matmul with %s weights [%lld, %lld] is not supported on device 'cpu'",
           xpi_dtype_name(g_refused), (long long)w.layers[0].wq.rows, (long long)w.layers[0].wq.cols);
  CHECK_ERR(xpi_graph_check_ops(&g), XPI_ERR_UNSUPPORTED, want);

  /* an op without a weight: named with its shape (head_dim) */
  ops.supports = refuse_attention;
  snprintf(want, sizeof want, "layer 0: op attention with head_dim %d is not supported on device 'cpu'", cfg.head_dim);
  CHECK_ERR(xpi_graph_check_ops(&g), XPI_ERR_UNSUPPORTED, want);

  /* an entry point the backend lacks is refused as well, with no supports function asked */
  ops.supports = NULL;
  ops.topk = NULL;
  CHECK_ERR(xpi_graph_check_ops(&g), XPI_ERR_UNSUPPORTED, "the output: op topk is not supported on device 'cpu'");
  be->ops = cpu_ops;

  /* the CPU's own limits: a dtype its kernel table has no GEMV for, a head_dim rope does not take */
  xpi_dtype keep = w.layers[cfg.n_layers - 1].wo.dtype;
  w.layers[cfg.n_layers - 1].wo.dtype = XPI_DT_I32;
  snprintf(want, sizeof want, "layer %d: op matmul with i32 weights", cfg.n_layers - 1);
  CHECK_ERR(xpi_graph_check_ops(&g), XPI_ERR_UNSUPPORTED, want);
  w.layers[cfg.n_layers - 1].wo.dtype = keep;
  xpi_op_desc rope = {.op = XPI_OP_ROPE, .wdtype = XPI_DT_F32, .head_dim = 2048};
  CHECK(!xpi_backend_supports(be, &rope), "the CPU's rope takes head_dim up to 1024");
  rope.head_dim = 64;
  CHECK(xpi_backend_supports(be, &rope), "the CPU's rope takes head_dim 64");
  CHECK_OK(xpi_graph_check_ops(&g));

  xpi_weights_free(&w);
  be->ops->destroy(be);
  xpi_st_close(st);
  free(dir);
  return xpi_test_done();
}
