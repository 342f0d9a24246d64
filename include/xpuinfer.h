/* libxpuinfer: run Hugging Face causal language models (Qwen3, Qwen2, Llama 3) from their Hub files (chat
 * templates included) on Intel GPUs through Level Zero, or on the CPU.
 *
 * Conventions
 * - Every call that can fail returns xpi_status; on failure xpi_last_error() gives a message for a person
 *   (which file, which tensor, what was expected). The library never prints, exits or aborts.
 * - Objects are opaque and come in create/free pairs; free functions accept NULL.
 * - Options structs start with struct_size and are filled by their *_default() function first, so the
 *   ABI can grow.
 * - Caller-owned output buffers use the size-query pattern: pass the capacity, the call stores the size it
 *   needs in *len_out; if the buffer is NULL or too small it returns XPI_ERR_BUFFER_TOO_SMALL and writes
 *   nothing else.
 * - Thread safety: xpi_model and xpi_tokenizer are immutable after load and may be used from any number of
 *   threads at once. An xpi_request belongs to one thread at a time. An xpi_engine takes submissions,
 *   cancellations and stats queries from any thread (see the engine section). xpi_last_error() is per thread.
 */
#ifndef XPUINFER_H
#define XPUINFER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define XPI_API __attribute__((visibility("default")))
#else
#define XPI_API
#endif

/* The project's one version: CMake reads these three lines (project(VERSION), xpuinfer.pc, the CMake package,
 * the .deb), xpi_version() and `xpuinfer --version` print them. */
#define XPI_VERSION_MAJOR 0
#define XPI_VERSION_MINOR 1
#define XPI_VERSION_PATCH 0
#define XPI_VERSION_STR_(a, b, c) #a "." #b "." #c
#define XPI_VERSION_XSTR_(a, b, c) XPI_VERSION_STR_(a, b, c)
/* "MAJOR.MINOR.PATCH" of this header; xpi_version() gives the linked library's. */
#define XPI_VERSION_STRING XPI_VERSION_XSTR_(XPI_VERSION_MAJOR, XPI_VERSION_MINOR, XPI_VERSION_PATCH)

/* ------------------------------------------------------------------ status */
typedef enum xpi_status {
  XPI_OK = 0,
  XPI_ERR_INVALID_ARGUMENT = 1,  /* a parameter of the call is wrong (NULL, out of range, unknown name) */
  XPI_ERR_IO = 2,                /* a file could not be opened, read or written */
  XPI_ERR_FORMAT = 3,            /* a file's contents are malformed (JSON, safetensors, tokenizer.json) */
  XPI_ERR_UNSUPPORTED = 4,       /* well formed but not supported (architecture, dtype, template) */
  XPI_ERR_OUT_OF_MEMORY = 5,     /* host or device memory exhausted */
  XPI_ERR_BUFFER_TOO_SMALL = 6,  /* size query: *len_out holds the size needed */
  XPI_ERR_CONTEXT_LENGTH = 7,    /* prompt plus new tokens exceed the context */
  XPI_ERR_DEVICE = 8,            /* device missing or a device call failed */
  XPI_ERR_NETWORK = 9,           /* download failed (unreachable host, server error, interrupted) */
  XPI_ERR_AUTH = 10,             /* 401/403 from the Hub: gated or private repository */
  XPI_ERR_NOT_FOUND = 11,        /* repository, revision or file does not exist (or not in offline cache) */
  XPI_ERR_CANCELLED = 12,        /* a progress callback asked to stop (a download or load) */
  XPI_ERR_INTERNAL = 13,         /* a bug in libxpuinfer; the message says where */
  XPI_ERR_NUMERIC = 14           /* NaN or infinity in the logits; the message names the step and the first layer
                                    whose output held one (usually broken weights) */
} xpi_status;

/* The message of the last failing call on this thread ("" if none). Valid until the next call on this thread. */
XPI_API const char *xpi_last_error(void);
/* A short constant name for a status, e.g. "XPI_ERR_FORMAT". */
XPI_API const char *xpi_status_name(xpi_status status);
/* "MAJOR.MINOR.PATCH". */
XPI_API const char *xpi_version(void);

/* Diagnostics from the library go to this callback (never to stdout/stderr). level: 0 debug, 1 info,
 * 2 warning: download retries, a cached snapshot used because the Hub is unreachable, kernel tiers that fall
 * back to a slower one, checkpoint tensors the model does not use. Process-wide; set it before other calls.
 * NULL silences (the default). */
typedef void (*xpi_log_fn)(int level, const char *message, void *user);
XPI_API void xpi_set_log_callback(xpi_log_fn fn, void *user);

/* Progress of long operations (downloads, loading). total is 0 when unknown. Return nonzero to cancel. */
typedef int (*xpi_progress_fn)(const char *what, uint64_t done, uint64_t total, void *user);

/* ----------------------------------------------------------------- devices */
typedef struct xpi_device_info {
  size_t struct_size;
  char name[256];          /* e.g. "Intel(R) Data Center GPU Max 1550" or the CPU model */
  char id[16];             /* "cpu" or "xpu:N" */
  int index;               /* N for xpu:N, -1 for the CPU */
  char pci_bdf[32];        /* "0000:3a:00.0", "" when unknown */
  uint64_t total_memory;   /* bytes */
  uint64_t max_alloc_size; /* bytes; largest single allocation without relaxed limits */
  uint32_t eu_count;       /* execution units (slices*subslices*EUs per subslice) */
  uint32_t threads_per_eu;
  uint32_t subgroup_sizes[8];
  uint32_t n_subgroup_sizes;
  int has_fp16, has_fp64, has_bf16; /* bf16 decided as PyTorch XPU does */
  int has_dpas;            /* Intel matrix engine (XMX) reported */
} xpi_device_info;

typedef struct xpi_device_list xpi_device_list;
/* Enumerates Level Zero GPUs (honouring ZE_AFFINITY_MASK, ZE_ENABLE_PCI_ID_DEVICE_ORDER,
 * ZE_FLAT_DEVICE_HIERARCHY as Intel's driver does). No loader or no driver is not an error: the list then
 * has zero XPUs. The CPU is not counted by xpi_device_list_count_xpu(). */
XPI_API xpi_status xpi_device_list_create(xpi_device_list **out);
XPI_API void xpi_device_list_free(xpi_device_list *list);
XPI_API size_t xpi_device_list_count_xpu(const xpi_device_list *list);
/* i in [0, count_xpu) gives xpu:i; i == count_xpu gives the CPU. */
XPI_API xpi_status xpi_device_list_get(const xpi_device_list *list, size_t i, xpi_device_info *out);
/* Human-readable description of why XPUs are or are not available (loader found, drivers, env vars). */
XPI_API const char *xpi_device_list_summary(const xpi_device_list *list);

/* --------------------------------------------------------------- tokenizer */
typedef struct xpi_tokenizer xpi_tokenizer;

/* Loads tokenizer.json (+ tokenizer_config.json when present) from a folder. */
XPI_API xpi_status xpi_tokenizer_load(const char *dir, xpi_tokenizer **out);
XPI_API void xpi_tokenizer_free(xpi_tokenizer *tok);
XPI_API int32_t xpi_tokenizer_vocab_size(const xpi_tokenizer *tok);

/* Encodes UTF-8 text (len bytes; invalid UTF-8 is XPI_ERR_INVALID_ARGUMENT). add_special applies the
 * post-processor (BOS for Llama 3), as tokenizers' encode(text, add_special_tokens=True). Size query on ids. */
XPI_API xpi_status xpi_tokenize(const xpi_tokenizer *tok, const char *text, size_t len, int add_special,
                                int32_t *ids, size_t cap, size_t *n_out);
/* Decodes ids to UTF-8 (as tokenizers' decode). skip_special drops special added tokens. Size query on text
 * (the written text is NUL-terminated; *len_out excludes the NUL, cap must include it). */
XPI_API xpi_status xpi_detokenize(const xpi_tokenizer *tok, const int32_t *ids, size_t n, int skip_special,
                                  char *text, size_t cap, size_t *len_out);

/* Incremental decoding for streaming: each push returns the newly complete text, never a partial UTF-8
 * character. Belongs to one thread at a time. */
typedef struct xpi_detok_stream xpi_detok_stream;
XPI_API xpi_status xpi_detok_stream_create(const xpi_tokenizer *tok, int skip_special, xpi_detok_stream **out);
XPI_API void xpi_detok_stream_free(xpi_detok_stream *s);
/* *piece points into the stream's own buffer, valid until the next call on s. */
XPI_API xpi_status xpi_detok_stream_push(xpi_detok_stream *s, int32_t id, const char **piece, size_t *piece_len);
/* Text held back at the end (an incomplete character at end of generation, decoded as tokenizers would). */
XPI_API xpi_status xpi_detok_stream_flush(xpi_detok_stream *s, const char **piece, size_t *piece_len);

/* ---------------------------------------------------------------- chat templates */
/* The model's own chat template (tokenizer_config.json "chat_template", or chat_template.jinja), rendered by
 * libxpuinfer's Jinja engine exactly as transformers' tokenizer.apply_chat_template(messages, tools=...,
 * documents=..., add_generation_prompt=..., tokenize=False, **kwargs) renders it: jinja2's sandboxed environment
 * with trim_blocks and lstrip_blocks, loopcontrols, {% generation %}, raise_exception(), strftime_now(),
 * tojson as json.dumps(ensure_ascii=False), and the tokenizer's special tokens (bos_token, eos_token, unk_token,
 * pad_token) as variables. Templates that raise (raise_exception, undefined values, type errors, the sandbox's
 * refusals) fail with XPI_ERR_INVALID_ARGUMENT and the template's message or its line and column; a template that
 * does not parse fails with XPI_ERR_FORMAT. Every render is bounded in time and memory. */
typedef struct xpi_chat_message {
  const char *role;              /* "system", "user", "assistant", "tool", ... */
  const char *content;           /* UTF-8 text; NULL: the message has no "content" key (unless content_json) */
  const char *content_json;      /* instead of content: any JSON value, e.g. a list of parts
                                    [{"type": "text", "text": "..."}, {"type": "image"}]; NULL: unused */
  const char *reasoning_content; /* assistant: its reasoning ("thinking") text, or NULL */
  const char *tool_calls_json;   /* assistant: a JSON array of calls
                                    [{"id", "type": "function", "function": {"name", "arguments": {...}}}], or NULL */
  const char *tool_call_id;      /* role "tool": the id of the call it answers, or NULL */
  const char *name;              /* role "tool": the tool's name, or NULL */
  const char *extra_json;        /* a JSON object of further keys for this message, or NULL */
} xpi_chat_message;

typedef struct xpi_chat_options {
  size_t struct_size;
  int add_generation_prompt;   /* end with the assistant's turn header (default 1; transformers' default is 0) */
  const char *tools_json;      /* JSON array of tools ({"type": "function", "function": {...}}) or NULL (tools=None) */
  const char *documents_json;  /* JSON array of documents or NULL (documents=None) */
  const char *variables_json;  /* JSON object of further template variables, e.g. {"enable_thinking": false,
                                  "reasoning_effort": "low", "date_string": "26 Jul 2024"}; they override the
                                  special tokens and the conversation's keys */
  const char *chat_template;   /* Jinja source to render instead of the tokenizer's, or NULL */
  const char *template_name;   /* with several named templates: which (NULL: "tool_use" when tools are given and
                                  the tokenizer has it, else "default") */
  int64_t now;                 /* strftime_now's clock, seconds since the epoch rendered in local time as
                                  datetime.now(); 0: the current time */
} xpi_chat_options;
XPI_API void xpi_chat_options_default(xpi_chat_options *o);

/* Renders a conversation of n_msgs structured messages. tok may be NULL when opts->chat_template is given (no
 * special tokens then). Size query on text (NUL-terminated); with the current clock (opts->now 0) a template
 * that prints the time can differ between the two calls: fix now to render identically. */
XPI_API xpi_status xpi_apply_chat_template(const xpi_tokenizer *tok, const xpi_chat_message *msgs, size_t n_msgs,
                                           const xpi_chat_options *opts, char *text, size_t cap, size_t *len_out);
/* The same from JSON (what a CLI, a jsonl batch or an OpenAI-style server holds): conversation is either a JSON
 * array of messages or an object {"messages": [...], "tools": [...], "documents": [...],
 * "add_generation_prompt": bool, ...} whose every other key is a template variable (enable_thinking,
 * bos_token, date_string, ...). Message objects pass to the template as they are. Precedence, lowest first: the
 * tokenizer's special tokens, tools=None and documents=None, opts->add_generation_prompt, the conversation's keys,
 * opts->tools_json / documents_json, opts->variables_json. */
XPI_API xpi_status xpi_apply_chat_template_json(const xpi_tokenizer *tok, const char *conversation, size_t len,
                                                const xpi_chat_options *opts, char *text, size_t cap,
                                                size_t *len_out);

/* ---------------------------------------------------------------- hub */
typedef struct xpi_download_options {
  size_t struct_size;
  const char *revision;    /* NULL: "main" (or the @revision in the repo id) */
  int offline;             /* also on when HF_HUB_OFFLINE=1 */
  int quiet;               /* no progress bar on stderr (also HF_HUB_DISABLE_PROGRESS_BARS=1) */
  xpi_progress_fn progress; void *progress_user;
} xpi_download_options;
XPI_API void xpi_download_options_default(xpi_download_options *o);
/* Resolves "org/name[@rev]" to a snapshot folder in the Hugging Face cache, downloading what the model needs
 * (config, tokenizer, weights). An existing folder path is returned as is. Size query on path. */
XPI_API xpi_status xpi_hub_download(const char *repo_or_path, const xpi_download_options *opts,
                                    char *path, size_t cap, size_t *len_out);

/* ---------------------------------------------------------------- model */
typedef struct xpi_model xpi_model;

typedef struct xpi_model_options {
  size_t struct_size;
  const char *device;              /* "auto" (default: first XPU, else CPU), "cpu", "xpu", "xpu:N" */
  const char *device_map;          /* NULL: one device; "auto": layers split over all visible XPUs */
  const char *dtype;               /* "auto" (as stored, default), "bf16", "f16", "f32": weight dtype */
  const char *quant;               /* NULL or "none", "q8", "q4": weight-only quantization at load */
  const char *attn_implementation; /* "sdpa" (default), "eager", "flash_attention_2" */
  const char *kv_dtype;            /* NULL: backend default; "f32", "bf16", "f16" */
  int n_threads;                   /* CPU threads; 0: all cores */
  int use_kernels;                 /* fused kernels (default 1); 0 selects the unfused reference path */
  xpi_download_options download;   /* used when the model argument is a repo id */
  int strict;                      /* 1: checkpoint tensors the model never reads (e.g. more layers than
                                      num_hidden_layers) fail the load with XPI_ERR_FORMAT; 0 (default): they are
                                      listed in a warning through the log callback */
} xpi_model_options;
XPI_API void xpi_model_options_default(xpi_model_options *o);

/* Loads a model from a folder (config.json, *.safetensors, tokenizer.json) or a Hub repo id. */
XPI_API xpi_status xpi_model_load(const char *path_or_repo, const xpi_model_options *opts, xpi_model **out);
XPI_API void xpi_model_free(xpi_model *model);
/* The model's tokenizer, owned by the model. */
XPI_API const xpi_tokenizer *xpi_model_tokenizer(const xpi_model *model);

typedef struct xpi_model_info {
  size_t struct_size;
  char architecture[64];     /* "qwen3", "qwen2", "llama", "qwen3_moe", "qwen2_moe" */
  char device[64];           /* "cpu", "xpu:0", "xpu:0-2" with a device map */
  char weight_dtype[16];     /* "bf16", "f16", "f32", "q8", "q4" */
  char attn_implementation[32];
  int32_t vocab_size, hidden_size, n_layers, n_heads, n_kv_heads, head_dim, intermediate_size;
  int32_t max_position_embeddings;
  int32_t eos_ids[8]; int32_t n_eos;
  int32_t bos_id;            /* -1 if none */
  uint64_t weight_bytes;     /* bytes of weights as used by the backend */
  char kernels[160];         /* CPU: the kernel table and, per weight dtype in use, what decode and prefill
                              * matmuls run on, e.g. "auto (bf16: decode avx2, 4-64 tokens avx512, prefill
                              * amx-bf16x3)": the batched decode of 4-64 tokens (float weights); XPU: "" */
  /* Mixture of experts (qwen2_moe, qwen3_moe; all 0 for dense models): n_moe_layers of the n_layers have
   * n_experts experts of moe_intermediate_size, n_experts_per_tok of them run per token (a decode step reads
   * only those), plus a shared expert of shared_expert_intermediate_size on every token (qwen2_moe). */
  int32_t n_experts, n_experts_per_tok, moe_intermediate_size, shared_expert_intermediate_size, n_moe_layers;
} xpi_model_info;
XPI_API xpi_status xpi_model_get_info(const xpi_model *model, xpi_model_info *out);

/* ---------------------------------------------------------------- performance model (XPU) */
/* What one decode step asks of device memory, counted per XPU kernel launch from its arguments (the cost table
 * of src/ops/xpu/xpu_perf.c: bytes each launch must read and write in device memory, FLOPs), against what a
 * decode step cannot avoid reading: every weight (one embedding row) and the KV cache of its context. */
#define XPI_PERF_MAX_KERNELS 32
typedef struct xpi_perf_kernel {
  char name[40];
  int64_t launches;
  double bytes_read, bytes_written, flops;
} xpi_perf_kernel;
typedef struct xpi_perf_report {
  size_t struct_size;
  int32_t n_ctx;                   /* the step's token is at position n_ctx - 1 */
  int64_t launches;
  double bytes_read, bytes_written, flops;
  double weight_bytes;             /* weights a decode step must read: all of them but the embedding (one row)
                                    * and the experts a token does not choose (k of each MoE layer's n) */
  double kv_bytes;                 /* K and V of n_ctx positions over all layers */
  int32_t n_kernels;
  xpi_perf_kernel kernels[XPI_PERF_MAX_KERNELS];
} xpi_perf_report;
/* Runs one decode step (not replayed) of a single sequence whose token is at position n_ctx - 1 (a KV pool of
 * n_ctx positions is allocated for it and freed after; its contents are not initialised: the step's outputs
 * are not meaningful, its launches are) with every XPU launch counted. Every backend must be an XPU. */
XPI_API xpi_status xpi_model_perf_decode(xpi_model *model, int32_t n_ctx, xpi_perf_report *out);

/* ---------------------------------------------------------------- requests and generation */
typedef struct xpi_request xpi_request;

typedef struct xpi_request_options {
  size_t struct_size;
  int32_t n_ctx;  /* KV cache capacity in tokens; 0: min(max_position_embeddings, 4096) */
  int prefix_cache; /* 1 (default): the prompt reuses KV blocks other requests of the model computed for the same
                     * prefix, and leaves its own for them. 0: neither (a private context; released blocks go straight
                     * back to the pool, so a request reset and refilled with other tokens reuses the same memory) */
} xpi_request_options;
XPI_API void xpi_request_options_default(xpi_request_options *o);

/* A request is one conversation: its context (KV cache) and sampler state. Several requests may share one model
 * from several threads: they are sequences of one engine the model makes on first use (its KV pool: half the
 * free memory, at most 8 contexts of min(max_position_embeddings, 4096) positions), so requests of several
 * threads run in shared, batched steps - whichever waiting thread finds nobody stepping runs the next step -
 * and each request's callback is called on its own thread. A request's context stays in the pool between calls;
 * when the pool needs the room it is recomputed at the next call. Free every request before its model. */
XPI_API xpi_status xpi_request_create(xpi_model *model, const xpi_request_options *opts, xpi_request **out);
XPI_API void xpi_request_free(xpi_request *req);
/* Forgets the context (KV cache length back to 0). */
XPI_API void xpi_request_reset(xpi_request *req);
/* Tokens currently in the KV cache. */
XPI_API int32_t xpi_request_n_past(const xpi_request *req);
/* The KV cache capacity in tokens (n_ctx as created). */
XPI_API int32_t xpi_request_n_ctx(const xpi_request *req);

/* Appends ids to the context and computes logits (float, vocab_size per row). all_positions: 0 writes one row
 * (the last position), 1 writes n rows. logits may be NULL when not needed. cap is in floats. The logits are
 * returned as computed (a broken checkpoint may give NaN; xpi_request_generate checks them). */
XPI_API xpi_status xpi_request_eval(xpi_request *req, const int32_t *ids, size_t n, int all_positions,
                                    float *logits, size_t cap);

typedef struct xpi_gen_options {
  size_t struct_size;
  int32_t max_new_tokens;        /* default 256; every generated token counts, a stop token too */
  int greedy;                    /* 1: argmax, ignoring the sampling fields below (default 0) */
  float temperature;             /* default 1.0; <= 0 means greedy */
  int32_t top_k;                 /* 0: off (default) */
  float top_p;                   /* 1.0: off (default) */
  float min_p;                   /* 0: off (default) */
  float repetition_penalty;      /* 1.0: off (default); as transformers, over prompt and generated ids */
  uint64_t seed;                 /* same seed, same text */
  const char *const *stop_strings; size_t n_stop_strings; /* UTF-8; generation ends when the text contains one
                                                             (empty strings are ignored) */
  int ignore_eos;                /* do not stop on eos ids (they are then ordinary tokens, text included) */
  int32_t logprobs;              /* >0: report this many top log-probabilities per generated token */
  int include_stop;              /* 1: the stop string that ended generation stays in the text; 0 (default): the
                                    text ends just before it */
  int skip_special;              /* 1: the text leaves out every special added token (<|im_end|>, ...), as
                                    tokenizers' decode(skip_special_tokens=True) and OpenAI-style servers; stop
                                    strings are matched on that text. 0 (default): only stop tokens' text is left
                                    out. The ids are the same either way. */
} xpi_gen_options;
XPI_API void xpi_gen_options_default(xpi_gen_options *o);
/* Defaults, then the model's generation_config.json as transformers reads it: do_sample false (or absent)
 * means greedy; otherwise temperature, top_k (50 when absent, as transformers), top_p, and in both cases
 * repetition_penalty and max_new_tokens when given. */
XPI_API void xpi_gen_options_from_model(const xpi_model *model, xpi_gen_options *o);

typedef struct xpi_logprob { int32_t id; float logprob; } xpi_logprob;

typedef struct xpi_token_event {
  int32_t id;                 /* the sampled token (a stop token too: ids keep it, as transformers does) */
  const char *text;           /* newly final text (may be empty), not NUL-terminated; see "Text" below */
  size_t text_len;
  const xpi_logprob *top;     /* logprobs requested: log-softmax of the raw logits, best first */
  int32_t n_top;
  float logprob;              /* logprobs requested: the sampled token's log-softmax of the raw logits (when
                                 sampling it may be outside top); else 0 */
} xpi_token_event;
/* Called for every generated token. Return 0 to continue, nonzero to stop (finish reason "cancelled"). */
typedef int (*xpi_token_callback)(const xpi_token_event *ev, void *user);

/* Why generation ended. LENGTH: max_new_tokens generated. STOP: a stop token (eos id) or a stop string.
 * CANCELLED: the token callback returned nonzero before the generation ended otherwise. */
typedef enum xpi_finish_reason {
  XPI_FINISH_LENGTH = 0,
  XPI_FINISH_STOP = 1,
  XPI_FINISH_CANCELLED = 2
} xpi_finish_reason;

typedef struct xpi_gen_result {
  size_t struct_size;
  xpi_finish_reason finish_reason;
  int32_t n_prompt_tokens, n_generated;
  double prompt_seconds;   /* prefill, up to the first token's logits */
  double generate_seconds; /* all later tokens */
} xpi_gen_result;

/* Generates after the given prompt ids (appended to the request's context). cb may be NULL.
 *
 * Text: the events' texts concatenated are the generated text, which never holds a stop token's text and
 * ends where it first contains a stop string: just before that string (include_stop = 0; of several ending
 * at the same place, the longest), or just after it (include_stop = 1). Anything after it, also in the same
 * token, is dropped. While stop strings are excluded, text that could still be the start of one is held back
 * until it cannot be (or generation ends), so streamed text is always final. On cancellation, text held
 * back is dropped.
 *
 * Context: the prompt and every generated token but the last enter the KV cache (xpi_request_n_past).
 *
 * Numbers: non-finite logits (NaN, infinity) fail the call with XPI_ERR_NUMERIC; the message names the
 * generation step, the token position and the first layer whose output held a non-finite value. */
XPI_API xpi_status xpi_request_generate(xpi_request *req, const int32_t *prompt_ids, size_t n_prompt,
                                        const xpi_gen_options *opts, xpi_token_callback cb, void *user,
                                        xpi_gen_result *result);

/* ---------------------------------------------------------------- engine: many sequences at once
 *
 * An engine runs any number of sequences through one model together (continuous batching): each step builds
 * one batch from the next token of every decoding sequence plus chunks of waiting prompts, under a per-step
 * token budget, so the weights are read once for all of them. Sequences are admitted as soon as there is KV
 * memory for them and leave it the moment they finish or are cancelled. The KV cache is a pool of blocks of
 * block_size positions per backend; a sequence holds a table of blocks. With prefix caching (the default),
 * full blocks whose tokens and whole prefix equal another sequence's are shared rather than recomputed, and
 * kept after their sequences end until the pool needs the room (least recently used first). When the pool is
 * full, the most recently admitted sequence is preempted: its blocks are freed and its tokens recomputed
 * when it runs again (its output is unaffected).
 *
 * Thread safety: xpi_engine_submit, xpi_engine_cancel and xpi_engine_get_stats may be called from any thread
 * at any time, also from inside a callback. Steps run on one thread at a time: the caller of xpi_engine_step
 * (concurrent calls wait for each other) or, after xpi_engine_start, the engine's own thread. Callbacks run on
 * that stepping thread, between steps; they must not call xpi_engine_step, _start, _stop or _free.
 * xpi_request_* on the same model use a separate engine (see xpi_request_create). */
typedef struct xpi_engine xpi_engine;

typedef struct xpi_engine_options {
  size_t struct_size;
  int64_t kv_pool_bytes;   /* KV pool over all backends, in bytes; 0: kv_pool_tokens, else the default: half the
                            * memory the device has free (the CPU: MemAvailable) after the weights, at most what
                            * max_seqs sequences of min(max_seq_len, 4096) positions need */
  int64_t kv_pool_tokens;  /* the pool in positions (used when > 0; kv_pool_bytes then must be 0) */
  int32_t block_size;      /* positions per KV block: 16 or 32 (default 32) */
  int32_t max_seqs;        /* sequences running at once (default 64); more wait */
  int32_t step_tokens;     /* tokens per step, decode tokens and prefill chunks together (default 512) */
  int32_t max_seq_len;     /* longest sequence, prompt plus generated tokens; 0: the model's
                            * max_position_embeddings */
  int prefix_caching;      /* share and keep the KV blocks of identical prefixes (default 1) */
  int32_t device_topk;     /* sampled sequences without a repetition penalty and with top_k in [1, device_topk]
                            * get their top_k + 1 best logits and the softmax normaliser from the device instead
                            * of the whole row (the same tokens; the row is read only where a tie at the k-th
                            * value leaves the draw undecided); greedy sequences with logprobs likewise get their
                            * logprobs best. Default 256, 0: every such row comes back whole. At most 4096 */
} xpi_engine_options;
XPI_API void xpi_engine_options_default(xpi_engine_options *o);

/* How a sequence ended (the final event of its callback). */
typedef struct xpi_seq_result {
  size_t struct_size;
  xpi_status status;       /* XPI_OK, or the error that ended this sequence alone (the others go on) */
  const char *error;       /* the message when status != XPI_OK, else ""; valid during the callback */
  xpi_gen_result gen;      /* finish reason, prompt/generated token counts; prompt_seconds: from submission to
                            * the first token (queueing included), generate_seconds: the tokens after it */
  int32_t n_cached_tokens; /* prompt tokens whose KV came from the prefix cache */
  int32_t n_preemptions;   /* times the sequence was preempted and recomputed */
  double queue_seconds;    /* from submission to its first step */
} xpi_seq_result;

/* One callback call: a generated token (token != NULL), or the end of the sequence (done != NULL, exactly once
 * per submitted sequence: finished, stopped, cancelled, failed, or freed with the engine). On a token event,
 * return nonzero to end the sequence (finish reason CANCELLED); the return value of the final event is
 * ignored. */
typedef struct xpi_seq_event {
  uint64_t seq_id;
  const xpi_token_event *token;
  const xpi_seq_result *done;
} xpi_seq_event;
typedef int (*xpi_seq_callback)(const xpi_seq_event *ev, void *user);

/* An engine over a loaded model (which must outlive it). Allocates the KV pool on every backend of the model. */
XPI_API xpi_status xpi_engine_create(xpi_model *model, const xpi_engine_options *opts, xpi_engine **out);
/* Stops the background thread if started, ends every sequence not yet finished (final event with
 * XPI_FINISH_CANCELLED), and frees everything. */
XPI_API void xpi_engine_free(xpi_engine *engine);

/* Queues a sequence: prompt ids[0..n) (n >= 1), then generation with opts (NULL: xpi_gen_options_default).
 * cb (may be NULL) receives its tokens and its end. Checked at once: ids in the vocabulary, the options, and
 * that n + max_new_tokens - 1 positions fit max_seq_len and the KV pool (XPI_ERR_CONTEXT_LENGTH); a failing
 * submit calls no callback. *seq_id (may be NULL) identifies the sequence, unique for the engine's life. */
XPI_API xpi_status xpi_engine_submit(xpi_engine *engine, const int32_t *ids, size_t n, const xpi_gen_options *opts,
                                     xpi_seq_callback cb, void *user, uint64_t *seq_id);
/* Ends a sequence at the next step boundary, waiting or running (also during its prefill), with
 * XPI_FINISH_CANCELLED; its KV blocks are freed at once then. Other sequences are not disturbed. A sequence
 * that already ended is left alone (XPI_OK); an id never issued is XPI_ERR_INVALID_ARGUMENT. */
XPI_API xpi_status xpi_engine_cancel(xpi_engine *engine, uint64_t seq_id);

/* Runs one step on the calling thread (admission, one batch, sampling, callbacks). *n_pending (may be NULL)
 * gets the sequences still waiting or running afterwards; with none, the call returns at once. A failing step
 * (device error, out of memory) ends the sequences of its batch with that error and returns it. Not allowed
 * while the engine runs in the background (XPI_ERR_INVALID_ARGUMENT). */
XPI_API xpi_status xpi_engine_step(xpi_engine *engine, int32_t *n_pending);
/* Starts a background thread that steps whenever there is work and sleeps otherwise; callbacks then run on
 * it. xpi_engine_stop stops it after the current step (sequences stay; steps may go on by either means). */
XPI_API xpi_status xpi_engine_start(xpi_engine *engine);
XPI_API xpi_status xpi_engine_stop(xpi_engine *engine);

typedef struct xpi_engine_stats {
  size_t struct_size;
  int32_t running, waiting;          /* sequences now (running: admitted, holding KV blocks) */
  int32_t kv_blocks_total, kv_blocks_used, kv_blocks_cached, kv_blocks_free; /* used: held by sequences;
                                      * cached: kept for the prefix cache, reclaimable; free: empty */
  int32_t block_size;
  uint64_t kv_pool_bytes;            /* what the pool takes over all backends, its spare block included */
  uint64_t sequences_submitted, sequences_finished;
  uint64_t prompt_tokens;            /* prompt tokens of admitted sequences */
  uint64_t prompt_tokens_cached;     /* of those, found in the prefix cache instead of computed */
  uint64_t prefill_tokens;           /* tokens run through the model as prefill (recomputation included) */
  uint64_t completion_tokens;        /* tokens generated */
  uint64_t prefix_cache_hits;        /* blocks found in the prefix cache */
  uint64_t preemptions;
  uint64_t steps;
  double step_seconds;               /* time spent in steps */
  uint64_t readback_bytes;           /* step outputs copied from the device to the host: 4 bytes a greedy
                                      * sequence, 8 (k + 1) + 8 a device top-k one, 4 vocab a whole row */
  /* A model with sliding-window layers keeps their KV in a window pool (0s otherwise): a sequence holds only
   * the blocks of its window there (about window / block_size + 2), the kv_blocks_* pool above the blocks of
   * every position for the other layers (when every layer slides, that pool holds no KV: it only counts
   * positions). kv_pool_bytes covers both. */
  int32_t kv_window_blocks_total, kv_window_blocks_used, kv_window_blocks_cached;
  int32_t window;                    /* the sliding layers' window in positions (0: no window pool) */
} xpi_engine_stats;
XPI_API xpi_status xpi_engine_get_stats(const xpi_engine *engine, xpi_engine_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* XPUINFER_H */
