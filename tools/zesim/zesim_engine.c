/* The OpenCL engine under zesim: one CPU OpenCL device (PoCL by default), one context and one in-order
 * queue for the whole process. Every zesim allocation is fine-grained SVM, so a device pointer plus an
 * offset is a valid kernel argument, as on a real GPU. */
#include "zesim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

zs_engine zs_cl;
static char g_cache[1024];

static int mkdirs(const char *path) {
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    mkdir(tmp, 0700);
    *p = '/';
  }
  return mkdir(tmp, 0700) == 0 || access(tmp, W_OK) == 0 ? 0 : -1;
}

/* Per user: $ZESIM_CACHE_DIR, else $XDG_CACHE_HOME/zesim, else ~/.cache/zesim, else /tmp/zesim-<uid>. */
static void pick_cache_dir(void) {
  const char *e = getenv("ZESIM_CACHE_DIR");
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  if (e && *e) snprintf(g_cache, sizeof g_cache, "%s", e);
  else if (xdg && *xdg) snprintf(g_cache, sizeof g_cache, "%s/zesim", xdg);
  else if (home && *home) snprintf(g_cache, sizeof g_cache, "%s/.cache/zesim", home);
  else snprintf(g_cache, sizeof g_cache, "/tmp/zesim-%u", (unsigned)getuid());
  if (mkdirs(g_cache)) snprintf(g_cache, sizeof g_cache, "/tmp/zesim-%u", (unsigned)getuid());
  mkdirs(g_cache);
}

const char *zs_cache_dir(void) { return g_cache; }

static int has_ext(cl_device_id d, const char *ext) {
  size_t n = 0;
  if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &n) != CL_SUCCESS || !n) return 0;
  char *s = malloc(n + 1);
  if (!s) return 0;
  int found = 0;
  if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, n, s, NULL) == CL_SUCCESS) {
    s[n] = 0;
    size_t l = strlen(ext);
    for (char *p = strstr(s, ext); p; p = strstr(p + 1, ext))
      if ((p == s || p[-1] == ' ') && (p[l] == ' ' || p[l] == 0)) found = 1;
  }
  free(s);
  return found;
}

ze_result_t zs_engine_start(char *why, size_t cap) {
  pick_cache_dir();
  if (!getenv("POCL_CACHE_DIR")) {
    char pc[1100];
    snprintf(pc, sizeof pc, "%s/pocl", g_cache);
    mkdirs(pc);
    setenv("POCL_CACHE_DIR", pc, 0); /* before PoCL starts: its kernel cache survives between test runs */
  }
  /* ZESIM_OPENCL_ENGINE: "intel" (Intel's CPU OpenCL runtime: takes SPIR-V directly, has cl_intel_subgroups),
   * "pocl", or unset/"auto": Intel's when its ICD is registered, else PoCL. */
  const char *want = getenv("ZESIM_OPENCL_ENGINE");
  if (!want || !*want) want = "auto";
  cl_platform_id plats[16];
  cl_uint np = 0;
  if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS || np == 0) {
    snprintf(why, cap, "no OpenCL platform (install pocl-opencl-icd)");
    return ZE_RESULT_ERROR_UNINITIALIZED;
  }
  const char *passes[2] = {"intel", "pocl"};
  int first = !strcmp(want, "pocl") ? 1 : 0, last = !strcmp(want, "intel") ? 0 : 1;
  for (int pass = first; pass <= last && !zs_cl.device; pass++) {
    for (cl_uint i = 0; i < np && !zs_cl.device; i++) {
      char name[256] = "";
      clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
      int is_pocl = strstr(name, "Portable") != NULL || strstr(name, "pocl") != NULL;
      int is_intel = strstr(name, "Intel") != NULL;
      if (!strcmp(passes[pass], "pocl") ? !is_pocl : !is_intel) continue;
      cl_device_id d;
      cl_uint nd = 0;
      if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_CPU, 1, &d, &nd) != CL_SUCCESS || nd == 0) continue;
      cl_device_svm_capabilities svm = 0;
      clGetDeviceInfo(d, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL);
      if (!(svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER)) {
        zs_debug("platform %s: no fine-grained buffer SVM, skipped", name);
        continue;
      }
      zs_cl.platform = plats[i];
      zs_cl.device = d;
      snprintf(zs_cl.name, sizeof zs_cl.name, "%.127s", name);
      char il[256] = "";
      clGetDeviceInfo(d, CL_DEVICE_IL_VERSION, sizeof il, il, NULL);
      zs_cl.spirv_il = strstr(il, "SPIR-V") != NULL;
    }
  }
  if (!zs_cl.device) {
    snprintf(why, cap, "no CPU OpenCL device with fine-grained SVM on a '%s' platform (ZESIM_OPENCL_ENGINE)", want);
    return ZE_RESULT_ERROR_UNINITIALIZED;
  }
  cl_int err;
  zs_cl.ctx = clCreateContext(NULL, 1, &zs_cl.device, NULL, NULL, &err);
  if (!zs_cl.ctx) {
    snprintf(why, cap, "clCreateContext failed (%d)", err);
    return ZE_RESULT_ERROR_UNINITIALIZED;
  }
  zs_cl.queue = clCreateCommandQueueWithProperties(zs_cl.ctx, zs_cl.device, NULL, &err);
  if (!zs_cl.queue) {
    snprintf(why, cap, "clCreateCommandQueue failed (%d)", err);
    return ZE_RESULT_ERROR_UNINITIALIZED;
  }
  zs_cl.fp16 = has_ext(zs_cl.device, "cl_khr_fp16");
  zs_cl.fp64 = has_ext(zs_cl.device, "cl_khr_fp64");
  zs_debug("engine: %s (fp16 %d, fp64 %d, SPIR-V %d), cache %s", zs_cl.name, zs_cl.fp16, zs_cl.fp64, zs_cl.spirv_il,
           g_cache);
  return ZE_RESULT_SUCCESS;
}
