/* `hookd dlq …`: list, show, replay and purge dead letters. */
#ifndef HOOKD_CLI_DLQ_H
#define HOOKD_CLI_DLQ_H

#include "cli_args.h"

/* The `dlq` group (its subcommands), for main.c's command table. */
extern const struct cli_args_cmd cli_dlq_cmd;

#endif
