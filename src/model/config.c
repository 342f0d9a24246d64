/* config.json + generation_config.json of Llama/Mistral, Qwen2 and Qwen3, read as transformers reads them
 * (same defaults), every number range-checked, anything the graph cannot run refused with a reason.
 * Messages name the file and the field. */
#include "model/config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/status.h"

#define CFG_MAX_BYTES (8u << 20)
#define CFG_MAX_DIM (1 << 20)    /* hidden/intermediate/head sizes: far above any real model, keeps products small */
#define CFG_MAX_LAYERS 4096
#define CFG_MAX_HEADS 4096

typedef struct family {
  const char *model_type, *architecture;
  xpi_arch arch;
  int moe; /* mixture-of-experts MLP (model/moe.c) */
} family;

static const family k_families[] = {
    {"llama", "LlamaForCausalLM", XPI_ARCH_LLAMA, 0},
    {"mistral", "MistralForCausalLM", XPI_ARCH_LLAMA, 0},
    {"qwen2", "Qwen2ForCausalLM", XPI_ARCH_QWEN2, 0},
    {"qwen3", "Qwen3ForCausalLM", XPI_ARCH_QWEN3, 0},
    {"qwen2_moe", "Qwen2MoeForCausalLM", XPI_ARCH_QWEN2, 1},
    {"qwen3_moe", "Qwen3MoeForCausalLM", XPI_ARCH_QWEN3, 1},
};
#define N_FAMILIES (sizeof k_families / sizeof k_families[0])
#define SUPPORTED_TYPES "llama, mistral, qwen2, qwen3, qwen2_moe, qwen3_moe"
#define SUPPORTED_ARCHS                                                                                            \
  "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen2MoeForCausalLM, "                \
  "Qwen3MoeForCausalLM"

static const cJSON *get(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return v && !cJSON_IsNull(v) ? v : NULL;
}

/* Picks the family from model_type and/or architectures[0]; both, when present, must agree. */
static xpi_status read_family(const char *path, const cJSON *root, const family **out) {
  const family *by_type = NULL, *by_arch = NULL;
  const char *mt = NULL;
  int found = 0;
  XPI_TRY(xpi_json_get_string(path, root, "model_type", &mt, &found));
  if (found) {
    for (size_t i = 0; i < N_FAMILIES; i++)
      if (strcmp(mt, k_families[i].model_type) == 0) by_type = &k_families[i];
    if (!by_type)
      return xpi_err(XPI_ERR_UNSUPPORTED, "%s: \"model_type\" \"%.64s\" is not supported (supported: %s)", path, mt,
                     SUPPORTED_TYPES);
  }
  const cJSON *ar = get(root, "architectures");
  if (ar) {
    if (!cJSON_IsArray(ar) || cJSON_GetArraySize(ar) < 1)
      return xpi_err(XPI_ERR_FORMAT, "%s: \"architectures\" must be a non-empty list of strings", path);
    for (const cJSON *a = ar->child; a; a = a->next) {
      if (!cJSON_IsString(a))
        return xpi_err(XPI_ERR_FORMAT, "%s: \"architectures\" must be a non-empty list of strings", path);
      const family *f = NULL;
      for (size_t i = 0; i < N_FAMILIES; i++)
        if (strcmp(a->valuestring, k_families[i].architecture) == 0) f = &k_families[i];
      if (!f)
        return xpi_err(XPI_ERR_UNSUPPORTED, "%s: \"architectures\" entry \"%.64s\" is not supported (supported: %s)",
                       path, a->valuestring, SUPPORTED_ARCHS);
      if (!by_arch) by_arch = f;
    }
  }
  if (!by_type && !by_arch)
    return xpi_err(XPI_ERR_FORMAT, "%s: neither \"model_type\" nor \"architectures\" is given (supported: %s)", path,
                   SUPPORTED_TYPES);
  if (by_type && by_arch && (by_type->arch != by_arch->arch || by_type->moe != by_arch->moe))
    return xpi_err(XPI_ERR_FORMAT, "%s: \"model_type\" \"%s\" contradicts \"architectures\" \"%s\"", path,
                   by_type->model_type, by_arch->architecture);
  *out = by_type ? by_type : by_arch;
  return XPI_OK;
}

static xpi_status req_int(const char *path, const cJSON *o, const char *key, int64_t min, int64_t max,
                          int32_t *out) {
  int64_t v = 0;
  int found = 0;
  XPI_TRY(xpi_json_get_int(path, o, key, min, max, &v, &found));
  if (!found) return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" is missing", path, key);
  *out = (int32_t)v;
  return XPI_OK;
}

static xpi_status opt_int(const char *path, const cJSON *o, const char *key, int64_t min, int64_t max,
                          int32_t *out) {
  int64_t v = 0;
  int found = 0;
  XPI_TRY(xpi_json_get_int(path, o, key, min, max, &v, &found));
  if (found) *out = (int32_t)v;
  return XPI_OK;
}

/* A finite number in [lo, hi] (open at lo when lo_open); *out untouched when absent. */
static xpi_status opt_num(const char *path, const cJSON *o, const char *key, double lo, int lo_open, double hi,
                          double *out, int *found) {
  double v = 0;
  int f = 0;
  XPI_TRY(xpi_json_get_double(path, o, key, &v, &f));
  if (found) *found = f;
  if (!f) return XPI_OK;
  if (v < lo || (lo_open && v == lo) || v > hi)
    return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" = %g is out of range %s%g, %g]", path, key, v, lo_open ? "(" : "[",
                   lo, hi);
  *out = v;
  return XPI_OK;
}

static xpi_status read_sizes(const char *path, const cJSON *root, const family *fam, xpi_config *c) {
  XPI_TRY(req_int(path, root, "vocab_size", 1, INT32_MAX, &c->vocab_size));
  XPI_TRY(req_int(path, root, "hidden_size", 1, CFG_MAX_DIM, &c->hidden_size));
  XPI_TRY(req_int(path, root, "intermediate_size", 1, CFG_MAX_DIM, &c->intermediate_size));
  XPI_TRY(req_int(path, root, "num_hidden_layers", 1, CFG_MAX_LAYERS, &c->n_layers));
  XPI_TRY(req_int(path, root, "num_attention_heads", 1, CFG_MAX_HEADS, &c->n_heads));
  XPI_TRY(req_int(path, root, "max_position_embeddings", 1, INT32_MAX, &c->max_position_embeddings));
  c->n_kv_heads = c->n_heads; /* transformers: num_key_value_heads defaults to num_attention_heads */
  XPI_TRY(opt_int(path, root, "num_key_value_heads", 1, CFG_MAX_HEADS, &c->n_kv_heads));
  if (c->n_kv_heads > c->n_heads || c->n_heads % c->n_kv_heads != 0)
    return xpi_err(XPI_ERR_FORMAT,
                   "%s: \"num_attention_heads\" = %d is not a multiple of \"num_key_value_heads\" = %d", path,
                   c->n_heads, c->n_kv_heads);

  int64_t hd = 0;
  int found = 0;
  XPI_TRY(xpi_json_get_int(path, root, "head_dim", 1, CFG_MAX_DIM, &hd, &found));
  if (found) {
    c->head_dim = (int32_t)hd;
  } else if (fam->arch == XPI_ARCH_QWEN3) {
    c->head_dim = 128; /* Qwen3Config's default, which transformers uses when head_dim is absent */
  } else {
    if (c->hidden_size % c->n_heads != 0)
      return xpi_err(XPI_ERR_FORMAT,
                     "%s: \"head_dim\" is missing and \"hidden_size\" = %d is not divisible by "
                     "\"num_attention_heads\" = %d",
                     path, c->hidden_size, c->n_heads);
    c->head_dim = c->hidden_size / c->n_heads;
  }
  if (c->head_dim % 2 != 0)
    return xpi_err(XPI_ERR_FORMAT, "%s: \"head_dim\" = %d must be even (RoPE rotates pairs)", path, c->head_dim);
  if ((int64_t)c->n_heads * c->head_dim > CFG_MAX_DIM)
    return xpi_err(XPI_ERR_FORMAT, "%s: \"num_attention_heads\" x \"head_dim\" = %lld is implausibly large", path,
                   (long long)c->n_heads * c->head_dim);

  double eps = 1e-6; /* the default of all four config classes */
  XPI_TRY(opt_num(path, root, "rms_norm_eps", 0.0, 1, 1.0, &eps, NULL));
  c->rms_norm_eps = (float)eps;
  return XPI_OK;
}

/* Things the one graph does not implement: refuse rather than compute something else. */
static xpi_status check_graph_features(const char *path, const cJSON *root, const family *fam, xpi_config *c) {
  const char *act = NULL;
  int found = 0;
  XPI_TRY(xpi_json_get_string(path, root, "hidden_act", &act, &found));
  if (found && strcmp(act, "silu") != 0)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: \"hidden_act\" \"%.32s\" is not supported (only silu)", path, act);

  int tie = 0; /* false for all four families unless given */
  XPI_TRY(xpi_json_get_bool(path, root, "tie_word_embeddings", &tie, NULL));
  c->tie_word_embeddings = tie;

  int ab = 0;
  XPI_TRY(xpi_json_get_bool(path, root, "attention_bias", &ab, NULL));
  switch (fam->arch) {
    case XPI_ARCH_QWEN2: /* Qwen2Attention: q/k/v always biased, o_proj never; Qwen2MoeAttention: qkv_bias */
      c->attention_bias = 1;
      if (fam->moe) XPI_TRY(xpi_json_get_bool(path, root, "qkv_bias", &c->attention_bias, NULL));
      c->o_proj_bias = 0;
      break;
    case XPI_ARCH_QWEN3: /* q/k/v/o all follow attention_bias */
      c->attention_bias = c->o_proj_bias = ab;
      break;
    case XPI_ARCH_LLAMA: /* LlamaAttention follows attention_bias; MistralAttention has no biases at all */
      c->attention_bias = c->o_proj_bias = strcmp(fam->model_type, "mistral") == 0 ? 0 : ab;
      break;
  }
  c->qk_norm = fam->arch == XPI_ARCH_QWEN3;

  int mlp_bias = 0;
  XPI_TRY(xpi_json_get_bool(path, root, "mlp_bias", &mlp_bias, NULL));
  if (mlp_bias && fam->arch == XPI_ARCH_LLAMA && strcmp(fam->model_type, "llama") == 0)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: \"mlp_bias\" true is not supported (MLP projections without bias only)",
                   path);

  /* Sliding-window attention: mistral applies it whenever sliding_window is set; qwen2/qwen3 only with
   * use_sliding_window and then to layers >= max_window_layers. A window >= the context is no window. */
  int64_t sw = 0;
  int have_sw = 0;
  XPI_TRY(xpi_json_get_int(path, root, "sliding_window", 0, INT64_MAX / 2, &sw, &have_sw));
  have_sw = have_sw && sw > 0; /* Qwen2MoeConfig writes 0 when use_sliding_window is false */
  int used = 0;
  if (have_sw && sw < c->max_position_embeddings) {
    if (strcmp(fam->model_type, "mistral") == 0) {
      used = 1;
    } else if (fam->arch != XPI_ARCH_LLAMA) {
      int use = 0;
      XPI_TRY(xpi_json_get_bool(path, root, "use_sliding_window", &use, NULL));
      int64_t mwl = 28; /* Qwen2Config/Qwen3Config default */
      XPI_TRY(xpi_json_get_int(path, root, "max_window_layers", 0, INT32_MAX, &mwl, NULL));
      used = use && mwl < c->n_layers;
    }
  }
  if (used)
    return xpi_err(XPI_ERR_UNSUPPORTED,
                   "%s: \"sliding_window\" = %lld is smaller than \"max_position_embeddings\" = %d: sliding-window "
                   "attention is not supported",
                   path, (long long)sw, c->max_position_embeddings);

  const cJSON *lt = get(root, "layer_types");
  if (lt) {
    if (!cJSON_IsArray(lt)) return xpi_err(XPI_ERR_FORMAT, "%s: \"layer_types\" must be a list of strings", path);
    int i = 0;
    for (const cJSON *v = lt->child; v; v = v->next, i++) {
      if (!cJSON_IsString(v)) return xpi_err(XPI_ERR_FORMAT, "%s: \"layer_types\" must be a list of strings", path);
      if (strcmp(v->valuestring, "full_attention") != 0)
        return xpi_err(XPI_ERR_UNSUPPORTED,
                       "%s: \"layer_types\"[%d] is \"%.32s\": only full_attention layers are supported", path, i,
                       v->valuestring);
    }
  }
  return XPI_OK;
}

/* rope_theta (transformers 4) or rope_parameters.rope_theta (5); scaling from rope_parameters (5) or
 * rope_scaling (4) with rope_type (or the older "type") "default" or "llama3". */
static xpi_status read_rope(const char *path, const cJSON *root, xpi_config *c) {
  xpi_rope_params *r = &c->rope;
  memset(r, 0, sizeof *r);
  r->type = XPI_ROPE_DEFAULT;
  r->head_dim = c->head_dim;
  double theta = 10000.0; /* default of all four config classes */
  XPI_TRY(opt_num(path, root, "rope_theta", 0.0, 1, 1e12, &theta, NULL));

  const cJSON *rp = get(root, "rope_parameters");
  const char *key = "rope_parameters";
  if (!rp) {
    rp = get(root, "rope_scaling");
    key = "rope_scaling";
  }
  if (rp) {
    if (!cJSON_IsObject(rp)) return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" must be a JSON object", path, key);
    char what[1100];
    snprintf(what, sizeof what, "%s: %s", path, key); /* messages read "config.json: rope_parameters: "x" ..." */
    XPI_TRY(opt_num(what, rp, "rope_theta", 0.0, 1, 1e12, &theta, NULL));
    const char *type = NULL;
    int found = 0;
    XPI_TRY(xpi_json_get_string(what, rp, "rope_type", &type, &found));
    if (!found) XPI_TRY(xpi_json_get_string(what, rp, "type", &type, &found));
    if (!found || strcmp(type, "default") == 0) {
      r->type = XPI_ROPE_DEFAULT;
    } else if (strcmp(type, "llama3") == 0) {
      r->type = XPI_ROPE_LLAMA3;
      static const char *req[] = {"factor", "low_freq_factor", "high_freq_factor",
                                  "original_max_position_embeddings"};
      for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
        if (!get(rp, req[i]))
          return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" is missing (needed by rope_type llama3)", what, req[i]);
      double f = 0, lo = 0, hi = 0;
      XPI_TRY(opt_num(what, rp, "factor", 1.0, 0, 1e6, &f, NULL));
      XPI_TRY(opt_num(what, rp, "low_freq_factor", 0.0, 1, 1e6, &lo, NULL));
      XPI_TRY(opt_num(what, rp, "high_freq_factor", 0.0, 1, 1e6, &hi, NULL));
      if (!(hi > lo))
        return xpi_err(XPI_ERR_FORMAT, "%s: \"high_freq_factor\" = %g must be greater than \"low_freq_factor\" = %g",
                       what, hi, lo);
      XPI_TRY(req_int(what, rp, "original_max_position_embeddings", 1, INT32_MAX,
                      &r->original_max_position_embeddings));
      r->factor = (float)f;
      r->low_freq_factor = (float)lo;
      r->high_freq_factor = (float)hi;
    } else {
      return xpi_err(XPI_ERR_UNSUPPORTED, "%s: rope_type \"%.32s\" is not supported (supported: default, llama3)",
                     what, type);
    }
    double prf = 1.0;
    XPI_TRY(opt_num(what, rp, "partial_rotary_factor", 0.0, 1, 1.0, &prf, NULL));
    if (prf != 1.0)
      return xpi_err(XPI_ERR_UNSUPPORTED, "%s: \"partial_rotary_factor\" = %g is not supported (only 1)", what, prf);
  }
  double prf = 1.0;
  XPI_TRY(opt_num(path, root, "partial_rotary_factor", 0.0, 1, 1.0, &prf, NULL));
  if (prf != 1.0)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: \"partial_rotary_factor\" = %g is not supported (only 1)", path, prf);
  r->theta = (float)theta;
  return XPI_OK;
}

static xpi_status read_dtype(const char *path, const cJSON *root, xpi_config *c) {
  const char *key = "dtype", *s = NULL;
  int found = 0;
  XPI_TRY(xpi_json_get_string(path, root, key, &s, &found));
  if (!found) {
    key = "torch_dtype";
    XPI_TRY(xpi_json_get_string(path, root, key, &s, &found));
  }
  c->torch_dtype = XPI_DT_F32;
  if (!found) return XPI_OK;
  if (strcmp(s, "float32") == 0) c->torch_dtype = XPI_DT_F32;
  else if (strcmp(s, "float16") == 0) c->torch_dtype = XPI_DT_F16;
  else if (strcmp(s, "bfloat16") == 0) c->torch_dtype = XPI_DT_BF16;
  else
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: \"%s\" \"%.32s\" is not supported (float32, float16, bfloat16)", path,
                   key, s);
  return XPI_OK;
}

/* eos_token_id: one id or a list; added to c->eos_ids without duplicates. */
static xpi_status add_eos(const char *path, const cJSON *o, xpi_config *c) {
  const cJSON *v = get(o, "eos_token_id");
  if (!v) return XPI_OK;
  const cJSON *first = cJSON_IsArray(v) ? v->child : v, *one_next = NULL;
  for (const cJSON *e = first; e; e = cJSON_IsArray(v) ? e->next : one_next) {
    if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0 ||
        e->valuedouble >= c->vocab_size)
      return xpi_err(XPI_ERR_FORMAT, "%s: \"eos_token_id\" must be a token id in [0, %d) or a list of them", path,
                     c->vocab_size);
    int32_t id = (int32_t)e->valuedouble;
    int dup = 0;
    for (int i = 0; i < c->n_eos; i++) dup |= c->eos_ids[i] == id;
    if (dup) continue;
    if (c->n_eos == XPI_MAX_EOS)
      return xpi_err(XPI_ERR_UNSUPPORTED, "%s: \"eos_token_id\": more than %d distinct eos ids", path, XPI_MAX_EOS);
    c->eos_ids[c->n_eos++] = id;
  }
  return XPI_OK;
}

static xpi_status read_bos(const char *path, const cJSON *o, xpi_config *c) {
  return opt_int(path, o, "bos_token_id", 0, (int64_t)c->vocab_size - 1, &c->bos_id);
}

static xpi_status read_generation(const char *path, const cJSON *g, xpi_config *c) {
  if (!cJSON_IsObject(g)) return xpi_err(XPI_ERR_FORMAT, "%s: not a JSON object", path);
  XPI_TRY(read_bos(path, g, c));
  XPI_TRY(add_eos(path, g, c));
  int ds = 0, found = 0;
  XPI_TRY(xpi_json_get_bool(path, g, "do_sample", &ds, &found));
  if (found) c->gen_do_sample = ds;
  double v = 0;
  XPI_TRY(opt_num(path, g, "temperature", 0.0, 0, 1e6, &v, &found));
  if (found) c->gen_temperature = (float)v;
  XPI_TRY(opt_num(path, g, "top_p", 0.0, 0, 1.0, &v, &found));
  if (found) c->gen_top_p = (float)v;
  XPI_TRY(opt_num(path, g, "repetition_penalty", 0.0, 1, 1e6, &v, &found));
  if (found) c->gen_repetition_penalty = (float)v;
  XPI_TRY(opt_int(path, g, "top_k", 0, INT32_MAX, &c->gen_top_k));
  XPI_TRY(opt_int(path, g, "max_new_tokens", 0, INT32_MAX, &c->gen_max_new_tokens));
  return XPI_OK;
}

int xpi_config_layer_moe(const xpi_config *c, int32_t l) {
  if (c->n_experts <= 0 || l < 0 || l >= 64 * 64) return 0;
  if (c->mlp_only[l / 64] >> (l % 64) & 1) return 0;
  return (l + 1) % c->decoder_sparse_step == 0;
}

/* Qwen2MoeConfig / Qwen3MoeConfig: num_experts (transformers 4; qwen2_moe in 5) or num_local_experts (qwen3_moe
 * in 5), num_experts_per_tok, moe_intermediate_size, norm_topk_prob (default false), decoder_sparse_step
 * (default 1), mlp_only_layers, and qwen2_moe's shared_expert_intermediate_size. */
static xpi_status read_moe(const char *path, const cJSON *root, const family *fam, xpi_config *c) {
  if (!fam->moe) return XPI_OK;
  int64_t v = 0;
  int found = 0;
  XPI_TRY(xpi_json_get_int(path, root, "num_local_experts", 1, 1 << 16, &v, &found));
  if (!found) XPI_TRY(xpi_json_get_int(path, root, "num_experts", 1, 1 << 16, &v, &found));
  if (!found) return xpi_err(XPI_ERR_FORMAT, "%s: \"num_experts\" (or \"num_local_experts\") is missing", path);
  c->n_experts = (int32_t)v;
  XPI_TRY(req_int(path, root, "num_experts_per_tok", 1, c->n_experts, &c->n_experts_per_tok));
  XPI_TRY(req_int(path, root, "moe_intermediate_size", 1, CFG_MAX_DIM, &c->moe_intermediate_size));
  if (strcmp(fam->model_type, "qwen2_moe") == 0)
    XPI_TRY(req_int(path, root, "shared_expert_intermediate_size", 1, CFG_MAX_DIM,
                    &c->shared_expert_intermediate_size));
  XPI_TRY(xpi_json_get_bool(path, root, "norm_topk_prob", &c->norm_topk_prob, NULL));
  c->decoder_sparse_step = 1;
  XPI_TRY(opt_int(path, root, "decoder_sparse_step", 1, CFG_MAX_LAYERS, &c->decoder_sparse_step));
  const cJSON *mo = get(root, "mlp_only_layers");
  if (mo) {
    if (!cJSON_IsArray(mo)) return xpi_err(XPI_ERR_FORMAT, "%s: \"mlp_only_layers\" must be a list of layer indices", path);
    for (const cJSON *x = mo->child; x; x = x->next) {
      if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble >= c->n_layers || x->valuedouble != (int)x->valuedouble)
        return xpi_err(XPI_ERR_FORMAT, "%s: \"mlp_only_layers\" holds a value that is not a layer index below %d", path,
                       c->n_layers);
      int l = (int)x->valuedouble;
      c->mlp_only[l / 64] |= 1ull << (l % 64);
    }
  }
  return XPI_OK;
}

static xpi_status parse_config(const char *path, const cJSON *root, xpi_config *c) {
  if (!cJSON_IsObject(root)) return xpi_err(XPI_ERR_FORMAT, "%s: not a JSON object", path);
  const family *fam = NULL;
  XPI_TRY(read_family(path, root, &fam));
  c->arch = fam->arch;
  snprintf(c->model_type, sizeof c->model_type, "%s", fam->model_type);
  XPI_TRY(read_sizes(path, root, fam, c));
  XPI_TRY(check_graph_features(path, root, fam, c));
  XPI_TRY(read_moe(path, root, fam, c));
  XPI_TRY(read_rope(path, root, c));
  XPI_TRY(read_dtype(path, root, c));
  XPI_TRY(read_bos(path, root, c));
  XPI_TRY(add_eos(path, root, c));
  return XPI_OK;
}

xpi_status xpi_config_load(const char *dir, xpi_config *out) {
  memset(out, 0, sizeof *out);
  out->bos_id = -1;
  out->gen_do_sample = -1;
  char *path = xpi_path_join(dir, "config.json");
  char *gpath = xpi_path_join(dir, "generation_config.json");
  cJSON *root = NULL, *gen = NULL;
  xpi_status s = XPI_OK;
  if (!path || !gpath) {
    s = xpi_err(XPI_ERR_OUT_OF_MEMORY, "%s: out of memory", dir);
    goto done;
  }
  if (!xpi_file_exists(path)) {
    s = xpi_err(XPI_ERR_NOT_FOUND, "%s: no config.json in this folder", dir);
    goto done;
  }
  if ((s = xpi_json_load_file(path, CFG_MAX_BYTES, &root)) != XPI_OK) goto done;
  if ((s = parse_config(path, root, out)) != XPI_OK) goto done;
  if (xpi_file_exists(gpath)) {
    if ((s = xpi_json_load_file(gpath, CFG_MAX_BYTES, &gen)) != XPI_OK) goto done;
    s = read_generation(gpath, gen, out);
  }
done:
  cJSON_Delete(root);
  cJSON_Delete(gen);
  free(path);
  free(gpath);
  if (s != XPI_OK) {
    memset(out, 0, sizeof *out);
    out->bos_id = -1;
  }
  return s;
}
