/* The op interface: the seam between the model graph (written once) and the backends (cpu, xpu).
 *
 * Memory: every pointer an op takes is backend memory from be->ops->alloc (host memory for the CPU backend,
 * Level Zero USM device memory for XPU) or be->ops->alloc_host (host USM on an XPU: a step's inputs). Pointer arithmetic inside an allocation is allowed on both.
 * Activations are f32, row-major. Weights are xpi_weight in their stored or quantized dtype.
 *
 * Semantics are "enqueue": the CPU backend may run an op at once, the XPU backend appends it to a command
 * list. Host-visible results exist only after be->ops->read (which synchronizes). Positions live in backend
 * memory (pos[]), so a recorded decode step can be replayed with new positions without re-recording.
 *
 * Ops report errors through xpi_status; a failing op leaves the backend usable (the step's results are
 * undefined).
 */
#ifndef XPI_OPS_H
#define XPI_OPS_H

#include <stddef.h>
#include <stdint.h>
#include "xpuinfer.h"

typedef enum xpi_dtype {
  XPI_DT_F32 = 0,
  XPI_DT_F16 = 1,
  XPI_DT_BF16 = 2,
  XPI_DT_Q8 = 3,  /* block-quantized int8, layout owned by the backend that made it */
  XPI_DT_Q4 = 4,  /* block-quantized int4, likewise */
  XPI_DT_I32 = 5
} xpi_dtype;

const char *xpi_dtype_name(xpi_dtype dt);
size_t xpi_dtype_size(xpi_dtype dt); /* bytes per element; 0 for block types */

/* A weight placed on a backend. Matrices are [rows=out_features, cols=in_features] row-major, as in
 * safetensors; vectors have rows == 1. */
typedef struct xpi_weight {
  xpi_dtype dtype;
  int64_t rows, cols;
  const void *data;   /* backend memory; CPU may point straight into the mmapped file */
  const void *aux;    /* backend-specific (scales of quantized types, repacked layouts) or NULL */
  void *owned;        /* what the backend must release (NULL when data borrows the mapping) */
  size_t bytes;       /* bytes this weight occupies on the backend */
} xpi_weight;

typedef enum xpi_attn_impl { XPI_ATTN_SDPA = 0, XPI_ATTN_EAGER = 1, XPI_ATTN_FLASH = 2 } xpi_attn_impl;

/* What an attention call computes besides the causal mask (the layer's settings; see attention below). */
typedef struct xpi_attn_params {
  float scale;       /* multiplies q.k */
  float softcap;     /* > 0: score = softcap * tanh(score / softcap) after scaling (Gemma 2); 0: none */
  int32_t window;    /* > 0: the token at position p attends to positions p-window+1 .. p only
                      * (transformers' sliding_window: kv_idx > q_idx - window); 0: all of 0..p */
  xpi_attn_impl impl;
} xpi_attn_params;

/* The activation of a gated MLP: swiglu (silu) or geglu (gelu_tanh). */
typedef enum xpi_glu_act { XPI_GLU_SILU = 0, XPI_GLU_GELU_TANH = 1 } xpi_glu_act;

typedef enum xpi_rope_type { XPI_ROPE_DEFAULT = 0, XPI_ROPE_LLAMA3 = 1 } xpi_rope_type;

typedef struct xpi_rope_params {
  xpi_rope_type type;
  float theta;
  int32_t head_dim;          /* rotary dim == head_dim for these families */
  /* llama3 scaling */
  float factor, low_freq_factor, high_freq_factor;
  int32_t original_max_position_embeddings;
  /* longrope's two sets (the rope op): NULL, or backend memory [n] where a nonzero entry makes token t use the
   * second half of inv_freq ([2][hd/2]: the short, then the long factors' frequencies) */
  const int32_t *long_sel;
} xpi_rope_params;

/* Inverse frequencies for RoPE, head_dim/2 of them, as transformers computes them (in double, stored f32).
 * Written once by the graph and shared by backends (see model/rope.c). */
void xpi_rope_inv_freq(const xpi_rope_params *p, float *inv_freq /* [head_dim/2] */);

/* A paged KV cache on a backend: a pool of n_blocks blocks, each holding block_size consecutive positions of
 * one sequence for n_layers layers, K and V, n_kv_heads x head_dim each. Which blocks a sequence uses, in
 * order, is its block table (kept by the engine, src/engine). The layout and dtype inside are the backend's
 * business. */
typedef struct xpi_kv xpi_kv;

/* Where the tokens of one step live in a paged KV cache. All arrays are backend memory (so a recorded step
 * replays with new contents); the ints are fixed for the cache. Token i of the step belongs to the sequence
 * whose block table is row seq[i] of tables, at position pos[i] of that sequence: its K/V go to slot
 * pos[i] % block_size of block tables[seq[i] * max_blocks + pos[i] / block_size], and it attends to the
 * positions 0..pos[i] of the same sequence (written by earlier steps or by this one); with a sliding window
 * only pos[i]-window+1..pos[i], and the table entries of the blocks before that are never read (they may be
 * stale: a cache that keeps only the window may have reused those blocks). */
typedef struct xpi_kv_map {
  const int32_t *pos;     /* [n] */
  const int32_t *seq;     /* [n] */
  const int32_t *tables;  /* [rows][max_blocks] block ids; entries past a sequence's length are never read */
  int32_t max_blocks;     /* row stride of tables: blocks of the longest sequence the cache serves */
} xpi_kv_map;

typedef struct xpi_backend xpi_backend;

/* The experts of one mixture-of-experts projection: n same-shaped matrices [rows, cols], each placed by
 * weight_create (so the CPU borrows or quantizes them per expert, as any matrix), plus a table of their
 * data pointers in backend memory for kernels that pick an expert per token (src/ops/experts.c). */
typedef struct xpi_experts {
  int32_t n;
  int64_t rows, cols;
  xpi_dtype dtype;
  xpi_weight *w;          /* [n] */
  const void **table;     /* backend memory: [n] w[e].data, then [n] w[e].aux where the experts have scales (q8/q4) */
  uint64_t bytes;         /* bytes of the n matrices on the backend */
} xpi_experts;

/* Places n host matrices src[e] (rows x cols of src_dtype, valid for the model's life) on be as dtype want
 * (weight_create's conversions and q8/q4 quantization). On failure nothing stays allocated. */
xpi_status xpi_experts_create(xpi_backend *be, xpi_experts *e, const void *const *src, xpi_dtype src_dtype,
                              int32_t n, int64_t rows, int64_t cols, xpi_dtype want);
void xpi_experts_free(xpi_backend *be, xpi_experts *e);

/* The ops a backend may implement, for capability queries (supports below) and the op-case tests. */
typedef enum xpi_op {
  XPI_OP_EMBED, XPI_OP_RMSNORM, XPI_OP_MATMUL, XPI_OP_ROPE, XPI_OP_ATTENTION, XPI_OP_SWIGLU, XPI_OP_GEGLU,
  XPI_OP_SOFTCAP, XPI_OP_SCALE, XPI_OP_ADD, XPI_OP_ARGMAX, XPI_OP_TOPK, XPI_OP_MOE_ROUTE, XPI_OP_MOE_MATMUL,
  XPI_OP_MOE_COMBINE, XPI_OP_MATMUL_MULTI, XPI_OP_MATMUL_GLU, XPI_OP_MOE_MLP, XPI_OP_MATMUL_ADD, XPI_OP_CAPTURE,
  XPI_OP_COUNT
} xpi_op;

/* One op as the graph would place it: the op, the dtype of its weight (matmul family, embed, experts; F32 for
 * ops without one), the weight's shape (rows x cols; 0 where none), the tokens of the step (n; 0: any) and the
 * head size of rope and attention (head_dim; 0: not asked). */
typedef struct xpi_op_desc {
  xpi_op op;
  xpi_dtype wdtype;
  int64_t rows, cols;
  int32_t n;
  int32_t head_dim;
} xpi_op_desc;

/* Whether be can run d: its entry point exists and, where the backend has a supports function, it says yes.
 * The graph asks before it places an op, so an op a backend lacks is refused at load, not at run time. */
int xpi_backend_supports(const xpi_backend *be, const xpi_op_desc *d);
const char *xpi_op_name(xpi_op op);

typedef struct xpi_backend_ops {
  const char *name; /* "cpu", "xpu" */
  void (*destroy)(xpi_backend *be);

  /* ---- memory */
  void *(*alloc)(xpi_backend *be, size_t bytes);             /* NULL on failure, error set */
  /* Optional (NULL: alloc): memory the host writes and reads in place and ops read directly (host USM on an
   * XPU): a step's inputs (ids, positions, tables) and small outputs, so that write/read of them need no copy
   * command. Freed with free. */
  void *(*alloc_host)(xpi_backend *be, size_t bytes);
  void (*free)(xpi_backend *be, void *p);
  xpi_status (*write)(xpi_backend *be, void *dst, const void *host_src, size_t bytes); /* host -> backend */
  xpi_status (*read)(xpi_backend *be, void *host_dst, const void *src, size_t bytes);  /* backend -> host; syncs */

  /* ---- weights
   * Places a host tensor (src_dtype, rows x cols, unaligned host pointer that stays valid for the model's
   * life, e.g. the mmap) on the backend as dtype want (same as src_dtype, or f32/bf16/f16 conversion, or
   * XPI_DT_Q8/Q4 quantization). The CPU backend borrows src when no conversion is needed. */
  xpi_status (*weight_create)(xpi_backend *be, xpi_weight *w, const void *src, xpi_dtype src_dtype,
                              int64_t rows, int64_t cols, xpi_dtype want);
  void (*weight_free)(xpi_backend *be, xpi_weight *w);

  /* ---- KV cache: n_blocks blocks of block_size positions (a power of two) for n_layers layers */
  xpi_status (*kv_create)(xpi_backend *be, int32_t n_layers, int32_t n_blocks, int32_t block_size,
                          int32_t n_kv_heads, int32_t head_dim, xpi_dtype dtype, xpi_kv **out);
  void (*kv_free)(xpi_backend *be, xpi_kv *kv);

  /* ---- ops (shapes in comments; n = tokens in this step) */
  /* out[n, d] = table[ids[i], :] (converted to f32); ids in backend memory */
  xpi_status (*embed)(xpi_backend *be, float *out, const xpi_weight *table, const int32_t *ids, int32_t n);
  /* if residual: x[n,d] += residual[n,d] (x updated in place, it is the residual stream);
   * then out[n,d] = x * rsqrt(mean(x^2) + eps) * w[d] */
  xpi_status (*rmsnorm)(xpi_backend *be, float *out, float *x, const float *residual, const xpi_weight *w,
                        int32_t n, int32_t d, float eps);
  /* out[n, rows] = in[n, cols] @ w^T (+ bias[rows]); f32 accumulation */
  xpi_status (*matmul)(xpi_backend *be, float *out, const float *in, const xpi_weight *w, const xpi_weight *bias,
                       int32_t n);
  /* In place on q[n, hq, hd] and k[n, hk, hd]: optional per-head RMSNorm (qwen3 q_norm/k_norm, weights [hd];
   * NULL to skip), then rotary embedding at positions pos[n] (rotate_half convention of transformers), token t
   * with inv_freq, or inv_freq + hd/2 where rp->long_sel[t] is nonzero. */
  xpi_status (*rope)(xpi_backend *be, float *q, float *k, const int32_t *pos, int32_t n, int32_t hq, int32_t hk,
                     const xpi_rope_params *rp, const float *inv_freq /* backend memory [hd/2] */,
                     const xpi_weight *q_norm, const xpi_weight *k_norm, float eps);
  /* Stores k,v [n, hk, hd] into the kv layer at the slots map gives, then causal attention per sequence:
   * out[i, h, :] = softmax(cap(q[i,h,:] . K_s[w0..pos[i], h/(hq/hk), :] * ap->scale)) @ V_s[...], with K_s, V_s
   * the positions of token i's sequence read through its block table, w0 = 0 or, with ap->window > 0,
   * max(0, pos[i] - window + 1), and cap the softcap (identity when ap->softcap is 0). Query heads sharing a KV
   * head read it in place (GQA). ap->impl selects sdpa / eager (reference: full scores, KV heads expanded) /
   * flash (tiled online softmax); all must agree within rounding. */
  xpi_status (*attention)(xpi_backend *be, float *out, const float *q, const float *k, const float *v, xpi_kv *kv,
                          int32_t layer, const xpi_kv_map *map, int32_t n, int32_t hq, int32_t hk, int32_t hd,
                          const xpi_attn_params *ap);
  /* out[n, f] = silu(gate[n, f]) * up[n, f] */
  xpi_status (*swiglu)(xpi_backend *be, float *out, const float *gate, const float *up, int32_t n, int32_t f);
  /* out[n, f] = gelu_tanh(gate[n, f]) * up[n, f]   (transformers' gelu_pytorch_tanh) */
  xpi_status (*geglu)(xpi_backend *be, float *out, const float *gate, const float *up, int32_t n, int32_t f);
  /* x[i] = cap * tanh(x[i] / cap), i < count (Gemma 2 final logit softcapping) */
  xpi_status (*softcap)(xpi_backend *be, float *x, int64_t count, float cap);
  /* x[i] *= s, i < count (Gemma embedding normalizer, Granite multipliers) */
  xpi_status (*scale)(xpi_backend *be, float *x, int64_t count, float s);
  /* x[i] += y[i], i < count */
  xpi_status (*add)(xpi_backend *be, float *x, const float *y, int64_t count);
  /* out[r] = argmax(x[r, 0..cols)) for r < rows (lowest index on ties), or -1 when the row holds a NaN or an
   * infinity (so the greedy path learns of broken logits without copying them to the host) */
  xpi_status (*argmax)(xpi_backend *be, int32_t *out, const float *x, int32_t rows, int32_t cols);
  /* The k largest values of every row r < rows of x[rows, cols] (1 <= k <= cols), best first: larger value
   * first, lower index on ties: ids[r*k + j], vals[r*k + j]. And the row's softmax normaliser: norm[2r] = the
   * row's max, norm[2r+1] = sum over the row of exp(x - max) (in [1, cols]; log-sum-exp = max + log(sum)),
   * accurate to a few f32 ulps (the CPU sums in double). A row holding a NaN or an infinity gets ids all -1 (as
   * argmax reports it; vals and norm undefined). Sampling reads back these k + 2 numbers instead of the row. */
  xpi_status (*topk)(xpi_backend *be, int32_t *ids, float *vals, float *norm, const float *x, int32_t rows,
                     int32_t cols, int32_t k);

  /* ---- mixture of experts (Qwen2-MoE, Qwen3-MoE)
   * Router: per token t < n, p = softmax(logits[t, 0..n_experts)) in f32, its k largest, best first (lower
   * expert id on ties): ids[t*k + j], wts[t*k + j] = p, divided by the sum of the k when norm_topk (the
   * config's norm_topk_prob). A row holding a NaN or an infinity gets ids -1 (moe_matmul skips them). */
  xpi_status (*moe_route)(xpi_backend *be, int32_t *ids, float *wts, const float *logits, int32_t n,
                          int32_t n_experts, int32_t k, int norm_topk);
  /* Per slot s = t*k + j (t < n, j < k): out[s, 0..rows) = x_s @ E[ids[s]]^T, x_s = in[t] when in_k == 1 (gate
   * and up read the token's row) or in[s] when in_k == k (down reads the slot's own row). Only the experts some
   * slot selects are read, each once per call: slots are grouped by expert. A slot whose id is outside
   * [0, e->n) gets a zero row. */
  xpi_status (*moe_matmul)(xpi_backend *be, float *out, const float *in, int32_t in_k, const xpi_experts *e,
                           const int32_t *ids, int32_t n, int32_t k);
  /* out[t, :] = sum_j wts[t*k + j] * y[r(t*k + j), :]  (t < n, rows of d), r(s) = pos[s] ([n*k] rows of y,
   * as moe_mlp returns them) or s when pos is NULL; then, when shared is not NULL, += sigmoid(shared_gate[t]) *
   * shared[t, :] (Qwen2-MoE's shared expert and its gate). */
  xpi_status (*moe_combine)(xpi_backend *be, float *out, const float *y, const int32_t *pos, const float *wts,
                            const float *shared, const float *shared_gate, int32_t n, int32_t k, int32_t d);

  /* ---- optional: record a step once and replay it ("XPU graph"). NULL where unsupported.
   * Between capture_begin and capture_end ops are recorded, not run; replay runs the recording again,
   * reading positions/ids from the same backend buffers. */
  xpi_status (*capture_begin)(xpi_backend *be);
  xpi_status (*capture_end)(xpi_backend *be, void **graph);
  xpi_status (*replay)(xpi_backend *be, void *graph);
  void (*graph_free)(xpi_backend *be, void *graph);

  /* Waits for everything enqueued. */
  xpi_status (*sync)(xpi_backend *be);

  /* ---- optional fused ops: NULL where the backend has none (the model's blocks then run the separate ops);
   * each computes exactly what the composition of the separate ops computes, in one launch where it can. */
  /* outs[j][n, ws[j]->rows] = h @ ws[j]^T (+ biases[j] when not NULL), j < count (1..3), all weights with the
   * same cols (the q/k/v projections of one input): h = in without norm, else rmsnorm(in) with weight norm and eps
   * (as rmsnorm without residual computes it); hbuf [n, cols] is scratch where the backend may put h. */
  xpi_status (*matmul_multi)(xpi_backend *be, int count, float *const *outs, const float *in, const xpi_weight *norm,
                             float eps, float *hbuf, const xpi_weight *const *ws, const xpi_weight *const *biases,
                             int32_t n);
  /* out[n, f] = act(h @ gate^T) * (h @ up^T), f = gate->rows = up->rows, act as swiglu/geglu, h as matmul_multi;
   * tmp [n, f] scratch (the composition's up projection). */
  xpi_status (*matmul_glu)(xpi_backend *be, float *out, float *tmp, const float *in, const xpi_weight *norm,
                           float eps, float *hbuf, const xpi_weight *gate, const xpi_weight *up, xpi_glu_act act,
                           int32_t n);
  /* The experts' SwiGLU MLP of every slot: exactly moe_matmul(g, in, 1, gate), moe_matmul(u, in, 1, up),
   * swiglu(g, g, u, n*k, gate->rows), moe_matmul(y, g, k, down) with the same ids, in fewer launches, except that
   * slot s's row of y is out's row pos[s] ([n*k], a permutation of the rows, written here; moe_combine reads out
   * through it), so the backend may leave the rows in the order it computed them (the CPU: grouped by expert).
   * g and u [n*k, gate->rows] are scratch (left unspecified). */
  xpi_status (*moe_mlp)(xpi_backend *be, float *out, int32_t *pos, float *g, float *u, const float *in,
                        const xpi_experts *gate, const xpi_experts *up, const xpi_experts *down, const int32_t *ids,
                        int32_t n, int32_t k);
  /* x[n, w->rows] += in @ w^T (+ bias): a projection with the residual add as its epilogue; tmp [n, w->rows]
   * scratch (the composition's product). x + (in @ w^T + bias) in that order, as rmsnorm's residual add. */
  xpi_status (*matmul_add)(xpi_backend *be, float *x, float *tmp, const float *in, const xpi_weight *w,
                           const xpi_weight *bias, int32_t n);

  /* Bytes further allocations could still get (the CPU: MemAvailable; an XPU: its memory less what this
   * process holds there): what default KV pools are sized from. */
  xpi_status (*free_memory)(xpi_backend *be, uint64_t *bytes);

  /* Optional (NULL: every op whose entry point is set, any dtype and shape): whether this backend runs d
   * (dtypes, shape limits). Called through xpi_backend_supports. */
  int (*supports)(const xpi_backend *be, const xpi_op_desc *d);
} xpi_backend_ops;

struct xpi_backend {
  const xpi_backend_ops *ops;
  char device[64];        /* "cpu", "xpu:0" */
  int use_kernels;        /* 1: fused/fast kernels, 0: plain reference path */
  void *impl;             /* backend private state */
  /* which kernels compute a weight dtype (for xpi_model_info.kernels), or NULL */
  void (*describe)(const struct xpi_backend *be, xpi_dtype wdt, char *out, size_t cap);
};

/* Backend constructors. */
typedef struct xpi_backend_config {
  const char *device;      /* "cpu", "xpu:N" */
  int n_threads;           /* CPU */
  int use_kernels;
} xpi_backend_config;
xpi_status xpi_backend_cpu_create(const xpi_backend_config *cfg, xpi_backend **out);
/* xpi_backend_xpu_create: ops/backend_xpu.h (src/ops/xpu, or a CPU-only build's stub). */

#endif /* XPI_OPS_H */
