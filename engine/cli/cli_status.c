/* `hookd status [--json] [--watch]`: the cluster as Redis sees it — live
 * and stale workers from their heartbeats, due and inflight depth per
 * queue, the oldest overdue item, the cluster counters with rates (two
 * samples half a second apart), and the DLQ size the workers publish — and
 * from Postgres each table's storage (size, estimated rows, oldest row,
 * next expiry: engine/core/retention.c).
 *
 * The ages it shows (since a heartbeat, since a worker started, how overdue
 * the oldest item is) compare now with times the workers wrote on hookd's
 * one time base, Postgres's clock; so now is read on that clock too: one
 * connection measures this host's offset (clock_sync_once), again on every
 * --watch refresh, and reads the storage figures. When Postgres cannot be
 * reached the ages are on this host's clock, and the output says so.
 *
 * `--tenant T` shows one tenant's share instead, from Postgres alone (Redis's
 * queues and counters are the whole cluster's): its endpoints with their
 * open, due and dead deliveries and open dead letters, its events not yet
 * fanned out, and its DLQ count; nothing of any other tenant, nor the
 * cluster's workers, counters or storage. */
#include "cli_status.h"

#include <hiredis.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "clock.h"
#include "clock_sync.h"
#include "cli_util.h"
#include "config.h"
#include "cli_retention.h"
#include "cli_tenant.h"
#include "ctx.h"
#include "db.h"
#include "query.h"
#include "retention.h"
#include "redis_conn.h"

#define STATUS_PG_TIMEOUT_S 2

/* Where status reads "now": Postgres's clock while it answers. */
struct status_clock {
    PGconn *conn;
    bool synced;   /* an offset was measured (the last one stays applied) */
    char err[256]; /* why the last measurement failed; empty when it worked */
};

static void clock_refresh(struct status_clock *sc, const struct hookd_config *cfg)
{
    char err[256] = "";
    if (sc->conn && PQstatus(sc->conn) != CONNECTION_OK) {
        PQfinish(sc->conn);
        sc->conn = NULL;
    }
    if (!sc->conn)
        sc->conn = db_connect_timeout(cfg->database.text, STATUS_PG_TIMEOUT_S, err, sizeof err);
    if (sc->conn && clock_sync_once(sc->conn, err, sizeof err) == 0) {
        sc->synced = true;
        sc->err[0] = '\0';
        return;
    }
    if (sc->conn) {
        PQfinish(sc->conn);
        sc->conn = NULL;
    }
    snprintf(sc->err, sizeof sc->err, "%s", err[0] ? err : "no answer");
}

/* {"base": "postgres" | "local", "offset_ms": N, "error": null | "..."}:
 * "postgres" with an error is the offset measured last, applied still. */
static json_t *clock_json(const struct status_clock *sc)
{
    return json_pack("{s:s, s:I, s:o}", "base", sc->synced ? "postgres" : "local", "offset_ms",
                     (json_int_t)clock_offset_ms(), "error", sc->err[0] ? json_string(sc->err) : json_null());
}

static json_t *hash_json(redisReply *r)
{
    json_t *o = json_object();
    if (r && r->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i + 1 < r->elements; i += 2)
            json_object_set_new(o, r->element[i]->str, json_string(r->element[i + 1]->str));
    return o;
}

static json_t *workers(struct redis_sync *c, const struct hookd_config *cfg, int64_t now)
{
    json_t *arr = json_array();
    redisReply *ids = redis_sync_command(c, "ZRANGE %s:workers 0 -1 WITHSCORES", cfg->key_prefix);
    int64_t stale_after = cfg->heartbeat_interval * 3 > 3000 ? cfg->heartbeat_interval * 3 : 3000;
    for (size_t i = 0; ids && ids->type == REDIS_REPLY_ARRAY && i + 1 < ids->elements; i += 2) {
        const char *id = ids->element[i]->str;
        int64_t last = strtoll(ids->element[i + 1]->str, NULL, 10);
        redisReply *h = redis_sync_command(c, "HGETALL %s:worker:%s", cfg->key_prefix, id);
        json_t *w = hash_json(h);
        freeReplyObject(h);
        json_object_set_new(w, "id", json_string(id));
        json_object_set_new(w, "last_beat_ms_ago", json_integer(now - last));
        bool live = json_object_size(w) > 2 && now - last <= stale_after;
        json_object_set_new(w, "state", json_string(live ? "live" : "stale"));
        json_t *started = json_object_get(w, "started_at");
        if (started)
            json_object_set_new(w, "uptime_s",
                                json_integer((now - strtoll(json_string_value(started), NULL, 10)) / 1000));
        json_array_append_new(arr, w);
    }
    freeReplyObject(ids);
    return arr;
}

static json_t *queue(struct redis_sync *c, const struct hookd_config *cfg, const char *name, int64_t now)
{
    redisReply *due = redis_sync_command(c, "ZCARD %s:{%s}:due", cfg->key_prefix, name);
    redisReply *inflight = redis_sync_command(c, "ZCARD %s:{%s}:inflight", cfg->key_prefix, name);
    redisReply *first = redis_sync_command(c, "ZRANGE %s:{%s}:due 0 0 WITHSCORES", cfg->key_prefix, name);
    int64_t overdue = 0;
    if (first && first->type == REDIS_REPLY_ARRAY && first->elements == 2) {
        int64_t score = strtoll(first->element[1]->str, NULL, 10);
        overdue = now > score ? now - score : 0;
    }
    json_t *q = json_pack("{s:I, s:I, s:I}", "due", (json_int_t)(due ? due->integer : 0), "inflight",
                          (json_int_t)(inflight ? inflight->integer : 0), "oldest_overdue_ms", (json_int_t)overdue);
    freeReplyObject(due);
    freeReplyObject(inflight);
    freeReplyObject(first);
    return q;
}

static json_t *stats(struct redis_sync *c, const struct hookd_config *cfg)
{
    redisReply *r = redis_sync_command(c, "HGETALL %s:stats", cfg->key_prefix);
    json_t *o = json_object();
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2)
        json_object_set_new(o, r->element[i]->str, json_integer(strtoll(r->element[i + 1]->str, NULL, 10)));
    freeReplyObject(r);
    return o;
}

static json_t *snapshot(struct redis_sync *c, const struct hookd_config *cfg, const struct status_clock *sc)
{
    json_t *before = stats(c, cfg);
    usleep(500 * 1000);
    int64_t now = clock_wall_ms();
    json_t *after = stats(c, cfg);
    json_t *rates = json_object();
    const char *key;
    json_t *v;
    json_object_foreach(after, key, v)
    {
        json_int_t prev = json_integer_value(json_object_get(before, key));
        json_object_set_new(rates, key, json_real((double)(json_integer_value(v) - prev) * 2.0));
    }
    json_decref(before);
    redisReply *dlq = redis_sync_command(c, "GET %s:dlq_size", cfg->key_prefix);
    json_t *dlq_size = dlq && dlq->type == REDIS_REPLY_STRING ? json_integer(strtoll(dlq->str, NULL, 10))
                                                              : json_null();
    freeReplyObject(dlq);
    return json_pack("{s:o, s:{s:o, s:o}, s:o, s:o, s:o, s:I, s:o}", "workers", workers(c, cfg, now), "queues",
                     "inbox", queue(c, cfg, "inbox", now), "delivery", queue(c, cfg, "delivery", now), "counters",
                     after, "rates_per_s", rates, "dlq_size", dlq_size, "at_ms", (json_int_t)now, "clock",
                     clock_json(sc));
}

static const char *text_member(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "-";
}

static void print_text(json_t *s)
{
    size_t i;
    json_t *w;
    json_t *clk = json_object_get(s, "clock");
    const char *clk_err = json_string_value(json_object_get(clk, "error"));
    long long offset = (long long)json_integer_value(json_object_get(clk, "offset_ms"));
    if (strcmp(text_member(clk, "base"), "postgres") != 0)
        printf("CLOCK: Postgres unreachable (%s): ages are on this host's clock, not the workers' time base\n\n",
               clk_err ? clk_err : "-");
    else if (clk_err)
        printf("CLOCK: ages on Postgres's clock as last measured (this host %+lldms; now: %s)\n\n", -offset, clk_err);
    else
        printf("CLOCK: ages on Postgres's clock (this host's is %+lldms off)\n\n", -offset);
    json_t *ws = json_object_get(s, "workers");
    printf("WORKERS (%zu)\n  %-34s %-6s %-16s %-8s %-20s %8s %10s %4s %9s\n", json_array_size(ws), "ID", "STATE",
           "HOST", "PID", "ROLES", "UPTIME", "LAST BEAT", "GEN", "CLOCK");
    json_array_foreach(ws, i, w)
    {
        /* CLOCK: Postgres's clock minus the worker's (ms), the offset its due times take */
        printf("  %-34s %-6s %-16s %-8s %-20s %7llds %8lldms %4s %7sms\n", text_member(w, "id"),
               text_member(w, "state"), text_member(w, "host"), text_member(w, "pid"), text_member(w, "roles"),
               (long long)json_integer_value(json_object_get(w, "uptime_s")),
               (long long)json_integer_value(json_object_get(w, "last_beat_ms_ago")),
               text_member(w, "config_generation"), text_member(w, "clock_offset_ms"));
    }
    printf("\nQUEUES\n  %-10s %10s %10s %16s\n", "QUEUE", "DUE", "INFLIGHT", "OLDEST OVERDUE");
    const char *names[] = {"inbox", "delivery"};
    for (int k = 0; k < 2; k++) {
        json_t *q = json_object_get(json_object_get(s, "queues"), names[k]);
        printf("  %-10s %10lld %10lld %14lldms\n", names[k], (long long)json_integer_value(json_object_get(q, "due")),
               (long long)json_integer_value(json_object_get(q, "inflight")),
               (long long)json_integer_value(json_object_get(q, "oldest_overdue_ms")));
    }
    printf("\nCOUNTERS %28s\n", "RATE/s");
    const char *key;
    json_t *v;
    json_t *rates = json_object_get(s, "rates_per_s");
    json_object_foreach(json_object_get(s, "counters"), key, v)
    {
        printf("  %-24s %12lld %10.1f\n", key, (long long)json_integer_value(v),
               json_real_value(json_object_get(rates, key)));
    }
    json_t *dlq = json_object_get(s, "dlq_size");
    if (json_is_integer(dlq))
        printf("\nDLQ: %lld open dead letter%s\n", (long long)json_integer_value(dlq),
               json_integer_value(dlq) == 1 ? "" : "s");
    else
        printf("\nDLQ: unknown (no worker has reported it yet)\n");
}

/* Storage into the snapshot: an array, or null (and why) when Postgres did not answer. */
static void add_storage(json_t *s, PGconn *pg, const struct hookd_config *cfg)
{
    char err[512] = "Postgres unavailable";
    struct retention_storage st;
    if (pg && retention_storage(pg, &cfg->retention, &st, err, sizeof err) == 0) {
        json_object_set_new(s, "storage", cli_retention_storage_json(&st));
        return;
    }
    json_object_set_new(s, "storage", json_null());
    json_object_set_new(s, "storage_error", json_string(err));
}

static void print_storage_text(json_t *s)
{
    json_t *arr = json_object_get(s, "storage");
    if (!json_is_array(arr)) {
        printf("\nSTORAGE: unknown (%s)\n", json_string_value(json_object_get(s, "storage_error")));
        return;
    }
    struct retention_storage st = {0};
    size_t i;
    json_t *t;
    json_array_foreach(arr, i, t)
    {
        if (st.n == RETENTION_TABLES)
            break;
        struct retention_table *r = &st.t[st.n++];
        snprintf(r->name, sizeof r->name, "%s", json_string_value(json_object_get(t, "table")));
        r->bytes = json_integer_value(json_object_get(t, "bytes"));
        r->rows = json_integer_value(json_object_get(t, "rows"));
        r->oldest_ms = json_integer_value(json_object_get(t, "oldest_ms"));
        r->next_expiry_ms = json_integer_value(json_object_get(t, "next_expiry_ms"));
    }
    putchar('\n');
    cli_retention_storage_text(&st);
}

static void print_cluster_text(json_t *s)
{
    print_text(s);
    print_storage_text(s);
}

/* Prints a snapshot (and frees it): JSON, or text (a --watch screen is
 * cleared first). */
static void print_snapshot(json_t *s, bool json, bool watch, void (*text)(json_t *))
{
    if (watch && !json)
        printf("\033[H\033[2J");
    if (json) {
        json_dumpf(s, stdout, JSON_INDENT(2));
        putchar('\n');
    } else {
        text(s);
    }
    fflush(stdout);
    json_decref(s);
}

/* ---- one tenant (--tenant) ---------------------------------------------------- */

static json_int_t int_at(const PGresult *r, int row, int col)
{
    return (json_int_t)strtoll(PQgetvalue(r, row, col), NULL, 10);
}

/* The tenant's snapshot from Postgres, or NULL after saying why. */
static json_t *tenant_snapshot(PGconn *conn, const char *id)
{
    char err[512];
    const char *p[] = {id};
    PGresult *t = query_exec(conn, Q_STATUS_TENANT, p, err, sizeof err);
    PGresult *e = t ? query_exec(conn, Q_STATUS_TENANT_ENDPOINTS, p, err, sizeof err) : NULL;
    if (!t || !e || PQntuples(t) != 1) {
        cli_fail("status", "%s", t && e ? "the tenant is gone" : err);
        PQclear(t);
        PQclear(e);
        return NULL;
    }
    json_t *eps = json_array();
    json_int_t due = 0, open = 0, overdue = 0, dlq = 0;
    for (int i = 0; i < PQntuples(e); i++) {
#define C(col) STATUS_TENANT_ENDPOINTS_##col
        json_array_append_new(eps,
                              json_pack("{s:s, s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I}", "name",
                                        PQgetvalue(e, i, C(NAME)), "uid", PQgetvalue(e, i, C(UID)), "url",
                                        PQgetvalue(e, i, C(URL)), "enabled", PQgetvalue(e, i, C(ENABLED))[0] == 'y',
                                        "pending", int_at(e, i, C(PENDING)), "retrying", int_at(e, i, C(RETRYING)),
                                        "due", int_at(e, i, C(DUE)), "oldest_overdue_ms",
                                        int_at(e, i, C(OLDEST_OVERDUE_MS)), "dead", int_at(e, i, C(DEAD)), "dlq",
                                        int_at(e, i, C(DLQ))));
        open += int_at(e, i, C(PENDING)) + int_at(e, i, C(RETRYING));
        due += int_at(e, i, C(DUE));
        dlq += int_at(e, i, C(DLQ));
        if (int_at(e, i, C(OLDEST_OVERDUE_MS)) > overdue)
            overdue = int_at(e, i, C(OLDEST_OVERDUE_MS));
#undef C
    }
    json_t *s = json_pack("{s:{s:s, s:s, s:s}, s:o, s:{s:{s:I, s:I}, s:{s:I, s:I, s:I}}, s:I, s:{s:s}}", "tenant",
                          "id", PQgetvalue(t, 0, STATUS_TENANT_ID), "uid", PQgetvalue(t, 0, STATUS_TENANT_UID), "name",
                          PQgetvalue(t, 0, STATUS_TENANT_NAME), "endpoints", eps, "queues", "relay", "unfanned",
                          int_at(t, 0, STATUS_TENANT_UNFANNED), "oldest_unfanned_ms",
                          int_at(t, 0, STATUS_TENANT_OLDEST_UNFANNED_MS), "delivery", "open", open, "due", due,
                          "oldest_overdue_ms", overdue, "dlq_size", dlq, "clock", "base", "postgres");
    PQclear(t);
    PQclear(e);
    return s;
}

static void print_tenant_text(json_t *s)
{
    json_t *t = json_object_get(s, "tenant"), *eps = json_object_get(s, "endpoints"), *ep;
    printf("TENANT %s (%s) %s\nCLOCK: ages on Postgres's clock\n\n", text_member(t, "uid"), text_member(t, "id"),
           text_member(t, "name"));
    printf("ENDPOINTS (%zu)\n  %-24s %-7s %8s %8s %8s %14s %6s %6s  %s\n", json_array_size(eps), "NAME", "ENABLED",
           "PENDING", "RETRYING", "DUE", "OLDEST OVERDUE", "DEAD", "DLQ", "URL");
    size_t i;
    json_array_foreach(eps, i, ep)
    {
#define N(k) (long long)json_integer_value(json_object_get(ep, k))
        printf("  %-24s %-7s %8lld %8lld %8lld %12lldms %6lld %6lld  %s\n", text_member(ep, "name"),
               json_is_true(json_object_get(ep, "enabled")) ? "yes" : "no", N("pending"), N("retrying"), N("due"),
               N("oldest_overdue_ms"), N("dead"), N("dlq"), text_member(ep, "url"));
#undef N
    }
    json_t *q = json_object_get(s, "queues"), *relay = json_object_get(q, "relay"),
           *del = json_object_get(q, "delivery");
    printf("\nQUEUES\n  relay     %lld event(s) not fanned out, the oldest %lldms old\n"
           "  delivery  %lld open deliveries, %lld due, the oldest %lldms overdue\n",
           (long long)json_integer_value(json_object_get(relay, "unfanned")),
           (long long)json_integer_value(json_object_get(relay, "oldest_unfanned_ms")),
           (long long)json_integer_value(json_object_get(del, "open")),
           (long long)json_integer_value(json_object_get(del, "due")),
           (long long)json_integer_value(json_object_get(del, "oldest_overdue_ms")));
    long long dlq = (long long)json_integer_value(json_object_get(s, "dlq_size"));
    printf("\nDLQ: %lld open dead letter%s\n", dlq, dlq == 1 ? "" : "s");
}

static int run_tenant_status(const struct cli_args *a, const struct hookd_config *cfg, const char *tenant)
{
    char id[128];
    bool watch = cli_args_flag(a, "watch");
    PGconn *conn = cli_connect_db(cfg, "status", STATUS_PG_TIMEOUT_S);
    if (!conn)
        return 1;
    int rc = cli_tenant_resolve(conn, tenant, id, sizeof id, "status") == 0 ? 0 : 1;
    while (rc == 0) {
        json_t *s = tenant_snapshot(conn, id);
        if (!s) {
            rc = 1;
            break;
        }
        print_snapshot(s, a->json, watch, print_tenant_text);
        if (!watch)
            break;
        sleep(2);
    }
    PQfinish(conn);
    return rc;
}

static int run_status(const struct cli_args *a, const struct hookd_config *cfg)
{
    bool json = a->json, watch = cli_args_flag(a, "watch");
    char err[512];
    const char *tenant = cli_args_value(a, "tenant");
    if (tenant)
        return run_tenant_status(a, cfg, tenant);
    struct redis_options ropts;
    ctx_redis_options(cfg, &ropts);
    struct redis_sync *c = redis_sync_connect(cfg->redis.text, &ropts, 2000, err, sizeof err);
    if (!c) {
        cli_fail("status", "%s", err);
        return 1;
    }
    struct status_clock sc = {0};
    do {
        clock_refresh(&sc, cfg);
        json_t *s = snapshot(c, cfg, &sc);
        add_storage(s, sc.conn, cfg);
        if (redis_sync_error(c)) {
            cli_fail("status", "Redis: %s", redis_sync_error(c));
            json_decref(s);
            redis_sync_free(c);
            PQfinish(sc.conn);
            return 1;
        }
        print_snapshot(s, json, watch, print_cluster_text);
        if (watch)
            sleep(2);
    } while (watch);
    redis_sync_free(c);
    PQfinish(sc.conn);
    return 0;
}

static const struct cli_args_opt status_opts[] = {
    {"watch", NULL, "refresh every 2 seconds until interrupted", NULL},
    {"tenant", "T", "only this tenant (uid or id): its endpoints, deliveries and DLQ, from Postgres", NULL},
    {0},
};
const struct cli_args_cmd cli_status_cmd = {
    .name = "status",
    .synopsis = "[--json] [--watch] [--tenant T]",
    .summary = "the cluster from Redis: workers, queues, counters, DLQ; storage from Postgres",
    .help = "Reads the Redis keys: live and stale workers, queue depths, the oldest overdue item, counters\n"
            "and rates (two samples half a second apart), and the DLQ size; and from Postgres each table's\n"
            "storage: size, estimated rows, oldest row and next expiry. Ages are on Postgres's clock, the\n"
            "workers' time base (one connection measures this host's offset); if Postgres does not answer\n"
            "within 2 s they are on this host's clock, and the output says so.\n"
            "With --tenant T: only that tenant, from Postgres — its endpoints with their open, due and dead\n"
            "deliveries and open dead letters, its events not fanned out yet, its DLQ count; nothing of any\n"
            "other tenant, nor the cluster's workers, counters or storage.",
    .opts = status_opts,
    .run = run_status,
    .config = true,
};
