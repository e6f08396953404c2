/* Heartbeat and counter flushing; see heartbeat.h. Counter deltas are
 * handed to Redis with HINCRBY and only forgotten when Redis confirmed them,
 * so a Redis outage delays the cluster counters but does not lose counts. */
#include "heartbeat.h"

#include <event2/event.h>
#include <hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "ctx.h"
#include "db.h"
#include "log.h"
#include "loop_timer.h"
#include "version.h"
#include "xmalloc.h"

struct heartbeat {
    struct hookd_ctx *ctx;
    struct event *timer;
    heartbeat_inflight_fn inflight;
    void *inflight_arg;
    struct heartbeat_view view;
    void (*removed)(void *);
    void *removed_arg;
};

/* A flushed batch of deltas; added back if Redis did not confirm it. */
struct flush {
    struct hookd_ctx *ctx;
    uint64_t delta[STAT__COUNT];
    uint64_t rdelta[REJECT__COUNT];
};

static void on_flushed(struct redisReply *reply, void *arg)
{
    struct flush *f = arg;
    if (!reply || reply->type == REDIS_REPLY_ERROR) {
        for (int i = 0; i < STAT__COUNT; i++)
            f->ctx->stats.unflushed[i] += f->delta[i];
        for (int i = 0; i < REJECT__COUNT; i++)
            f->ctx->stats.rejected_unflushed[i] += f->rdelta[i];
    }
    free(f);
}

/* One EXEC'd transaction of HINCRBYs, so the hash never shows half a batch. */
static void flush_stats(struct hookd_ctx *ctx)
{
    struct stats *s = &ctx->stats;
    bool any = false;
    for (int i = 0; i < STAT__COUNT; i++)
        any |= s->unflushed[i] != 0;
    if (!any || !redis_conn_ready(ctx->redis))
        return;
    char key[256];
    ctx_key(ctx, "stats", key, sizeof key);
    struct flush *f = xcalloc(1, sizeof *f);
    f->ctx = ctx;
    if (redis_conn_cmdf(ctx->redis, NULL, NULL, "MULTI") != 0) {
        free(f);
        return;
    }
    for (int i = 0; i < STAT__COUNT; i++) {
        if (!s->unflushed[i])
            continue;
        if (redis_conn_cmdf(ctx->redis, NULL, NULL, "HINCRBY %s %s %llu", key, stats_name(i),
                            (unsigned long long)s->unflushed[i]) == 0) {
            f->delta[i] = s->unflushed[i];
            s->unflushed[i] = 0;
        }
    }
    for (int i = 0; i < REJECT__COUNT; i++) {
        if (!s->rejected_unflushed[i])
            continue;
        if (redis_conn_cmdf(ctx->redis, NULL, NULL, "HINCRBY %s rejected_%s %llu", key, stats_reject_name(i),
                            (unsigned long long)s->rejected_unflushed[i]) == 0) {
            f->rdelta[i] = s->rejected_unflushed[i];
            s->rejected_unflushed[i] = 0;
        }
    }
    if (redis_conn_cmdf(ctx->redis, on_flushed, f, "EXEC") != 0)
        on_flushed(NULL, f);
}

static void roles_text(unsigned roles, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s%s%s", roles & ROLE_INGEST ? "ingest" : "",
             (roles & ROLE_INGEST) && (roles & (ROLE_INBOX | ROLE_RELAY)) ? "," : "",
             roles & ROLE_INBOX ? "inbox" : "", (roles & ROLE_INBOX) && (roles & ROLE_RELAY) ? "," : "",
             roles & ROLE_RELAY ? "relay" : "");
}

struct depth_req {
    struct heartbeat *hb;
    int slot;
};

static void on_depth(struct redisReply *reply, void *arg)
{
    struct depth_req *d = arg;
    if (reply && reply->type == REDIS_REPLY_INTEGER)
        d->hb->view.depth[d->slot] = reply->integer;
    free(d);
}

static void on_live(struct redisReply *reply, void *arg)
{
    struct heartbeat *hb = arg;
    if (!reply || reply->type != REDIS_REPLY_ARRAY)
        return;
    json_array_clear(hb->view.live_workers);
    for (size_t i = 0; i < reply->elements; i++)
        json_array_append_new(hb->view.live_workers, json_string(reply->element[i]->str));
}

/* Queue depths for /metrics, read with the beat. */
static void refresh_depths(struct heartbeat *hb)
{
    struct hookd_ctx *ctx = hb->ctx;
    static const char *const keys[] = {"{inbox}:due", "{inbox}:inflight", "{delivery}:due", "{delivery}:inflight"};
    for (int i = 0; i < 4; i++) {
        char key[256];
        struct depth_req *d = xcalloc(1, sizeof *d);
        d->hb = hb;
        d->slot = i;
        if (redis_conn_cmdf(ctx->redis, on_depth, d, "ZCARD %s", ctx_key(ctx, keys[i], key, sizeof key)) != 0)
            free(d);
    }
}

static void beat(struct heartbeat *hb)
{
    struct hookd_ctx *ctx = hb->ctx;
    if (!redis_conn_ready(ctx->redis))
        return;
    char key[256], set[256], roles[64], num[32][32];
    ctx_key(ctx, "worker:", key, sizeof key);
    strncat(key, ctx->id, sizeof key - strlen(key) - 1);
    ctx_key(ctx, "workers", set, sizeof set);
    roles_text(ctx->cfg->roles, roles, sizeof roles);
    int64_t now = clock_wall_ms();
    const char *argv[96];
    int argc = 0, k = 0;
    argv[argc++] = "HSET";
    argv[argc++] = key;
#define FIELD(name, value) (argv[argc++] = (name), argv[argc++] = (value))
#define NUM(name, fmt, v) (snprintf(num[k], sizeof num[k], fmt, v), FIELD(name, num[k++]))
    FIELD("host", ctx->host);
    NUM("pid", "%d", (int)getpid());
    FIELD("version", HOOKD_VERSION);
    FIELD("roles", roles);
    NUM("started_at", "%lld", (long long)ctx->started_ms);
    NUM("last_beat", "%lld", (long long)now);
    NUM("config_generation", "%llu", (unsigned long long)ctx->cfg->generation);
    FIELD("ready", ctx_ready(ctx) ? "1" : "0");
    FIELD("draining", ctx->draining ? "1" : "0");
    NUM("inflight", "%zu", hb->inflight(hb->inflight_arg));
    NUM("db_pending", "%zu", db_pool_pending(ctx->db));
    NUM("clock_offset_ms", "%lld", (long long)clock_offset_ms());
    for (int i = 0; i < STAT__COUNT && k < 32; i++)
        NUM(stats_name(i), "%llu", (unsigned long long)ctx->stats.total[i]);
#undef NUM
#undef FIELD
    if (redis_conn_cmd(ctx->redis, NULL, NULL, argc, argv, NULL) != 0)
        return;
    long long ttl = ctx->cfg->heartbeat_interval * 3;
    if (ttl < 3000)
        ttl = 3000;
    if (redis_conn_cmdf(ctx->redis, NULL, NULL, "PEXPIRE %s %lld", key, ttl) != 0 ||
        redis_conn_cmdf(ctx->redis, NULL, NULL, "ZADD %s %lld %s", set, (long long)now, ctx->id) != 0)
        return;
    if (hb->view.dlq_size >= 0) {
        char dlq[256];
        ctx_key(ctx, "dlq_size", dlq, sizeof dlq);
        if (redis_conn_cmdf(ctx->redis, NULL, NULL, "SET %s %ld", dlq, hb->view.dlq_size) != 0)
            return;
    }
    refresh_depths(hb);
    if (redis_conn_cmdf(ctx->redis, on_live, hb, "ZRANGEBYSCORE %s %lld +inf", set, (long long)(now - ttl)) != 0)
        return;
    flush_stats(ctx);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct heartbeat *hb = arg;
    beat(hb);
    heartbeat_reschedule(hb);
}

struct heartbeat *heartbeat_new(struct hookd_ctx *ctx, heartbeat_inflight_fn inflight, void *arg)
{
    struct heartbeat *hb = xcalloc(1, sizeof *hb);
    hb->ctx = ctx;
    hb->inflight = inflight;
    hb->inflight_arg = arg;
    hb->view.dlq_size = -1;
    hb->view.live_workers = json_array();
    hb->timer = evtimer_new(ctx->base, on_timer, hb);
    loop_timer_arm(hb->timer, 0);
    return hb;
}

void heartbeat_reschedule(struct heartbeat *hb)
{
    loop_timer_arm(hb->timer, hb->ctx->cfg->heartbeat_interval);
}

void heartbeat_free(struct heartbeat *hb)
{
    if (!hb)
        return;
    event_free(hb->timer);
    json_decref(hb->view.live_workers);
    free(hb);
}

const struct heartbeat_view *heartbeat_view(const struct heartbeat *hb)
{
    return &hb->view;
}

void heartbeat_set_dlq_size(struct heartbeat *hb, long n)
{
    hb->view.dlq_size = n;
}

static void on_removed(struct redisReply *reply, void *arg)
{
    (void)reply;
    struct heartbeat *hb = arg;
    void (*done)(void *) = hb->removed;
    hb->removed = NULL;
    if (done)
        done(hb->removed_arg);
}

void heartbeat_remove(struct heartbeat *hb, void (*done)(void *arg), void *arg)
{
    struct hookd_ctx *ctx = hb->ctx;
    evtimer_del(hb->timer);
    hb->removed = done;
    hb->removed_arg = arg;
    char key[256], set[256];
    ctx_key(ctx, "worker:", key, sizeof key);
    strncat(key, ctx->id, sizeof key - strlen(key) - 1);
    ctx_key(ctx, "workers", set, sizeof set);
    flush_stats(ctx);
    if (redis_conn_cmdf(ctx->redis, NULL, NULL, "DEL %s", key) != 0 ||
        redis_conn_cmdf(ctx->redis, on_removed, hb, "ZREM %s %s", set, ctx->id) != 0)
        on_removed(NULL, hb);
}
