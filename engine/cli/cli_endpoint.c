/* `hookd endpoint add|list|show|disable|enable|rotate-secret`: managing the
 * subscribers of the outbox (the webhook_endpoints table). The same rows are
 * plain SQL for anyone who prefers that; this command adds validation: URLs
 * must be http(s), and by default may not point at private, loopback or
 * link-local addresses (SSRF) unless [hookd] allow_private_networks is on;
 * secrets are `whsec_` + base64 and are generated when not given. The
 * statements are sql/queries/endpoint_*.sql. */
#include "cli_endpoint.h"

#include <netdb.h>
#include <openssl/rand.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "cli_tenant.h"
#include "config.h"
#include "db.h"
#include "encoding.h"
#include "netguard.h"
#include "payload_filter.h"
#include "queries.h"
#include "signature.h"
#include "xmalloc.h"

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "hookd endpoint: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static int new_secret(char *out, size_t outlen)
{
    unsigned char raw[24];
    char b64[48];
    if (RAND_bytes(raw, sizeof raw) != 1 || enc_base64_encode(raw, sizeof raw, b64, sizeof b64) != 0)
        return -1;
    snprintf(out, outlen, "whsec_%s", b64);
    return 0;
}

static int check_secret(const char *secret)
{
    struct sig_key key;
    char err[128];
    if (strncmp(secret, "whsec_", 6) != 0 || sig_key_decode(SIG_STANDARD_WEBHOOKS, secret, &key, err, sizeof err) != 0)
        return fail("the secret must be whsec_ followed by base64 (got something else)");
    sig_key_clear(&key);
    return 0;
}

/* URL syntax, and (unless allowed) that no address it resolves to is private. */
static int check_url(const char *url, bool allow_private)
{
    struct netguard_url u;
    char err[256];
    if (netguard_parse_url(url, &u, err, sizeof err) != 0)
        return fail("bad URL: %s", err);
    if (allow_private)
        return 0;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(u.host, NULL, &hints, &res);
    if (rc != 0)
        return fail("cannot resolve %s: %s", u.host, gai_strerror(rc));
    int bad = 0;
    for (struct addrinfo *a = res; a && !bad; a = a->ai_next)
        bad = netguard_is_private(a->ai_addr);
    freeaddrinfo(res);
    if (bad)
        return fail("%s resolves to a private, loopback or link-local address; deliveries there are refused "
                    "unless [hookd] allow_private_networks = true",
                    u.host);
    return 0;
}

static int exec_print(PGconn *conn, const char *sql, int n, const char *const *p, int expect_rows, const char *what)
{
    char err[512];
    PGresult *r = db_exec(conn, sql, n, p, err, sizeof err);
    if (!r)
        return fail("%s", err);
    int rows = PQntuples(r);
    if (expect_rows && rows == 0 && PQresultStatus(r) == PGRES_TUPLES_OK) {
        PQclear(r);
        return fail("no endpoint named '%s'", what);
    }
    PQclear(r);
    return 0;
}

/* The database of the config, or NULL after saying why. */
static PGconn *connect_db(const struct hookd_config *cfg)
{
    char err[512];
    PGconn *conn = db_connect(cfg->database.text, err, sizeof err);
    if (!conn)
        fail("%s", err);
    return conn;
}

static int run_add(const struct cli_args *a, const struct hookd_config *cfg)
{
    const char *url = cli_args_value(a, "url"), *events = cli_args_value(a, "events");
    const char *secret = cli_args_value(a, "secret"), *name = cli_args_value(a, "name");
    const char *timeout = cli_args_value(a, "timeout"), *inflight = cli_args_value(a, "max-inflight");
    const char *tenant = cli_args_value(a, "tenant"), *filter = cli_args_value(a, "filter");
    int64_t timeout_ms = 10000;
    long max_inflight = 16;
    char err[512], generated[80], *end = NULL;
    if (timeout && (backoff_parse_duration(timeout, &timeout_ms, err, sizeof err) != 0 || timeout_ms <= 0))
        return fail("--timeout: %s", timeout_ms <= 0 ? "must be positive" : err);
    if (inflight && ((max_inflight = strtol(inflight, &end, 10)) < 1 || max_inflight > 10000 || *end))
        return fail("--max-inflight must be a whole number from 1 to 10000");
    if (!url)
        return fail("endpoint add needs --url (see 'hookd help endpoint add')");
    if (filter) {
        json_error_t jerr;
        json_t *f = json_loads(filter, 0, &jerr);
        int bad = !f || payload_filter_check(f, err, sizeof err) != 0;
        json_decref(f);
        if (bad)
            return fail("--filter: %s", f ? err : jerr.text);
    }
    events = events ? events : "*";
    if (check_url(url, cfg->allow_private_networks) != 0)
        return 1;
    if (secret && check_secret(secret) != 0)
        return 1;
    if (!secret) {
        if (new_secret(generated, sizeof generated) != 0)
            return fail("cannot generate a secret");
        secret = generated;
    }
    struct netguard_url u;
    if (netguard_parse_url(url, &u, err, sizeof err) != 0)
        return fail("bad URL: %s", err);
    const char *ename = name ? name : u.host;
    PGconn *conn = connect_db(cfg);
    if (!conn)
        return 1;
    /* "order.*, user.*" -> {order.*,user.*}: Postgres splits the list. */
    char t[24], m[24], tid[128];
    snprintf(t, sizeof t, "%lld", (long long)timeout_ms);
    snprintf(m, sizeof m, "%ld", max_inflight);
    int rc = 0;
    PGresult *r = NULL;
    if (tenant && cli_tenant_resolve(conn, tenant, tid, sizeof tid, "endpoint add") != 0) {
        rc = 1;
        goto done;
    }
    const char *p[] = {ename, url, secret, events, t, m, tenant ? tid : NULL, filter};
    r = db_exec(conn, query_sql(Q_ENDPOINT_ADD), 8, p, err, sizeof err);
    if (!r) {
        rc = fail("%s", strstr(err, "duplicate key") ? "an endpoint with that name exists (use --name)" : err);
        goto done;
    }
    printf("endpoint %s added (id %s)\nurl: %s\nevents: %s\nsecret: %s\n", ename, PQgetvalue(r, 0, ENDPOINT_ADD_ID),
           url, events, secret);
    PQclear(r);
done:
    PQfinish(conn);
    return rc;
}

static int list(PGconn *conn, const char *tenant)
{
    char err[512], tid[128];
    if (tenant && cli_tenant_resolve(conn, tenant, tid, sizeof tid, "endpoint list") != 0)
        return 1;
    const char *p[] = {tenant ? tid : NULL};
    PGresult *r = db_exec(conn, query_sql(Q_ENDPOINT_LIST), 1, p, err, sizeof err);
    if (!r)
        return fail("%s", err);
    printf("%-24s %-7s %-24s %s\n", "NAME", "ENABLED", "EVENTS", "URL");
    for (int i = 0; i < PQntuples(r); i++) {
#define V(col) PQgetvalue(r, i, ENDPOINT_LIST_##col)
        bool global = strcmp(V(TENANT), "-") == 0; /* a tenant's endpoint: "  tenant=UID" after the URL */
        printf("%-24s %-7s %-24s %s%s%s%s%s\n", V(NAME), V(ENABLED), V(EVENTS), V(URL),
               global ? "" : "  tenant=", global ? "" : V(TENANT), *V(DISABLED_REASON) ? "  ; " : "",
               V(DISABLED_REASON));
#undef V
    }
    PQclear(r);
    return 0;
}

static int show(PGconn *conn, const char *name, bool show_secret)
{
    char err[512];
    const char *p[] = {name};
    PGresult *r = db_exec(conn, query_sql(Q_ENDPOINT_SHOW), 1, p, err, sizeof err);
    if (!r)
        return fail("%s", err);
    if (PQntuples(r) == 0) {
        PQclear(r);
        return fail("no endpoint named '%s'", name);
    }
#define V(col) PQgetvalue(r, 0, ENDPOINT_SHOW_##col)
    printf("id: %s\nname: %s\nurl: %s\nevents: %s\nenabled: %s%s%s\ntimeout_ms: %s\nmax_inflight: %s\n"
           "secret: %s\ncreated_at: %s\npending_deliveries: %s\ndead_deliveries: %s\n",
           V(ID), V(NAME), V(URL), V(EVENTS), V(ENABLED)[0] == 't' ? "yes" : "no", *V(DISABLED_REASON) ? " — " : "",
           V(DISABLED_REASON), V(TIMEOUT_MS), V(MAX_INFLIGHT), show_secret ? V(SECRET) : "<hidden; use --show-secret>",
           V(CREATED_AT), V(PENDING_DELIVERIES), V(DEAD_DELIVERIES));
#undef V
    PQclear(r);
    return 0;
}

static int set_enabled(PGconn *conn, const char *name, bool enable)
{
    const char *p[] = {name, enable ? "true" : "false"};
    int rc = exec_print(conn, query_sql(Q_ENDPOINT_SET_ENABLED), 2, p, 1, name);
    if (rc == 0)
        printf("endpoint %s %s\n", name, enable ? "enabled" : "disabled");
    return rc;
}

static int rotate(PGconn *conn, const char *name, const char *secret, int64_t grace)
{
    char g[24], grace_text[BACKOFF_DURATION_BUFLEN];
    snprintf(g, sizeof g, "%lld", (long long)grace);
    backoff_format_duration(grace, grace_text, sizeof grace_text);
    const char *p[] = {name, secret, g};
    int rc = exec_print(conn, query_sql(Q_ENDPOINT_ROTATE_SECRET), 3, p, 1, name);
    if (rc == 0)
        printf("endpoint %s: new secret %s\n(the previous secret still signs for %s)\n", name, secret, grace_text);
    return rc;
}

/* ---- the subcommands: options checked first, then one connection ---------- */

static int run_list(const struct cli_args *a, const struct hookd_config *cfg)
{
    PGconn *conn = connect_db(cfg);
    if (!conn)
        return 1;
    int rc = list(conn, cli_args_value(a, "tenant"));
    PQfinish(conn);
    return rc;
}

static int run_show(const struct cli_args *a, const struct hookd_config *cfg)
{
    PGconn *conn = connect_db(cfg);
    if (!conn)
        return 1;
    int rc = show(conn, a->args[0], cli_args_flag(a, "show-secret"));
    PQfinish(conn);
    return rc;
}

static int run_enable(const struct cli_args *a, const struct hookd_config *cfg)
{
    PGconn *conn = connect_db(cfg);
    if (!conn)
        return 1;
    int rc = set_enabled(conn, a->args[0], strcmp(a->cmd->name, "enable") == 0);
    PQfinish(conn);
    return rc;
}

static int run_rotate(const struct cli_args *a, const struct hookd_config *cfg)
{
    const char *secret = cli_args_value(a, "secret"), *grace_arg = cli_args_value(a, "grace");
    int64_t grace = 24LL * 3600 * 1000;
    char err[256], generated[80];
    if (grace_arg && backoff_parse_duration(grace_arg, &grace, err, sizeof err) != 0)
        return fail("--grace: %s", err);
    if (secret && check_secret(secret) != 0)
        return 1;
    if (!secret) {
        if (new_secret(generated, sizeof generated) != 0)
            return fail("cannot generate a secret");
        secret = generated;
    }
    PGconn *conn = connect_db(cfg);
    if (!conn)
        return 1;
    int rc = rotate(conn, a->args[0], secret, grace);
    PQfinish(conn);
    return rc;
}

static const struct cli_args_opt add_opts[] = {
    {"url", "URL", "where deliveries are POSTed (http or https)", NULL},
    {"events", "'order.*,user.*'", "event types to deliver, comma-separated globs (default: *, all)", NULL},
    {"secret", "whsec_...", "the signing secret (default: a new random one, printed once)", NULL},
    {"name", "N", "the endpoint's name (default: the URL's host)", NULL},
    {"timeout", "10s", "time allowed for one delivery attempt (default: 10s)", NULL},
    {"max-inflight", "16", "deliveries in flight to this endpoint at once, 1 to 10000 (default: 16)", NULL},
    {"tenant", "T", "the tenant (uid or id) whose events it receives; default: the events without a tenant", NULL},
    {"filter", "JSON", "a payload filter: {\"data.tier\": \"gold\", \"amount\": {\"$gt\": 100}}", NULL},
    {0},
};
static const struct cli_args_cmd add_cmd = {
    .name = "add",
    .synopsis = "--url URL [--events 'order.*,user.*'] [--secret whsec_...] [--name N] [--timeout 10s] "
                "[--max-inflight 16] [--tenant T] [--filter JSON]",
    .summary = "subscribe an endpoint; the secret is generated when not given and printed once",
    .help = "The URL must be http(s) and, unless [hookd] allow_private_networks = true, may not resolve to a\n"
            "private, loopback or link-local address.",
    .opts = add_opts,
    .run = run_add,
    .config = true,
};

static const struct cli_args_opt list_opts[] = {
    {"tenant", "T", "only the endpoints of this tenant (uid or id)", NULL},
    {0},
};
static const struct cli_args_cmd list_cmd = {
    .name = "list",
    .synopsis = "[--tenant T]",
    .summary = "every endpoint (or a tenant's): name, enabled, events, tenant, URL",
    .opts = list_opts,
    .run = run_list,
    .config = true,
};

static const struct cli_args_opt show_opts[] = {
    {"show-secret", NULL, "print the signing secret too", NULL},
    {0},
};
static const struct cli_args_cmd show_cmd = {
    .name = "show",
    .synopsis = "NAME [--show-secret]",
    .summary = "one endpoint, with its pending and dead deliveries",
    .opts = show_opts,
    .run = run_show,
    .min_args = 1,
    .max_args = 1,
    .config = true,
};

static const struct cli_args_cmd disable_cmd = {
    .name = "disable",
    .synopsis = "NAME",
    .summary = "stop delivering to an endpoint",
    .run = run_enable,
    .min_args = 1,
    .max_args = 1,
    .config = true,
};

static const struct cli_args_cmd enable_cmd = {
    .name = "enable",
    .synopsis = "NAME",
    .summary = "deliver to a disabled endpoint again",
    .run = run_enable,
    .min_args = 1,
    .max_args = 1,
    .config = true,
};

static const struct cli_args_opt rotate_opts[] = {
    {"secret", "whsec_...", "the new secret (default: a new random one, printed once)", NULL},
    {"grace", "24h", "how long deliveries also carry the previous secret's signature (default: 24h)", NULL},
    {0},
};
static const struct cli_args_cmd rotate_cmd = {
    .name = "rotate-secret",
    .synopsis = "NAME [--secret whsec_...] [--grace 24h]",
    .summary = "new secret; during the grace period deliveries carry both signatures",
    .opts = rotate_opts,
    .run = run_rotate,
    .min_args = 1,
    .max_args = 1,
    .config = true,
};

static const struct cli_args_cmd *const endpoint_subs[] = {
    &add_cmd, &list_cmd, &show_cmd, &disable_cmd, &enable_cmd, &rotate_cmd, NULL,
};
const struct cli_args_cmd cli_endpoint_cmd = {
    .name = "endpoint",
    .summary = "the subscribers of the outbox (the webhook_endpoints table)",
    .subs = endpoint_subs,
};
