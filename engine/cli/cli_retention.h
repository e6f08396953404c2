/* `hookd retention run [--dry-run]`: one retention pass by hand. */
#ifndef HOOKD_CLI_RETENTION_H
#define HOOKD_CLI_RETENTION_H

#include "cli_args.h"

/* The `retention` group, for main.c's command table. */
extern const struct cli_args_cmd cli_retention_cmd;

#endif
