/* xpi_model_*: resolve the folder (or Hub repo), read config and tokenizer, choose the backends (device,
 * device_map), place the weights and build the graph. The model is immutable afterwards. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/status.h"
#include "engine/serve_limits.h"
#include "model/family.h"
#include "model/model.h"
#include "model/op_check.h"
#include "model/placement.h"
#include "ops/backend_registry.h"

#define PLAN_MIN_CTX 256 /* the shortest default context the memory plan reduces to before refusing the load */

void xpi_model_options_default(xpi_model_options *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->device = "auto";
  o->dtype = "auto";
  o->attn_implementation = "sdpa";
  o->use_kernels = 1;
  xpi_download_options_default(&o->download);
}

static const struct { const char *name; xpi_attn_impl impl; } k_attn[] = {
  {"sdpa", XPI_ATTN_SDPA}, {"eager", XPI_ATTN_EAGER}, {"flash_attention_2", XPI_ATTN_FLASH}};

static xpi_status parse_attn(const char *s, xpi_attn_impl *out) {
  if (!s || !*s) s = "sdpa";
  for (size_t i = 0; i < sizeof k_attn / sizeof k_attn[0]; i++)
    if (!strcmp(s, k_attn[i].name)) {
      *out = k_attn[i].impl;
      return XPI_OK;
    }
  return xpi_err(XPI_ERR_INVALID_ARGUMENT, "unknown attn_implementation '%s' (valid: sdpa, eager, flash_attention_2)", s);
}

/* dtype names: "auto" keeps the stored dtype (-1). */
static xpi_status parse_dtype(const char *what, const char *s, int allow_auto, int *out) {
  static const struct { const char *n; int dt; } names[] = {
    {"f32", XPI_DT_F32}, {"float32", XPI_DT_F32}, {"f16", XPI_DT_F16}, {"float16", XPI_DT_F16},
    {"bf16", XPI_DT_BF16}, {"bfloat16", XPI_DT_BF16}};
  if (!s || !*s || (allow_auto && !strcmp(s, "auto"))) {
    *out = -1;
    return XPI_OK;
  }
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(s, names[i].n)) {
      *out = names[i].dt;
      return XPI_OK;
    }
  return xpi_err(XPI_ERR_INVALID_ARGUMENT, "unknown %s '%s' (valid: %sf32, f16, bf16)", what, s, allow_auto ? "auto, " : "");
}

static xpi_status parse_quant(const char *s, int *out) {
  if (!s || !*s || !strcmp(s, "none")) return XPI_OK;
  if (!strcmp(s, "q8")) *out = XPI_DT_Q8;
  else if (!strcmp(s, "q4")) *out = XPI_DT_Q4;
  else return xpi_err(XPI_ERR_INVALID_ARGUMENT, "unknown quant '%s' (valid: none, q8, q4)", s);
  return XPI_OK;
}

/* One backend for a device name ("cpu", "xpu", "xpu:N": a row of the backend table) and its weight in a device
 * map's split (the device's free memory where its kind counts it, else 1). */
static xpi_status make_backend(const char *dev, const xpi_model_options *o, xpi_backend **out, double *weight) {
  const xpi_backend_kind *k;
  int idx;
  char name[32];
  XPI_TRY(xpi_backend_kind_parse(dev, &k, &idx, name, sizeof name));
  xpi_backend_config bc = {name, o->n_threads, o->use_kernels};
  uint64_t free_bytes = 0;
  *weight = 1.0;
  if (k->free_memory && k->free_memory(idx, &free_bytes) == XPI_OK) *weight = (double)free_bytes;
  xpi_status s = k->create(&bc, out);
  return s == XPI_OK || !k->indexed ? s : xpi_err_prefix(s, "device '%s': ", name);
}

/* device (+ device_map) -> backends and the layer split. "auto": the preferred kind with a visible device (its
 * first device; with device_map "auto" every one of them, weighted by memory). */
static xpi_status make_backends(xpi_model *m, const xpi_model_options *o) {
  double weight[XPI_MAX_BACKENDS];
  const char *dev = o->device && *o->device ? o->device : "auto";
  const char *map = o->device_map;
  char list[512], first[40];
  const xpi_backend_kind *auto_kind = NULL;
  size_t n_auto = 0;
  if ((map && !strcmp(map, "auto")) || (!map && !strcmp(dev, "auto"))) {
    XPI_TRY(xpi_backend_kind_auto(&auto_kind, &n_auto));
    if (auto_kind->indexed) snprintf(first, sizeof first, "%s:0", auto_kind->name);
    else snprintf(first, sizeof first, "%s", auto_kind->name);
  }
  if (map && !strcmp(map, "auto")) {
    if (!auto_kind->indexed) map = NULL, dev = first;
    else {
      size_t o2 = 0;
      list[0] = 0;
      for (size_t i = 0; i < n_auto && i < XPI_MAX_BACKENDS; i++)
        o2 += (size_t)snprintf(list + o2, sizeof list - o2, "%s%s:%zu", i ? "," : "", auto_kind->name, i);
      map = list;
    }
  } else if (!map && !strcmp(dev, "auto")) {
    dev = first;
  }
  if (!map) { /* one device */
    XPI_TRY(make_backend(dev, o, &m->backends[0], &weight[0]));
    m->n_backends = 1;
  } else { /* comma-separated device list, e.g. "xpu:0,xpu:1" (or "cpu,cpu" for tests) */
    if (strlen(map) >= sizeof list) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "device_map is too long");
    char buf[512];
    strcpy(buf, map);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      if (m->n_backends == XPI_MAX_BACKENDS)
        return xpi_err(XPI_ERR_INVALID_ARGUMENT, "device_map names more than %d devices", XPI_MAX_BACKENDS);
      XPI_TRY(make_backend(tok, o, &m->backends[m->n_backends], &weight[m->n_backends]));
      m->n_backends++;
    }
    if (m->n_backends == 0) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "device_map '%s' names no device", map);
  }
  for (int d = 0; d < m->n_backends; d++) m->graph.backends[d] = m->backends[d];
  m->graph.n_backends = m->n_backends;
  XPI_TRY(xpi_graph_split(m->cfg.n_layers, weight, m->n_backends, m->graph.layer_dev));
  /* info.device: "cpu", "xpu:0", or a range/list for a device map */
  if (m->n_backends == 1) snprintf(m->info.device, sizeof m->info.device, "%s", m->backends[0]->device);
  else if (map == list) snprintf(m->info.device, sizeof m->info.device, "%s:0-%d", auto_kind->name, m->n_backends - 1);
  else snprintf(m->info.device, sizeof m->info.device, "%.63s", map);
  return XPI_OK;
}

void xpi_model_free(xpi_model *m) {
  if (!m) return;
  xpi_engine_free(m->req_engine); /* its requests must have been freed before the model */
  pthread_mutex_destroy(&m->req_mu);
  xpi_graph_release(&m->graph);
  xpi_weights_free(&m->w);
  for (int d = 0; d < m->n_backends; d++)
    if (m->backends[d]) m->backends[d]->ops->destroy(m->backends[d]);
  xpi_st_close(m->st);
  xpi_tokenizer_free(m->tok);
  free(m->dir);
  free(m);
}

/* Checkpoint tensors the graph never reads: a warning, or with strict an error. */
static xpi_status check_unused(const xpi_model *m, int strict) {
  char list[1024], layer[48], hint[160] = "";
  size_t n = xpi_weights_unused(&m->w, &m->cfg, m->st, list, sizeof list);
  if (n == 0) return XPI_OK;
  snprintf(layer, sizeof layer, "model.layers.%d.", m->cfg.n_layers);
  if (strstr(list, layer))
    snprintf(hint, sizeof hint, " (the checkpoint has more layers than num_hidden_layers = %d in config.json)",
             m->cfg.n_layers);
  const char *s = n == 1 ? "" : "s";
  if (strict) return xpi_err(XPI_ERR_FORMAT, "%zu checkpoint tensor%s the model never reads (strict): %s%s", n, s, list, hint);
  xpi_log(2, "%s: %zu checkpoint tensor%s the model never reads, ignored: %s%s", m->dir, n, s, list, hint);
  return XPI_OK;
}

static xpi_status load(xpi_model *m, const char *src, const xpi_model_options *o) {
  size_t len = 0;
  xpi_status s = xpi_hub_download(src, &o->download, NULL, 0, &len);
  if (s != XPI_ERR_BUFFER_TOO_SMALL && s != XPI_OK) return s;
  m->dir = malloc(len + 1);
  if (!m->dir) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  XPI_TRY(xpi_hub_download(src, &o->download, m->dir, len + 1, &len));

  xpi_attn_impl attn = XPI_ATTN_SDPA;
  int want = -1, kv = -1, quant = -1;
  XPI_TRY(parse_attn(o->attn_implementation, &attn));
  XPI_TRY(parse_dtype("dtype", o->dtype, 1, &want));
  XPI_TRY(parse_dtype("kv_dtype", o->kv_dtype, 0, &kv));
  XPI_TRY(parse_quant(o->quant, &quant));
  if (quant >= 0) want = quant;

  XPI_TRY(xpi_config_load(m->dir, &m->cfg));
  XPI_TRY(xpi_tokenizer_load(m->dir, &m->tok));
  XPI_TRY(xpi_st_open_dir(m->dir, &m->st));
  m->graph.cfg = &m->cfg;
  m->graph.attn = attn;
  m->graph.kv_dtype = kv >= 0 ? (xpi_dtype)kv : XPI_DT_F32;
  XPI_TRY(make_backends(m, o));

  xpi_backend **layer_be = calloc((size_t)m->cfg.n_layers, sizeof *layer_be);
  if (!layer_be) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  xpi_graph_layer_backends(&m->graph, m->cfg.n_layers, layer_be);
  /* before any upload: the plan on XPUs, which places the layers (a refused single device says so plainly
   * where its weights alone do not fit); device maps mixing in the CPU keep the split by weight and check the
   * weights */
  xpi_graph_limits lim;
  s = xpi_serve_plan_limits(m, &lim);
  if (s == XPI_OK)
    s = xpi_xpu_plan(&m->cfg, m->st, &m->graph, want, &lim, xpi_serve_default_ctx(m), PLAN_MIN_CTX, &m->plan);
  if (s == XPI_ERR_OUT_OF_MEMORY && m->n_backends == 1) {
    char plan_msg[1024];
    snprintf(plan_msg, sizeof plan_msg, "%s", xpi_last_error());
    if (xpi_xpu_fit_check(&m->cfg, m->st, layer_be, want) == XPI_OK) s = xpi_err(s, "%s", plan_msg);
  }
  if (s == XPI_OK && m->plan.n_dev == 0 && m->n_backends > 1) s = xpi_xpu_fit_check(&m->cfg, m->st, layer_be, want);
  if (s != XPI_OK) {
    free(layer_be);
    return s;
  }
  xpi_graph_layer_backends(&m->graph, m->cfg.n_layers, layer_be); /* as planned */
  s = xpi_weights_load_opt(&m->cfg, m->st, layer_be, want, m->plan.embed_on_host, &m->w);
  free(layer_be);
  XPI_TRY(s);
  XPI_TRY(check_unused(m, o->strict));
  m->graph.w = &m->w;
  XPI_TRY(xpi_graph_check_ops(&m->graph)); /* an op a device lacks refuses the load by name */
  XPI_TRY(xpi_graph_init(&m->graph));

  xpi_model_info *i = &m->info;
  i->struct_size = sizeof *i;
  snprintf(i->architecture, sizeof i->architecture, "%s", m->cfg.family->name);
  snprintf(i->weight_dtype, sizeof i->weight_dtype, "%s", xpi_dtype_name(m->w.layers[0].wq.dtype));
  snprintf(i->attn_implementation, sizeof i->attn_implementation, "%s", k_attn[attn].name);
  if (m->backends[0]->describe) m->backends[0]->describe(m->backends[0], m->w.layers[0].wq.dtype, i->kernels, sizeof i->kernels);
  i->vocab_size = m->cfg.vocab_size;
  i->hidden_size = m->cfg.hidden_size;
  i->n_layers = m->cfg.n_layers;
  i->n_heads = m->cfg.n_heads;
  i->n_kv_heads = m->cfg.n_kv_heads;
  i->head_dim = m->cfg.head_dim;
  i->intermediate_size = m->cfg.intermediate_size;
  i->max_position_embeddings = m->cfg.max_position_embeddings;
  i->n_eos = m->cfg.n_eos < 8 ? m->cfg.n_eos : 8;
  memcpy(i->eos_ids, m->cfg.eos_ids, (size_t)i->n_eos * sizeof(int32_t));
  i->bos_id = m->cfg.bos_id;
  i->weight_bytes = m->w.bytes;
  i->n_experts = m->cfg.n_experts;
  i->n_experts_per_tok = m->cfg.n_experts_per_tok;
  i->moe_intermediate_size = m->cfg.moe_intermediate_size;
  i->shared_expert_intermediate_size = m->cfg.shared_expert_intermediate_size;
  for (int32_t l = 0; l < m->cfg.n_layers; l++) i->n_moe_layers += m->cfg.n_experts > 0 && m->cfg.layer_moe[l];
  return XPI_OK;
}

xpi_status xpi_model_load(const char *path_or_repo, const xpi_model_options *opts, xpi_model **out) {
  if (!out) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_model_load: out is NULL");
  *out = NULL;
  if (!path_or_repo || !*path_or_repo) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_model_load: no model path given");
  xpi_model_options o; /* a caller built against an older header passes a smaller struct: the rest keeps defaults */
  xpi_model_options_default(&o);
  if (opts) {
    if (opts->struct_size < offsetof(xpi_model_options, device))
      return xpi_err(XPI_ERR_INVALID_ARGUMENT,
                     "xpi_model_options.struct_size = %zu: fill it with xpi_model_options_default", opts->struct_size);
    memcpy(&o, opts, opts->struct_size < sizeof o ? opts->struct_size : sizeof o);
    o.struct_size = sizeof o;
  }
  opts = &o;
  xpi_model *m = calloc(1, sizeof *m);
  if (!m) return xpi_err(XPI_ERR_OUT_OF_MEMORY, "out of memory");
  pthread_mutex_init(&m->req_mu, NULL);
  xpi_status s = load(m, path_or_repo, opts);
  if (s != XPI_OK) {
    xpi_model_free(m);
    return xpi_err_prefix(s, "loading model %s: ", path_or_repo);
  }
  *out = m;
  return XPI_OK;
}

const xpi_tokenizer *xpi_model_tokenizer(const xpi_model *m) { return m ? m->tok : NULL; }

xpi_status xpi_model_get_info(const xpi_model *m, xpi_model_info *out) {
  if (!m || !out) return xpi_err(XPI_ERR_INVALID_ARGUMENT, "xpi_model_get_info: NULL argument");
  size_t sz = out->struct_size && out->struct_size < sizeof *out ? out->struct_size : sizeof *out;
  memcpy(out, &m->info, sz);
  out->struct_size = sz;
  return XPI_OK;
}
