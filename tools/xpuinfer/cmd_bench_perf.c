/* xpuinfer bench --model-perf: the library's performance model of one decode step (xpi_model_perf_decode: every
 * XPU kernel launch's bytes and FLOPs from its arguments) printed per kernel, against the weights + KV the step
 * must read, with the tokens/s it predicts on named Intel GPUs:
 *   time per token = bytes moved / bandwidth + launches x launch overhead
 *   bandwidth share = (weights + KV) / time per token / bandwidth  (the peak bandwidth spent on bytes a step
 *                     cannot avoid)
 * Bandwidths are the vendors' peak figures; the launch overhead is an input (--launch-us). */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

static const struct { const char *name; double gbs; } k_gpus[] = {
  {"Arc A770 (16 GB)", 560.0},      /* Intel: 560 GB/s GDDR6 */
  {"Arc B580", 456.0},              /* Intel: 456 GB/s GDDR6 */
  {"Data Center GPU Max 1550", 3200.0}, /* Intel: 3.2 TB/s HBM2e */
};

int bench_model_perf(const char *model, const char *device, const char *device_map, const char *quant,
                     const char *kv_dtype, long long ctx, double launch_us, int json) {
  xpi_model_options o;
  xpi_model_options_default(&o);
  o.device = device_map ? "auto" : device;
  o.device_map = device_map;
  o.kv_dtype = kv_dtype;
  if (quant && (!strcmp(quant, "q8") || !strcmp(quant, "q4"))) o.quant = quant;
  else if (quant && strcmp(quant, "none")) o.dtype = quant;
  xpi_model *m = NULL;
  xpi_status s = xpi_model_load(model, &o, &m);
  if (s != XPI_OK) return cli_fail("bench", "loading the model", s);
  xpi_model_info info = {.struct_size = sizeof info};
  xpi_perf_report r = {.struct_size = sizeof r};
  s = xpi_model_get_info(m, &info);
  const int32_t max_pos = info.max_position_embeddings;
  if (s == XPI_OK && ctx == 0) ctx = max_pos > 0 && max_pos < 4096 ? max_pos : 4096;
  if (s == XPI_OK) s = xpi_model_perf_decode(m, (int32_t)ctx, &r);
  xpi_model_free(m);
  if (s != XPI_OK) return cli_fail("bench", "--model-perf", s);
  const double must = r.weight_bytes + r.kv_bytes, moved = r.bytes_read + r.bytes_written;
  const char *mname = strrchr(model, '/') && strrchr(model, '/')[1] ? strrchr(model, '/') + 1 : model;
  if (json) {
    printf("{\"model\": \"%s\", \"device\": \"%s\", \"weight_dtype\": \"%s\", \"kv_dtype\": \"%s\", \"n_ctx\": %d, "
           "\"launches\": %lld, \"bytes_read\": %.0f, \"bytes_written\": %.0f, \"flops\": %.0f, "
           "\"weight_bytes\": %.0f, \"kv_bytes\": %.0f, \"moved_over_must\": %.4f, \"launch_us\": %g, \"kernels\": [",
           mname, info.device, info.weight_dtype, kv_dtype ? kv_dtype : "f32", r.n_ctx, (long long)r.launches,
           r.bytes_read, r.bytes_written, r.flops, r.weight_bytes, r.kv_bytes, moved / must, launch_us);
    for (int k = 0; k < r.n_kernels; k++)
      printf("%s{\"name\": \"%s\", \"launches\": %lld, \"bytes_read\": %.0f, \"bytes_written\": %.0f, \"flops\": %.0f}",
             k ? ", " : "", r.kernels[k].name, (long long)r.kernels[k].launches, r.kernels[k].bytes_read,
             r.kernels[k].bytes_written, r.kernels[k].flops);
    printf("], \"gpus\": [");
    for (size_t g = 0; g < sizeof k_gpus / sizeof k_gpus[0]; g++) {
      double t = moved / (k_gpus[g].gbs * 1e9) + (double)r.launches * launch_us * 1e-6;
      printf("%s{\"name\": \"%s\", \"gb_s\": %g, \"tok_s\": %.2f, \"bandwidth_share\": %.4f}", g ? ", " : "",
             k_gpus[g].name, k_gpus[g].gbs, 1.0 / t, must / t / (k_gpus[g].gbs * 1e9));
    }
    printf("]}\n");
    return 0;
  }
  printf("performance model: %s on %s, %s weights, %s KV, one decode step at position %d (%d positions)\n\n", mname,
         info.device, info.weight_dtype, kv_dtype ? kv_dtype : "f32", r.n_ctx - 1, r.n_ctx);
  printf("| kernel | launches | read (MB) | written (MB) | GFLOP | share of bytes |\n"
         "| --- | ---: | ---: | ---: | ---: | ---: |\n");
  for (int k = 0; k < r.n_kernels; k++) {
    const xpi_perf_kernel *e = &r.kernels[k];
    printf("| %s | %lld | %.2f | %.2f | %.3f | %.1f%% |\n", e->name, (long long)e->launches, e->bytes_read / 1e6,
           e->bytes_written / 1e6, e->flops / 1e9, 100.0 * (e->bytes_read + e->bytes_written) / moved);
  }
  printf("| total | %lld | %.2f | %.2f | %.3f | 100%% |\n\n", (long long)r.launches, r.bytes_read / 1e6,
         r.bytes_written / 1e6, r.flops / 1e9);
  printf("must read per token: weights %.2f MB + KV %.2f MB = %.2f MB; moved %.2f MB = %.3f x that\n\n",
         r.weight_bytes / 1e6, r.kv_bytes / 1e6, must / 1e6, moved / 1e6, moved / must);
  printf("| GPU | GB/s | bytes-bound t/s (moved) | launch overhead (us x %lld) | predicted t/s | bandwidth share |\n"
         "| --- | ---: | ---: | ---: | ---: | ---: |\n", (long long)r.launches);
  for (size_t g = 0; g < sizeof k_gpus / sizeof k_gpus[0]; g++) {
    double bw = k_gpus[g].gbs * 1e9, t = moved / bw + (double)r.launches * launch_us * 1e-6;
    printf("| %s | %.0f | %.1f | %g | %.1f | %.1f%% |\n", k_gpus[g].name, k_gpus[g].gbs, bw / moved, launch_us,
           1.0 / t, 100.0 * must / t / bw);
  }
  return 0;
}
