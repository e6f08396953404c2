/* The retention pass and the storage figures; see retention.h. Every step
 * is its own autocommitted statement, so nothing a pass does holds a lock
 * longer than that step: a partition is detached with DETACH PARTITION
 * CONCURRENTLY (SHARE UPDATE EXCLUSIVE on the parent: inserts, updates and
 * reads go on), and only a partition already out of the table is dropped. */
#include "retention.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "db.h"
#include "errbuf.h"
#include "query.h"
#include "queries.h"

/* Rows per batched DELETE, and how long a pass spends on them. */
#define PRUNE_BATCH 5000
#define PRUNE_BUDGET_MS 5000
/* The longest a DETACH waits for a lock: never a queue ingest stands in for long. */
static const char lock_timeout_sql[] = "SET lock_timeout = '5s'";
static const char lock_timeout_reset_sql[] = "RESET lock_timeout";

struct table_window {
    const char *table;
    int64_t window;
};

int64_t retention_width_ms(int64_t window_ms)
{
    int64_t w = window_ms / 4;
    return w < 1000 ? 1000 : w;
}

static void say(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(FILE *out, const char *fmt, ...)
{
    if (!out)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
    fflush(out);
}

/* A one-row, one-column statement's value as a number (NULL = -1). */
static int scalar(PGconn *conn, enum query_id q, const char *const *params, long long *v, char *err, size_t errlen)
{
    PGresult *r = query_exec(conn, q, params, err, errlen);
    if (!r)
        return -1;
    *v = PQntuples(r) == 1 && !PQgetisnull(r, 0, 0) ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : -1;
    PQclear(r);
    return 0;
}

/* ALTER TABLE parent DETACH PARTITION part {CONCURRENTLY|FINALIZE}: DDL,
 * which cannot be a parameterised statement; part comes from the catalog
 * (regclass text, already quoted where needed). */
static int detach(PGconn *conn, const char *parent, const char *part, const char *how, char *err, size_t errlen)
{
    char *qparent = PQescapeIdentifier(conn, parent, strlen(parent));
    if (!qparent) {
        return err_set(err, errlen, "cannot quote %s: %s", parent, PQerrorMessage(conn));
    }
    size_t n = strlen(qparent) + strlen(part) + 64;
    char *sql = malloc(n);
    int rc = -1;
    if (sql) {
        snprintf(sql, n, "ALTER TABLE %s DETACH PARTITION %s %s", qparent, part, how);
        rc = db_command(conn, sql, err, errlen);
        free(sql);
    }
    PQfreemem(qparent);
    return rc;
}

/* Drops part, already out of table (survivors put back first). */
static int drop_detached(PGconn *conn, const char *table, const char *part, struct retention_report *rep, char *err,
                         size_t errlen)
{
    long long rescued = 0;
    const char *p[] = {table, part};
    if (scalar(conn, Q_RETENTION_DROP, p, &rescued, err, errlen) != 0)
        return -1;
    rep->rescued += rescued > 0 ? rescued : 0;
    return 0;
}

/* Detaches part concurrently, then drops it. */
static int detach_and_drop(PGconn *conn, const char *table, const char *part, struct retention_report *rep, char *err,
                           size_t errlen)
{
    if (detach(conn, table, part, "CONCURRENTLY", err, errlen) != 0)
        return -1;
    return drop_detached(conn, table, part, rep, err, errlen);
}

/* Step 1: what an earlier pass left half done. */
static int finish_leftovers(PGconn *conn, const char *table, const PGresult *plan, bool dry_run, FILE *out,
                            struct retention_report *rep, char *err, size_t errlen)
{
    for (int i = 0; i < PQntuples(plan); i++) {
        const char *action = PQgetvalue(plan, i, RETENTION_PLAN_ACTION);
        const char *part = PQgetvalue(plan, i, RETENTION_PLAN_PART);
        if (strcmp(action, "finalize") != 0 && strcmp(action, "drop") != 0)
            continue;
        say(out, "%s%s %s (left by an interrupted pass)", dry_run ? "would " : "", action, part);
        if (dry_run)
            continue;
        if (strcmp(action, "finalize") == 0 && detach(conn, table, part, "FINALIZE", err, errlen) != 0)
            return -1;
        if (drop_detached(conn, table, part, rep, err, errlen) != 0)
            return -1;
    }
    return 0;
}

/* Step 2: partitions ahead, so that no insert ever lacks one. */
static int extend_ahead(PGconn *conn, const char *table, int64_t width, bool dry_run, FILE *out,
                        struct retention_report *rep, char *err, size_t errlen)
{
    if (dry_run)
        return 0;
    char w[24], ahead[8];
    snprintf(w, sizeof w, "%" PRId64, width);
    snprintf(ahead, sizeof ahead, "%d", RETENTION_AHEAD);
    const char *p[] = {table, w, ahead};
    PGresult *r = query_exec(conn, Q_RETENTION_AHEAD, p, err, errlen);
    if (!r)
        return -1;
    char far[160] = "";
    if (PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
        snprintf(far, sizeof far, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    if (!far[0])
        return 0;
    if (detach(conn, table, far, "CONCURRENTLY", err, errlen) != 0)
        return -1;
    const char *pe[] = {table, far, w, ahead};
    r = query_exec(conn, Q_RETENTION_EXTEND, pe, err, errlen);
    if (!r)
        return -1;
    PQclear(r);
    rep->extended++;
    say(out, "extended %s: partitions of %" PRId64 " s ahead", table, width / 1000);
    return 0;
}

/* Step 3: the partitions older than the window. */
static int expire(PGconn *conn, const char *table, const PGresult *plan, bool dry_run, FILE *out,
                  struct retention_report *rep, char *err, size_t errlen)
{
    for (int i = 0; i < PQntuples(plan); i++) {
        if (strcmp(PQgetvalue(plan, i, RETENTION_PLAN_ACTION), "expire") != 0)
            continue;
        const char *part = PQgetvalue(plan, i, RETENTION_PLAN_PART);
        const char *rows = PQgetvalue(plan, i, RETENTION_PLAN_ROWS_ESTIMATE);
        const char *p[] = {table, part};
        long long n = 0;
        if (dry_run) {
            if (scalar(conn, Q_RETENTION_SURVIVORS, p, &n, err, errlen) != 0)
                return -1;
            say(out, "would expire %s (about %s rows, up to %s; %lld kept: not terminal)", part, rows,
                PQgetvalue(plan, i, RETENTION_PLAN_HI), n);
            continue;
        }
        if (scalar(conn, Q_RETENTION_MOVE, p, &n, err, errlen) != 0)
            return -1;
        if (n > 0) {
            rep->postponed++;
            say(out, "postponed %s: %lld rows to keep are held by a transaction", part, n);
            continue;
        }
        if (detach_and_drop(conn, table, part, rep, err, errlen) != 0)
            return -1;
        rep->expired++;
        say(out, "expired %s (about %s rows)", part, rows);
    }
    return 0;
}

/* Step 4: the batched deletes, within a time budget per pass. */
static int prune(PGconn *conn, enum query_id q, const char *what, int64_t window, bool dry_run, FILE *out,
                 struct retention_report *rep, int64_t deadline, char *err, size_t errlen)
{
    char w[24], batch[16];
    snprintf(w, sizeof w, "%" PRId64, window);
    snprintf(batch, sizeof batch, "%d", PRUNE_BATCH);
    long long n = 0, total = 0;
    if (dry_run) {
        const char *p[] = {what, w};
        if (scalar(conn, Q_RETENTION_PRUNABLE, p, &n, err, errlen) != 0)
            return -1;
        if (n > 0)
            say(out, "would delete %lld expired rows of %s%s", n, what, q == Q_RETENTION_PRUNE_KEPT ? "_kept" : "");
        return 0;
    }
    const char *p[] = {what, w, batch};
    do {
        if (scalar(conn, q, p, &n, err, errlen) != 0)
            return -1;
        total += n > 0 ? n : 0;
    } while (n == PRUNE_BATCH && clock_mono_ms() < deadline);
    rep->pruned += total;
    if (total > 0)
        say(out, "deleted %lld expired rows of %s%s", total, what, q == Q_RETENTION_PRUNE_KEPT ? "_kept" : "");
    return 0;
}

/* Step 5: message payloads whose retention ran out (payloadRetentionPeriod,
 * an expunge) cleared in batches, within the pass's time budget. Reads
 * answer them as expired from their expiry on, whether cleared yet or not;
 * this only frees their bytes. */
static int clear_payloads(PGconn *conn, bool dry_run, FILE *out, struct retention_report *rep, int64_t deadline,
                          char *err, size_t errlen)
{
    if (dry_run)
        return 0;
    char batch[16];
    snprintf(batch, sizeof batch, "%d", PRUNE_BATCH);
    const char *p[] = {batch};
    long long n = 0, total = 0;
    do {
        if (scalar(conn, Q_RETENTION_EXPIRE_PAYLOADS, p, &n, err, errlen) != 0)
            return -1;
        total += n > 0 ? n : 0;
    } while (n == PRUNE_BATCH && clock_mono_ms() < deadline);
    rep->payloads += total;
    if (total > 0)
        say(out, "cleared %lld expired message payloads", total);
    return 0;
}

static int run_table(PGconn *conn, const struct table_window *t, bool dry_run, FILE *out, struct retention_report *rep,
                     int64_t deadline, char *err, size_t errlen)
{
    char w[24];
    snprintf(w, sizeof w, "%" PRId64, t->window);
    const char *p[] = {t->table, w};
    PGresult *plan = query_exec(conn, Q_RETENTION_PLAN, p, err, errlen);
    if (!plan)
        return -1;
    int rc = -1;
    if (finish_leftovers(conn, t->table, plan, dry_run, out, rep, err, errlen) == 0 &&
        extend_ahead(conn, t->table, retention_width_ms(t->window), dry_run, out, rep, err, errlen) == 0 &&
        expire(conn, t->table, plan, dry_run, out, rep, err, errlen) == 0 &&
        prune(conn, Q_RETENTION_PRUNE_KEPT, t->table, t->window, dry_run, out, rep, deadline, err, errlen) == 0)
        rc = 0;
    PQclear(plan);
    return rc;
}

/* A one-row boolean statement (the advisory lock's answer). */
static int boolean(PGconn *conn, enum query_id q, bool *v, char *err, size_t errlen)
{
    PGresult *r = query_exec(conn, q, NULL, err, errlen);
    if (!r)
        return -1;
    *v = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    return 0;
}

/* Only the tables' owner may run a pass (DDL): refused up front, with
 * rep->forbidden, rather than failing half-way through a table. */
static int owner_check(PGconn *conn, struct retention_report *rep, char *err, size_t errlen)
{
    PGresult *r = query_exec(conn, Q_RETENTION_OWNER, NULL, err, errlen);
    if (!r)
        return -1;
    int rc = 0;
    if (PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, RETENTION_OWNER_ALLOWED), "t") != 0) {
        rep->forbidden = true;
        err_set(err, errlen,
                "insufficient privilege (SQLSTATE 42501): role %s does not own hookd's tables (owner: %s); a "
                "retention pass creates, detaches and drops partitions",
                PQgetvalue(r, 0, RETENTION_OWNER_ROLE), PQgetvalue(r, 0, RETENTION_OWNER_OWNER));
        rc = -1;
    }
    PQclear(r);
    return rc;
}

int retention_run(PGconn *conn, const struct retention_config *r, bool dry_run, FILE *out,
                  struct retention_report *rep, char *err, size_t errlen)
{
    memset(rep, 0, sizeof *rep);
    if (owner_check(conn, rep, err, errlen) != 0)
        return -1;
    bool locked = false;
    if (boolean(conn, Q_RETENTION_LOCK, &locked, err, errlen) != 0)
        return -1;
    if (!locked) {
        rep->skipped = true;
        say(out, "another retention pass is running: nothing done");
        return 0;
    }
    const struct table_window tables[] = {
        {"webhook_inbox", r->inbox},
        {"outbox_events", r->outbox},
        {"outbox_deliveries", r->outbox},
        {"attempts", r->attempts},
    };
    int64_t deadline = clock_mono_ms() + PRUNE_BUDGET_MS;
    int rc = db_command(conn, lock_timeout_sql, err, errlen);
    for (size_t i = 0; rc == 0 && i < sizeof tables / sizeof tables[0]; i++)
        rc = run_table(conn, &tables[i], dry_run, out, rep, deadline, err, errlen);
    if (rc == 0)
        rc = prune(conn, Q_RETENTION_PRUNE, "dedup", r->dedup, dry_run, out, rep, deadline, err, errlen);
    if (rc == 0)
        rc = prune(conn, Q_RETENTION_PRUNE, "dead_letters", r->dead_letters, dry_run, out, rep, deadline, err, errlen);
    if (rc == 0)
        rc = clear_payloads(conn, dry_run, out, rep, deadline, err, errlen);
    /* the lock and the setting go with the session anyway if this fails */
    char ignored[128];
    if (db_command(conn, lock_timeout_reset_sql, ignored, sizeof ignored) != 0 ||
        boolean(conn, Q_RETENTION_UNLOCK, &locked, ignored, sizeof ignored) != 0)
        PQreset(conn);
    return rc;
}

int retention_prepare(PGconn *conn, const struct retention_config *r, char *err, size_t errlen)
{
    struct retention_report rep = {0};
    bool locked = false;
    if (boolean(conn, Q_RETENTION_LOCK, &locked, err, errlen) != 0)
        return -1;
    if (!locked)
        return 0; /* a worker's pass is at it */
    const struct table_window tables[] = {
        {"webhook_inbox", r->inbox},
        {"outbox_events", r->outbox},
        {"outbox_deliveries", r->outbox},
        {"attempts", r->attempts},
    };
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof tables / sizeof tables[0]; i++)
        rc = extend_ahead(conn, tables[i].table, retention_width_ms(tables[i].window), false, NULL, &rep, err, errlen);
    char ignored[128];
    if (boolean(conn, Q_RETENTION_UNLOCK, &locked, ignored, sizeof ignored) != 0)
        PQreset(conn);
    return rc;
}

int retention_storage(PGconn *conn, const struct retention_config *r, struct retention_storage *out, char *err,
                      size_t errlen)
{
    char v[5][24];
    const int64_t w[5] = {r->inbox, r->outbox, r->attempts, r->dead_letters, r->dedup};
    const char *p[5];
    for (int i = 0; i < 5; i++) {
        snprintf(v[i], sizeof v[i], "%" PRId64, w[i]);
        p[i] = v[i];
    }
    PGresult *res = query_exec(conn, Q_RETENTION_STORAGE, p, err, errlen);
    if (!res)
        return -1;
    memset(out, 0, sizeof *out);
    for (int i = 0; i < PQntuples(res) && out->n < RETENTION_TABLES; i++) {
        struct retention_table *t = &out->t[out->n++];
        snprintf(t->name, sizeof t->name, "%s", PQgetvalue(res, i, RETENTION_STORAGE_TBL));
        t->bytes = strtoll(PQgetvalue(res, i, RETENTION_STORAGE_BYTES), NULL, 10);
        t->rows = strtoll(PQgetvalue(res, i, RETENTION_STORAGE_ROWS_ESTIMATE), NULL, 10);
        t->oldest_ms = strtoll(PQgetvalue(res, i, RETENTION_STORAGE_OLDEST_MS), NULL, 10);
        t->next_expiry_ms = strtoll(PQgetvalue(res, i, RETENTION_STORAGE_NEXT_EXPIRY_MS), NULL, 10);
    }
    PQclear(res);
    out->measured_ms = clock_wall_ms();
    return 0;
}
