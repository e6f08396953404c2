/* What a role sees of the worker it runs in: the event loop, the current
 * config snapshot, the shared Postgres pool, the Redis connections and the
 * Lua scripts loaded into them, the process counters, and the worker's
 * identity and lifecycle flags. Nothing else: a role that needs a peer (the
 * alerter, the delivery sender, the heartbeat's cluster view) is handed that
 * peer explicitly by the worker (engine/cli/worker.c), which owns the
 * context and everything in it. Roles read the fields; only the worker
 * writes them (cfg is swapped on reload, the flags change with the
 * lifecycle). Loop thread only. */
#ifndef HOOKD_CTX_H
#define HOOKD_CTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "redis_conn.h"
#include "stats.h"

struct event_base;
struct db_pool;

/* The Lua scripts of lua/, loaded into the command connection. */
struct ctx_scripts {
    struct redis_script claim, ack, reschedule, reap, seed, adopt;
};

struct hookd_ctx {
    struct event_base *base;
    struct hookd_config *cfg; /* current snapshot; jobs take their own ref */
    char id[96];              /* host-pid-random: unique per process */
    char host[64];
    int64_t started_ms;           /* wall clock */
    struct db_pool *db;           /* processing, relay, admin, readiness */
    struct redis_conn *redis;     /* commands and scripts */
    struct redis_conn *redis_sub; /* pub/sub */
    struct ctx_scripts scripts;
    struct stats stats;
    bool migrations_current; /* the schema check's last answer */
    bool draining;           /* SIGTERM received: take no new work */
};

/* "<prefix>:<suffix>" into buf, e.g. ctx_key(ctx, "{inbox}:due", …). */
const char *ctx_key(const struct hookd_ctx *ctx, const char *suffix, char *buf, size_t buflen);
/* Registers the scripts of lua/ (embedded at build time) with ctx->redis,
 * which loads them after every connect. */
void ctx_load_scripts(struct hookd_ctx *ctx);
/* The [hookd] redis_* keys as redis_conn options (strings borrowed from cfg). */
void ctx_redis_options(const struct hookd_config *cfg, struct redis_options *out);
/* Ready for traffic: not draining, Postgres reachable, Redis reachable,
 * schema current. */
bool ctx_ready(const struct hookd_ctx *ctx);

#endif
