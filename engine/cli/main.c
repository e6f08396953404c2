/* The `hookd` command line: one binary, many subcommands (DESIGN.md §8).
 * Every subcommand takes `-c FILE` (default $HOOKD_CONFIG, else hookd.conf),
 * exits 0 on success and non-zero with a one-line reason on stderr. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_dlq.h"
#include "cli_endpoint.h"
#include "cli_status.h"
#include "config.h"
#include "db.h"
#include "migrate.h"
#include "version.h"
#include "worker.h"

static const char usage_text[] =
    "usage: hookd [-c FILE] COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  run                      run a worker (roles from the config)\n"
    "  migrate                  apply pending database migrations\n"
    "  config check [FILE]      validate a config and print it, secrets redacted\n"
    "  endpoint add --url URL [--events 'order.*'] [--secret whsec_...] [--name N]\n"
    "           [--timeout 10s] [--max-inflight 16]\n"
    "  endpoint list | show NAME [--show-secret] | disable NAME | enable NAME\n"
    "  endpoint rotate-secret NAME [--secret whsec_...] [--grace 24h]\n"
    "  dlq list [--source inbox|delivery] [--partner P] [--event-type 'order.*'] [--since 1h]\n"
    "           [--limit N] [--json]\n"
    "  dlq show ID [--json]       payload, headers and the full attempt history\n"
    "  dlq replay ID... | --all [filters] [--dry-run]\n"
    "  dlq purge --older-than 30d [--dry-run]\n"
    "  status [--json] [--watch]  the cluster from Redis: workers, queues, counters, DLQ\n"
    "  version                  print the version\n"
    "\n"
    "  -c FILE                  config file (default: $HOOKD_CONFIG, else hookd.conf)\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "hookd: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see 'hookd --help')\n");
    va_end(ap);
    return 2;
}

static const char *default_config(void)
{
    const char *env = getenv("HOOKD_CONFIG");
    return env && *env ? env : "hookd.conf";
}

static struct hookd_config *load_or_complain(const char *path)
{
    char err[512];
    struct hookd_config *cfg = config_load(path, err, sizeof err);
    if (!cfg)
        fprintf(stderr, "hookd: %s\n", err);
    return cfg;
}

static int cmd_migrate(const char *path, int argc, char **argv)
{
    (void)argv;
    if (argc > 0)
        return usage_error("migrate takes no arguments (got '%s')", argv[0]);
    struct hookd_config *cfg = load_or_complain(path);
    if (!cfg)
        return 2;
    char err[512];
    int status = 1;
    PGconn *conn = db_connect(cfg->database.text, err, sizeof err);
    if (conn) {
        int n = migrate_apply(conn, stdout, err, sizeof err);
        if (n >= 0) {
            if (n)
                printf("migrations: %d applied\n", n);
            else
                printf("migrations: up to date\n");
            status = 0;
        }
        PQfinish(conn);
    }
    if (status)
        fprintf(stderr, "hookd migrate: %s\n", err);
    config_unref(cfg);
    return status;
}

static int cmd_config(const char *path, int argc, char **argv)
{
    if (argc < 1 || strcmp(argv[0], "check") != 0)
        return usage_error("unknown config command '%s' (use: config check [FILE])", argc ? argv[0] : "");
    if (argc > 2)
        return usage_error("config check takes one file (got '%s' too)", argv[2]);
    struct hookd_config *cfg = load_or_complain(argc == 2 ? argv[1] : path);
    if (!cfg)
        return 2;
    printf("; %s: OK\n", cfg->path);
    config_print(cfg, stdout);
    config_unref(cfg);
    return 0;
}

/* Subcommands that only need the config and Postgres. */
static int with_config(const char *path, int (*fn)(const struct hookd_config *, int, char **), int argc, char **argv)
{
    struct hookd_config *cfg = load_or_complain(path);
    if (!cfg)
        return 2;
    int rc = fn(cfg, argc, argv);
    config_unref(cfg);
    return rc;
}

static int cmd_run(const char *path, int argc, char **argv)
{
    if (argc > 0)
        return usage_error("run takes no arguments (got '%s')", argv[0]);
    return worker_run(path);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char *path = default_config();
    int c;
    /* '+': stop at the first non-option, so subcommands parse their own. */
    while ((c = getopt_long(argc, argv, "+c:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            path = optarg;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        case 'V':
            puts("hookd " HOOKD_VERSION);
            return 0;
        default:
            fputs(usage_text, stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        fputs(usage_text, stderr);
        return 2;
    }
    const char *cmd = argv[optind];
    int sub_argc = argc - optind - 1;
    char **sub_argv = argv + optind + 1;
    /* `-c FILE` is also accepted after the subcommand. */
    if (sub_argc >= 2 && strcmp(sub_argv[0], "-c") == 0) {
        path = sub_argv[1];
        sub_argc -= 2;
        sub_argv += 2;
    }
    if (strcmp(cmd, "run") == 0)
        return cmd_run(path, sub_argc, sub_argv);
    if (strcmp(cmd, "migrate") == 0)
        return cmd_migrate(path, sub_argc, sub_argv);
    if (strcmp(cmd, "config") == 0)
        return cmd_config(path, sub_argc, sub_argv);
    if (strcmp(cmd, "dlq") == 0)
        return with_config(path, cli_dlq, sub_argc, sub_argv);
    if (strcmp(cmd, "status") == 0)
        return with_config(path, cli_status, sub_argc, sub_argv);
    if (strcmp(cmd, "endpoint") == 0)
        return with_config(path, cli_endpoint, sub_argc, sub_argv);
    if (strcmp(cmd, "version") == 0)
        return puts("hookd " HOOKD_VERSION) < 0;
    return usage_error("unknown command '%s'", cmd);
}
