/* `hookd dlq …`: list, show, replay and purge dead letters. */
#ifndef HOOKD_CLI_DLQ_H
#define HOOKD_CLI_DLQ_H

struct hookd_config;

/* argv[0] is the subcommand. Returns the process exit status. */
int cli_dlq(const struct hookd_config *cfg, int argc, char **argv);

#endif
