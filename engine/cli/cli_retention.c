/* `hookd retention run [--dry-run] [--json]`: the pass a worker runs every
 * [retention] interval (engine/core/retention.c), once, now, with this
 * config's windows; then each table's storage. With --dry-run it prints
 * what it would expire and delete and changes nothing. Exits 0 also when
 * another pass holds the lock (it says so), 1 when the pass failed. */
#include "cli_retention.h"

#include <jansson.h>
#include <stdio.h>
#include <time.h>

#include "cli_util.h"
#include "config.h"
#include "db.h"
#include "retention.h"

static void iso(int64_t ms, char *buf, size_t len)
{
    if (!ms) {
        snprintf(buf, len, "-");
        return;
    }
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

json_t *cli_retention_storage_json(const struct retention_storage *s)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < s->n; i++)
        json_array_append_new(arr, json_pack("{s:s, s:I, s:I, s:I, s:I}", "table", s->t[i].name, "bytes",
                                             (json_int_t)s->t[i].bytes, "rows", (json_int_t)s->t[i].rows, "oldest_ms",
                                             (json_int_t)s->t[i].oldest_ms, "next_expiry_ms",
                                             (json_int_t)s->t[i].next_expiry_ms));
    return arr;
}

void cli_retention_storage_text(const struct retention_storage *s)
{
    printf("STORAGE\n  %-18s %12s %12s %-20s %-20s\n", "TABLE", "BYTES", "ROWS~", "OLDEST", "NEXT EXPIRY");
    for (size_t i = 0; i < s->n; i++) {
        char a[32], b[32];
        iso(s->t[i].oldest_ms, a, sizeof a);
        iso(s->t[i].next_expiry_ms, b, sizeof b);
        printf("  %-18s %12lld %12lld %-20s %-20s\n", s->t[i].name, (long long)s->t[i].bytes, (long long)s->t[i].rows,
               a, b);
    }
}

static int print_storage(PGconn *conn, const struct hookd_config *cfg, bool json)
{
    char err[512];
    struct retention_storage s;
    if (retention_storage(conn, &cfg->retention, &s, err, sizeof err) != 0) {
        cli_fail("retention", "storage: %s", err);
        return -1;
    }
    if (json) {
        json_t *arr = cli_retention_storage_json(&s);
        json_dumpf(arr, stdout, JSON_COMPACT);
        putchar('\n');
        json_decref(arr);
    } else {
        cli_retention_storage_text(&s);
    }
    return 0;
}

static int run_pass(const struct cli_args *a, const struct hookd_config *cfg)
{
    char err[512];
    PGconn *conn = cli_connect_db(cfg, "retention", 0);
    if (!conn)
        return 1;
    bool dry = cli_args_flag(a, "dry-run");
    struct retention_report rep;
    int status = 0;
    if (retention_run(conn, &cfg->retention, dry, a->json ? NULL : stdout, &rep, err, sizeof err) != 0) {
        cli_fail("retention", "%s", err);
        status = 1;
    } else if (a->json) {
        json_t *o = json_pack("{s:b, s:b, s:I, s:I, s:I, s:I, s:I, s:I}", "dry_run", dry, "skipped", rep.skipped,
                              "expired", (json_int_t)rep.expired, "postponed", (json_int_t)rep.postponed, "rescued",
                              (json_int_t)rep.rescued, "extended", (json_int_t)rep.extended, "pruned",
                              (json_int_t)rep.pruned, "payloads_cleared", (json_int_t)rep.payloads);
        json_dumpf(o, stdout, JSON_COMPACT);
        putchar('\n');
        json_decref(o);
    } else if (!rep.skipped) {
        printf("%s: %ld partitions expired, %ld postponed, %ld rows deleted, %ld expired payloads cleared\n",
               dry ? "dry run" : "done", rep.expired, rep.postponed, rep.pruned, rep.payloads);
    }
    if (status == 0 && print_storage(conn, cfg, a->json) != 0)
        status = 1;
    PQfinish(conn);
    return status;
}

static const struct cli_args_opt run_opts[] = {
    {"dry-run", NULL, "print what would be expired and deleted, change nothing", NULL},
    {0},
};
static const struct cli_args_cmd run_cmd = {
    .name = "run",
    .synopsis = "[--dry-run] [--json]",
    .summary = "run one retention pass now, then print each table's storage",
    .help = "Creates partitions ahead, expires the partitions older than their [retention] window (rows that\n"
            "are not terminal are kept), deletes expired dedup keys and replayed dead letters. Workers run\n"
            "the same pass every [retention] interval; one pass runs at a time. Runs as the tables' owner.",
    .opts = run_opts,
    .run = run_pass,
    .config = true,
};

static const struct cli_args_cmd *const retention_subs[] = {&run_cmd, NULL};
const struct cli_args_cmd cli_retention_cmd = {
    .name = "retention",
    .summary = "expire old data by hand: run",
    .subs = retention_subs,
};
