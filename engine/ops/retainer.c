/* The worker's retention timer; see retainer.h. Its pool has one thread and
 * at most one job at a time: a pass, then the storage figures, on the loop's
 * snapshot of the config (the windows are reloadable: each pass takes the
 * config current when it starts). */
#include "ops.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "ctx.h"
#include "db.h"
#include "log.h"
#include "loop_timer.h"
#include "retention.h"
#include "xmalloc.h"

#define FIRST_PASS_MS 2000
/* With [retention] interval = off: how often the storage figures are read. */
#define STORAGE_ONLY_MS 60000

struct retainer {
    struct hookd_ctx *ctx;
    struct db_pool *pool;
    struct event *timer;
    bool busy, stopped;
    /* a pass was refused for want of privilege: logged once, no more passes
     * (the storage figures go on) until the worker restarts */
    bool forbidden;
    bool storage_warned; /* a failure to read the storage figures: logged once */
    bool pass;           /* the job in flight runs a pass (else: storage only) */
    struct retention_storage storage;
    /* the job in flight (busy) */
    struct hookd_config *cfg;
    struct retention_report rep;
    struct retention_storage measured;
    int run_rc, storage_rc;
    char err[256], storage_err[256];
};

/* Postgres's words for SQLSTATE 42501 on DDL (a step that failed after
 * the owner check, e.g. a partition made by another role). */
static bool insufficient_privilege(const char *err)
{
    return strstr(err, "must be owner of") || strstr(err, "permission denied") || strstr(err, "42501");
}

static void work(PGconn *conn, void *arg)
{
    struct retainer *r = arg;
    r->run_rc = r->storage_rc = -1;
    if (!conn) {
        snprintf(r->err, sizeof r->err, "Postgres unavailable");
        return;
    }
    r->storage_err[0] = '\0';
    r->run_rc = r->pass ? retention_run(conn, &r->cfg->retention, false, NULL, &r->rep, r->err, sizeof r->err) : 0;
    if (r->run_rc != 0 && !r->rep.forbidden && !insufficient_privilege(r->err))
        db_unavailable(conn, NULL);
    else
        r->storage_rc = retention_storage(conn, &r->cfg->retention, &r->measured, r->storage_err,
                                          sizeof r->storage_err);
}

/* The ms until the next timer: a pass every [retention] interval, or with
 * interval = off (or after a refused pass) the storage figures alone. */
static int64_t next_ms(const struct retainer *r)
{
    int64_t interval = r->ctx->cfg->retention.interval;
    return interval > 0 && !r->forbidden ? interval : STORAGE_ONLY_MS;
}

static void done(void *arg)
{
    struct retainer *r = arg;
    r->busy = false;
    if (r->run_rc != 0 && (r->rep.forbidden || insufficient_privilege(r->err))) {
        r->forbidden = true;
        log_warn("retention.forbidden",
                 "error=\"%s\" note=\"this worker runs no more retention passes: set [retention] interval = off "
                 "in the workers' config and run `hookd retention run` as the tables' owner (the role that ran "
                 "`hookd migrate`) from a timer, e.g. every minute (docs/guides/retention.md)\"",
                 r->err);
    } else if (r->run_rc != 0) {
        log_warn("retention.failed", "error=\"%s\"", r->err);
    } else if (r->storage_rc != 0) {
        if (!r->storage_warned)
            log_warn("retention.storage_failed", "error=\"%s\" note=\"logged once; storage figures not shown\"",
                     r->storage_err);
        r->storage_warned = true;
    } else if (!r->rep.skipped &&
               (r->rep.expired || r->rep.postponed || r->rep.rescued || r->rep.pruned || r->rep.payloads))
        log_info("retention.pass", "expired=%ld postponed=%ld rescued=%ld deleted=%ld payloads_cleared=%ld",
                 r->rep.expired, r->rep.postponed, r->rep.rescued, r->rep.pruned, r->rep.payloads);
    if (r->storage_rc == 0) {
        r->storage = r->measured;
        r->storage_warned = false;
    }
    config_unref(r->cfg);
    r->cfg = NULL;
    if (!r->stopped)
        loop_timer_arm(r->timer, next_ms(r));
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct retainer *r = arg;
    if (r->busy || r->stopped)
        return;
    if (!r->pool)
        r->pool = db_pool_new(r->ctx->base, r->ctx->cfg->database.text, 1, false);
    if (!r->pool) {
        loop_timer_arm(r->timer, next_ms(r));
        return;
    }
    r->busy = true;
    r->pass = r->ctx->cfg->retention.interval > 0 && !r->forbidden;
    r->cfg = config_ref(r->ctx->cfg);
    memset(&r->rep, 0, sizeof r->rep);
    db_pool_submit(r->pool, work, done, r);
}

struct retainer *retainer_new(struct hookd_ctx *ctx)
{
    struct retainer *r = xcalloc(1, sizeof *r);
    r->ctx = ctx;
    r->timer = evtimer_new(ctx->base, on_timer, r);
    loop_timer_arm(r->timer, FIRST_PASS_MS);
    return r;
}

void retainer_stop(struct retainer *r)
{
    if (!r)
        return;
    r->stopped = true;
    evtimer_del(r->timer);
    db_pool_free(r->pool); /* runs the job in flight to its done callback */
    r->pool = NULL;
}

void retainer_free(struct retainer *r)
{
    if (!r)
        return;
    if (r->timer)
        event_free(r->timer);
    config_unref(r->cfg);
    free(r);
}

const struct retention_storage *retainer_storage(const struct retainer *r)
{
    return r && r->storage.measured_ms ? &r->storage : NULL;
}
