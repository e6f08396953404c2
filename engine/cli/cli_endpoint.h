/* `hookd endpoint …`: the webhook_endpoints table from the command line. */
#ifndef HOOKD_CLI_ENDPOINT_H
#define HOOKD_CLI_ENDPOINT_H

struct hookd_config;

/* argv[0] is the subcommand. Returns the process exit status. */
int cli_endpoint(const struct hookd_config *cfg, int argc, char **argv);

#endif
