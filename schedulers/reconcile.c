/* Reconciler passes; see reconcile.h. A pass walks the queues one page at a
 * time: a DB job reads a page, its completion seeds Redis and submits the
 * next page, so the loop never waits on Postgres. A periodic pass starts its
 * walk at the previous pass's start less RECONCILE_MARGIN_MS instead of at
 * the beginning: the keyset cursor is simply set there. */
#include "reconcile.h"

#include <event2/event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"

#include "db.h"
#include "log.h"
#include "loop_timer.h"
#include "query.h"
#include "sched.h"
#include "ctx.h"
#include "xmalloc.h"

#define PAGE 1000

struct queue_def {
    const char *name;
    enum query_id query; /* one page, after a cursor (sql/queries/reconcile_*_page.sql) */
};

static const struct queue_def queues[] = {
    {"inbox", Q_RECONCILE_INBOX_PAGE},
    {"delivery", Q_RECONCILE_DELIVERY_PAGE},
};
/* Both pages have the same columns: one reader. */
_Static_assert((int)RECONCILE_INBOX_PAGE_ID == (int)RECONCILE_DELIVERY_PAGE_ID &&
                   (int)RECONCILE_INBOX_PAGE_DUE_MS == (int)RECONCILE_DELIVERY_PAGE_DUE_MS &&
                   (int)RECONCILE_INBOX_PAGE_NEXT_ATTEMPT_AT == (int)RECONCILE_DELIVERY_PAGE_NEXT_ATTEMPT_AT,
               "the reconciler's page statements must have the same columns");
#define NQUEUES (sizeof queues / sizeof queues[0])

struct reconcile {
    struct hookd_ctx *ctx;
    struct event *timer;
    bool running, again, freeing;
    bool full_next;                  /* the next pass walks everything (start-up, reconnect, Postgres back) */
    bool pass_full;                  /* the running pass does */
    unsigned since_full;             /* periodic passes since the last full one */
    int64_t start_ms, prev_start_ms; /* the running pass's start, the last good one's (Postgres's clock) */
    size_t queue;
    char start_ts[64]; /* where each queue's walk begins */
    char cursor_ts[64], cursor_id[40];
    uint64_t passes, full_passes, seeded, pass_seeded;
};

/* One page: filled on the DB thread, consumed on the loop. */
struct page {
    struct reconcile *r;
    const struct queue_def *q;
    char horizon[24], ts[64], id[40];
    char **ids;
    int64_t *due;
    size_t n;
    bool ok;
    char err[256];
};

static void start_page(struct reconcile *r);

static void work_page(PGconn *conn, void *arg)
{
    struct page *p = arg;
    char limit[16];
    snprintf(limit, sizeof limit, "%d", PAGE);
    const char *params[] = {p->horizon, p->ts, p->id, limit};
    /* An ordered scan of the partial index from the cursor on (see db.h). */
    PGresult *res = query_exec_index_order(conn, p->q->query, params, p->err, sizeof p->err);
    if (!res)
        return;
    p->n = (size_t)PQntuples(res);
    p->ids = xcalloc(p->n ? p->n : 1, sizeof *p->ids);
    p->due = xcalloc(p->n ? p->n : 1, sizeof *p->due);
    for (size_t i = 0; i < p->n; i++) {
        p->ids[i] = xstrdup(PQgetvalue(res, (int)i, RECONCILE_INBOX_PAGE_ID));
        p->due[i] = strtoll(PQgetvalue(res, (int)i, RECONCILE_INBOX_PAGE_DUE_MS), NULL, 10);
    }
    if (p->n > 0) {
        snprintf(p->ts, sizeof p->ts, "%s", PQgetvalue(res, (int)p->n - 1, RECONCILE_INBOX_PAGE_NEXT_ATTEMPT_AT));
        snprintf(p->id, sizeof p->id, "%s", p->ids[p->n - 1]);
    }
    PQclear(res);
    p->ok = true;
}

static void page_free(struct page *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->ids[i]);
    free(p->ids);
    free(p->due);
    free(p);
}

static void finish_pass(struct reconcile *r, bool ok)
{
    r->running = false;
    if (ok) {
        r->passes++;
        r->full_passes += r->pass_full;
        r->since_full = r->pass_full ? 0 : r->since_full + 1;
        r->prev_start_ms = r->start_ms;
        if (r->pass_seeded > 0)
            log_info("reconcile.pass", "examined=%llu full=%s", (unsigned long long)r->pass_seeded,
                     r->pass_full ? "true" : "false");
    } else if (r->pass_full) {
        r->full_next = true; /* what it did not walk is walked again, all of it */
    }
    if (r->freeing)
        return;
    if (r->again) {
        r->again = false;
        loop_timer_arm(r->timer, 0);
        return;
    }
    /* After a failure (Postgres or Redis down) try again soon. */
    loop_timer_arm(r->timer, ok ? r->ctx->cfg->reconcile_interval : 1000);
}

static void done_page(void *arg)
{
    struct page *p = arg;
    struct reconcile *r = p->r;
    if (r->freeing || !p->ok || !redis_conn_ready(r->ctx->redis)) {
        if (!p->ok)
            log_warn("reconcile.failed", "queue=%s error=\"%s\"", p->q->name, p->err);
        page_free(p);
        finish_pass(r, false);
        return;
    }
    sched_seed(r->ctx, p->q->name, p->ids, p->due, p->n, true);
    r->seeded += p->n;
    r->pass_seeded += p->n;
    bool more = p->n == PAGE;
    snprintf(r->cursor_ts, sizeof r->cursor_ts, "%s", p->ts);
    snprintf(r->cursor_id, sizeof r->cursor_id, "%s", p->id);
    page_free(p);
    if (!more) {
        r->queue++;
        snprintf(r->cursor_ts, sizeof r->cursor_ts, "%s", r->start_ts);
        snprintf(r->cursor_id, sizeof r->cursor_id, "00000000-0000-0000-0000-000000000000");
    }
    if (r->queue < NQUEUES)
        start_page(r);
    else
        finish_pass(r, true);
}

static void start_page(struct reconcile *r)
{
    struct page *p = xcalloc(1, sizeof *p);
    p->r = r;
    p->q = &queues[r->queue];
    snprintf(p->horizon, sizeof p->horizon, "%lld", (long long)r->ctx->cfg->reconcile_horizon);
    snprintf(p->ts, sizeof p->ts, "%s", r->cursor_ts);
    snprintf(p->id, sizeof p->id, "%s", r->cursor_id);
    db_pool_submit(r->ctx->db, work_page, done_page, p);
}

/* ms since the epoch as a timestamptz literal (UTC), for the cursor. */
static void timestamp_text(int64_t ms, char *buf, size_t len)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char day[40];
    strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(buf, len, "%s.%03d+00", day, (int)(ms % 1000));
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct reconcile *r = arg;
    if (r->running) {
        r->again = true;
        return;
    }
    if (!redis_conn_ready(r->ctx->redis)) {
        loop_timer_arm(r->timer, 1000);
        return;
    }
    r->running = true;
    r->queue = 0;
    r->pass_seeded = 0;
    r->start_ms = clock_wall_ms();
    r->pass_full = r->full_next || r->prev_start_ms == 0 || r->since_full + 1 >= RECONCILE_FULL_EVERY;
    r->full_next = false;
    if (r->pass_full)
        snprintf(r->start_ts, sizeof r->start_ts, "-infinity");
    else
        timestamp_text(r->prev_start_ms - RECONCILE_MARGIN_MS, r->start_ts, sizeof r->start_ts);
    snprintf(r->cursor_ts, sizeof r->cursor_ts, "%s", r->start_ts);
    snprintf(r->cursor_id, sizeof r->cursor_id, "00000000-0000-0000-0000-000000000000");
    start_page(r);
}

/* A reconnect may mean a restarted, empty Redis: rebuild the schedule. */
static void on_redis_ready(void *arg)
{
    reconcile_now(arg);
}

/* Postgres is back after an outage, or a failover's new primary answers:
 * with asynchronous replication its rows may differ from what Redis was
 * seeded with (commits lost on promotion), so rebuild the schedule now
 * rather than at the next interval. */
static void on_db_up(void *arg)
{
    struct reconcile *r = arg;
    if (r->freeing)
        return;
    log_info("reconcile.db_up", "note=\"Postgres answers again: reconciling now\"");
    reconcile_now(r);
}

struct reconcile *reconcile_new(struct hookd_ctx *ctx)
{
    struct reconcile *r = xcalloc(1, sizeof *r);
    r->ctx = ctx;
    r->full_next = true;
    r->timer = evtimer_new(ctx->base, on_timer, r);
    redis_conn_on_ready(ctx->redis, on_redis_ready, r);
    db_pool_on_up(ctx->db, on_db_up, r); /* the pool is freed before the reconciler */
    loop_timer_arm(r->timer, 0);
    return r;
}

void reconcile_now(struct reconcile *r)
{
    r->full_next = true;
    if (r->running)
        r->again = true;
    else
        loop_timer_arm(r->timer, 0);
}

void reconcile_stop(struct reconcile *r)
{
    r->freeing = true;
    evtimer_del(r->timer);
}

void reconcile_free(struct reconcile *r)
{
    if (!r)
        return;
    /* A page in flight completes during db_pool_free, which runs first. */
    redis_conn_off_ready(r->ctx->redis, on_redis_ready, r);
    event_free(r->timer);
    free(r);
}

uint64_t reconcile_passes(const struct reconcile *r)
{
    return r->passes;
}

uint64_t reconcile_full_passes(const struct reconcile *r)
{
    return r->full_passes;
}

uint64_t reconcile_seeded(const struct reconcile *r)
{
    return r->seeded;
}
