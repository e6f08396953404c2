/* Applying the embedded migrations; see migrate.h. Concurrent `hookd
 * migrate` runs (several workers starting at once) serialise on a
 * transaction-scoped advisory lock, so each migration runs exactly once.
 * The ledger's statements are sql/queries/migrate_*.sql; its checksums are
 * migrate_checksum.h's. */
#include "migrate.h"

#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "embedded.h"
#include "errbuf.h"
#include "migrate_checksum.h"
#include "query.h"

/* DDL, which cannot be prepared, and which must run before any migration: the
 * one statement here that is not in sql/queries/. */
static const char create_table_sql[] = "CREATE TABLE IF NOT EXISTS schema_migrations ("
                                       " version text PRIMARY KEY,"
                                       " checksum text NOT NULL,"
                                       " applied_at timestamptz NOT NULL DEFAULT now())";

static void checksum(const struct embedded_file *f, char out[MIGRATE_CHECKSUM_HEX])
{
    migrate_checksum(f->data, f->len, out);
}

/* "sql/0001_inbox.sql" -> "0001_inbox"; -1 for anything else (Lua scripts,
 * and files in folders below sql/, such as the statements of sql/queries/). */
static int version_of(const struct embedded_file *f, char *out, size_t outlen)
{
    if (strncmp(f->path, "sql/", 4) != 0)
        return -1;
    const char *name = f->path + 4;
    size_t n = strlen(name);
    if (n < 5 || strcmp(name + n - 4, ".sql") != 0 || name[0] < '0' || name[0] > '9' || strchr(name, '/'))
        return -1;
    snprintf(out, outlen, "%.*s", (int)(n - 4), name);
    return 0;
}

/* Compares the applied checksum (if any) of one file. 1 = applied and equal,
 * 2 = applied with the raw-bytes checksum of an earlier hookd (the same
 * SQL), 0 = not applied, -1 = changed (err set) or query failure. */
static int applied_state(PGconn *conn, const char *version, const char *sum, char *err, size_t errlen)
{
    const char *params[] = {version};
    PGresult *r = query_exec(conn, Q_MIGRATE_APPLIED_CHECKSUM, params, err, errlen);
    if (!r)
        return -1;
    int rc = 0;
    if (PQntuples(r) == 1) {
        const char *applied = PQgetvalue(r, 0, MIGRATE_APPLIED_CHECKSUM_CHECKSUM);
        if (strcmp(applied, sum) == 0) {
            rc = 1;
        } else if (migrate_checksum_legacy(version) && strcmp(applied, migrate_checksum_legacy(version)) == 0) {
            rc = 2;
        } else {
            err_set(err, errlen,
                    "migration %s was changed after it was applied (applied checksum %.12s…, file %.12s…); "
                    "add a new migration instead of editing an applied one",
                    version, applied, sum);
            rc = -1;
        }
    }
    PQclear(r);
    return rc;
}

static int apply_one(PGconn *conn, const struct embedded_file *f, const char *version, const char *sum, FILE *out,
                     char *err, size_t errlen)
{
    if (db_command(conn, "BEGIN", err, errlen) != 0)
        return -1;
    if (query_run(conn, Q_MIGRATE_LOCK, NULL, err, errlen) != 0)
        goto fail;
    int st = applied_state(conn, version, sum, err, errlen);
    if (st != 0) { /* changed, failed, or applied meanwhile by another process */
        db_rollback(conn);
        return st < 0 ? -1 : 0;
    }
    /* The file may hold several statements: the simple-query protocol. */
    char *sql = strndup(f->data, f->len);
    PGresult *r = PQexec(conn, sql);
    free(sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
        const char *msg = PQresultErrorMessage(r);
        err_set(err, errlen, "migration %s failed: %.*s", version, (int)strcspn(msg, "\n"), msg);
        PQclear(r);
        goto fail;
    }
    PQclear(r);
    const char *params[] = {version, sum};
    if (query_run(conn, Q_MIGRATE_RECORD, params, err, errlen) != 0)
        goto fail;
    if (db_command(conn, "COMMIT", err, errlen) != 0)
        return -1;
    if (out)
        fprintf(out, "applied %s\n", version);
    return 1;
fail:
    db_rollback(conn);
    return -1;
}

/* Replaces the raw-bytes checksum that an earlier hookd recorded for a
 * migration with the checksum of its SQL. Idempotent: a concurrent run that
 * got there first leaves nothing to change. */
static int rewrite_legacy(PGconn *conn, const char *version, const char *sum, FILE *out, char *err, size_t errlen)
{
    const char *params[] = {version, sum, migrate_checksum_legacy(version)};
    if (query_run(conn, Q_MIGRATE_RECHECKSUM, params, err, errlen) != 0)
        return -1;
    if (out)
        fprintf(out, "recorded %s's checksum without comments\n", version);
    return 0;
}

int migrate_apply(PGconn *conn, FILE *out, char *err, size_t errlen)
{
    if (db_command(conn, create_table_sql, err, errlen) != 0)
        return -1;
    int applied = 0;
    for (size_t i = 0; i < embedded_nfiles; i++) {
        const struct embedded_file *f = &embedded_files[i];
        char version[128], sum[MIGRATE_CHECKSUM_HEX];
        if (version_of(f, version, sizeof version) != 0)
            continue;
        checksum(f, sum);
        int st = applied_state(conn, version, sum, err, errlen);
        if (st < 0 || (st == 2 && rewrite_legacy(conn, version, sum, out, err, errlen) != 0))
            return -1;
        if (st > 0)
            continue;
        int rc = apply_one(conn, f, version, sum, out, err, errlen);
        if (rc < 0)
            return -1;
        applied += rc;
    }
    return applied;
}

int migrate_check(PGconn *conn, char *err, size_t errlen)
{
    PGresult *r = query_exec(conn, Q_MIGRATE_HAS_LEDGER, NULL, err, errlen);
    if (!r)
        return -1;
    int exists = PQgetvalue(r, 0, MIGRATE_HAS_LEDGER_PRESENT)[0] == 't';
    PQclear(r);
    if (!exists)
        return 1;
    int pending = 0;
    for (size_t i = 0; i < embedded_nfiles; i++) {
        char version[128], sum[MIGRATE_CHECKSUM_HEX];
        if (version_of(&embedded_files[i], version, sizeof version) != 0)
            continue;
        checksum(&embedded_files[i], sum);
        int st = applied_state(conn, version, sum, err, errlen);
        if (st < 0)
            return -1;
        if (st == 0)
            pending = 1;
    }
    return pending;
}
