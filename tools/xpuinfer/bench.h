/* xpuinfer bench: the per-request tests (cmd_bench.c) and the batched ones (cmd_bench_batched.c). */
#ifndef XPI_CLI_BENCH_H
#define XPI_CLI_BENCH_H

#define MAX_LIST 16

typedef struct bench_args {
  const char *model, *kv_dtype, *device;
  const char *quants[MAX_LIST]; /* NULL entry: as stored */
  int n_q;
  long long pp[MAX_LIST];
  int n_pp;
  long long n_gen, reps, threads;
  long long par[MAX_LIST];
  int n_par;
  int json;
  long long kv_pool;            /* bytes, 0: the default */
  const char *const *isas;      /* --cpu-isa: kernel tables to compare ("auto", "avx2", ...) */
  int n_isa;
} bench_args;

/* --parallel: llama-batched-bench's pp/tg tests through one engine. Returns the exit code. */
int bench_batched(const bench_args *a);

/* --model-perf: the performance model of one decode step at ctx positions (0: min(4096, max_position_embeddings))
 * on an XPU: bytes moved against weights + KV, predicted tokens/s on named Intel GPUs with launch_us per launch.
 * Returns the exit code. */
int bench_model_perf(const char *model, const char *device, const char *device_map, const char *quant,
                     const char *kv_dtype, long long ctx, double launch_us, int json);

#endif
