/* `hookd endpoint …`: the webhook_endpoints table from the command line. */
#ifndef HOOKD_CLI_ENDPOINT_H
#define HOOKD_CLI_ENDPOINT_H

#include "cli_args.h"

/* The `endpoint` group (its subcommands), for main.c's command table. */
extern const struct cli_args_cmd cli_endpoint_cmd;

#endif
