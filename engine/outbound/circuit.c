/* Endpoint circuits; see circuit.h.
 *
 * Three Redis hashes hold the cluster's view, all under the delivery
 * queue's hash tag so that every script touches one slot:
 * `<prefix>:{delivery}:circuit:failures` (endpoint -> consecutive failures),
 * `:circuit:open` (endpoint -> open until, ms, Postgres's clock) and
 * `:circuit:probe` (endpoint -> the delivery chosen as its probe), and
 * `:circuit:draining` (endpoint -> when its circuit closed, while its parked
 * set is still being moved back to due, UNPARK_CHUNK members per call). This
 * module owns the copy of `:circuit:open` that the worker decides with, the
 * outcomes noted since the last report, and the timer that refreshes the one
 * and reports the other. */
#include "circuit.h"

#include <event2/event.h>
#include <hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "clock.h"
#include "config.h"
#include "ctx.h"
#include "embedded.h"
#include "log.h"
#include "loop_timer.h"
#include "redis_conn.h"
#include "xmalloc.h"

#define uthash_malloc(sz) xmalloc(sz)
#include <uthash.h>

/* One endpoint this worker has heard of: its circuit as last seen, and the
 * outcomes noted since the last report. */
struct endpoint_state {
    UT_hash_handle hh;
    struct circuit *owner;
    int64_t open_until; /* 0: closed */
    bool seen;          /* in the last refresh */
    bool noted, succeeded;
    bool unparking; /* a circuit_unpark call of this worker is on the way */
    int trailing;   /* failures noted after the last success noted */
    char name[];
};

struct circuit {
    struct hookd_ctx *ctx;
    struct redis_script report, park, tick, park_due, filter, unpark;
    char failures_key[160], open_key[160], probe_key[160], ids_key[160], due_key[160], inflight_key[160],
        draining_key[160], since_key[160];
    struct endpoint_state *eps;
    circuit_closed_fn on_closed;
    void *on_closed_arg;
    circuit_seen_open_fn on_seen_open;
    void *on_seen_open_arg;
    circuit_disable_fn on_disable;
    void *on_disable_arg;
    struct event *timer, *flush_ev;
    bool refreshing, draining_refreshing;
};

/* Members per circuit_unpark call: about a millisecond of Redis. */
#define UNPARK_CHUNK 1000

static struct endpoint_state *endpoint(struct circuit *c, const char *name)
{
    struct endpoint_state *e;
    size_t len = strlen(name);
    HASH_FIND(hh, c->eps, name, len, e);
    if (e)
        return e;
    e = xcalloc(1, sizeof *e + len + 1);
    e->owner = c;
    memcpy(e->name, name, len + 1);
    HASH_ADD_KEYPTR(hh, c->eps, e->name, len, e);
    return e;
}

static void parked_key(const struct circuit *c, const char *name, char *buf, size_t len)
{
    char suffix[200];
    snprintf(suffix, sizeof suffix, "{delivery}:parked:%s", name);
    ctx_key(c->ctx, suffix, buf, len);
}

static void set_open(struct circuit *c, struct endpoint_state *e, int64_t until)
{
    bool opened = until > 0 && e->open_until == 0;
    if (opened)
        log_warn("delivery.circuit_open", "endpoint=%s probe_in_ms=%lld", e->name,
                 (long long)(until - clock_wall_ms()));
    else if (until == 0 && e->open_until > 0)
        log_info("delivery.circuit_closed", "endpoint=%s", e->name);
    e->open_until = until;
    if (opened && c->on_seen_open)
        c->on_seen_open(c->on_seen_open_arg, e->name);
}

void circuit_on_seen_open(struct circuit *c, circuit_seen_open_fn fn, void *arg)
{
    c->on_seen_open = fn;
    c->on_seen_open_arg = arg;
}

void circuit_on_disable(struct circuit *c, circuit_disable_fn fn, void *arg)
{
    c->on_disable = fn;
    c->on_disable_arg = arg;
}

void circuit_close(struct circuit *c, const char *endpoint_name)
{
    circuit_note(c, endpoint_name, true);
}

bool circuit_is_open(const struct circuit *c, const char *endpoint_name)
{
    struct endpoint_state *e;
    HASH_FIND(hh, c->eps, endpoint_name, strlen(endpoint_name), e);
    return e && e->open_until > 0;
}

/* ---- draining a closed circuit's parked set ----------------------------------- */

static void unpark(struct circuit *c, struct endpoint_state *e);

static void on_unparked(struct redisReply *reply, void *arg)
{
    struct endpoint_state *e = arg; /* lives as long as the circuit, which outlives its replies */
    e->unparking = false;
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
        reply->element[0]->type != REDIS_REPLY_INTEGER || reply->element[1]->type != REDIS_REPLY_INTEGER)
        return; /* the draining mark stays: the next refresh tries again */
    if (reply->element[1]->integer > 0)
        unpark(e->owner, e);
    else if (reply->element[0]->integer > 0)
        log_info("delivery.circuit_unparked", "endpoint=%s", e->name);
}

/* One chunk of the endpoint's parked set back to due; on_unparked asks for
 * the next one, so other commands run between chunks. */
static void unpark(struct circuit *c, struct endpoint_state *e)
{
    if (e->unparking)
        return;
    char parked[200], chunk[16];
    parked_key(c, e->name, parked, sizeof parked);
    snprintf(chunk, sizeof chunk, "%d", UNPARK_CHUNK);
    const char *argv[] = {c->open_key,     c->draining_key, parked,  c->due_key,
                          c->inflight_key, c->ids_key,      e->name, chunk};
    if (redis_conn_eval(c->ctx->redis, &c->unpark, on_unparked, e, 6, 8, argv, NULL) != 0)
        stats_add(&c->ctx->stats, STAT_REDIS_ERRORS, 1);
    else
        e->unparking = true;
}

/* ---- reporting outcomes ---------------------------------------------------- */

static void on_reported(struct redisReply *reply, void *arg)
{
    struct circuit *c = arg;
    if (!reply || reply->type != REDIS_REPLY_ARRAY)
        return;
    for (size_t i = 0; i + 2 < reply->elements; i += 3) {
        if (reply->element[i]->type != REDIS_REPLY_STRING)
            continue;
        const struct redisReply *u = reply->element[i + 1], *closed = reply->element[i + 2];
        int64_t until = u->type == REDIS_REPLY_INTEGER ? u->integer : 0;
        struct endpoint_state *e = endpoint(c, reply->element[i]->str);
        set_open(c, e, until);
        if (closed->type == REDIS_REPLY_INTEGER && closed->integer == 1)
            unpark(c, e); /* the rest of its parked set, if any, chunk by chunk */
        if (closed->type == REDIS_REPLY_INTEGER && closed->integer > 0 && c->on_closed)
            c->on_closed(c->on_closed_arg, e->name, closed->integer == 2);
    }
}

/* One circuit_report call for everything noted since the last one. */
static void report(struct circuit *c)
{
    size_t n = 0;
    for (struct endpoint_state *e = c->eps; e; e = e->hh.next)
        n += e->noted;
    if (n == 0)
        return;
    const char **argv = xcalloc(7 + n + 1 + 5 * n, sizeof *argv);
    char(*keys)[200] = xcalloc(n, sizeof *keys);
    char(*nums)[3][24] = xcalloc(n, sizeof *nums);
    char now[24];
    snprintf(now, sizeof now, "%lld", (long long)clock_wall_ms());
    argv[0] = c->failures_key;
    argv[1] = c->open_key;
    argv[2] = c->probe_key;
    argv[3] = c->due_key;
    argv[4 + n] = c->ids_key;
    argv[5 + n] = c->draining_key;
    argv[6 + n] = c->since_key;
    size_t k = 0, a = 7 + n;
    argv[a++] = now;
    for (struct endpoint_state *e = c->eps; e; e = e->hh.next) {
        if (!e->noted)
            continue;
        const struct backoff_policy *p = config_retry_for_endpoint(c->ctx->cfg, e->name);
        parked_key(c, e->name, keys[k], sizeof keys[k]);
        argv[4 + k] = keys[k];
        snprintf(nums[k][0], sizeof nums[k][0], "%d", e->trailing);
        snprintf(nums[k][1], sizeof nums[k][1], "%d", p->circuit_failures);
        snprintf(nums[k][2], sizeof nums[k][2], "%lld", (long long)p->circuit_probe_ms);
        argv[a++] = e->name;
        argv[a++] = e->succeeded || !p->circuit ? "1" : "0";
        argv[a++] = nums[k][0];
        argv[a++] = nums[k][1];
        argv[a++] = nums[k][2];
        e->noted = e->succeeded = false;
        e->trailing = 0;
        k++;
    }
    if (redis_conn_eval(c->ctx->redis, &c->report, on_reported, c, (int)(7 + n), (int)a, argv, NULL) != 0)
        stats_add(&c->ctx->stats, STAT_REDIS_ERRORS, 1);
    free(argv);
    free(keys);
    free(nums);
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    report(arg);
}

void circuit_note(struct circuit *c, const char *endpoint_name, bool succeeded)
{
    struct endpoint_state *e = endpoint(c, endpoint_name);
    e->noted = true;
    if (succeeded) {
        e->succeeded = true;
        e->trailing = 0;
    } else {
        e->trailing++;
    }
    event_active(c->flush_ev, EV_TIMEOUT, 0);
}

/* ---- parking ------------------------------------------------------------------ */

struct park_call {
    circuit_park_fn fn;
    void *arg;
};

static void on_parked(struct redisReply *reply, void *arg)
{
    struct park_call *pc = arg;
    if (!reply || reply->type != REDIS_REPLY_ARRAY) {
        pc->fn(pc->arg, false, NULL, 0);
        free(pc);
        return;
    }
    char **send = xcalloc(reply->elements + 1, sizeof *send);
    size_t n = 0;
    for (size_t i = 0; i < reply->elements; i++)
        if (reply->element[i]->type == REDIS_REPLY_STRING)
            send[n++] = reply->element[i]->str;
    pc->fn(pc->arg, true, send, n);
    free(send);
    free(pc);
}

void circuit_park(struct circuit *c, const char *endpoint_name, char **ids, const int64_t *due_ms, size_t n,
                  circuit_park_fn fn, void *arg)
{
    char parked[200];
    parked_key(c, endpoint_name, parked, sizeof parked);
    size_t argc = 6 + 2 * n;
    const char **argv = xcalloc(argc, sizeof *argv);
    char(*scores)[24] = xcalloc(n + 1, sizeof *scores);
    argv[0] = c->open_key;
    argv[1] = c->probe_key;
    argv[2] = c->inflight_key;
    argv[3] = parked;
    argv[4] = c->ids_key;
    argv[5] = endpoint_name;
    for (size_t i = 0; i < n; i++) {
        snprintf(scores[i], sizeof scores[i], "%lld", (long long)due_ms[i]);
        argv[6 + 2 * i] = ids[i];
        argv[7 + 2 * i] = scores[i];
    }
    struct park_call *pc = xcalloc(1, sizeof *pc);
    pc->fn = fn;
    pc->arg = arg;
    if (redis_conn_eval(c->ctx->redis, &c->park, on_parked, pc, 5, (int)argc, argv, NULL) != 0) {
        stats_add(&c->ctx->stats, STAT_REDIS_ERRORS, 1);
        free(pc);
        fn(arg, false, NULL, 0);
    }
    free(argv);
    free(scores);
}

/* A circuit_park_due in chunks of PARK_DUE_CHUNK, one call after the
 * other: queued all at once, 100 calls on the one connection held every
 * other command of the worker (the claims of healthy endpoints) behind
 * them for as long as they took. */
#define PARK_DUE_CHUNK 1000

struct park_due_call {
    struct circuit *c;
    char endpoint[112];
    char **ids; /* owned */
    size_t n, off;
};

static void park_due_next(struct park_due_call *pc);

static void on_parked_due(struct redisReply *reply, void *arg)
{
    struct park_due_call *pc = arg;
    if (reply && pc->off < pc->n) {
        park_due_next(pc);
        return;
    }
    for (size_t i = 0; i < pc->n; i++)
        free(pc->ids[i]);
    free(pc->ids);
    free(pc);
}

static void park_due_next(struct park_due_call *pc)
{
    struct circuit *c = pc->c;
    char parked[200];
    parked_key(c, pc->endpoint, parked, sizeof parked);
    size_t k = pc->n - pc->off < PARK_DUE_CHUNK ? pc->n - pc->off : PARK_DUE_CHUNK;
    const char **argv = xcalloc(5 + k, sizeof *argv);
    argv[0] = c->open_key;
    argv[1] = c->due_key;
    argv[2] = parked;
    argv[3] = c->ids_key;
    argv[4] = pc->endpoint;
    for (size_t i = 0; i < k; i++)
        argv[5 + i] = pc->ids[pc->off + i];
    pc->off += k;
    if (redis_conn_eval(c->ctx->redis, &c->park_due, on_parked_due, pc, 4, (int)(5 + k), argv, NULL) != 0) {
        stats_add(&c->ctx->stats, STAT_REDIS_ERRORS, 1);
        pc->off = pc->n;
        on_parked_due(NULL, pc);
    }
    free(argv);
}

void circuit_park_due(struct circuit *c, const char *endpoint_name, char **ids, size_t n)
{
    if (n == 0)
        return;
    struct park_due_call *pc = xcalloc(1, sizeof *pc);
    pc->c = c;
    snprintf(pc->endpoint, sizeof pc->endpoint, "%s", endpoint_name);
    pc->ids = xcalloc(n, sizeof *pc->ids);
    for (size_t i = 0; i < n; i++)
        pc->ids[i] = xstrdup(ids[i]);
    pc->n = n;
    park_due_next(pc);
}

bool circuit_any_open(const struct circuit *c)
{
    for (const struct endpoint_state *e = c->eps; e; e = e->hh.next)
        if (e->open_until > 0)
            return true;
    return false;
}

struct filter_call {
    circuit_filter_fn fn;
    void *arg;
    size_t n;
};

static void on_filtered(struct redisReply *reply, void *arg)
{
    struct filter_call *fc = arg;
    const char **eps = NULL;
    if (reply && reply->type == REDIS_REPLY_ARRAY && reply->elements == fc->n) {
        eps = xcalloc(fc->n + 1, sizeof *eps);
        for (size_t i = 0; i < fc->n; i++)
            eps[i] = reply->element[i]->type == REDIS_REPLY_STRING ? reply->element[i]->str : "";
    }
    fc->fn(fc->arg, eps);
    free(eps);
    free(fc);
}

void circuit_filter(struct circuit *c, char **ids, size_t n, circuit_filter_fn fn, void *arg)
{
    const char **argv = xcalloc(n + 2, sizeof *argv);
    argv[0] = c->ids_key;
    argv[1] = c->open_key;
    for (size_t i = 0; i < n; i++)
        argv[2 + i] = ids[i];
    struct filter_call *fc = xcalloc(1, sizeof *fc);
    fc->fn = fn;
    fc->arg = arg;
    fc->n = n;
    if (redis_conn_eval(c->ctx->redis, &c->filter, on_filtered, fc, 2, (int)(n + 2), argv, NULL) != 0) {
        free(fc);
        fn(arg, NULL);
    }
    free(argv);
}

/* ---- refreshing the copy, probing ------------------------------------------- */

/* circuit_tick's answer: the probe (nothing to do here: it is due), or
 * {'disable', opened at}: this worker disables the endpoint. */
static void on_ticked(struct redisReply *reply, void *arg)
{
    struct endpoint_state *e = arg;
    struct circuit *c = e->owner;
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
        reply->element[0]->type != REDIS_REPLY_STRING || strcmp(reply->element[0]->str, "disable") != 0 ||
        reply->element[1]->type != REDIS_REPLY_INTEGER)
        return;
    log_warn("delivery.circuit_disable", "endpoint=%s open_for_ms=%lld", e->name,
             (long long)(clock_wall_ms() - reply->element[1]->integer));
    if (c->on_disable)
        c->on_disable(c->on_disable_arg, e->name, reply->element[1]->integer);
}

static void tick(struct circuit *c, struct endpoint_state *e, int64_t now)
{
    const struct backoff_policy *p = config_retry_for_endpoint(c->ctx->cfg, e->name);
    if (!p->circuit) { /* switched off by a reload: closed, and what it parked is due */
        e->noted = e->succeeded = true;
        e->trailing = 0;
        event_active(c->flush_ev, EV_TIMEOUT, 0);
        return;
    }
    if (e->open_until > now)
        return;
    char parked[200], now_s[24], probe_s[24], disable_s[24];
    parked_key(c, e->name, parked, sizeof parked);
    snprintf(now_s, sizeof now_s, "%lld", (long long)now);
    snprintf(probe_s, sizeof probe_s, "%lld", (long long)p->circuit_probe_ms);
    snprintf(disable_s, sizeof disable_s, "%lld", (long long)p->circuit_disable_after_ms);
    const char *argv[] = {c->open_key,  c->probe_key, parked, c->due_key, c->ids_key,
                          c->since_key, e->name,      now_s,  probe_s,    disable_s};
    if (redis_conn_eval(c->ctx->redis, &c->tick, on_ticked, e, 6, 10, argv, NULL) != 0)
        stats_add(&c->ctx->stats, STAT_REDIS_ERRORS, 1);
}

static void on_refreshed(struct redisReply *reply, void *arg)
{
    struct circuit *c = arg;
    c->refreshing = false;
    if (!reply || reply->type != REDIS_REPLY_ARRAY)
        return;
    for (struct endpoint_state *e = c->eps; e; e = e->hh.next)
        e->seen = false;
    for (size_t i = 0; i + 1 < reply->elements; i += 2) {
        if (reply->element[i]->type != REDIS_REPLY_STRING || reply->element[i + 1]->type != REDIS_REPLY_STRING)
            continue;
        struct endpoint_state *e = endpoint(c, reply->element[i]->str);
        e->seen = true;
        set_open(c, e, strtoll(reply->element[i + 1]->str, NULL, 10));
    }
    int64_t now = clock_wall_ms();
    for (struct endpoint_state *e = c->eps; e; e = e->hh.next) {
        if (!e->seen && e->open_until > 0)
            set_open(c, e, 0); /* closed by another worker (or Redis was flushed) */
        else if (e->open_until > 0)
            tick(c, e, now);
    }
}

/* Endpoints whose closed circuit still has parked deliveries: a worker
 * that closed it and died (or lost Redis) between chunks left them there;
 * any worker goes on. */
static void on_draining(struct redisReply *reply, void *arg)
{
    struct circuit *c = arg;
    c->draining_refreshing = false;
    if (!reply || reply->type != REDIS_REPLY_ARRAY)
        return;
    for (size_t i = 0; i + 1 < reply->elements; i += 2) /* HGETALL: endpoint, value */
        if (reply->element[i]->type == REDIS_REPLY_STRING)
            unpark(c, endpoint(c, reply->element[i]->str));
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct circuit *c = arg;
    if (c->refreshing || !redis_conn_ready(c->ctx->redis) || !clock_synced())
        return;
    if (redis_conn_cmdf(c->ctx->redis, on_refreshed, c, "HGETALL %s", c->open_key) == 0)
        c->refreshing = true;
    /* HGETALL, not HKEYS: the Redis ACL for hookd's user (docs/guides/deploy/redis.md) allows the former only */
    if (!c->draining_refreshing && redis_conn_cmdf(c->ctx->redis, on_draining, c, "HGETALL %s", c->draining_key) == 0)
        c->draining_refreshing = true;
}

static void script(struct circuit *c, struct redis_script *s, const char *name)
{
    char path[64];
    snprintf(path, sizeof path, "lua/%s.lua", name);
    for (size_t i = 0; i < embedded_nfiles; i++) {
        if (strcmp(embedded_files[i].path, path) == 0) {
            redis_script_init(s, name, embedded_files[i].data, embedded_files[i].len);
            redis_conn_add_script(c->ctx->redis, s);
            return;
        }
    }
    HOOKD_ASSERT(!"embedded circuit script missing");
}

struct circuit *circuit_new(struct hookd_ctx *ctx, const char *due_key, const char *inflight_key,
                            circuit_closed_fn on_closed, void *arg)
{
    struct circuit *c = xcalloc(1, sizeof *c);
    c->ctx = ctx;
    c->on_closed = on_closed;
    c->on_closed_arg = arg;
    ctx_key(ctx, "{delivery}:circuit:failures", c->failures_key, sizeof c->failures_key);
    ctx_key(ctx, "{delivery}:circuit:open", c->open_key, sizeof c->open_key);
    ctx_key(ctx, "{delivery}:circuit:probe", c->probe_key, sizeof c->probe_key);
    ctx_key(ctx, "{delivery}:parked_ids", c->ids_key, sizeof c->ids_key);
    ctx_key(ctx, "{delivery}:circuit:draining", c->draining_key, sizeof c->draining_key);
    ctx_key(ctx, "{delivery}:circuit:since", c->since_key, sizeof c->since_key);
    snprintf(c->due_key, sizeof c->due_key, "%s", due_key);
    snprintf(c->inflight_key, sizeof c->inflight_key, "%s", inflight_key);
    script(c, &c->report, "circuit_report");
    script(c, &c->park, "circuit_park");
    script(c, &c->tick, "circuit_tick");
    script(c, &c->park_due, "circuit_park_due");
    script(c, &c->filter, "circuit_filter");
    script(c, &c->unpark, "circuit_unpark");
    c->flush_ev = event_new(ctx->base, -1, 0, on_flush, c);
    c->timer = event_new(ctx->base, -1, EV_PERSIST, on_timer, c);
    loop_timer_arm(c->timer, CIRCUIT_REFRESH_MS);
    return c;
}

void circuit_free(struct circuit *c)
{
    if (!c)
        return;
    event_free(c->timer);
    event_free(c->flush_ev);
    struct endpoint_state *e, *tmp;
    HASH_ITER(hh, c->eps, e, tmp)
    {
        HASH_DEL(c->eps, e);
        free(e);
    }
    free(c);
}
