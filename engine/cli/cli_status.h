/* `hookd status`: the cluster from Redis keys alone. */
#ifndef HOOKD_CLI_STATUS_H
#define HOOKD_CLI_STATUS_H

#include "cli_args.h"

/* The `status` command, for main.c's command table. */
extern const struct cli_args_cmd cli_status_cmd;

#endif
