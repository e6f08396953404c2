/* `hookd tenant …` and `hookd token …`: tenants (Svix applications) and
 * the API's tokens from the command line. */
#ifndef HOOKD_CLI_TENANT_H
#define HOOKD_CLI_TENANT_H

#include <libpq-fe.h>
#include <stddef.h>

#include "cli_args.h"

/* The `tenant` and `token` groups, for main.c's command table. */
extern const struct cli_args_cmd cli_tenant_cmd;
extern const struct cli_args_cmd cli_token_cmd;

/* The id of the tenant named by id or uid into out; -1 after printing why
 * (for --tenant options of other commands). */
int cli_tenant_resolve(PGconn *conn, const char *id_or_uid, char *out, size_t outlen, const char *who);

#endif
