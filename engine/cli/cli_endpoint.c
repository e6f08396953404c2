/* `hookd endpoint add|list|show|disable|enable|rotate-secret`: managing the
 * subscribers of the outbox (the webhook_endpoints table). The same rows are
 * plain SQL for anyone who prefers that; this command adds validation: URLs
 * must be http(s), and by default may not point at private, loopback or
 * link-local addresses (SSRF) unless [hookd] allow_private_networks is on;
 * secrets are `whsec_` + base64 and are generated when not given. The
 * statements are sql/queries/endpoint_*.sql. */
#include "cli_endpoint.h"

#include <getopt.h>
#include <netdb.h>
#include <openssl/rand.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "config.h"
#include "db.h"
#include "encoding.h"
#include "netguard.h"
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

static int cmd_add(PGconn *conn, const struct hookd_config *cfg, int argc, char **argv)
{
    static const struct option opts[] = {
        {"url", required_argument, NULL, 'u'},     {"events", required_argument, NULL, 'e'},
        {"secret", required_argument, NULL, 's'},  {"name", required_argument, NULL, 'n'},
        {"timeout", required_argument, NULL, 't'}, {"max-inflight", required_argument, NULL, 'm'},
        {NULL, 0, NULL, 0},
    };
    const char *url = NULL, *events = "*", *secret = NULL, *name = NULL;
    int64_t timeout_ms = 10000, max_inflight = 16;
    char err[256];
    int c;
    optind = 0; /* 0: glibc re-initialises, dropping main()'s "+" (stop at first non-option) mode */
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'u': url = optarg; break;
        case 'e': events = optarg; break;
        case 's': secret = optarg; break;
        case 'n': name = optarg; break;
        case 't':
            if (backoff_parse_duration(optarg, &timeout_ms, err, sizeof err) != 0 || timeout_ms <= 0)
                return fail("--timeout: %s", timeout_ms <= 0 ? "must be positive" : err);
            break;
        case 'm':
            max_inflight = strtol(optarg, NULL, 10);
            if (max_inflight < 1 || max_inflight > 10000)
                return fail("--max-inflight must be a whole number from 1 to 10000");
            break;
        default: return fail("usage: endpoint add --url URL [--events 'order.*,user.*'] [--secret whsec_...] [--name NAME] [--timeout 10s] [--max-inflight 16]");
        }
    }
    if (!url)
        return fail("endpoint add needs --url");
    if (check_url(url, cfg->allow_private_networks) != 0)
        return 1;
    char generated[80];
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
    /* "order.*, user.*" -> {order.*,user.*}: Postgres splits the list. */
    char t[24], m[24];
    snprintf(t, sizeof t, "%lld", (long long)timeout_ms);
    snprintf(m, sizeof m, "%lld", (long long)max_inflight);
    const char *p[] = {ename, url, secret, events, t, m};
    PGresult *r = db_exec(conn, query_sql(Q_ENDPOINT_ADD), 6, p, err, sizeof err);
    if (!r)
        return fail("%s", strstr(err, "duplicate key") ? "an endpoint with that name exists (use --name)" : err);
    printf("endpoint %s added (id %s)\nurl: %s\nevents: %s\nsecret: %s\n", ename, PQgetvalue(r, 0, ENDPOINT_ADD_ID),
           url, events, secret);
    PQclear(r);
    return 0;
}

static int cmd_list(PGconn *conn)
{
    char err[512];
    PGresult *r = db_exec(conn, query_sql(Q_ENDPOINT_LIST), 0, NULL, err, sizeof err);
    if (!r)
        return fail("%s", err);
    printf("%-24s %-7s %-24s %s\n", "NAME", "ENABLED", "EVENTS", "URL");
    for (int i = 0; i < PQntuples(r); i++) {
#define V(col) PQgetvalue(r, i, ENDPOINT_LIST_##col)
        printf("%-24s %-7s %-24s %s%s%s\n", V(NAME), V(ENABLED), V(EVENTS), V(URL), *V(DISABLED_REASON) ? "  ; " : "",
               V(DISABLED_REASON));
#undef V
    }
    PQclear(r);
    return 0;
}

static int cmd_show(PGconn *conn, const char *name, bool show_secret)
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

static int cmd_enable(PGconn *conn, const char *name, bool enable)
{
    const char *p[] = {name, enable ? "true" : "false"};
    int rc = exec_print(conn, query_sql(Q_ENDPOINT_SET_ENABLED), 2, p, 1, name);
    if (rc == 0)
        printf("endpoint %s %s\n", name, enable ? "enabled" : "disabled");
    return rc;
}

static int cmd_rotate(PGconn *conn, int argc, char **argv)
{
    static const struct option opts[] = {
        {"secret", required_argument, NULL, 's'}, {"grace", required_argument, NULL, 'g'}, {NULL, 0, NULL, 0}};
    const char *secret = NULL;
    int64_t grace = 24LL * 3600 * 1000;
    char err[256], generated[80], g[24];
    int c;
    optind = 0; /* 0: glibc re-initialises, dropping main()'s "+" (stop at first non-option) mode */
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 's')
            secret = optarg;
        else if (c == 'g' && backoff_parse_duration(optarg, &grace, err, sizeof err) == 0)
            continue;
        else
            return fail("usage: endpoint rotate-secret NAME [--secret whsec_...] [--grace 24h]%s%s",
                        c == 'g' ? ": " : "", c == 'g' ? err : "");
    }
    if (optind >= argc)
        return fail("usage: endpoint rotate-secret NAME [--secret whsec_...] [--grace 24h]");
    const char *name = argv[optind];
    if (secret && check_secret(secret) != 0)
        return 1;
    if (!secret) {
        if (new_secret(generated, sizeof generated) != 0)
            return fail("cannot generate a secret");
        secret = generated;
    }
    snprintf(g, sizeof g, "%lld", (long long)grace);
    char grace_text[BACKOFF_DURATION_BUFLEN];
    backoff_format_duration(grace, grace_text, sizeof grace_text);
    const char *p[] = {name, secret, g};
    int rc = exec_print(conn, query_sql(Q_ENDPOINT_ROTATE_SECRET), 3, p, 1, name);
    if (rc == 0)
        printf("endpoint %s: new secret %s\n(the previous secret still signs for %s)\n", name, secret, grace_text);
    return rc;
}

int cli_endpoint(const struct hookd_config *cfg, int argc, char **argv)
{
    if (argc < 1)
        return fail("usage: endpoint add|list|show|disable|enable|rotate-secret ...");
    const char *sub = argv[0];
    char err[512];
    PGconn *conn = db_connect(cfg->database.text, err, sizeof err);
    if (!conn)
        return fail("%s", err);
    int rc;
    bool needs_name = strcmp(sub, "show") == 0 || strcmp(sub, "disable") == 0 || strcmp(sub, "enable") == 0;
    if (needs_name && argc < 2)
        rc = fail("usage: endpoint %s NAME", sub);
    else if (strcmp(sub, "add") == 0)
        rc = cmd_add(conn, cfg, argc, argv);
    else if (strcmp(sub, "list") == 0)
        rc = cmd_list(conn);
    else if (strcmp(sub, "show") == 0)
        rc = cmd_show(conn, argv[1], argc > 2 && strcmp(argv[2], "--show-secret") == 0);
    else if (strcmp(sub, "disable") == 0 || strcmp(sub, "enable") == 0)
        rc = cmd_enable(conn, argv[1], sub[0] == 'e');
    else if (strcmp(sub, "rotate-secret") == 0)
        rc = cmd_rotate(conn, argc, argv);
    else
        rc = fail("unknown subcommand '%s' (use add, list, show, disable, enable, rotate-secret)", sub);
    PQfinish(conn);
    return rc;
}
