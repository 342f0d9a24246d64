/* The performance model (src/ops/xpu/xpu_perf.c, xpi_model_perf_decode) against sizes computed here from the
 * model's config, independently of the cost table.
 *   (default)  tinyfortunes at 100 positions on xpu:0: the launches of a decode step (6 a layer + 3), the
 *              GEMVs read every matrix once plus their input vectors, SDPA reads each layer's K/V once per chunk
 *              of 8 query heads of a KV head (once for this model: the split-K GQA kernel), and the totals add up.
 *   0.6b       the Qwen3-0.6B shape at 4096 positions (f32 KV): bytes moved per token against weights + KV, within
 *              the design target of 1.1x (the kernel that read every K/V row once per query head of its GQA pair
 *              moved 1.444x); SDPA moves the KV once plus its q/out, the stored row and the 16 key splits'
 *              partial states, which stay under 1% of the KV.
 *   moe        the Qwen3-MoE golden model (tests/data/arch_models) with --quant q8 and q4: the quantized expert
 *              GEMVs of a decode step (3 a layer: gate, up, down) read the k chosen experts' blocks (quants + a
 *              half scale per 32 weights) plus only small operands (the slots' int8 activation rows, the ids),
 *              write the k slots' rows, and count 2 FLOPs a weight of the chosen experts; the weights a step
 *              must read count k experts of each layer's n. */
#include <math.h>
#include <string.h>

#include "xpu_load.h"

static const xpi_perf_kernel *kernel(const xpi_perf_report *r, const char *name) {
  for (int k = 0; k < r->n_kernels; k++)
    if (!strcmp(r->kernels[k].name, name)) return &r->kernels[k];
  return NULL;
}

/* bytes of a kernel (read + written), 0 when it did not run */
static double moved_by(const xpi_perf_report *r, const char *name) {
  const xpi_perf_kernel *k = kernel(r, name);
  return k ? k->bytes_read + k->bytes_written : 0;
}

static int tiny(void) {
  char *dir = xpi_test_strf("%s/examples/models/tinyfortunes", xpi_test_env("XPI_SOURCE_DIR"));
  xpi_model *m = NULL;
  int rc = load(dir, "xpu:0", NULL, "sdpa", &m);
  free(dir);
  if (rc) return rc;
  xpi_model_info in = {.struct_size = sizeof in};
  CHECK_OK(xpi_model_get_info(m, &in));
  const double H = in.hidden_size, I = in.intermediate_size, hq = in.n_heads, hk = in.n_kv_heads, hd = in.head_dim;
  const double L = in.n_layers, V = in.vocab_size, ctx = 100;
  xpi_perf_report r = {.struct_size = sizeof r};
  CHECK_OK(xpi_model_perf_decode(m, (int32_t)ctx, &r));
  CHECK(r.n_ctx == 100 && r.launches == (int64_t)(6 * L + 3), "%lld launches (6 a layer: norm+q|k|v, rope, "
        "attention with the KV store, o_proj+add, norm+gate|up+act, down+add; + embed, final norm+lm_head, argmax)",
        (long long)r.launches);
  /* bf16 matrices: q, k, v, o, gate, up, down per layer and the tied lm_head, read once each; on top of them only
   * small operands: each launch's input row (and RMSNorm weight, f32 at most), outputs read back when a GEMV adds
   * into the residual stream */
  const double mats[][2] = {{hq * hd, H}, {hk * hd, H}, {hk * hd, H}, {H, hq * hd}, {I, H}, {I, H}, {H, I}};
  double wbytes = V * H * 2, gemv_wr = V * 4;
  for (int i = 0; i < 7; i++) {
    wbytes += L * mats[i][0] * mats[i][1] * 2;
    gemv_wr += L * mats[i][0] * 4;
  }
  gemv_wr -= L * I * 4; /* gate and up give one output row of I */
  const double small = H * 4 + H * 4 /* the lm_head's: input row, final norm weight (fused) */ +
                       L * (4 * (H + hq * hd + I) * 4 + 2 * H * 4 + 2 * H * 4);
  double gemv_rd = 0, gemv_w = 0;
  long long gemv_n = 0;
  for (int k = 0; k < r.n_kernels; k++)
    if (!strncmp(r.kernels[k].name, "xpi_gemv", 8)) {
      gemv_rd += r.kernels[k].bytes_read, gemv_w += r.kernels[k].bytes_written;
      gemv_n += (long long)r.kernels[k].launches;
    }
  /* split-K GEMVs (o_proj/down where they have too few rows for the device: xpu_splitk.c) write each row's
   * partial sums and read them back: at most 16 a row of the two H-row matrices a layer */
  const double part = gemv_w - gemv_wr, part_max = L * 2 * H * 16 * 4;
  CHECK(gemv_n == (long long)(4 * L + 1) && gemv_rd >= wbytes && gemv_rd <= wbytes + small + part && part >= 0 &&
            part <= part_max,
        "GEMVs: %lld launches (want %.0f), %.0f bytes read (weights %.0f + at most %.0f + partials %.0f), %.0f "
        "written (want %.0f + partials, at most %.0f)", gemv_n, 4 * L + 1, gemv_rd, wbytes, small, part, gemv_w,
        gemv_wr, part_max);
  const double kv = L * ctx * hk * hd * 2 * 4; /* f32 K and V of ctx positions */
  CHECK(r.kv_bytes == kv, "KV a step reads %.0f, want %.0f", r.kv_bytes, kv);
  CHECK(r.weight_bytes == (double)in.weight_bytes + H * 2, "weights a step reads %.0f (all placed + one embedding "
        "row: %.0f)", r.weight_bytes, (double)in.weight_bytes + H * 2);
  const xpi_perf_kernel *a = kernel(&r, "xpi_sdpa");
  /* K/V once per chunk of 8 query heads of a KV head, q, the token's k and v it stores; one key split at 100
   * positions (xpu_ops.c: a split per 256 positions of capacity), so no partial states */
  const double chunks = ceil(hq / hk / 8);
  const double sdpa_rd = kv * chunks + L * hq * hd * 4 + L * hk * hd * 2 * 4;
  CHECK(a && a->launches == L && a->bytes_read == sdpa_rd && a->flops == L * hq * ctx * hd * 4,
        "SDPA: %.0f bytes read, want %.0f (K/V once per 8 query heads, q)", a ? a->bytes_read : 0, sdpa_rd);
  double sum = 0;
  for (int k = 0; k < r.n_kernels; k++) sum += r.kernels[k].bytes_read + r.kernels[k].bytes_written;
  CHECK(sum == r.bytes_read + r.bytes_written, "kernels add up to the total");
  printf("tinyfortunes @%d: moved %.0f bytes, must read %.0f + %.0f: %.3fx\n", r.n_ctx, sum, r.weight_bytes,
         r.kv_bytes, sum / (r.weight_bytes + r.kv_bytes));
  xpi_model_free(m);
  return 0;
}

static int qwen06b(void) {
  char *dir = xpi_test_strf("%s/qwen3-0.6b-rand", xpi_test_env("XPI_MODELS_DIR"));
  xpi_model *m = NULL;
  int rc = load(dir, "xpu:0", NULL, "sdpa", &m);
  free(dir);
  if (rc) return rc;
  xpi_perf_report r = {.struct_size = sizeof r};
  CHECK_OK(xpi_model_perf_decode(m, 4096, &r));
  const double must = r.weight_bytes + r.kv_bytes, moved = r.bytes_read + r.bytes_written;
  const double sdpa = moved_by(&r, "xpi_sdpa");
  printf("qwen3-0.6b @4096: weights %.2f MB + KV %.2f MB; moved %.2f MB = %.4fx (SDPA %.2f MB); %lld launches\n",
         r.weight_bytes / 1e6, r.kv_bytes / 1e6, moved / 1e6, moved / must, sdpa / 1e6, (long long)r.launches);
  CHECK(r.launches == 28 * 6 + 3, "%lld launches", (long long)r.launches);
  CHECK(moved / must <= 1.1, "moved / must = %.4f, the design target is <= 1.1", moved / must);
  /* SDPA reads the KV once (hq / hk = 2: one chunk of heads); on top: q and out (16 heads x 128 f32 a layer), the
   * stored k/v row, and 16 splits' partial states (m, l, 128 sums per head) out and back: under 1% of the KV */
  CHECK(sdpa > r.kv_bytes && sdpa < r.kv_bytes * 1.01, "SDPA moves %.0f, the KV is %.0f", sdpa, r.kv_bytes);
  xpi_model_free(m);
  return 0;
}

static int moe(void) {
  char *dir = xpi_test_strf("%s/arch_models/tiny-qwen3_moe", xpi_test_env("XPI_TEST_DATA"));
  const char *quants[2] = {"q8", "q4"};
  for (int q = 0; q < 2; q++) {
    xpi_model_options o;
    xpi_model_options_default(&o);
    o.device = "xpu:0";
    o.quant = quants[q];
    xpi_model *m = NULL;
    CHECK_OK(xpi_model_load(dir, &o, &m));
    if (!m) break;
    /* config.json: hidden 64, moe_intermediate_size 64, 2 experts a token, 4 layers, all sparse */
    const double H = 64, I = 64, k = 2, L = 4, nbH = H / 32, nbI = I / 32, blk = (q ? 16 : 32) + 2;
    xpi_perf_report r = {.struct_size = sizeof r};
    CHECK_OK(xpi_model_perf_decode(m, 32, &r));
    const xpi_perf_kernel *g = kernel(&r, q ? "xpi_moe_gemv_q4" : "xpi_moe_gemv_q8");
    const double w = L * k * (2 * I * nbH + H * nbI) * blk; /* gate and up: I rows of H; down: H rows of I */
    const double small = L * k * (2 * nbH + nbI) * 36 + L * k * (2 * I + H) * 4; /* activation blocks, ids */
    const double wr = L * k * (2 * I + H) * 4, fl = L * k * 3 * 2 * I * H;
    CHECK(g && g->launches == 3 * L && g->bytes_read >= w && g->bytes_read <= w + small && g->bytes_written == wr &&
              g->flops == fl,
          "--quant %s: expert GEMVs: %lld launches (want %.0f), %.0f bytes read (the chosen experts' %.0f + at most "
          "%.0f), %.0f written (want %.0f), %.0f FLOPs (want %.0f)", quants[q], g ? (long long)g->launches : 0LL,
          3 * L, g ? g->bytes_read : 0, w, small, g ? g->bytes_written : 0, wr, g ? g->flops : 0, fl);
    /* the step must read every placed weight but the embedding (one row) and the 2 unchosen experts of 4 */
    xpi_model_info in = {.struct_size = sizeof in};
    CHECK_OK(xpi_model_get_info(m, &in));
    const double all_ex = L * 4 * (2 * I * nbH + H * nbI) * blk, embed = 4096 * H * 2;
    const double must = (double)in.weight_bytes - embed + H * 2 - all_ex / 2;
    CHECK(r.weight_bytes == must, "--quant %s: a step must read %.0f bytes of weights, want %.0f", quants[q],
          r.weight_bytes, must);
    printf("qwen3_moe --quant %s: expert GEMVs read %.0f bytes a decode step (chosen experts' blocks %.0f); weights "
           "a step must read %.0f\n", quants[q], g ? g->bytes_read : 0, w, r.weight_bytes);
    xpi_model_free(m);
  }
  free(dir);
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  int rc = !strcmp(mode, "0.6b") ? qwen06b() : !strcmp(mode, "moe") ? moe() : tiny();
  if (rc == 77) return 77;
  return xpi_test_done();
}
