/* dlopen of the Level Zero loader; one process-wide table of entry points. */
#include "runtime/ze/ze_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static xpi_ze_api g_api;
static const xpi_ze_api *g_ok;
static char g_why[512];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load_once(void) {
  void *h = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(g_why, sizeof g_why, "Level Zero loader libze_loader.so.1 not found (%s)", dlerror());
    return;
  }
#define XPI_ZE_RESOLVE(name) *(void **)&g_api.name = dlsym(h, #name);
  XPI_ZE_FUNCS(XPI_ZE_RESOLVE)
#undef XPI_ZE_RESOLVE
  /* Entry points newer loaders may lack are tolerated here and checked where used. */
  if (!g_api.zeInit || !g_api.zeDriverGet || !g_api.zeDeviceGet) {
    snprintf(g_why, sizeof g_why, "libze_loader.so.1 lacks core entry points");
    return;
  }
  ze_result_t r = g_api.zeInit(ZE_INIT_FLAG_GPU_ONLY);
  if (r != ZE_RESULT_SUCCESS) {
    snprintf(g_why, sizeof g_why, "zeInit failed (0x%x): no Level Zero GPU driver", (unsigned)r);
    return;
  }
  g_ok = &g_api;
  snprintf(g_why, sizeof g_why, "Level Zero loader initialized");
}

const xpi_ze_api *xpi_ze_load(const char **why) {
  pthread_once(&g_once, load_once);
  if (why) *why = g_why;
  return g_ok;
}
