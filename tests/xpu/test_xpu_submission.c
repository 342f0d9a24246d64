/* How the XPU backend submits work, counted by zesim (zesimGetCounters):
 * - a replayed decode step is one submission (zeCommandQueueExecuteCommandLists), no command on an immediate
 *   list, no copy command, one host wait and 4 bytes read back (the greedy id): ids, positions and tables are
 *   written by the host into host USM, which the recorded kernels read in place, and the id is read from host
 *   USM once the step's queue has been waited for (with these buffers in device memory, tinyfortunes took 1
 *   submission, 9.75 immediate-list commands, 4.88 copies and 5.88 host waits a step; with the embedding table
 *   on the host one copy and one wait more). Two greedy generations of different lengths from the same prompt
 *   differ only by decode steps, so their counters' difference over the step difference is per step.
 *   The same with the embedding table in host memory (rows gathered on the host into host USM).
 * - weights go up on the copy engine (the copy-only queue group) where the device has one.
 * Modes (argv, or the file from XPI_SUBMISSION_LOGITS): `copy OUT` (zesim with its copy engine: uploads on it; writes the logits of a prompt and of one decode
 * step to OUT), `nocopy IN` (ZESIM_COPY_ENGINE=0: uploads on the compute group, nothing on a copy engine; the
 * same logits bit for bit, read from IN: the copy engine moves bytes, it must not change a bit). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "api/api_internal.h"
#include "ops/xpu/xpu_backend.h"
#include "xpu_load.h"
#include "../../tools/zesim/zesim_counters.h"

static zesim_get_counters_fn counters_fn(void) {
  const char *so = getenv("ZE_ENABLE_ALT_DRIVERS");
  void *h = so ? dlopen(so, RTLD_NOW | RTLD_NOLOAD) : NULL; /* the loader has loaded it */
  zesim_get_counters_fn f = h ? (zesim_get_counters_fn)(void (*)(void))dlsym(h, "zesimGetCounters") : NULL;
  CHECK(f != NULL, "zesimGetCounters not found in %s (%s)", so ? so : "(ZE_ENABLE_ALT_DRIVERS unset)",
        h ? "no symbol" : dlerror());
  return f;
}

typedef struct step_counts {
  double executes, immediate_cmds, copies, host_syncs, bytes_read, replays;
} step_counts;

static void decode_step_counts(xpi_model *m, zesim_get_counters_fn fn, const int32_t *ids, int n, step_counts *out) {
  enum { SHORT = 3, LONG = 11 };
  zesim_counters c[4];
  uint64_t br[4], l, rp[4];
  collected a, b;
  fn(&c[0]), br[0] = xpi_xpu_bytes_read(m->backends[0]), xpi_xpu_replayed_launches(m->backends[0], &l, &rp[0]);
  generate_ids(m, ids, n, SHORT, 0, 128, &a);
  fn(&c[1]), br[1] = xpi_xpu_bytes_read(m->backends[0]), xpi_xpu_replayed_launches(m->backends[0], &l, &rp[1]);
  fn(&c[2]), br[2] = br[1], rp[2] = rp[1];
  generate_ids(m, ids, n, LONG, 0, 128, &b);
  fn(&c[3]), br[3] = xpi_xpu_bytes_read(m->backends[0]), xpi_xpu_replayed_launches(m->backends[0], &l, &rp[3]);
  CHECK(a.n == SHORT && b.n == LONG && memcmp(a.ids, b.ids, SHORT * sizeof *a.ids) == 0,
        "the two generations disagree on their common prefix");
  const double k = LONG - SHORT;
#define PER(f) ((double)((c[3].f - c[2].f) - (c[1].f - c[0].f)) / k)
  out->executes = PER(executes);
  out->immediate_cmds = PER(immediate_cmds);
  out->copies = PER(copies);
  out->host_syncs = PER(host_syncs);
#undef PER
  out->bytes_read = (double)((br[3] - br[2]) - (br[1] - br[0])) / k;
  out->replays = (double)((rp[3] - rp[2]) - (rp[1] - rp[0])) / k;
}

/* Logits of the prompt's last position, then of one decode step (the token 1), into out[2 * V]. */
static void logits_two(xpi_model *m, const int32_t *ids, int n, float *out, int32_t V) {
  xpi_request *r = NULL;
  xpi_request_options ro;
  xpi_request_options_default(&ro);
  ro.n_ctx = 128;
  CHECK_OK(xpi_request_create(m, &ro, &r));
  const int32_t one = 1;
  if (r) CHECK_OK(xpi_request_eval(r, ids, (size_t)n, 0, out, (size_t)V));
  if (r) CHECK_OK(xpi_request_eval(r, &one, 1, 0, out + V, (size_t)V));
  xpi_request_free(r);
}

int main(int argc, char **argv) {
  const char *skip = getenv("XPI_XPU_TEST_SKIP");
  if (skip && *skip) {
    printf("SKIPPED: %s\n", skip);
    return 77;
  }
  const char *mode = argc > 1 ? argv[1] : "copy", *file = argc > 2 ? argv[2] : getenv("XPI_SUBMISSION_LOGITS");
  if (file && !*file) file = NULL; /* "": no logits file */
  const int copy = strcmp(mode, "nocopy") != 0;
  char *path = xpi_test_strf("%s/goldens/tinyfortunes.json", xpi_test_env("XPI_TEST_DATA"));
  char *dir = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
  cJSON *g = xpi_test_load_json(path);
  const cJSON *in = cJSON_GetObjectItem(g->child, "input_ids");
  int32_t ids[64];
  int n = cJSON_GetArraySize(in);
  for (int i = 0; i < n && i < 64; i++) ids[i] = cJSON_GetArrayItem(in, i)->valueint;
  zesim_get_counters_fn fn = NULL;
  xpi_model *m = NULL;
  if (load(dir, "xpu:0", NULL, "sdpa", &m) == 0 && (fn = counters_fn())) {
    zesim_counters c;
    fn(&c);
    xpi_model_info info = {.struct_size = sizeof info};
    CHECK_OK(xpi_model_get_info(m, &info));
    int engine = xpi_xpu_upload_engine(m->backends[0]);
    printf("weights: %llu bytes on the device, %llu bytes through the copy engine in %llu copies (upload engine %s)\n",
           (unsigned long long)info.weight_bytes, (unsigned long long)c.copy_engine_bytes,
           (unsigned long long)c.copy_engine_copies, engine == 1 ? "copy" : engine == 0 ? "compute" : "none");
    if (copy) {
      CHECK(engine == 1, "weights were not uploaded on the copy engine (%d)", engine);
      /* every weight byte (f32 weights go up as stored, then convert on the device: at least as many bytes) */
      CHECK(c.copy_engine_bytes >= info.weight_bytes, "%llu bytes through the copy engine, weights %llu",
            (unsigned long long)c.copy_engine_bytes, (unsigned long long)info.weight_bytes);
    } else {
      CHECK(engine == 0, "without a copy engine the uploads must use the compute group (%d)", engine);
      CHECK(c.copy_engine_copies == 0, "%llu copies on a copy engine zesim does not have",
            (unsigned long long)c.copy_engine_copies);
    }
    step_counts s;
    decode_step_counts(m, fn, ids, n, &s);
    printf("per decode step: %.2f submissions (execute), %.2f immediate-list commands, %.2f copy commands, "
           "%.2f host waits, %.2f bytes read back, %.2f replays\n",
           s.executes, s.immediate_cmds, s.copies, s.host_syncs, s.bytes_read, s.replays);
    CHECK(s.replays == 1, "%.2f replays per decode step (the replayed path is not taken)", s.replays);
    CHECK(s.executes == 1, "%.2f submissions per decode step, want 1", s.executes);
    CHECK(s.immediate_cmds == 0, "%.2f immediate-list commands per decode step, want 0", s.immediate_cmds);
    CHECK(s.copies == 0, "%.2f copy commands per decode step, want 0", s.copies);
    CHECK(s.host_syncs == 1, "%.2f host waits per decode step, want 1", s.host_syncs);
    CHECK(s.bytes_read == 4, "%.2f bytes read back per decode step, want 4 (the greedy id)", s.bytes_read);

    const int32_t V = m->cfg.vocab_size;
    float *lg = malloc(2 * (size_t)V * sizeof *lg), *want = malloc(2 * (size_t)V * sizeof *want);
    logits_two(m, ids, n, lg, V);
    if (file && copy) {
      CHECK(xpi_test_write_file(file, lg, 2 * (size_t)V * sizeof *lg) == 0, "writing %s", file);
    } else if (file) {
      FILE *f = fopen(file, "rb");
      size_t got = f ? fread(want, sizeof *want, 2 * (size_t)V, f) : 0;
      if (f) fclose(f);
      CHECK(got == 2 * (size_t)V, "reading %s (written by xpu/test_xpu_submission)", file);
      CHECK(got == 2 * (size_t)V && memcmp(lg, want, 2 * (size_t)V * sizeof *lg) == 0,
            "logits differ from the copy-engine load's");
    }
    free(lg), free(want);

  }
  xpi_model_free(m);
  /* The embedding table in host memory (the memory plan's choice on a short device), on a model loaded afresh
   * (recorded steps keep the table they were recorded with): the step's rows are gathered on the host into host
   * USM and copied into the residual stream by the recorded step, so the counts stay the same. */
  xpi_model *m2 = NULL;
  if (fn && load(dir, "xpu:0", NULL, "sdpa", &m2) == 0) {
    xpi_backend **layer_be = calloc((size_t)m2->cfg.n_layers, sizeof *layer_be);
    xpi_graph_layer_backends(&m2->graph, m2->cfg.n_layers, layer_be);
    xpi_weights_free(&m2->w);
    CHECK_OK(xpi_weights_load_opt(&m2->cfg, m2->st, layer_be, -1, 1, &m2->w));
    free(layer_be);
    CHECK(m2->w.embed_on_host, "weights reloaded with the embedding table on the host");
    step_counts s;
    decode_step_counts(m2, fn, ids, n, &s);
    printf("per decode step, embedding table on the host: %.2f submissions, %.2f immediate-list commands, %.2f copy "
           "commands, %.2f host waits, %.2f bytes read back\n",
           s.executes, s.immediate_cmds, s.copies, s.host_syncs, s.bytes_read);
    CHECK(s.replays == 1 && s.executes == 1 && s.immediate_cmds == 0 && s.copies == 0 && s.host_syncs == 1 &&
              s.bytes_read == 4,
          "embedding on the host: %.2f replays, %.2f submissions, %.2f immediate commands, %.2f copies, %.2f host "
          "waits, %.2f bytes read per decode step (want 1, 1, 0, 0, 1, 4)",
          s.replays, s.executes, s.immediate_cmds, s.copies, s.host_syncs, s.bytes_read);
  }
  xpi_model_free(m2);
  cJSON_Delete(g);
  free(dir), free(path);
  return xpi_test_done();
}
