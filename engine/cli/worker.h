/* One `hookd run` process: the composition root. It owns the event loop,
 * the config snapshot, the Postgres pool, the Redis connections, the HTTP
 * listener and the roles, wires them together, and runs the lifecycle:
 * start (everything comes up even if Postgres or Redis is down), SIGHUP
 * reload (a bad file keeps the old config), SIGTERM drain (stop claiming and
 * accepting, finish what is in flight, remove the heartbeat, exit 0). */
#ifndef HOOKD_WORKER_H
#define HOOKD_WORKER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "redis_conn.h"
#include "stats.h"

struct event_base;
struct db_pool;
struct http_server;
struct heartbeat;
struct sched;
struct ingest;
struct inbox;
struct reconcile;
struct relay;
struct delivery;
struct alerter;

/* The Lua scripts of lua/, loaded into every command connection. */
struct worker_scripts {
    struct redis_script claim, ack, reschedule, reap, seed, adopt;
};

struct worker {
    struct event_base *base;
    struct hookd_config *cfg; /* current snapshot; jobs hold their own ref */
    char id[96];              /* host-pid-random: unique per process */
    char host[64];
    int64_t started_ms;       /* wall clock */
    struct db_pool *db;        /* processing, relay, admin, readiness */
    struct db_pool *ingest_db; /* inbound inserts only, so they never queue behind processing */
    struct redis_conn *redis;     /* commands and scripts */
    struct redis_conn *redis_sub; /* pub/sub wakeups */
    struct worker_scripts scripts;
    struct http_server *http;
    struct heartbeat *heartbeat;
    struct sched *inbox_sched;
    struct reconcile *reconcile;
    struct ingest *ingest;
    struct inbox *inbox;
    struct sched *delivery_sched;
    struct relay *relay;
    struct delivery *delivery;
    struct alerter *alerter;
    struct stats stats;
    bool migrations_current;
    long dlq_size; /* open dead letters, refreshed every second; -1 unknown */
    long long depth[4]; /* inbox due, inbox inflight, delivery due, delivery inflight (per heartbeat) */
    json_t *live_workers; /* ids that beat recently, refreshed with the heartbeat (admin view) */
    bool draining;
    int64_t drain_deadline_ms;
    struct event *sig_hup, *sig_term, *sig_int, *readiness_ev, *drain_ev;
};

/* Runs a worker until SIGTERM/SIGINT; returns the process exit status. */
int worker_run(const char *config_path);

/* "<prefix>:<suffix>" into buf, e.g. worker_key(w, "{inbox}:due"). */
const char *worker_key(const struct worker *w, const char *suffix, char *buf, size_t buflen);
/* Wall-clock milliseconds (Redis scores are wall-clock ms). */
int64_t worker_now_ms(void);
/* Postgres reachable, Redis reachable, migrations current. */
bool worker_ready(const struct worker *w);

#endif
