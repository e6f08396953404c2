/* Dead-letter queue queries and replay; see dlq.h. The statements are
 * sql/queries/dlq_*.sql. */
#include "dlq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "errbuf.h"
#include "query.h"
#include "xmalloc.h"

/* dlq_show.sql begins with dlq_list.sql's columns, in the same order, so
 * that one reader serves both results. */
#define DLQ_SAME(col) ((int)DLQ_LIST_##col == (int)DLQ_SHOW_##col)
_Static_assert(DLQ_SAME(ID) && DLQ_SAME(SOURCE) && DLQ_SAME(SOURCE_ID) && DLQ_SAME(PARTNER) && DLQ_SAME(EVENT_TYPE) &&
                   DLQ_SAME(ENTITY) && DLQ_SAME(ATTEMPTS) && DLQ_SAME(REASON) && DLQ_SAME(LAST_ERROR) &&
                   DLQ_SAME(DEAD_AT) && DLQ_SAME(REPLAY_COUNT),
               "dlq_show.sql must begin with the columns of dlq_list.sql");

/* NULL for an SQL NULL, else the value's text (borrowed from r). */
static json_t *nullable_string(const PGresult *r, int i, int col)
{
    return PQgetisnull(r, i, col) ? json_null() : json_string(PQgetvalue(r, i, col));
}

/* Row i of a dlq_list or (full) dlq_show result. */
static json_t *row_json(const PGresult *r, int i, bool full)
{
#define V(col) PQgetvalue(r, i, DLQ_LIST_##col)
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:i}", "id", V(ID), "source", V(SOURCE),
                          "source_id", V(SOURCE_ID), "partner", V(PARTNER), "event_type", V(EVENT_TYPE), "entity",
                          V(ENTITY), "attempts", atoi(V(ATTEMPTS)), "reason", V(REASON), "last_error", V(LAST_ERROR),
                          "dead_at", V(DEAD_AT), "replay_count", atoi(V(REPLAY_COUNT)));
#undef V
    if (!full)
        return o;
    json_object_set_new(o, "replayed_at", nullable_string(r, i, DLQ_SHOW_REPLAYED_AT));
    json_object_set_new(o, "payload", nullable_string(r, i, DLQ_SHOW_PAYLOAD));
    json_object_set_new(o, "headers", nullable_string(r, i, DLQ_SHOW_HEADERS));
    json_object_set_new(o, "endpoint_url", nullable_string(r, i, DLQ_SHOW_ENDPOINT_URL));
    json_object_set_new(o, "event_id", nullable_string(r, i, DLQ_SHOW_EVENT_ID));
    return o;
}

json_t *dlq_list(PGconn *conn, const struct dlq_filter *f, char *err, size_t errlen)
{
    char since[24], limit[16];
    snprintf(since, sizeof since, "%lld", (long long)f->since_ms);
    snprintf(limit, sizeof limit, "%d", f->limit > 0 ? f->limit : 100);
    const char *p[] = {f->source, f->partner, f->event_type, f->since_ms > 0 ? since : NULL, limit, f->tenant};
    PGresult *r = query_exec(conn, Q_DLQ_LIST, p, err, errlen);
    if (!r)
        return NULL;
    json_t *arr = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(arr, row_json(r, i, false));
    PQclear(r);
    return arr;
}

static json_t *attempt_history(PGconn *conn, const char *source, const char *source_id, char *err, size_t errlen)
{
    const char *p[] = {source, source_id};
    PGresult *r = query_exec(conn, Q_DLQ_ATTEMPTS, p, err, errlen);
    if (!r)
        return NULL;
    json_t *arr = json_array();
    for (int i = 0; i < PQntuples(r); i++) {
#define V(col) PQgetvalue(r, i, DLQ_ATTEMPTS_##col)
        json_t *a = json_pack("{s:s, s:s, s:f, s:s, s:s, s:s}", "at", V(ATTEMPTED_AT), "outcome", V(OUTCOME),
                              "duration_ms", atof(V(DURATION_MS)), "error", V(ERROR), "response", V(RESPONSE),
                              "worker", V(WORKER));
        json_object_set_new(a, "status_code",
                            PQgetisnull(r, i, DLQ_ATTEMPTS_STATUS_CODE) ? json_null()
                                                                        : json_integer(atoi(V(STATUS_CODE))));
#undef V
        json_array_append_new(arr, a);
    }
    PQclear(r);
    return arr;
}

static bool looks_like_uuid(const char *s)
{
    size_t n = strlen(s);
    return n == 36 && strspn(s, "0123456789abcdefABCDEF-") == n;
}

/* The dlq_show.sql row of an entry, or NULL with err. */
static PGresult *show_row(PGconn *conn, const char *id, char *err, size_t errlen)
{
    if (!looks_like_uuid(id)) {
        err_set(err, errlen, "'%s' is not a dead letter id (a UUID)", id);
        return NULL;
    }
    const char *p[] = {id};
    /* By the entry's id, else the newest entry of that source row. */
    PGresult *r = query_exec(conn, Q_DLQ_SHOW, p, err, errlen);
    if (r && PQntuples(r) == 0) {
        PQclear(r);
        err_set(err, errlen, "no dead letter %s", id);
        return NULL;
    }
    return r;
}

char *dlq_payload(PGconn *conn, const char *id, char *err, size_t errlen)
{
    PGresult *r = show_row(conn, id, err, errlen);
    if (!r)
        return NULL;
    char *text = xstrdup(PQgetisnull(r, 0, DLQ_SHOW_PAYLOAD) ? "null" : PQgetvalue(r, 0, DLQ_SHOW_PAYLOAD));
    PQclear(r);
    return text;
}

json_t *dlq_show(PGconn *conn, const char *id, char *err, size_t errlen)
{
    PGresult *r = show_row(conn, id, err, errlen);
    if (!r)
        return NULL;
    json_t *o = row_json(r, 0, true);
    char source[16], source_id[40];
    snprintf(source, sizeof source, "%s", PQgetvalue(r, 0, DLQ_SHOW_SOURCE));
    snprintf(source_id, sizeof source_id, "%s", PQgetvalue(r, 0, DLQ_SHOW_SOURCE_ID));
    PQclear(r);
    json_t *hist = attempt_history(conn, source, source_id, err, errlen);
    if (!hist) {
        json_decref(o);
        return NULL;
    }
    json_object_set_new(o, "attempts_history", hist);
    return o;
}

/* The checks and updates of one replay, inside the caller's transaction. */
static int replay_in_tx(PGconn *conn, const char *id, bool dry_run, struct dlq_replayed *out, char *err, size_t errlen)
{
    const char *p[] = {id};
    PGresult *r = query_exec(conn, Q_DLQ_LOCK_ENTRY, p, err, errlen);
    if (!r)
        return -1;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return err_set(err, errlen, "no dead letter %s", id);
    }
    snprintf(out->source, sizeof out->source, "%s", PQgetvalue(r, 0, DLQ_LOCK_ENTRY_SOURCE));
    snprintf(out->source_id, sizeof out->source_id, "%s", PQgetvalue(r, 0, DLQ_LOCK_ENTRY_SOURCE_ID));
    bool replayed = PQgetvalue(r, 0, DLQ_LOCK_ENTRY_REPLAYED)[0] == 't';
    char when[32];
    snprintf(when, sizeof when, "%s", PQgetvalue(r, 0, DLQ_LOCK_ENTRY_REPLAYED_AT));
    PQclear(r);
    if (replayed)
        return err_set(err, errlen, "dead letter %s was already replayed at %s; refusing to replay it twice", id,
                       when),
               -1;
    const char *sp[] = {out->source_id};
    bool inbox = strcmp(out->source, "inbox") == 0;
    r = query_exec(conn, inbox ? Q_DLQ_LOCK_INBOX_ROW : Q_DLQ_LOCK_DELIVERY_ROW, sp, err, errlen);
    if (!r)
        return -1;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return err_set(err, errlen, "the %s row %s of dead letter %s no longer exists", out->source, out->source_id,
                       id),
               -1;
    }
    const char *status = PQgetvalue(r, 0, inbox ? DLQ_LOCK_INBOX_ROW_STATUS : DLQ_LOCK_DELIVERY_ROW_STATUS);
    if (strcmp(status, inbox ? "QUARANTINED" : "DEAD") != 0) {
        err_set(err, errlen, "the %s row %s is %s, not dead-lettered; nothing to replay", out->source, out->source_id,
                status);
        PQclear(r);
        return -1;
    }
    if (!inbox && PQgetvalue(r, 0, DLQ_LOCK_DELIVERY_ROW_ENABLED)[0] != 't') {
        const char *endpoint = PQgetvalue(r, 0, DLQ_LOCK_DELIVERY_ROW_NAME);
        err_set(err, errlen, "endpoint '%s' is disabled; enable it first (hookd endpoint enable %s)", endpoint,
                endpoint);
        PQclear(r);
        return -1;
    }
    PQclear(r);
    if (dry_run)
        return 0;
    if (query_run(conn, Q_DLQ_MARK_REPLAYED, p, err, errlen) != 0)
        return -1;
    if (inbox)
        return query_run(conn, Q_DLQ_REPLAY_INBOX, sp, err, errlen);
    if (query_run(conn, Q_DLQ_REPLAY_DELIVERY, sp, err, errlen) != 0)
        return -1;
    return query_run(conn, Q_DLQ_REOPEN_EVENT, sp, err, errlen);
}

int dlq_replay(PGconn *conn, const char *id, bool dry_run, struct dlq_replayed *out, char *err, size_t errlen)
{
    if (!looks_like_uuid(id))
        return err_set(err, errlen, "'%s' is not a dead letter id (a UUID)", id);
    if (db_command(conn, "BEGIN", err, errlen) != 0)
        return -1;
    if (replay_in_tx(conn, id, dry_run, out, err, errlen) != 0) {
        db_rollback(conn);
        return -1;
    }
    if (dry_run) {
        db_rollback(conn);
        return 0;
    }
    return db_command(conn, "COMMIT", err, errlen);
}

long dlq_purge(PGconn *conn, int64_t older_than_ms, bool dry_run, char *err, size_t errlen)
{
    char ms[24];
    snprintf(ms, sizeof ms, "%lld", (long long)older_than_ms);
    const char *p[] = {ms};
    PGresult *r = query_exec(conn, dry_run ? Q_DLQ_COUNT_OLDER : Q_DLQ_PURGE, p, err, errlen);
    if (!r)
        return -1;
    _Static_assert((int)DLQ_COUNT_OLDER_ENTRIES == (int)DLQ_PURGE_ENTRIES, "one reader for both counts");
    long n = atol(PQgetvalue(r, 0, DLQ_PURGE_ENTRIES));
    PQclear(r);
    return n;
}

long dlq_count(PGconn *conn)
{
    char err[128];
    PGresult *r = query_exec(conn, Q_DLQ_COUNT, NULL, err, sizeof err);
    if (!r)
        return -1;
    long n = atol(PQgetvalue(r, 0, DLQ_COUNT_ENTRIES));
    PQclear(r);
    return n;
}
