/* Greedy decoding with the argmax on the backend (the engine's device path: greedy, no logprobs, no
 * repetition penalty) against the host-argmax path (the same generation with logprobs = 300, above the default
 * device_topk + 1, which keeps the logits on the host and samples there), the device top-1 path (logprobs = 1:
 * the best id, its logit and the row's normaliser) and the tinyfortunes goldens, token for token, on the CPU
 * and on xpu:0 (zesim; decode steps replay the recorded XPU graph with the argmax inside it). On xpu:0 the
 * device path reads back exactly sizeof(int32_t) bytes per step: one read for the prompt and one per decode
 * step, counted by the XPU backend's read(); the top-1 path 16 bytes; the host path vocab_size floats per step
 * (the counter sees the reads at all). */
#include <string.h>

#include "api/api_internal.h"
#include "ops/xpu/xpu_backend.h"
#include "xpu_load.h"

static int same(const collected *c, const cJSON *want) {
  int nw = cJSON_GetArraySize(want);
  if (c->n != nw) return 0;
  for (int i = 0; i < nw; i++)
    if (c->ids[i] != cJSON_GetArrayItem(want, i)->valueint) return 0;
  return 1;
}

/* Both paths on one device against the goldens; on XPU, the bytes each path reads back. */
static void check_device(xpi_model *m, const char *device, const cJSON *g, int is_xpu) {
  xpi_backend *be = m->backends[0];
  int32_t V = m->cfg.vocab_size;
  const cJSON *cs;
  cJSON_ArrayForEach(cs, g) {
    const cJSON *want = cJSON_GetObjectItem(cs, "greedy_new_ids");
    uint64_t nw = (uint64_t)cJSON_GetArraySize(want);
    collected dev = {0}, topk = {0}, host = {0};
    uint64_t b0 = is_xpu ? xpi_xpu_bytes_read(be) : 0;
    greedy(m, cs, 0, &dev);
    uint64_t b1 = is_xpu ? xpi_xpu_bytes_read(be) : 0;
    greedy(m, cs, 300, &host);
    uint64_t b2 = is_xpu ? xpi_xpu_bytes_read(be) : 0;
    greedy(m, cs, 1, &topk);
    uint64_t b3 = is_xpu ? xpi_xpu_bytes_read(be) : 0;
    CHECK(same(&dev, want), "%s '%s': greedy with the device argmax differs from the golden", device, cs->string);
    CHECK(same(&host, want), "%s '%s': greedy with the host argmax differs from the golden", device, cs->string);
    CHECK(same(&topk, want), "%s '%s': greedy with the device top-1 differs from the golden", device, cs->string);
    CHECK(dev.n == host.n && !memcmp(dev.ids, host.ids, (size_t)dev.n * sizeof dev.ids[0]),
          "%s '%s': device and host argmax paths differ", device, cs->string);
    if (is_xpu) { /* nw tokens = prompt eval + nw - 1 decode steps, one read each */
      CHECK(b1 - b0 == nw * sizeof(int32_t), "%s '%s': device path read %llu bytes for %llu tokens, want %llu",
            device, cs->string, (unsigned long long)(b1 - b0), (unsigned long long)nw,
            (unsigned long long)(nw * sizeof(int32_t)));
      CHECK(b2 - b1 == nw * (uint64_t)V * sizeof(float), "%s '%s': host path read %llu bytes, want %llu", device,
            cs->string, (unsigned long long)(b2 - b1), (unsigned long long)(nw * (uint64_t)V * sizeof(float)));
      CHECK(b3 - b2 == nw * 16, "%s '%s': device top-1 path (logprobs 1) read %llu bytes, want %llu (id, value, "
            "normaliser)", device, cs->string, (unsigned long long)(b3 - b2), (unsigned long long)(nw * 16));
    }
  }
}

int main(void) {
  char *path = xpi_test_strf("%s/goldens/tinyfortunes.json", xpi_test_env("XPI_TEST_DATA"));
  char *dir = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
  cJSON *g = xpi_test_load_json(path);
  xpi_model *cpu = NULL, *xpu = NULL;
  xpi_model_options o;
  xpi_model_options_default(&o);
  o.device = "cpu";
  o.n_threads = 2;
  CHECK_OK(xpi_model_load(dir, &o, &cpu));
  if (cpu) check_device(cpu, "cpu", g, 0);
  xpi_model_free(cpu);
  int rc = load(dir, "xpu:0", NULL, "sdpa", &xpu); /* 77: no software device in this tree, CPU part only */
  if (xpu) check_device(xpu, "xpu:0", g, 1);
  xpi_model_free(xpu);
  cJSON_Delete(g);
  free(dir), free(path);
  int failed = xpi_test_done();
  return failed ? failed : rc == 77 ? 77 : 0;
}
