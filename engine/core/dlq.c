/* Dead-letter queue queries and replay; see dlq.h. */
#include "dlq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"

/* The entry with what a person needs to recognise it, from either source. */
#define DLQ_SELECT                                                                                                   \
    "SELECT d.id::text, d.source, d.source_id::text,"                                                              \
    " coalesce(i.partner_name, ep.name) AS partner, coalesce(i.event_type, ev.event_type) AS event_type,"          \
    " CASE WHEN d.source = 'inbox' THEN coalesce(i.entity_type, '') || ':' || coalesce(i.entity_id, '')"         \
    "      ELSE coalesce(ev.aggregate_type, '') || ':' || coalesce(ev.aggregate_id, '') END,"                     \
    " d.attempts, d.reason, coalesce(d.last_error, ''), to_char(d.dead_at AT TIME ZONE 'UTC',"                  \
    " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), d.replay_count,"                                                         \
    " to_char(d.replayed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"                               \
    " coalesce(i.payload, ev.payload)::text, i.headers::text, ep.url, ev.id::text"                                 \
    " FROM dead_letters d"                                                                                         \
    " LEFT JOIN webhook_inbox i ON d.source = 'inbox' AND i.id = d.source_id"                                     \
    " LEFT JOIN outbox_deliveries od ON d.source = 'delivery' AND od.id = d.source_id"                            \
    " LEFT JOIN outbox_events ev ON ev.id = od.event_id"                                                          \
    " LEFT JOIN webhook_endpoints ep ON ep.id = od.endpoint_id "

static json_t *row_json(PGresult *r, int i, bool full)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:i}", "id", PQgetvalue(r, i, 0),
                          "source", PQgetvalue(r, i, 1), "source_id", PQgetvalue(r, i, 2), "partner",
                          PQgetvalue(r, i, 3), "event_type", PQgetvalue(r, i, 4), "entity", PQgetvalue(r, i, 5),
                          "attempts", atoi(PQgetvalue(r, i, 6)), "reason", PQgetvalue(r, i, 7), "last_error",
                          PQgetvalue(r, i, 8), "dead_at", PQgetvalue(r, i, 9), "replay_count",
                          atoi(PQgetvalue(r, i, 10)));
    if (!full)
        return o;
    json_object_set_new(o, "replayed_at", PQgetisnull(r, i, 11) ? json_null() : json_string(PQgetvalue(r, i, 11)));
    json_t *payload = PQgetisnull(r, i, 12) ? NULL : json_loads(PQgetvalue(r, i, 12), 0, NULL);
    json_object_set_new(o, "payload", payload ? payload : json_null());
    json_t *headers = PQgetisnull(r, i, 13) ? NULL : json_loads(PQgetvalue(r, i, 13), 0, NULL);
    json_object_set_new(o, "headers", headers ? headers : json_null());
    json_object_set_new(o, "endpoint_url", PQgetisnull(r, i, 14) ? json_null() : json_string(PQgetvalue(r, i, 14)));
    json_object_set_new(o, "event_id", PQgetisnull(r, i, 15) ? json_null() : json_string(PQgetvalue(r, i, 15)));
    return o;
}

json_t *dlq_list(PGconn *conn, const struct dlq_filter *f, char *err, size_t errlen)
{
    char since[24], limit[16];
    snprintf(since, sizeof since, "%lld", (long long)f->since_ms);
    snprintf(limit, sizeof limit, "%d", f->limit > 0 ? f->limit : 100);
    const char *p[] = {f->source, f->partner, f->event_type, f->since_ms > 0 ? since : NULL, limit};
    PGresult *r = db_exec(conn,
                          DLQ_SELECT
                          "WHERE d.replayed_at IS NULL"
                          " AND ($1::text IS NULL OR d.source = $1)"
                          " AND ($2::text IS NULL OR coalesce(i.partner_name, ep.name) = $2)"
                          " AND ($3::text IS NULL OR coalesce(i.event_type, ev.event_type) LIKE"
                          "  replace(replace(replace(replace($3, '\\', '\\\\'), '%', '\\%'), '_', '\\_'), '*', '%'))"
                          " AND ($4::bigint IS NULL OR d.dead_at >= now() - $4::bigint * interval '1 millisecond')"
                          " ORDER BY d.dead_at DESC, d.id LIMIT $5::int",
                          5, p, err, errlen);
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
    PGresult *r = db_exec(conn,
                          "SELECT to_char(attempted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),"
                          " outcome, duration_ms, status_code, coalesce(error, ''), coalesce(response_excerpt, ''),"
                          " coalesce(worker_id, '')"
                          " FROM attempts WHERE source = $1 AND source_id = $2::uuid ORDER BY id",
                          2, p, err, errlen);
    if (!r)
        return NULL;
    json_t *arr = json_array();
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *a = json_pack("{s:s, s:s, s:f, s:s, s:s, s:s}", "at", PQgetvalue(r, i, 0), "outcome",
                              PQgetvalue(r, i, 1), "duration_ms", atof(PQgetvalue(r, i, 2)), "error",
                              PQgetvalue(r, i, 4), "response", PQgetvalue(r, i, 5), "worker", PQgetvalue(r, i, 6));
        json_object_set_new(a, "status_code", PQgetisnull(r, i, 3) ? json_null() : json_integer(atoi(PQgetvalue(r, i, 3))));
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

json_t *dlq_show(PGconn *conn, const char *id, char *err, size_t errlen)
{
    if (!looks_like_uuid(id)) {
        snprintf(err, errlen, "'%s' is not a dead letter id (a UUID)", id);
        return NULL;
    }
    const char *p[] = {id};
    /* By the entry's id, else the newest entry of that source row. */
    PGresult *r = db_exec(conn, DLQ_SELECT "WHERE d.id = $1::uuid OR d.source_id = $1::uuid"
                                           " ORDER BY (d.id = $1::uuid) DESC, d.dead_at DESC LIMIT 1",
                          1, p, err, errlen);
    if (!r)
        return NULL;
    if (PQntuples(r) == 0) {
        PQclear(r);
        snprintf(err, errlen, "no dead letter %s", id);
        return NULL;
    }
    json_t *o = row_json(r, 0, true);
    char source[16], source_id[40];
    snprintf(source, sizeof source, "%s", PQgetvalue(r, 0, 1));
    snprintf(source_id, sizeof source_id, "%s", PQgetvalue(r, 0, 2));
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
    PGresult *r = db_exec(conn,
                          "SELECT source, source_id::text, replayed_at IS NOT NULL,"
                          " to_char(replayed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
                          " FROM dead_letters WHERE id = $1::uuid FOR UPDATE",
                          1, p, err, errlen);
    if (!r)
        return -1;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return snprintf(err, errlen, "no dead letter %s", id), -1;
    }
    snprintf(out->source, sizeof out->source, "%s", PQgetvalue(r, 0, 0));
    snprintf(out->source_id, sizeof out->source_id, "%s", PQgetvalue(r, 0, 1));
    bool replayed = PQgetvalue(r, 0, 2)[0] == 't';
    char when[32];
    snprintf(when, sizeof when, "%s", PQgetvalue(r, 0, 3));
    PQclear(r);
    if (replayed)
        return snprintf(err, errlen, "dead letter %s was already replayed at %s; refusing to replay it twice", id,
                        when), -1;
    const char *sp[] = {out->source_id};
    bool inbox = strcmp(out->source, "inbox") == 0;
    r = db_exec(conn,
                inbox ? "SELECT status, true FROM webhook_inbox WHERE id = $1::uuid FOR UPDATE"
                      : "SELECT d.status, ep.enabled, ep.name FROM outbox_deliveries d"
                        " JOIN webhook_endpoints ep ON ep.id = d.endpoint_id WHERE d.id = $1::uuid FOR UPDATE OF d",
                1, sp, err, errlen);
    if (!r)
        return -1;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return snprintf(err, errlen, "the %s row %s of dead letter %s no longer exists", out->source, out->source_id,
                        id), -1;
    }
    const char *status = PQgetvalue(r, 0, 0);
    if (strcmp(status, inbox ? "QUARANTINED" : "DEAD") != 0) {
        snprintf(err, errlen, "the %s row %s is %s, not dead-lettered; nothing to replay", out->source, out->source_id,
                 status);
        PQclear(r);
        return -1;
    }
    if (!inbox && PQgetvalue(r, 0, 1)[0] != 't') {
        snprintf(err, errlen, "endpoint '%s' is disabled; enable it first (hookd endpoint enable %s)",
                 PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 2));
        PQclear(r);
        return -1;
    }
    PQclear(r);
    if (dry_run)
        return 0;
    if (db_run(conn, "UPDATE dead_letters SET replayed_at = now(), replay_count = replay_count + 1 WHERE id = $1::uuid",
               1, p, err, errlen) != 0)
        return -1;
    if (inbox)
        return db_run(conn,
                      "UPDATE webhook_inbox SET status = 'PENDING', attempts = 0, deferrals = 0, outcome = NULL,"
                      " last_error = NULL, next_attempt_at = now(), replayed_at = now() WHERE id = $1::uuid",
                      1, sp, err, errlen);
    if (db_run(conn,
               "UPDATE outbox_deliveries SET status = 'PENDING', attempts = 0, last_error = NULL,"
               " next_attempt_at = now(), replayed_at = now() WHERE id = $1::uuid",
               1, sp, err, errlen) != 0)
        return -1;
    return db_run(conn,
                  "UPDATE outbox_events SET processed_at = NULL"
                  " WHERE id = (SELECT event_id FROM outbox_deliveries WHERE id = $1::uuid)",
                  1, sp, err, errlen);
}

int dlq_replay(PGconn *conn, const char *id, bool dry_run, struct dlq_replayed *out, char *err, size_t errlen)
{
    if (!looks_like_uuid(id))
        return snprintf(err, errlen, "'%s' is not a dead letter id (a UUID)", id), -1;
    if (db_run(conn, "BEGIN", 0, NULL, err, errlen) != 0)
        return -1;
    if (replay_in_tx(conn, id, dry_run, out, err, errlen) != 0) {
        db_rollback(conn);
        return -1;
    }
    if (dry_run) {
        db_rollback(conn);
        return 0;
    }
    return db_run(conn, "COMMIT", 0, NULL, err, errlen);
}

long dlq_purge(PGconn *conn, int64_t older_than_ms, bool dry_run, char *err, size_t errlen)
{
    char ms[24];
    snprintf(ms, sizeof ms, "%lld", (long long)older_than_ms);
    const char *p[] = {ms};
    PGresult *r = db_exec(conn,
                          dry_run ? "SELECT count(*) FROM dead_letters WHERE dead_at < now() - $1::bigint * interval '1 millisecond'"
                                  : "WITH gone AS (DELETE FROM dead_letters WHERE dead_at < now() - $1::bigint * interval '1 millisecond'"
                                    " RETURNING 1) SELECT count(*) FROM gone",
                          1, p, err, errlen);
    if (!r)
        return -1;
    long n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

long dlq_count(PGconn *conn)
{
    char err[128];
    PGresult *r = db_exec(conn, "SELECT count(*) FROM dead_letters WHERE replayed_at IS NULL", 0, NULL, err, sizeof err);
    if (!r)
        return -1;
    long n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}
