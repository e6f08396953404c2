/* What every command of `hookd` does the same way: say why it failed, on
 * stderr, as "hookd <command>: <why>", and open its one connection to the
 * configured database. */
#ifndef HOOKD_CLI_UTIL_H
#define HOOKD_CLI_UTIL_H

#include <libpq-fe.h>
#include <stdbool.h>

struct hookd_config;

/* Says what failed on stderr: "hookd <cmd>: <message>" and a newline
 * ("hookd: <message>" when cmd is NULL). Returns 1, a command's failure
 * status (a caller that goes on, such as after one refused id of many,
 * ignores it). */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A connection to cfg's database (db_connect; connect_timeout_s as
 * db_connect_timeout takes it, 0 for none of ours), or NULL after
 * cli_fail(cmd, why). The caller PQfinish()es it. */
PGconn *cli_connect_db(const struct hookd_config *cfg, const char *cmd, int connect_timeout_s);

struct cli_args;

/* The --settings option (delivery settings, settings.h: a JSON object such
 * as {"signature_headers": "svix"}; nulls_ok: a null removes a setting):
 * 0 with *out the option's text (borrowed) or NULL when it is not given;
 * 1 after cli_fail(cmd, why) for a bad one. */
int cli_settings_option(const struct cli_args *a, const char *cmd, bool nulls_ok, const char **out);

#endif
