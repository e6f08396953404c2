/* Cluster-wide per-endpoint rate limits; see ratelimit.h. One EVALSHA per
 * acquisition; the reply (or the loss of the connection) calls back. */
#include "ratelimit.h"

#include <hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ctx.h"
#include "embedded.h"
#include "log.h"
#include "redis_conn.h"
#include "xmalloc.h"

struct ratelimit {
    struct hookd_ctx *ctx;
    struct redis_script script;
};

struct acquire {
    ratelimit_fn fn;
    void *arg;
};

static const struct embedded_file *script_file(void)
{
    for (size_t i = 0; i < embedded_nfiles; i++)
        if (strcmp(embedded_files[i].path, "lua/ratelimit.lua") == 0)
            return &embedded_files[i];
    HOOKD_ASSERT(!"lua/ratelimit.lua is embedded");
    return NULL;
}

struct ratelimit *ratelimit_new(struct hookd_ctx *ctx)
{
    struct ratelimit *rl = xcalloc(1, sizeof *rl);
    rl->ctx = ctx;
    const struct embedded_file *f = script_file();
    redis_script_init(&rl->script, "ratelimit", f->data, f->len);
    redis_conn_add_script(ctx->redis, &rl->script);
    return rl;
}

void ratelimit_free(struct ratelimit *rl)
{
    free(rl);
}

static void on_reply(struct redisReply *reply, void *arg)
{
    struct acquire *a = arg;
    int64_t wait = -1;
    bool reserved = false;
    if (reply && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
        reply->element[0]->type == REDIS_REPLY_INTEGER && reply->element[1]->type == REDIS_REPLY_INTEGER) {
        reserved = reply->element[0]->integer == 1;
        wait = reply->element[1]->integer;
    }
    a->fn(a->arg, wait, reserved);
    free(a);
}

void ratelimit_acquire(struct ratelimit *rl, const char *endpoint_id, int rate, int64_t max_wait_ms, ratelimit_fn fn,
                       void *arg)
{
    char suffix[128], key[256], r[16], now[24], mw[24];
    snprintf(suffix, sizeof suffix, "ratelimit:{%s}", endpoint_id);
    ctx_key(rl->ctx, suffix, key, sizeof key);
    snprintf(r, sizeof r, "%d", rate > 0 ? rate : 1);
    snprintf(now, sizeof now, "%lld", (long long)clock_wall_ms());
    snprintf(mw, sizeof mw, "%lld", (long long)max_wait_ms);
    const char *argv[] = {key, r, now, mw};
    const size_t lens[] = {strlen(key), strlen(r), strlen(now), strlen(mw)};
    struct acquire *a = xcalloc(1, sizeof *a);
    a->fn = fn;
    a->arg = arg;
    if (redis_conn_eval(rl->ctx->redis, &rl->script, on_reply, a, 1, 4, argv, lens) != 0) {
        free(a);
        fn(arg, -1, false);
    }
}
