/* TEMPORARY placeholder until the subcommand lands. */
#include <stdio.h>
#include "cli.h"
int cmd_generate(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "xpuinfer: cmd_generate not implemented yet\n"); return 2; }
