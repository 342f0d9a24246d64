/* zesim command lists, queues, events and fences.
 * Everything runs on the engine's single in-order OpenCL queue, so the order in which work is submitted is
 * the order in which it completes: barriers and event waits are satisfied by construction. Kernel launches
 * are enqueued asynchronously; copies and fills finish the queue first and run on the host. Signals are
 * recorded as pending and become visible at the next flush (any host wait or query flushes), which is
 * always after the work before them completed. A regular command list is a recorded array of commands with
 * their own kernel-argument snapshots, replayable any number of times.
 * Out-of-order mode (ZESIM_OUT_OF_ORDER=1): in a list created without the in-order flag, the launches between two
 * ordering points (a barrier, a copy, fill, signal or event reset, a host wait) run in reverse order, as a GPU may
 * overlap or reorder them, so that a missing barrier shows up as a wrong result. Immediate lists hold such
 * launches until the next ordering point.
 * Copy engine (queue group ZS_ORDINAL_COPY): its lists take no kernels (ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE,
 * as a list of an ordinal may only be executed on a queue of that ordinal). In out-of-order mode an immediate list
 * of the copy engine holds every command until the next host wait or until a command waits on an event, since a
 * copy engine runs beside the compute engine: a kernel that reads what a copy writes without waiting for it reads
 * the old bytes. */
#include "zesim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

zs_kernel *zs_kernel_of(ze_kernel_handle_t h);

enum { OP_LAUNCH, OP_COPY, OP_FILL, OP_SIGNAL, OP_RESET_EVENT, OP_BARRIER };

typedef struct zs_cmd {
  int op;
  cl_kernel k; /* OP_LAUNCH: retained */
  zs_arg *args;
  uint32_t n_args;
  size_t global[3], local[3];
  void *dst;
  const void *src;
  size_t size;
  unsigned char pattern[128];
  size_t pattern_size;
  zs_event *event; /* signaled after the command (OP_SIGNAL: the event; OP_RESET_EVENT: the event reset) */
  int copy_engine; /* appended to a list of the copy-only queue group (counted) */
  int waits;       /* waits on events: held copy-engine commands run first */
} zs_cmd;

typedef struct zs_list {
  uint32_t magic;
  int immediate, synchronous;
  int reorder;  /* out-of-order mode and no in-order flag: launches between ordering points run reversed */
  uint32_t ordinal;
  int copy_only; /* of the copy-only queue group: no kernels */
  int deferred;  /* immediate copy-engine list in out-of-order mode: every command held until a host wait */
  zs_cmd *cmds; /* regular: the recording; immediate with reorder: launches held until the next ordering point */
  size_t n, cap;
} zs_list;

typedef struct zs_queue {
  uint32_t magic;
  int synchronous;
  uint32_t ordinal;
} zs_queue;

zesim_counters zs_count;

#define ZS_EXPORT __attribute__((visibility("default")))
ZS_EXPORT void zesimGetCounters(zesim_counters *out);
ZS_EXPORT void zesimGetCounters(zesim_counters *out) {
  if (!out) return;
  pthread_mutex_lock(&zs_lock);
  *out = zs_count;
  pthread_mutex_unlock(&zs_lock);
}

typedef struct zs_fence {
  uint32_t magic;
  int signaled, pending;
} zs_fence;

static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
/* Signals waiting for the next flush. */
static zs_event **g_pend_ev;
static size_t g_n_pend_ev, g_cap_pend_ev;
static zs_fence **g_pend_fence;
static size_t g_n_pend_fence, g_cap_pend_fence;
static int g_engine_dirty; /* kernels enqueued since the last clFinish */
/* Immediate lists holding launches (out-of-order mode), run at the next host wait at the latest. */
static struct zs_list **g_held;
static size_t g_n_held, g_cap_held;

static int push_ptr(void ***arr, size_t *n, size_t *cap, void *p) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 32;
    void **na = realloc(*arr, nc * sizeof *na);
    if (!na) return -1;
    *arr = na;
    *cap = nc;
  }
  (*arr)[(*n)++] = p;
  return 0;
}

static ze_result_t run_held(struct zs_list *l);

ze_result_t zs_flush(void) {
  ze_result_t r = ZE_RESULT_SUCCESS;
  while (g_n_held) { /* taken off before it runs: its copies flush again (and run the other held lists) */
    struct zs_list *l = g_held[0];
    memmove(g_held, g_held + 1, (g_n_held - 1) * sizeof *g_held);
    g_n_held--;
    ze_result_t h = run_held(l);
    if (r == ZE_RESULT_SUCCESS) r = h;
  }
  if (g_engine_dirty) {
    cl_int e = clFinish(zs_cl.queue);
    g_engine_dirty = 0;
    if (e != CL_SUCCESS) {
      zs_debug("clFinish failed (%d)", e);
      r = ZE_RESULT_ERROR_DEVICE_LOST;
    }
  }
  for (size_t i = 0; i < g_n_pend_ev; i++) {
    g_pend_ev[i]->signaled = 1;
    g_pend_ev[i]->pending = 0;
  }
  g_n_pend_ev = 0;
  for (size_t i = 0; i < g_n_pend_fence; i++) {
    g_pend_fence[i]->signaled = 1;
    g_pend_fence[i]->pending = 0;
  }
  g_n_pend_fence = 0;
  pthread_cond_broadcast(&g_cond);
  return r;
}

static ze_result_t signal_later(zs_event *ev) {
  if (!ev || ev->pending) return ZE_RESULT_SUCCESS;
  ev->pending = 1;
  if (push_ptr((void ***)&g_pend_ev, &g_n_pend_ev, &g_cap_pend_ev, ev)) {
    ev->pending = 0;
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  return ZE_RESULT_SUCCESS;
}

/* Runs one command on the engine (zs_lock held). */
static ze_result_t exec_cmd(const zs_cmd *c) {
  ze_result_t r = ZE_RESULT_SUCCESS;
  if (c->waits && g_n_held) { /* what it waits for may be held on a copy engine */
    r = zs_flush();
    if (r != ZE_RESULT_SUCCESS) return r;
  }
  switch (c->op) {
    case OP_LAUNCH: {
      cl_int e = zs_kernel_apply_args(c->k, c->args, c->n_args);
      if (e == CL_SUCCESS) e = clEnqueueNDRangeKernel(zs_cl.queue, c->k, 3, NULL, c->global, c->local, 0, NULL, NULL);
      if (e != CL_SUCCESS) {
        zs_debug("kernel launch failed (%d)", e);
        return ZE_RESULT_ERROR_UNKNOWN;
      }
      g_engine_dirty = 1;
      break;
    }
    case OP_COPY:
      r = zs_flush();
      if (c->size) memmove(c->dst, c->src, c->size);
      zs_count.copies++;
      if (c->copy_engine) {
        zs_count.copy_engine_copies++;
        zs_count.copy_engine_bytes += c->size;
      }
      break;
    case OP_FILL: {
      r = zs_flush();
      unsigned char *d = c->dst;
      if (c->pattern_size == 1) {
        memset(d, c->pattern[0], c->size);
      } else {
        for (size_t off = 0; off < c->size; off += c->pattern_size) {
          size_t n = c->size - off < c->pattern_size ? c->size - off : c->pattern_size;
          memcpy(d + off, c->pattern, n);
        }
      }
      break;
    }
    case OP_RESET_EVENT:
      r = zs_flush();
      c->event->signaled = 0;
      return r;
    case OP_SIGNAL:
    case OP_BARRIER:
    default:
      break;
  }
  if (r == ZE_RESULT_SUCCESS && c->event) r = signal_later(c->event);
  return r;
}

static void free_cmd(zs_cmd *c) {
  if (c->op == OP_LAUNCH) {
    clReleaseKernel(c->k);
    zs_args_free(c->args, c->n_args);
  }
}

static zs_list *list_of(ze_command_list_handle_t h) {
  zs_list *l = (zs_list *)h;
  return l && l->magic == ZS_MAGIC_LIST ? l : NULL;
}

static zs_event *ev_of(ze_event_handle_t h) {
  zs_event *e = (zs_event *)h;
  return e && e->magic == ZS_MAGIC_EVENT ? e : NULL;
}

/* Runs cmds[0, n): launches between ordering points reversed where reorder is set (zs_lock held). */
static ze_result_t exec_cmds(const zs_cmd *cmds, size_t n, int reorder) {
  ze_result_t r = ZE_RESULT_SUCCESS;
  for (size_t j = 0; j < n && r == ZE_RESULT_SUCCESS;) {
    size_t end = j;
    while (reorder && end < n && cmds[end].op == OP_LAUNCH) end++;
    if (end - j > 1) {
      for (size_t i = end; i-- > j && r == ZE_RESULT_SUCCESS;) r = exec_cmd(&cmds[i]);
      j = end;
    } else {
      r = exec_cmd(&cmds[j++]);
    }
  }
  return r;
}

/* An immediate list's held launches, run and released (zs_lock held). */
static ze_result_t run_held(zs_list *l) {
  ze_result_t r = exec_cmds(l->cmds, l->n, 1);
  for (size_t i = 0; i < l->n; i++) free_cmd(&l->cmds[i]);
  l->n = 0;
  return r;
}

static int push_cmd(zs_list *l, const zs_cmd *c) {
  if (l->n == l->cap) {
    size_t nc = l->cap ? l->cap * 2 : 16;
    zs_cmd *na = realloc(l->cmds, nc * sizeof *na);
    if (!na) return -1;
    l->cmds = na;
    l->cap = nc;
  }
  l->cmds[l->n++] = *c;
  return 0;
}

/* Immediate lists run the command now (holding launches in out-of-order mode); regular lists record it (taking
 * ownership of its resources). */
static ze_result_t submit(zs_list *l, zs_cmd *c) {
  ze_result_t r = ZE_RESULT_SUCCESS;
  c->copy_engine = l->copy_only;
  if (l->immediate) {
    pthread_mutex_lock(&zs_lock);
    zs_count.immediate_cmds++;
    if ((l->deferred || (l->reorder && c->op == OP_LAUNCH)) && !l->synchronous) {
      int first = l->n == 0; /* not yet in g_held */
      if (push_cmd(l, c)) r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
      else if (first && push_ptr((void ***)&g_held, &g_n_held, &g_cap_held, l)) {
        l->n--;
        r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
      }
      if (r != ZE_RESULT_SUCCESS) free_cmd(c);
      pthread_mutex_unlock(&zs_lock);
      return r;
    }
    if (l->n) { /* an ordering point: the held launches first (off the held set first: they may flush) */
      for (size_t i = 0; i < g_n_held; i++)
        if (g_held[i] == l) {
          memmove(g_held + i, g_held + i + 1, (g_n_held - i - 1) * sizeof *g_held);
          g_n_held--;
          break;
        }
      r = run_held(l);
    }
    if (r == ZE_RESULT_SUCCESS) r = exec_cmd(c);
    if (r == ZE_RESULT_SUCCESS && l->synchronous) r = zs_flush();
    pthread_mutex_unlock(&zs_lock);
    free_cmd(c);
    return r;
  }
  if (l->n == l->cap) {
    size_t nc = l->cap ? l->cap * 2 : 16;
    zs_cmd *na = realloc(l->cmds, nc * sizeof *na);
    if (!na) {
      free_cmd(c);
      return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    l->cmds = na;
    l->cap = nc;
  }
  l->cmds[l->n++] = *c;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t check_waits(uint32_t n, ze_event_handle_t *w) {
  if (n && !w) return ZE_RESULT_ERROR_INVALID_SIZE;
  for (uint32_t i = 0; i < n; i++)
    if (!ev_of(w[i])) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return ZE_RESULT_SUCCESS;
}

/* ------------------------------------------------------------------ command lists */
static ze_result_t new_list(int immediate, int synchronous, int in_order, uint32_t ordinal,
                            ze_command_list_handle_t *ph) {
  if (!ph) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (ordinal >= zs_queue_groups()) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  zs_list *l = calloc(1, sizeof *l);
  if (!l) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  l->magic = ZS_MAGIC_LIST;
  l->immediate = immediate;
  l->synchronous = synchronous;
  l->reorder = zs_drv.out_of_order && !(in_order && zs_drv.in_order_api);
  l->ordinal = ordinal;
  l->copy_only = ordinal == ZS_ORDINAL_COPY;
  l->deferred = immediate && l->copy_only && zs_drv.out_of_order;
  *ph = (ze_command_list_handle_t)l;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeCommandListCreate(ze_context_handle_t hc, ze_device_handle_t hd, const ze_command_list_desc_t *desc,
                                   ze_command_list_handle_t *ph) {
  if (!hc || !zs_dev(hd)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  return new_list(0, 0, (desc->flags & ZS_COMMAND_LIST_FLAG_IN_ORDER) != 0, desc->commandQueueGroupOrdinal, ph);
}

ze_result_t zs_zeCommandListCreateImmediate(ze_context_handle_t hc, ze_device_handle_t hd,
                                            const ze_command_queue_desc_t *desc, ze_command_list_handle_t *ph) {
  if (!hc || !zs_dev(hd)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  return new_list(1, desc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS, (desc->flags & ZS_COMMAND_QUEUE_FLAG_IN_ORDER) != 0,
                  desc->ordinal, ph);
}

ze_result_t zs_zeCommandListReset(ze_command_list_handle_t h) {
  zs_list *l = list_of(h);
  if (!l) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  pthread_mutex_lock(&zs_lock);
  zs_flush(); /* runs an immediate list's held launches too */
  pthread_mutex_unlock(&zs_lock);
  for (size_t i = 0; i < l->n; i++) free_cmd(&l->cmds[i]);
  l->n = 0;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeCommandListDestroy(ze_command_list_handle_t h) {
  zs_list *l = list_of(h);
  if (!l) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  zs_zeCommandListReset(h);
  l->magic = 0;
  free(l->cmds);
  free(l);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeCommandListClose(ze_command_list_handle_t h) {
  return list_of(h) ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

static ze_result_t append_launch(ze_command_list_handle_t hl, ze_kernel_handle_t hk, const ze_group_count_t *gc,
                                 ze_event_handle_t sig, uint32_t nw, ze_event_handle_t *w) {
  zs_list *l = list_of(hl);
  zs_kernel *k = zs_kernel_of(hk);
  if (!l || !k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!gc) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (l->copy_only) {
    zs_debug("kernel %s appended to a list of the copy-only queue group", k->name);
    return ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE;
  }
  if (sig && !ev_of(sig)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  ze_result_t r = check_waits(nw, w);
  if (r != ZE_RESULT_SUCCESS) return r;
  zs_cmd c;
  memset(&c, 0, sizeof c);
  c.op = OP_LAUNCH;
  c.event = ev_of(sig);
  c.waits = nw > 0;
  c.local[0] = k->gx;
  c.local[1] = k->gy;
  c.local[2] = k->gz;
  c.global[0] = (size_t)gc->groupCountX * k->gx;
  c.global[1] = (size_t)gc->groupCountY * k->gy;
  c.global[2] = (size_t)gc->groupCountZ * k->gz;
  if (!c.global[0] || !c.global[1] || !c.global[2]) { /* nothing to run: only the signal */
    c.op = OP_SIGNAL;
    return submit(l, &c);
  }
  pthread_mutex_lock(&zs_lock);
  for (uint32_t i = 0; i < k->n_args; i++) {
    if (k->args[i].kind == ZS_ARG_UNSET) {
      pthread_mutex_unlock(&zs_lock);
      zs_debug("kernel %s: argument %u not set", k->name, i);
      return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    /* Intel's compiler addresses buffers statefully (32-bit offsets) unless the module was built with
     * -ze-opt-greater-than-4GB-buffer-required, so a kernel given a buffer of more than 4 GiB reads the wrong
     * bytes, silently. zesim refuses such a launch instead, with maxMemAllocSize standing in for 4 GiB: only
     * relaxed-limits allocations exceed it. */
    void *p = NULL;
    const zs_alloc *a = NULL;
    if (k->args[i].kind == ZS_ARG_PTR) memcpy(&p, k->args[i].value, sizeof p);
    if (p && !k->module->large_buffers && (a = zs_alloc_find(p)) && a->device && a->size > a->device->max_alloc) {
      pthread_mutex_unlock(&zs_lock);
      fprintf(stderr, "zesim: kernel %s: argument %u is a buffer of %zu bytes, over maxMemAllocSize (%llu), and "
              "its module was built without -ze-opt-greater-than-4GB-buffer-required\n", k->name, i, a->size,
              (unsigned long long)a->device->max_alloc);
      return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
  }
  c.n_args = k->n_args;
  c.args = k->n_args ? calloc(k->n_args, sizeof *c.args) : NULL;
  if ((k->n_args && !c.args) || zs_args_copy(c.args, k->args, k->n_args)) {
    pthread_mutex_unlock(&zs_lock);
    zs_args_free(c.args, k->n_args);
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  pthread_mutex_unlock(&zs_lock);
  if (nw && l->reorder) { /* waiting on events orders the launch after the work that signals them */
    zs_cmd b;
    memset(&b, 0, sizeof b);
    b.op = OP_BARRIER;
    r = submit(l, &b);
    if (r != ZE_RESULT_SUCCESS) {
      zs_args_free(c.args, c.n_args);
      return r;
    }
  }
  clRetainKernel(k->k);
  c.k = k->k;
  return submit(l, &c);
}

ze_result_t zs_zeCommandListAppendLaunchKernel(ze_command_list_handle_t hl, ze_kernel_handle_t hk,
                                               const ze_group_count_t *gc, ze_event_handle_t sig, uint32_t nw,
                                               ze_event_handle_t *w) {
  return append_launch(hl, hk, gc, sig, nw, w);
}

ze_result_t zs_zeCommandListAppendLaunchCooperativeKernel(ze_command_list_handle_t hl, ze_kernel_handle_t hk,
                                                          const ze_group_count_t *gc, ze_event_handle_t sig,
                                                          uint32_t nw, ze_event_handle_t *w) {
  return append_launch(hl, hk, gc, sig, nw, w);
}

ze_result_t zs_zeCommandListAppendMemoryCopy(ze_command_list_handle_t hl, void *dst, const void *src, size_t size,
                                             ze_event_handle_t sig, uint32_t nw, ze_event_handle_t *w) {
  zs_list *l = list_of(hl);
  if (!l || (sig && !ev_of(sig))) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (size && (!dst || !src)) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  ze_result_t r = check_waits(nw, w);
  if (r != ZE_RESULT_SUCCESS) return r;
  zs_cmd c;
  memset(&c, 0, sizeof c);
  c.op = OP_COPY;
  c.dst = dst;
  c.src = src;
  c.size = size;
  c.event = ev_of(sig);
  c.waits = nw > 0;
  return submit(l, &c);
}

ze_result_t zs_zeCommandListAppendMemoryFill(ze_command_list_handle_t hl, void *ptr, const void *pattern,
                                             size_t pattern_size, size_t size, ze_event_handle_t sig, uint32_t nw,
                                             ze_event_handle_t *w) {
  zs_list *l = list_of(hl);
  if (!l || (sig && !ev_of(sig))) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!ptr || !pattern) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (pattern_size == 0 || pattern_size > (l->copy_only ? ZS_COPY_FILL_PATTERN_MAX : 128) ||
      (pattern_size & (pattern_size - 1)))
    return ZE_RESULT_ERROR_INVALID_SIZE;
  ze_result_t r = check_waits(nw, w);
  if (r != ZE_RESULT_SUCCESS) return r;
  zs_cmd c;
  memset(&c, 0, sizeof c);
  c.op = OP_FILL;
  c.dst = ptr;
  c.size = size;
  c.pattern_size = pattern_size;
  memcpy(c.pattern, pattern, pattern_size);
  c.event = ev_of(sig);
  c.waits = nw > 0;
  return submit(l, &c);
}

ze_result_t zs_zeCommandListAppendBarrier(ze_command_list_handle_t hl, ze_event_handle_t sig, uint32_t nw,
                                          ze_event_handle_t *w) {
  zs_list *l = list_of(hl);
  if (!l || (sig && !ev_of(sig))) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  ze_result_t r = check_waits(nw, w);
  if (r != ZE_RESULT_SUCCESS) return r;
  /* The single in-order engine queue is a barrier already, except between the launches a reordering list holds */
  if (!sig && !l->reorder) return ZE_RESULT_SUCCESS;
  zs_cmd c;
  memset(&c, 0, sizeof c);
  c.op = sig ? OP_SIGNAL : OP_BARRIER;
  c.event = ev_of(sig);
  c.waits = nw > 0;
  return submit(l, &c);
}

ze_result_t zs_zeCommandListAppendMemoryRangesBarrier(ze_command_list_handle_t hl, uint32_t nr, const size_t *sizes,
                                                      const void **ranges, ze_event_handle_t sig, uint32_t nw,
                                                      ze_event_handle_t *w) {
  (void)nr;
  (void)sizes;
  (void)ranges;
  return zs_zeCommandListAppendBarrier(hl, sig, nw, w);
}

ze_result_t zs_zeCommandListAppendSignalEvent(ze_command_list_handle_t hl, ze_event_handle_t he) {
  zs_list *l = list_of(hl);
  if (!l || !ev_of(he)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  zs_cmd c;
  memset(&c, 0, sizeof c);
  c.op = OP_SIGNAL;
  c.event = ev_of(he);
  return submit(l, &c);
}

ze_result_t zs_zeCommandListAppendWaitOnEvents(ze_command_list_handle_t hl, uint32_t n, ze_event_handle_t *w) {
  if (!list_of(hl)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return check_waits(n, w); /* in-order engine: everything earlier has completed when later work runs */
}

ze_result_t zs_zeCommandListAppendEventReset(ze_command_list_handle_t hl, ze_event_handle_t he) {
  zs_list *l = list_of(hl);
  if (!l || !ev_of(he)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  zs_cmd c;
  memset(&c, 0, sizeof c);
  c.op = OP_RESET_EVENT;
  c.event = ev_of(he);
  return submit(l, &c);
}

ze_result_t zs_zeCommandListAppendMemoryPrefetch(ze_command_list_handle_t hl, const void *p, size_t n) {
  (void)p;
  (void)n;
  return list_of(hl) ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

ze_result_t zs_zeCommandListAppendMemAdvise(ze_command_list_handle_t hl, ze_device_handle_t hd, const void *p, size_t n,
                                            ze_memory_advice_t a) {
  (void)p;
  (void)n;
  (void)a;
  return list_of(hl) && zs_dev(hd) ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

/* ------------------------------------------------------------------ queues */
static zs_queue *queue_of(ze_command_queue_handle_t h) {
  zs_queue *q = (zs_queue *)h;
  return q && q->magic == ZS_MAGIC_QUEUE ? q : NULL;
}

static zs_fence *fence_of(ze_fence_handle_t h) {
  zs_fence *f = (zs_fence *)h;
  return f && f->magic == ZS_MAGIC_FENCE ? f : NULL;
}

ze_result_t zs_zeCommandQueueCreate(ze_context_handle_t hc, ze_device_handle_t hd, const ze_command_queue_desc_t *desc,
                                    ze_command_queue_handle_t *ph) {
  if (!hc || !zs_dev(hd)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !ph) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->ordinal >= zs_queue_groups()) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  zs_queue *q = calloc(1, sizeof *q);
  if (!q) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  q->magic = ZS_MAGIC_QUEUE;
  q->synchronous = desc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
  q->ordinal = desc->ordinal;
  *ph = (ze_command_queue_handle_t)q;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeCommandQueueDestroy(ze_command_queue_handle_t h) {
  zs_queue *q = queue_of(h);
  if (!q) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  pthread_mutex_lock(&zs_lock);
  zs_flush();
  pthread_mutex_unlock(&zs_lock);
  q->magic = 0;
  free(q);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeCommandQueueExecuteCommandLists(ze_command_queue_handle_t hq, uint32_t n,
                                                 ze_command_list_handle_t *lists, ze_fence_handle_t hf) {
  zs_queue *q = queue_of(hq);
  if (!q || (hf && !fence_of(hf))) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (n == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  if (!lists) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  for (uint32_t i = 0; i < n; i++) {
    zs_list *l = list_of(lists[i]);
    if (!l) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (l->immediate) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (l->ordinal != q->ordinal) return ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE;
  }
  ze_result_t r = ZE_RESULT_SUCCESS;
  pthread_mutex_lock(&zs_lock);
  zs_count.executes++;
  for (uint32_t i = 0; i < n && r == ZE_RESULT_SUCCESS; i++) {
    zs_list *l = list_of(lists[i]);
    r = exec_cmds(l->cmds, l->n, l->reorder);
  }
  zs_fence *f = fence_of(hf);
  if (r == ZE_RESULT_SUCCESS && f && !f->pending) {
    f->signaled = 0;
    f->pending = 1;
    if (push_ptr((void ***)&g_pend_fence, &g_n_pend_fence, &g_cap_pend_fence, f)) {
      f->pending = 0;
      r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
  }
  if (r == ZE_RESULT_SUCCESS && q->synchronous) r = zs_flush();
  pthread_mutex_unlock(&zs_lock);
  return r;
}

ze_result_t zs_zeCommandQueueSynchronize(ze_command_queue_handle_t hq, uint64_t timeout) {
  (void)timeout;
  if (!queue_of(hq)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  pthread_mutex_lock(&zs_lock);
  zs_count.host_syncs++;
  ze_result_t r = zs_flush();
  pthread_mutex_unlock(&zs_lock);
  return r;
}

/* ------------------------------------------------------------------ waiting */
/* Waits (zs_lock held) until *flag is set, up to timeout ns (UINT64_MAX: forever). */
static ze_result_t wait_flag(const int *flag, int pending, uint64_t timeout) {
  if (!*flag && (pending || g_n_held)) { /* held launches may be what signals it */
    ze_result_t r = zs_flush();
    if (r != ZE_RESULT_SUCCESS) return r;
  }
  if (*flag) return ZE_RESULT_SUCCESS;
  if (timeout == 0) return ZE_RESULT_NOT_READY;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  if (timeout != UINT64_MAX) {
    until.tv_sec += (time_t)(timeout / 1000000000ull);
    until.tv_nsec += (long)(timeout % 1000000000ull);
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
  }
  while (!*flag) {
    if (timeout == UINT64_MAX) {
      pthread_cond_wait(&g_cond, &zs_lock);
    } else if (pthread_cond_timedwait(&g_cond, &zs_lock, &until) == ETIMEDOUT) {
      return *flag ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
    }
  }
  return ZE_RESULT_SUCCESS;
}

/* ------------------------------------------------------------------ fences */
ze_result_t zs_zeFenceCreate(ze_command_queue_handle_t hq, const ze_fence_desc_t *desc, ze_fence_handle_t *ph) {
  if (!queue_of(hq)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !ph) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  zs_fence *f = calloc(1, sizeof *f);
  if (!f) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  f->magic = ZS_MAGIC_FENCE;
  f->signaled = (desc->flags & ZE_FENCE_FLAG_SIGNALED) != 0;
  *ph = (ze_fence_handle_t)f;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeFenceDestroy(ze_fence_handle_t h) {
  zs_fence *f = fence_of(h);
  if (!f) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  pthread_mutex_lock(&zs_lock);
  if (f->pending) zs_flush();
  pthread_mutex_unlock(&zs_lock);
  f->magic = 0;
  free(f);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeFenceHostSynchronize(ze_fence_handle_t h, uint64_t timeout) {
  zs_fence *f = fence_of(h);
  if (!f) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  pthread_mutex_lock(&zs_lock);
  zs_count.host_syncs++;
  ze_result_t r = wait_flag(&f->signaled, f->pending, timeout);
  pthread_mutex_unlock(&zs_lock);
  return r;
}

ze_result_t zs_zeFenceQueryStatus(ze_fence_handle_t h) { return zs_zeFenceHostSynchronize(h, 0); }

ze_result_t zs_zeFenceReset(ze_fence_handle_t h) {
  zs_fence *f = fence_of(h);
  if (!f) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  pthread_mutex_lock(&zs_lock);
  if (f->pending) zs_flush();
  f->signaled = 0;
  pthread_mutex_unlock(&zs_lock);
  return ZE_RESULT_SUCCESS;
}

/* ------------------------------------------------------------------ events */
static zs_event_pool *pool_of(ze_event_pool_handle_t h) {
  zs_event_pool *p = (zs_event_pool *)h;
  return p && p->magic == ZS_MAGIC_POOL ? p : NULL;
}

ze_result_t zs_zeEventPoolCreate(ze_context_handle_t hc, const ze_event_pool_desc_t *desc, uint32_t nd,
                                 ze_device_handle_t *devs, ze_event_pool_handle_t *ph) {
  if (!hc) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !ph) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  for (uint32_t i = 0; i < nd; i++)
    if (!devs || !zs_dev(devs[i])) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (desc->count == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  zs_event_pool *p = calloc(1, sizeof *p);
  zs_event *evs = calloc(desc->count, sizeof *evs);
  if (!p || !evs) {
    free(p);
    free(evs);
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  p->magic = ZS_MAGIC_POOL;
  p->count = desc->count;
  p->events = evs;
  *ph = (ze_event_pool_handle_t)p;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeEventPoolDestroy(ze_event_pool_handle_t h) {
  zs_event_pool *p = pool_of(h);
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  pthread_mutex_lock(&zs_lock);
  zs_flush(); /* no pending signal may point into the pool */
  pthread_mutex_unlock(&zs_lock);
  p->magic = 0;
  free(p->events);
  free(p);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeEventCreate(ze_event_pool_handle_t hp, const ze_event_desc_t *desc, ze_event_handle_t *ph) {
  zs_event_pool *p = pool_of(hp);
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !ph) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->index >= p->count) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  zs_event *e = &p->events[desc->index];
  if (e->magic == ZS_MAGIC_EVENT) return ZE_RESULT_ERROR_INVALID_ARGUMENT; /* index in use */
  memset(e, 0, sizeof *e);
  e->magic = ZS_MAGIC_EVENT;
  e->pool = p;
  *ph = (ze_event_handle_t)e;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeEventDestroy(ze_event_handle_t h) {
  zs_event *e = ev_of(h);
  if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  pthread_mutex_lock(&zs_lock);
  if (e->pending) zs_flush();
  e->magic = 0;
  pthread_mutex_unlock(&zs_lock);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeEventHostSynchronize(ze_event_handle_t h, uint64_t timeout) {
  zs_event *e = ev_of(h);
  if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  pthread_mutex_lock(&zs_lock);
  zs_count.host_syncs++;
  ze_result_t r = wait_flag(&e->signaled, e->pending, timeout);
  pthread_mutex_unlock(&zs_lock);
  return r;
}

ze_result_t zs_zeEventQueryStatus(ze_event_handle_t h) { return zs_zeEventHostSynchronize(h, 0); }

ze_result_t zs_zeEventHostSignal(ze_event_handle_t h) {
  zs_event *e = ev_of(h);
  if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  pthread_mutex_lock(&zs_lock);
  e->signaled = 1;
  pthread_cond_broadcast(&g_cond);
  pthread_mutex_unlock(&zs_lock);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeEventHostReset(ze_event_handle_t h) {
  zs_event *e = ev_of(h);
  if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  pthread_mutex_lock(&zs_lock);
  if (e->pending) zs_flush();
  e->signaled = 0;
  pthread_mutex_unlock(&zs_lock);
  return ZE_RESULT_SUCCESS;
}
