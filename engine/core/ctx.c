/* The roles' context; see ctx.h. */
#include "ctx.h"

#include <stdio.h>
#include <string.h>

#include "db.h"
#include "embedded.h"
#include "xmalloc.h"

const char *ctx_key(const struct hookd_ctx *ctx, const char *suffix, char *buf, size_t buflen)
{
    snprintf(buf, buflen, "%s:%s", ctx->cfg->key_prefix, suffix);
    return buf;
}

static const struct embedded_file *embedded(const char *path)
{
    for (size_t i = 0; i < embedded_nfiles; i++)
        if (strcmp(embedded_files[i].path, path) == 0)
            return &embedded_files[i];
    HOOKD_ASSERT(!"embedded file missing");
}

void ctx_load_scripts(struct hookd_ctx *ctx)
{
    const struct {
        const char *name;
        struct redis_script *script;
    } defs[] = {
        {"claim", &ctx->scripts.claim}, {"ack", &ctx->scripts.ack},   {"reschedule", &ctx->scripts.reschedule},
        {"reap", &ctx->scripts.reap},   {"seed", &ctx->scripts.seed}, {"adopt", &ctx->scripts.adopt},
    };
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        char path[64];
        snprintf(path, sizeof path, "lua/%s.lua", defs[i].name);
        const struct embedded_file *f = embedded(path);
        redis_script_init(defs[i].script, defs[i].name, f->data, f->len);
        redis_conn_add_script(ctx->redis, defs[i].script);
    }
}

bool ctx_ready(const struct hookd_ctx *ctx)
{
    /* The main pool is probed every second; the ingest pool only learns of
     * an outage or a recovery when a request arrives, so it does not count:
     * a stale "down" there must not keep load balancers away for good. */
    return !ctx->draining && db_pool_healthy(ctx->db) && redis_conn_ready(ctx->redis) && ctx->migrations_current;
}

void ctx_redis_options(const struct hookd_config *cfg, struct redis_options *out)
{
    out->ca_file = cfg->redis_ca_file;
    out->cert_file = cfg->redis_cert_file;
    out->key_file = cfg->redis_key_file;
    out->sentinel_password = cfg->redis_sentinel_password.text;
}
