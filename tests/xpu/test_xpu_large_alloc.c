/* A weight larger than the device's maxMemAllocSize: tests.cmake gives xpu:0 a zesim /maxalloc= of 1 MiB, below
 * tinyfortunes' 2 MiB bf16 embedding (tied to the LM head), and xpu:1 the default limit. The embedding is then a
 * relaxed-limits allocation, which zesim lets a kernel take only from a module built with
 * -ze-opt-greater-than-4GB-buffer-required (Intel's compiler addresses statefully, with 32-bit offsets, without
 * it). The model must load on xpu:0 and give the same logits, bit for bit (same kernels in the same order), as
 * on xpu:1, prefill and replayed decode steps, and the golden greedy ids. */
#include <string.h>

#include "check.h"
#include "xpu_load.h"

int main(void) {
  const char *skip = getenv("XPI_XPU_TEST_SKIP");
  if (skip && *skip) {
    printf("SKIPPED: %s\n", skip);
    return 77;
  }
  xpi_device_list *dl = NULL;
  CHECK_OK(xpi_device_list_create(&dl));
  xpi_device_info d0 = {.struct_size = sizeof d0}, d1 = {.struct_size = sizeof d1};
  CHECK(dl && xpi_device_list_count_xpu(dl) == 2, "2 software devices expected");
  if (dl && xpi_device_list_count_xpu(dl) == 2) {
    CHECK_OK(xpi_device_list_get(dl, 0, &d0));
    CHECK_OK(xpi_device_list_get(dl, 1, &d1));
  }
  xpi_device_list_free(dl);
  char *dir = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
  char *path = xpi_test_strf("%s/goldens/tinyfortunes.json", xpi_test_env("XPI_TEST_DATA"));
  xpi_model *small = NULL, *big = NULL;
  load(dir, "xpu:0", NULL, "sdpa", &small);
  load(dir, "xpu:1", NULL, "sdpa", &big);
  if (small && big) {
    xpi_model_info info = {.struct_size = sizeof info};
    CHECK_OK(xpi_model_get_info(small, &info));
    uint64_t embed = (uint64_t)info.vocab_size * (uint64_t)info.hidden_size * 2; /* bf16 */
    printf("xpu:0 maxMemAllocSize %llu, xpu:1 %llu; embedding %llu bytes\n", (unsigned long long)d0.max_alloc_size,
           (unsigned long long)d1.max_alloc_size, (unsigned long long)embed);
    CHECK(d0.max_alloc_size < embed && d1.max_alloc_size >= embed,
          "the embedding (%llu bytes) must exceed xpu:0's maxMemAllocSize (%llu) and fit xpu:1's (%llu)",
          (unsigned long long)embed, (unsigned long long)d0.max_alloc_size, (unsigned long long)d1.max_alloc_size);
    cJSON *g = xpi_test_load_json(path);
    const cJSON *c0 = cJSON_GetArrayItem(g, 2);
    const cJSON *in = cJSON_GetObjectItem(c0, "input_ids");
    int n = cJSON_GetArraySize(in);
    int32_t ids[64];
    for (int i = 0; i < n && i < 64; i++) ids[i] = cJSON_GetArrayItem(in, i)->valueint;
    size_t cap = (size_t)n * (size_t)info.vocab_size;
    float *la = malloc(cap * sizeof *la), *lb = malloc(cap * sizeof *lb);
    xpi_request *ra = NULL, *rb = NULL;
    xpi_request_options ro;
    xpi_request_options_default(&ro);
    ro.n_ctx = 64;
    CHECK_OK(xpi_request_create(small, &ro, &ra));
    CHECK_OK(xpi_request_create(big, &ro, &rb));
    if (ra && rb) {
      CHECK_OK(xpi_request_eval(ra, ids, (size_t)n, 1, la, cap));
      CHECK_OK(xpi_request_eval(rb, ids, (size_t)n, 1, lb, cap));
      CHECK(memcmp(la, lb, cap * sizeof *la) == 0, "prefill logits on xpu:0 (weight over the limit) differ from xpu:1");
      const float *row = la + (size_t)(n - 1) * info.vocab_size; /* the last position's logits */
      for (int step = 0; step < 4; step++) { /* decode: greedy continuation, replayed graphs */
        int32_t next = 0;
        for (int32_t i = 1; i < info.vocab_size; i++) next = row[i] > row[next] ? i : next;
        CHECK_OK(xpi_request_eval(ra, &next, 1, 0, la, (size_t)info.vocab_size));
        CHECK_OK(xpi_request_eval(rb, &next, 1, 0, lb, (size_t)info.vocab_size));
        CHECK(memcmp(la, lb, (size_t)info.vocab_size * sizeof *la) == 0, "decode step %d logits differ", step);
        row = la;
      }
    }
    xpi_request_free(ra);
    xpi_request_free(rb);
    collected a = {0};
    greedy(small, c0, 0, &a);
    const cJSON *want = cJSON_GetObjectItem(c0, "greedy_new_ids");
    int same = a.n == cJSON_GetArraySize(want);
    for (int i = 0; same && i < a.n; i++) same = a.ids[i] == cJSON_GetArrayItem(want, i)->valueint;
    CHECK(same, "greedy on xpu:0 (weight over maxMemAllocSize) differs from the golden");
    free(la), free(lb);
    cJSON_Delete(g);
  }
  xpi_model_free(small);
  xpi_model_free(big);
  free(dir), free(path);
  return xpi_test_done();
}
