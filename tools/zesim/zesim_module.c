/* zesim modules and kernels: SPIR-V -> LLVM bitcode with `llvm-spirv-15 -r` (cached by SPIR-V hash) ->
 * clCreateProgramWithBinary + clBuildProgram on the OpenCL engine. Kernel arguments are recorded per kernel
 * and snapshotted at every append, so a regular command list replays the arguments it was recorded with. */
#include "zesim.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

typedef struct zs_build_log {
  uint32_t magic;
  char *text;
} zs_build_log;

static ze_result_t make_log(ze_module_build_log_handle_t *ph, const char *text) {
  if (!ph) return ZE_RESULT_SUCCESS;
  *ph = NULL;
  zs_build_log *l = calloc(1, sizeof *l);
  if (!l) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  l->magic = ZS_MAGIC_LOG;
  l->text = strdup(text ? text : "");
  if (!l->text) {
    free(l);
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  *ph = (ze_module_build_log_handle_t)l;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeModuleBuildLogDestroy(ze_module_build_log_handle_t h) {
  zs_build_log *l = (zs_build_log *)h;
  if (!l || l->magic != ZS_MAGIC_LOG) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  l->magic = 0;
  free(l->text);
  free(l);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeModuleBuildLogGetString(ze_module_build_log_handle_t h, size_t *pSize, char *pLog) {
  zs_build_log *l = (zs_build_log *)h;
  if (!l || l->magic != ZS_MAGIC_LOG) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!pSize) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  size_t need = strlen(l->text) + 1;
  if (*pSize == 0 || !pLog) {
    *pSize = need;
    return ZE_RESULT_SUCCESS;
  }
  size_t n = *pSize < need ? *pSize : need;
  memcpy(pLog, l->text, n - 1);
  pLog[n - 1] = 0;
  *pSize = n;
  return ZE_RESULT_SUCCESS;
}

static uint64_t fnv1a(const unsigned char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

static int write_all(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(data, 1, n, f);
  return (fclose(f) == 0 && w == n) ? 0 : -1;
}

static unsigned char *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char *buf = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long sz = ftell(f);
    if (sz > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)sz))) {
      if (fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
        free(buf);
        buf = NULL;
      } else {
        *n = (size_t)sz;
      }
    }
  }
  fclose(f);
  return buf;
}

/* Runs `llvm-spirv-15 -r -o out in`; its stderr goes to errpath. Returns the exit status (-1: not started). */
static int run_llvm_spirv(const char *in, const char *out, const char *errpath) {
  const char *tool = getenv("ZESIM_LLVM_SPIRV");
  if (!tool || !*tool) tool = "llvm-spirv-15";
  char *argv[] = {(char *)tool, "-r", "-o", (char *)out, (char *)in, NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = posix_spawnp(&pid, tool, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The bitcode for a SPIR-V blob, from the cache or converted now. On failure *log says why (malloc'd). */
static unsigned char *spirv_to_bitcode(const unsigned char *spv, size_t n, size_t *bc_len, char **log) {
  const char *dir = zs_cache_dir();
  char bc[1200], tmpin[1200], tmpout[1200], errp[1200];
  uint64_t h = fnv1a(spv, n);
  snprintf(bc, sizeof bc, "%s/%016llx-%zu.bc", dir, (unsigned long long)h, n);
  unsigned char *data = read_all(bc, bc_len);
  if (data) return data;
  /* Unique temporaries, then an atomic rename: concurrent test processes may convert the same module. */
  snprintf(tmpin, sizeof tmpin, "%s/tmp-%d-%016llx.spv", dir, (int)getpid(), (unsigned long long)h);
  snprintf(tmpout, sizeof tmpout, "%s/tmp-%d-%016llx.bc", dir, (int)getpid(), (unsigned long long)h);
  snprintf(errp, sizeof errp, "%s/tmp-%d-%016llx.log", dir, (int)getpid(), (unsigned long long)h);
  if (write_all(tmpin, spv, n)) {
    *log = strdup("zesim: cannot write the SPIR-V to the cache folder (ZESIM_CACHE_DIR)");
    return NULL;
  }
  int rc = run_llvm_spirv(tmpin, tmpout, errp);
  unlink(tmpin);
  size_t en = 0;
  unsigned char *err = read_all(errp, &en);
  unlink(errp);
  if (rc != 0) {
    char msg[256];
    snprintf(msg, sizeof msg, rc < 0 ? "zesim: cannot run llvm-spirv-15 (install llvm-spirv-15 or set ZESIM_LLVM_SPIRV)\n"
                                     : "zesim: llvm-spirv-15 -r failed (exit %d):\n", rc);
    size_t ml = strlen(msg);
    *log = malloc(ml + en + 1);
    if (*log) {
      memcpy(*log, msg, ml);
      if (err) memcpy(*log + ml, err, en);
      (*log)[ml + en] = 0;
    }
    free(err);
    unlink(tmpout);
    return NULL;
  }
  free(err);
  rename(tmpout, bc);
  data = read_all(bc, bc_len);
  if (!data) *log = strdup("zesim: converted bitcode vanished from the cache folder");
  return data;
}

/* Built programs of the SPIR-V engine (Intel's runtime) are kept in the cache folder, keyed by the SPIR-V, the
 * build options and the engine (device name, driver and device versions): that runtime compiles a module for
 * minutes on a loaded 2-core machine, and every zesim device of a process and every test process would compile
 * the same modules again. A build error is kept too (its log), as a module that fails (the DPAS builtins) fails
 * the same way every time. Files are written under a unique name, then renamed. */
static void prog_cache_path(const unsigned char *spv, size_t n, const char *opts, char *out, size_t cap) {
  char id[1024] = "", drv[256] = "", ver[256] = "";
  clGetDeviceInfo(zs_cl.device, CL_DRIVER_VERSION, sizeof drv - 1, drv, NULL);
  clGetDeviceInfo(zs_cl.device, CL_DEVICE_VERSION, sizeof ver - 1, ver, NULL);
  snprintf(id, sizeof id, "%s|%s|%s|%s", opts, zs_cl.name, drv, ver);
  snprintf(out, cap, "%s/prog-%016llx-%016llx-%zu.bin", zs_cache_dir(), (unsigned long long)fnv1a(spv, n),
           (unsigned long long)fnv1a((const unsigned char *)id, strlen(id)), n);
}

static void prog_cache_put(const char *path, const void *head, size_t hn, const void *data, size_t n) {
  char tmp[1300];
  snprintf(tmp, sizeof tmp, "%s.tmp-%d", path, (int)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) return;
  int ok = fwrite(head, 1, hn, f) == hn && fwrite(data, 1, n, f) == n;
  if (fclose(f) == 0 && ok) rename(tmp, path);
  else unlink(tmp);
}

static void prog_cache_store(const char *path, cl_program prog) {
  size_t bn = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof bn, &bn, NULL) != CL_SUCCESS || !bn) return;
  unsigned char *bin = malloc(bn);
  unsigned char *bins[1] = {bin};
  if (bin && clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS)
    prog_cache_put(path, "BIN\n", 4, bin, bn);
  free(bin);
}

/* Keeps the standard OpenCL options a Level Zero program may pass; drops Intel-only ones (-ze-*, -cl-intel-*). */
static void build_options(const char *flags, char *out, size_t cap) {
  snprintf(out, cap, "-cl-kernel-arg-info");
  if (!flags) return;
  char *copy = strdup(flags);
  if (!copy) return;
  char *save = NULL;
  for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
    if (strncmp(t, "-cl-", 4) || !strncmp(t, "-cl-intel", 9) || !strcmp(t, "-cl-kernel-arg-info")) continue;
    size_t l = strlen(out);
    if (l + strlen(t) + 2 < cap) snprintf(out + l, cap - l, " %s", t);
  }
  free(copy);
}

/* flag is one of the space-separated words of flags. */
static int has_flag(const char *flags, const char *flag) {
  size_t n = strlen(flag);
  for (const char *p = flags; p && (p = strstr(p, flag)); p += n)
    if ((p == flags || p[-1] == ' ' || p[-1] == '\t') && (p[n] == 0 || p[n] == ' ' || p[n] == '\t')) return 1;
  return 0;
}

ze_result_t zs_zeModuleCreate(ze_context_handle_t hc, ze_device_handle_t hd, const ze_module_desc_t *desc,
                              ze_module_handle_t *ph, ze_module_build_log_handle_t *plog) {
  if (!hc || !zs_dev(hd)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !ph || !desc->pInputModule) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (plog) *plog = NULL;
  if (desc->format != ZE_MODULE_FORMAT_IL_SPIRV) {
    make_log(plog, "zesim: only ZE_MODULE_FORMAT_IL_SPIRV modules are supported");
    return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
  }
  if (desc->pConstants && desc->pConstants->numConstants) {
    make_log(plog, "zesim: specialization constants are not supported");
    return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
  }
  const unsigned char *spv = desc->pInputModule;
  char why[256];
  if (zs_spirv_check(spv, desc->inputSize, why, sizeof why)) {
    make_log(plog, why);
    return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
  }
  cl_int err = CL_SUCCESS;
  cl_program prog = NULL;
  char opts[1024], cpath[1300] = "";
  build_options(desc->pBuildFlags, opts, sizeof opts);
  int cached = 0;
  if (zs_cl.spirv_il) {
    prog_cache_path(spv, desc->inputSize, opts, cpath, sizeof cpath);
    size_t cn = 0;
    unsigned char *c = read_all(cpath, &cn);
    if (c && cn > 5 && !memcmp(c, "FAIL\n", 5)) { /* the kept build error */
      char *msg = malloc(cn - 5 + 1);
      if (msg) memcpy(msg, c + 5, cn - 5), msg[cn - 5] = 0;
      make_log(plog, msg ? msg : "zesim: clBuildProgram failed");
      free(msg), free(c);
      return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
    if (c && cn > 4 && !memcmp(c, "BIN\n", 4)) {
      const size_t bn = cn - 4;
      const unsigned char *bins[1] = {c + 4};
      cl_int st;
      prog = clCreateProgramWithBinary(zs_cl.ctx, 1, &zs_cl.device, &bn, bins, &st, &err);
      if (prog && clBuildProgram(prog, 1, &zs_cl.device, opts, NULL, NULL) == CL_SUCCESS) cached = 1;
      else if (prog) clReleaseProgram(prog), prog = NULL;
    }
    free(c);
    if (!prog) prog = clCreateProgramWithIL(zs_cl.ctx, spv, desc->inputSize, &err);
  } else {
    char *log = NULL;
    size_t bc_len = 0;
    unsigned char *bc = spirv_to_bitcode(spv, desc->inputSize, &bc_len, &log);
    if (!bc) {
      make_log(plog, log ? log : "zesim: SPIR-V conversion failed");
      free(log);
      return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
    cl_int st;
    const unsigned char *bins[1] = {bc};
    prog = clCreateProgramWithBinary(zs_cl.ctx, 1, &zs_cl.device, &bc_len, bins, &st, &err);
    free(bc);
  }
  if (!prog) {
    char msg[128];
    snprintf(msg, sizeof msg, "zesim: creating the OpenCL program failed (%d)", err);
    make_log(plog, msg);
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  }
  err = cached ? CL_SUCCESS : clBuildProgram(prog, 1, &zs_cl.device, opts, NULL, NULL);
  size_t ln = 0;
  clGetProgramBuildInfo(prog, zs_cl.device, CL_PROGRAM_BUILD_LOG, 0, NULL, &ln);
  char *blog = calloc(1, ln + 1);
  if (blog && ln) clGetProgramBuildInfo(prog, zs_cl.device, CL_PROGRAM_BUILD_LOG, ln, blog, NULL);
  if (err != CL_SUCCESS) {
    char *msg = malloc(ln + 128);
    if (msg) snprintf(msg, ln + 128, "zesim: clBuildProgram failed (%d):\n%s", err, blog ? blog : "");
    if (msg && *cpath && err == CL_BUILD_PROGRAM_FAILURE) prog_cache_put(cpath, "FAIL\n", 5, msg, strlen(msg));
    make_log(plog, msg ? msg : "zesim: clBuildProgram failed");
    free(msg);
    free(blog);
    clReleaseProgram(prog);
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  }
  if (*cpath && !cached) prog_cache_store(cpath, prog);
  ze_result_t r = make_log(plog, blog);
  free(blog);
  zs_module *m = calloc(1, sizeof *m);
  if (r != ZE_RESULT_SUCCESS || !m) {
    free(m);
    if (plog && *plog) zs_zeModuleBuildLogDestroy(*plog);
    clReleaseProgram(prog);
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  m->spirv = malloc(desc->inputSize);
  if (!m->spirv) {
    free(m);
    if (plog && *plog) zs_zeModuleBuildLogDestroy(*plog);
    clReleaseProgram(prog);
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  memcpy(m->spirv, spv, desc->inputSize);
  m->spirv_size = desc->inputSize;
  m->magic = ZS_MAGIC_MODULE;
  m->prog = prog;
  m->large_buffers = has_flag(desc->pBuildFlags, "-ze-opt-greater-than-4GB-buffer-required");
  *ph = (ze_module_handle_t)m;
  return ZE_RESULT_SUCCESS;
}

static zs_module *mod_of(ze_module_handle_t h) {
  zs_module *m = (zs_module *)h;
  return m && m->magic == ZS_MAGIC_MODULE ? m : NULL;
}

ze_result_t zs_zeModuleDestroy(ze_module_handle_t h) {
  zs_module *m = mod_of(h);
  if (!m) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  m->magic = 0;
  clReleaseProgram(m->prog);
  free(m->spirv);
  free(m->names);
  free(m->name_ptrs);
  free(m);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeModuleGetKernelNames(ze_module_handle_t h, uint32_t *pCount, const char **pNames) {
  zs_module *m = mod_of(h);
  if (!m) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!pCount) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  pthread_mutex_lock(&zs_lock);
  if (!m->names) { /* "a;b;c" from OpenCL, split in place once; the pointers live as long as the module */
    size_t len = 0;
    clGetProgramInfo(m->prog, CL_PROGRAM_KERNEL_NAMES, 0, NULL, &len);
    char *buf = calloc(1, len + 1);
    const char **ptrs = calloc(len / 2 + 2, sizeof *ptrs);
    if (!buf || !ptrs || (len && clGetProgramInfo(m->prog, CL_PROGRAM_KERNEL_NAMES, len, buf, NULL) != CL_SUCCESS)) {
      free(buf);
      free(ptrs);
      pthread_mutex_unlock(&zs_lock);
      return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    uint32_t n = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ";", &save); t; t = strtok_r(NULL, ";", &save)) ptrs[n++] = t;
    m->names = buf;
    m->name_ptrs = ptrs;
    m->n_names = n;
  }
  pthread_mutex_unlock(&zs_lock);
  if (*pCount == 0 || !pNames) {
    *pCount = m->n_names;
    return ZE_RESULT_SUCCESS;
  }
  if (*pCount > m->n_names) *pCount = m->n_names;
  for (uint32_t i = 0; i < *pCount; i++) pNames[i] = m->name_ptrs[i];
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeModuleGetProperties(ze_module_handle_t h, ze_module_properties_t *p) {
  if (!mod_of(h)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  p->flags = 0;
  return ZE_RESULT_SUCCESS;
}

/* ------------------------------------------------------------------ kernels */
static zs_kernel *ker_of(ze_kernel_handle_t h) {
  zs_kernel *k = (zs_kernel *)h;
  return k && k->magic == ZS_MAGIC_KERNEL ? k : NULL;
}

ze_result_t zs_zeKernelCreate(ze_module_handle_t hm, const ze_kernel_desc_t *desc, ze_kernel_handle_t *ph) {
  zs_module *m = mod_of(hm);
  if (!m) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !desc->pKernelName || !ph) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  cl_int err;
  cl_kernel ck = clCreateKernel(m->prog, desc->pKernelName, &err);
  if (!ck) return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
  zs_kernel *k = calloc(1, sizeof *k);
  cl_uint na = 0;
  clGetKernelInfo(ck, CL_KERNEL_NUM_ARGS, sizeof na, &na, NULL);
  if (k && na) {
    k->quals = calloc(na, sizeof *k->quals);
    k->args = calloc(na, sizeof *k->args);
  }
  if (!k || (na && (!k->quals || !k->args))) {
    if (k) {
      free(k->quals);
      free(k->args);
    }
    free(k);
    clReleaseKernel(ck);
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  /* Argument kinds from the SPIR-V; the engine's argument info (PoCL with -cl-kernel-arg-info) as a fallback. */
  if (zs_spirv_arg_quals(m->spirv, m->spirv_size, desc->pKernelName, k->quals, na) != 0)
    for (cl_uint i = 0; i < na; i++)
      if (clGetKernelArgInfo(ck, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof k->quals[i], &k->quals[i], NULL) != CL_SUCCESS)
        k->quals[i] = CL_KERNEL_ARG_ADDRESS_PRIVATE;
  size_t reqd[3] = {0, 0, 0};
  clGetKernelWorkGroupInfo(ck, zs_cl.device, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof reqd, reqd, NULL);
  memcpy(k->reqd, reqd, sizeof reqd);
  k->magic = ZS_MAGIC_KERNEL;
  k->module = m;
  k->k = ck;
  k->n_args = na;
  snprintf(k->name, sizeof k->name, "%s", desc->pKernelName);
  k->gx = reqd[0] ? (uint32_t)reqd[0] : 1;
  k->gy = reqd[1] ? (uint32_t)reqd[1] : 1;
  k->gz = reqd[2] ? (uint32_t)reqd[2] : 1;
  *ph = (ze_kernel_handle_t)k;
  return ZE_RESULT_SUCCESS;
}

void zs_args_free(zs_arg *args, uint32_t n) {
  if (!args) return;
  for (uint32_t i = 0; i < n; i++) free(args[i].big);
  free(args);
}

int zs_args_copy(zs_arg *dst, const zs_arg *src, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    dst[i] = src[i];
    dst[i].big = NULL;
    if (src[i].big) {
      dst[i].big = malloc(src[i].size);
      if (!dst[i].big) return -1;
      memcpy(dst[i].big, src[i].big, src[i].size);
    }
  }
  return 0;
}

ze_result_t zs_zeKernelDestroy(ze_kernel_handle_t h) {
  zs_kernel *k = ker_of(h);
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  pthread_mutex_lock(&zs_lock);
  zs_flush(); /* recorded launches keep their own argument copies; the cl_kernel is refcounted by them */
  pthread_mutex_unlock(&zs_lock);
  k->magic = 0;
  clReleaseKernel(k->k);
  for (uint32_t i = 0; i < k->n_args; i++) free(k->args[i].big);
  free(k->args);
  free(k->quals);
  free(k);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeKernelSetArgumentValue(ze_kernel_handle_t h, uint32_t idx, size_t size, const void *val) {
  zs_kernel *k = ker_of(h);
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (idx >= k->n_args) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
  zs_arg a;
  memset(&a, 0, sizeof a);
  cl_kernel_arg_address_qualifier q = k->quals[idx];
  if (q == CL_KERNEL_ARG_ADDRESS_LOCAL) {
    if (val) return ZE_RESULT_ERROR_INVALID_ARGUMENT; /* local memory: the size only */
    if (size == 0) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
    a.kind = ZS_ARG_LOCAL;
    a.size = size;
  } else if (q == CL_KERNEL_ARG_ADDRESS_GLOBAL || q == CL_KERNEL_ARG_ADDRESS_CONSTANT) {
    if (size != sizeof(void *)) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
    a.kind = ZS_ARG_PTR;
    a.size = sizeof(void *);
    void *p = NULL;
    if (val) memcpy(&p, val, sizeof p);
    memcpy(a.value, &p, sizeof p);
  } else {
    if (!val) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    a.kind = ZS_ARG_VALUE;
    a.size = size;
    if (size <= sizeof a.value) {
      memcpy(a.value, val, size);
    } else {
      a.big = malloc(size);
      if (!a.big) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
      memcpy(a.big, val, size);
    }
  }
  pthread_mutex_lock(&zs_lock);
  /* Set it on the cl_kernel now so that a wrong size fails here and not at launch. */
  cl_int e2;
  if (a.kind == ZS_ARG_PTR) {
    void *p;
    memcpy(&p, a.value, sizeof p);
    e2 = clSetKernelArgSVMPointer(k->k, idx, p);
  } else if (a.kind == ZS_ARG_LOCAL) {
    e2 = clSetKernelArg(k->k, idx, a.size, NULL);
  } else {
    e2 = clSetKernelArg(k->k, idx, a.size, a.big ? (void *)a.big : (void *)a.value);
  }
  if (e2 != CL_SUCCESS) {
    pthread_mutex_unlock(&zs_lock);
    free(a.big);
    return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
  }
  free(k->args[idx].big);
  k->args[idx] = a;
  pthread_mutex_unlock(&zs_lock);
  return ZE_RESULT_SUCCESS;
}

cl_int zs_kernel_apply_args(cl_kernel k, const zs_arg *args, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    const zs_arg *a = &args[i];
    cl_int e;
    if (a->kind == ZS_ARG_PTR) {
      void *p;
      memcpy(&p, a->value, sizeof p);
      e = clSetKernelArgSVMPointer(k, i, p);
    } else if (a->kind == ZS_ARG_LOCAL) {
      e = clSetKernelArg(k, i, a->size, NULL);
    } else if (a->kind == ZS_ARG_VALUE) {
      e = clSetKernelArg(k, i, a->size, a->big ? (const void *)a->big : (const void *)a->value);
    } else {
      return CL_INVALID_KERNEL_ARGS;
    }
    if (e != CL_SUCCESS) return e;
  }
  return CL_SUCCESS;
}

ze_result_t zs_zeKernelSetGroupSize(ze_kernel_handle_t h, uint32_t x, uint32_t y, uint32_t z) {
  zs_kernel *k = ker_of(h);
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!x || !y || !z || (uint64_t)x * y * z > 1024 || z > 64) return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  if (k->reqd[0] && (x != k->reqd[0] || y != k->reqd[1] || z != k->reqd[2]))
    return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  k->gx = x;
  k->gy = y;
  k->gz = z;
  return ZE_RESULT_SUCCESS;
}

static uint32_t largest_divisor(uint32_t n, uint32_t limit) {
  if (n == 0) return 1;
  for (uint32_t d = limit < n ? limit : n; d > 1; d--)
    if (n % d == 0) return d;
  return 1;
}

ze_result_t zs_zeKernelSuggestGroupSize(ze_kernel_handle_t h, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t *x,
                                        uint32_t *y, uint32_t *z) {
  zs_kernel *k = ker_of(h);
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!x || !y || !z) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (k->reqd[0]) {
    *x = (uint32_t)k->reqd[0];
    *y = (uint32_t)k->reqd[1];
    *z = (uint32_t)k->reqd[2];
    return ZE_RESULT_SUCCESS;
  }
  /* Sizes that divide the global size exactly, as large as the group limit allows (256 keeps groups modest). */
  uint32_t budget = 256;
  *x = largest_divisor(gx, budget);
  budget /= *x;
  *y = largest_divisor(gy, budget);
  budget /= *y;
  *z = largest_divisor(gz, budget < 64 ? budget : 64);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeKernelGetProperties(ze_kernel_handle_t h, ze_kernel_properties_t *p) {
  zs_kernel *k = ker_of(h);
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  p->numKernelArgs = k->n_args;
  p->requiredGroupSizeX = (uint32_t)k->reqd[0];
  p->requiredGroupSizeY = (uint32_t)k->reqd[1];
  p->requiredGroupSizeZ = (uint32_t)k->reqd[2];
  p->requiredNumSubGroups = 0;
  p->requiredSubgroupSize = 0;
  p->maxSubgroupSize = 32;
  p->maxNumSubgroups = 128;
  cl_ulong lm = 0, pm = 0;
  clGetKernelWorkGroupInfo(k->k, zs_cl.device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL);
  clGetKernelWorkGroupInfo(k->k, zs_cl.device, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof pm, &pm, NULL);
  p->localMemSize = (uint32_t)lm;
  p->privateMemSize = (uint32_t)pm;
  p->spillMemSize = 0;
  memset(&p->uuid, 0, sizeof p->uuid);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeKernelGetName(ze_kernel_handle_t h, size_t *pSize, char *pName) {
  zs_kernel *k = ker_of(h);
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!pSize) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  size_t need = strlen(k->name) + 1;
  if (*pSize == 0 || !pName) {
    *pSize = need;
    return ZE_RESULT_SUCCESS;
  }
  snprintf(pName, *pSize, "%s", k->name);
  *pSize = need < *pSize ? need : *pSize;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zs_zeKernelSetIndirectAccess(ze_kernel_handle_t h, ze_kernel_indirect_access_flags_t f) {
  (void)f;
  return ker_of(h) ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE; /* all memory is shared anyway */
}

zs_kernel *zs_kernel_of(ze_kernel_handle_t h) { return ker_of(h); }
