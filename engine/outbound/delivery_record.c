/* Recording a batch of delivery outcomes on a DB thread: the outcomes that
 * end a delivery (successes, the last attempt, 410 Gone, a bad URL, a
 * disabled or deleted endpoint) after one lock of their events, then the
 * failures that are retried, each set in one statement; what a statement
 * did not write (a delivery handed out twice, one finished elsewhere) is
 * recorded one by one, each in its own savepoint. See delivery_internal.h. */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "clock.h"
#include "config.h"
#include "db.h"
#include "delivery_internal.h"
#include "errbuf.h"
#include "log.h"
#include "query.h"
#include "rand.h"
#include "xmalloc.h"

/* Every statement here is prepared once per connection (query.h). */

/* A prepared statement with one binary uuid[] parameter. */
PGresult *delivery_record_query_ids(PGconn *conn, enum query_id id, const struct db_array *ids, char *err,
                                    size_t errlen)
{
    const char *p[] = {ids->buf};
    const int len[] = {(int)ids->len}, bin[] = {1};
    return query_prepared_fmt(conn, id, p, len, bin, err, errlen);
}

static int finish_event_if_done(PGconn *conn, const char *event_id, char *err, size_t errlen)
{
    const char *p[] = {event_id};
    PGresult *r = query_prepared(conn, Q_DELIVERY_FINISH_EVENT, p, err, errlen);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

static int insert_attempt(PGconn *conn, const struct record_job *job, const struct delivery_item *it,
                          const char *outcome, char *err, size_t errlen)
{
    char dur[32], status[16];
    snprintf(dur, sizeof dur, "%.3f", (double)it->duration_us / 1000.0);
    snprintf(status, sizeof status, "%d", it->status);
    const char *p[] = {it->id, outcome, dur, it->status ? status : NULL, it->error, it->excerpt, job->worker_id};
    PGresult *r = query_prepared(conn, Q_DELIVERY_INSERT_ATTEMPT, p, err, errlen);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

static int record_dead(PGconn *conn, struct delivery_item *it, const char *reason, char *err, size_t errlen)
{
    char attempts[16], status[16];
    snprintf(attempts, sizeof attempts, "%d", it->attempts);
    snprintf(status, sizeof status, "%d", it->status);
    const char *p[] = {it->id, attempts, it->status ? status : NULL, it->error};
    PGresult *r = query_prepared(conn, Q_DELIVERY_MARK_DEAD, p, err, errlen);
    if (!r)
        return -1;
    PQclear(r);
    const char *p2[] = {it->id, reason, attempts, it->error};
    r = query_prepared(conn, Q_DELIVERY_DEAD_LETTER, p2, err, errlen);
    if (!r)
        return -1;
    PQclear(r);
    it->dead = true;
    return finish_event_if_done(conn, it->event_id, err, errlen);
}

/* The wait before the next attempt after the attempts-th failure of it:
 * the endpoint's retry policy, stretched to the receiver's Retry-After
 * (within RETRY_AFTER_MAX_MS); -1 when this failure dead-letters. */
int64_t delivery_record_retry_wait(const struct hookd_config *cfg, const struct delivery_item *it, int attempts)
{
    const struct backoff_policy *policy = config_retry_for_endpoint(cfg, it->endpoint_name);
    int64_t wait = backoff_retry_delay(policy, attempts, rand_u64());
    if (wait >= 0 && it->retry_after_ms > wait)
        wait = it->retry_after_ms < RETRY_AFTER_MAX_MS ? it->retry_after_ms : RETRY_AFTER_MAX_MS;
    return wait;
}

/* A failed outcome that ends its delivery: the dead letter's reason, with
 * the attempt row's outcome in *outcome; NULL when the delivery is retried
 * (attempts: its count with this attempt). */
static const char *dead_reason(const struct record_job *job, const struct delivery_item *it, int attempts,
                               const char **outcome)
{
    *outcome = it->kind == R_GONE ? "gone" : "failed";
    switch (it->kind) {
    case R_BAD_URL: return it->error; /* no attempt can succeed: no retry budget spent on it */
    case R_GONE: return "endpoint gone (410)";
    case R_ENDPOINT_DELETED: return "endpoint deleted";
    case R_ENDPOINT_DISABLED: return "endpoint disabled";
    case R_PAYLOAD_EXPIRED: return "payload expired";
    case R_FAILED: return delivery_record_retry_wait(job->cfg, it, attempts) < 0 ? "retries exhausted" : NULL;
    default: return NULL;
    }
}

/* Writes one outcome. Returns 0, or -1 with err (the savepoint rolls back). */
static int record_one(PGconn *conn, const struct record_job *job, struct delivery_item *it, char *err, size_t errlen)
{
    /* The event row is the lock that serialises the outcomes of one event's
     * deliveries: without it, the last two recorded in overlapping
     * transactions would each see the other still pending, and the event
     * would never be marked processed. (Items are sorted by event id, so
     * two record jobs take these locks in the same order.) */
    const char *pev[] = {it->event_id};
    PGresult *r = query_prepared(conn, Q_DELIVERY_LOCK_EVENT, pev, err, errlen);
    if (!r)
        return -1;
    PQclear(r);
    const char *pid[] = {it->id};
    r = query_prepared(conn, Q_DELIVERY_LOCK_DELIVERY, pid, err, errlen);
    if (!r)
        return -1;
    if (PQntuples(r) == 0) { /* finished elsewhere meanwhile */
        PQclear(r);
        it->kind = R_SKIP_ACK;
        return 0;
    }
    it->attempts = atoi(PQgetvalue(r, 0, DELIVERY_LOCK_DELIVERY_ATTEMPTS)) + 1;
    PQclear(r);
    bool ok = it->kind == R_SUCCEEDED;
    const char *outcome = "succeeded";
    const char *reason = ok ? NULL : dead_reason(job, it, it->attempts, &outcome);
    /* an expired payload is never sent: no attempt (delivery_record_dead) */
    bool attempted = it->kind != R_PAYLOAD_EXPIRED;
    if (!attempted)
        it->attempts--;
    if (attempted && insert_attempt(conn, job, it, outcome, err, errlen) != 0)
        return -1;
    char attempts[16], status[16];
    snprintf(attempts, sizeof attempts, "%d", it->attempts);
    snprintf(status, sizeof status, "%d", it->status);
    if (ok) {
        char at[24];
        snprintf(at, sizeof at, "%lld", (long long)it->answered_ms);
        const char *p[] = {it->id, attempts, status, at};
        r = query_prepared(conn, Q_DELIVERY_MARK_SUCCEEDED, p, err, errlen);
        if (!r)
            return -1;
        PQclear(r);
        return finish_event_if_done(conn, it->event_id, err, errlen);
    }
    if (it->kind == R_GONE) {
        const char *p[] = {it->endpoint_name};
        r = query_prepared(conn, Q_DELIVERY_DISABLE_GONE_ENDPOINT, p, err, errlen);
        if (!r)
            return -1;
        PQclear(r);
    }
    if (reason)
        return record_dead(conn, it, reason, err, errlen);
    int64_t wait = delivery_record_retry_wait(job->cfg, it, it->attempts);
    char ms[24];
    snprintf(ms, sizeof ms, "%lld", (long long)(wait > 0 ? wait : 0));
    const char *p[] = {it->id, attempts, it->status ? status : NULL, it->error, ms};
    r = query_prepared(conn, Q_DELIVERY_RETRY, p, err, errlen);
    if (!r)
        return -1;
    it->next_due_ms = strtoll(PQgetvalue(r, 0, DELIVERY_RETRY_DUE_MS), NULL, 10);
    PQclear(r);
    return 0;
}

static int by_event(const void *a, const void *b)
{
    return strcmp((*(struct delivery_item *const *)a)->event_id, (*(struct delivery_item *const *)b)->event_id);
}

static int by_id(const void *a, const void *b)
{
    return strcmp((*(struct delivery_item *const *)a)->id, (*(struct delivery_item *const *)b)->id);
}

/* Marks the items whose delivery appears twice in the job (handed out
 * twice): the set-based statements leave them to record_one, whose row
 * lock serialises the two. */
static void mark_twice(struct record_job *job)
{
    struct delivery_item **s = xcalloc(job->n + 1, sizeof *s);
    memcpy(s, job->items, job->n * sizeof *s);
    qsort(s, job->n, sizeof *s, by_id);
    for (size_t i = 0; i < job->n; i++)
        s[i]->twice = (i > 0 && strcmp(s[i - 1]->id, s[i]->id) == 0) ||
                      (i + 1 < job->n && strcmp(s[i + 1]->id, s[i]->id) == 0);
    free(s);
}

/* ---- set-based recording ----------------------------------------------------
 * The outcomes of a record job go in a few statements for the whole job,
 * each taking one binary array per column (one element per item): the
 * columns every outcome has, then the statement's own. A delivery is
 * written only where it is still open and its attempts are still the count
 * it was loaded with; the statement returns the job indexes it wrote, and
 * whatever it did not write is left to record_one. */
enum { C_ID, C_PREV, C_CODE, C_DUR, C_ERROR, C_EXCERPT, C_I, C_COMMON };
#define C_MAX (C_COMMON + 3)

struct set_params {
    struct db_array a[C_MAX];
    int n;
    bool bad; /* an id that is not a uuid (cannot come from Postgres) */
};

static void set_params_init(struct set_params *sp, const unsigned *extra_oids, int nextra, size_t n)
{
    static const unsigned oids[C_COMMON] = {DB_OID_UUID, DB_OID_INT4, DB_OID_INT4, DB_OID_FLOAT8,
                                            DB_OID_TEXT, DB_OID_TEXT, DB_OID_INT4};
    sp->n = C_COMMON + nextra;
    sp->bad = false;
    for (int k = 0; k < sp->n; k++)
        db_array_init(&sp->a[k], k < C_COMMON ? oids[k] : extra_oids[k - C_COMMON], n);
}

static void text_or_null(struct db_array *a, const char *v)
{
    if (v)
        db_array_text(a, v);
    else
        db_array_null(a);
}

/* An item's common columns. */
static void set_params_add(struct set_params *sp, const struct delivery_item *it)
{
    if (db_array_uuid(&sp->a[C_ID], it->id) != 0)
        sp->bad = true;
    db_array_int4(&sp->a[C_PREV], it->prev_attempts);
    if (it->status)
        db_array_int4(&sp->a[C_CODE], it->status);
    else
        db_array_null(&sp->a[C_CODE]);
    db_array_float8(&sp->a[C_DUR], (double)it->duration_us / 1000.0);
    text_or_null(&sp->a[C_ERROR], it->error);
    text_or_null(&sp->a[C_EXCERPT], it->excerpt);
    db_array_int4(&sp->a[C_I], (int32_t)it->batch_index);
}

/* Runs the statement with the arrays and the worker id as its last
 * parameter, and frees the arrays. NULL with err on failure. */
static PGresult *set_params_run(PGconn *conn, enum query_id id, struct set_params *sp, const char *worker_id,
                                char *err, size_t errlen)
{
    const char *p[C_MAX + 1];
    int len[C_MAX + 1], fmt[C_MAX + 1];
    for (int k = 0; k < sp->n; k++) {
        p[k] = sp->a[k].buf;
        len[k] = (int)sp->a[k].len;
        fmt[k] = 1;
    }
    p[sp->n] = worker_id;
    len[sp->n] = 0;
    fmt[sp->n] = 0;
    PGresult *r = NULL;
    if (sp->bad)
        err_set(err, errlen, "a delivery id that is not one");
    else
        r = query_prepared_fmt(conn, id, p, len, fmt, err, errlen);
    for (int k = 0; k < sp->n; k++)
        free(sp->a[k].buf);
    return r;
}

/* The job's item that row `row` of a set statement's result names (its
 * column `col` is the job index), or NULL. */
static struct delivery_item *set_row_item(const struct record_job *job, PGresult *r, int row, int col)
{
    long i = atol(PQgetvalue(r, row, col));
    return i >= 0 && (size_t)i < job->n ? job->items[i] : NULL;
}

/* Successes: SUCCEEDED with their attempt rows (delivery_record_successes).
 * A success whose delivery is no longer open was finished elsewhere: only
 * acknowledged. */
static int record_successes(PGconn *conn, struct record_job *job, json_t *rows, char *err, size_t errlen)
{
    char *r_text = json_dumps(rows, JSON_COMPACT);
    const char *pr[] = {r_text, job->worker_id};
    PGresult *r = query_prepared(conn, Q_DELIVERY_RECORD_SUCCESSES, pr, err, errlen);
    free(r_text);
    if (!r)
        return -1;
    for (int row = 0; row < PQntuples(r); row++) {
        struct delivery_item *it = set_row_item(job, r, row, DELIVERY_RECORD_SUCCESSES_I);
        if (it)
            it->recorded = true;
    }
    PQclear(r);
    for (size_t i = 0; i < job->n; i++)
        if (job->items[i]->kind == R_SUCCEEDED && !job->items[i]->recorded)
            job->items[i]->kind = R_SKIP_ACK;
    return 0;
}

/* Failures that end their delivery (delivery_record_dead): DEAD, attempt
 * row, dead letter, and the endpoints that answered 410 disabled. */
static int record_dead_set(PGconn *conn, struct record_job *job, struct delivery_item **dead, const char **reasons,
                           const char **outcomes, size_t n, char *err, size_t errlen)
{
    static const unsigned extra[] = {DB_OID_TEXT, DB_OID_TEXT, DB_OID_TEXT};
    struct set_params sp;
    set_params_init(&sp, extra, 3, n);
    for (size_t j = 0; j < n; j++) {
        set_params_add(&sp, dead[j]);
        db_array_text(&sp.a[C_COMMON], outcomes[j]);
        db_array_text(&sp.a[C_COMMON + 1], reasons[j]);
        db_array_text(&sp.a[C_COMMON + 2], dead[j]->endpoint_name);
    }
    PGresult *r = set_params_run(conn, Q_DELIVERY_RECORD_DEAD, &sp, job->worker_id, err, errlen);
    if (!r)
        return -1;
    for (int row = 0; row < PQntuples(r); row++) {
        struct delivery_item *it = set_row_item(job, r, row, DELIVERY_RECORD_DEAD_I);
        if (!it)
            continue;
        it->recorded = it->dead = true;
        it->attempts = it->prev_attempts + (it->kind == R_PAYLOAD_EXPIRED ? 0 : 1); /* never sent: none spent */
    }
    PQclear(r);
    return 0;
}

/* The outcomes that end their delivery, set-wise: successes, and failures
 * that dead-letter (the last attempt, 410 Gone, a bad URL, a disabled or
 * deleted endpoint). Their events are locked first in id order (the order
 * record_one takes them in, one after another), and afterwards the events
 * whose deliveries are all done are marked processed. Returns 0, or -1
 * (the caller rolls back to its savepoint and records them one by one). */
static int record_finals(PGconn *conn, struct record_job *job, char *err, size_t errlen)
{
    json_t *rows = json_array();
    const char **events = xcalloc(job->n + 1, sizeof *events);
    struct delivery_item **dead = xcalloc(job->n + 1, sizeof *dead);
    const char **reasons = xcalloc(job->n + 1, sizeof *reasons);
    const char **outcomes = xcalloc(job->n + 1, sizeof *outcomes);
    size_t nevents = 0, ndead = 0;
    for (size_t i = 0; i < job->n; i++) {
        struct delivery_item *it = job->items[i];
        if (it->kind == R_SUCCEEDED) {
            json_array_append_new(rows, json_pack("{s:I, s:s, s:i, s:f, s:I, s:s?}", "i", (json_int_t)i, "id", it->id,
                                                  "code", it->status, "dur", (double)it->duration_us / 1000.0, "at",
                                                  (json_int_t)it->answered_ms, "excerpt", it->excerpt));
            events[nevents++] = it->event_id;
        } else if (it->prev_attempts >= 0 && !it->twice && !it->recorded &&
                   (reasons[ndead] = dead_reason(job, it, it->prev_attempts + 1, &outcomes[ndead])) != NULL) {
            dead[ndead++] = it;
            events[nevents++] = it->event_id;
        }
    }
    int rc = 0;
    if (nevents > 0) {
        struct db_array e_ids;
        db_array_uuids(&e_ids, events, nevents);
        PGresult *r = delivery_record_query_ids(conn, Q_DELIVERY_LOCK_EVENTS, &e_ids, err, errlen);
        if (r)
            PQclear(r);
        else
            rc = -1;
        if (rc == 0 && json_array_size(rows) > 0)
            rc = record_successes(conn, job, rows, err, errlen);
        if (rc == 0 && ndead > 0)
            rc = record_dead_set(conn, job, dead, reasons, outcomes, ndead, err, errlen);
        if (rc == 0 && (r = delivery_record_query_ids(conn, Q_DELIVERY_FINISH_EVENTS, &e_ids, err, errlen)) != NULL)
            PQclear(r);
        else if (rc == 0)
            rc = -1;
        free(e_ids.buf);
    }
    json_decref(rows);
    free(events);
    free(dead);
    free(reasons);
    free(outcomes);
    return rc;
}

/* Plain failures that will be retried (the common failure), recorded
 * set-wise in one statement for the whole job (delivery_record_failures):
 * attempt rows, RETRYING and due times. Returns 0, or -1 (the caller rolls
 * back to its savepoint and records them one by one). */
static int record_failures(PGconn *conn, struct record_job *job, char *err, size_t errlen)
{
    struct delivery_item **f = xcalloc(job->n + 1, sizeof *f);
    int64_t *wait = xcalloc(job->n + 1, sizeof *wait);
    size_t m = 0;
    for (size_t i = 0; i < job->n; i++) {
        struct delivery_item *it = job->items[i];
        if (it->kind != R_FAILED || it->recorded || it->prev_attempts < 0 || it->twice)
            continue;
        int64_t w = delivery_record_retry_wait(job->cfg, it, it->prev_attempts + 1);
        if (w < 0)
            continue; /* the last attempt, not written by record_finals: one by one */
        wait[m] = w;
        f[m++] = it;
    }
    int rc = 0;
    if (m > 0) {
        static const unsigned extra[] = {DB_OID_INT8};
        struct set_params sp;
        set_params_init(&sp, extra, 1, m);
        for (size_t j = 0; j < m; j++) {
            set_params_add(&sp, f[j]);
            db_array_int8(&sp.a[C_COMMON], wait[j]);
        }
        PGresult *r = set_params_run(conn, Q_DELIVERY_RECORD_FAILURES, &sp, job->worker_id, err, errlen);
        if (r) {
            for (int row = 0; row < PQntuples(r); row++) {
                struct delivery_item *it = set_row_item(job, r, row, DELIVERY_RECORD_FAILURES_I);
                if (!it)
                    continue;
                it->recorded = true;
                it->attempts = it->prev_attempts + 1;
                it->next_due_ms = strtoll(PQgetvalue(r, row, DELIVERY_RECORD_FAILURES_DUE_MS), NULL, 10);
            }
            PQclear(r);
        } else {
            rc = -1;
        }
    }
    free(f);
    free(wait);
    return rc;
}

/* After the commit: the next delivery of each aggregate whose ordered
 * delivery just succeeded, to schedule at once (done_record) rather than
 * at the end of its hold (hookd_delivery_blocked_ms: 200 ms behind an open
 * delivery). Best effort: on failure the hold's poll still releases them. */
static void ordered_next(PGconn *conn, struct record_job *job)
{
    const char **ids = xcalloc(job->n + 1, sizeof *ids);
    size_t n = 0;
    for (size_t i = 0; i < job->n; i++) {
        const struct delivery_item *it = job->items[i];
        if (it->ordered && it->recorded && it->kind == R_SUCCEEDED)
            ids[n++] = it->id;
    }
    if (n > 0) {
        char err[256];
        struct db_array a;
        db_array_uuids(&a, ids, n);
        PGresult *r = delivery_record_query_ids(conn, Q_DELIVERY_ORDERED_NEXT, &a, err, sizeof err);
        free(a.buf);
        if (r) {
            job->nwake = (size_t)PQntuples(r);
            job->wake_ids = xcalloc(job->nwake + 1, sizeof *job->wake_ids);
            job->wake_due = xcalloc(job->nwake + 1, sizeof *job->wake_due);
            for (size_t k = 0; k < job->nwake; k++) {
                job->wake_ids[k] = xstrdup(PQgetvalue(r, (int)k, DELIVERY_ORDERED_NEXT_ID));
                job->wake_due[k] = strtoll(PQgetvalue(r, (int)k, DELIVERY_ORDERED_NEXT_DUE_MS), NULL, 10);
            }
            PQclear(r);
        } else {
            log_warn("delivery.ordered_next_failed", "deliveries=%zu error=\"%s\"", n, err);
        }
    }
    free(ids);
}

/* Every savepoint command is checked: one that fails leaves the
 * transaction aborted, and a COMMIT then would roll back everything while
 * answering OK. The job is abandoned instead (not committed: every item is
 * due again in a second). */
void delivery_record_work(PGconn *conn, void *arg)
{
    struct record_job *job = arg;
    char err[256];
    qsort(job->items, job->n, sizeof *job->items, by_event);
    for (size_t i = 0; i < job->n; i++)
        job->items[i]->batch_index = i;
    mark_twice(job);
    if (!conn || db_command(conn, "BEGIN", err, sizeof err) != 0)
        return;
    if (db_command(conn, "SAVEPOINT finals", err, sizeof err) != 0)
        goto abandon;
    if (record_finals(conn, job, err, sizeof err) != 0) {
        log_warn("delivery.record_failed", "batch=%zu error=\"%s\" note=\"recording one by one\"", job->n, err);
        if (db_command(conn, "ROLLBACK TO SAVEPOINT finals", err, sizeof err) != 0)
            goto abandon;
        for (size_t i = 0; i < job->n; i++)
            job->items[i]->recorded = job->items[i]->dead = false;
    }
    if (db_command(conn, "SAVEPOINT failures", err, sizeof err) != 0)
        goto abandon;
    if (record_failures(conn, job, err, sizeof err) != 0) {
        log_warn("delivery.record_failed", "batch=%zu error=\"%s\" note=\"recording failures one by one\"", job->n,
                 err);
        if (db_command(conn, "ROLLBACK TO SAVEPOINT failures", err, sizeof err) != 0)
            goto abandon;
        for (size_t i = 0; i < job->n; i++)
            if (job->items[i]->kind == R_FAILED && !job->items[i]->dead)
                job->items[i]->recorded = false;
    }
    for (size_t i = 0; i < job->n; i++) {
        struct delivery_item *it = job->items[i];
        if (it->kind == R_SKIP_ACK || it->kind == R_SKIP_LATER || it->recorded)
            continue;
        if (db_command(conn, "SAVEPOINT rec", err, sizeof err) != 0)
            goto abandon;
        if (record_one(conn, job, it, err, sizeof err) == 0) {
            it->recorded = true;
            if (db_command(conn, "RELEASE SAVEPOINT rec", err, sizeof err) != 0)
                goto abandon;
        } else {
            log_warn("delivery.record_failed", "id=%s error=\"%s\"", it->id, err);
            if (db_command(conn, "ROLLBACK TO SAVEPOINT rec", err, sizeof err) != 0)
                goto abandon;
        }
        if (db_conn_lost(conn))
            return;
    }
    job->committed = db_command(conn, "COMMIT", err, sizeof err) == 0;
    if (job->committed)
        ordered_next(conn, job);
    return;
abandon:
    log_warn("delivery.record_abandoned", "batch=%zu error=\"%s\"", job->n, err);
    db_rollback(conn);
}
