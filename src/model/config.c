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
#include "model/family.h"

#define CFG_MAX_BYTES (8u << 20)
#define CFG_MAX_DIM (1 << 20)    /* hidden/intermediate/head sizes: far above any real model, keeps products small */
#define CFG_MAX_LAYERS 4096
#define CFG_MAX_HEADS 4096

static const cJSON *get(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return v && !cJSON_IsNull(v) ? v : NULL;
}

const cJSON *xpi_cfg_get(const cJSON *o, const char *key) { return get(o, key); }

/* Picks the family from model_type and/or architectures[0]; both, when present, must agree. */
static xpi_status read_family(const char *path, const cJSON *root, const xpi_family **out) {
  const xpi_family *by_type = NULL, *by_arch = NULL;
  const char *mt = NULL;
  int found = 0;
  XPI_TRY(xpi_json_get_string(path, root, "model_type", &mt, &found));
  if (found) {
    if (!(by_type = xpi_family_by_type(mt)))
      return xpi_err(XPI_ERR_UNSUPPORTED, "%s: \"model_type\" \"%.64s\" is not supported (supported: %s)", path, mt,
                     xpi_family_types());
  }
  const cJSON *ar = get(root, "architectures");
  if (ar) {
    if (!cJSON_IsArray(ar) || cJSON_GetArraySize(ar) < 1)
      return xpi_err(XPI_ERR_FORMAT, "%s: \"architectures\" must be a non-empty list of strings", path);
    for (const cJSON *a = ar->child; a; a = a->next) {
      if (!cJSON_IsString(a))
        return xpi_err(XPI_ERR_FORMAT, "%s: \"architectures\" must be a non-empty list of strings", path);
      const xpi_family *f = xpi_family_by_arch(a->valuestring);
      if (!f)
        return xpi_err(XPI_ERR_UNSUPPORTED, "%s: \"architectures\" entry \"%.64s\" is not supported (supported: %s)",
                       path, a->valuestring, xpi_family_archs());
      if (!by_arch) by_arch = f;
    }
  }
  if (!by_type && !by_arch)
    return xpi_err(XPI_ERR_FORMAT, "%s: neither \"model_type\" nor \"architectures\" is given (supported: %s)", path,
                   xpi_family_types());
  if (by_type && by_arch && by_type != by_arch)
    return xpi_err(XPI_ERR_FORMAT, "%s: \"model_type\" \"%s\" contradicts \"architectures\" \"%s\"", path,
                   by_type->name, by_arch->architecture);
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

static xpi_status read_sizes(const char *path, const cJSON *root, const xpi_family *fam, xpi_config *c) {
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
  } else if (fam->default_head_dim) {
    c->head_dim = fam->default_head_dim; /* the config class's default (Qwen3 128, Gemma 256) */
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

  double eps = 1e-6; /* the config classes' default (families with another one set it in parse) */
  XPI_TRY(opt_num(path, root, "rms_norm_eps", 0.0, 1, 1.0, &eps, NULL));
  c->rms_norm_eps = (float)eps;
  return XPI_OK;
}

/* ---- helpers for the families' parse functions */

xpi_status xpi_cfg_int(const char *path, const cJSON *o, const char *key, int64_t min, int64_t max, int32_t *out) {
  return opt_int(path, o, key, min, max, out);
}

xpi_status xpi_cfg_num(const char *path, const cJSON *o, const char *key, double lo, int lo_open, double hi,
                       double *out, int *found) {
  return opt_num(path, o, key, lo, lo_open, hi, out, found);
}

xpi_status xpi_cfg_bool(const char *path, const cJSON *o, const char *key, int *out) {
  return xpi_json_get_bool(path, o, key, out, NULL);
}

xpi_status xpi_cfg_act(const char *path, const cJSON *o, const char *key, xpi_mlp_act dflt, xpi_mlp_act *out) {
  const char *act = NULL;
  int found = 0;
  XPI_TRY(xpi_json_get_string(path, o, key, &act, &found));
  *out = dflt;
  if (!found) return XPI_OK;
  if (!strcmp(act, "silu")) *out = XPI_ACT_SILU;
  else if (!strcmp(act, "gelu_pytorch_tanh")) *out = XPI_ACT_GELU_TANH;
  else
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: \"%s\" \"%.32s\" is not supported (silu, gelu_pytorch_tanh)", path, key,
                   act);
  return XPI_OK;
}

xpi_status xpi_cfg_layer_types(const char *path, const cJSON *o, xpi_config *c, int *found) {
  const cJSON *lt = get(o, "layer_types");
  *found = lt != NULL;
  if (!lt) return XPI_OK;
  if (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) != c->n_layers)
    return xpi_err(XPI_ERR_FORMAT, "%s: \"layer_types\" must be a list of %d strings (one per layer)", path,
                   c->n_layers);
  int i = 0;
  for (const cJSON *v = lt->child; v; v = v->next, i++) {
    if (!cJSON_IsString(v)) return xpi_err(XPI_ERR_FORMAT, "%s: \"layer_types\" must be a list of strings", path);
    if (!strcmp(v->valuestring, "full_attention")) c->layer_sliding[i] = 0;
    else if (!strcmp(v->valuestring, "sliding_attention")) c->layer_sliding[i] = 1;
    else
      return xpi_err(XPI_ERR_UNSUPPORTED,
                     "%s: \"layer_types\"[%d] is \"%.32s\" (supported: full_attention, sliding_attention)", path, i,
                     v->valuestring);
  }
  return XPI_OK;
}

xpi_status xpi_cfg_sliding_window(const char *path, const cJSON *o, int32_t min, xpi_config *c) {
  c->sliding_window = 0;
  return opt_int(path, o, "sliding_window", min, INT32_MAX, &c->sliding_window);
}

xpi_status xpi_cfg_qwen_window(const char *path, const cJSON *o, xpi_config *c) {
  XPI_TRY(xpi_cfg_sliding_window(path, o, 0, c)); /* 0: Qwen2-MoE's "none" */
  int found = 0;
  XPI_TRY(xpi_cfg_layer_types(path, o, c, &found));
  int use = 0;
  XPI_TRY(xpi_json_get_bool(path, o, "use_sliding_window", &use, NULL));
  if (!use) { /* transformers 5 writes layer_types from these; without use_sliding_window no layer slides */
    memset(c->layer_sliding, 0, sizeof c->layer_sliding);
    return XPI_OK;
  }
  if (found) return XPI_OK;
  int32_t mwl = 28; /* Qwen2Config/Qwen3Config default */
  XPI_TRY(opt_int(path, o, "max_window_layers", 0, INT32_MAX, &mwl));
  for (int32_t l = 0; l < c->n_layers; l++) c->layer_sliding[l] = c->sliding_window > 0 && l >= mwl;
  return XPI_OK;
}

xpi_status xpi_cfg_window_all(const char *path, const cJSON *o, xpi_config *c) {
  XPI_TRY(xpi_cfg_sliding_window(path, o, 1, c));
  int found = 0;
  XPI_TRY(xpi_cfg_layer_types(path, o, c, &found));
  if (!found)
    for (int32_t l = 0; l < c->n_layers; l++) c->layer_sliding[l] = c->sliding_window > 0;
  return XPI_OK;
}

/* ---- RoPE */

/* One parameter set: rope_type (or the older "type") default, llama3, linear, longrope (or "su"). */
static xpi_status read_rope_set(const char *what, const cJSON *root, const cJSON *rp, double theta, xpi_config *c,
                                xpi_rope_set *r) {
  memset(r, 0, sizeof *r);
  r->p.type = XPI_ROPE_DEFAULT;
  r->p.head_dim = c->head_dim;
  r->linear_factor = 1.0f;
  r->attention_factor = 1.0f;
  if (rp) {
    if (!cJSON_IsObject(rp)) return xpi_err(XPI_ERR_FORMAT, "%s must be a JSON object", what);
    XPI_TRY(opt_num(what, rp, "rope_theta", 0.0, 1, 1e12, &theta, NULL));
    const char *type = NULL;
    int found = 0;
    XPI_TRY(xpi_json_get_string(what, rp, "rope_type", &type, &found));
    if (!found) XPI_TRY(xpi_json_get_string(what, rp, "type", &type, &found));
    if (!found || strcmp(type, "default") == 0) {
      r->p.type = XPI_ROPE_DEFAULT;
    } else if (strcmp(type, "llama3") == 0) {
      r->p.type = XPI_ROPE_LLAMA3;
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
                      &r->p.original_max_position_embeddings));
      r->p.factor = (float)f;
      r->p.low_freq_factor = (float)lo;
      r->p.high_freq_factor = (float)hi;
    } else if (strcmp(type, "linear") == 0) {
      double f = 0;
      if (!get(rp, "factor")) return xpi_err(XPI_ERR_FORMAT, "%s: \"factor\" is missing (needed by rope_type linear)", what);
      XPI_TRY(opt_num(what, rp, "factor", 0.0, 1, 1e6, &f, NULL));
      r->linear_factor = (float)f;
    } else if (strcmp(type, "longrope") == 0 || strcmp(type, "su") == 0) {
      /* transformers' _compute_longrope_parameters: inv_freq / short_factor while the sequence fits the
       * original context; attention_factor given, or sqrt(1 + ln(factor) / ln(original)) with factor the ratio
       * of max_position_embeddings to original_max_position_embeddings */
      const int32_t half = c->head_dim / 2;
      if (half > XPI_MAX_ROPE_EXT)
        return xpi_err(XPI_ERR_UNSUPPORTED, "%s: longrope with head_dim %d is not supported (at most %d)", what,
                       c->head_dim, 2 * XPI_MAX_ROPE_EXT);
      static const char *lists[] = {"short_factor", "long_factor"};
      for (int k = 0; k < 2; k++) {
        const cJSON *fl = get(rp, lists[k]);
        if (!fl || !cJSON_IsArray(fl) || cJSON_GetArraySize(fl) != half)
          return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" must be a list of head_dim / 2 = %d numbers (rope_type %s)",
                         what, lists[k], half, type);
        int i = 0;
        for (const cJSON *v = fl->child; v; v = v->next, i++) {
          if (!cJSON_IsNumber(v) || !(v->valuedouble > 0) || v->valuedouble > 1e6)
            return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\"[%d] must be a positive number", what, lists[k], i);
          if (k == 0) r->ext[i] = (float)v->valuedouble;
          else r->ext_long[i] = (float)v->valuedouble;
        }
      }
      r->has_ext = 1;
      int32_t orig = 0;
      XPI_TRY(opt_int(what, rp, "original_max_position_embeddings", 1, INT32_MAX, &orig));
      XPI_TRY(opt_int(what, root, "original_max_position_embeddings", 1, INT32_MAX, &orig));
      double factor = 1.0, af = 0;
      int have_af = 0;
      if (orig > 0) factor = (double)c->max_position_embeddings / orig;
      else XPI_TRY(opt_num(what, rp, "factor", 0.0, 1, 1e6, &factor, NULL));
      if (orig <= 0) orig = c->max_position_embeddings;
      XPI_TRY(opt_num(what, rp, "attention_factor", 0.0, 1, 1e3, &af, &have_af));
      if (!have_af) af = factor <= 1.0 ? 1.0 : sqrt(1.0 + log(factor) / log((double)orig));
      r->attention_factor = (float)af;
      if (c->max_position_embeddings > orig) r->long_from = orig; /* where transformers switches to the long factors */
    } else {
      return xpi_err(XPI_ERR_UNSUPPORTED,
                     "%s: rope_type \"%.32s\" is not supported (supported: default, llama3, linear, longrope)", what,
                     type);
    }
    double prf = 1.0;
    XPI_TRY(opt_num(what, rp, "partial_rotary_factor", 0.0, 1, 1.0, &prf, NULL));
    if (prf != 1.0)
      return xpi_err(XPI_ERR_UNSUPPORTED, "%s: \"partial_rotary_factor\" = %g is not supported (only 1)", what, prf);
  }
  r->p.theta = (float)theta;
  return XPI_OK;
}

/* rope_theta (transformers 4) or rope_parameters.rope_theta (5); scaling from rope_parameters (5) or
 * rope_scaling (4). Transformers 5 writes per-layer-type parameters for Gemma 3: {"full_attention": {...},
 * "sliding_attention": {...}}: rope[0] for full layers, rope[1] for sliding ones. */
static xpi_status read_rope(const char *path, const cJSON *root, xpi_config *c) {
  double theta = 10000.0; /* default of the config classes */
  XPI_TRY(opt_num(path, root, "rope_theta", 0.0, 1, 1e12, &theta, NULL));
  const cJSON *rp = get(root, "rope_parameters");
  const char *key = "rope_parameters";
  if (!rp) {
    rp = get(root, "rope_scaling");
    key = "rope_scaling";
  }
  char what[1100];
  snprintf(what, sizeof what, "%s: %s", path, key); /* messages read "config.json: rope_parameters: "x" ..." */
  c->n_rope = 1;
  if (rp && !cJSON_IsObject(rp)) return xpi_err(XPI_ERR_FORMAT, "%s: \"%s\" must be a JSON object", path, key);
  if (rp && cJSON_IsObject(rp) && (get(rp, "full_attention") || get(rp, "sliding_attention"))) {
    static const char *types[] = {"full_attention", "sliding_attention"};
    for (int k = 0; k < 2; k++) {
      char w2[1200];
      snprintf(w2, sizeof w2, "%s: %s", what, types[k]);
      XPI_TRY(read_rope_set(w2, root, get(rp, types[k]), theta, c, &c->rope[k]));
    }
    c->n_rope = 2;
  } else {
    XPI_TRY(read_rope_set(what, root, rp, theta, c, &c->rope[0]));
  }
  double prf = 1.0;
  XPI_TRY(opt_num(path, root, "partial_rotary_factor", 0.0, 1, 1.0, &prf, NULL));
  if (prf != 1.0)
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: \"partial_rotary_factor\" = %g is not supported (only 1)", path, prf);
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

static xpi_status parse_config(const char *path, const cJSON *root, xpi_config *c) {
  if (!cJSON_IsObject(root)) return xpi_err(XPI_ERR_FORMAT, "%s: not a JSON object", path);
  const xpi_family *fam = NULL;
  XPI_TRY(read_family(path, root, &fam));
  c->family = fam;
  snprintf(c->model_type, sizeof c->model_type, "%s", fam->name);
  XPI_TRY(read_sizes(path, root, fam, c));
  XPI_TRY(read_rope(path, root, c));
  XPI_TRY(read_dtype(path, root, c));
  XPI_TRY(read_bos(path, root, c));
  XPI_TRY(add_eos(path, root, c));
  c->attn_scale = 1.0f / sqrtf((float)c->head_dim);
  c->embed_scale = c->residual_scale = c->logit_scale = 1.0f;
  int tie = 0; /* false unless given, except where a family's parse says otherwise */
  XPI_TRY(xpi_json_get_bool(path, root, "tie_word_embeddings", &tie, NULL));
  c->tie_word_embeddings = tie;
  XPI_TRY(fam->parse(path, root, c));
  /* longrope's attention factor scales cos and sin of q and k: q.k by its square */
  c->attn_scale *= c->rope[0].attention_factor * c->rope[0].attention_factor;
  if (c->n_rope == 2 && (c->rope[1].attention_factor != c->rope[0].attention_factor ||
                         c->rope[1].long_from != c->rope[0].long_from))
    return xpi_err(XPI_ERR_UNSUPPORTED, "%s: per-layer-type longrope parameters are not supported", path);
  c->rope_long_from = c->rope[0].long_from;
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
