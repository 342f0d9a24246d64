/* Every kernel the XPU backend launches, one row each: X(id, name, tier, args, wbytes, indirect, cost)
 *   id        XK_<id> in the enum (xpu_internal.h)
 *   name      the kernel's name in the SPIR-V modules (kernels/)
 *   tier      the module it is built from: 0 portable, 1 tuned, 2 DPAS (xpu_kernels.c; a tier the device cannot take
 *             leaves its kernels NULL)
 *   args      the arguments xpu_launch passes (the order of xpu_ops.c and the kernel); the performance model
 *             refuses a launch with another count
 *   wbytes    bytes of a weight element for the float matmuls' costs (4 f32, 2 f16/bf16; 4 elsewhere, unused)
 *   indirect  1: reads the experts through a table of device addresses (ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE)
 *   cost      the performance model's cost function (xpu_perf.c): bytes moved and FLOPs of a launch
 * A new kernel is a row here, its launch and its cost function. */
#ifndef XPI_XPU_KERNEL_TABLE_H
#define XPI_XPU_KERNEL_TABLE_H

#define XPU_KERNELS(X) \
  X(EMBED,            "xpi_embed",             0, 6,  4, 0, cost_embed)                                      \
  X(ADD,              "xpi_add",               0, 3,  4, 0, cost_add)                                        \
  X(SWIGLU,           "xpi_swiglu",            0, 4,  4, 0, cost_glu_act)                                    \
  X(GEGLU,            "xpi_geglu",             0, 4,  4, 0, cost_glu_act)                                    \
  X(SOFTCAP,          "xpi_softcap",           0, 3,  4, 0, cost_scale)                                      \
  X(SCALE,            "xpi_scale",             0, 3,  4, 0, cost_scale)                                      \
  X(CONVERT,          "xpi_convert",           0, 5,  4, 0, cost_convert)                                    \
  X(ARGMAX,           "xpi_argmax",            0, 6,  4, 0, cost_argmax)                                     \
  X(TOPK,             "xpi_topk",              0, 6,  4, 0, cost_topk)                                       \
  X(RMSNORM,          "xpi_rmsnorm",           0, 8,  4, 0, cost_rmsnorm)                                    \
  X(ROPE,             "xpi_rope",              0, 16, 4, 0, cost_rope)                                       \
  X(GEMV_F32,         "xpi_gemv_f32",          0, 8,  4, 0, cost_gemv)                                       \
  X(GEMV_F16,         "xpi_gemv_f16",          0, 8,  2, 0, cost_gemv)                                       \
  X(GEMV_BF16,        "xpi_gemv_bf16",         0, 8,  2, 0, cost_gemv)                                       \
  X(GEMM_F32,         "xpi_gemm_f32",          0, 9,  4, 0, cost_gemm)                                       \
  X(GEMM_F16,         "xpi_gemm_f16",          0, 9,  2, 0, cost_gemm)                                       \
  X(GEMM_BF16,        "xpi_gemm_bf16",         0, 9,  2, 0, cost_gemm)                                       \
  X(KV_STORE,         "xpi_kv_store",          0, 13, 4, 0, cost_kv_store)                                   \
  X(SDPA,             "xpi_sdpa",              0, 23, 4, 0, cost_attention)                                  \
  X(EAGER,            "xpi_attn_eager",        0, 17, 4, 0, cost_attention)                                  \
  X(FLASH,            "xpi_flash_attention_2", 0, 17, 4, 0, cost_attention)                                  \
  X(MOE_ROUTE,        "xpi_moe_route",         0, 7,  4, 0, cost_moe_route)                                  \
  X(MOE_MATMUL,       "xpi_moe_matmul",        0, 11, 4, 1, cost_moe_matmul)                                 \
  X(MOE_COMBINE,      "xpi_moe_combine",       0, 11, 4, 0, cost_moe_combine)                                \
  X(GEMV3_F32,        "xpi_gemv3_f32",         0, 21, 4, 0, cost_gemv3)                                      \
  X(GEMV3_F16,        "xpi_gemv3_f16",         0, 21, 2, 0, cost_gemv3)                                      \
  X(GEMV3_BF16,       "xpi_gemv3_bf16",        0, 21, 2, 0, cost_gemv3)                                      \
  X(GEMV_GLU_F32,     "xpi_gemv_glu_f32",      0, 10, 4, 0, cost_gemv_glu)                                   \
  X(GEMV_GLU_F16,     "xpi_gemv_glu_f16",      0, 10, 2, 0, cost_gemv_glu)                                   \
  X(GEMV_GLU_BF16,    "xpi_gemv_glu_bf16",     0, 10, 2, 0, cost_gemv_glu)                                   \
  /* tuned tier (NULL when the device or driver cannot take it) */                                           \
  X(GEMV_SG_F32,      "xpi_gemv_sg_f32",       1, 8,  4, 0, cost_gemv)                                       \
  X(GEMV_SG_F16,      "xpi_gemv_sg_f16",       1, 8,  2, 0, cost_gemv)                                       \
  X(GEMV_SG_BF16,     "xpi_gemv_sg_bf16",      1, 8,  2, 0, cost_gemv)                                       \
  X(RMSNORM_SG,       "xpi_rmsnorm_sg",        1, 8,  4, 0, cost_rmsnorm)                                    \
  X(GEMM_DPAS_BF16,   "xpi_gemm_dpas_bf16",    2, 9,  2, 0, cost_gemm)                                       \
  X(GEMV3_SG_F32,     "xpi_gemv3_sg_f32",      1, 21, 4, 0, cost_gemv3)                                      \
  X(GEMV3_SG_F16,     "xpi_gemv3_sg_f16",      1, 21, 2, 0, cost_gemv3)                                      \
  X(GEMV3_SG_BF16,    "xpi_gemv3_sg_bf16",     1, 21, 2, 0, cost_gemv3)                                      \
  X(GEMV_GLU_SG_F32,  "xpi_gemv_glu_sg_f32",   1, 11, 4, 0, cost_gemv_glu)                                   \
  X(GEMV_GLU_SG_F16,  "xpi_gemv_glu_sg_f16",   1, 11, 2, 0, cost_gemv_glu)                                   \
  X(GEMV_GLU_SG_BF16, "xpi_gemv_glu_sg_bf16",  1, 11, 2, 0, cost_gemv_glu)                                   \
  /* q8/q4 weights (xpu_quant.c) */                                                                          \
  X(QUANT_ACT,        "xpi_quant_act",         0, 5,  4, 0, cost_quant_act)                                  \
  X(GEMV_Q8,          "xpi_gemv_q8",           0, 10, 4, 0, cost_matmul_q)                                   \
  X(GEMV_Q4,          "xpi_gemv_q4",           0, 10, 4, 0, cost_matmul_q)                                   \
  X(GEMM_Q8,          "xpi_gemm_q8",           0, 11, 4, 0, cost_matmul_q)                                   \
  X(GEMM_Q4,          "xpi_gemm_q4",           0, 11, 4, 0, cost_matmul_q)                                   \
  /* q8/q4 experts (xpu_moe.c) */                                                                            \
  X(MOE_GEMV_Q8,      "xpi_moe_gemv_q8",       0, 10, 4, 1, cost_moe_gemv_q)                                 \
  X(MOE_GEMV_Q4,      "xpi_moe_gemv_q4",       0, 10, 4, 1, cost_moe_gemv_q)                                 \
  X(MOE_GEMM_Q8,      "xpi_moe_gemm_q8",       0, 11, 4, 1, cost_moe_gemm_q)                                 \
  X(MOE_GEMM_Q4,      "xpi_moe_gemm_q4",       0, 11, 4, 1, cost_moe_gemm_q)                                 \
  X(GEMV3_Q8,         "xpi_gemv3_q8",          0, 24, 4, 0, cost_fused_q)                                    \
  X(GEMV3_Q4,         "xpi_gemv3_q4",          0, 24, 4, 0, cost_fused_q)                                    \
  X(GEMV_GLU_Q8,      "xpi_gemv_glu_q8",       0, 13, 4, 0, cost_fused_q)                                    \
  X(GEMV_GLU_Q4,      "xpi_gemv_glu_q4",       0, 13, 4, 0, cost_fused_q)                                    \
  /* tuned: q8/q4 decode GEMV and its fused forms with block reads (kernels/tuned/gemv_q_sg.cl) */           \
  X(GEMV_SG_Q8,       "xpi_gemv_sg_q8",        1, 10, 4, 0, cost_matmul_q)                                   \
  X(GEMV_SG_Q4,       "xpi_gemv_sg_q4",        1, 10, 4, 0, cost_matmul_q)                                   \
  X(GEMV3_SG_Q8,      "xpi_gemv3_sg_q8",       1, 24, 4, 0, cost_fused_q)                                    \
  X(GEMV3_SG_Q4,      "xpi_gemv3_sg_q4",       1, 24, 4, 0, cost_fused_q)                                    \
  X(GEMV_GLU_SG_Q8,   "xpi_gemv_glu_sg_q8",    1, 13, 4, 0, cost_fused_q)                                    \
  X(GEMV_GLU_SG_Q4,   "xpi_gemv_glu_sg_q4",    1, 13, 4, 0, cost_fused_q)                                    \
  /* split-K decode GEMV for matrices with few rows (kernels/portable/gemv_splitk.cl, xpu_splitk.c) */       \
  X(GEMV_SPLITK_F32,  "xpi_gemv_splitk_f32",   0, 13, 4, 0, cost_splitk)                                     \
  X(GEMV_SPLITK_F16,  "xpi_gemv_splitk_f16",   0, 13, 2, 0, cost_splitk)                                     \
  X(GEMV_SPLITK_BF16, "xpi_gemv_splitk_bf16",  0, 13, 2, 0, cost_splitk)                                     \
  X(GEMV_SPLITK_Q8,   "xpi_gemv_splitk_q8",    0, 13, 4, 0, cost_splitk)                                     \
  X(GEMV_SPLITK_Q4,   "xpi_gemv_splitk_q4",    0, 13, 4, 0, cost_splitk)                                     \
  /* DPAS: q8/q4 prefill GEMM with int8 DPAS (kernels/common/xpi_gemm_dpas_q.h), the portable GEMM's bits */ \
  X(GEMM_DPAS_Q8,     "xpi_gemm_dpas_q8",      2, 11, 4, 0, cost_matmul_q)                                   \
  X(GEMM_DPAS_Q4,     "xpi_gemm_dpas_q4",      2, 11, 4, 0, cost_matmul_q)                                   \
  /* tuned: q8/q4 prefill GEMM in registers (kernels/tuned/gemm_q_sg.cl), the portable GEMM's bits */        \
  X(GEMM_SG_Q8,       "xpi_gemm_sg_q8",        1, 11, 4, 0, cost_matmul_q)                                   \
  X(GEMM_SG_Q4,       "xpi_gemm_sg_q4",        1, 11, 4, 0, cost_matmul_q)

#endif
