/* Failure messages and the database connection of the commands; see
 * cli_util.h. */
#include "cli_util.h"

#include <stdarg.h>
#include <stdio.h>

#include "config.h"
#include "db.h"

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
