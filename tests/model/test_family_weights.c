/* What a family's load_layer places, looked at directly: Phi-3's fused qkv_proj / gate_up_proj become row ranges
 * that on the CPU point into the mapped file (no copy; q8 quantizes each range), Gemma's norms are 1 + w in f32,
 * and every other tensor keeps borrowing the mapping. */
#include <string.h>

#include "check.h"
#include "model/config.h"
#include "model/family.h"
#include "model/weights.h"
#include "ops/half.h"

static const xpi_st_tensor *tensor(const xpi_safetensors *st, const char *name) {
  const xpi_st_tensor *t = xpi_st_find(st, name);
  CHECK(t != NULL, "%s in the checkpoint", name);
  return t;
}

static void load(const char *name, int want, xpi_backend *be, xpi_config *c, xpi_safetensors **st,
                 xpi_model_weights *w) {
  char *dir = xpi_test_strf("%s/arch_models/%s", xpi_test_env("XPI_TEST_DATA"), name);
  CHECK_OK(xpi_config_load(dir, c));
  CHECK_OK(xpi_st_open_dir(dir, st));
  xpi_backend *layer_be[64];
  for (int i = 0; i < 64; i++) layer_be[i] = be;
  CHECK_OK(xpi_weights_load(c, *st, layer_be, want, w));
  free(dir);
}

static void phi3(xpi_backend *be) {
  xpi_config c;
  xpi_safetensors *st = NULL;
  xpi_model_weights w;
  load("tiny-phi3", -1, be, &c, &st, &w);
  if (!w.layers) return;
  const xpi_layer_weights *L = &w.layers[1];
  const xpi_st_tensor *qkv = tensor(st, "model.layers.1.self_attn.qkv_proj.weight");
  const xpi_st_tensor *gu = tensor(st, "model.layers.1.mlp.gate_up_proj.weight");
  const size_t H = (size_t)c.hidden_size, qd = (size_t)c.n_heads * c.head_dim, kd = (size_t)c.n_kv_heads * c.head_dim;
  const size_t I = (size_t)c.intermediate_size, es = 2; /* bf16 */
  const unsigned char *q0 = qkv->data, *g0 = gu->data;
  CHECK(L->wq.data == q0 && L->wk.data == q0 + qd * H * es && L->wv.data == q0 + (qd + kd) * H * es,
        "q/k/v are row ranges of the mapped qkv_proj");
  CHECK(L->wq.rows == (int64_t)qd && L->wk.rows == (int64_t)kd && L->wv.rows == (int64_t)kd && L->wq.cols == (int64_t)H,
        "q/k/v shapes");
  CHECK(L->gate.data == g0 && L->up.data == g0 + I * H * es && L->gate.rows == (int64_t)I && L->up.rows == (int64_t)I,
        "gate/up are row ranges of the mapped gate_up_proj");
  CHECK(!L->wq.owned && !L->wk.owned && !L->wv.owned && !L->gate.owned && !L->up.owned, "views own nothing");
  xpi_weights_free(&w);
  xpi_st_close(st);
  load("tiny-phi3", XPI_DT_Q8, be, &c, &st, &w); /* quantized: each range on its own */
  if (w.layers)
    CHECK(w.layers[0].wk.dtype == XPI_DT_Q8 && w.layers[0].wk.rows == (int64_t)kd && w.layers[0].up.rows == (int64_t)I,
          "q8 ranges");
  xpi_weights_free(&w);
  xpi_st_close(st);
}

static void gemma(xpi_backend *be) {
  xpi_config c;
  xpi_safetensors *st = NULL;
  xpi_model_weights w;
  load("tiny-gemma3_text", -1, be, &c, &st, &w);
  if (!w.layers) return;
  static const char *names[] = {"model.layers.2.input_layernorm.weight", "model.layers.2.post_feedforward_layernorm.weight",
                                "model.layers.2.self_attn.q_norm.weight", "model.norm.weight"};
  const xpi_weight *got[] = {&w.layers[2].attn_norm, &w.layers[2].post_mlp_norm, &w.layers[2].q_norm, &w.final_norm};
  for (int k = 0; k < 4; k++) {
    const xpi_st_tensor *t = tensor(st, names[k]);
    CHECK(got[k]->dtype == XPI_DT_F32 && got[k]->cols == t->shape[0], "%s: f32 [%lld]", names[k], (long long)t->shape[0]);
    int bad = 0;
    for (int64_t i = 0; i < t->shape[0]; i++)
      bad += ((const float *)got[k]->data)[i] != 1.0f + xpi_bf16_to_f32(((const uint16_t *)t->data)[i]);
    CHECK(bad == 0, "%s: %d values are not 1 + w", names[k], bad);
  }
  CHECK(w.layers[0].wq.data == tensor(st, "model.layers.0.self_attn.q_proj.weight")->data, "matrices borrow the mapping");
  xpi_weights_free(&w);
  xpi_st_close(st);
}

int main(void) {
  xpi_backend_config bc = {"cpu", 1, 1};
  xpi_backend *be = NULL;
  CHECK_OK(xpi_backend_cpu_create(&bc, &be));
  if (be) {
    phi3(be);
    gemma(be);
    be->ops->destroy(be);
  }
  return xpi_test_done();
}
