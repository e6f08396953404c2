/*
 * test_config.c — unit tests for the config module (engine/core/config*.c): small INI files written to
 * a mkdtemp directory and loaded with config_load(). Covers the typed values
 * (durations, sizes, percentages, role lists, booleans), the defaults of a
 * minimal file, every refusal with its exact "file:line: message", env:NAME
 * secrets and their redaction in config_print(), retry overrides and their
 * lookup, machine routing and defaults, and a print -> load -> print round
 * trip. Run under ASan the binary also proves that every path, the error
 * paths included, frees what it allocates.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "config_internal.h"

/* Lines 1-3 of most test files: the two required keys. */
#define HOOKD_MIN                                                                                                     \
    "[hookd]\n"                                                                                                       \
    "database = postgresql://hookd@127.0.0.1/hookd\n"                                                                 \
    "redis = redis://127.0.0.1:6379/0\n"

#define S 1000LL
#define M (60 * S)
#define H (60 * M)
#define D (24 * H)

static char dir[64];
static char path[128];
static char err[1024];

static int make_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/hookd-test-config-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof path, "%s/hookd.conf", dir);
    return 0;
}

static int remove_dir(void **state)
{
    (void)state;
    unlink(path);
    return rmdir(dir);
}

static void write_file(const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static struct hookd_config *load(const char *text)
{
    write_file(text);
    err[0] = '\0';
    return config_load(path, err, sizeof err);
}

/* Loads text and fails the test (with the loader's message) if it is refused. */
#define load_ok(text) load_ok_at(__LINE__, text)
static struct hookd_config *load_ok_at(int at, const char *text)
{
    struct hookd_config *c = load(text);
    if (!c)
        fail_msg("case at line %d: refused: %s", at, err);
    return c;
}

/* Loads text, which must be refused with "PATH:LINE: ...PART...". */
#define refuse(text, line, part) refuse_at(__LINE__, text, line, part)
static void refuse_at(int at, const char *text, int line, const char *part)
{
    char prefix[256];
    struct hookd_config *c = load(text);

    if (c) {
        config_unref(c);
        fail_msg("case at line %d: loaded, but want a refusal at line %d: %s", at, line, part);
    }
    snprintf(prefix, sizeof prefix, "%s:%d: ", path, line);
    if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err + strlen(prefix), part))
        fail_msg("case at line %d: want \"%s...%s...\", got \"%s\"", at, prefix, part, err);
}

/* config_print() into a string; caller frees. */
static char *print_config(const struct hookd_config *c)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    config_print(c, f);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static void assert_contains(const char *hay, const char *needle)
{
    if (!strstr(hay, needle))
        fail_msg("expected \"%s\" in:\n%s", needle, hay);
}

static void assert_lacks(const char *hay, const char *needle)
{
    if (strstr(hay, needle))
        fail_msg("did not expect \"%s\" in:\n%s", needle, hay);
}

static void assert_schedule(const int64_t *got, int ngot, const int64_t *want, int nwant)
{
    assert_int_equal(ngot, nwant);
    for (int i = 0; i < nwant; i++)
        if (got[i] != want[i])
            fail_msg("step %d: got %lld ms, want %lld ms", i + 1, (long long)got[i], (long long)want[i]);
}

/* ---- values and defaults ------------------------------------------------ */

static void test_minimal_config_gets_defaults(void **state)
{
    (void)state;
    struct hookd_config *c = load_ok(HOOKD_MIN);
    const int64_t retry[] = {1 * M, 5 * M, 15 * M}, defer[] = {5 * S, 30 * S, 2 * M, 5 * M};

    assert_int_equal(c->refs, 1);
    assert_int_equal(c->generation, 1);
    assert_string_equal(c->path, path);
    assert_string_equal(c->database.text, "postgresql://hookd@127.0.0.1/hookd");
    assert_null(c->database.env);
    assert_string_equal(c->redis.text, "redis://127.0.0.1:6379/0");
    assert_int_equal(c->roles, ROLE_INGEST | ROLE_INBOX | ROLE_RELAY);
    assert_string_equal(c->listen, "127.0.0.1:8080");
    assert_string_equal(c->key_prefix, "hookd");
    assert_string_equal(c->log_level, "info");
    assert_int_equal(c->reconcile_interval, 30 * S);
    assert_int_equal(c->reconcile_horizon, 1 * H);
    assert_false(c->allow_private_networks);
    assert_null(c->admin_token.text);
    assert_string_equal(c->admin_listen, "127.0.0.1:8081");
    assert_string_equal(config_admin_listen(c), "127.0.0.1:8081");
    assert_int_equal(c->admin_session_timeout, 12 * H);
    assert_null(c->alert_webhook.text);
    assert_int_equal(c->alert_interval, 1 * M);
    assert_int_equal(c->heartbeat_interval, 2 * S);
    assert_int_equal(c->lease, 30 * S);
    assert_int_equal(c->max_sleep, 1 * S);
    assert_int_equal(c->shutdown_timeout, 10 * S);
    assert_int_equal(c->db_pool_size, 8);
    assert_int_equal(c->batch_size, 250);
    assert_int_equal(c->max_inflight, 1000);
    assert_int_equal(c->max_inflight_per_origin, 64);
    assert_int_equal(c->max_idle_connections, 1000);
    assert_int_equal(c->max_idle_per_origin, 256);
    assert_int_equal(c->first_attempt_window, 250);
    assert_int_equal(c->ingest_batch_max, 256);
    assert_int_equal(c->ingest_concurrency, 2);
    assert_int_equal(c->max_body, 1024 * 1024);
    assert_null(c->ca_file);

    assert_schedule(c->retry.schedule_ms, c->retry.nsteps, retry, 3);
    assert_int_equal(c->retry.max_attempts, 4);
    assert_int_equal(c->retry.jitter_pct, 10);
    assert_schedule(c->defer.schedule_ms, c->defer.nsteps, defer, 4);
    assert_int_equal(c->defer.max_age_ms, 24 * H);

    assert_int_equal(c->noverrides, 0);
    assert_int_equal(c->npartners, 0);
    assert_int_equal(c->nmachines, 0);
    /* Nothing configured, so nothing matches: every lookup falls back. */
    assert_ptr_equal(config_retry_for_inbox(c, "stripe", "order.paid"), &c->retry);
    assert_ptr_equal(config_retry_for_endpoint(c, "slow"), &c->retry);
    assert_null(config_partner(c, "stripe"));
    assert_null(config_machine_for(c, NULL, "order.paid"));
    config_unref(c);
}

static void test_retention(void **state)
{
    (void)state;
    const int64_t day = 24 * H;
    struct hookd_config *c = load_ok(HOOKD_MIN);
    assert_int_equal(c->retention.inbox, 30 * day);
    assert_int_equal(c->retention.outbox, 30 * day);
    assert_int_equal(c->retention.attempts, 30 * day);
    assert_int_equal(c->retention.dead_letters, 30 * day);
    assert_int_equal(c->retention.dedup, 30 * day);
    assert_int_equal(c->retention.interval, 1 * M);
    config_unref(c);
    /* windows of minutes (tests); dedup unset follows inbox and [defer] max_age upwards */
    c = load_ok(HOOKD_MIN "[defer]\nmax_age = 40d\n[retention]\ninbox = 1m\noutbox = 2m\nattempts = 3m\n"
                          "dead_letters = 4m\ninterval = 1s\n");
    assert_int_equal(c->retention.inbox, 1 * M);
    assert_int_equal(c->retention.outbox, 2 * M);
    assert_int_equal(c->retention.attempts, 3 * M);
    assert_int_equal(c->retention.dead_letters, 4 * M);
    assert_int_equal(c->retention.dedup, 40 * day);
    assert_int_equal(c->retention.interval, 1 * S);
    char *out = print_config(c);
    assert_contains(out, "[retention]\ninbox = 1m\noutbox = 2m\nattempts = 3m\ndead_letters = 4m\n");
    free(out);
    config_unref(c);
    c = load_ok(HOOKD_MIN "[retention]\ninbox = 60d\n");
    assert_int_equal(c->retention.dedup, 60 * day);
    config_unref(c);
    /* a dedup window shorter than what it must outlive: refused, at its line */
    refuse(HOOKD_MIN "[retention]\ninbox = 2h\ndedup = 1h\n", 6, "dedup (1h) is shorter than [retention] inbox (2h)");
    refuse(HOOKD_MIN "[defer]\nmax_age = 2h\n[retention]\ninbox = 1m\ndedup = 1h\n", 8,
           "dedup (1h) is shorter than [defer] max_age (2h)");
    refuse(HOOKD_MIN "[retention]\ninbox = 500ms\n", 5, "[retention] inbox must be at least 1s");
    refuse(HOOKD_MIN "[retention]\nforever = 1d\n", 5, "unknown key 'forever' in [retention]");
    /* interval = off: workers run no pass (`hookd retention run` under the owner does) */
    c = load_ok(HOOKD_MIN "[retention]\ninterval = off\n");
    assert_int_equal(c->retention.interval, 0);
    out = print_config(c);
    assert_contains(out, "dedup = 30d\ninterval = off\n");
    free(out);
    config_unref(c);
    refuse(HOOKD_MIN "[retention]\ninbox = off\n", 5, "bad duration 'off'");
    refuse(HOOKD_MIN "[retention]\ninterval = 0s\n", 5, "[retention] interval must be at least 1s");
}

static void test_durations(void **state)
{
    (void)state;
    struct hookd_config *c = load_ok(HOOKD_MIN "reconcile_interval = 250ms\n"
                                               "lease = 5s\n"
                                               "alert_interval = 1m\n"
                                               "reconcile_horizon = 2h\n"
                                               "shutdown_timeout = 1d\n"
                                               "heartbeat_interval =   90s   \n"
                                               "max_sleep = 0ms ; comment after a value\n"
                                               "[defer]\n"
                                               "schedule = 100ms, 1s,2s , 1m\n"
                                               "max_age = 3d\n");

    assert_int_equal(c->reconcile_interval, 250);
    assert_int_equal(c->lease, 5 * S);
    assert_int_equal(c->alert_interval, 1 * M);
    assert_int_equal(c->reconcile_horizon, 2 * H);
    assert_int_equal(c->shutdown_timeout, 1 * D);
    assert_int_equal(c->heartbeat_interval, 90 * S);
    assert_int_equal(c->max_sleep, 0);
    const int64_t defer[] = {100, 1 * S, 2 * S, 1 * M};
    assert_schedule(c->defer.schedule_ms, c->defer.nsteps, defer, 4);
    assert_int_equal(c->defer.max_age_ms, 3 * D);

    /* Printed in the largest exact unit. */
    char *out = print_config(c);
    assert_contains(out, "reconcile_interval = 250ms\n");
    assert_contains(out, "shutdown_timeout = 1d\n");
    assert_contains(out, "heartbeat_interval = 90s\n");
    assert_contains(out, "[defer]\nschedule = 100ms, 1s, 2s, 1m\nmax_age = 3d\n");
    free(out);
    config_unref(c);
}

static void test_sizes(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int64_t bytes;
    } good[] = {
        {"1MiB", 1048576}, {"512KiB", 524288}, {"4096", 4096}, {" 10 B ", 10},    {"3GiB", 3LL << 30},
        {"2KB", 2000},     {"5MB", 5000000},   {"0", 0},       {"64 KiB", 65536}, {"1                 MiB", 1048576},
    };
    static const struct {
        const char *text, *part;
    } bad[] = {
        {"abc", "bad size 'abc'"},
        {"-1", "bad size '-1'"},
        {"1.5MiB", "unknown unit '.5MiB'"},
        {"10XB", "unknown unit 'XB'"},
        {"99999999999999999999", "too large"},
        {"9000000000GiB", "too large"},
        {"", "bad size"},
        /* fuzz regression: text after 15 blanks was cut off and ignored */
        {"1MiB            junk", "unknown unit"},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int64_t v = -1;
        if (config_parse_size(good[i].text, &v, err, sizeof err) != 0)
            fail_msg("'%s' refused: %s", good[i].text, err);
        assert_int_equal(v, good[i].bytes);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v = 77;
        err[0] = '\0';
        if (config_parse_size(bad[i].text, &v, err, sizeof err) == 0)
            fail_msg("'%s' accepted as %lld", bad[i].text, (long long)v);
        assert_int_equal(v, 77);
        assert_contains(err, bad[i].part);
    }

    struct hookd_config *c = load_ok(HOOKD_MIN "max_body = 512KiB\n");
    assert_int_equal(c->max_body, 512 * 1024);
    config_unref(c);
    c = load_ok(HOOKD_MIN "max_body = 4096\n");
    assert_int_equal(c->max_body, 4096);
    config_unref(c);
    c = load_ok(HOOKD_MIN "max_body = 1MiB\n"
                          "[partner p]\n"
                          "scheme = github\n"
                          "secret = s-0123456789abcdef\n"
                          "max_body = 2MiB\n");
    assert_int_equal(c->max_body, 1048576);
    assert_int_equal(config_partner(c, "p")->max_body, 2 * 1048576);
    config_unref(c);
}

static void test_percent_roles_bools_ints(void **state)
{
    (void)state;
    struct hookd_config *c = load_ok(HOOKD_MIN "roles = ingest, relay\n"
                                               "allow_private_networks = yes\n"
                                               "db_pool_size = 16\n"
                                               "listen = 0.0.0.0:9000\n"
                                               "key_prefix = t1\n"
                                               "log_level = debug\n"
                                               "ca_file = /etc/ssl/ca.pem\n"
                                               "[retry]\n"
                                               "jitter = 25%\n");
    assert_int_equal(c->roles, ROLE_INGEST | ROLE_RELAY);
    assert_true(c->allow_private_networks);
    assert_int_equal(c->db_pool_size, 16);
    assert_string_equal(c->listen, "0.0.0.0:9000");
    assert_string_equal(c->key_prefix, "t1");
    assert_string_equal(c->log_level, "debug");
    assert_string_equal(c->ca_file, "/etc/ssl/ca.pem");
    assert_int_equal(c->retry.jitter_pct, 25);
    char *out = print_config(c);
    assert_contains(out, "roles = ingest, relay\n");
    assert_contains(out, "allow_private_networks = true\n");
    assert_contains(out, "jitter = 25%\n");
    free(out);
    config_unref(c);

    static const struct {
        const char *roles;
        unsigned want;
    } roles[] = {
        {"inbox", ROLE_INBOX},
        {"relay,inbox", ROLE_INBOX | ROLE_RELAY},
        {"ingest,inbox,relay", ROLE_ALL},
        {"  relay  ", ROLE_RELAY},
    };
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, HOOKD_MIN "roles = %s\n", roles[i].roles);
        c = load_ok(text);
        assert_int_equal(c->roles, roles[i].want);
        config_unref(c);
    }

    static const struct {
        const char *text;
        bool want;
    } bools[] = {
        {"true", true},   {"on", true},  {"1", true},    {"TRUE", true}, {"Yes", true},
        {"false", false}, {"no", false}, {"off", false}, {"0", false},   {"False", false},
    };
    for (size_t i = 0; i < sizeof bools / sizeof bools[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, HOOKD_MIN "allow_private_networks = %s\n", bools[i].text);
        c = load_ok(text);
        if (c->allow_private_networks != bools[i].want)
            fail_msg("'%s' read as %d", bools[i].text, c->allow_private_networks);
        config_unref(c);
    }

    c = load_ok(HOOKD_MIN "[retry]\njitter = 0\n");
    assert_int_equal(c->retry.jitter_pct, 0);
    config_unref(c);
    c = load_ok(HOOKD_MIN "[retry]\njitter = 100 %\n");
    assert_int_equal(c->retry.jitter_pct, 100);
    config_unref(c);
}

/* The example in DESIGN.md §6, verbatim but for the env secrets. */
/* ---- routes --------------------------------------------------------------- */

#define STRIPE_PARTNER                                                                                                \
    "[partner stripe]\n"                                                                                              \
    "scheme = stripe\n"                                                                                               \
    "secret = env:ROUTE_TEST_SECRET\n"

static void test_routes(void **state)
{
    (void)state;
    setenv("ROUTE_TEST_SECRET", "whsec_route_test_secret_0123", 1);
    struct hookd_config *c = load_ok(HOOKD_MIN STRIPE_PARTNER /* 4-6 */
                                     "[route billing]\n"      /* 7 */
                                     "partner = stripe\n"     /* 8 */
                                     "events = invoice.*, charge.succeeded\n"
                                     "filter = {\"data.object.amount\": {\"$gt\": 100}}\n"
                                     "tenant = acme\n"
                                     "emit_type = billing.event\n"
                                     "[route all]\n"
                                     "partner = stripe\n");
    assert_int_equal(c->nroutes, 2);
    const struct route_config *r = &c->routes[0];
    assert_string_equal(r->name, "billing");
    assert_int_equal(r->line, 7);
    assert_string_equal(r->partner, "stripe");
    assert_int_equal(r->nevents, 2);
    assert_non_null(r->filter);
    assert_string_equal(r->tenant, "acme");
    assert_string_equal(r->emit_type, "billing.event");
    assert_true(config_route_takes(r, "stripe", "invoice.paid"));
    assert_true(config_route_takes(r, "stripe", "charge.succeeded"));
    assert_false(config_route_takes(r, "stripe", "charge.failed"));
    assert_false(config_route_takes(r, "github", "invoice.paid"));
    /* no events: any type of its partner; no tenant, no filter, no emit_type */
    const struct route_config *all = &c->routes[1];
    assert_int_equal(all->nevents, 0);
    assert_null(all->filter);
    assert_null(all->tenant);
    assert_null(all->emit_type);
    assert_true(config_route_takes(all, "stripe", "anything.at.all"));
    assert_true(config_routes_take(c, "stripe", "x"));
    assert_false(config_routes_take(c, "github", "x"));

    /* printed, loaded again, printed the same */
    char *out = print_config(c);
    assert_contains(out, "[route billing]\npartner = stripe\nevents = invoice.*, charge.succeeded\n");
    assert_contains(out, "tenant = acme\nemit_type = billing.event\n");
    config_unref(c);
    struct hookd_config *again = load_ok(out);
    char *out2 = print_config(again);
    assert_string_equal(out, out2);
    free(out);
    free(out2);
    config_unref(again);
    unsetenv("ROUTE_TEST_SECRET");
}

static void test_refuse_routes(void **state)
{
    (void)state;
    setenv("ROUTE_TEST_SECRET", "whsec_route_test_secret_0123", 1);
    refuse(HOOKD_MIN STRIPE_PARTNER "[route r]\nevents = a.*\n", 7,
           "[route r] needs 'partner' (the name of a [partner NAME] section)");
    refuse(HOOKD_MIN STRIPE_PARTNER "[route r]\npartner = github\n", 7,
           "[route r] names partner 'github', but there is no [partner github]");
    refuse(HOOKD_MIN STRIPE_PARTNER "[route r]\npartner = stripe\nfilter = {\"a\": \n", 9, "bad filter: not JSON");
    refuse(HOOKD_MIN STRIPE_PARTNER "[route r]\npartner = stripe\nfilter = [1]\n", 9,
           "bad filter: a filter is a JSON object");
    refuse(HOOKD_MIN STRIPE_PARTNER "[route r]\npartner = stripe\nfilter = {\"a\": {\"$like\": 1}}\n", 9,
           "bad filter: ");
    refuse(HOOKD_MIN STRIPE_PARTNER "[route r]\npartner = stripe\ntenant = a b\n", 9, "bad tenant 'a b'");
    refuse(HOOKD_MIN STRIPE_PARTNER "[route r]\npartner = stripe\nemit_type = a/b\n", 9, "bad emit_type 'a/b'");
    refuse(HOOKD_MIN STRIPE_PARTNER "[route r]\npartner = stripe\nevents = a.*, b/c\n", 9,
           "bad event type glob 'b/c'");
    refuse(HOOKD_MIN STRIPE_PARTNER "[route r]\npartner = stripe\nevents = ,\n", 9, "events is empty");
    refuse(HOOKD_MIN STRIPE_PARTNER "[route r]\npartner = stripe\ncolour = red\n", 9,
           "unknown key 'colour' in [route r]");
    refuse(HOOKD_MIN STRIPE_PARTNER "[route r/1]\n", 7, "bad route name 'r/1'");
    refuse(HOOKD_MIN STRIPE_PARTNER "[route r]\npartner = stripe\n[route r]\npartner = stripe\n", 9,
           "duplicate section [route r] (first at line 7)");
    unsetenv("ROUTE_TEST_SECRET");
}

static void test_design_example_loads(void **state)
{
    (void)state;
    setenv("HOOKD_ADMIN_TOKEN", "admintoken-example-0123456789", 1);
    setenv("STRIPE_WEBHOOK_SECRET", "whsec_stripe_example", 1);
    struct hookd_config *c = load_ok(
        "[hookd]\n"
        "database = postgresql://hookd@127.0.0.1/hookd\n"
        "redis = redis://127.0.0.1:6379/0\n"
        "roles = ingest, inbox, relay\n"
        "listen = 127.0.0.1:8080\n"
        "reconcile_interval = 30s\n"
        "allow_private_networks = false   ; SSRF guard for deliveries\n"
        "admin_token = env:HOOKD_ADMIN_TOKEN\n"
        "\n"
        "[retry]                     ; failures: waits after attempts 1..3, then DLQ\n"
        "schedule = 1m, 5m, 15m\n"
        "max_attempts = 4\n"
        "jitter = 10%\n"
        "\n"
        "[defer]                     ; out-of-order events\n"
        "schedule = 5s, 30s, 2m, 5m  ; the last step repeats\n"
        "max_age = 24h\n"
        "\n"
        "[retry endpoint:slow-partner]\n"
        "schedule = 30s, 2m, 10m\n"
        "\n"
        "[partner stripe]\n"
        "scheme = stripe             ; standard-webhooks | stripe | github | hmac-sha256\n"
        "secret = env:STRIPE_WEBHOOK_SECRET\n"
        "tolerance = 5m\n"
        "event_id = json:id\n"
        "event_type = json:type\n"
        "entity_id = json:data.object.metadata.order_id\n"
        "\n"
        "[machine order]\n"
        "table = orders\n"
        "id_column = id\n"
        "state_column = status\n"
        "initial = draft\n"
        "transition order.started = draft -> started\n"
        "transition order.paid = started -> paid\n"
        "transition order.shipped = paid -> shipped\n"
        "transition order.cancelled = draft, started, paid -> cancelled\n");

    assert_string_equal(c->admin_token.text, "admintoken-example-0123456789");
    assert_string_equal(c->admin_token.env, "HOOKD_ADMIN_TOKEN");
    assert_int_equal(c->noverrides, 1);
    assert_int_equal(c->overrides[0].scope, RETRY_ENDPOINT);
    assert_string_equal(c->overrides[0].pattern, "slow-partner");
    assert_int_equal(c->overrides[0].line, 19);
    const int64_t slow[] = {30 * S, 2 * M, 10 * M};
    const struct backoff_policy *p = config_retry_for_endpoint(c, "slow-partner");
    assert_schedule(p->schedule_ms, p->nsteps, slow, 3);
    assert_int_equal(p->max_attempts, 4);
    assert_int_equal(p->jitter_pct, 10);

    const struct partner_config *stripe = config_partner(c, "stripe");
    assert_non_null(stripe);
    assert_int_equal(stripe->scheme, SIG_STRIPE);
    assert_int_equal(stripe->line, 22);
    assert_int_equal(stripe->nsecrets, 1);
    assert_string_equal(stripe->secrets[0].text, "whsec_stripe_example");
    assert_int_equal(stripe->keys[0].len, strlen("whsec_stripe_example"));
    assert_int_equal(stripe->tolerance, 5 * M);
    assert_int_equal(stripe->entity_id.kind, FIELD_JSON);
    assert_string_equal(stripe->entity_id.path, "data.object.metadata.order_id");

    const struct machine_config *order = config_machine(c, "order");
    assert_non_null(order);
    assert_int_equal(order->line, 30);
    assert_false(order->builtin);
    assert_string_equal(order->table, "orders");
    assert_int_equal(machine_ntransitions(order->machine), 4);
    assert_ptr_equal(config_machine_for(c, NULL, "order.cancelled"), order);
    config_unref(c);
    unsetenv("HOOKD_ADMIN_TOKEN");
    unsetenv("STRIPE_WEBHOOK_SECRET");
}

static void test_comments_and_blank_lines_keep_line_numbers(void **state)
{
    (void)state;
    refuse("; a comment\n"                  /* 1 */
           "# another comment\n"            /* 2 */
           "\n"                             /* 3 */
           "[hookd]   ; the main section\n" /* 4 */
           "database = postgresql://h/db\n" /* 5 */
           "\n"                             /* 6 */
           "   ; indented comment\n"        /* 7 */
           "redis = redis://r:6379\n"       /* 8 */
           "lease = 5 parsecs\n",           /* 9 */
           9, "bad duration '5 parsecs': unknown unit 'parsecs'");
}

/* ---- refusals ------------------------------------------------------------ */

/* ---- [portal] ---------------------------------------------------------- */

static void test_portal_section(void **state)
{
    (void)state;
    struct hookd_config *c = load_ok(HOOKD_MIN);
    assert_null(c->portal.base_url);
    assert_int_equal(c->portal.link_ttl, 10 * 60 * 1000);
    assert_int_equal(c->portal.session_ttl, 7LL * 24 * 3600 * 1000);
    assert_string_equal(c->portal.title, "Webhooks");
    assert_string_equal(c->portal.accent_color, "#2563eb");
    config_unref(c);
    c = load_ok(HOOKD_MIN "[portal]\nbase_url = https://hooks.example.com/\nlink_ttl = 2m\nsession_ttl = 1h\n"
                          "title = Acme hooks\nlogo_url = https://cdn.example.com/logo.png\naccent_color = #0a0\n");
    assert_string_equal(c->portal.base_url, "https://hooks.example.com/");
    assert_int_equal(c->portal.link_ttl, 120000);
    assert_int_equal(c->portal.session_ttl, 3600000);
    char *printed = print_config(c);
    assert_contains(printed, "[portal]\nbase_url = https://hooks.example.com/\nlink_ttl = 2m\nsession_ttl = 1h\n");
    assert_contains(printed, "accent_color = #0a0\n");
    free(printed);
    config_unref(c);
    refuse(HOOKD_MIN "[portal]\naccent_color = red\n", 4, "[portal] accent_color must be #rgb or #rrggbb");
    refuse(HOOKD_MIN "[portal]\naccent_color = #12345g\n", 4, "accent_color");
    refuse(HOOKD_MIN "[portal]\nbase_url = ftp://x\n", 4, "[portal] base_url must start with http");
    refuse(HOOKD_MIN "[portal]\nbase_url = https://x/\"><script>\n", 4, "quotes or angle brackets");
    refuse(HOOKD_MIN "[portal]\nlogo_url = javascript:alert(1)\n", 4, "logo_url must be an https:// URL");
    refuse(HOOKD_MIN "[portal]\nlogo_url = //evil.example/x.png\n", 4,
           "[portal] logo_url must not start with // (write https://host/… or a path)");
    refuse(HOOKD_MIN "[portal]\nsession_ttl = 500ms\n", 4, "session_ttl must be at least 1s");
    refuse(HOOKD_MIN "[portal]\ncolour = red\n", 5, "unknown key 'colour' in [portal]");
    refuse(HOOKD_MIN "[portal]\ntitle = a\n[portal]\n", 6, "duplicate section [portal]");
}

static void test_refuse_unknown_keys(void **state)
{
    (void)state;
    refuse(HOOKD_MIN "bogus = 1\n", 4, "unknown key 'bogus' in [hookd]");
    refuse(HOOKD_MIN "[partner a]\n"                 /* 4 */
                     "scheme = stripe\n"             /* 5 */
                     "secret = s-0123456789abcdef\n" /* 6 */
                     "colour = red\n",               /* 7 */
           7, "unknown key 'colour' in [partner a]");
    refuse(HOOKD_MIN "[machine m]\n"            /* 4 */
                     "initial = a\n"            /* 5 */
                     "transition go = a -> b\n" /* 6 */
                     "colour = red\n",          /* 7 */
           7, "unknown key 'colour' in [machine m]");
    refuse(HOOKD_MIN "[retry]\n"       /* 4 */
                     "attempts = 3\n", /* 5 */
           5, "unknown key 'attempts' in a retry section");
    refuse(HOOKD_MIN "[retry partner:x]\n" /* 4 */
                     "schedule = 1s\n"     /* 5 */
                     "backoff = 2s\n",     /* 6 */
           6, "unknown key 'backoff' in a retry section");
    refuse(HOOKD_MIN "[defer]\n"           /* 4 */
                     "max_attempts = 3\n", /* 5 */
           5, "unknown key 'max_attempts' in [defer]");
    /* An unknown key in the right section of another kind's name. */
    refuse(HOOKD_MIN "[retry event:order.*]\n" /* 4 */
                     "max_age = 1h\n",         /* 5 */
           5, "unknown key 'max_age' in a retry section");
}

static void test_refuse_bad_values(void **state)
{
    (void)state;
    refuse(HOOKD_MIN "reconcile_interval = 5x\n", 4, "bad duration '5x': unknown unit 'x' (use ms, s, m, h, d)");
    refuse(HOOKD_MIN "lease = -5s\n", 4, "bad duration '-5s': must not be negative");
    refuse(HOOKD_MIN "lease = 1.5m\n", 4, "only whole numbers");
    refuse(HOOKD_MIN "lease = 30\n", 4, "bad duration '30': missing unit");
    refuse(HOOKD_MIN "lease = soon\n", 4, "bad duration 'soon'");
    refuse(HOOKD_MIN "allow_private_networks = maybe\n", 4, "bad boolean 'maybe': use true or false");
    refuse(HOOKD_MIN "max_body = 10XB\n", 4, "bad size '10XB': unknown unit 'XB'");
    refuse(HOOKD_MIN "max_body = -1\n", 4, "bad size '-1'");
    refuse(HOOKD_MIN "db_pool_size = 0\n", 4, "bad number '0': expected a positive whole number");
    refuse(HOOKD_MIN "batch_size = -3\n", 4, "bad number '-3'");
    refuse(HOOKD_MIN "max_inflight = 10k\n", 4, "bad number '10k'");
    refuse(HOOKD_MIN "roles = ingest, bogus\n", 4, "unknown role 'bogus' (use ingest, inbox, relay)");
    refuse(HOOKD_MIN "roles = ,\n", 4, "roles is empty");
    refuse(HOOKD_MIN "listen =\n", 4, "key 'listen' has an empty value");
    refuse(HOOKD_MIN "listen = ; only a comment\n", 4, "key 'listen' has an empty value");
    refuse(HOOKD_MIN "\n[retry]\njitter = 150%\n", 6, "bad percentage '150%': must be between 0 and 100");
    refuse(HOOKD_MIN "[retry]\njitter = lots\n", 5, "bad percentage 'lots'");
    refuse(HOOKD_MIN "[retry]\njitter = -5%\n", 5, "must be between 0 and 100");
    refuse(HOOKD_MIN "[retry]\njitter = 2.5%\n", 5, "only whole numbers");
    refuse(HOOKD_MIN "[retry]\nmax_attempts = 0\n", 5, "bad max_attempts '0': expected a whole number from 2 to 100");
    refuse(HOOKD_MIN "[retry]\nmax_attempts = 101\n", 5, "bad max_attempts '101'");
    refuse(HOOKD_MIN "[retry]\nmax_attempts = 1\n", 5, "bad max_attempts '1': expected a whole number from 2 to 100");
    refuse(HOOKD_MIN "[retry]\nschedule = 1m, 5x\n", 5, "schedule step 2: bad duration '5x'");
    refuse(HOOKD_MIN "[defer]\nmax_age = forever\n", 5, "bad duration 'forever'");
    refuse(HOOKD_MIN "[partner a]\nscheme = sha1\n", 5,
           "unknown scheme 'sha1' (use a preset: standard-webhooks, stripe, github, hmac-sha256, shopify");
    refuse(HOOKD_MIN "[partner a]\ntolerance = 5\n", 5, "bad duration '5': missing unit");
    refuse(HOOKD_MIN "[partner a]\nevent_id = xpath:/id\n", 5,
           "bad source 'xpath:/id': use json:PATH, header:NAME or digest");
    refuse(HOOKD_MIN "[partner a]\nevent_id = header:\n", 5, "bad source 'header:'");
    refuse(HOOKD_MIN "[partner a]\nentity_id = json:data..id\n", 5, "bad JSON path 'data..id'");
    refuse(HOOKD_MIN "[partner a]\nmax_body = big\n", 5, "bad size 'big'");
    refuse(HOOKD_MIN "[machine m]\non_conflict = retry\n", 5, "bad on_conflict 'retry': use dlq or ignore");
    refuse(HOOKD_MIN "[machine m]\ncreate = perhaps\n", 5, "bad boolean 'perhaps'");
    refuse(HOOKD_MIN "[machine m]\ntable = orders; drop\n", 5, "bad table 'orders;");
    refuse(HOOKD_MIN "[machine m]\nstate_column = st-ate\n", 5, "bad state_column 'st-ate'");
    refuse(HOOKD_MIN "[machine m]\ntransition go = a => b\n", 5, "bad transition 'a => b'");
    refuse(HOOKD_MIN "[machine m]\ntransition go = -> b\n", 5,
           "bad transition '-> b': expected FROM[, FROM...] -> TO");
    refuse(HOOKD_MIN "[machine m]\ntransition go = a, -> b\n", 5, "transition 'go' has an empty from-state");
}

/* Whole-file checks of single [hookd] keys. */
static void test_refuse_hookd_validation(void **state)
{
    (void)state;
    refuse("[hookd]\nredis = redis://r\n", 1, "[hookd] database is required");
    refuse("[hookd]\ndatabase = postgresql://h/db\n", 1, "[hookd] redis is required");
    refuse("", 1, "[hookd] database is required");
    refuse("[hookd]\ndatabase = env:\n", 2, "'env:' needs a variable name");
}

/* The same checks when the key stands on a later line: the message should
 * name the line of the offending key, not line 1. */
static void test_refuse_hookd_validation_names_key_line(void **state)
{
    (void)state;
    refuse(HOOKD_MIN "key_prefix = x\n"
                     "log_level = loud\n", /* 5 */
           5, "log_level 'loud' is not one of debug, info, warn, error");
    refuse(HOOKD_MIN "listen = 8080\n", 4, "listen '8080' must be HOST:PORT");
    /* a short admin token is refused, without echoing it */
    refuse(HOOKD_MIN "admin_token = 12345678901234567890123\n", 4,
           "[hookd] admin_token must be at least 24 characters (it has 23)");
    refuse(HOOKD_MIN "admin_listen = 8081\n", 4, "admin_listen '8081' must be HOST:PORT or off");
    refuse(HOOKD_MIN "admin_listen = 127.0.0.1:8080\n", 4, "admin_listen must differ from listen");
    refuse(HOOKD_MIN "admin_session_timeout = 10ms\n", 4, "admin_session_timeout must be at least 1s");
    refuse("[hookd]\n"
           "database = postgresql://h/db\n"
           "redis = http://r:6379\n", /* 3 */
           3,
           "redis: redis URL must start with redis://, rediss://, redis+sentinel://, redis+cluster:// or their "
           "rediss+ forms (scheme 'http' is unknown)");
    refuse("[hookd]\n"
           "database = postgresql://h/db\n"
           "redis = redis+sentinel://a:26379,/mymaster\n", /* 3 */
           3, "redis: redis sentinel URL has an empty host in its host list");
    refuse("[hookd]\n"
           "database = postgresql://h/db\n"
           "redis = redis+sentinel://:pw@/mymaster\n", /* 3 */
           3, "redis: redis sentinel URL has an empty host list");
    refuse("[hookd]\n"
           "database = postgresql://h/db\n"
           "redis = rediss+sentinel://a:26379,b:26379\n", /* 3 */
           3, "redis: redis sentinel URL needs the master's service name (…/SERVICE[/db])");
    refuse("[hookd]\n"
           "database = postgresql://h/db\n"
           "redis = redis://a:6379:1/0\n", /* 3 */
           3, "[hookd] redis: redis URL: ");
    refuse("[hookd]\n"
           "database = postgresql://h/db\n"
           "redis = redis+cluster://a:1,b:2/5\n", /* 3 */
           3, "redis: redis cluster URL: Redis Cluster has database 0 only");
    refuse("[hookd]\n"
           "database = postgresql://h/db\n"
           "redis = redis://r\n"
           "redis_ca_file = /etc/ca.pem\n", /* 4 */
           4, "need a rediss:// URL");
}

/* admin_listen = off turns the admin listener off; a token of
 * exactly 24 characters is enough. */
static void test_admin_listen_off_and_token_minimum(void **state)
{
    (void)state;
    struct hookd_config *c = load_ok(HOOKD_MIN "admin_listen = off\nadmin_token = 123456789012345678901234\n");
    assert_null(config_admin_listen(c));
    assert_string_equal(c->admin_token.text, "123456789012345678901234");
    config_unref(c);
}

static void test_refuse_duplicates(void **state)
{
    (void)state;
    refuse(HOOKD_MIN "lease = 5s\n"  /* 4 */
                     "lease = 6s\n", /* 5 */
           5, "duplicate key 'lease'");
    refuse(HOOKD_MIN "database = postgresql://other/db\n", 4, "duplicate key 'database'");
    refuse(HOOKD_MIN "[partner a]\n"     /* 4 */
                     "scheme = stripe\n" /* 5 */
                     "tolerance = 1m\n"  /* 6 */
                     "tolerance = 2m\n", /* 7 */
           7, "duplicate key 'tolerance'");
    refuse(HOOKD_MIN "[machine m]\n" /* 4 */
                     "initial = a\n" /* 5 */
                     "table = t\n"   /* 6 */
                     "table = t\n",  /* 7 */
           7, "duplicate key 'table'");
    refuse(HOOKD_MIN "[machine m]\n"             /* 4 */
                     "initial = a\n"             /* 5 */
                     "transition go = a -> b\n"  /* 6 */
                     "transition go = b -> c\n", /* 7 */
           7, "duplicate key 'transition go'");
    refuse(HOOKD_MIN "[retry]\nschedule = 1s\nschedule = 2s\n", 6, "duplicate key 'schedule'");
    refuse(HOOKD_MIN "[retry endpoint:e]\njitter = 1%\njitter = 2%\n", 6, "duplicate key 'jitter'");
    refuse(HOOKD_MIN "[defer]\nmax_age = 1h\nmax_age = 2h\n", 6, "duplicate key 'max_age'");
    /* Keys are per section: the same key in two sections is fine. */
    struct hookd_config *c = load_ok(HOOKD_MIN "[retry]\nschedule = 1s\n[defer]\nschedule = 2s\n"
                                               "[retry partner:p]\nschedule = 3s\n");
    assert_int_equal(c->retry.schedule_ms[0], 1 * S);
    assert_int_equal(c->defer.schedule_ms[0], 2 * S);
    assert_int_equal(c->overrides[0].policy.schedule_ms[0], 3 * S);
    config_unref(c);
}

static void test_refuse_duplicate_sections(void **state)
{
    (void)state;
    refuse(HOOKD_MIN "[hookd]\n", 4, "duplicate section [hookd]");
    refuse(HOOKD_MIN "[retry]\n[defer]\n[retry]\n", 6, "duplicate section [retry]");
    refuse(HOOKD_MIN "[defer]\nmax_age = 1h\n[defer]\n", 6, "duplicate section [defer]");
    refuse(HOOKD_MIN "[partner a]\n"                 /* 4 */
                     "scheme = stripe\n"             /* 5 */
                     "secret = s-0123456789abcdef\n" /* 6 */
                     "[partner a]\n",                /* 7 */
           7, "duplicate section [partner a] (first at line 4)");
    refuse(HOOKD_MIN "[machine m]\n"                 /* 4 */
                     "initial = a\n"                 /* 5 */
                     "transition go = a -> b\n"      /* 6 */
                     "[partner m]\n"                 /* 7 */
                     "scheme = github\n"             /* 8 */
                     "secret = s-0123456789abcdef\n" /* 9 */
                     "[machine m]\n",                /* 10 */
           10, "duplicate section [machine m] (first at line 4)");
    refuse(HOOKD_MIN "\n"                   /* 4 */
                     "[retry partner:x]\n"  /* 5 */
                     "schedule = 1s\n"      /* 6 */
                     "[retry event:x]\n"    /* 7 */
                     "[retry endpoint:x]\n" /* 8 */
                     "[retry partner:x]\n", /* 9 */
           9, "duplicate section [retry partner:x] (first at line 5)");
    refuse(HOOKD_MIN "[retry event:order.*]\n[retry event:order.*]\n", 5,
           "duplicate section [retry event:order.*] (first at line 4)");
}

static void test_refuse_bad_sections(void **state)
{
    (void)state;
    refuse(HOOKD_MIN "[bogus]\n", 4, "unknown section [bogus]");
    refuse(HOOKD_MIN "[thing x]\n", 4, "unknown section [thing x]");
    refuse(HOOKD_MIN "[partner]\n", 4, "unknown section [partner]");
    refuse(HOOKD_MIN "[machine]\n", 4, "unknown section [machine]");
    refuse(HOOKD_MIN "[retry slow]\n", 4, "bad section [retry slow]");
    refuse(HOOKD_MIN "[retry host:x]\n", 4, "bad section [retry host:x]");
    refuse(HOOKD_MIN "[retry partner:]\n", 4, "bad section [retry partner:]: empty name after ':'");
    refuse(HOOKD_MIN "[partner a/b]\n", 4, "bad partner name 'a/b'");
    refuse(HOOKD_MIN "[partner aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]\n", 4,
           "is longer than 50 characters");
    refuse(HOOKD_MIN "[machine m\n", 4, "section header without ']'");
    refuse(HOOKD_MIN "[machine m] extra\n", 4, "unexpected text after section header");
    /* A key before any section header. */
    refuse("lease = 5s\n" HOOKD_MIN, 1, "key 'lease' outside any section");
    refuse("; header comment\n\nlease = 5s\n" HOOKD_MIN, 3, "key 'lease' outside any section");
    /* A line inih cannot parse. */
    refuse(HOOKD_MIN "just some words\n", 4, "syntax error");
}

/* libinih keeps parsing after a syntax error, so a later bad value must not
 * displace the first error in the file. */
static void test_first_error_in_file_is_reported(void **state)
{
    (void)state;
    refuse(HOOKD_MIN "just some words\n" /* 4 */
                     "lease = 5x\n",     /* 5 */
           4, "syntax error");
}

static void test_refuse_machines(void **state)
{
    (void)state;
    refuse(HOOKD_MIN "[machine m]\n"                           /* 4 */
                     "initial = draft\n"                       /* 5 */
                     "transition a = draft -> open\n"          /* 6 */
                     "transition b = refunding -> refunded\n", /* 7 */
           4, "[machine m]: machine 'm': state 'refunding' is unreachable from initial state 'draft'");
    refuse(HOOKD_MIN "[machine m]\n"               /* 4 */
                     "initial = a\n"               /* 5 */
                     "transition t = a, b -> b\n", /* 6 */
           6, "transition 't' lists its target state 'b' as a from-state");
    refuse(HOOKD_MIN "[machine a]\n"                     /* 4 */
                     "initial = x\n"                     /* 5 */
                     "transition shared.evt = x -> y\n"  /* 6 */
                     "[machine b]\n"                     /* 7 */
                     "initial = p\n"                     /* 8 */
                     "transition own.evt = p -> q\n"     /* 9 */
                     "transition shared.evt = q -> r\n", /* 10 */
           7, "event type 'shared.evt' is named by [machine a] and [machine b]");
    refuse(HOOKD_MIN "[machine m]\ntransition go = a -> b\n", 4, "[machine m]: machine 'm' has no initial state");
    refuse(HOOKD_MIN "[machine m]\ninitial = a\n", 4, "machine 'm' has no transitions");
    refuse(HOOKD_MIN "[machine m]\ninitial = z\ntransition go = a -> b\n", 4,
           "initial state 'z' is not named by any transition");
    refuse(HOOKD_MIN "[machine m]\n"            /* 4 */
                     "initial = a\n"            /* 5 */
                     "transition go = a -> b\n" /* 6 */
                     "emit stop = m.stopped\n", /* 7 */
           4, "[machine m]: 'emit stop' names no transition of this machine");
    refuse(HOOKD_MIN "[machine m]\n"             /* 4 */
                     "initial = a\n"             /* 5 */
                     "state_column = s\n"        /* 6 */
                     "transition go = a -> b\n", /* 7 */
           4, "id_column, state_column and version_column need 'table'");
    refuse(HOOKD_MIN "[machine m]\n"                   /* 4 */
                     "initial = a\n"                   /* 5 */
                     "transition go = a, c, a -> b\n", /* 6 */
           6, "lists from-state 'a' twice");
}

static void test_refuse_retry_policies(void **state)
{
    (void)state;
    /* An empty schedule, in both spellings. */
    refuse(HOOKD_MIN "[retry]\nschedule =\n", 5, "key 'schedule' has an empty value");
    refuse(HOOKD_MIN "[retry]\nschedule = ,\n", 5, "schedule step 1 is empty");
    refuse(HOOKD_MIN "[retry]\nschedule = 1s,,2s\n", 5, "schedule step 2 is empty");
    refuse(HOOKD_MIN "[retry]\nschedule = 1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s\nmax_attempts = 50\n", 5,
           "schedule has more than 16 steps");
    /* Overrides: each validated with the keys it inherits. */
    refuse(HOOKD_MIN "[retry partner:stripe]\n"     /* 4 */
                     "schedule = 1s, 2s, 3s, 4s\n", /* 5 */
           4, "[retry partner:stripe]: schedule has 4 steps but max_attempts = 4 allows only 3 waits");
    refuse(HOOKD_MIN "[retry]\n"               /* 4 */
                     "schedule = 1s\n"         /* 5 */
                     "max_attempts = 2\n"      /* 6 */
                     "[retry event:order.*]\n" /* 7 */
                     "schedule = 1s, 2s\n",    /* 8 */
           7, "[retry event:order.*]: schedule has 2 steps but max_attempts = 2 allows only 1 waits");
    refuse(HOOKD_MIN "[retry endpoint:slow]\n" /* 4 */
                     "max_attempts = 2\n",     /* 5 */
           4, "[retry endpoint:slow]: schedule has 3 steps but max_attempts = 2 allows only 1 waits");
    refuse(HOOKD_MIN "[retry endpoint:slow]\n" /* 4 */
                     "jitter = 101%\n",        /* 5 */
           5, "bad percentage '101%'");
    refuse(HOOKD_MIN "[retry endpoint:slow]\n" /* 4 */
                     "schedule = 1s, -2s\n",   /* 5 */
           5, "schedule step 2: bad duration '-2s': must not be negative");
    /* A valid combination: 3 waits for 4 attempts, inherited from [retry]. */
    struct hookd_config *c = load_ok(HOOKD_MIN "[retry]\nmax_attempts = 6\n"
                                               "[retry partner:p]\nschedule = 1s, 2s, 3s, 4s, 5s\n");
    assert_int_equal(c->overrides[0].policy.nsteps, 5);
    assert_int_equal(c->overrides[0].policy.max_attempts, 6);
    config_unref(c);
}

/* The endpoint circuit keys: defaults, inheritance from [retry],
 * and the sections they may not appear in. */
static void test_retry_circuit_keys(void **state)
{
    (void)state;
    struct hookd_config *c = load_ok(HOOKD_MIN "[retry]\ncircuit_probe = 2s\n"
                                               "[retry endpoint:sink]\ncircuit = off\n"
                                               "[retry endpoint:other]\ncircuit_failures = 3\n"
                                               "[retry endpoint:quick]\ncircuit_disable_after = 90s\n"
                                               "[retry endpoint:never]\ncircuit_disable_after = off\n");
    assert_true(c->retry.circuit);
    assert_int_equal(c->retry.circuit_failures, 20);
    assert_int_equal(c->retry.circuit_probe_ms, 2000);
    const struct backoff_policy *sink = config_retry_for_endpoint(c, "sink");
    const struct backoff_policy *other = config_retry_for_endpoint(c, "other");
    assert_false(sink->circuit);
    assert_int_equal(sink->circuit_probe_ms, 2000);
    assert_true(other->circuit);
    assert_int_equal(other->circuit_failures, 3);
    /* circuit_disable_after: 5 days by default (Svix), per endpoint, off = never */
    assert_int_equal(other->circuit_disable_after_ms, 5LL * 24 * 3600 * 1000);
    assert_int_equal(config_retry_for_endpoint(c, "quick")->circuit_disable_after_ms, 90000);
    assert_int_equal(config_retry_for_endpoint(c, "never")->circuit_disable_after_ms, 0);
    char *printed = print_config(c);
    assert_contains(printed, "[retry endpoint:sink]\nschedule = 1m, 5m, 15m\nmax_attempts = 4\njitter = 10%\n"
                             "circuit = off\ncircuit_failures = 20\ncircuit_probe = 2s\ncircuit_disable_after = 5d\n");
    assert_contains(printed, "[retry endpoint:never]\nschedule = 1m, 5m, 15m\nmax_attempts = 4\njitter = 10%\n"
                             "circuit = on\ncircuit_failures = 20\ncircuit_probe = 2s\ncircuit_disable_after = off\n");
    free(printed);
    config_unref(c);
    refuse(HOOKD_MIN "[retry endpoint:e]\ncircuit = maybe\n", 5, "bad circuit 'maybe': expected on or off");
    refuse(HOOKD_MIN "[retry endpoint:e]\ncircuit_failures = 0\n", 5, "bad circuit_failures '0'");
    refuse(HOOKD_MIN "[retry]\ncircuit_probe = 1ms\n", 5, "bad circuit_probe '1ms': expected 10ms to 24h");
    refuse(HOOKD_MIN "[retry endpoint:e]\ncircuit_disable_after = 10ms\n", 5,
           "bad circuit_disable_after '10ms': expected 1s to 365d, or off");
    refuse(HOOKD_MIN "[retry event:x.*]\ncircuit_disable_after = 1d\n", 4,
           "[retry event:x.*]: circuit keys belong in [retry] or [retry endpoint:NAME]");
    refuse(HOOKD_MIN "[retry partner:p]\ncircuit = off\n", 4,
           "[retry partner:p]: circuit keys belong in [retry] or [retry endpoint:NAME]");
}

/* [retry] errors found by the whole-file check should name the [retry]
 * header (as the override sections do), and [defer] errors the [defer]
 * header, not line 1. */
static void test_refuse_retry_names_section_line(void **state)
{
    (void)state;
    refuse(HOOKD_MIN "\n"                           /* 4 */
                     "[retry]\n"                    /* 5 */
                     "schedule = 1s, 2s, 3s, 4s\n", /* 6 */
           5, "[retry]: schedule has 4 steps but max_attempts = 4 allows only 3 waits");
    refuse(HOOKD_MIN "[retry]\n"           /* 4 */
                     "max_attempts = 3\n", /* 5 */
           4, "[retry]: schedule has 3 steps but max_attempts = 3 allows only 2 waits");
    refuse(HOOKD_MIN "[defer]\n"       /* 4 */
                     "max_age = 0s\n", /* 5 */
           4, "[defer]: max_age must be greater than 0");
}

static void test_refuse_partners(void **state)
{
    (void)state;
    refuse(HOOKD_MIN "[partner a]\n"                  /* 4 */
                     "secret = s-0123456789abcdef\n", /* 5 */
           4, "[partner a] has no scheme");
    refuse(HOOKD_MIN "[partner a]\n"      /* 4 */
                     "scheme = stripe\n", /* 5 */
           4, "[partner a] has no secret");
    refuse(HOOKD_MIN "[partner a]\n"                 /* 4 */
                     "scheme = hmac-sha256\n"        /* 5 */
                     "secret = s-0123456789abcdef\n" /* 6 */
                     "event_id = json:id\n",         /* 7 */
           4, "[partner a] uses scheme hmac-sha256 and needs 'header'");
    refuse(HOOKD_MIN "[partner a]\n"                 /* 4 */
                     "scheme = hmac-sha256\n"        /* 5 */
                     "secret = s-0123456789abcdef\n" /* 6 */
                     "header = X-Signature\n",       /* 7 */
           4, "[partner a] needs 'event_id' (json:PATH, header:NAME or digest)");
    refuse(HOOKD_MIN "[machine order]\n"              /* 4 */
                     "initial = a\n"                  /* 5 */
                     "transition order.go = a -> b\n" /* 6 */
                     "[partner a]\n"                  /* 7 */
                     "scheme = stripe\n"              /* 8 */
                     "secret = s-0123456789abcdef\n"  /* 9 */
                     "entity_type = invoice\n",       /* 10 */
           7, "[partner a] names entity_type 'invoice', but there is no [machine invoice]");
    refuse(HOOKD_MIN "[partner a]\n"                                 /* 4 */
                     "scheme = standard-webhooks\n"                  /* 5 */
                     "secret = whsec_YS1zZWNyZXQtb2YtMTYtYnl0ZXM=\n" /* 6 */
                     "secret = whsec_\n",                            /* 7 */
           4, "[partner a] secret 2: standard-webhooks secret has nothing after the whsec_ prefix");
    refuse(HOOKD_MIN "[partner a]\n"
                     "scheme = github\n"
                     "secret = s1\nsecret = s2\nsecret = s3\nsecret = s4\n" /* 6-9 */
                     "secret = s5\nsecret = s6\nsecret = s7\nsecret = s8\n" /* 10-13 */
                     "secret = s9\n",                                       /* 14 */
           14, "too many secrets (at most 8)");
}

/* [hookd] redact_headers: globs over header names,
 * any letter case; the default covers credentials and signatures. */
static void test_redact_headers(void **state)
{
    (void)state;
    struct hookd_config *c = load_ok(HOOKD_MIN);
    static const char *const redacted[] =
        {"Authorization",   "Cookie",  "X-Api-Key",       "X-Auth-Token",      "X-Twilio-Signature",
         "X-Hub-Signature", "Api-Key", "X-Client-Secret", "X-Slack-Signature", "Proxy-Authorization",
         "X-Session-Id"};
    for (size_t i = 0; i < sizeof redacted / sizeof redacted[0]; i++)
        if (!config_header_redacted(c, redacted[i]))
            fail_msg("not redacted by default: %s", redacted[i]);
    static const char *const kept[] = {"Content-Type", "User-Agent", "X-GitHub-Event", "X-Request-Id", "webhook-id"};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        if (config_header_redacted(c, kept[i]))
            fail_msg("redacted by default: %s", kept[i]);
    config_unref(c);

    c = load_ok(HOOKD_MIN "redact_headers = X-Tenant, x-internal-*\n");
    assert_int_equal(c->nredact, 2);
    assert_true(config_header_redacted(c, "x-tenant"));
    assert_true(config_header_redacted(c, "X-Internal-Route"));
    assert_false(config_header_redacted(c, "Authorization")); /* the list replaces the default */
    config_unref(c);

    refuse(HOOKD_MIN "redact_headers = authorization, x api key\n", 4,
           "[hookd] redact_headers: 'x api key' is not a header name glob");
}

/* content_dedup follows what the signature covers. */
static void test_content_dedup_follows_what_is_signed(void **state)
{
    (void)state;
    struct hookd_config *c = load_ok(
        HOOKD_MIN "[partner sw]\nscheme = standard-webhooks\nsecret = whsec_MDEyMzQ1Njc4OWFiY2RlZg==\n"
                  "[partner sw-hdr]\nscheme = standard-webhooks\nsecret = whsec_MDEyMzQ1Njc4OWFiY2RlZg==\n"
                  "event_type = header:X-Type\n"
                  "[partner st]\nscheme = stripe\nsecret = 0123456789abcdef\n"
                  "[partner st-hdr]\nscheme = stripe\nsecret = 0123456789abcdef\n"
                  "entity_id = header:X-Entity\n"
                  "[partner gh]\nscheme = github\nsecret = 0123456789abcdef\n"
                  "[partner gh-json]\nscheme = github\nsecret = 0123456789abcdef\n"
                  "event_id = json:id\nevent_type = json:type\n"
                  "[partner mac]\nscheme = hmac-sha256\nsecret = 0123456789abcdef\n"
                  "header = X-Sig\nevent_id = json:id\n");
    assert_false(config_partner(c, "sw")->content_dedup);
    assert_true(config_partner(c, "sw-hdr")->content_dedup);
    assert_false(config_partner(c, "st")->content_dedup);
    assert_true(config_partner(c, "st-hdr")->content_dedup);
    assert_true(config_partner(c, "gh")->content_dedup);
    assert_true(config_partner(c, "gh-json")->content_dedup); /* no timestamp */
    assert_true(config_partner(c, "mac")->content_dedup);
    config_unref(c);
}

/* A partner key under 16 bytes is refused, counted after decoding: for
 * standard-webhooks the base64 text is longer than the key it holds. */
static void test_refuse_short_partner_secrets(void **state)
{
    (void)state;
    refuse(HOOKD_MIN "[partner gh]\n"    /* 4 */
                     "scheme = github\n" /* 5 */
                     "secret = x\n",     /* 6 */
           4, "[partner gh] secret 1 is 1 bytes; at least 16 are required");
    refuse(HOOKD_MIN "[partner mac]\n"
                     "scheme = hmac-sha256\n"
                     "header = X-Signature\n"
                     "event_id = json:id\n"
                     "secret = 0123456789abcdef\n"
                     "secret = 0123456789abcde\n",
           4, "[partner mac] secret 2 is 15 bytes; at least 16 are required");
    /* "whsec_" + 20 base64 characters: 15 bytes of key */
    refuse(HOOKD_MIN "[partner sw]\n"
                     "scheme = standard-webhooks\n"
                     "secret = whsec_MDEyMzQ1Njc4OWFiY2Rl\n",
           4, "[partner sw] secret 1 is 15 bytes after base64 decoding; at least 16 are required");
    refuse(HOOKD_MIN "[partner st]\n"
                     "scheme = stripe\n"
                     "secret = whsec_short\n",
           4, "[partner st] secret 1 is 11 bytes; at least 16 are required");
    struct hookd_config *c = load_ok(HOOKD_MIN "[partner gh]\nscheme = github\nsecret = 0123456789abcdef\n"
                                               "[partner sw]\nscheme = standard-webhooks\n"
                                               "secret = whsec_MDEyMzQ1Njc4OWFiY2RlZg==\n");
    assert_int_equal(config_partner(c, "gh")->keys[0].len, 16);
    assert_int_equal(config_partner(c, "sw")->keys[0].len, 16);
    config_unref(c);
}

static void test_refuse_long_line(void **state)
{
    (void)state;
    char text[1024], pad[400];

    /* The reader takes lines of up to 198 characters (libinih's 200-byte
     * buffer less newline and NUL): 198 loads, 199 is refused. */
    memset(pad, 'k', sizeof pad);
    snprintf(text, sizeof text, HOOKD_MIN "key_prefix = %.*s\n", 198 - 13, pad);
    struct hookd_config *c = load_ok(text);
    assert_int_equal(strlen(c->key_prefix), 198 - 13);
    config_unref(c);

    snprintf(text, sizeof text, HOOKD_MIN "lease = 1s\nkey_prefix = %.*s\n", 199 - 13, pad);
    refuse(text, 5, "line is longer than 198 characters");
    snprintf(text, sizeof text, HOOKD_MIN "; %.*s\nlease = 1s\n", 300, pad);
    refuse(text, 4, "line is longer than 198 characters");
    /* The last line, without a newline. */
    snprintf(text, sizeof text, HOOKD_MIN "key_prefix = %.*s", 250, pad);
    refuse(text, 4, "line is longer than 198 characters");
}

static void test_missing_file(void **state)
{
    (void)state;
    char missing[200];
    snprintf(missing, sizeof missing, "%s/no-such.conf", dir);
    err[0] = '\0';
    assert_null(config_load(missing, err, sizeof err));
    assert_contains(err, missing);
    assert_contains(err, "cannot open");
}

/* The duplicate-key check must neither confuse two different keys that
 * share a long prefix nor miss a long key given twice (event types, and so
 * `transition EVENT` / `emit EVENT` keys, can be long). */
#define LONG_EVENT "com.example.billing.subscription.invoice.payment_succeeded"
static void test_long_keys_and_duplicates(void **state)
{
    (void)state;
    struct hookd_config *c = load_ok(HOOKD_MIN "[machine billing]\n"
                                               "initial = open\n"
                                               "transition " LONG_EVENT ".v1 = open -> paid\n"
                                               "transition " LONG_EVENT ".v2 = open -> paid\n"
                                               "emit " LONG_EVENT ".v1 = billing.paid.v1\n"
                                               "emit " LONG_EVENT ".v2 = billing.paid.v2\n");
    assert_int_equal(machine_ntransitions(c->machines[0].machine), 2);
    assert_int_equal(c->machines[0].nemits, 2);
    config_unref(c);

    refuse(HOOKD_MIN "[machine billing]\n"                           /* 4 */
                     "initial = open\n"                              /* 5 */
                     "transition " LONG_EVENT ".v1 = open -> paid\n" /* 6 */
                     "emit " LONG_EVENT ".v1 = billing.paid\n"       /* 7 */
                     "emit " LONG_EVENT ".v1 = billing.paid\n",      /* 8 */
           8, "duplicate key 'emit " LONG_EVENT ".v1'");
    /* The same with a short key: refused. */
    refuse(HOOKD_MIN "[machine billing]\n"              /* 4 */
                     "initial = open\n"                 /* 5 */
                     "transition paid = open -> paid\n" /* 6 */
                     "emit paid = billing.paid\n"       /* 7 */
                     "emit paid = billing.paid\n",      /* 8 */
           8, "duplicate key 'emit paid'");
}

/* A section with more keys than the duplicate tracker holds must still
 * refuse a duplicate key after them. */
static void test_duplicate_key_after_many_keys(void **state)
{
    (void)state;
    size_t cap = 16384, n = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    n += (size_t)snprintf(text + n, cap - n, HOOKD_MIN "[machine chain]\ninitial = s0\n"); /* 4, 5 */
    for (int i = 1; i <= 63; i++)                                                          /* 6..68 */
        n += (size_t)snprintf(text + n, cap - n, "transition e%d = s%d -> s%d\n", i, i - 1, i);
    n += (size_t)snprintf(text + n, cap - n, "on_conflict = dlq\n");    /* 69 */
    n += (size_t)snprintf(text + n, cap - n, "on_conflict = ignore\n"); /* 70 */
    assert_true(n < cap);
    struct hookd_config *c = load(text);
    free(text);
    if (c) {
        enum conflict_policy got = c->machines[0].on_conflict;
        config_unref(c);
        fail_msg("loaded with on_conflict = %s; want \"duplicate key 'on_conflict'\" at line 70",
                 got == CONFLICT_IGNORE ? "ignore (last one won)" : "dlq");
    }
    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s:70: duplicate key 'on_conflict'", path);
    assert_string_equal(err, prefix);
}

/* ---- secrets --------------------------------------------------------------- */

static void test_env_secrets_resolve_and_print_by_name(void **state)
{
    (void)state;
    setenv("HOOKD_UT_DB", "postgresql://hookd:db-pass-9f2@db.internal/hookd", 1);
    setenv("HOOKD_UT_TOKEN", "token-value-4c1-0123456789abc", 1);
    setenv("HOOKD_UT_STRIPE", "whsec_stripe-value-77a", 1);
    struct hookd_config *c = load_ok("[hookd]\n"
                                     "database = env:HOOKD_UT_DB\n"
                                     "redis = redis://127.0.0.1:6379/0\n"
                                     "admin_token = env:HOOKD_UT_TOKEN\n"
                                     "alert_webhook = https://alerts.example/hook?key=alert-literal-5e5\n"
                                     "[partner stripe]\n"
                                     "scheme = stripe\n"
                                     "secret = env:HOOKD_UT_STRIPE\n"
                                     "secret = literal-secret-31d\n");
    assert_string_equal(c->database.text, "postgresql://hookd:db-pass-9f2@db.internal/hookd");
    assert_string_equal(c->database.env, "HOOKD_UT_DB");
    assert_string_equal(c->admin_token.text, "token-value-4c1-0123456789abc");
    assert_string_equal(c->admin_token.env, "HOOKD_UT_TOKEN");
    assert_null(c->alert_webhook.env);
    const struct partner_config *p = config_partner(c, "stripe");
    assert_int_equal(p->nsecrets, 2);
    assert_string_equal(p->secrets[0].text, "whsec_stripe-value-77a");
    assert_string_equal(p->secrets[0].env, "HOOKD_UT_STRIPE");
    assert_string_equal(p->secrets[1].text, "literal-secret-31d");
    assert_null(p->secrets[1].env);
    assert_int_equal(p->keys[1].len, strlen("literal-secret-31d"));

    char *out = print_config(c);
    assert_contains(out, "database = env:HOOKD_UT_DB");
    assert_contains(out, "admin_token = env:HOOKD_UT_TOKEN");
    assert_contains(out, "alert_webhook = <redacted>\n");
    assert_contains(out, "secret = env:HOOKD_UT_STRIPE");
    assert_contains(out, "secret = <redacted>\n");
    assert_lacks(out, "db-pass-9f2");
    assert_lacks(out, "db.internal"); /* an env URL prints by name only */
    assert_lacks(out, "token-value-4c1-0123456789abc");
    assert_lacks(out, "alert-literal-5e5");
    assert_lacks(out, "stripe-value-77a");
    assert_lacks(out, "literal-secret-31d");
    free(out);
    config_unref(c);
    unsetenv("HOOKD_UT_DB");
    unsetenv("HOOKD_UT_TOKEN");
    unsetenv("HOOKD_UT_STRIPE");
}

static void test_env_secret_unset_or_empty_is_refused(void **state)
{
    (void)state;
    unsetenv("HOOKD_UT_MISSING");
    refuse("[hookd]\n"
           "database = env:HOOKD_UT_MISSING\n",
           2, "environment variable HOOKD_UT_MISSING is not set or empty");
    refuse(HOOKD_MIN "admin_token = env:HOOKD_UT_MISSING\n", 4,
           "environment variable HOOKD_UT_MISSING is not set or empty");
    refuse(HOOKD_MIN "[partner a]\nscheme = github\nsecret = s1\nsecret = env:HOOKD_UT_MISSING\n", 7,
           "environment variable HOOKD_UT_MISSING is not set or empty");
    setenv("HOOKD_UT_EMPTY", "", 1);
    refuse(HOOKD_MIN "alert_webhook = env:HOOKD_UT_EMPTY\n", 4,
           "environment variable HOOKD_UT_EMPTY is not set or empty");
    unsetenv("HOOKD_UT_EMPTY");
    refuse(HOOKD_MIN "admin_token = env:\n", 4, "'env:' needs a variable name");
}

static void test_database_url_password_redacted(void **state)
{
    (void)state;
    struct hookd_config *c = load_ok("[hookd]\n"
                                     "database = postgresql://hookd:pw-8d1e@db.example:5432/hookd\n"
                                     "redis = redis://:redis-pw-0b3@cache.example:6379/0\n");
    assert_string_equal(c->database.text, "postgresql://hookd:pw-8d1e@db.example:5432/hookd");
    char *out = print_config(c);
    assert_contains(out, "database = postgresql://hookd:<redacted>@db.example:5432/hookd\n");
    assert_contains(out, "redis = redis://:<redacted>@cache.example:6379/0\n");
    assert_lacks(out, "pw-8d1e");
    assert_lacks(out, "redis-pw-0b3");
    free(out);
    config_unref(c);

    /* Without a password the URL prints whole. */
    c = load_ok(HOOKD_MIN);
    out = print_config(c);
    assert_contains(out, "database = postgresql://hookd@127.0.0.1/hookd\n");
    assert_contains(out, "redis = redis://127.0.0.1:6379/0\n");
    free(out);
    config_unref(c);
}

/* libpq also takes the password as a URI parameter or in a key=value
 * conninfo string; config_print() must not show it there either. */
/* The line config_print() writes for key (e.g. "\ndatabase = ", the
 * newline anchoring it to a line start), without newlines; caller frees. */
static char *printed_line(const char *config_text, const char *key)
{
    struct hookd_config *c = load_ok(config_text);
    char *out = print_config(c);
    config_unref(c);
    char *line = strstr(out, key);
    if (line && *key == '\n')
        line++;
    char *copy = line ? strndup(line, strcspn(line, "\n")) : strdup("");
    free(out);
    return copy;
}

static void test_database_password_in_params_redacted(void **state)
{
    (void)state;
    char *query = printed_line("[hookd]\n"
                               "database = postgresql://hookd@db.example/hookd?sslmode=require&password=qp-6a0c\n"
                               "redis = redis://127.0.0.1:6379/0\n",
                               "\ndatabase = ");
    char *conninfo = printed_line("[hookd]\n"
                                  "database = host=db.example user=hookd password=kv-91b7 dbname=hookd\n"
                                  "redis = redis://127.0.0.1:6379/0\n",
                                  "\ndatabase = ");
    bool query_host = strstr(query, "db.example") != NULL, query_leak = strstr(query, "qp-6a0c") != NULL;
    bool conninfo_leak = strstr(conninfo, "kv-91b7") != NULL;
    if (query_leak)
        print_message("printed: %s\n", query);
    if (conninfo_leak)
        print_message("printed: %s\n", conninfo);
    free(query);
    free(conninfo);
    assert_true(query_host); /* the rest of the URL stays visible */
    assert_false(query_leak);
    assert_false(conninfo_leak);
}

/* ---- overrides ------------------------------------------------------------- */

static void test_retry_overrides(void **state)
{
    (void)state;
    struct hookd_config *c = load_ok(HOOKD_MIN "[retry]\n" /* 4 */
                                               "schedule = 10s, 20s\n"
                                               "max_attempts = 5\n"
                                               "jitter = 0%\n"
                                               "[retry partner:stripe]\n" /* 8 */
                                               "max_attempts = 3\n"
                                               "[retry event:order.*]\n" /* 10 */
                                               "schedule = 1s\n"
                                               "[retry event:order.pa*]\n" /* 12 */
                                               "schedule = 2s\n"
                                               "jitter = 50%\n"
                                               "[retry event:*]\n" /* 15 */
                                               "schedule = 3s\n"
                                               "[retry endpoint:slow]\n" /* 17 */
                                               "schedule = 1h\n"
                                               "[retry endpoint:sl*]\n" /* 19 */
                                               "schedule = 2h\n"
                                               "max_attempts = 2\n");
    assert_int_equal(c->noverrides, 6);

    /* Unset keys come from [retry]. */
    const struct retry_override *o = &c->overrides[0];
    assert_int_equal(o->scope, RETRY_PARTNER);
    assert_string_equal(o->pattern, "stripe");
    assert_int_equal(o->line, 8);
    const int64_t base[] = {10 * S, 20 * S};
    assert_schedule(o->policy.schedule_ms, o->policy.nsteps, base, 2);
    assert_int_equal(o->policy.max_attempts, 3);
    assert_int_equal(o->policy.jitter_pct, 0);
    o = &c->overrides[1];
    assert_int_equal(o->scope, RETRY_EVENT);
    assert_int_equal(o->policy.nsteps, 1);
    assert_int_equal(o->policy.schedule_ms[0], 1 * S);
    assert_int_equal(o->policy.max_attempts, 5);
    assert_int_equal(o->policy.jitter_pct, 0);
    assert_int_equal(c->overrides[2].policy.jitter_pct, 50);
    assert_int_equal(c->overrides[5].scope, RETRY_ENDPOINT);
    assert_int_equal(c->overrides[5].policy.max_attempts, 2);
    assert_int_equal(c->overrides[5].policy.jitter_pct, 0);
    /* [retry] itself is unchanged by the overrides. */
    assert_schedule(c->retry.schedule_ms, c->retry.nsteps, base, 2);
    assert_int_equal(c->retry.max_attempts, 5);

    /* Event overrides beat partner overrides; the longest matching glob wins. */
    assert_ptr_equal(config_retry_for_inbox(c, "stripe", "order.paid"), &c->overrides[2].policy);
    assert_ptr_equal(config_retry_for_inbox(c, "stripe", "order.shipped"), &c->overrides[1].policy);
    assert_ptr_equal(config_retry_for_inbox(c, "github", "order.pa"), &c->overrides[2].policy);
    assert_ptr_equal(config_retry_for_inbox(c, "stripe", "invoice.paid"), &c->overrides[3].policy);
    assert_ptr_equal(config_retry_for_inbox(c, "stripe", NULL), &c->overrides[0].policy);
    assert_ptr_equal(config_retry_for_inbox(c, "github", NULL), &c->retry);
    assert_ptr_equal(config_retry_for_inbox(c, NULL, NULL), &c->retry);
    /* Partner names are matched whole, not as prefixes. */
    assert_ptr_equal(config_retry_for_inbox(c, "stripe2", NULL), &c->retry);
    /* Endpoint overrides, same rule; they never apply to inbox events. */
    assert_ptr_equal(config_retry_for_endpoint(c, "slow"), &c->overrides[4].policy);
    assert_ptr_equal(config_retry_for_endpoint(c, "slower"), &c->overrides[5].policy);
    assert_ptr_equal(config_retry_for_endpoint(c, "fast"), &c->retry);
    assert_ptr_equal(config_retry_for_endpoint(c, NULL), &c->retry);
    assert_ptr_equal(config_retry_for_endpoint(c, "order.paid"), &c->retry);

    char *out = print_config(c);
    assert_contains(out, "\n[retry partner:stripe]\nschedule = 10s, 20s\nmax_attempts = 3\njitter = 0%\n");
    assert_contains(out, "\n[retry endpoint:sl*]\nschedule = 2h\nmax_attempts = 2\njitter = 0%\n");
    free(out);
    config_unref(c);

    /* Without any event override, a partner override applies to all its events. */
    c = load_ok(HOOKD_MIN "[retry partner:stripe]\nschedule = 7s\n[retry partner:str*]\nschedule = 8s\n");
    assert_int_equal(config_retry_for_inbox(c, "stripe", "order.paid")->schedule_ms[0], 7 * S);
    assert_int_equal(config_retry_for_inbox(c, "strong", "order.paid")->schedule_ms[0], 8 * S);
    assert_int_equal(config_retry_for_inbox(c, "stripe", "order.paid")->max_attempts, 4);
    config_unref(c);
}

static void test_glob_match(void **state)
{
    (void)state;
    static const struct {
        const char *pat, *text;
        bool want;
    } cases[] = {
        {"*", "", true},
        {"*", "order.paid", true},
        {"order.*", "order.paid", true},
        {"order.*", "order.", true},
        {"order.*", "order", false},
        {"order.*", "orders.paid", false},
        {"*.paid", "order.paid", true},
        {"*.paid", "order.paid.v2", false},
        {"order.paid", "order.paid", true},
        {"order.paid", "order.paid2", false},
        {"order.paid", "order.pai", false},
        {"a*b*c", "aXbYc", true},
        {"a*b*c", "abc", true},
        {"a*b*c", "aXbY", false},
        {"a*a", "a", false},
        {"a*a", "aa", true},
        {"*a", "baaa", true},
        {"**", "abc", true},
        {"", "", true},
        {"", "a", false},
        {"a*", "", false},
        {"*ab", "aab", true},
        {"*.*.*", "a.b.c", true},
        {"*.*.*", "a.b", false},
        {"Order.*", "order.paid", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (config_glob_match(cases[i].pat, cases[i].text) != cases[i].want)
            fail_msg("glob '%s' on '%s': want %s", cases[i].pat, cases[i].text, cases[i].want ? "match" : "no match");
}

/* ---- partners and machines ------------------------------------------------- */

static const char ROUTING[] = HOOKD_MIN "[machine order]\n"
                                        "initial = draft\n"
                                        "transition order.paid = draft -> paid\n"
                                        "transition order.shipped = paid -> shipped\n"
                                        "emit order.paid = order.confirmed\n"
                                        "[machine invoice]\n"
                                        "table = billing.invoices\n"
                                        "initial = open\n"
                                        "on_conflict = ignore\n"
                                        "transition invoice.paid = open -> paid\n"
                                        "[machine ticket]\n"
                                        "table = tickets\n"
                                        "id_column = ticket_id\n"
                                        "state_column = phase\n"
                                        "version_column = rev\n"
                                        "create = true\n"
                                        "initial = new\n"
                                        "transition ticket.closed = new -> closed\n"
                                        "[partner stripe]\n"
                                        "scheme = stripe\n"
                                        "secret = whsec_abc_0123456789\n"
                                        "entity_id = json:data.object.id\n"
                                        "[partner gh]\n"
                                        "scheme = github\n"
                                        "secret = ghsecret-0123456789\n"
                                        "entity_type = invoice\n"
                                        "tolerance = 30s\n"
                                        "[partner sw]\n"
                                        "scheme = Standard-Webhooks\n"
                                        "secret = whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n"
                                        "[partner mac]\n"
                                        "scheme = hmac-sha256\n"
                                        "secret = macsecret-0123456789\n"
                                        "header = X-Signature\n"
                                        "event_id = header:X-Event-Id\n"
                                        "event_type = json:meta.kind\n";

static void test_machine_routing_and_defaults(void **state)
{
    (void)state;
    struct hookd_config *c = load_ok(ROUTING);
    assert_int_equal(c->nmachines, 3);

    const struct machine_config *order = config_machine(c, "order");
    const struct machine_config *invoice = config_machine(c, "invoice");
    const struct machine_config *ticket = config_machine(c, "ticket");
    assert_non_null(order);
    assert_non_null(invoice);
    assert_non_null(ticket);
    assert_null(config_machine(c, "ghost"));

    /* No table: the built-in hookd_entities table, created on first event. */
    assert_true(order->builtin);
    assert_string_equal(order->table, "hookd_entities");
    assert_string_equal(order->id_column, "entity_id");
    assert_string_equal(order->state_column, "state");
    assert_string_equal(order->version_column, "version");
    assert_int_equal(order->create, 1);
    assert_int_equal(order->on_conflict, CONFLICT_DLQ);
    assert_int_equal(order->line, 4);
    assert_int_equal(order->nemits, 1);
    assert_string_equal(order->emits[0].event, "order.paid");
    assert_string_equal(order->emits[0].emit_type, "order.confirmed");
    assert_string_equal(machine_initial(order->machine), "draft");

    /* A user table: not created, id/status columns by default. */
    assert_false(invoice->builtin);
    assert_string_equal(invoice->table, "billing.invoices");
    assert_string_equal(invoice->id_column, "id");
    assert_string_equal(invoice->state_column, "status");
    assert_null(invoice->version_column);
    assert_int_equal(invoice->create, 0);
    assert_int_equal(invoice->on_conflict, CONFLICT_IGNORE);

    assert_false(ticket->builtin);
    assert_string_equal(ticket->id_column, "ticket_id");
    assert_string_equal(ticket->state_column, "phase");
    assert_string_equal(ticket->version_column, "rev");
    assert_int_equal(ticket->create, 1);

    /* Routing: entity_type first, otherwise the machine naming the event. */
    assert_ptr_equal(config_machine_for(c, NULL, "order.paid"), order);
    assert_ptr_equal(config_machine_for(c, "", "order.shipped"), order);
    assert_ptr_equal(config_machine_for(c, NULL, "invoice.paid"), invoice);
    assert_ptr_equal(config_machine_for(c, NULL, "ticket.closed"), ticket);
    assert_ptr_equal(config_machine_for(c, "invoice", "order.paid"), invoice);
    assert_null(config_machine_for(c, "ghost", "order.paid"));
    assert_null(config_machine_for(c, NULL, "order.refunded"));
    assert_null(config_machine_for(c, NULL, "order.*"));
    assert_null(config_machine_for(c, NULL, NULL));

    char *out = print_config(c);
    assert_contains(out, "\n[machine order]\ninitial = draft\ncreate = true\non_conflict = dlq\n"
                         "transition order.paid = draft -> paid\n"
                         "transition order.shipped = paid -> shipped\n"
                         "emit order.paid = order.confirmed\n");
    assert_contains(out, "\n[machine invoice]\ntable = billing.invoices\nid_column = id\nstate_column = status\n"
                         "initial = open\ncreate = false\non_conflict = ignore\n");
    assert_contains(out, "version_column = rev\n");
    free(out);
    config_unref(c);

    /* An explicit create = false on the built-in table is kept. */
    c = load_ok(HOOKD_MIN "[machine m]\ncreate = no\ninitial = a\ntransition go = a -> b\n");
    assert_true(c->machines[0].builtin);
    assert_int_equal(c->machines[0].create, 0);
    config_unref(c);
}

static void test_partner_lookup_and_defaults(void **state)
{
    (void)state;
    struct hookd_config *c = load_ok(ROUTING);
    assert_int_equal(c->npartners, 4);
    assert_null(config_partner(c, "ghost"));
    assert_null(config_partner(c, "Stripe"));

    const struct partner_config *p = config_partner(c, "stripe");
    assert_non_null(p);
    assert_int_equal(p->line, 22);
    assert_int_equal(p->scheme, SIG_STRIPE);
    assert_int_equal(p->tolerance, 5 * M);
    assert_int_equal(p->event_id.kind, FIELD_JSON);
    assert_string_equal(p->event_id.path, "id");
    assert_int_equal(p->event_type.kind, FIELD_JSON);
    assert_string_equal(p->event_type.path, "type");
    assert_string_equal(p->entity_id.path, "data.object.id");
    assert_null(p->entity_type);
    assert_null(p->header);
    assert_int_equal(p->max_body, 0);
    assert_int_equal(p->keys[0].len, strlen("whsec_abc_0123456789")); /* Stripe signs with the whole string */

    p = config_partner(c, "gh");
    assert_int_equal(p->scheme, SIG_GITHUB);
    assert_int_equal(p->tolerance, 30 * S);
    assert_int_equal(p->event_id.kind, FIELD_HEADER);
    assert_string_equal(p->event_id.path, "X-GitHub-Delivery");
    assert_int_equal(p->event_type.kind, FIELD_HEADER);
    assert_string_equal(p->event_type.path, "X-GitHub-Event");
    assert_string_equal(p->entity_type, "invoice");
    assert_ptr_equal(config_machine_for(c, p->entity_type, "order.paid"), config_machine(c, "invoice"));

    p = config_partner(c, "sw");
    assert_int_equal(p->scheme, SIG_STANDARD_WEBHOOKS);
    assert_int_equal(p->event_id.kind, FIELD_HEADER);
    assert_string_equal(p->event_id.path, "webhook-id");
    assert_string_equal(p->event_type.path, "type");
    assert_int_equal(p->keys[0].len, 24); /* base64 after whsec_, decoded */

    p = config_partner(c, "mac");
    assert_int_equal(p->scheme, SIG_HMAC_SHA256);
    assert_string_equal(p->header, "X-Signature");
    assert_int_equal(p->event_id.kind, FIELD_HEADER);
    assert_string_equal(p->event_id.path, "X-Event-Id");
    assert_int_equal(p->event_type.kind, FIELD_JSON);
    assert_string_equal(p->event_type.path, "meta.kind");

    char *out = print_config(c);
    assert_contains(out, "\n[partner mac]\nscheme = hmac-sha256\nsecret = <redacted>\ntolerance = 5m\n"
                         "header = X-Signature\nevent_id = header:X-Event-Id\nevent_type = json:meta.kind\n");
    assert_lacks(out, "macsecret");
    assert_lacks(out, "ghsecret");
    assert_lacks(out, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    free(out);
    config_unref(c);
}

/* ---- whole config ---------------------------------------------------------- */

/* config_print() writes INI that loads back to the same config. Secrets come
 * from the environment here, since printed literals are redacted. */
static void test_print_load_round_trip(void **state)
{
    (void)state;
    setenv("HOOKD_UT_DB", "postgresql://hookd:rt-pw@127.0.0.1/hookd", 1);
    setenv("HOOKD_UT_TOKEN", "rt-token-0123456789abcdef", 1);
    setenv("HOOKD_UT_SW", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 1);
    struct hookd_config *c = load_ok("[hookd]\n"
                                     "database = env:HOOKD_UT_DB\n"
                                     "redis = redis://127.0.0.1:6379/3\n"
                                     "roles = inbox, relay\n"
                                     "key_prefix = rt\n"
                                     "reconcile_interval = 250ms\n"
                                     "lease = 90s\n"
                                     "max_body = 512KiB\n"
                                     "admin_token = env:HOOKD_UT_TOKEN\n"
                                     "ca_file = /etc/ca.pem\n"
                                     "[retry]\nschedule = 1s, 2s\nmax_attempts = 3\njitter = 5%\n"
                                     "[defer]\nschedule = 100ms, 1s\nmax_age = 2h\n"
                                     "[retry event:order.*]\nschedule = 10ms\n"
                                     "[partner sw]\nscheme = standard-webhooks\nsecret = env:HOOKD_UT_SW\n"
                                     "entity_id = json:data.id\nentity_type = order\nmax_body = 64KiB\n"
                                     "[machine order]\ninitial = draft\n"
                                     "transition order.paid = draft -> paid\n"
                                     "transition order.cancelled = draft, paid -> cancelled\n"
                                     "emit order.paid = order.confirmed\n"
                                     "[machine invoice]\ntable = invoices\nversion_column = v\ninitial = open\n"
                                     "transition invoice.paid = open -> paid\n");
    char *first = print_config(c);
    config_unref(c);
    assert_lacks(first, "rt-pw");
    assert_lacks(first, "rt-token");
    assert_lacks(first, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");

    c = load_ok(first);
    char *second = print_config(c);
    assert_string_equal(second, first);
    assert_string_equal(c->database.text, "postgresql://hookd:rt-pw@127.0.0.1/hookd");
    assert_int_equal(c->roles, ROLE_INBOX | ROLE_RELAY);
    assert_int_equal(c->max_body, 512 * 1024);
    assert_int_equal(config_partner(c, "sw")->max_body, 64 * 1024);
    config_unref(c);
    free(first);
    free(second);
    unsetenv("HOOKD_UT_DB");
    unsetenv("HOOKD_UT_TOKEN");
    unsetenv("HOOKD_UT_SW");
}

/* allow_ips, event_types and [hookd] trusted_proxies: parsed, printed so
 * that the print loads again, and refused with file:line when wrong. */
static void test_inbound_policy_keys(void **state)
{
    (void)state;
    setenv("HOOKD_UT_GH", "a-secret-of-20-bytes", 1); /* printed by name, so the print loads again */
    struct hookd_config *c = load_ok("[hookd]\n"
                                     "database = postgresql://hookd@127.0.0.1/hookd\n"
                                     "redis = redis://127.0.0.1:6379/0\n"
                                     "trusted_proxies = 10.0.0.0/8 fd00::/8\n"
                                     "[partner p]\nscheme = github\nsecret = env:HOOKD_UT_GH\n"
                                     "allow_ips = 192.0.2.0/24, 2001:db8::1\n"
                                     "event_types = order.*, refund.created\n");
    const struct partner_config *p = config_partner(c, "p");
    assert_int_equal(c->trusted.n, 2);
    assert_int_equal(p->allow_ips.n, 2);
    assert_int_equal(p->allow_ips.v[1].prefix, 128);
    assert_true(config_partner_takes_event(p, "order.paid"));
    assert_true(config_partner_takes_event(p, "refund.created"));
    assert_false(config_partner_takes_event(p, "refund.created.x"));
    assert_false(config_partner_takes_event(p, "customer.created"));
    char *first = print_config(c);
    config_unref(c);
    assert_contains(first, "trusted_proxies = 10.0.0.0/8 fd00::/8\n");
    assert_contains(first, "allow_ips = 192.0.2.0/24, 2001:db8::1\n");
    assert_contains(first, "event_types = order.*, refund.created\n");
    c = load_ok(first);
    char *second = print_config(c);
    assert_string_equal(second, first);
    assert_true(config_partner_takes_event(config_partner(c, "p"), "order.x"));
    config_unref(c);
    free(first);
    free(second);
    unsetenv("HOOKD_UT_GH");

    c = load_ok(HOOKD_MIN "[partner p]\nscheme = github\nsecret = a-secret-of-20-bytes\n");
    assert_int_equal(c->trusted.n, 0);
    assert_true(config_partner_takes_event(config_partner(c, "p"), "anything"));
    config_unref(c);

    refuse(HOOKD_MIN "trusted_proxies = 10.0.0.0/33\n", 4, "trusted_proxies");
    refuse(HOOKD_MIN "[partner p]\nscheme = github\nsecret = a-secret-of-20-bytes\nallow_ips = 10.1.0.0/8\n", 7,
           "prefix");
    refuse(HOOKD_MIN "[partner p]\nscheme = github\nsecret = a-secret-of-20-bytes\nallow_ips = localhost\n", 7,
           "not an IPv4 or IPv6 address");
    refuse(HOOKD_MIN "[partner p]\nscheme = github\nsecret = a-secret-of-20-bytes\nevent_types = ,\n", 7, "empty");
}

static void test_ref_unref(void **state)
{
    (void)state;
    struct hookd_config *c = load_ok(HOOKD_MIN);
    assert_ptr_equal(config_ref(c), c);
    assert_int_equal(c->refs, 2);
    config_unref(c);
    assert_int_equal(c->refs, 1);
    assert_string_equal(c->listen, "127.0.0.1:8080"); /* still alive */
    config_unref(c);
    config_unref(NULL);
}

/* ---- the public listener's limits ----------------------------------------- */

static void test_listener_limits_defaults_and_units(void **state)
{
    (void)state;
    struct hookd_config *c = load_ok(HOOKD_MIN);
    assert_int_equal(c->max_header_size, 16 * 1024);
    assert_int_equal(c->max_headers, 100);
    assert_int_equal(c->request_timeout, 10 * S);
    assert_int_equal(c->max_connections, 4096);
    assert_int_equal(c->max_buffered_body, 64 * 1024 * 1024);
    char *out = print_config(c);
    assert_contains(out, "max_header_size = 16384\n");
    assert_contains(out, "request_timeout = 10s\n");
    assert_contains(out, "max_buffered_body = 67108864\n");
    free(out);
    config_unref(c);

    c = load_ok(HOOKD_MIN "max_header_size = 8KiB\nmax_headers = 64\nrequest_timeout = 2500ms\n"
                          "max_connections = 200\nmax_buffered_body = 1MiB\n");
    assert_int_equal(c->max_header_size, 8192);
    assert_int_equal(c->max_headers, 64);
    assert_int_equal(c->request_timeout, 2500);
    assert_int_equal(c->max_connections, 200);
    assert_int_equal(c->max_buffered_body, 1024 * 1024);
    config_unref(c);
}

static void test_listener_limits_refused(void **state)
{
    (void)state;
    refuse(HOOKD_MIN "max_header_size = 512\n", 4, "max_header_size must be between 1KiB and 1MiB");
    refuse(HOOKD_MIN "max_header_size = 2MiB\n", 4, "max_header_size must be between 1KiB and 1MiB");
    refuse(HOOKD_MIN "max_header_size = lots\n", 4, "bad size 'lots'");
    refuse(HOOKD_MIN "max_headers = 0\n", 4, "expected a positive whole number");
    refuse(HOOKD_MIN "max_headers = 20000\n", 4, "max_headers must be at most 10000");
    refuse(HOOKD_MIN "request_timeout = 50ms\n", 4, "request_timeout must be at least 100ms");
    refuse(HOOKD_MIN "request_timeout = soon\n", 4, "soon");
    refuse(HOOKD_MIN "max_connections = -5\n", 4, "expected a positive whole number");
    refuse(HOOKD_MIN "max_connections = 2000000\n", 4, "max_connections must be at most 1000000");
    /* the total must hold one request of the largest max_body */
    refuse(HOOKD_MIN "max_buffered_body = 512KiB\n", 4, "smaller than max_body");
    refuse(HOOKD_MIN
           "max_buffered_body = 2MiB\n"
           "[partner p]\nscheme = github\nsecret = s3cret-s3cret-s3cret\nentity_id = json:id\nmax_body = 4MiB\n",
           4, "smaller than the max_body of [partner p]");
    struct hookd_config *c = load_ok(HOOKD_MIN "max_body = 64KiB\nmax_buffered_body = 64KiB\n");
    config_unref(c);
}

/* Presets: their defaults, the public-key and token keys, and `scheme =
 * hmac` built from keys, printed and loaded again unchanged. */
static void test_partner_presets(void **state)
{
    (void)state;
    setenv("HOOKD_UT_HMAC", "an-hmac-secret-0123456789", 1);
    setenv("HOOKD_UT_VT", "a-verify-token", 1);
    struct hookd_config *c = load_ok(HOOKD_MIN
                                     "[partner sl]\nscheme = slack\nsecret = env:HOOKD_UT_HMAC\n"
                                     "[partner pd]\nscheme = paddle\nsecret = env:HOOKD_UT_HMAC\n"
                                     "[partner zm]\nscheme = zoom\nsecret = env:HOOKD_UT_HMAC\n"
                                     "[partner tw]\nscheme = twilio\nsecret = env:HOOKD_UT_HMAC\n"
                                     "event_type = json:SmsStatus\npublic_url = https://h.example/v1/inbox/tw\n"
                                     "[partner mt]\nscheme = meta\nsecret = env:HOOKD_UT_HMAC\n"
                                     "verify_token = env:HOOKD_UT_VT\n"
                                     "[partner st]\nscheme = hmac\nsecret = env:HOOKD_UT_HMAC\n"
                                     "signed = {timestamp}.{body}\nsignature_header = Stripe-Signature\n"
                                     "signature_prefix = v1=\nseveral_signatures = true\n"
                                     "separators = comma\ntimestamp_header = Stripe-Signature\n"
                                     "timestamp_prefix = t=\nevent_id = json:id\n");
    const struct partner_config *sl = config_partner(c, "sl"), *pd = config_partner(c, "pd"),
                                *zm = config_partner(c, "zm"), *tw = config_partner(c, "tw"),
                                *mt = config_partner(c, "mt"), *st = config_partner(c, "st");
    assert_int_equal(sl->event_id.kind, FIELD_JSON);
    assert_string_equal(sl->event_id.path, "event_id");
    assert_string_equal(sl->event_type.path, "event.type");
    assert_int_equal(sl->tolerance, 5 * M);
    assert_false(sl->content_dedup); /* timestamp, id and type all signed */
    assert_int_equal(pd->tolerance, 5 * S);
    assert_int_equal(zm->event_id.kind, FIELD_DIGEST);
    assert_null(zm->event_id.path);
    assert_true(tw->content_dedup); /* no timestamp */
    assert_string_equal(tw->public_url, "https://h.example/v1/inbox/tw");
    assert_string_equal(mt->verify_token.text, "a-verify-token");
    assert_int_equal(mt->nkeys, 1);
    assert_int_equal(st->scheme, SIG_HMAC);
    assert_int_equal(st->spec.alg, SIG_ALG_HMAC_SHA256);
    assert_string_equal(st->spec.signed_template, "{timestamp}.{body}");
    assert_string_equal(st->spec.signature_header, "Stripe-Signature");
    assert_string_equal(st->spec.separators, ",");
    assert_true(st->spec.multiple);
    assert_int_equal(st->spec.encoding, SIG_ENC_HEX);

    char *first = print_config(c);
    config_unref(c);
    assert_contains(first, "event_id = digest\n");
    assert_contains(first, "signed = {timestamp}.{body}\n");
    assert_contains(first, "separators = comma\n");
    assert_lacks(first, "a-verify-token");
    c = load_ok(first);
    char *second = print_config(c);
    assert_string_equal(second, first);
    config_unref(c);
    free(first);
    free(second);
    unsetenv("HOOKD_UT_HMAC");
    unsetenv("HOOKD_UT_VT");
}

static void test_refuse_preset_keys(void **state)
{
    (void)state;
    refuse(HOOKD_MIN "[partner a]\nscheme = hmac\nsecret = s-0123456789abcdef\n", 4,
           "[partner a] uses scheme hmac and needs 'signature_header'");
    refuse(HOOKD_MIN "[partner a]\nscheme = hmac\nsecret = s-0123456789abcdef\nsignature_header = X-S\n"
                     "timestamp_header = X-T\nevent_id = json:id\n",
           4, "an unsigned timestamp proves nothing");
    refuse(HOOKD_MIN "[partner a]\nscheme = hmac\nsecret = s-0123456789abcdef\nsignature_header = X-S\n"
                     "signed = {timestamp}{body}\nevent_id = json:id\n",
           4, "signs {timestamp} but has no timestamp_header");
    refuse(HOOKD_MIN "[partner a]\nscheme = hmac\nsigned = {bodi}\n", 6, "unknown placeholder '{bodi}'");
    refuse(HOOKD_MIN "[partner a]\nscheme = hmac\nalgorithm = md5\n", 6, "bad algorithm 'md5'");
    refuse(HOOKD_MIN "[partner a]\nscheme = hmac\nencoding = base32\n", 6, "bad encoding 'base32'");
    refuse(HOOKD_MIN "[partner a]\nscheme = hmac\nseparators = tab\n", 6, "bad separators 'tab'");
    refuse(HOOKD_MIN "[partner a]\nscheme = stripe\nsecret = s-0123456789abcdef\nsigned = {body}\n", 4,
           "sets keys of scheme = hmac");
    refuse(HOOKD_MIN "[partner a]\nscheme = stripe\npublic_key = 0011\n", 4,
           "verifies with a shared secret: use secret, not public_key");
    refuse(HOOKD_MIN "[partner a]\nscheme = discord\nsecret = s-0123456789abcdef\n", 4,
           "verifies with a public key: use public_key, not secret");
    refuse(HOOKD_MIN "[partner a]\nscheme = twilio\nsecret = s-0123456789abcdef\n", 4,
           "needs 'event_type' (json:PATH or header:NAME): scheme twilio has no event type");
    refuse(HOOKD_MIN "[partner a]\nscheme = stripe\nsecret = s-0123456789abcdef\nevent_type = digest\n", 4,
           "'digest' is a source for event_id only");
    refuse(HOOKD_MIN "[partner a]\nscheme = square\npublic_url = square.example/hook\n", 6, "bad public_url");
}

/* ---- the table ---------------------------------------------------------- */

/* The table's defaults for [retry] and [defer] are the policies the
 * backoff module calls its defaults. */
static void test_table_defaults_match_backoff_defaults(void **state)
{
    (void)state;
    struct backoff_policy retry;
    struct defer_policy defer;
    backoff_policy_default(&retry);
    defer_policy_default(&defer);
    struct hookd_config *c = load_ok(HOOKD_MIN);
    assert_memory_equal(&c->retry, &retry, sizeof retry);
    assert_memory_equal(&c->defer, &defer, sizeof defer);
    config_unref(c);
}

/* Text of the section header a key of section s is written under. */
static const char *header_of(const struct config_section *s)
{
    static char buf[64];
    if (strcmp(s->name, "hookd") == 0)
        return "";
    if (strcmp(s->name, "partner") == 0)
        return "[partner p]\nscheme = hmac\nsecret = 0123456789abcdef0123\nsignature_header = X-Sig\n"
               "event_id = json:id\nevent_type = json:type\n";
    if (strcmp(s->name, "machine") == 0)
        return "[machine m]\ninitial = new\ntransition paid = new -> paid\n";
    snprintf(buf, sizeof buf, "[%s%s%s]\n", s->name, s->arg ? " " : "", s->arg ? "endpoint:e" : "");
    return buf;
}

/* What the reference calls a key's default is its default: writing the
 * default out changes nothing in the effective config. */
static void test_documented_defaults_are_the_defaults(void **state)
{
    (void)state;
    char text[2048];
    int checked = 0;
    for (size_t i = 0; i < config_doc_nsections(); i++) {
        struct config_doc_section ds;
        config_doc_section(i, &ds);
        for (size_t k = 0; k < ds.nkeys; k++) {
            struct config_doc_key dk;
            config_doc_key(i, k, &dk);
            if (!dk.def_is_value)
                continue;
            snprintf(text, sizeof text, HOOKD_MIN "%s", header_of(&config_sections[i]));
            struct hookd_config *c = load_ok(text);
            char *without = print_config(c);
            config_unref(c);
            snprintf(text + strlen(text), sizeof text - strlen(text), "%s = %s\n", dk.name, dk.def);
            c = load_ok(text);
            char *with = print_config(c);
            config_unref(c);
            if (strcmp(with, without) != 0)
                fail_msg("[%s] %s = %s is not the default:\n%s\n---\n%s", ds.title, dk.name, dk.def, without, with);
            free(with);
            free(without);
            checked++;
        }
    }
    assert_true(checked > 50);
}

/* A value just beyond a bound the table states ("2 to 100", "at least
 * 1s") is refused, and the message says the bound. */
static void test_table_bounds_are_enforced(void **state)
{
    (void)state;
    char text[1024], value[64], e[128];
    int checked = 0;
    for (size_t i = 0; i < CONFIG_NSECTIONS; i++) {
        const struct config_section *s = &config_sections[i];
        for (size_t j = 0; j < s->nkeys; j++) {
            const struct config_key *k = &s->keys[j];
            const char *bounds[2] = {k->min, k->max};
            for (int side = 0; side < 2; side++) {
                int64_t v;
                if (!bounds[side])
                    continue;
                if (k->type == CONFIG_DURATION)
                    assert_int_equal(backoff_parse_duration(bounds[side], &v, e, sizeof e), 0);
                else if (k->type == CONFIG_SIZE)
                    assert_int_equal(config_parse_size(bounds[side], &v, e, sizeof e), 0);
                else
                    v = strtoll(bounds[side], NULL, 10);
                v += side ? 1 : -1;
                snprintf(value, sizeof value, "%lld%s", (long long)v, k->type == CONFIG_DURATION ? "ms" : "");
                snprintf(text, sizeof text, HOOKD_MIN "%s%s = %s\n", header_of(s), k->name, value);
                struct hookd_config *c = load(text);
                if (c) {
                    config_unref(c);
                    fail_msg("[%s] %s = %s loaded, beyond its bound %s", s->name, k->name, value, bounds[side]);
                }
                if (!strstr(err, bounds[side]))
                    fail_msg("[%s] %s = %s: the error does not say the bound %s: %s", s->name, k->name, value,
                             bounds[side], err);
                checked++;
            }
        }
    }
    assert_true(checked >= 20);
}

/* Every key is described, and its name is unique in its section. */
static void test_reference_describes_every_key(void **state)
{
    (void)state;
    for (size_t i = 0; i < config_doc_nsections(); i++) {
        struct config_doc_section ds;
        config_doc_section(i, &ds);
        assert_true(ds.meaning && *ds.meaning);
        for (size_t k = 0; k < ds.nkeys; k++) {
            struct config_doc_key dk;
            config_doc_key(i, k, &dk);
            if (!dk.meaning || !*dk.meaning || !dk.type)
                fail_msg("[%s] %s has no meaning or type", ds.title, dk.name);
            for (size_t o = 0; o < k; o++) {
                struct config_doc_key other;
                config_doc_key(i, o, &other);
                assert_string_not_equal(other.name, dk.name);
            }
        }
    }
    struct config_doc_key dk;
    config_doc_key(CONFIG_SEC_RETRY, 1, &dk);
    assert_string_equal(dk.name, "max_attempts");
    assert_string_equal(dk.def, "4");
    assert_string_equal(dk.bounds, "2 to 100");
    assert_false(dk.restart);
}

/* A reload names the changed keys that only a restart applies, in the
 * table's order, and nothing a reload applies. */
static void test_restart_keys(void **state)
{
    (void)state;
    char keys[256];
    struct hookd_config *old = load_ok(HOOKD_MIN);
    struct hookd_config *same = load_ok(HOOKD_MIN "lease = 5s\nlog_level = debug\n[retry]\nmax_attempts = 9\n");
    assert_int_equal(config_restart_keys(old, same, keys, sizeof keys), 0);
    assert_string_equal(keys, "");
    struct hookd_config *moved = load_ok("[hookd]\ndatabase = postgresql://hookd@10.0.0.2/hookd\n"
                                         "redis = redis://127.0.0.1:6379/0\nlease = 5s\nmax_headers = 50\n"
                                         "listen = 127.0.0.1:9090\nadmin_listen = off\n");
    assert_int_equal(config_restart_keys(old, moved, keys, sizeof keys), 4);
    assert_string_equal(keys, "database, listen, admin_listen, max_headers");
    assert_int_equal(config_restart_keys(old, moved, keys, 12), 4); /* truncated, still counted */
    assert_string_equal(keys, "database, l");
    config_unref(old);
    config_unref(same);
    config_unref(moved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimal_config_gets_defaults),
        cmocka_unit_test(test_inbound_policy_keys),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_percent_roles_bools_ints),
        cmocka_unit_test(test_design_example_loads),
        cmocka_unit_test(test_comments_and_blank_lines_keep_line_numbers),
        cmocka_unit_test(test_refuse_unknown_keys),
        cmocka_unit_test(test_refuse_bad_values),
        cmocka_unit_test(test_refuse_hookd_validation),
        cmocka_unit_test(test_admin_listen_off_and_token_minimum),
        cmocka_unit_test(test_refuse_hookd_validation_names_key_line),
        cmocka_unit_test(test_refuse_duplicates),
        cmocka_unit_test(test_refuse_duplicate_sections),
        cmocka_unit_test(test_refuse_bad_sections),
        cmocka_unit_test(test_first_error_in_file_is_reported),
        cmocka_unit_test(test_refuse_machines),
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_refuse_routes),
        cmocka_unit_test(test_refuse_retry_policies),
        cmocka_unit_test(test_retry_circuit_keys),
        cmocka_unit_test(test_refuse_retry_names_section_line),
        cmocka_unit_test(test_refuse_partners),
        cmocka_unit_test(test_refuse_short_partner_secrets),
        cmocka_unit_test(test_content_dedup_follows_what_is_signed),
        cmocka_unit_test(test_redact_headers),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_refuse_long_line),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_long_keys_and_duplicates),
        cmocka_unit_test(test_duplicate_key_after_many_keys),
        cmocka_unit_test(test_env_secrets_resolve_and_print_by_name),
        cmocka_unit_test(test_env_secret_unset_or_empty_is_refused),
        cmocka_unit_test(test_database_url_password_redacted),
        cmocka_unit_test(test_database_password_in_params_redacted),
        cmocka_unit_test(test_retry_overrides),
        cmocka_unit_test(test_glob_match),
        cmocka_unit_test(test_machine_routing_and_defaults),
        cmocka_unit_test(test_partner_lookup_and_defaults),
        cmocka_unit_test(test_print_load_round_trip),
        cmocka_unit_test(test_portal_section),
        cmocka_unit_test(test_partner_presets),
        cmocka_unit_test(test_refuse_preset_keys),
        cmocka_unit_test(test_ref_unref),
        cmocka_unit_test(test_listener_limits_defaults_and_units),
        cmocka_unit_test(test_listener_limits_refused),
        cmocka_unit_test(test_table_defaults_match_backoff_defaults),
        cmocka_unit_test(test_documented_defaults_are_the_defaults),
        cmocka_unit_test(test_table_bounds_are_enforced),
        cmocka_unit_test(test_reference_describes_every_key),
        cmocka_unit_test(test_restart_keys),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
