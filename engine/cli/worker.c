/* `hookd run`: the worker's lifecycle; see worker.h. Start-up never waits
 * for Postgres or Redis: both connect in the background and the worker
 * reports not-ready on /readyz until they answer and the schema is current. */
#include "worker.h"

#include <event2/event.h>
#include <event2/http.h>
#include <openssl/rand.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "admin.h"
#include "alert.h"
#include "db.h"
#include "delivery.h"
#include "dlq.h"
#include "embedded.h"
#include "heartbeat.h"
#include "http_server.h"
#include "inbox.h"
#include "ingest.h"
#include "log.h"
#include "metrics.h"
#include "migrate.h"
#include "reconcile.h"
#include "relay.h"
#include "sched.h"
#include "xmalloc.h"

int64_t worker_now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

const char *worker_key(const struct worker *w, const char *suffix, char *buf, size_t buflen)
{
    snprintf(buf, buflen, "%s:%s", w->cfg->key_prefix, suffix);
    return buf;
}

bool worker_ready(const struct worker *w)
{
    /* The main pool is probed every second; the ingest pool only learns of
     * an outage or a recovery when a request arrives, so it does not count:
     * a stale "down" there must not keep load balancers away for good. */
    return !w->draining && db_pool_healthy(w->db) && redis_conn_ready(w->redis) && w->migrations_current;
}

static const struct embedded_file *embedded(const char *path)
{
    for (size_t i = 0; i < embedded_nfiles; i++)
        if (strcmp(embedded_files[i].path, path) == 0)
            return &embedded_files[i];
    HOOKD_ASSERT(!"embedded file missing");
}

static void load_scripts(struct worker *w)
{
    static const struct {
        const char *name;
        size_t offset;
    } defs[] = {
        {"claim", offsetof(struct worker_scripts, claim)},
        {"ack", offsetof(struct worker_scripts, ack)},
        {"reschedule", offsetof(struct worker_scripts, reschedule)},
        {"reap", offsetof(struct worker_scripts, reap)},
        {"seed", offsetof(struct worker_scripts, seed)},
        {"adopt", offsetof(struct worker_scripts, adopt)},
    };
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        char path[64];
        snprintf(path, sizeof path, "lua/%s.lua", defs[i].name);
        const struct embedded_file *f = embedded(path);
        struct redis_script *s = (struct redis_script *)((char *)&w->scripts + defs[i].offset);
        redis_script_init(s, defs[i].name, f->data, f->len);
        redis_conn_add_script(w->redis, s);
    }
}

/* ---- readiness --------------------------------------------------------- */

struct schema_check {
    struct worker *w;
    int state; /* 0 current, 1 pending, -1 error */
    long dlq_size;
    char err[256];
};

static void work_schema_check(PGconn *conn, void *arg)
{
    struct schema_check *c = arg;
    c->state = conn ? migrate_check(conn, c->err, sizeof c->err) : -1;
    c->dlq_size = c->state == 0 ? dlq_count(conn) : -1;
}

static void done_schema_check(void *arg)
{
    struct schema_check *c = arg;
    bool current = c->state == 0;
    if (current != c->w->migrations_current) {
        if (current)
            log_info("schema.current", "%s", "");
        else if (c->state == 1)
            log_warn("schema.pending", "hint=\"run hookd migrate\"");
        else if (db_pool_healthy(c->w->db))
            log_warn("schema.check_failed", "error=\"%s\"", c->err);
    }
    c->w->migrations_current = current;
    if (c->dlq_size >= 0)
        c->w->dlq_size = c->dlq_size;
    free(c);
}

static void on_readiness_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct worker *w = arg;
    struct schema_check *c = xcalloc(1, sizeof *c);
    c->w = w;
    db_pool_submit(w->db, work_schema_check, done_schema_check, c);
}

static void handle_healthz(struct evhttp_request *req, void *arg)
{
    (void)arg;
    http_reply_json(req, 200, json_pack("{s:s}", "status", "alive"));
}

static void handle_readyz(struct evhttp_request *req, void *arg)
{
    struct worker *w = arg;
    bool ready = worker_ready(w);
    http_reply_json(req, ready ? 200 : 503,
                    json_pack("{s:b, s:b, s:b, s:b, s:b}", "ready", ready, "postgres", db_pool_healthy(w->db),
                              "redis", redis_conn_ready(w->redis), "migrations", w->migrations_current, "draining",
                              w->draining));
}

/* ---- Redis events ------------------------------------------------------ */

static void on_redis_ready(void *arg)
{
    struct worker *w = arg;
    /* A reconnect may mean a restarted, empty Redis: rebuild the schedule. */
    if (w->reconcile)
        reconcile_now(w->reconcile);
    if (w->inbox_sched)
        sched_wake(w->inbox_sched);
    if (w->delivery_sched)
        sched_wake(w->delivery_sched);
}

/* `<prefix>:wake:inbox` / `<prefix>:wake:delivery`: new work is due now. */
static void on_wake(const char *channel, const char *msg, size_t len, void *arg)
{
    (void)msg;
    (void)len;
    struct worker *w = arg;
    size_t n = strlen(channel);
    if (w->draining)
        return;
    if (w->inbox_sched && n >= 5 && strcmp(channel + n - 5, "inbox") == 0)
        sched_wake(w->inbox_sched);
    else if (w->delivery_sched && n >= 8 && strcmp(channel + n - 8, "delivery") == 0)
        sched_wake(w->delivery_sched);
}

/* ---- signals ------------------------------------------------------------ */

static void warn_unreloadable(const struct hookd_config *o, const struct hookd_config *n)
{
    if (strcmp(o->database.text, n->database.text) != 0 || strcmp(o->redis.text, n->redis.text) != 0 ||
        strcmp(o->listen, n->listen) != 0 || o->roles != n->roles || strcmp(o->key_prefix, n->key_prefix) != 0 ||
        o->db_pool_size != n->db_pool_size)
        log_warn("config.restart_needed",
                 "keys=\"database, redis, listen, roles, key_prefix, db_pool_size\" note=\"changed, take effect on restart\"");
}

static void on_sighup(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct worker *w = arg;
    char err[512];
    struct hookd_config *n = config_load(w->cfg->path, err, sizeof err);
    if (!n) {
        log_error("config.reload_failed", "error=\"%s\" note=\"keeping the previous config\"", err);
        return;
    }
    warn_unreloadable(w->cfg, n);
    n->generation = w->cfg->generation + 1;
    enum log_level lvl;
    if (log_level_parse(n->log_level, &lvl) == 0)
        log_min_level = lvl;
    config_unref(w->cfg);
    w->cfg = n;
    if (w->ingest)
        ingest_config_changed(w->ingest);
    heartbeat_reschedule(w->heartbeat);
    log_info("config.reloaded", "generation=%llu", (unsigned long long)n->generation);
}

static void on_drained(void *arg)
{
    struct worker *w = arg;
    event_base_loopexit(w->base, NULL);
}

static void on_drain_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct worker *w = arg;
    size_t inflight = (w->inbox_sched ? sched_inflight(w->inbox_sched) : 0) +
                      (w->delivery_sched ? sched_inflight(w->delivery_sched) : 0);
    size_t pending = db_pool_pending(w->db) + (w->ingest_db ? db_pool_pending(w->ingest_db) : 0) +
                     (w->ingest ? ingest_pending(w->ingest) : 0) +
                     (w->delivery ? delivery_pending(w->delivery) : 0) + relay_pending(w->relay);
    bool late = worker_now_ms() > w->drain_deadline_ms;
    if ((inflight == 0 && pending == 0) || late) {
        if (late)
            log_warn("worker.drain_timeout", "inflight=%zu pending=%zu note=\"leases expire, others take over\"",
                     inflight, pending);
        event_del(w->drain_ev);
        heartbeat_remove(w->heartbeat, on_drained, w);
    }
}

static void on_sigterm(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct worker *w = arg;
    if (w->draining)
        return;
    w->draining = true;
    log_info("worker.draining", "%s", "");
    w->drain_deadline_ms = worker_now_ms() + w->cfg->shutdown_timeout;
    if (w->http)
        http_server_stop_accepting(w->http);
    if (w->inbox_sched)
        sched_stop(w->inbox_sched);
    if (w->delivery_sched)
        sched_stop(w->delivery_sched);
    if (w->relay)
        relay_stop(w->relay);
    if (w->ingest)
        ingest_flush(w->ingest);
    struct timeval tv = {0, 20 * 1000};
    event_add(w->drain_ev, &tv);
}

/* ---- start and stop ----------------------------------------------------- */

static void make_id(struct worker *w)
{
    unsigned char rnd[3];
    if (RAND_bytes(rnd, sizeof rnd) != 1)
        memset(rnd, 0, sizeof rnd);
    if (gethostname(w->host, sizeof w->host) != 0)
        snprintf(w->host, sizeof w->host, "unknown");
    w->host[sizeof w->host - 1] = '\0';
    snprintf(w->id, sizeof w->id, "%s-%d-%02x%02x%02x", w->host, (int)getpid(), rnd[0], rnd[1], rnd[2]);
}

static int start(struct worker *w, char *err, size_t errlen)
{
    const struct hookd_config *cfg = w->cfg;
    w->db = db_pool_new(w->base, cfg->database.text, (int)cfg->db_pool_size, true);
    if (!w->db)
        return snprintf(err, errlen, "cannot start the database threads"), -1;
    w->redis = redis_conn_new(w->base, cfg->redis.text, "main", err, errlen);
    if (!w->redis)
        return -1;
    w->redis_sub = redis_conn_new(w->base, cfg->redis.text, "sub", err, errlen);
    if (!w->redis_sub)
        return -1;
    load_scripts(w);
    redis_conn_on_ready(w->redis, on_redis_ready, w);
    char channel[160];
    redis_conn_subscribe(w->redis_sub, worker_key(w, "wake:inbox", channel, sizeof channel), on_wake, w);
    redis_conn_subscribe(w->redis_sub, worker_key(w, "wake:delivery", channel, sizeof channel), on_wake, w);

    http_server_raise_fd_limit();
    w->http = http_server_new(w->base, cfg->listen,
                              &(struct http_limits){cfg->max_header_size, cfg->max_headers, cfg->request_timeout,
                                                    cfg->max_connections, cfg->max_buffered_body},
                              err, errlen);
    if (!w->http)
        return -1;
    http_server_route(w->http, "/healthz", handle_healthz, w);
    http_server_route(w->http, "/readyz", handle_readyz, w);
    http_server_route(w->http, "/metrics", metrics_handle, w);
    admin_register(w);
    w->alerter = alerter_new(w, err, errlen);
    if (!w->alerter)
        return -1;
    if (cfg->roles & ROLE_INGEST) {
        w->ingest_db = db_pool_new(w->base, cfg->database.text, (int)cfg->ingest_concurrency, false);
        if (!w->ingest_db)
            return snprintf(err, errlen, "cannot start the database threads"), -1;
        w->ingest = ingest_new(w);
    }
    if (cfg->roles & ROLE_INBOX) {
        w->inbox = inbox_new(w);
        w->inbox_sched = sched_new(w, "inbox", inbox_process, w->inbox);
    }
    if (cfg->roles & ROLE_RELAY) {
        w->delivery = delivery_new(w, err, errlen);
        if (!w->delivery)
            return -1;
        w->delivery_sched = sched_new(w, "delivery", delivery_process, w->delivery);
        w->relay = relay_new(w);
        if (!w->relay)
            return snprintf(err, errlen, "cannot start the outbox relay"), -1;
    }
    w->reconcile = reconcile_new(w);
    w->heartbeat = heartbeat_new(w);

    w->readiness_ev = event_new(w->base, -1, EV_PERSIST, on_readiness_timer, w);
    struct timeval second = {1, 0};
    event_add(w->readiness_ev, &second);
    on_readiness_timer(-1, 0, w);
    w->drain_ev = event_new(w->base, -1, EV_PERSIST, on_drain_timer, w);
    w->sig_hup = evsignal_new(w->base, SIGHUP, on_sighup, w);
    w->sig_term = evsignal_new(w->base, SIGTERM, on_sigterm, w);
    w->sig_int = evsignal_new(w->base, SIGINT, on_sigterm, w);
    evsignal_add(w->sig_hup, NULL);
    evsignal_add(w->sig_term, NULL);
    evsignal_add(w->sig_int, NULL);
    return 0;
}

static void stop(struct worker *w)
{
    if (w->reconcile)
        reconcile_stop(w->reconcile);
    if (w->inbox_sched)
        sched_stop(w->inbox_sched);
    if (w->delivery_sched)
        sched_stop(w->delivery_sched);
    relay_stop(w->relay);
    /* Settles the relay's passes while the delivery role and its scheduler
     * live, then runs the completions of jobs still in flight while their
     * owners live. */
    relay_free(w->relay);
    w->relay = NULL;
    db_pool_free(w->ingest_db);
    w->ingest_db = NULL;
    db_pool_free(w->db);
    w->db = NULL;
    ingest_free(w->ingest);
    /* These two turn the loop once more (evdns releases cancelled lookups). */
    delivery_free(w->delivery);
    alerter_free(w->alerter);
    /* Redis before the objects its replies are addressed to: freeing a
     * connection runs the callbacks still pending (with NULL replies) while
     * their owners live; a reply arriving in a later loop turn found a freed
     * scheduler once (ASan). Nothing talks to Redis after this: the calls
     * below see NULL connections and return -1. */
    redis_conn_free(w->redis_sub);
    redis_conn_free(w->redis);
    w->redis_sub = w->redis = NULL;
    sched_free(w->delivery_sched);
    sched_free(w->inbox_sched);
    inbox_free(w->inbox);
    reconcile_free(w->reconcile);
    heartbeat_free(w->heartbeat);
    http_server_free(w->http);
    struct event *evs[] = {w->readiness_ev, w->drain_ev, w->sig_hup, w->sig_term, w->sig_int};
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        if (evs[i])
            event_free(evs[i]);
}

int worker_run(const char *config_path)
{
    char err[512];
    struct hookd_config *cfg = config_load(config_path, err, sizeof err);
    if (!cfg) {
        fprintf(stderr, "hookd: %s\n", err);
        return 2;
    }
    enum log_level lvl;
    if (log_level_parse(cfg->log_level, &lvl) == 0)
        log_min_level = lvl;
    signal(SIGPIPE, SIG_IGN);
    struct worker *w = xcalloc(1, sizeof *w);
    w->cfg = cfg;
    /* epoll changelist: a connection's read/write interest flips several
     * times per request (evhttp enables and disables them as a request
     * moves on); with the changelist only the net change of a loop turn
     * reaches epoll_ctl (measured: epoll_ctl was 17% of the relay's CPU).
     * Safe as long as no fd is dup()ed, which hookd never does. */
    struct event_config *ecfg = event_config_new();
    if (ecfg)
        event_config_set_flag(ecfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    w->base = ecfg ? event_base_new_with_config(ecfg) : NULL;
    event_config_free(ecfg);
    if (!w->base)
        w->base = event_base_new();
    w->started_ms = worker_now_ms();
    w->dlq_size = -1;
    w->live_workers = json_array();
    make_id(w);
    log_set_worker(w->id);
    int status = 0;
    if (start(w, err, sizeof err) != 0) {
        fprintf(stderr, "hookd: %s\n", err);
        status = 1;
    } else {
        log_info("worker.started", "listen=%s port=%d config=%s", cfg->listen, http_server_port(w->http),
                 cfg->path);
        event_base_dispatch(w->base);
        log_info("worker.stopped", "%s", "");
    }
    stop(w);
    event_base_free(w->base);
    json_decref(w->live_workers);
    config_unref(w->cfg);
    free(w);
    return status;
}
