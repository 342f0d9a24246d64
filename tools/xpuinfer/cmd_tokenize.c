/* TEMPORARY placeholder until the subcommand lands. */
#include <stdio.h>
#include "cli.h"
int cmd_tokenize(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "xpuinfer: cmd_tokenize not implemented yet\n"); return 2; }
int cmd_detokenize(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "xpuinfer: cmd_detokenize not implemented yet\n"); return 2; }
