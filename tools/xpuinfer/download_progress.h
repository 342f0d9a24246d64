/* Download progress bar for xpuinfer subcommands that may fetch a model (download, generate -m org/name):
 * drawn on stderr from the library's progress callback, only when stderr is a terminal and neither --quiet
 * nor HF_HUB_DISABLE_PROGRESS_BARS=1 asks for silence. */
#ifndef XPI_CLI_DOWNLOAD_PROGRESS_H
#define XPI_CLI_DOWNLOAD_PROGRESS_H

#include <stdint.h>

#include "xpuinfer.h"

typedef struct cli_progress {
  char file[256];
  double start, last;
  uint64_t start_done;
  int drawn, finished;
} cli_progress;

/* Sets o->progress to the bar (state in *p) when a bar is wanted; quiet: the user's --quiet. */
void cli_progress_attach(xpi_download_options *o, cli_progress *p, int quiet);
/* Ends a bar line left open (call after the library returns). */
void cli_progress_finish(cli_progress *p);

#endif
