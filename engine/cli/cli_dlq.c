/* `hookd dlq list|show|replay|purge`: recovering from the dead-letter queue
 * without editing the database by hand. Replay sends the source row back
 * through the normal path: PENDING with a fresh attempt budget, scheduled in
 * Redis at once (or by the reconciler if Redis is unreachable). */
#include "cli_dlq.h"

#include <getopt.h>
#include <hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "backoff.h"
#include "clock.h"
#include "config.h"
#include "db.h"
#include "dlq.h"
#include "embedded.h"
#include "redis_conn.h"

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "hookd dlq: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

struct opts {
    struct dlq_filter f;
    bool json, all, dry_run;
    int64_t older_than;
    int first_arg; /* index of the first positional argument */
};

static int parse_opts(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        {"source", required_argument, NULL, 's'},     {"partner", required_argument, NULL, 'p'},
        {"endpoint", required_argument, NULL, 'p'},   {"event-type", required_argument, NULL, 'e'},
        {"since", required_argument, NULL, 'S'},      {"limit", required_argument, NULL, 'l'},
        {"json", no_argument, NULL, 'j'},             {"all", no_argument, NULL, 'a'},
        {"dry-run", no_argument, NULL, 'n'},          {"older-than", required_argument, NULL, 'o'},
        {NULL, 0, NULL, 0},
    };
    char err[256];
    int c;
    memset(o, 0, sizeof *o);
    optind = 0; /* 0: glibc re-initialises, dropping main()'s "+" (stop at first non-option) mode */
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (strcmp(optarg, "inbox") != 0 && strcmp(optarg, "delivery") != 0)
                return fail("--source must be inbox or delivery (got '%s')", optarg);
            o->f.source = optarg;
            break;
        case 'p': o->f.partner = optarg; break;
        case 'e': o->f.event_type = optarg; break;
        case 'S':
            if (backoff_parse_duration(optarg, &o->f.since_ms, err, sizeof err) != 0)
                return fail("--since: %s", err);
            break;
        case 'l':
            o->f.limit = atoi(optarg);
            if (o->f.limit < 1 || o->f.limit > 100000)
                return fail("--limit must be from 1 to 100000");
            break;
        case 'j': o->json = true; break;
        case 'a': o->all = true; break;
        case 'n': o->dry_run = true; break;
        case 'o':
            if (backoff_parse_duration(optarg, &o->older_than, err, sizeof err) != 0)
                return fail("--older-than: %s", err);
            break;
        default: return fail("unknown option (see 'hookd --help')");
        }
    }
    o->first_arg = optind;
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
        printf("%-36s %-8s %-16.16s %-22.22s %-20.20s %-3lld %-26.26s %s\n", json_string_value(json_object_get(r, "id")),
               json_string_value(json_object_get(r, "source")), json_string_value(json_object_get(r, "partner")),
               json_string_value(json_object_get(r, "event_type")), json_string_value(json_object_get(r, "entity")),
               (long long)json_integer_value(json_object_get(r, "attempts")),
               json_string_value(json_object_get(r, "reason")), json_string_value(json_object_get(r, "dead_at")));
    }
    printf("(%zu dead letter%s)\n", json_array_size(rows), json_array_size(rows) == 1 ? "" : "s");
}

static int cmd_list(PGconn *conn, const struct opts *o)
{
    char err[512];
    json_t *rows = dlq_list(conn, &o->f, err, sizeof err);
    if (!rows)
        return fail("%s", err);
    if (o->json)
        json_dumpf(rows, stdout, JSON_INDENT(2)), putchar('\n');
    else
        print_table(rows);
    json_decref(rows);
    return 0;
}

static int cmd_show(PGconn *conn, const struct opts *o, const char *id)
{
    char err[512];
    json_t *e = dlq_show(conn, id, err, sizeof err);
    if (!e)
        return fail("%s", err);
    if (o->json) {
        json_dumpf(e, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(e);
        return 0;
    }
    const char *keys[] = {"id", "source", "source_id", "partner", "event_type", "entity", "reason", "last_error",
                          "dead_at", "endpoint_url", "event_id"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(e, keys[i]);
        if (json_is_string(v))
            printf("%-12s %s\n", keys[i], json_string_value(v));
    }
    printf("%-12s %lld\n%-12s %lld\n", "attempts", (long long)json_integer_value(json_object_get(e, "attempts")),
           "replays", (long long)json_integer_value(json_object_get(e, "replay_count")));
    printf("payload:\n");
    json_dumpf(json_object_get(e, "payload"), stdout, JSON_INDENT(2));
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

/* Best effort: if Redis is unreachable, the reconciler schedules the row. */
static void schedule(redisContext *rc, const struct hookd_config *cfg, const struct dlq_replayed *r)
{
    const struct embedded_file *seed = seed_script();
    if (!rc || !seed)
        return;
    char due[128], inflight[128], wake[128], stats[128], now[24];
    snprintf(due, sizeof due, "%s:{%s}:due", cfg->key_prefix, r->source);
    snprintf(inflight, sizeof inflight, "%s:{%s}:inflight", cfg->key_prefix, r->source);
    snprintf(wake, sizeof wake, "%s:wake:%s", cfg->key_prefix, r->source);
    snprintf(stats, sizeof stats, "%s:stats", cfg->key_prefix);
    snprintf(now, sizeof now, "%lld", (long long)clock_wall_ms());
    freeReplyObject(redisCommand(rc, "EVAL %b 2 %s %s set %s %s", seed->data, seed->len, due, inflight, r->source_id, now));
    freeReplyObject(redisCommand(rc, "PUBLISH %s 1", wake));
    freeReplyObject(redisCommand(rc, "HINCRBY %s replayed 1", stats));
}

static int cmd_replay(PGconn *conn, const struct hookd_config *cfg, const struct opts *o, int nids, char **ids)
{
    char err[512];
    json_t *targets = json_array();
    if (o->all) {
        if (nids > 0)
            return json_decref(targets), fail("give either ids or --all, not both");
        struct dlq_filter f = o->f;
        f.limit = f.limit ? f.limit : 100000;
        json_t *rows = dlq_list(conn, &f, err, sizeof err);
        if (!rows)
            return json_decref(targets), fail("%s", err);
        size_t i;
        json_t *r;
        json_array_foreach(rows, i, r) json_array_append(targets, json_object_get(r, "id"));
        json_decref(rows);
    } else {
        if (nids == 0)
            return json_decref(targets), fail("usage: dlq replay ID... | dlq replay --all [--source S] [--partner P] [--event-type T] [--since D] [--dry-run]");
        for (int i = 0; i < nids; i++)
            json_array_append_new(targets, json_string(ids[i]));
    }
    redisContext *rc = o->dry_run ? NULL : redis_connect_sync(cfg->redis.text, 2000, err, sizeof err);
    if (!o->dry_run && !rc)
        fprintf(stderr, "hookd dlq: %s; the reconciler will schedule replayed events\n", err);
    int refused = 0, done = 0;
    size_t i;
    json_t *id;
    json_array_foreach(targets, i, id)
    {
        struct dlq_replayed r;
        const char *s = json_string_value(id);
        if (dlq_replay(conn, s, o->dry_run, &r, err, sizeof err) != 0) {
            fprintf(stderr, "hookd dlq: refused %s: %s\n", s, err);
            refused++;
            continue;
        }
        done++;
        if (!o->dry_run)
            schedule(rc, cfg, &r);
        printf("%s %s (%s %s)\n", o->dry_run ? "would replay" : "replayed", s, r.source, r.source_id);
    }
    if (rc)
        redisFree(rc);
    json_decref(targets);
    printf("%d %s, %d refused\n", done, o->dry_run ? "would be replayed" : "replayed", refused);
    return refused ? 1 : 0;
}

int cli_dlq(const struct hookd_config *cfg, int argc, char **argv)
{
    if (argc < 1)
        return fail("usage: dlq list|show|replay|purge ...");
    const char *sub = argv[0];
    struct opts o;
    if (parse_opts(argc, argv, &o) != 0)
        return 2;
    int npos = argc - o.first_arg;
    char **pos = argv + o.first_arg;
    char err[512];
    PGconn *conn = db_connect(cfg->database.text, err, sizeof err);
    if (!conn)
        return fail("%s", err);
    int rc;
    if (strcmp(sub, "list") == 0) {
        rc = cmd_list(conn, &o);
    } else if (strcmp(sub, "show") == 0) {
        rc = npos == 1 ? cmd_show(conn, &o, pos[0]) : fail("usage: dlq show ID [--json]");
    } else if (strcmp(sub, "replay") == 0) {
        rc = cmd_replay(conn, cfg, &o, npos, pos);
    } else if (strcmp(sub, "purge") == 0) {
        if (o.older_than <= 0) {
            rc = fail("usage: dlq purge --older-than 30d [--dry-run]");
        } else {
            long n = dlq_purge(conn, o.older_than, o.dry_run, err, sizeof err);
            rc = n < 0 ? fail("%s", err) : (printf("%ld dead letter%s %s\n", n, n == 1 ? "" : "s", o.dry_run ? "would be purged" : "purged"), 0);
        }
    } else {
        rc = fail("unknown subcommand '%s' (use list, show, replay, purge)", sub);
    }
    PQfinish(conn);
    return rc;
}
