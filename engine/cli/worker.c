/* `hookd run`: the worker's lifecycle; see worker.h. Start-up never waits
 * for Postgres or Redis: both connect in the background and the worker
 * reports not-ready on /readyz until they answer and the schema is current.
 *
 * The worker is the composition root. It owns the context the roles see
 * (struct hookd_ctx: loop, config, shared pool, Redis, scripts, counters),
 * the HTTP listeners (the public `listen` and `admin_listen` for /admin and
 * /metrics), and one instance of each part in the table `parts`
 * below. The table is the whole wiring: each row says when the part runs
 * and how it starts (with the explicit peers it needs), drains, counts its
 * pending work, takes a reload, closes its own I/O and is freed. Start-up
 * walks the table in order; shutdown walks it in reverse:
 *
 *   close (reverse)   each part stops and closes what it owns while every
 *                     peer lives (the relay settles its passes into the
 *                     delivery role; the ingest role's inserts complete);
 *   shared I/O        the shared pool, then Redis: jobs still queued and
 *                     replies still pending reach their owners, which live;
 *   free (reverse)    each part releases its memory. */
#include "worker.h"

#include <event2/event.h>
#include <event2/http.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errbuf.h"
#include "ops.h"
#include "alert.h"
#include "api.h"
#include "portal.h"
#include "cli_util.h"
#include "clock.h"
#include "clock_sync.h"
#include "ctx.h"
#include "db.h"
#include "outbound.h"
#include "dlq.h"
#include "encoding.h"
#include "heartbeat.h"
#include "http_server.h"
#include "inbound.h"
#include "log.h"
#include "rand.h"
#include "loop_timer.h"
#include "migrate.h"
#include "reconcile.h"
#include "sd_notify.h"
#include "xmalloc.h"

struct worker {
    struct hookd_ctx ctx;
    struct http_server *http;       /* listen: the inbox, /healthz, /readyz */
    struct http_server *admin_http; /* admin_listen: /admin, /metrics; NULL when off */
    /* the parts, one per row of the table */
    struct alerter *alerter;
    struct ingest *ingest;
    struct api *api;
    struct portal *portal;
    struct inbox *inbox;
    struct delivery *delivery;
    struct relay *relay;
    struct reconcile *reconcile;
    struct task_runner *tasks;
    struct heartbeat *heartbeat;
    struct retainer *retainer;
    struct admin *admin;
    struct metrics *metrics;
    bool started[16];          /* per row: started, so it is closed and freed */
    int64_t drain_deadline_ms; /* monotonic */
    struct clock_sync clock;   /* the offset to Postgres's clock (readiness timer) */
    struct event *sig_hup, *sig_term, *sig_int, *readiness_ev, *drain_ev, *watchdog_ev;
    char notify_status[160]; /* the last STATUS= sent to systemd */
    bool notify_failing;     /* the last notification failed (logged once) */
};

/* ---- the parts ------------------------------------------------------------
 * One row per part. `roles`: the [hookd] roles bits that enable it (0:
 * always). Every operation but start may be NULL. */

struct part_ops {
    const char *name;
    unsigned roles;
    int (*start)(struct worker *w, char *err, size_t errlen);
    void (*drain)(struct worker *w);           /* SIGTERM: take no new work */
    size_t (*pending)(const struct worker *w); /* work in flight the drain waits for */
    void (*reload)(struct worker *w);          /* w->ctx.cfg is the new snapshot */
    void (*close)(struct worker *w);           /* stop; close own I/O while peers live */
    void (*free)(struct worker *w);            /* after the shared pool and Redis closed */
};

static int start_alerter(struct worker *w, char *err, size_t errlen)
{
    w->alerter = alerter_new(&w->ctx, err, errlen);
    return w->alerter ? 0 : -1;
}
static void reload_alerter(struct worker *w)
{
    alerter_reload(w->alerter);
}
static void free_alerter(struct worker *w)
{
    alerter_free(w->alerter);
}

static int start_ingest(struct worker *w, char *err, size_t errlen)
{
    w->ingest = ingest_new(&w->ctx, w->http, err, errlen);
    return w->ingest ? 0 : -1;
}
static void drain_ingest(struct worker *w)
{
    ingest_flush(w->ingest);
}
static size_t pending_ingest(const struct worker *w)
{
    return ingest_pending(w->ingest);
}
static void reload_ingest(struct worker *w)
{
    ingest_config_changed(w->ingest);
}
static void close_ingest(struct worker *w)
{
    ingest_close(w->ingest);
}
static void free_ingest(struct worker *w)
{
    ingest_free(w->ingest);
}

static int start_api(struct worker *w, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    w->api = api_new(&w->ctx, w->http);
    return 0;
}
static size_t pending_api(const struct worker *w)
{
    return api_pending(w->api);
}
static void close_api(struct worker *w)
{
    api_close(w->api);
}
static void free_api(struct worker *w)
{
    api_free(w->api);
}

static int start_portal(struct worker *w, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    w->portal = portal_new(&w->ctx, w->http);
    return 0;
}
static size_t pending_portal(const struct worker *w)
{
    return portal_pending(w->portal);
}
static void free_portal(struct worker *w)
{
    portal_free(w->portal);
}

static int start_inbox(struct worker *w, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    w->inbox = inbox_new(&w->ctx, w->alerter);
    return 0;
}
static void drain_inbox(struct worker *w)
{
    inbox_drain(w->inbox);
}
static size_t pending_inbox(const struct worker *w)
{
    return inbox_pending(w->inbox);
}
static void free_inbox(struct worker *w)
{
    inbox_free(w->inbox);
}

static int start_delivery(struct worker *w, char *err, size_t errlen)
{
    w->delivery = delivery_new(&w->ctx, w->alerter, err, errlen);
    return w->delivery ? 0 : -1;
}
static void drain_delivery(struct worker *w)
{
    delivery_drain(w->delivery);
}
static void reload_delivery(struct worker *w)
{
    delivery_reload(w->delivery);
}
static size_t pending_delivery(const struct worker *w)
{
    return delivery_inflight(w->delivery) + delivery_pending(w->delivery);
}
static void free_delivery(struct worker *w)
{
    delivery_free(w->delivery);
}

static int start_relay(struct worker *w, char *err, size_t errlen)
{
    w->relay = relay_new(&w->ctx, w->delivery);
    if (!w->relay)
        return err_set(err, errlen, "cannot start the outbox relay");
    return 0;
}
static void drain_relay(struct worker *w)
{
    relay_stop(w->relay);
}
static size_t pending_relay(const struct worker *w)
{
    return relay_pending(w->relay);
}
static void close_relay(struct worker *w)
{
    relay_close(w->relay);
}
static void free_relay(struct worker *w)
{
    relay_free(w->relay);
}

static int start_tasks(struct worker *w, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    w->tasks = task_runner_new(&w->ctx);
    return 0;
}
static void drain_tasks(struct worker *w)
{
    task_runner_stop(w->tasks);
}
static size_t pending_tasks(const struct worker *w)
{
    return task_runner_pending(w->tasks);
}
static void free_tasks(struct worker *w)
{
    task_runner_free(w->tasks);
}

static int start_reconcile(struct worker *w, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    w->reconcile = reconcile_new(&w->ctx);
    return 0;
}
static void close_reconcile(struct worker *w)
{
    reconcile_stop(w->reconcile);
}
static void free_reconcile(struct worker *w)
{
    reconcile_free(w->reconcile);
}

static size_t worker_inflight(void *arg);

static int start_heartbeat(struct worker *w, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    w->heartbeat = heartbeat_new(&w->ctx, worker_inflight, w);
    return 0;
}
static void reload_heartbeat(struct worker *w)
{
    heartbeat_reschedule(w->heartbeat);
}
static void free_heartbeat(struct worker *w)
{
    heartbeat_free(w->heartbeat);
}

static int start_retainer(struct worker *w, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    w->retainer = retainer_new(&w->ctx);
    return 0;
}
static void close_retainer(struct worker *w)
{
    retainer_stop(w->retainer);
}
static void free_retainer(struct worker *w)
{
    retainer_free(w->retainer);
}

static int start_admin(struct worker *w, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    if (w->admin_http)
        w->admin = admin_new(&w->ctx, w->admin_http, w->heartbeat, w->retainer);
    return 0;
}
static void free_admin(struct worker *w)
{
    admin_free(w->admin);
}

static int start_metrics(struct worker *w, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    if (w->admin_http)
        w->metrics = metrics_new(&w->ctx, w->admin_http, w->heartbeat, w->inbox, w->delivery, w->retainer);
    return 0;
}
static void free_metrics(struct worker *w)
{
    metrics_free(w->metrics);
}

/* Start order: a part may take any part above it as a peer. */
static const struct part_ops parts[] = {
    {"alerter", 0, start_alerter, NULL, NULL, reload_alerter, NULL, free_alerter},
    {"ingest", ROLE_INGEST, start_ingest, drain_ingest, pending_ingest, reload_ingest, close_ingest, free_ingest},
    {"api", ROLE_INGEST, start_api, NULL, pending_api, NULL, close_api, free_api},
    {"portal", ROLE_INGEST, start_portal, NULL, pending_portal, NULL, NULL, free_portal},
    {"inbox", ROLE_INBOX, start_inbox, drain_inbox, pending_inbox, NULL, NULL, free_inbox},
    {"delivery", ROLE_RELAY, start_delivery, drain_delivery, pending_delivery, reload_delivery, NULL, free_delivery},
    {"relay", ROLE_RELAY, start_relay, drain_relay, pending_relay, NULL, close_relay, free_relay},
    {"tasks", ROLE_RELAY, start_tasks, drain_tasks, pending_tasks, NULL, drain_tasks, free_tasks},
    {"reconcile", 0, start_reconcile, NULL, NULL, NULL, close_reconcile, free_reconcile},
    {"heartbeat", 0, start_heartbeat, NULL, NULL, reload_heartbeat, NULL, free_heartbeat},
    {"retainer", 0, start_retainer, NULL, NULL, NULL, close_retainer, free_retainer},
    {"admin", 0, start_admin, NULL, NULL, NULL, NULL, free_admin},
    {"metrics", 0, start_metrics, NULL, NULL, NULL, NULL, free_metrics},
};
#define NPARTS (sizeof parts / sizeof parts[0])
_Static_assert(NPARTS <= sizeof((struct worker *)0)->started / sizeof(bool), "worker.started too small");

/* Items claimed by this worker's queues and not yet finished (heartbeat). */
static size_t worker_inflight(void *arg)
{
    const struct worker *w = arg;
    return (w->inbox ? inbox_pending(w->inbox) : 0) + (w->delivery ? delivery_inflight(w->delivery) : 0);
}

/* ---- systemd notifications ------------------------------------------------
 * Type=notify (packaging/hookd.service): READY=1 once the listener accepts,
 * STOPPING=1 when the drain starts, RELOADING=1 … READY=1 around a SIGHUP,
 * WATCHDOG=1 from the loop, and STATUS= whenever the readiness seen on
 * /readyz changes. No-ops unless systemd set NOTIFY_SOCKET. */

static void notify(struct worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void notify(struct worker *w, const char *fmt, ...)
{
    if (!sd_notify_enabled())
        return;
    char msg[512], err[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    bool failed = sd_notify_send(msg, err, sizeof err) != 0;
    if (failed && !w->notify_failing)
        log_warn("sd_notify.failed", "error=\"%s\"", err);
    w->notify_failing = failed;
}

/* Sends `state` (NULL: nothing) with the current STATUS=, or STATUS= alone
 * when it changed. */
static void notify_state(struct worker *w, const char *state)
{
    const struct hookd_ctx *ctx = &w->ctx;
    const char *now = ctx_ready(ctx) ? "ready" : "listening, not ready";
    char line[sizeof w->notify_status];
    snprintf(line, sizeof line, "%s; postgres %s; redis %s; schema %s", ctx->draining ? "draining" : now,
             db_pool_healthy(ctx->db) ? "up" : "down", redis_conn_ready(ctx->redis) ? "up" : "down",
             ctx->migrations_current ? "current" : "not current");
    if (!state && strcmp(line, w->notify_status) == 0)
        return;
    memcpy(w->notify_status, line, sizeof line);
    notify(w, "%s%sSTATUS=%s", state ? state : "", state ? "\n" : "", line);
}

static void on_watchdog_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    notify(arg, "WATCHDOG=1");
}

/* ---- readiness --------------------------------------------------------- */

struct schema_check {
    struct worker *w;
    int state; /* 0 current, 1 pending, -1 error */
    long dlq_size;
    bool sampled; /* clock: the offset to Postgres's clock, one sample */
    struct clock_sample sample;
    char err[256];
};

static void work_schema_check(PGconn *conn, void *arg)
{
    struct schema_check *c = arg;
    c->sampled = conn && clock_sync_sample(conn, &c->sample, c->err, sizeof c->err) == 0;
    c->state = conn ? migrate_check(conn, c->err, sizeof c->err) : -1;
    c->dlq_size = c->state == 0 ? dlq_count(conn) : -1;
}

static void done_schema_check(void *arg)
{
    struct schema_check *c = arg;
    struct hookd_ctx *ctx = &c->w->ctx;
    bool current = c->state == 0;
    if (current != ctx->migrations_current) {
        if (current)
            log_info("schema.current", "%s", "");
        else if (c->state == 1)
            log_warn("schema.pending", "hint=\"run hookd migrate\"");
        else if (db_pool_healthy(ctx->db))
            log_warn("schema.check_failed", "error=\"%s\"", c->err);
    }
    ctx->migrations_current = current;
    if (c->sampled)
        clock_sync_add(&c->w->clock, c->sample);
    if (c->dlq_size >= 0 && c->w->heartbeat)
        heartbeat_set_dlq_size(c->w->heartbeat, c->dlq_size);
    free(c);
}

static void on_readiness_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct worker *w = arg;
    notify_state(w, NULL);
    struct schema_check *c = xcalloc(1, sizeof *c);
    c->w = w;
    db_pool_submit(w->ctx.db, work_schema_check, done_schema_check, c);
}

static void handle_healthz(struct evhttp_request *req, void *arg)
{
    (void)arg;
    http_reply_json(req, 200, json_pack("{s:s}", "status", "alive"));
}

static void handle_readyz(struct evhttp_request *req, void *arg)
{
    const struct hookd_ctx *ctx = arg;
    bool ready = ctx_ready(ctx);
    http_reply_json(req, ready ? 200 : 503,
                    json_pack("{s:b, s:b, s:b, s:b, s:b}", "ready", ready, "postgres", db_pool_healthy(ctx->db),
                              "redis", redis_conn_ready(ctx->redis), "migrations", ctx->migrations_current, "draining",
                              ctx->draining));
}

/* ---- signals ------------------------------------------------------------ */

static bool runs(const struct worker *w, size_t i)
{
    return w->started[i];
}

static void reload(struct worker *w)
{
    char err[512];
    struct hookd_config *n = config_load(w->ctx.cfg->path, err, sizeof err);
    if (!n) {
        log_error("config.reload_failed", "error=\"%s\" note=\"keeping the previous config\"", err);
        return;
    }
    char keys[512];
    if (config_restart_keys(w->ctx.cfg, n, keys, sizeof keys) > 0)
        log_warn("config.restart_needed", "keys=\"%s\" note=\"changed, take effect on restart\"", keys);
    n->generation = w->ctx.cfg->generation + 1;
    enum log_level lvl;
    if (log_level_parse(n->log_level, &lvl) == 0)
        log_min_level = lvl;
    config_unref(w->ctx.cfg);
    w->ctx.cfg = n;
    for (size_t i = 0; i < NPARTS; i++)
        if (runs(w, i) && parts[i].reload)
            parts[i].reload(w);
    log_info("config.reloaded", "generation=%llu", (unsigned long long)n->generation);
}

static void on_sighup(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct worker *w = arg;
    notify(w, "RELOADING=1\nMONOTONIC_USEC=%lld", (long long)clock_mono_us());
    reload(w);
    notify_state(w, "READY=1"); /* also after a failed reload: the old config runs */
}

static void on_drained(void *arg)
{
    struct worker *w = arg;
    event_base_loopexit(w->ctx.base, NULL);
}

static size_t pending_work(const struct worker *w)
{
    size_t n = db_pool_pending(w->ctx.db);
    for (size_t i = 0; i < NPARTS; i++)
        if (runs(w, i) && parts[i].pending)
            n += parts[i].pending(w);
    return n;
}

static void on_drain_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct worker *w = arg;
    size_t pending = pending_work(w);
    bool late = clock_mono_ms() > w->drain_deadline_ms;
    if (pending == 0 || late) {
        if (late)
            log_warn("worker.drain_timeout", "pending=%zu note=\"leases expire, others take over\"", pending);
        event_del(w->drain_ev);
        heartbeat_remove(w->heartbeat, on_drained, w);
    }
}

static void on_sigterm(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct worker *w = arg;
    if (w->ctx.draining)
        return;
    w->ctx.draining = true;
    log_info("worker.draining", "%s", "");
    notify_state(w, "STOPPING=1");
    w->drain_deadline_ms = clock_mono_ms() + w->ctx.cfg->shutdown_timeout;
    http_server_stop_accepting(w->http);
    if (w->admin_http)
        http_server_stop_accepting(w->admin_http);
    for (size_t i = 0; i < NPARTS; i++)
        if (runs(w, i) && parts[i].drain)
            parts[i].drain(w);
    loop_timer_arm(w->drain_ev, 20);
}

/* ---- start and stop ----------------------------------------------------- */

static void make_id(struct hookd_ctx *ctx)
{
    unsigned char rnd[3];
    if (rand_bytes(rnd, sizeof rnd) != 0)
        memset(rnd, 0, sizeof rnd);
    if (gethostname(ctx->host, sizeof ctx->host) != 0)
        snprintf(ctx->host, sizeof ctx->host, "unknown");
    ctx->host[sizeof ctx->host - 1] = '\0';
    char hex[ENC_HEX_LEN(sizeof rnd) + 1];
    HOOKD_ASSERT(enc_hex_encode(rnd, sizeof rnd, hex, sizeof hex) == 0);
    snprintf(ctx->id, sizeof ctx->id, "%s-%d-%s", ctx->host, (int)getpid(), hex);
}

/* The shared I/O every part sees through the context, and the listener. */
static int start_io(struct worker *w, char *err, size_t errlen)
{
    struct hookd_ctx *ctx = &w->ctx;
    const struct hookd_config *cfg = ctx->cfg;
    ctx->db = db_pool_new(ctx->base, cfg->database.text, (int)cfg->db_pool_size, true);
    if (!ctx->db)
        return err_set(err, errlen, "cannot start the database threads");
    struct redis_options ropts;
    ctx_redis_options(cfg, &ropts);
    ctx->redis = redis_conn_new(ctx->base, cfg->redis.text, &ropts, "main", err, errlen);
    if (!ctx->redis)
        return -1;
    ctx->redis_sub = redis_conn_new(ctx->base, cfg->redis.text, &ropts, "sub", err, errlen);
    if (!ctx->redis_sub)
        return -1;
    ctx_load_scripts(ctx);
    http_server_raise_fd_limit();
    const struct http_limits limits = {cfg->max_header_size, cfg->max_headers, cfg->request_timeout,
                                       cfg->max_connections, cfg->max_buffered_body};
    w->http = http_server_new(ctx->base, cfg->listen, &limits, err, errlen);
    if (!w->http)
        return -1;
    http_server_route(w->http, "/healthz", handle_healthz, ctx);
    http_server_route(w->http, "/readyz", handle_readyz, ctx);
    const char *admin_listen = config_admin_listen(cfg);
    if (!admin_listen)
        return 0;
    w->admin_http = http_server_new(ctx->base, admin_listen, &limits, err, errlen);
    if (!w->admin_http)
        return -1;
    http_server_route(w->admin_http, "/healthz", handle_healthz, ctx);
    http_server_route(w->admin_http, "/readyz", handle_readyz, ctx);
    return 0;
}

static int start(struct worker *w, char *err, size_t errlen)
{
    if (start_io(w, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < NPARTS; i++) {
        if (parts[i].roles && !(w->ctx.cfg->roles & parts[i].roles))
            continue;
        if (parts[i].start(w, err, errlen) != 0)
            return -1;
        w->started[i] = true;
    }
    struct event_base *base = w->ctx.base;
    w->readiness_ev = event_new(base, -1, EV_PERSIST, on_readiness_timer, w);
    loop_timer_arm(w->readiness_ev, 1000);
    on_readiness_timer(-1, 0, w);
    w->drain_ev = event_new(base, -1, EV_PERSIST, on_drain_timer, w);
    w->sig_hup = evsignal_new(base, SIGHUP, on_sighup, w);
    w->sig_term = evsignal_new(base, SIGTERM, on_sigterm, w);
    w->sig_int = evsignal_new(base, SIGINT, on_sigterm, w);
    evsignal_add(w->sig_hup, NULL);
    evsignal_add(w->sig_term, NULL);
    evsignal_add(w->sig_int, NULL);
    uint64_t watchdog_usec = sd_notify_watchdog_usec();
    if (watchdog_usec > 0) {
        struct timeval tv = clock_tv_from_us((int64_t)(watchdog_usec / 2));
        w->watchdog_ev = event_new(base, -1, EV_PERSIST, on_watchdog_timer, w);
        event_add(w->watchdog_ev, &tv);
    }
    return 0;
}

/* Also after a failed start: only what started is closed and freed. */
static void stop(struct worker *w)
{
    struct hookd_ctx *ctx = &w->ctx;
    /* No periodic work of the worker's own while the parts close: teardown
     * turns the loop (evdns), and the pool and Redis go away under it. */
    struct event *timers[] = {w->readiness_ev, w->watchdog_ev};
    for (size_t i = 0; i < sizeof timers / sizeof timers[0]; i++)
        if (timers[i])
            event_del(timers[i]);
    for (size_t i = NPARTS; i-- > 0;)
        if (runs(w, i) && parts[i].drain)
            parts[i].drain(w);
    for (size_t i = NPARTS; i-- > 0;)
        if (runs(w, i) && parts[i].close)
            parts[i].close(w);
    /* Jobs still queued run, and their completions reach their owners. */
    db_pool_free(ctx->db);
    ctx->db = NULL;
    /* Freeing a connection runs the callbacks still pending (with NULL
     * replies) while their owners live. Nothing talks to Redis after this:
     * later calls see NULL connections and return -1. */
    redis_conn_free(ctx->redis_sub);
    redis_conn_free(ctx->redis);
    ctx->redis_sub = ctx->redis = NULL;
    for (size_t i = NPARTS; i-- > 0;) {
        if (runs(w, i) && parts[i].free)
            parts[i].free(w);
        w->started[i] = false;
    }
    http_server_free(w->admin_http);
    http_server_free(w->http);
    struct event *evs[] = {w->readiness_ev, w->drain_ev, w->sig_hup, w->sig_term, w->sig_int, w->watchdog_ev};
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        if (evs[i])
            event_free(evs[i]);
}

static struct event_base *new_base(void)
{
    /* epoll changelist: a connection's read/write interest flips several
     * times per request (evhttp enables and disables them as a request
     * moves on); with the changelist only the net change of a loop turn
     * reaches epoll_ctl, a large share of the relay's CPU otherwise.
     * Safe as long as no fd is dup()ed, which hookd never does. */
    struct event_config *ecfg = event_config_new();
    if (ecfg)
        event_config_set_flag(ecfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    struct event_base *base = ecfg ? event_base_new_with_config(ecfg) : NULL;
    event_config_free(ecfg);
    return base ? base : event_base_new();
}

int worker_run(const char *config_path)
{
    char err[512];
    struct hookd_config *cfg = config_load(config_path, err, sizeof err);
    if (!cfg) {
        cli_fail(NULL, "%s", err);
        return 2;
    }
    enum log_level lvl;
    if (log_level_parse(cfg->log_level, &lvl) == 0)
        log_min_level = lvl;
    signal(SIGPIPE, SIG_IGN);
    struct worker *w = xcalloc(1, sizeof *w);
    w->ctx.cfg = cfg;
    w->ctx.base = new_base();
    w->ctx.started_ms = clock_wall_ms();
    make_id(&w->ctx);
    log_set_worker(w->ctx.id);
    int status = 0;
    if (start(w, err, sizeof err) != 0) {
        cli_fail(NULL, "%s", err);
        status = 1;
    } else {
        log_info("worker.started", "listen=%s port=%d admin_listen=%s admin_port=%d config=%s", cfg->listen,
                 http_server_port(w->http), w->admin_http ? cfg->admin_listen : "off",
                 w->admin_http ? http_server_port(w->admin_http) : 0, cfg->path);
        notify_state(w, "READY=1"); /* the listener accepts from here on */
        event_base_dispatch(w->ctx.base);
        log_info("worker.stopped", "%s", "");
    }
    stop(w);
    event_base_free(w->ctx.base);
    config_unref(w->ctx.cfg);
    free(w);
    return status;
}
