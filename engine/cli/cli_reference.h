/* `hookd reference metrics|api`: the tables behind the generated
 * references of docs/reference/ (scripts/gen_reference.py), as JSON. */
#ifndef HOOKD_CLI_REFERENCE_H
#define HOOKD_CLI_REFERENCE_H

#include "cli_args.h"

/* The `reference` group, for main.c's command table. */
extern const struct cli_args_cmd cli_reference_cmd;

#endif
