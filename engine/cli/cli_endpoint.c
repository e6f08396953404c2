/* `hookd endpoint add|update|list|show|disable|enable|rotate-secret`:
 * managing the subscribers of the outbox (the webhook_endpoints table) and
 * their delivery policies (payload filter, custom headers, rate limit,
 * ordered delivery: the API's `payloadFilter`, `headers`, `rateLimit`,
 * `ordered`, checked by the same rules). The same rows are
 * plain SQL for anyone who prefers that; this command adds validation: URLs
 * must be http(s), and by default may not point at private, loopback or
 * link-local addresses (SSRF) unless [hookd] allow_private_networks is on;
 * secrets are `whsec_` + base64 and are generated when not given. The
 * statements are sql/queries/endpoint_*.sql. */
#include "cli_endpoint.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "cli_tenant.h"
#include "cli_util.h"
#include "config.h"
#include "db.h"
#include "encoding.h"
#include "endpoint_headers.h"
#include "netguard.h"
#include "payload_filter.h"
#include "query.h"
#include "signature.h"
#include "token.h"
#include "xmalloc.h"

static int check_secret(const char *secret)
{
    struct sig_key key;
    char err[128];
    if (strncmp(secret, "whsec_", 6) != 0 || sig_key_decode(SIG_STANDARD_WEBHOOKS, secret, &key, err, sizeof err) != 0)
        return cli_fail("endpoint", "the secret must be whsec_ followed by base64 (got something else)");
    sig_key_clear(&key);
    return 0;
}

/* The --secret given, checked, or a new one written to buf; NULL (said on
 * stderr) when the given one is not a whsec_ secret or none can be made. */
static const char *secret_arg(const struct cli_args *a, char *buf, size_t buflen)
{
    const char *secret = cli_args_value(a, "secret");
    if (secret)
        return check_secret(secret) == 0 ? secret : NULL;
    if (token_whsec_new(buf, buflen) != 0) {
        cli_fail("endpoint", "cannot generate a secret");
        return NULL;
    }
    return buf;
}

/* URL syntax, and (unless allowed) that no address it resolves to is private. */
static int check_url(const char *url, bool allow_private)
{
    struct netguard_url u;
    char err[256];
    if (netguard_parse_url(url, &u, err, sizeof err) != 0)
        return cli_fail("endpoint", "bad URL: %s", err);
    if (allow_private)
        return 0;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(u.host, NULL, &hints, &res);
    if (rc != 0)
        return cli_fail("endpoint", "cannot resolve %s: %s", u.host, gai_strerror(rc));
    int bad = 0;
    for (struct addrinfo *a = res; a && !bad; a = a->ai_next)
        bad = netguard_is_private(a->ai_addr);
    freeaddrinfo(res);
    if (bad)
        return cli_fail("endpoint",
                        "%s resolves to a private, loopback or link-local address; deliveries there are refused "
                        "unless [hookd] allow_private_networks = true",
                        u.host);
    return 0;
}

static int exec_print(PGconn *conn, enum query_id q, const char *const *p, int expect_rows, const char *what)
{
    char err[512];
    PGresult *r = query_exec(conn, q, p, err, sizeof err);
    if (!r)
        return cli_fail("endpoint", "%s", err);
    int rows = PQntuples(r);
    if (expect_rows && rows == 0 && PQresultStatus(r) == PGRES_TUPLES_OK) {
        PQclear(r);
        return cli_fail("endpoint", "no endpoint named '%s'", what);
    }
    PQclear(r);
    return 0;
}

/* The policy options shared by add and update, checked, as statement
 * parameters (NULL: not given). */
struct policy_opts {
    const char *filter, *headers, *rate, *ordered, *settings;
    const char *timeout, *inflight;
    char timeout_ms[24], max_inflight[24];
};

static int read_policies(const struct cli_args *a, struct policy_opts *o, bool update)
{
    char err[512], *end = NULL;
    memset(o, 0, sizeof *o);
    const char *timeout = cli_args_value(a, "timeout"), *inflight = cli_args_value(a, "max-inflight");
    int64_t ms = 1; /* stays when the duration does not parse */
    long n = 0;
    if (timeout && (backoff_parse_duration(timeout, &ms, err, sizeof err) != 0 || ms <= 0))
        return cli_fail("endpoint", "--timeout: %s", ms <= 0 ? "must be positive" : err);
    if (inflight && ((n = strtol(inflight, &end, 10)) < 1 || n > 10000 || *end))
        return cli_fail("endpoint", "--max-inflight must be a whole number from 1 to 10000");
    snprintf(o->timeout_ms, sizeof o->timeout_ms, "%lld", (long long)(timeout ? ms : 10000));
    snprintf(o->max_inflight, sizeof o->max_inflight, "%ld", inflight ? n : 16);
    o->timeout = timeout || !update ? o->timeout_ms : NULL;
    o->inflight = inflight || !update ? o->max_inflight : NULL;
    if ((o->filter = cli_args_value(a, "filter")) && !(update && strcmp(o->filter, "none") == 0)) {
        json_error_t jerr;
        json_t *f = json_loads(o->filter, 0, &jerr);
        int bad = !f || payload_filter_check(f, err, sizeof err) != 0;
        json_decref(f);
        if (bad)
            return cli_fail("endpoint", "--filter: %s", f ? err : jerr.text);
    } else if (o->filter) {
        o->filter = "null";
    }
    if ((o->headers = cli_args_value(a, "headers"))) {
        json_error_t jerr;
        json_t *h = json_loads(o->headers, 0, &jerr);
        int bad = !h || endpoint_headers_check(h, false, err, sizeof err) != 0;
        json_decref(h);
        if (bad)
            return cli_fail("endpoint", "--headers: %s", h ? err : jerr.text);
    }
    if (cli_settings_option(a, "endpoint", update, &o->settings) != 0)
        return 1;
    if ((o->rate = cli_args_value(a, "rate-limit"))) {
        bool none = update && strcmp(o->rate, "none") == 0;
        if (!none && ((n = strtol(o->rate, &end, 10)) < 1 || n > 1000000 || *end))
            return cli_fail("endpoint",
                            "--rate-limit must be a whole number of deliveries per second from 1 to 1000000%s",
                            update ? " (or none)" : "");
        o->rate = none ? "0" : o->rate;
    }
    if (cli_args_flag(a, "ordered") && cli_args_maybe(a, "unordered"))
        return cli_fail("endpoint", "--ordered and --unordered contradict each other");
    o->ordered = cli_args_flag(a, "ordered") ? "true" : cli_args_maybe(a, "unordered") || !update ? "false" : NULL;
    return 0;
}

static int run_add(const struct cli_args *a, const struct hookd_config *cfg)
{
    const char *url = cli_args_value(a, "url"), *events = cli_args_value(a, "events");
    const char *secret, *name = cli_args_value(a, "name");
    const char *tenant = cli_args_value(a, "tenant");
    char err[512], generated[80];
    struct policy_opts o;
    if (read_policies(a, &o, false) != 0)
        return 1;
    if (!url)
        return cli_fail("endpoint", "endpoint add needs --url (see 'hookd help endpoint add')");
    events = events ? events : "*";
    if (check_url(url, cfg->allow_private_networks) != 0)
        return 1;
    if (!(secret = secret_arg(a, generated, sizeof generated)))
        return 1;
    struct netguard_url u;
    if (netguard_parse_url(url, &u, err, sizeof err) != 0)
        return cli_fail("endpoint", "bad URL: %s", err);
    const char *ename = name ? name : u.host;
    PGconn *conn = cli_connect_db(cfg, "endpoint", 0);
    if (!conn)
        return 1;
    /* "order.*, user.*" -> {order.*,user.*}: Postgres splits the list. */
    char tid[128];
    int rc = 0;
    PGresult *r = NULL;
    if (tenant && cli_tenant_resolve(conn, tenant, tid, sizeof tid, "endpoint add") != 0) {
        rc = 1;
        goto done;
    }
    const char *p[] = {ename,    url,       secret, events,    o.timeout, o.inflight, tenant ? tid : NULL,
                       o.filter, o.headers, o.rate, o.ordered, o.settings};
    r = query_exec(conn, Q_ENDPOINT_ADD, p, err, sizeof err);
    if (!r) {
        rc = cli_fail("endpoint", "%s",
                      strstr(err, "duplicate key") ? "an endpoint with that name exists (use --name)" : err);
        goto done;
    }
    printf("endpoint %s added (id %s)\nurl: %s\nevents: %s\nsecret: %s\n", ename, PQgetvalue(r, 0, ENDPOINT_ADD_ID),
           url, events, secret);
    PQclear(r);
done:
    PQfinish(conn);
    return rc;
}

static int run_update(const struct cli_args *a, const struct hookd_config *cfg)
{
    const char *name = a->args[0], *url = cli_args_value(a, "url"), *events = cli_args_value(a, "events");
    struct policy_opts o;
    if (read_policies(a, &o, true) != 0 || (url && check_url(url, cfg->allow_private_networks) != 0))
        return 1;
    PGconn *conn = cli_connect_db(cfg, "endpoint", 0);
    if (!conn)
        return 1;
    const char *p[] = {name, url, events, o.timeout, o.inflight, o.filter, o.headers, o.rate, o.ordered, o.settings};
    int rc = exec_print(conn, Q_ENDPOINT_UPDATE, p, 1, name);
    if (rc == 0)
        printf("endpoint %s updated\n", name);
    PQfinish(conn);
    return rc;
}

static int list(PGconn *conn, const struct cli_args *a)
{
    const char *tenant = cli_args_value(a, "tenant");
    char err[512], tid[128];
    if (tenant && cli_tenant_resolve(conn, tenant, tid, sizeof tid, "endpoint list") != 0)
        return 1;
    const char *p[] = {tenant ? tid : NULL};
    PGresult *r = query_exec(conn, Q_ENDPOINT_LIST, p, err, sizeof err);
    if (!r)
        return cli_fail("endpoint", "%s", err);
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

static int show(PGconn *conn, const struct cli_args *a)
{
    const char *name = a->args[0];
    bool show_secret = cli_args_flag(a, "show-secret");
    char err[512];
    const char *p[] = {name};
    PGresult *r = query_exec(conn, Q_ENDPOINT_SHOW, p, err, sizeof err);
    if (!r)
        return cli_fail("endpoint", "%s", err);
    if (PQntuples(r) == 0) {
        PQclear(r);
        return cli_fail("endpoint", "no endpoint named '%s'", name);
    }
#define V(col) PQgetvalue(r, 0, ENDPOINT_SHOW_##col)
    printf("id: %s\nname: %s\nurl: %s\nevents: %s\nenabled: %s%s%s\ntimeout_ms: %s\nmax_inflight: %s\n"
           "secret: %s\ncreated_at: %s\npending_deliveries: %s\ndead_deliveries: %s\n"
           "headers: %s\nrate_limit: %s\nordered: %s\nfilter: %s\nsettings: %s\n",
           V(ID), V(NAME), V(URL), V(EVENTS), V(ENABLED)[0] == 't' ? "yes" : "no", *V(DISABLED_REASON) ? " — " : "",
           V(DISABLED_REASON), V(TIMEOUT_MS), V(MAX_INFLIGHT), show_secret ? V(SECRET) : "<hidden; use --show-secret>",
           V(CREATED_AT), V(PENDING_DELIVERIES), V(DEAD_DELIVERIES), *V(HEADERS) ? V(HEADERS) : "-",
           *V(RATE_LIMIT) ? V(RATE_LIMIT) : "-", V(ORDERED), *V(PAYLOAD_FILTER) ? V(PAYLOAD_FILTER) : "-",
           V(SETTINGS));
#undef V
    PQclear(r);
    return 0;
}

static int set_enabled(PGconn *conn, const struct cli_args *a)
{
    const char *name = a->args[0];
    bool enable = strcmp(a->cmd->name, "enable") == 0;
    const char *p[] = {name, enable ? "true" : "false"};
    int rc = exec_print(conn, Q_ENDPOINT_SET_ENABLED, p, 1, name);
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
    int rc = exec_print(conn, Q_ENDPOINT_ROTATE_SECRET, p, 1, name);
    if (rc == 0)
        printf("endpoint %s: new secret %s\n(the previous secret still signs for %s)\n", name, secret, grace_text);
    return rc;
}

/* ---- the subcommands: options checked first, then one connection ---------- */

/* Runs fn on one connection to the configured database. */
static int with_db(const struct cli_args *a, const struct hookd_config *cfg,
                   int (*fn)(PGconn *conn, const struct cli_args *a))
{
    PGconn *conn = cli_connect_db(cfg, "endpoint", 0);
    if (!conn)
        return 1;
    int rc = fn(conn, a);
    PQfinish(conn);
    return rc;
}

static int run_list(const struct cli_args *a, const struct hookd_config *cfg)
{
    return with_db(a, cfg, list);
}

static int run_show(const struct cli_args *a, const struct hookd_config *cfg)
{
    return with_db(a, cfg, show);
}

static int run_enable(const struct cli_args *a, const struct hookd_config *cfg)
{
    return with_db(a, cfg, set_enabled);
}

static int run_rotate(const struct cli_args *a, const struct hookd_config *cfg)
{
    const char *secret, *grace_arg = cli_args_value(a, "grace");
    int64_t grace = 24LL * 3600 * 1000;
    char err[256], generated[80];
    if (grace_arg && backoff_parse_duration(grace_arg, &grace, err, sizeof err) != 0)
        return cli_fail("endpoint", "--grace: %s", err);
    if (!(secret = secret_arg(a, generated, sizeof generated)))
        return 1;
    PGconn *conn = cli_connect_db(cfg, "endpoint", 0);
    if (!conn)
        return 1;
    int rc = rotate(conn, a->args[0], secret, grace);
    PQfinish(conn);
    return rc;
}

/* The options add and update share: where to and what (url, events), and
 * the delivery policies. */
#define ENDPOINT_OPTS                                                                                                 \
    {"url", "URL", "where deliveries are POSTed (http or https)", NULL},                                              \
        {"events", "'order.*,user.*'", "event types to deliver, comma-separated globs (add's default: *, all)",       \
         NULL},                                                                                                       \
        {"timeout", "10s", "time allowed for one delivery attempt (add's default: 10s)", NULL},                       \
        {"max-inflight", "16", "deliveries in flight to this endpoint at once, 1 to 10000 (add's default: 16)",       \
         NULL},                                                                                                       \
        {"filter", "JSON", "a payload filter: {\"data.tier\": \"gold\"} (update: none removes it)", NULL},            \
        {"headers", "JSON", "custom headers for every delivery: {\"X-Team\": \"a\"} (update: replaces them)", NULL},  \
        {"rate-limit", "N", "at most N deliveries per second, across the cluster (update: none removes it)", NULL},   \
        {"settings", "JSON",                                                                                          \
         "delivery settings: {\"signature_headers\": \"svix\"} (update: merged, null removes one)", NULL},            \
    {                                                                                                                 \
        "ordered", NULL, "deliver each aggregate's events one at a time, in hookd_emit order", NULL                   \
    }

static const struct cli_args_opt add_opts[] = {
    ENDPOINT_OPTS,
    {"secret", "whsec_...", "the signing secret (default: a new random one, printed once)", NULL},
    {"name", "N", "the endpoint's name (default: the URL's host)", NULL},
    {"tenant", "T", "the tenant (uid or id) whose events it receives; default: the events without a tenant", NULL},
    {0},
};
static const struct cli_args_cmd add_cmd = {
    .name = "add",
    .synopsis = "--url URL [--events 'order.*,user.*'] [--secret whsec_...] [--name N] [--timeout 10s] "
                "[--max-inflight 16] [--tenant T] [--filter JSON] [--headers JSON] [--rate-limit N] [--ordered] "
                "[--settings JSON]",
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

/* A subcommand that acts on one endpoint, named by its one argument. */
#define BY_NAME(word, syn, sum, options, fn)                                                                          \
    {                                                                                                                 \
        .name = (word), .synopsis = (syn), .summary = (sum), .opts = (options), .run = (fn), .min_args = 1,           \
        .max_args = 1, .config = true                                                                                 \
    }

static const struct cli_args_opt update_opts[] = {
    ENDPOINT_OPTS,
    {"unordered", NULL, "stop ordering: deliveries go out as they are due", NULL},
    {0},
};
static const struct cli_args_cmd update_cmd =
    BY_NAME("update",
            "NAME [--url URL] [--events 'order.*'] [--timeout 10s] [--max-inflight 16] [--filter JSON|none] "
            "[--headers JSON] [--rate-limit N|none] [--ordered|--unordered] [--settings JSON]",
            "change an endpoint's URL, events or delivery policies; what is not given stays", update_opts, run_update);

static const struct cli_args_opt show_opts[] = {
    {"show-secret", NULL, "print the signing secret too", NULL},
    {0},
};
static const struct cli_args_cmd show_cmd = BY_NAME("show", "NAME [--show-secret]",
                                                    "one endpoint, with its pending and dead deliveries", show_opts,
                                                    run_show);
static const struct cli_args_cmd disable_cmd = BY_NAME("disable", "NAME", "stop delivering to an endpoint", NULL,
                                                       run_enable);
static const struct cli_args_cmd enable_cmd = BY_NAME("enable", "NAME", "deliver to a disabled endpoint again", NULL,
                                                      run_enable);

static const struct cli_args_opt rotate_opts[] = {
    {"secret", "whsec_...", "the new secret (default: a new random one, printed once)", NULL},
    {"grace", "24h", "how long deliveries also carry the previous secret's signature (default: 24h)", NULL},
    {0},
};
static const struct cli_args_cmd rotate_cmd =
    BY_NAME("rotate-secret", "NAME [--secret whsec_...] [--grace 24h]",
            "new secret; during the grace period deliveries carry both signatures", rotate_opts, run_rotate);

static const struct cli_args_cmd *const endpoint_subs[] = {
    &add_cmd, &update_cmd, &list_cmd, &show_cmd, &disable_cmd, &enable_cmd, &rotate_cmd, NULL,
};
const struct cli_args_cmd cli_endpoint_cmd = {
    .name = "endpoint",
    .summary = "the subscribers of the outbox (the webhook_endpoints table)",
    .subs = endpoint_subs,
};
