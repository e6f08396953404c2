/* `hookd dlq list|show|replay|purge`: recovering from the dead-letter queue
 * without editing the database by hand. Replay sends the source row back
 * through the normal path: PENDING with a fresh attempt budget, scheduled in
 * Redis at once (or by the reconciler if Redis is unreachable). */
#include "cli_dlq.h"

#include <hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "backoff.h"
#include "clock.h"
#include "clock_sync.h"
#include "cli_util.h"
#include "config.h"
#include "db.h"
#include "dlq.h"
#include "embedded.h"
#include "ctx.h"
#include "query.h"
#include "redis_conn.h"

struct opts {
    struct dlq_filter f;
    bool json, all, dry_run;
    int64_t older_than;
};

/* The options of the chosen subcommand (each declares its own subset),
 * checked before any connection. Returns 0, or 2 after saying what is wrong. */
static int read_opts(const struct cli_args *a, struct opts *o)
{
    const char *source = cli_args_maybe(a, "source"), *since = cli_args_maybe(a, "since");
    const char *limit = cli_args_maybe(a, "limit"), *older_than = cli_args_maybe(a, "older-than");
    char err[256];
    memset(o, 0, sizeof *o);
    o->json = a->json;
    o->all = cli_args_maybe(a, "all") != NULL;
    o->dry_run = cli_args_maybe(a, "dry-run") != NULL;
    o->f.partner = cli_args_maybe(a, "partner");
    o->f.event_type = cli_args_maybe(a, "event-type");
    o->f.tenant = cli_args_maybe(a, "tenant");
    o->f.source = source;
    if (source && strcmp(source, "inbox") != 0 && strcmp(source, "delivery") != 0)
        return cli_fail("dlq", "--source must be inbox or delivery (got '%s')", source), 2;
    if (since && backoff_parse_duration(since, &o->f.since_ms, err, sizeof err) != 0)
        return cli_fail("dlq", "--since: %s", err), 2;
    if (limit && ((o->f.limit = atoi(limit)) < 1 || o->f.limit > 100000))
        return cli_fail("dlq", "--limit must be from 1 to 100000"), 2;
    if (older_than && backoff_parse_duration(older_than, &o->older_than, err, sizeof err) != 0)
        return cli_fail("dlq", "--older-than: %s", err), 2;
    if (older_than && o->older_than <= 0)
        return cli_fail("dlq", "--older-than must be positive"), 2;
    return 0;
}

static void print_table(json_t *rows)
{
    printf("%-36s %-8s %-16s %-22s %-20s %-3s %-26s %s\n", "ID", "SOURCE", "PARTNER", "EVENT TYPE", "ENTITY", "ATT",
           "REASON", "DEAD SINCE");
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        printf("%-36s %-8s %-16.16s %-22.22s %-20.20s %-3lld %-26.26s %s\n",
               json_string_value(json_object_get(r, "id")), json_string_value(json_object_get(r, "source")),
               json_string_value(json_object_get(r, "partner")), json_string_value(json_object_get(r, "event_type")),
               json_string_value(json_object_get(r, "entity")),
               (long long)json_integer_value(json_object_get(r, "attempts")),
               json_string_value(json_object_get(r, "reason")), json_string_value(json_object_get(r, "dead_at")));
    }
    printf("(%zu dead letter%s)\n", json_array_size(rows), json_array_size(rows) == 1 ? "" : "s");
}

static int cmd_list(PGconn *conn, const struct hookd_config *cfg, const struct opts *o, const struct cli_args *a)
{
    (void)cfg, (void)a;
    char err[512];
    json_t *rows = dlq_list(conn, &o->f, err, sizeof err);
    if (!rows)
        return cli_fail("dlq", "%s", err);
    if (o->json)
        json_dumpf(rows, stdout, JSON_INDENT(2)), putchar('\n');
    else
        print_table(rows);
    json_decref(rows);
    return 0;
}

/* dlq_show hands payload and headers over as JSON text; the CLI prints
 * them as JSON values. A text jansson cannot parse (nested deeper than its
 * limit) stays a string, shown as stored. */
static void parse_text_fields(json_t *e)
{
    const char *keys[] = {"payload", "headers"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(e, keys[i]);
        json_t *parsed = json_is_string(v) ? json_loads(json_string_value(v), JSON_DECODE_ANY, NULL) : NULL;
        if (parsed)
            json_object_set_new(e, keys[i], parsed);
    }
}

static int cmd_show(PGconn *conn, const struct hookd_config *cfg, const struct opts *o, const struct cli_args *args)
{
    const char *id = args->args[0];
    char err[512];
    (void)cfg;
    json_t *e = dlq_show(conn, id, err, sizeof err);
    if (!e)
        return cli_fail("dlq", "%s", err);
    parse_text_fields(e);
    if (o->json) {
        json_dumpf(e, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(e);
        return 0;
    }
    const char *keys[] = {"id",     "source",     "source_id", "partner",      "event_type", "entity",
                          "reason", "last_error", "dead_at",   "endpoint_url", "event_id"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(e, keys[i]);
        if (json_is_string(v))
            printf("%-12s %s\n", keys[i], json_string_value(v));
    }
    printf("%-12s %lld\n%-12s %lld\n", "attempts", (long long)json_integer_value(json_object_get(e, "attempts")),
           "replays", (long long)json_integer_value(json_object_get(e, "replay_count")));
    printf("payload:\n");
    json_dumpf(json_object_get(e, "payload"), stdout, JSON_INDENT(2) | JSON_ENCODE_ANY);
    if (json_is_object(json_object_get(e, "headers"))) {
        printf("\nheaders:\n");
        json_dumpf(json_object_get(e, "headers"), stdout, JSON_INDENT(2));
    }
    printf("\nattempt history:\n");
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(e, "attempts_history"), i, a)
    {
        json_t *code = json_object_get(a, "status_code");
        printf("  %zu. %s %-9s %8.1f ms %s%s %s\n", i + 1, json_string_value(json_object_get(a, "at")),
               json_string_value(json_object_get(a, "outcome")), json_real_value(json_object_get(a, "duration_ms")),
               json_is_integer(code) ? "HTTP " : "", json_is_integer(code) ? "" : "",
               json_string_value(json_object_get(a, "error")));
        if (json_is_integer(code))
            printf("     status %lld, response: %s\n", (long long)json_integer_value(code),
                   json_string_value(json_object_get(a, "response")));
    }
    json_decref(e);
    return 0;
}

static const struct embedded_file *seed_script(void)
{
    for (size_t i = 0; i < embedded_nfiles; i++)
        if (strcmp(embedded_files[i].path, "lua/seed.lua") == 0)
            return &embedded_files[i];
    return NULL;
}

/* Schedules one row of a queue (inbox, delivery) at due_ms and wakes the
 * queue's workers. Best effort: if Redis is unreachable, the reconciler
 * schedules the row. */
static void schedule_at(struct redis_sync *rc, const struct hookd_config *cfg, const char *queue, const char *id,
                        int64_t due_ms)
{
    const struct embedded_file *seed = seed_script();
    if (!rc || !seed)
        return;
    char due[128], inflight[128], wake[128], at[24];
    snprintf(due, sizeof due, "%s:{%s}:due", cfg->key_prefix, queue);
    snprintf(inflight, sizeof inflight, "%s:{%s}:inflight", cfg->key_prefix, queue);
    snprintf(wake, sizeof wake, "%s:wake:%s", cfg->key_prefix, queue);
    snprintf(at, sizeof at, "%lld", (long long)due_ms);
    freeReplyObject(redis_sync_command(rc, "EVAL %b 2 %s %s set %s %s", seed->data, seed->len, due, inflight, id, at));
    freeReplyObject(redis_sync_command(rc, "PUBLISH %s 1", wake));
}

static void schedule(struct redis_sync *rc, const struct hookd_config *cfg, const struct dlq_replayed *r)
{
    if (!rc)
        return;
    schedule_at(rc, cfg, r->source, r->source_id, clock_wall_ms());
    char stats[128];
    snprintf(stats, sizeof stats, "%s:stats", cfg->key_prefix);
    freeReplyObject(redis_sync_command(rc, "HINCRBY %s replayed 1", stats));
}

/* A skipped delivery of an ordered endpoint: the next delivery of its
 * aggregate, held behind it (checked every 5 s), is due at once
 * (delivery_ordered_next.sql; its own later due time if it has one). Best
 * effort: the hold's poll releases it anyway. */
static void release_next(PGconn *conn, struct redis_sync *rc, const struct hookd_config *cfg, const char *delivery_id)
{
    if (!rc)
        return;
    struct db_array a;
    db_array_uuids(&a, &delivery_id, 1);
    const char *p[] = {a.buf};
    const int len[] = {(int)a.len}, bin[] = {1};
    char err[256];
    PGresult *r = query_prepared_fmt(conn, Q_DELIVERY_ORDERED_NEXT, p, len, bin, err, sizeof err);
    free(a.buf);
    if (!r)
        return;
    for (int i = 0; i < PQntuples(r); i++)
        schedule_at(rc, cfg, "delivery", PQgetvalue(r, i, DELIVERY_ORDERED_NEXT_ID),
                    strtoll(PQgetvalue(r, i, DELIVERY_ORDERED_NEXT_DUE_MS), NULL, 10));
    PQclear(r);
}

/* Ids or --all (exactly one of them) were checked by run_replay. */
static int cmd_replay(PGconn *conn, const struct hookd_config *cfg, const struct opts *o, const struct cli_args *a)
{
    char err[512];
    json_t *targets = json_array();
    if (o->all) {
        struct dlq_filter f = o->f;
        f.limit = f.limit ? f.limit : 100000;
        json_t *rows = dlq_list(conn, &f, err, sizeof err);
        if (!rows)
            return json_decref(targets), cli_fail("dlq", "%s", err);
        size_t i;
        json_t *r;
        json_array_foreach(rows, i, r) json_array_append(targets, json_object_get(r, "id"));
        json_decref(rows);
    } else {
        for (int i = 0; i < a->nargs; i++)
            json_array_append_new(targets, json_string(a->args[i]));
    }
    struct redis_options ropts;
    ctx_redis_options(cfg, &ropts);
    struct redis_sync *rc = o->dry_run ? NULL : redis_sync_connect(cfg->redis.text, &ropts, 2000, err, sizeof err);
    if (!o->dry_run && !rc)
        cli_fail("dlq", "%s; the reconciler will schedule replayed events", err);
    /* The schedule's scores are on Postgres's clock: measure this machine's offset once. */
    if (rc && clock_sync_once(conn, err, sizeof err) != 0)
        cli_fail("dlq", "cannot read Postgres's clock (%s); scheduling on this machine's", err);
    int refused = 0, done = 0;
    size_t i;
    json_t *id;
    json_array_foreach(targets, i, id)
    {
        struct dlq_replayed r;
        const char *s = json_string_value(id);
        if (dlq_replay(conn, s, o->dry_run, &r, err, sizeof err) != 0) {
            cli_fail("dlq", "refused %s: %s", s, err);
            refused++;
            continue;
        }
        done++;
        if (!o->dry_run)
            schedule(rc, cfg, &r);
        printf("%s %s (%s %s)\n", o->dry_run ? "would replay" : "replayed", s, r.source, r.source_id);
    }
    if (rc)
        redis_sync_free(rc);
    json_decref(targets);
    printf("%d %s, %d refused\n", done, o->dry_run ? "would be replayed" : "replayed", refused);
    return refused ? 1 : 0;
}

/* Closes dead letters of deliveries without replaying them: an ordered
 * endpoint's successors of each go on (sql/0017). */
static int cmd_skip(PGconn *conn, const struct hookd_config *cfg, const struct opts *o, const struct cli_args *a)
{
    (void)o;
    int refused = 0, done = 0;
    char rerr[512];
    struct redis_options ropts;
    ctx_redis_options(cfg, &ropts);
    struct redis_sync *rc = redis_sync_connect(cfg->redis.text, &ropts, 2000, rerr, sizeof rerr);
    if (!rc)
        cli_fail("dlq", "%s; the deliveries held behind go on at their next check", rerr);
    for (int i = 0; i < a->nargs; i++) {
        char err[512];
        const char *p[] = {a->args[i]};
        PGresult *r = query_exec(conn, Q_DLQ_SKIP, p, err, sizeof err);
        if (!r || PQntuples(r) == 0) {
            cli_fail("dlq", "refused %s: %s", a->args[i], r ? "no open dead letter of a delivery with that id" : err);
            refused++;
        } else {
            printf("skipped %s (delivery %s)\n", PQgetvalue(r, 0, DLQ_SKIP_ID), PQgetvalue(r, 0, DLQ_SKIP_SOURCE_ID));
            release_next(conn, rc, cfg, PQgetvalue(r, 0, DLQ_SKIP_SOURCE_ID));
            done++;
        }
        PQclear(r);
    }
    if (rc)
        redis_sync_free(rc);
    printf("%d skipped, %d refused\n", done, refused);
    return refused ? 1 : 0;
}

static int cmd_purge(PGconn *conn, const struct hookd_config *cfg, const struct opts *o, const struct cli_args *a)
{
    char err[512];
    (void)cfg, (void)a;
    long n = dlq_purge(conn, o->older_than, o->dry_run, err, sizeof err);
    if (n < 0)
        return cli_fail("dlq", "%s", err);
    printf("%ld dead letter%s %s\n", n, n == 1 ? "" : "s", o->dry_run ? "would be purged" : "purged");
    return 0;
}

/* ---- the subcommands: options checked first, then one connection ---------- */

typedef int dlq_action(PGconn *, const struct hookd_config *, const struct opts *, const struct cli_args *);

static int with_db(const struct cli_args *a, const struct hookd_config *cfg, dlq_action *action)
{
    struct opts o;
    if (read_opts(a, &o) != 0)
        return 2;
    PGconn *conn = cli_connect_db(cfg, "dlq", 0);
    if (!conn)
        return 1;
    int rc = action(conn, cfg, &o, a);
    PQfinish(conn);
    return rc;
}

static int run_list(const struct cli_args *a, const struct hookd_config *cfg)
{
    return with_db(a, cfg, cmd_list);
}

static int run_show(const struct cli_args *a, const struct hookd_config *cfg)
{
    return with_db(a, cfg, cmd_show);
}

static int run_replay(const struct cli_args *a, const struct hookd_config *cfg)
{
    bool all = cli_args_flag(a, "all");
    if (all && a->nargs > 0)
        return cli_fail("dlq", "give either ids or --all, not both"), 2;
    if (!all && a->nargs == 0)
        return cli_fail("dlq",
                        "usage: dlq replay ID... | dlq replay --all [--source S] [--partner P] [--event-type T] "
                        "[--since D] [--limit N] [--dry-run]"),
               2;
    return with_db(a, cfg, cmd_replay);
}

static int run_skip(const struct cli_args *a, const struct hookd_config *cfg)
{
    return with_db(a, cfg, cmd_skip);
}

static int run_purge(const struct cli_args *a, const struct hookd_config *cfg)
{
    if (!cli_args_value(a, "older-than"))
        return cli_fail("dlq", "usage: dlq purge --older-than 30d [--dry-run]"), 2;
    return with_db(a, cfg, cmd_purge);
}

/* The filters of dlq list, which also select what `dlq replay --all` replays. */
#define FILTER_OPTS                                                                                                   \
    {"source", "inbox|delivery", "only dead letters of the inbox, or of outbound deliveries", NULL},                  \
        {"partner", "P", "only this partner (inbox) or endpoint (delivery)", NULL},                                   \
        {"endpoint", "P", NULL, "partner"}, {"event-type", "'order.*'", "only event types matching this glob", NULL}, \
        {"since", "1h", "only entries dead for less than this", NULL},                                                \
        {"tenant", "T", "only deliveries of this tenant's events (uid or id)", NULL},                                 \
    {                                                                                                                 \
        "limit", "N", "at most N entries, 1 to 100000 (list: default 100; replay --all: all)", NULL                   \
    }

static const struct cli_args_opt list_opts[] = {FILTER_OPTS, {0}};
static const struct cli_args_cmd list_cmd = CLI_ARGS_CONFIG_LEAF(
    "list",
    "[--source inbox|delivery] [--partner P] [--event-type 'order.*'] [--since 1h] [--tenant T] [--limit N] [--json]",
    "open dead letters, newest first", NULL, list_opts, run_list, 0, 0);

static const struct cli_args_cmd show_cmd =
    CLI_ARGS_CONFIG_LEAF("show", "ID [--json]", "payload, headers and the full attempt history",
                         "ID is the dead letter's id or its source row's id (webhook_inbox or outbox_deliveries).",
                         NULL, run_show, 1, 1);

static const struct cli_args_opt replay_opts[] = {
    {"all", NULL, "every open dead letter that matches the filters", NULL},
    {"dry-run", NULL, "print what would be replayed, change nothing", NULL},
    FILTER_OPTS,
    {0},
};
static const struct cli_args_cmd replay_cmd =
    CLI_ARGS_CONFIG_LEAF("replay", "ID... | --all [filters] [--dry-run]",
                         "back to PENDING with a fresh attempt budget, through the normal path",
                         "Replaying twice, or something processed meanwhile, is refused. The filters are those of\n"
                         "dlq list; they select what --all replays.",
                         replay_opts, run_replay, 0, -1);

static const struct cli_args_cmd skip_cmd =
    CLI_ARGS_CONFIG_LEAF("skip", "ID...", "close a delivery's dead letter without replaying it",
                         "ID is the dead letter's id or its delivery's id. The delivery stays DEAD; on an ordered\n"
                         "endpoint, the deliveries of its aggregate held behind it are sent next.",
                         NULL, run_skip, 1, -1);

static const struct cli_args_opt purge_opts[] = {
    {"older-than", "30d", "delete entries dead longer than this", NULL},
    {"dry-run", NULL, "print how many would be deleted, delete nothing", NULL},
    {0},
};
static const struct cli_args_cmd purge_cmd =
    CLI_ARGS_CONFIG_LEAF("purge", "--older-than 30d [--dry-run]",
                         "delete old DLQ entries (their source rows then expire with [retention])", NULL, purge_opts,
                         run_purge, 0, 0);

static const struct cli_args_cmd *const dlq_subs[] = {&list_cmd, &show_cmd, &replay_cmd, &skip_cmd, &purge_cmd, NULL};
const struct cli_args_cmd cli_dlq_cmd = {
    .name = "dlq",
    .summary = "the dead-letter queue: list, show, replay, skip, purge",
    .subs = dlq_subs,
};
