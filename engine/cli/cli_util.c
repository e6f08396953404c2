/* Failure messages and the database connection of the commands; see
 * cli_util.h. */
#include "cli_util.h"

#include <stdarg.h>
#include <jansson.h>
#include <stdio.h>

#include "cli_args.h"
#include "config.h"
#include "db.h"
#include "settings.h"

int cli_fail(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "hookd%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

PGconn *cli_connect_db(const struct hookd_config *cfg, const char *cmd, int connect_timeout_s)
{
    char err[512];
    PGconn *conn = db_connect_timeout(cfg->database.text, connect_timeout_s, err, sizeof err);
    if (!conn)
        cli_fail(cmd, "%s", err);
    return conn;
}

int cli_settings_option(const struct cli_args *a, const char *cmd, bool nulls_ok, const char **out)
{
    *out = cli_args_value(a, "settings");
    if (!*out)
        return 0;
    char err[256];
    json_error_t jerr;
    json_t *st = json_loads(*out, 0, &jerr);
    int bad = !st || settings_check(st, nulls_ok, err, sizeof err) != 0;
    json_decref(st);
    if (bad)
        return cli_fail(cmd, "--settings: %s", st ? err : jerr.text);
    return 0;
}
