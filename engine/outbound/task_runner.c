/* The background tasks' runner; see outbound.h. One job at a time on the
 * shared pool: a claim (when the runner holds no task), then one batch of
 * the task held. A batch is one transaction: it locks the task's row (still
 * running, still this worker's), does the next TASK_RUNNER_BATCH items
 * after the stored cursor, and stores the new cursor, the task's data and
 * a renewed lease. So a worker killed mid-batch commits nothing of it, and
 * the worker that claims the task after the lease resumes at the cursor of
 * the last committed batch. The deliveries a batch made due are scheduled
 * in Redis after its commit (the reconciler finds them if that fails). */
#include "outbound.h"

#include <event2/event.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "ctx.h"
#include "db.h"
#include "log.h"
#include "loop_timer.h"
#include "payload_filter.h"
#include "query.h"
#include "sched.h"
#include "xmalloc.h"

/* Items (dead deliveries, candidate messages) per batch: a batch's
 * transaction stays short whatever the task's size. */
#define TASK_RUNNER_BATCH 100
#define TASK_RUNNER_STR_(x) #x
#define TASK_RUNNER_STR(x) TASK_RUNNER_STR_(x)
#define TASK_RUNNER_BATCH_TEXT TASK_RUNNER_STR(TASK_RUNNER_BATCH)
/* How often an idle runner looks for a task to claim. */
#define TASK_RUNNER_POLL_MS 1000

struct task_runner {
    struct hookd_ctx *ctx;
    struct event *timer;
    bool busy, stopped;
    char task[40]; /* the task held (its uuid), "" for none */
    /* the job in flight (busy) */
    char lease[40]; /* the lease as an interval */
    bool more;      /* the task goes on: its next batch at once */
    char *due[TASK_RUNNER_BATCH];
    int64_t due_ms[TASK_RUNNER_BATCH];
    size_t ndue;
    char err[256];
};

/* One batch's outcome: the cursor after it (owned), whether the task is
 * done, and the messages it sent. */
struct batch {
    char *cursor;
    bool done;
    json_int_t sent;
};

static void add_due(struct task_runner *t, const char *id, int64_t due_ms)
{
    if (t->ndue < TASK_RUNNER_BATCH) {
        t->due_ms[t->ndue] = due_ms;
        t->due[t->ndue++] = xstrdup(id);
    }
}

/* The outcome of a batch statement that answers one row: the deliveries it
 * made due (a JSON array in column ids_col, or -1), the last item it
 * examined (the next cursor) and how many it examined. Frees res. */
static void batch_outcome(struct task_runner *t, PGresult *res, int ids_col, int last_col, int examined_col,
                          struct batch *b)
{
    if (ids_col >= 0) {
        json_t *ids = json_loads(PQgetvalue(res, 0, ids_col), 0, NULL);
        size_t i;
        json_t *id;
        json_array_foreach(ids, i, id) add_due(t, json_string_value(id), 0);
        b->sent = (json_int_t)json_array_size(ids);
        json_decref(ids);
    }
    b->cursor = query_value_dup(res, 0, last_col);
    b->done = atoi(PQgetvalue(res, 0, examined_col)) < TASK_RUNNER_BATCH;
    PQclear(res);
}

static const char *param(const json_t *params, const char *name)
{
    return json_string_value(json_object_get(params, name));
}

/* Recover: the next dead deliveries go back to PENDING. */
static int batch_recover(PGconn *conn, struct task_runner *t, const char *tenant, const json_t *params,
                         const char *cursor, struct batch *b)
{
    (void)tenant;
    const char *p[] = {param(params, "endpoint"), param(params, "since"), param(params, "until"), cursor,
                       TASK_RUNNER_BATCH_TEXT};
    PGresult *res = query_exec(conn, Q_TASK_RUNNER_RECOVER, p, t->err, sizeof t->err);
    if (!res)
        return -1;
    batch_outcome(t, res, TASK_RUNNER_RECOVER_IDS, TASK_RUNNER_RECOVER_LAST, TASK_RUNNER_RECOVER_EXAMINED, b);
    return 0;
}

/* Bulk replay: the next of the endpoint's deliveries that match the
 * filters are opened again. */
static int batch_bulk_replay(PGconn *conn, struct task_runner *t, const char *tenant, const json_t *params,
                             const char *cursor, struct batch *b)
{
    const json_t *types = json_object_get(params, "eventTypes");
    char *types_text = json_is_array(types) ? json_dumps(types, JSON_COMPACT) : NULL;
    char status[24] = "", class[24] = "";
    if (json_is_integer(json_object_get(params, "status")))
        snprintf(status, sizeof status, "%lld", (long long)json_integer_value(json_object_get(params, "status")));
    if (json_is_integer(json_object_get(params, "statusCodeClass")))
        snprintf(class, sizeof class, "%lld",
                 (long long)json_integer_value(json_object_get(params, "statusCodeClass")));
    const char *p[] = {param(params, "endpoint"),
                       tenant,
                       param(params, "since"),
                       param(params, "until"),
                       types_text,
                       param(params, "channel"),
                       param(params, "tag"),
                       status[0] ? status : NULL,
                       class[0] ? class : NULL,
                       cursor,
                       TASK_RUNNER_BATCH_TEXT};
    PGresult *res = query_exec(conn, Q_TASK_RUNNER_BULK_REPLAY, p, t->err, sizeof t->err);
    free(types_text);
    if (!res)
        return -1;
    batch_outcome(t, res, TASK_RUNNER_BULK_REPLAY_IDS, TASK_RUNNER_BULK_REPLAY_LAST, TASK_RUNNER_BULK_REPLAY_EXAMINED,
                  b);
    return 0;
}

/* Expunge all contents: the next messages lose their payload. */
static int batch_purge(PGconn *conn, struct task_runner *t, const char *tenant, const json_t *params,
                       const char *cursor, struct batch *b)
{
    (void)params;
    const char *p[] = {tenant, cursor, TASK_RUNNER_BATCH_TEXT};
    PGresult *res = query_exec(conn, Q_TASK_RUNNER_PURGE, p, t->err, sizeof t->err);
    if (!res)
        return -1;
    b->sent = strtoll(PQgetvalue(res, 0, TASK_RUNNER_PURGE_PURGED), NULL, 10);
    batch_outcome(t, res, -1, TASK_RUNNER_PURGE_LAST, TASK_RUNNER_PURGE_EXAMINED, b);
    return 0;
}

/* The candidates' ids that pass the endpoint's payload filter (as the
 * relay would apply it), as a text[] literal (caller frees). */
static char *replay_ids(const PGresult *res)
{
    int n = PQntuples(res);
    json_t *filter = n > 0 && !PQgetisnull(res, 0, TASK_RUNNER_REPLAY_CANDIDATES_FILTER)
                         ? json_loads(PQgetvalue(res, 0, TASK_RUNNER_REPLAY_CANDIDATES_FILTER), 0, NULL)
                         : NULL;
    char *out = xmalloc((size_t)n * 37 + 3), *o = out;
    *o++ = '{';
    for (int i = 0; i < n; i++) {
        if (filter) {
            json_t *payload = json_loads(PQgetvalue(res, i, TASK_RUNNER_REPLAY_CANDIDATES_PAYLOAD), JSON_DECODE_ANY,
                                         NULL);
            bool match = payload && payload_filter_match(filter, payload);
            json_decref(payload);
            if (!match)
                continue;
        }
        o += sprintf(o, "%s%s", o > out + 1 ? "," : "", PQgetvalue(res, i, TASK_RUNNER_REPLAY_CANDIDATES_ID));
    }
    *o++ = '}';
    *o = '\0';
    json_decref(filter);
    return out;
}

/* Replay-missing: the next messages the endpoint never got go to it (those
 * its filters match), each due now or at its deliverAt. */
static int batch_replay(PGconn *conn, struct task_runner *t, const char *tenant, const json_t *params,
                        const char *cursor, struct batch *b)
{
    const char *endpoint = param(params, "endpoint");
    const char *p[] =
        {tenant, endpoint, param(params, "since"), param(params, "until"), cursor, TASK_RUNNER_BATCH_TEXT};
    PGresult *res = query_exec(conn, Q_TASK_RUNNER_REPLAY_CANDIDATES, p, t->err, sizeof t->err);
    if (!res)
        return -1;
    int n = PQntuples(res);
    b->done = n < TASK_RUNNER_BATCH;
    b->cursor = n > 0 ? query_value_dup(res, n - 1, TASK_RUNNER_REPLAY_CANDIDATES_ID) : NULL;
    char *ids = replay_ids(res);
    PQclear(res);
    const char *q[] = {ids, endpoint};
    res = query_exec(conn, Q_TASK_RUNNER_REPLAY_INSERT, q, t->err, sizeof t->err);
    free(ids);
    if (!res)
        return -1;
    for (int i = 0; i < PQntuples(res); i++)
        add_due(t, PQgetvalue(res, i, TASK_RUNNER_REPLAY_INSERT_ID),
                strtoll(PQgetvalue(res, i, TASK_RUNNER_REPLAY_INSERT_DUE_MS), NULL, 10));
    b->sent = PQntuples(res);
    PQclear(res);
    return 0;
}

typedef int batch_fn(PGconn *conn, struct task_runner *t, const char *tenant, const json_t *params, const char *cursor,
                     struct batch *b);

/* The kinds of task the runner does, and the count each keeps in its data
 * (Svix's names). */
static const struct {
    const char *kind, *count;
    batch_fn *fn;
} kinds[] = {
    {"endpoint.recover", "messagesSent", batch_recover},
    {"endpoint.replay", "messagesSent", batch_replay},
    {"endpoint.bulk-replay", "messagesSent", batch_bulk_replay},
    {"application.purge_content", "messagesPurged", batch_purge},
};

/* Runs the batch of the locked task (row 0 of lock) and stores its
 * outcome; 0, or -1 with t->err. A kind the runner does not do fails. */
static int batch_run(PGconn *conn, struct task_runner *t, const PGresult *lock)
{
    const char *kind = PQgetvalue(lock, 0, TASK_RUNNER_LOCK_KIND);
    const char *cursor = PQgetisnull(lock, 0, TASK_RUNNER_LOCK_CURSOR) ? NULL
                                                                       : PQgetvalue(lock, 0, TASK_RUNNER_LOCK_CURSOR);
    json_t *params = json_loads(PQgetvalue(lock, 0, TASK_RUNNER_LOCK_PARAMETERS), 0, NULL);
    json_t *data = json_loads(PQgetvalue(lock, 0, TASK_RUNNER_LOCK_DATA), 0, NULL);
    struct batch b = {.done = true};
    const char *status = "failed";
    int rc = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kind, kinds[i].kind) == 0) {
            b.done = false;
            status = "finished";
            rc = kinds[i].fn(conn, t, PQgetvalue(lock, 0, TASK_RUNNER_LOCK_TENANT_ID), params, cursor, &b);
            json_int_t n = json_integer_value(json_object_get(data, kinds[i].count));
            json_object_set_new(data, kinds[i].count, json_integer(n + b.sent));
        }
    if (rc == 0) {
        char *text = json_dumps(data, JSON_COMPACT);
        const char *p[] = {t->task, b.cursor ? b.cursor : cursor, text, b.done ? status : "running", t->lease};
        rc = query_run(conn, Q_TASK_RUNNER_SAVE, p, t->err, sizeof t->err);
        free(text);
        t->more = rc == 0 && !b.done;
    }
    free(b.cursor);
    json_decref(params);
    json_decref(data);
    return rc;
}

/* One batch of the task held, in its own transaction. */
static int batch(PGconn *conn, struct task_runner *t)
{
    if (db_command(conn, "BEGIN", t->err, sizeof t->err) != 0)
        return -1;
    const char *p[] = {t->task, t->ctx->id};
    PGresult *lock = query_exec(conn, Q_TASK_RUNNER_LOCK, p, t->err, sizeof t->err);
    if (!lock)
        goto fail;
    if (PQntuples(lock) == 0) { /* finished, or another worker's now */
        PQclear(lock);
        t->task[0] = '\0';
        return db_command(conn, "ROLLBACK", t->err, sizeof t->err);
    }
    int rc = batch_run(conn, t, lock);
    PQclear(lock);
    if (rc == 0 && db_command(conn, "COMMIT", t->err, sizeof t->err) == 0)
        return 0;
fail:
    db_rollback(conn);
    return -1;
}

/* Claims a task no worker holds into t->task ("" when there is none). */
static int claim(PGconn *conn, struct task_runner *t)
{
    const char *p[] = {t->ctx->id, t->lease};
    PGresult *res = query_exec(conn, Q_TASK_RUNNER_CLAIM, p, t->err, sizeof t->err);
    if (!res)
        return -1;
    if (PQntuples(res) > 0)
        snprintf(t->task, sizeof t->task, "%s", PQgetvalue(res, 0, TASK_RUNNER_CLAIM_ID));
    PQclear(res);
    return 0;
}

static void work(PGconn *conn, void *arg)
{
    struct task_runner *t = arg;
    if (!conn) {
        snprintf(t->err, sizeof t->err, "Postgres unavailable");
        return;
    }
    if ((t->task[0] || claim(conn, t) == 0) && t->task[0])
        (void)batch(conn, t); /* a failure leaves t->err */
}

static void done(void *arg)
{
    struct task_runner *t = arg;
    t->busy = false;
    if (t->err[0]) {
        log_warn("task.failed", "task=%s error=\"%s\"", t->task[0] ? t->task : "-", t->err);
        t->task[0] = '\0'; /* claimed again once its lease expires */
    } else if (t->task[0] && !t->more) {
        log_info("task.done", "task=%s", t->task);
        t->task[0] = '\0';
    }
    if (t->ndue > 0)
        sched_seed(t->ctx, "delivery", t->due, t->due_ms, t->ndue, false);
    for (size_t i = 0; i < t->ndue; i++)
        free(t->due[i]);
    t->ndue = 0;
    if (!t->stopped)
        loop_timer_arm(t->timer, t->more ? 0 : TASK_RUNNER_POLL_MS);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct task_runner *t = arg;
    if (t->busy || t->stopped)
        return;
    t->busy = true;
    t->more = false;
    t->err[0] = '\0';
    snprintf(t->lease, sizeof t->lease, "%lld milliseconds", (long long)t->ctx->cfg->lease);
    db_pool_submit(t->ctx->db, work, done, t);
}

struct task_runner *task_runner_new(struct hookd_ctx *ctx)
{
    struct task_runner *t = xcalloc(1, sizeof *t);
    t->ctx = ctx;
    t->timer = evtimer_new(ctx->base, on_timer, t);
    loop_timer_arm(t->timer, TASK_RUNNER_POLL_MS);
    return t;
}

void task_runner_stop(struct task_runner *t)
{
    if (!t)
        return;
    t->stopped = true;
    evtimer_del(t->timer);
}

size_t task_runner_pending(const struct task_runner *t)
{
    return t && t->busy ? 1 : 0;
}

void task_runner_free(struct task_runner *t)
{
    if (!t)
        return;
    if (t->timer)
        event_free(t->timer);
    for (size_t i = 0; i < t->ndue; i++)
        free(t->due[i]);
    free(t);
}
