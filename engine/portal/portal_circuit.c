/* The circuits' state for the portal's pages; see portal_circuit.h. One
 * read is two or three commands on the shared connection (all keys under
 * the {delivery} hash tag, so one slot in a cluster); their replies come
 * back in order, and the last one hands the states to the caller. */
#include "portal_circuit.h"

#include <hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "config.h"
#include "ctx.h"
#include "redis_conn.h"
#include "xmalloc.h"

struct circuit_read {
    portal_circuit_fn *fn;
    void *arg;
    int waiting; /* replies still to come */
    bool failed; /* a command was not sent, or its reply was lost */
    json_t *states;
    char name[128]; /* the one endpoint, or "" */
};

static json_t *entry(struct circuit_read *rd, const char *name)
{
    json_t *e = json_object_get(rd->states, name);
    if (!e) {
        e = json_object();
        json_object_set_new(rd->states, name, e);
    }
    return e;
}

static void finish(struct circuit_read *rd)
{
    if (--rd->waiting > 0)
        return;
    if (rd->failed) {
        json_decref(rd->states);
        rd->states = NULL;
    }
    rd->fn(rd->arg, rd->states);
    free(rd);
}

/* field of each endpoint: a reply to HGET (the one endpoint's value) or to
 * HGETALL (name, value pairs); integers unless field is "probe". */
static void take(struct circuit_read *rd, const struct redisReply *reply, const char *field)
{
    if (!reply || reply->type == REDIS_REPLY_ERROR) {
        rd->failed = true;
        return;
    }
    if (reply->type == REDIS_REPLY_STRING && rd->name[0]) {
        json_t *v = strcmp(field, "probe") == 0 ? json_true() : json_integer(strtoll(reply->str, NULL, 10));
        json_object_set_new(entry(rd, rd->name), field, v);
        return;
    }
    if (reply->type != REDIS_REPLY_ARRAY)
        return; /* nil: nothing held */
    for (size_t i = 0; i + 1 < reply->elements; i += 2) {
        const struct redisReply *k = reply->element[i], *v = reply->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
            continue;
        json_object_set_new(entry(rd, k->str), field,
                            strcmp(field, "probe") == 0 ? json_true() : json_integer(strtoll(v->str, NULL, 10)));
    }
}

static void on_open(struct redisReply *reply, void *arg)
{
    take(arg, reply, "open_until");
    finish(arg);
}

static void on_failures(struct redisReply *reply, void *arg)
{
    take(arg, reply, "failures");
    finish(arg);
}

static void on_probe(struct redisReply *reply, void *arg)
{
    take(arg, reply, "probe");
    finish(arg);
}

void portal_circuit_read(struct hookd_ctx *ctx, const char *endpoint, portal_circuit_fn *fn, void *arg)
{
    if (!ctx->redis || !redis_conn_ready(ctx->redis) || (endpoint && strlen(endpoint) >= 128)) {
        fn(arg, NULL);
        return;
    }
    static const struct {
        const char *suffix;
        redis_reply_fn cb;
        bool one_only; /* only for one endpoint's read */
    } cmds[] = {
        {"{delivery}:circuit:open", on_open, false},
        {"{delivery}:circuit:probe", on_probe, false},
        {"{delivery}:circuit:failures", on_failures, true},
    };
    struct circuit_read *rd = xcalloc(1, sizeof *rd);
    rd->fn = fn;
    rd->arg = arg;
    rd->states = json_object();
    snprintf(rd->name, sizeof rd->name, "%s", endpoint ? endpoint : "");
    size_t n = endpoint ? 3 : 2;
    rd->waiting = (int)n + 1; /* + 1: held until every command is sent */
    for (size_t i = 0; i < n; i++) {
        char key[200];
        ctx_key(ctx, cmds[i].suffix, key, sizeof key);
        int rc = endpoint ? redis_conn_cmdf(ctx->redis, cmds[i].cb, rd, "HGET %s %s", key, endpoint)
                          : redis_conn_cmdf(ctx->redis, cmds[i].cb, rd, "HGETALL %s", key);
        if (rc != 0) {
            rd->failed = true;
            rd->waiting--;
        }
    }
    finish(rd);
}

struct portal_circuit_view portal_circuit_view(const json_t *states, const struct hookd_config *cfg, const char *name,
                                               int64_t now_ms)
{
    const struct backoff_policy *p = config_retry_for_endpoint(cfg, name);
    struct portal_circuit_view v = {PORTAL_CIRCUIT_UNKNOWN, 0, 0, p->circuit_failures};
    if (!p->circuit) {
        v.state = PORTAL_CIRCUIT_OFF;
        return v;
    }
    if (!states)
        return v;
    const json_t *e = json_object_get(states, name);
    v.failures = (long long)json_integer_value(json_object_get(e, "failures"));
    v.next_probe_ms = (int64_t)json_integer_value(json_object_get(e, "open_until"));
    if (v.next_probe_ms <= 0)
        v.state = PORTAL_CIRCUIT_CLOSED;
    else if (json_is_true(json_object_get(e, "probe")) || v.next_probe_ms <= now_ms)
        v.state = PORTAL_CIRCUIT_HALF_OPEN;
    else
        v.state = PORTAL_CIRCUIT_OPEN;
    if (v.state == PORTAL_CIRCUIT_CLOSED)
        v.next_probe_ms = 0;
    return v;
}

const char *portal_circuit_state_name(enum portal_circuit_state s)
{
    static const char *const names[] = {"unknown", "off", "closed", "open", "half-open"};
    return names[s];
}
