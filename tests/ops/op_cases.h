/* The op-case list: every op of xpi_backend_ops at the shapes, dtypes and options the backends must get right,
 * each with its tolerance and the reason for it. test_backend_ops.c runs every case on a backend under test
 * (a CPU kernel table or an XPU tier) and on the reference (the CPU backend's plain path, use_kernels 0) and
 * compares. A new op is a row here (and its runner in test_backend_ops.c); a new backend is a ctest line. */
#ifndef XPI_TEST_OP_CASES_H
#define XPI_TEST_OP_CASES_H

#include <stddef.h>

#include "ops/ops.h"

/* Unit roundoff of f32: the bounds below are multiples of it (Higham, 3.1: a sum of k terms in any order is
 * within ~k u of the sum of the terms' magnitudes). */
#define OPC_U 5.96e-8

/* |got - ref| <= atol + rtol |ref| + qb * (the per-output q8/q4 bound: xt_q_bound, tests/xpu/xpu_test_util.h). */
typedef struct op_tol {
  double atol, rtol, qb;
  const char *why;
} op_tol;

enum {
  OPC_BIAS = 1 << 0,      /* matmul family: a bias (bf16) */
  OPC_NORM = 1 << 1,      /* fused: the input's RMSNorm inside; rope: q/k per-head norms */
  OPC_RESIDUAL = 1 << 2,  /* rmsnorm: x += residual first */
  OPC_LONG = 1 << 3,      /* rope: longrope's per-token long_sel */
  OPC_NONFINITE = 1 << 4, /* argmax/topk/moe_route: rows holding NaN / +-inf (ids -1) */
  OPC_NORM_TOPK = 1 << 5, /* moe_route: weights divided by the sum of the k */
  OPC_SHARED = 1 << 6,    /* moe_combine: a shared expert with its sigmoid gate */
  OPC_POS = 1 << 7,       /* moe_combine: rows read through a permutation */
  OPC_GELU = 1 << 8,      /* matmul_glu: geglu (else swiglu) */
  OPC_DECODE = 1 << 9,    /* attention: one token at position `pos` over a long cached context */
  OPC_TIES = 1 << 10,     /* argmax/topk: ties placed across the row (lowest index wins) */
};

typedef struct op_case {
  xpi_op op;
  xpi_dtype dt;          /* weight / experts / KV cache dtype; f32 where the op has none */
  int n;                 /* tokens (argmax/topk: rows) */
  int rows, cols;        /* weight [rows, cols]; element-wise ops: cols features; argmax/topk: cols */
  int hq, hk, hd;        /* rope/attention heads; moe ops: hq experts */
  int k;                 /* topk k, moe top-k, matmul_multi count, moe_matmul in_k in hk */
  int window;            /* attention sliding window (0: none) */
  float softcap, qscale; /* attention logit softcap (0: none), q multiplied by qscale */
  xpi_attn_impl impl;
  int pos;               /* attention decode position; rope: 0 */
  unsigned flags;        /* OPC_* */
  op_tol tol;            /* the output against the reference */
  op_tol tol2;           /* secondary outputs (residual stream, topk values) against the reference; fused ops:
                          * the fused output against the same backend's composition of the separate ops */
  const char *except;    /* NULL, or a backend variant ("xpu:tuned": its name's prefix) where tol2x replaces tol2 */
  op_tol tol2x;
} op_case;

/* The list, built once (static storage); *count its length. */
const op_case *op_cases(int *count);
/* The tolerance of secondary outputs on the backend variant `variant` ("cpu:avx2", "xpu:tuned+dpas"). */
const op_tol *op_case_tol2(const op_case *c, const char *variant);
/* "matmul bf16 n=7 [37 x 67] bias": one line naming a case. */
void op_case_describe(const op_case *c, char *out, size_t cap);

#endif
