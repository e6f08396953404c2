/* `hookd status`: the cluster from Redis keys alone. */
#ifndef HOOKD_CLI_STATUS_H
#define HOOKD_CLI_STATUS_H

struct hookd_config;

int cli_status(const struct hookd_config *cfg, int argc, char **argv);

#endif
