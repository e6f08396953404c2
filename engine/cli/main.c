/* The `hookd` command line: one binary, many subcommands (DESIGN.md §8).
 * The command tables live beside their code (endpoint, dlq, status in the
 * cli_*.c files; run, migrate, config and version here); cli_args.c parses
 * every command line against them, with `-c FILE` (default $HOOKD_CONFIG,
 * else hookd.conf), `--json` and `--help` accepted anywhere. Every command
 * exits 0 on success and non-zero with a one-line reason on stderr; usage
 * errors exit 2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "cli_dlq.h"
#include "cli_endpoint.h"
#include "cli_retention.h"
#include "cli_status.h"
#include "cli_tenant.h"
#include "cli_util.h"
#include "config.h"
#include "db.h"
#include "migrate.h"
#include "retention.h"
#include "version.h"
#include "worker.h"

static struct hookd_config *load_or_complain(const char *path)
{
    char err[512];
    struct hookd_config *cfg = config_load(path, err, sizeof err);
    if (!cfg)
        cli_fail(NULL, "%s", err);
    return cfg;
}

static int run_worker(const struct cli_args *a, const struct hookd_config *cfg)
{
    (void)cfg;
    return worker_run(a->config);
}

static int run_migrate(const struct cli_args *a, const struct hookd_config *cfg)
{
    (void)a;
    char err[512];
    PGconn *conn = cli_connect_db(cfg, "migrate", 0);
    if (!conn)
        return 1;
    int n = migrate_apply(conn, stdout, err, sizeof err);
    if (n >= 0 && retention_prepare(conn, &cfg->retention, err, sizeof err) != 0)
        n = -1;
    PQfinish(conn);
    if (n < 0)
        return cli_fail("migrate", "%s", err);
    if (n)
        printf("migrations: %d applied\n", n);
    else
        printf("migrations: up to date\n");
    return 0;
}

/* `config check FILE` checks FILE; without it, the file of -c (or the default). */
static int run_config_check(const struct cli_args *a, const struct hookd_config *unused)
{
    (void)unused;
    struct hookd_config *cfg = load_or_complain(a->nargs ? a->args[0] : a->config);
    if (!cfg)
        return 2;
    printf("; %s: OK\n", cfg->path);
    config_print(cfg, stdout);
    config_unref(cfg);
    return 0;
}

static int run_version(const struct cli_args *a, const struct hookd_config *cfg)
{
    (void)a, (void)cfg;
    return puts("hookd " HOOKD_VERSION) < 0;
}

static const struct cli_args_cmd cmd_run = {
    .name = "run",
    .summary = "run a worker (roles from the config)",
    .help = "Runs in the foreground until SIGTERM or SIGINT (drain, then exit 0); SIGHUP reloads the config.",
    .run = run_worker,
};

static const struct cli_args_cmd cmd_migrate = {
    .name = "migrate",
    .summary = "apply pending database migrations",
    .help = "Applies the embedded sql/NNNN_*.sql migrations not yet recorded in schema_migrations, each in\n"
            "a transaction; refuses an applied migration whose file changed. Idempotent.",
    .run = run_migrate,
    .config = true,
};

static const struct cli_args_cmd cmd_config_check = {
    .name = "check",
    .synopsis = "[FILE]",
    .summary = "validate a config and print it, secrets redacted",
    .help = "Checks FILE, or without it the file of -c (default: $HOOKD_CONFIG, else hookd.conf), and prints\n"
            "the effective config (defaults filled in); errors as file:line: message.",
    .run = run_config_check,
    .max_args = 1,
};

static const struct cli_args_cmd *const config_subs[] = {&cmd_config_check, NULL};
static const struct cli_args_cmd cmd_config = {
    .name = "config",
    .summary = "the configuration file",
    .subs = config_subs,
};

static const struct cli_args_cmd cmd_version = {
    .name = "version",
    .summary = "print the version",
    .run = run_version,
};

static const struct cli_args_cmd *const commands[] = {
    &cmd_run,        &cmd_migrate,    &cmd_config,    &cli_endpoint_cmd, &cli_dlq_cmd, &cli_retention_cmd,
    &cli_status_cmd, &cli_tenant_cmd, &cli_token_cmd, &cmd_version,      NULL,
};
static const struct cli_args_cmd root = {
    .name = "hookd",
    .summary = "hookd " HOOKD_VERSION ", a webhook reliability engine",
    .subs = commands,
};

static int dispatch(const struct cli_args *a)
{
    if (a->help) {
        cli_args_print_help(a, stdout);
        return fflush(stdout) != 0;
    }
    if (a->version)
        return run_version(a, NULL);
    struct hookd_config *cfg = NULL;
    if (a->cmd->config && !(cfg = load_or_complain(a->config)))
        return 2;
    int status = a->cmd->run(a, cfg);
    config_unref(cfg);
    return status;
}

int main(int argc, char **argv)
{
    char err[512];
    struct cli_args *a = cli_args_parse(&root, argc, argv, err, sizeof err);
    if (!a) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    int status = dispatch(a);
    cli_args_free(a);
    return status;
}
