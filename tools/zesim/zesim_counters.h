/* zesim's API call counters, for tests that assert how a program submits work (e.g. one submission per decode
 * step). zesim exports `void zesimGetCounters(zesim_counters *out)`; a test finds it with
 * dlopen(<ZE_ENABLE_ALT_DRIVERS path>, RTLD_NOW | RTLD_NOLOAD) + dlsym, as the loader has loaded zesim already. */
#ifndef ZESIM_COUNTERS_H
#define ZESIM_COUNTERS_H

#include <stdint.h>

typedef struct zesim_counters {
  uint64_t executes;           /* zeCommandQueueExecuteCommandLists calls */
  uint64_t immediate_cmds;     /* commands appended to immediate lists (on a GPU each one is submitted) */
  uint64_t copies;             /* memory copies run, immediate or inside an executed list, on any engine */
  uint64_t copy_engine_copies; /* of those, copies on a list of the copy-only queue group */
  uint64_t copy_engine_bytes;
  uint64_t host_syncs;         /* host waits: zeEventHostSynchronize/QueryStatus, zeFenceHostSynchronize/QueryStatus,
                                * zeCommandQueueSynchronize */
} zesim_counters;

typedef void (*zesim_get_counters_fn)(zesim_counters *out);

#endif
