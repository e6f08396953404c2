/* The `hookd` command line: one binary, many subcommands (DESIGN.md §8).
 * The command tables live beside their code (endpoint, dlq, status in the
 * cli_*.c files; run, migrate, config and version here); cli_args.c parses
 * every command line against them, with `-c FILE` (default $HOOKD_CONFIG,
 * else hookd.conf), `--json` and `--help` accepted anywhere. Every command
 * exits 0 on success and non-zero with a one-line reason on stderr; usage
 * errors exit 2. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "cli_dlq.h"
#include "cli_endpoint.h"
#include "cli_reference.h"
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

/* `config keys`: every section and key of the config, from the table the
 * loader reads (config.h, config_doc_*): as JSON for the generated
 * reference, or one line per key. */
static json_t *config_keys_json(void)
{
    json_t *sections = json_array(), *types = json_array();
    for (size_t i = 0; i < config_doc_nsections(); i++) {
        struct config_doc_section s;
        config_doc_section(i, &s);
        json_t *keys = json_array();
        for (size_t k = 0; k < s.nkeys; k++) {
            struct config_doc_key d;
            config_doc_key(i, k, &d);
            json_array_append_new(keys,
                                  json_pack("{s:s, s:s, s:s?, s:b, s:b, s:s, s:b, s:b, s:s?, s:s}", "name", d.name,
                                            "type", d.type, "default", d.def, "default_is_value", d.def_is_value,
                                            "required", d.required, "reload", d.restart ? "restart" : "reload",
                                            "repeat", d.repeat, "hmac_only", d.hmac_only, "bounds",
                                            d.bounds[0] ? d.bounds : NULL, "meaning", d.meaning));
        }
        json_array_append_new(sections, json_pack("{s:s, s:s?, s:s, s:o}", "section", s.title, "keys_of", s.keys_of,
                                                  "meaning", s.meaning, "keys", keys));
    }
    for (size_t i = 0; i < config_doc_ntypes(); i++) {
        const char *name, *meaning;
        config_doc_type(i, &name, &meaning);
        json_array_append_new(types, json_pack("{s:s, s:s}", "name", name, "meaning", meaning));
    }
    return json_pack("{s:s, s:o, s:o}", "version", HOOKD_VERSION, "sections", sections, "types", types);
}

static void print_config_keys(void)
{
    for (size_t i = 0; i < config_doc_nsections(); i++) {
        struct config_doc_section s;
        config_doc_section(i, &s);
        printf("%s[%s]\n", i ? "\n" : "", s.title);
        if (s.keys_of) {
            printf("  the keys of [%s]\n", s.keys_of);
            continue;
        }
        for (size_t k = 0; k < s.nkeys; k++) {
            struct config_doc_key d;
            config_doc_key(i, k, &d);
            printf("  %-24s %-10s %-7s %s%s%s%s%s\n", d.name, d.type, d.restart ? "restart" : "reload",
                   d.required ? "required"
                   : d.def    ? "default "
                              : "unset",
                   d.def && !d.required ? d.def : "", d.bounds[0] ? " (" : "", d.bounds, d.bounds[0] ? ")" : "");
        }
    }
}

static int run_config_keys(const struct cli_args *a, const struct hookd_config *unused)
{
    (void)unused;
    if (!a->json) {
        print_config_keys();
        return fflush(stdout) != 0;
    }
    json_t *doc = config_keys_json();
    int rc = json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(doc);
    return rc != 0 || puts("") < 0;
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

static const struct cli_args_cmd cmd_config_keys = {
    .name = "keys",
    .synopsis = "[--json]",
    .summary = "list every section and key: type, reload or restart, default, bounds",
    .help = "Lists the keys the config file may hold, from the table the loader reads; with --json also each\n"
            "key's meaning (docs/reference/configuration.md is generated from it).",
    .run = run_config_keys,
};

static const struct cli_args_cmd *const config_subs[] = {&cmd_config_check, &cmd_config_keys, NULL};
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
    &cmd_run,        &cmd_migrate,    &cmd_config,    &cli_endpoint_cmd,  &cli_dlq_cmd, &cli_retention_cmd,
    &cli_status_cmd, &cli_tenant_cmd, &cli_token_cmd, &cli_reference_cmd, &cmd_version, NULL,
};
static const struct cli_args_cmd root = {
    .name = "hookd",
    .summary = "hookd " HOOKD_VERSION ", a webhook reliability engine",
    .help = "Inbound, partners post signed webhooks to its HTTP ingress: each event is verified, stored once,\n"
            "answered at once, and applied later, in order, as a state transition of the entity it concerns.\n"
            "Outbound, the application writes rows into outbox_events in its own transactions, and hookd\n"
            "delivers them, signed, to the subscribed endpoints. Failures are retried with backoff, then\n"
            "dead-lettered for replay. Postgres holds every fact; Redis schedules. Workers started with\n"
            "hookd run share one Postgres and one Redis.",
    .subs = commands,
};

static int dispatch(const struct cli_args *a)
{
    if (a->help) {
        if (a->json)
            cli_args_print_json(a, stdout);
        else
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
