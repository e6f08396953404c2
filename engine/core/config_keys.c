/* The config's table (config_internal.h): every section, and in each every
 * key with its type, target, default, bounds, reload rule and meaning, as
 * PgBouncer's CF_ABS table in its main.c. A named section ([partner NAME],
 * [machine NAME], [retry SCOPE:NAME]) has an open function that creates
 * its object; its keys are applied to that object through the same
 * mechanism as the single sections' keys are to theirs. The keys whose
 * values no type reader takes have setters here, beside their rows. The
 * reference (`hookd config keys`, docs/reference/configuration.md) is this
 * table, read through config_doc_section() and config_doc_key(). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_internal.h"
#include "errbuf.h"
#include "payload_filter.h"
#include "settings.h"
#include "xmalloc.h"

const struct config_type_doc config_types[CONFIG_TYPE_COUNT] = {
    [CONFIG_STRING] = {"string", "text to the end of the line"},
    [CONFIG_SECRET] = {"secret", "text, or env:NAME to read it from the environment; never printed"},
    [CONFIG_DURATION] = {"duration", "a whole number and a unit: 250ms, 5s, 1m, 2h, 1d"},
    [CONFIG_INT] = {"integer", "a positive whole number"},
    [CONFIG_COUNT] = {"number", "a whole number within the key's bounds"},
    [CONFIG_BOOL] = {"boolean", "true, yes, on, 1 or false, no, off, 0"},
    [CONFIG_ONOFF] = {"on/off", "on or off"},
    [CONFIG_SIZE] = {"size", "bytes, with an optional unit: 4096, 512KiB, 1MiB, 1GiB (KB and MB are powers of 10)"},
    [CONFIG_PERCENT] = {"percent", "a whole number and %: 10%"},
    [CONFIG_ROLES] = {"roles", "a comma-separated list of ingest, inbox, relay"},
    [CONFIG_SOURCE] = {"source", "json:dotted.path, header:Name, or digest"},
    [CONFIG_IDENTIFIER] = {"identifier", "letters, digits, '_', and '.' for schema.table; at most 63 characters"},
    [CONFIG_SCHEDULE] = {"durations", "a comma-separated list of durations"},
    [CONFIG_ENUM] = {"enum", "one of the words the key's meaning lists"},
    [CONFIG_LIST] = {"list", "comma-separated items"},
    [CONFIG_URL] = {"URL", "an http:// or https:// URL"},
    [CONFIG_TEMPLATE] = {"template", "text with {placeholders}"},
    [CONFIG_TRANSITION] = {"transition", "FROM[, FROM...] -> TO"},
    [CONFIG_STATE] = {"state", "a state name: letters, digits, '_', '-', '.', ':'"},
};

/* ---- [hookd] ------------------------------------------------------------ */

/* A delivery setting's last layer (settings.h): the key has the setting's
 * name and words, and its value goes into the int field at the key's offset. */
static int set_setting(void *obj, const struct config_key *k, const char *arg, const char *v, char *err, size_t errlen)
{
    (void)arg;
    int value = settings_parse(settings_find(k->name), v, err, errlen);
    if (value < 0)
        return -1;
    memcpy((char *)obj + k->offset, &value, sizeof value);
    return 0;
}

#define HK(field, ...)                                                                                                \
    {                                                                                                                 \
        .name = #field, .offset = offsetof(struct hookd_config, field), __VA_ARGS__                                   \
    }
static const struct config_key hookd_keys[] = {
    HK(database, .type = CONFIG_SECRET, .flags = CONFIG_RESTART | CONFIG_REQUIRED,
       .meaning = "libpq connection string or postgresql:// URL; several hosts for failover "
                  "(postgresql://hookd@db1:5432,db2:5432/hookd?target_session_attrs=read-write), TLS with "
                  "sslmode=verify-full&sslrootcert=/path/ca.pem"),
    HK(redis, .type = CONFIG_SECRET, .flags = CONFIG_RESTART | CONFIG_REQUIRED,
       .meaning =
           "redis://[[user]:password@]host[:port][/db], rediss:// (TLS), "
           "redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/SERVICE[/db] or rediss+sentinel://, "
           "redis+cluster://[[user]:password@]host[:port][,host[:port]...][/0] or rediss+cluster://; "
           "credentials percent-encoded"),
    HK(roles, .type = CONFIG_ROLES, .def = "ingest, inbox, relay", .flags = CONFIG_RESTART,
       .meaning = "what this worker does"),
    HK(listen, .type = CONFIG_STRING, .def = "127.0.0.1:8080", .flags = CONFIG_RESTART,
       .meaning = "HOST:PORT of the public HTTP listener (the inbox, /healthz, /readyz); /metrics and /admin answer "
                  "404 here"),
    HK(key_prefix, .type = CONFIG_STRING, .def = "hookd", .flags = CONFIG_RESTART,
       .meaning = "prefix of every Redis key"),
    HK(log_level, .type = CONFIG_STRING, .def = "info", .meaning = "debug, info, warn or error"),
    HK(reconcile_interval, .type = CONFIG_DURATION, .def = "30s",
       .meaning = "how often Redis is re-seeded from Postgres (a periodic pass reads the open rows due since shortly "
                  "before the previous pass began; every 10th pass, and those at start-up and after a reconnect, "
                  "read them all)"),
    HK(reconcile_horizon, .type = CONFIG_DURATION, .def = "1h", .meaning = "rows due within this window are seeded"),
    HK(allow_private_networks, .type = CONFIG_BOOL, .def = "false",
       .meaning = "allow deliveries (and alert webhooks) to private, loopback and link-local addresses"),
    HK(signature_headers, .type = CONFIG_ENUM, .set = set_setting, .def = "both",
       .meaning = "both, svix or webhook: the signature headers every delivery carries - svix-id, svix-timestamp and "
                  "svix-signature, webhook-id, webhook-timestamp and webhook-signature, or both sets with the same "
                  "values; an endpoint's or its tenant's settings take precedence (docs/guides/outbound.md)"),
    HK(admin_token, .type = CONFIG_SECRET, .def_doc = "unset (admin view off)",
       .meaning = "token for /admin, at least 24 characters (openssl rand -hex 24); a shorter one is refused"),
    HK(admin_listen, .type = CONFIG_STRING, .def = "127.0.0.1:8081", .flags = CONFIG_RESTART,
       .meaning = "HOST:PORT of the second listener, for /admin and /metrics (and /healthz, /readyz), with the same "
                  "limits; off serves neither; must differ from listen"),
    HK(admin_session_timeout, .type = CONFIG_DURATION, .def = "12h", .min = "1s", .flags = CONFIG_LATE,
       .meaning = "how long an /admin sign-in lasts (from sign-in, not from the last click)"),
    HK(alert_webhook, .type = CONFIG_SECRET, .meaning = "URL that gets a JSON alert per dead-letter burst"),
    HK(alert_interval, .type = CONFIG_DURATION, .def = "1m",
       .meaning = "alert webhooks are coalesced to one per interval"),
    HK(heartbeat_interval, .type = CONFIG_DURATION, .def = "2s", .meaning = "worker heartbeat and counter flush"),
    HK(lease, .type = CONFIG_DURATION, .def = "30s",
       .meaning = "how long a claimed item is held before another worker may take it"),
    HK(max_sleep, .type = CONFIG_DURATION, .def = "1s", .meaning = "the scheduler's longest sleep without a wake-up"),
    HK(shutdown_timeout, .type = CONFIG_DURATION, .def = "10s", .meaning = "how long SIGTERM drains before exiting"),
    HK(db_pool_size, .type = CONFIG_INT, .def = "8", .flags = CONFIG_RESTART,
       .meaning = "Postgres connections (threads) per worker; a relay's fan-out has 2 of its own, the API's message "
                  "creation 1"),
    HK(batch_size, .type = CONFIG_INT, .def = "250", .meaning = "items claimed per Redis round trip"),
    HK(max_inflight, .type = CONFIG_INT, .def = "1000",
       .meaning = "items a worker holds at once, per queue (claimed and not yet finished); also the cap on concurrent "
                  "deliveries"),
    HK(max_inflight_per_origin, .type = CONFIG_INT, .def = "64",
       .meaning = "deliveries on the wire at once to one origin (scheme://host:port), all its endpoints together"),
    HK(max_idle_connections, .type = CONFIG_INT, .def = "1000",
       .meaning = "idle keep-alive connections a worker keeps to receivers, all together; beyond it the least "
                  "recently used is closed"),
    HK(max_idle_per_origin, .type = CONFIG_INT, .def = "256",
       .meaning = "of the idle keep-alive connections, those kept to one origin (scheme://host:port)"),
    HK(first_attempt_window, .type = CONFIG_DURATION, .def = "250ms",
       .meaning = "how long a relay's fan-out waits for the first attempts it sends before committing; 0s sends "
                  "every new delivery through Redis instead"),
    HK(ingest_batch_max, .type = CONFIG_INT, .def = "256", .meaning = "inbound rows per insert transaction"),
    HK(ingest_concurrency, .type = CONFIG_INT, .def = "2", .flags = CONFIG_RESTART,
       .meaning = "insert transactions in flight at once (the ingest role's insert threads)"),
    HK(max_body, .type = CONFIG_SIZE, .def = "1MiB", .min = "1", .flags = CONFIG_LATE,
       .meaning = "largest inbound body"),
    HK(ca_file, .type = CONFIG_STRING, .def_doc = "the system store",
       .meaning = "PEM bundle for verifying HTTPS endpoints"),
    HK(redact_headers, .type = CONFIG_STRING, .def = CONFIG_REDACT_HEADERS_DEFAULT,
       .meaning = "comma-separated globs (* = any run of characters, any letter case) over inbound header names: a "
                  "matching header is stored with the event as <redacted>; the list replaces the default"),
    HK(trusted_proxies, .type = CONFIG_STRING,
       .meaning =
           "CIDR ranges (comma- or blank-separated) of the reverse proxies in front of hookd; only from them is "
           "X-Forwarded-For read, for partners' allow_ips (unset: it is ignored)"),
    HK(redis_ca_file, .type = CONFIG_STRING, .def_doc = "the system store", .flags = CONFIG_RESTART,
       .meaning = "rediss: PEM bundle the Redis server's certificate is verified against"),
    HK(redis_cert_file, .type = CONFIG_STRING, .flags = CONFIG_RESTART,
       .meaning = "rediss: client certificate, with redis_key_file"),
    HK(redis_key_file, .type = CONFIG_STRING, .flags = CONFIG_RESTART,
       .meaning = "rediss: client key, with redis_cert_file"),
    HK(redis_sentinel_password, .type = CONFIG_SECRET, .flags = CONFIG_RESTART,
       .meaning = "AUTH password of the sentinels (the URL's credentials are the master's)"),
    /* the public listener's limits: fixed when the listener starts */
    HK(max_header_size, .type = CONFIG_SIZE, .def = "16KiB", .min = "1KiB", .max = "1MiB",
       .bound_note = "request line and headers together", .flags = CONFIG_RESTART | CONFIG_LATE,
       .meaning = "request line and headers together; a larger head gets 400"),
    HK(max_headers, .type = CONFIG_INT, .def = "100", .max = "10000", .flags = CONFIG_RESTART | CONFIG_LATE,
       .meaning = "header lines per request; more closes the connection (431 if they arrive pipelined)"),
    HK(request_timeout, .type = CONFIG_DURATION, .def = "10s", .min = "100ms", .flags = CONFIG_RESTART | CONFIG_LATE,
       .meaning = "time to receive a whole request, from accept or the previous response (also the keep-alive idle "
                  "limit)"),
    HK(max_connections, .type = CONFIG_INT, .def = "4096", .max = "1000000", .flags = CONFIG_RESTART | CONFIG_LATE,
       .meaning = "open connections on listen, lowered to 3/4 of the fd limit; beyond it the one waiting longest for "
                  "its request is closed"),
    HK(max_buffered_body, .type = CONFIG_SIZE, .def = "64MiB", .flags = CONFIG_RESTART,
       .meaning = "bytes of requests still being received, all connections together; at least every max_body"),
    /* a tenant's budget: what the API lets one application store */
    HK(tenant_max_endpoints, .type = CONFIG_INT, .def = "100",
       .meaning = "endpoints one application (tenant) may have through the API; past it the API answers 422"),
    HK(tenant_max_filter_bytes, .type = CONFIG_SIZE, .def = "256KiB",
       .meaning = "bytes of one application's endpoint event types and payload filters together (what the relay "
                  "reads each pass); past it the API answers 422. A change that grows nothing always passes"),
};
#undef HK

/* ---- [retry] and [retry SCOPE:NAME] ------------------------------------- */

static int set_retry_schedule(void *obj, const struct config_key *k, const char *arg, const char *v, char *err,
                              size_t errlen)
{
    (void)k, (void)arg;
    struct backoff_policy *p = obj;
    return backoff_parse_schedule(v, p->schedule_ms, &p->nsteps, err, errlen);
}

#define RK(field, ...)                                                                                                \
    {                                                                                                                 \
        .name = #field, .offset = offsetof(struct backoff_policy, field), __VA_ARGS__                                 \
    }
static const struct config_key retry_keys[] = {
    {.name = "schedule",
     .type = CONFIG_SCHEDULE,
     .set = set_retry_schedule,
     .def = "1m, 5m, 15m",
     .bit = CONFIG_SET_SCHEDULE,
     .meaning = "waits after failed attempts 1, 2, 3... (at most max_attempts - 1 steps; the last repeats)"},
    RK(max_attempts, .type = CONFIG_COUNT, .def = "4", .min = "2", .max = "100", .bit = CONFIG_SET_MAX_ATTEMPTS,
       .meaning = "the max_attempts-th failure dead-letters"),
    {.name = "jitter",
     .type = CONFIG_PERCENT,
     .offset = offsetof(struct backoff_policy, jitter_pct),
     .def = "10%",
     .bit = CONFIG_SET_JITTER,
     .meaning = "each wait is spread uniformly within plus or minus jitter (0% to 100%)"},
    RK(circuit, .type = CONFIG_ONOFF, .def = "on", .bit = CONFIG_SET_CIRCUIT,
       .meaning = "deliveries only ([retry] and [retry endpoint:NAME]): on, failures of an endpoint open its circuit, "
                  "and its deliveries wait parked, spending no attempt, until a probe succeeds"),
    RK(circuit_failures, .type = CONFIG_COUNT, .def = "20", .min = "1", .max = "100000",
       .bit = CONFIG_SET_CIRCUIT_FAILURES,
       .meaning = "consecutive failures (cluster-wide) that open the circuit; any 2xx resets the count"),
    {.name = "circuit_probe",
     .type = CONFIG_DURATION,
     .offset = offsetof(struct backoff_policy, circuit_probe_ms),
     .def = "5s",
     .min = "10ms",
     .max = "24h",
     .bit = CONFIG_SET_CIRCUIT_PROBE,
     .meaning = "while the circuit is open, one delivery probes the endpoint this often"},
    {.name = "circuit_disable_after",
     .type = CONFIG_DURATION,
     .offset = offsetof(struct backoff_policy, circuit_disable_after_ms),
     .def = "5d",
     .min = "1s",
     .max = "365d",
     .flags = CONFIG_OFF,
     .bit = CONFIG_SET_CIRCUIT_DISABLE_AFTER,
     .meaning = "an endpoint whose circuit stays open this long (with deliveries waiting) is disabled and what it "
                "owes dead-lettered; off: never"},
};
#undef RK

static int open_retry_override(struct hookd_config *c, const char *title, const char *arg, int line,
                               struct config_target *out, char *err, size_t errlen)
{
    enum retry_scope scope;
    if (strncmp(arg, "partner:", 8) == 0)
        scope = RETRY_PARTNER;
    else if (strncmp(arg, "event:", 6) == 0)
        scope = RETRY_EVENT;
    else if (strncmp(arg, "endpoint:", 9) == 0)
        scope = RETRY_ENDPOINT;
    else
        return err_set(err, errlen,
                       "bad section [%s]: use [retry partner:NAME], [retry event:TYPE] or [retry endpoint:NAME]",
                       title);
    const char *pattern = strchr(arg, ':') + 1;
    if (!*pattern)
        return err_set(err, errlen, "bad section [%s]: empty name after ':'", title);
    for (size_t i = 0; i < c->noverrides; i++)
        if (c->overrides[i].scope == scope && strcmp(c->overrides[i].pattern, pattern) == 0)
            return err_set(err, errlen, "duplicate section [%s] (first at line %d)", title, c->overrides[i].line);
    c->overrides = xrealloc(c->overrides, (c->noverrides + 1) * sizeof *c->overrides);
    struct retry_override *o = &c->overrides[c->noverrides++];
    memset(o, 0, sizeof *o);
    o->scope = scope;
    o->pattern = xstrdup(pattern);
    o->line = line;
    *out = (struct config_target){&o->policy, &o->set, o->pattern};
    return 0;
}

/* ---- [defer] -------------------------------------------------------------- */

static int set_defer_schedule(void *obj, const struct config_key *k, const char *arg, const char *v, char *err,
                              size_t errlen)
{
    (void)k, (void)arg;
    struct defer_policy *p = obj;
    return backoff_parse_schedule(v, p->schedule_ms, &p->nsteps, err, errlen);
}

static const struct config_key defer_keys[] = {
    {.name = "schedule",
     .type = CONFIG_SCHEDULE,
     .set = set_defer_schedule,
     .def = "5s, 30s, 2m, 5m",
     .meaning = "waits between re-evaluations of an out-of-order event; the last step repeats"},
    {.name = "max_age",
     .type = CONFIG_DURATION,
     .offset = offsetof(struct defer_policy, max_age_ms),
     .def = "24h",
     .meaning = "after this long (since receipt or the last replay) the event dead-letters: precondition never met"},
};

/* ---- [portal] ------------------------------------------------------------- */

#define PK(field, ...)                                                                                                \
    {                                                                                                                 \
        .name = #field, .offset = offsetof(struct portal_config, field), __VA_ARGS__                                  \
    }
static const struct config_key portal_keys[] = {
    PK(base_url, .type = CONFIG_STRING, .def_doc = "http:// + [hookd] listen",
       .meaning = "the links' base, e.g. https://hooks.example.com (then the cookie is Secure)"),
    PK(link_ttl, .type = CONFIG_DURATION, .def = "10m", .min = "1s", .flags = CONFIG_LATE,
       .meaning = "how long a login link may be opened (once)"),
    PK(session_ttl, .type = CONFIG_DURATION, .def = "7d", .min = "1s", .flags = CONFIG_LATE,
       .meaning = "how long a portal session lives (fixed into each link when it is minted)"),
    PK(title, .type = CONFIG_STRING, .def = "Webhooks",
       .meaning = "the portal's name in its header and page titles, at most 80 characters"),
    PK(logo_url, .type = CONFIG_STRING, .meaning = "an https:// image URL or a path, shown in the header"),
    PK(accent_color, .type = CONFIG_STRING, .def = "#2563eb",
       .meaning = "#rgb or #rrggbb: buttons, links and the header's rule"),
};
#undef PK

/* ---- [retention] ---------------------------------------------------------- */

#define TK(field, ...)                                                                                                \
    {                                                                                                                 \
        .name = #field, .type = CONFIG_DURATION, .offset = offsetof(struct retention_config, field), .min = "1s",     \
        __VA_ARGS__                                                                                                   \
    }
static const struct config_key retention_keys[] = {
    TK(inbox, .def = "30d",
       .meaning = "PROCESSED inbox rows (counted from their last change), and QUARANTINED ones whose dead letter was "
                  "purged"),
    TK(outbox, .def = "30d", .meaning = "outbox events whose deliveries are all terminal, with those deliveries"),
    TK(attempts, .def = "30d", .meaning = "the attempt history (the attempts of an open dead letter are kept)"),
    TK(dead_letters, .def = "30d",
       .meaning = "replayed dead letters (open ones are never removed automatically; hookd dlq purge removes them)"),
    TK(dedup, .def = "30d", .def_doc = "the longest of 30d, inbox and [defer] max_age",
       .meaning = "how long a partner's event id (and body digest) is remembered: a duplicate within it is answered "
                  "200 and stored nowhere; at least inbox and [defer] max_age"),
    TK(interval, .def = "1m", .flags = CONFIG_OFF,
       .meaning = "how often each worker tries a retention pass (one runs at a time in the cluster); off: workers "
                  "run none, and hookd retention run does"),
};
#undef TK

/* ---- [partner NAME] ------------------------------------------------------- */

static int set_scheme(void *obj, const struct config_key *k, const char *arg, const char *v, char *err, size_t errlen)
{
    (void)k, (void)arg;
    struct partner_config *p = obj;
    if (sig_scheme_parse(v, &p->scheme) == 0)
        return 0;
    return err_set(err, errlen,
                   "unknown scheme '%s' (use a preset: standard-webhooks, stripe, github, hmac-sha256, shopify, "
                   "slack, "
                   "twilio, square, paddle, zoom, linear, intercom, mailgun, sendgrid, discord, meta, twitch, "
                   "typeform, hubspot, calendly, gitlab, bitbucket, pagerduty, woocommerce, x; or hmac)",
                   v);
}

/* `secret =` / `public_key =`: appended, for rotation. */
static int add_key_text(struct config_secret *arr, size_t *n, const char *what, const char *v, char *err,
                        size_t errlen)
{
    if (*n == CONFIG_PARTNER_KEYS_MAX)
        return err_set(err, errlen, "too many %ss (at most %d)", what, CONFIG_PARTNER_KEYS_MAX);
    if (config_read_secret(v, &arr[*n], err, errlen) != 0)
        return -1;
    (*n)++;
    return 0;
}

static int set_secret(void *obj, const struct config_key *k, const char *arg, const char *v, char *err, size_t errlen)
{
    (void)k, (void)arg;
    struct partner_config *p = obj;
    return add_key_text(p->secrets, &p->nsecrets, "secret", v, err, errlen);
}

static int set_public_key(void *obj, const struct config_key *k, const char *arg, const char *v, char *err,
                          size_t errlen)
{
    (void)k, (void)arg;
    struct partner_config *p = obj;
    return add_key_text(p->public_keys, &p->npublic_keys, "public key", v, err, errlen);
}

static int set_public_url(void *obj, const struct config_key *k, const char *arg, const char *v, char *err,
                          size_t errlen)
{
    (void)k, (void)arg;
    struct partner_config *p = obj;
    if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0)
        return err_set(err, errlen, "bad public_url '%s': use the full http:// or https:// URL the provider calls", v);
    config_set_string(&p->public_url, v);
    return 0;
}

static int set_tolerance(void *obj, const struct config_key *k, const char *arg, const char *v, char *err,
                         size_t errlen)
{
    (void)k, (void)arg;
    struct partner_config *p = obj;
    p->tolerance_set = true;
    return backoff_parse_duration(v, &p->tolerance, err, errlen);
}

static int set_allow_ips(void *obj, const struct config_key *k, const char *arg, const char *v, char *err,
                         size_t errlen)
{
    (void)k, (void)arg;
    struct partner_config *p = obj;
    struct cidr_list l = {NULL, 0};
    if (cidr_list_parse(v, &l, err, errlen) != 0)
        return -1;
    cidr_list_free(&p->allow_ips);
    p->allow_ips = l;
    config_set_string(&p->allow_ips_text, v);
    return 0;
}

static int set_event_types(void *obj, const struct config_key *k, const char *arg, const char *v, char *err,
                           size_t errlen)
{
    (void)k, (void)arg;
    struct partner_config *p = obj;
    char *copy = xstrdup(v), *save = NULL;
    for (size_t i = 0; i < p->nevent_types; i++)
        free(p->event_types[i]);
    p->nevent_types = 0;
    for (char *tok = strtok_r(copy, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
        p->event_types = xrealloc(p->event_types, (p->nevent_types + 1) * sizeof *p->event_types);
        p->event_types[p->nevent_types++] = xstrdup(tok);
    }
    free(copy);
    if (p->nevent_types == 0)
        return err_set(err, errlen, "event_types is empty (give globs such as order.*, or leave the key out)");
    config_set_string(&p->event_types_text, v);
    return 0;
}

static int set_signed(void *obj, const struct config_key *k, const char *arg, const char *v, char *err, size_t errlen)
{
    (void)k, (void)arg;
    struct partner_config *p = obj;
    if (sig_template_check(v, err, errlen) != 0)
        return -1;
    config_set_string(&p->hmac_signed, v);
    return 0;
}

/* The enums of `scheme = hmac`, stored as int by the enum reader. */
_Static_assert(sizeof(enum sig_alg) == sizeof(int) && sizeof(enum sig_encoding) == sizeof(int) &&
                   sizeof(enum sig_ts_format) == sizeof(int),
               "enum fields are written as int");
static const struct config_word hmac_algorithms[] = {{"sha1", SIG_ALG_HMAC_SHA1},
                                                     {"sha256", SIG_ALG_HMAC_SHA256},
                                                     {"sha512", SIG_ALG_HMAC_SHA512},
                                                     {NULL, 0}};
static const struct config_word hmac_encodings[] = {{"hex", SIG_ENC_HEX}, {"base64", SIG_ENC_BASE64}, {NULL, 0}};
static const struct config_word timestamp_formats[] = {{"unix", SIG_TS_UNIX},
                                                       {"unix_ms", SIG_TS_UNIX_MS},
                                                       {"rfc3339", SIG_TS_RFC3339},
                                                       {NULL, 0}};

static int set_several(void *obj, const struct config_key *k, const char *arg, const char *v, char *err, size_t errlen)
{
    (void)k, (void)arg;
    struct partner_config *p = obj;
    if (strcasecmp(v, "true") == 0 || strcasecmp(v, "yes") == 0 || strcmp(v, "1") == 0)
        p->spec.multiple = true;
    else if (strcasecmp(v, "false") == 0 || strcasecmp(v, "no") == 0 || strcmp(v, "0") == 0)
        p->spec.multiple = false;
    else
        return err_set(err, errlen, "bad several_signatures '%s' (use true or false)", v);
    return 0;
}

/* `separators = comma, semicolon, space` (any of the three): what splits
 * the elements of the signature header, as the characters. */
static int set_separators(void *obj, const struct config_key *k, const char *arg, const char *v, char *err,
                          size_t errlen)
{
    (void)k, (void)arg;
    static const struct {
        const char *name;
        char c;
    } names[] = {{"comma", ','}, {"semicolon", ';'}, {"space", ' '}};
    struct partner_config *p = obj;
    char chars[4] = "", *text = xstrdup(v), *save = NULL;
    size_t n = 0;
    int rc = 0;

    for (char *tok = strtok_r(text, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        char *name = config_trim(tok);
        size_t i = 0;
        while (i < 3 && strcmp(name, names[i].name) != 0)
            i++;
        if (i == 3 || n == 3 || strchr(chars, names[i].c))
            rc = -1;
        else
            chars[n++] = names[i].c;
    }
    free(text);
    if (rc != 0 || n == 0)
        return err_set(err, errlen, "bad separators '%s' (a list of comma, semicolon, space)", v);
    config_set_string(&p->hmac_separators, chars);
    return 0;
}

#define PTK(field, ...)                                                                                               \
    {                                                                                                                 \
        .name = #field, .offset = offsetof(struct partner_config, field), __VA_ARGS__                                 \
    }
#define HMK(key, field, ...)                                                                                          \
    {                                                                                                                 \
        .name = key, .offset = offsetof(struct partner_config, field), .flags = CONFIG_HMAC, __VA_ARGS__              \
    }
static const struct config_key partner_keys[] = {
    {.name = "scheme",
     .type = CONFIG_ENUM,
     .set = set_scheme,
     .flags = CONFIG_REQUIRED,
     .meaning = "a provider preset (standard-webhooks, stripe, github, hmac-sha256, shopify, slack, twilio, square, "
                "paddle, zoom, linear, intercom, mailgun, sendgrid, discord, meta, twitch, typeform, hubspot, "
                "calendly, gitlab, bitbucket, pagerduty, woocommerce, x), or hmac: a scheme written in the config "
                "with the keys below"},
    {.name = "secret",
     .type = CONFIG_SECRET,
     .set = set_secret,
     .flags = CONFIG_REPEAT,
     .def_doc = "required for shared-secret schemes",
     .meaning = "the signing secret as the provider's console shows it (Standard Webhooks: whsec_<base64>); at least "
                "16 bytes of key; repeat the key for rotation: any secret may match"},
    {.name = "public_key",
     .type = CONFIG_SECRET,
     .set = set_public_key,
     .flags = CONFIG_REPEAT,
     .def_doc = "required for sendgrid, discord",
     .meaning = "the verification key as the provider's console shows it (Discord: 32 bytes in hex; SendGrid: base64 "
                "DER or PEM); repeat for rotation"},
    PTK(verify_token, .type = CONFIG_SECRET,
        .meaning = "meta: the token typed into Meta's subscription form; a subscription check is answered only when "
                   "it matches"),
    {.name = "public_url",
     .type = CONFIG_URL,
     .set = set_public_url,
     .def_doc = "built from Host and the request line",
     .meaning = "the URL the provider calls, as configured in its console, for the presets that sign it (twilio, "
                "square, hubspot) and {url} in scheme = hmac; set it behind a proxy or TLS terminator"},
    {.name = "tolerance",
     .type = CONFIG_DURATION,
     .set = set_tolerance,
     .def_doc = "the preset's; 5m for scheme = hmac and presets without one",
     .meaning = "accepted clock difference of signed timestamps"},
    PTK(header, .type = CONFIG_STRING,
        .meaning = "hmac-sha256: the header holding the hex or base64 MAC (optional sha256= prefix)"),
    PTK(event_id, .type = CONFIG_SOURCE, .def_doc = "the preset's",
        .meaning = "where the event's id is; digest: the hex SHA-256 of the signed content, for providers that send "
                   "no id"),
    PTK(event_type, .type = CONFIG_SOURCE, .def_doc = "the preset's",
        .meaning = "where the event's type is (json:PATH or header:NAME)"),
    PTK(entity_id, .type = CONFIG_SOURCE, .def_doc = "the preset's, if any",
        .meaning = "where the entity id is, e.g. json:data.object.metadata.order_id"),
    PTK(entity_type, .type = CONFIG_STRING, .def_doc = "by event type",
        .meaning = "the machine to use; by default the machine whose transitions name the event type"),
    PTK(max_body, .type = CONFIG_SIZE, .def_doc = "[hookd] max_body", .meaning = "the partner's body limit"),
    {.name = "allow_ips",
     .type = CONFIG_LIST,
     .set = set_allow_ips,
     .def_doc = "any",
     .meaning = "CIDR ranges (IPv4 and IPv6) the partner's requests must come from; anything else gets 403 and "
                "nothing is stored"},
    {.name = "event_types",
     .type = CONFIG_LIST,
     .set = set_event_types,
     .def_doc = "any",
     .meaning = "globs (comma- or blank-separated) the event type must match; other types are refused with 422 and "
                "not stored"},
    HMK("algorithm", spec.alg, .type = CONFIG_ENUM, .words = hmac_algorithms, .def = "sha256",
        .bit = CONFIG_HMAC_ALGORITHM, .meaning = "the HMAC's hash"),
    HMK("signed", hmac_signed, .type = CONFIG_TEMPLATE, .set = set_signed, .def = "{body}", .bit = CONFIG_HMAC_SIGNED,
        .meaning = "the signed bytes: text with {body}, {timestamp}, {url}, {method}, {header:Name}, "
                   "{json:dotted.path}, {form}"),
    {.name = "signature_header",
     .type = CONFIG_STRING,
     .offset = offsetof(struct partner_config, hmac_signature_header),
     .flags = CONFIG_HMAC | CONFIG_REQUIRED,
     .bit = CONFIG_HMAC_SIGNATURE_HEADER,
     .meaning = "the header holding the signature"},
    HMK("signature_prefix", hmac_signature_prefix, .type = CONFIG_STRING, .bit = CONFIG_HMAC_SIGNATURE_PREFIX,
        .meaning = "text before each signature (sha256=, v1=), any letter case"),
    HMK("encoding", spec.encoding, .type = CONFIG_ENUM, .words = hmac_encodings, .def = "hex",
        .bit = CONFIG_HMAC_ENCODING, .meaning = "how the signature is written"),
    HMK("timestamp_header", hmac_timestamp_header, .type = CONFIG_STRING, .bit = CONFIG_HMAC_TIMESTAMP_HEADER,
        .meaning = "the header holding the timestamp; {timestamp} must then be in signed"),
    HMK("timestamp_prefix", hmac_timestamp_prefix, .type = CONFIG_STRING, .bit = CONFIG_HMAC_TIMESTAMP_PREFIX,
        .meaning = "the timestamp is the element with this prefix (t=) of timestamp_header (by default the signature "
                   "header)"),
    HMK("timestamp_format", spec.timestamp_format, .type = CONFIG_ENUM, .words = timestamp_formats, .def = "unix",
        .bit = CONFIG_HMAC_TIMESTAMP_FORMAT,
        .meaning = "how the timestamp is written: unix seconds, unix "
                   "milliseconds or RFC 3339"),
    HMK("several_signatures", spec, .type = CONFIG_BOOL, .set = set_several, .def = "false",
        .bit = CONFIG_HMAC_SEVERAL,
        .meaning = "true: the header holds several elements (t=...,v1=...,v1=...); each with the prefix is a "
                   "candidate"),
    HMK("separators", hmac_separators, .type = CONFIG_LIST, .set = set_separators,
        .def_doc = "comma, semicolon, space less those in the prefix", .bit = CONFIG_HMAC_SEPARATORS,
        .meaning = "what splits the elements: a list of comma, semicolon, space"),
};
#undef PTK
#undef HMK

static int open_partner(struct hookd_config *c, const char *title, const char *arg, int line,
                        struct config_target *out, char *err, size_t errlen)
{
    (void)title;
    for (size_t i = 0; i < c->npartners; i++)
        if (strcmp(c->partners[i].name, arg) == 0)
            return err_set(err, errlen, "duplicate section [partner %s] (first at line %d)", arg, c->partners[i].line);
    for (const char *p = arg; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
            return err_set(err, errlen, "bad partner name '%s': use letters, digits, '-', '_', '.'", arg);
    if (strlen(arg) > 50)
        return err_set(err, errlen, "partner name '%s' is longer than 50 characters", arg);
    c->partners = xrealloc(c->partners, (c->npartners + 1) * sizeof *c->partners);
    struct partner_config *p = &c->partners[c->npartners++];
    memset(p, 0, sizeof *p);
    p->name = xstrdup(arg);
    p->line = line;
    p->tolerance = 5 * 60 * 1000;
    p->scheme = (enum sig_scheme) - 1;
    *out = (struct config_target){p, &p->hmac_keys, p->name};
    return 0;
}

/* ---- [machine NAME] ------------------------------------------------------- */

/* Event types and state names: what a partner sends and a table stores. */
static bool valid_name(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("_-.:", *s))
            return false;
    return true;
}

/* Splits "a, b, c" into trimmed items; returns the count (at most max + 1). */
static int split_list(char *s, char **items, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(s, ",", &save); tok && n < max + 1; tok = strtok_r(NULL, ",", &save))
        items[n++] = config_trim(tok);
    return n;
}

static int set_transition(void *obj, const struct config_key *k, const char *event, const char *v, char *err,
                          size_t errlen)
{
    (void)k;
    struct machine_config *m = obj;
    const char *arrow = strstr(v, "->");
    if (!arrow)
        return err_set(err, errlen, "bad transition '%s': expected FROM[, FROM...] -> TO", v);
    char *from = xstrndup(v, (size_t)(arrow - v));
    char *to = xstrdup(arrow + 2);
    char *items[MACHINE_MAX_STATES + 1];
    int n = split_list(from, items, MACHINE_MAX_STATES);
    int rc = -1;
    /* Empty names are left to machine_add_transition, which says which one. */
    char *target = config_trim(to);
    bool names_ok = (!*event || valid_name(event)) && (!*target || valid_name(target));
    for (int i = 0; i < n && i < MACHINE_MAX_STATES; i++)
        names_ok = names_ok && (!*items[i] || valid_name(items[i]));
    if (n == 0 || n > MACHINE_MAX_STATES)
        err_set(err, errlen, "bad transition '%s': expected FROM[, FROM...] -> TO", v);
    else if (!names_ok)
        err_set(err, errlen, "bad transition '%s %s': event and state names use letters, digits, '_', '-', '.', ':'",
                event, v);
    else
        rc = machine_add_transition(m->machine, event, (const char *const *)items, (size_t)n, target, err, errlen);
    free(from);
    free(to);
    return rc;
}

static int set_emit(void *obj, const struct config_key *k, const char *event, const char *v, char *err, size_t errlen)
{
    (void)k, (void)err, (void)errlen;
    struct machine_config *m = obj;
    m->emits = xrealloc(m->emits, (m->nemits + 1) * sizeof *m->emits);
    m->emits[m->nemits].event = xstrdup(event);
    m->emits[m->nemits].emit_type = xstrdup(v);
    m->nemits++;
    return 0;
}

static int set_initial(void *obj, const struct config_key *k, const char *arg, const char *v, char *err, size_t errlen)
{
    (void)k, (void)arg;
    struct machine_config *m = obj;
    return machine_set_initial(m->machine, v, err, errlen);
}

static int set_on_conflict(void *obj, const struct config_key *k, const char *arg, const char *v, char *err,
                           size_t errlen)
{
    (void)k, (void)arg;
    struct machine_config *m = obj;
    if (strcmp(v, "dlq") != 0 && strcmp(v, "ignore") != 0)
        return err_set(err, errlen, "bad on_conflict '%s': use dlq or ignore", v);
    m->on_conflict = v[0] == 'd' ? CONFLICT_DLQ : CONFLICT_IGNORE;
    return 0;
}

static int set_create(void *obj, const struct config_key *k, const char *arg, const char *v, char *err, size_t errlen)
{
    (void)k, (void)arg;
    struct machine_config *m = obj;
    bool b;
    if (config_read_bool(v, &b) != 0)
        return err_set(err, errlen, "bad boolean '%s': use true or false", v);
    m->create = b;
    return 0;
}

#define MK(field, ...)                                                                                                \
    {                                                                                                                 \
        .name = #field, .offset = offsetof(struct machine_config, field), __VA_ARGS__                                 \
    }
static const struct config_key machine_keys[] = {
    MK(table, .type = CONFIG_IDENTIFIER, .def_doc = "the built-in hookd_entities",
       .meaning = "your own entity table (schema.table allowed)"),
    MK(id_column, .type = CONFIG_IDENTIFIER, .def_doc = "id", .meaning = "the id column of table"),
    MK(state_column, .type = CONFIG_IDENTIFIER, .def_doc = "status", .meaning = "the state column of table"),
    MK(version_column, .type = CONFIG_IDENTIFIER, .def_doc = "none",
       .meaning = "a column of table incremented per applied transition"),
    {.name = "initial",
     .type = CONFIG_STATE,
     .set = set_initial,
     .flags = CONFIG_REQUIRED,
     .meaning = "the state of a new entity"},
    {.name = "create",
     .type = CONFIG_BOOL,
     .set = set_create,
     .def_doc = "true for hookd_entities, else false",
     .meaning = "create a missing entity in initial; otherwise its events wait"},
    {.name = "on_conflict",
     .type = CONFIG_ENUM,
     .set = set_on_conflict,
     .def = "dlq",
     .meaning = "dlq or ignore: an event that can never apply is dead-lettered, or marked processed with outcome "
                "ignored"},
    {.name = "transition",
     .arg = "EVENT",
     .type = CONFIG_TRANSITION,
     .set = set_transition,
     .meaning = "the states from which event EVENT applies, and the state it leads to; every state must be reachable "
                "from initial"},
    {.name = "emit",
     .arg = "EVENT",
     .type = CONFIG_STRING,
     .set = set_emit,
     .meaning = "the outbox event type written in the same transaction when EVENT applies"},
};
#undef MK

static int open_machine(struct hookd_config *c, const char *title, const char *arg, int line,
                        struct config_target *out, char *err, size_t errlen)
{
    (void)title;
    for (size_t i = 0; i < c->nmachines; i++)
        if (strcmp(c->machines[i].name, arg) == 0)
            return err_set(err, errlen, "duplicate section [machine %s] (first at line %d)", arg, c->machines[i].line);
    c->machines = xrealloc(c->machines, (c->nmachines + 1) * sizeof *c->machines);
    struct machine_config *m = &c->machines[c->nmachines++];
    memset(m, 0, sizeof *m);
    m->name = xstrdup(arg);
    m->machine = machine_new(arg);
    m->line = line;
    m->create = -1; /* unset: true for hookd_entities, false for user tables */
    *out = (struct config_target){m, NULL, m->name};
    return 0;
}

/* ---- [route NAME] ----------------------------------------------------------- */

static int set_route_events(void *obj, const struct config_key *k, const char *arg, const char *v, char *err,
                            size_t errlen)
{
    (void)k, (void)arg;
    struct route_config *r = obj;
    char *copy = xstrdup(v), *save = NULL;
    int rc = 0;
    for (size_t i = 0; i < r->nevents; i++)
        free(r->events[i]);
    r->nevents = 0;
    for (char *tok = strtok_r(copy, ", \t", &save); tok && rc == 0; tok = strtok_r(NULL, ", \t", &save)) {
        for (const char *q = tok; *q; q++)
            if (*q != '*' && !isalnum((unsigned char)*q) && !strchr("_-.:", *q)) {
                rc = err_set(err, errlen, "bad event type glob '%s': use letters, digits, '_', '-', '.', ':' and '*'",
                             tok);
                break;
            }
        if (rc != 0)
            break;
        r->events = xrealloc(r->events, (r->nevents + 1) * sizeof *r->events);
        r->events[r->nevents++] = xstrdup(tok);
    }
    free(copy);
    if (rc == 0 && r->nevents == 0)
        rc = err_set(err, errlen, "events is empty (give globs such as invoice.*, or leave the key out for any)");
    if (rc == 0)
        config_set_string(&r->events_text, v);
    return rc;
}

static int set_route_filter(void *obj, const struct config_key *k, const char *arg, const char *v, char *err,
                            size_t errlen)
{
    (void)k, (void)arg;
    struct route_config *r = obj;
    json_error_t je;
    json_t *f = json_loads(v, JSON_REJECT_DUPLICATES, &je);
    if (!f)
        return err_set(err, errlen, "bad filter: not JSON (%s at column %d)", je.text, je.column);
    char why[200];
    if (!json_is_object(f) || payload_filter_check(f, why, sizeof why) != 0) {
        if (!json_is_object(f))
            snprintf(why, sizeof why, "a filter is a JSON object");
        json_decref(f);
        return err_set(err, errlen, "bad filter: %s", why);
    }
    json_decref(r->filter);
    r->filter = f;
    config_set_string(&r->filter_text, v);
    return 0;
}

static int set_route_tenant(void *obj, const struct config_key *k, const char *arg, const char *v, char *err,
                            size_t errlen)
{
    (void)k, (void)arg;
    struct route_config *r = obj;
    size_t n = strlen(v);
    if (n < 1 || n > 256 || strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != n)
        return err_set(err, errlen,
                       "bad tenant '%s': a tenant uid is 1 to 256 characters of a-z, A-Z, 0-9, '-', '_', '.'", v);
    config_set_string(&r->tenant, v);
    return 0;
}

static int set_route_emit_type(void *obj, const struct config_key *k, const char *arg, const char *v, char *err,
                               size_t errlen)
{
    (void)k, (void)arg;
    struct route_config *r = obj;
    if (!valid_name(v) || strlen(v) > 100)
        return err_set(err, errlen,
                       "bad emit_type '%s': at most 100 characters of letters, digits, '_', '-', '.', ':'", v);
    config_set_string(&r->emit_type, v);
    return 0;
}

#define RK(field, ...)                                                                                                \
    {                                                                                                                 \
        .name = #field, .offset = offsetof(struct route_config, field), __VA_ARGS__                                   \
    }
static const struct config_key route_keys[] = {
    RK(partner, .type = CONFIG_STRING, .flags = CONFIG_REQUIRED,
       .meaning = "the [partner NAME] whose verified, deduplicated events the route takes"),
    {.name = "events",
     .type = CONFIG_LIST,
     .set = set_route_events,
     .def_doc = "any",
     .meaning = "event-type globs (comma- or blank-separated, `*` any run of characters) the event type must match"},
    {.name = "filter",
     .type = CONFIG_STRING,
     .set = set_route_filter,
     .def_doc = "none",
     .meaning = "a payload filter in the endpoints' syntax (a JSON object: paths, $eq, $neq, $in, $gt, $lt, $exists, "
                "$and, $or); events whose payload does not match are not routed"},
    {.name = "tenant",
     .type = CONFIG_STRING,
     .set = set_route_tenant,
     .def_doc = "none",
     .meaning = "the uid of the tenant the emitted event belongs to (its endpoints receive it); without it, the "
                "endpoints without a tenant"},
    {.name = "emit_type",
     .type = CONFIG_STRING,
     .set = set_route_emit_type,
     .def_doc = "the partner's event type",
     .meaning = "the event type the outbox event is emitted as"},
};
#undef RK

static int open_route(struct hookd_config *c, const char *title, const char *arg, int line, struct config_target *out,
                      char *err, size_t errlen)
{
    (void)title;
    for (size_t i = 0; i < c->nroutes; i++)
        if (strcmp(c->routes[i].name, arg) == 0)
            return err_set(err, errlen, "duplicate section [route %s] (first at line %d)", arg, c->routes[i].line);
    for (const char *p = arg; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
            return err_set(err, errlen, "bad route name '%s': use letters, digits, '-', '_', '.'", arg);
    if (strlen(arg) > 50)
        return err_set(err, errlen, "route name '%s' is longer than 50 characters", arg);
    c->routes = xrealloc(c->routes, (c->nroutes + 1) * sizeof *c->routes);
    struct route_config *r = &c->routes[c->nroutes++];
    memset(r, 0, sizeof *r);
    r->name = xstrdup(arg);
    r->line = line;
    *out = (struct config_target){r, NULL, r->name};
    return 0;
}

/* ---- the sections ----------------------------------------------------------- */

#define KEYS(t) t, sizeof t / sizeof t[0]
const struct config_section config_sections[CONFIG_NSECTIONS] = {
    [CONFIG_SEC_HOOKD] = {.name = "hookd",
                          .where = "[hookd]",
                          .keys = KEYS(hookd_keys),
                          .offset = 0,
                          .meaning = "The worker: its stores, its listeners, its roles and its limits."},
    [CONFIG_SEC_RETRY] = {.name = "retry",
                          .where = "a retry section",
                          .keys = KEYS(retry_keys),
                          .list_keys = true,
                          .bound_style = CONFIG_BOUND_EXPECTED,
                          .offset = offsetof(struct hookd_config, retry),
                          .meaning = "Failures: the waits after failed attempts, then the dead-letter queue; and, "
                                     "for deliveries, each endpoint's circuit."},
    [CONFIG_SEC_DEFER] = {.name = "defer",
                          .where = "[defer]",
                          .keys = KEYS(defer_keys),
                          .list_keys = true,
                          .offset = offsetof(struct hookd_config, defer),
                          .meaning = "Out-of-order events: how often an event whose precondition has not happened "
                                     "yet is evaluated again, and for how long."},
    [CONFIG_SEC_PORTAL] = {.name = "portal",
                           .where = "[portal]",
                           .keys = KEYS(portal_keys),
                           .list_keys = true,
                           .offset = offsetof(struct hookd_config, portal),
                           .meaning = "The tenants' portal. The portal reads the config per request."},
    [CONFIG_SEC_RETENTION] = {.name = "retention",
                              .where = "[retention]",
                              .keys = KEYS(retention_keys),
                              .list_keys = true,
                              .offset = offsetof(struct hookd_config, retention),
                              .meaning = "How long terminal data is kept. Each pass uses the windows current when it "
                                         "starts; windows of seconds are accepted, for tests."},
    {.name = "retry",
     .arg = "SCOPE:NAME",
     .where = "a retry section",
     .keys = KEYS(retry_keys),
     .list_keys = true,
     .bound_style = CONFIG_BOUND_EXPECTED,
     .open = open_retry_override,
     .keys_of = "retry",
     .meaning = "A [retry] for one partner ([retry partner:NAME]), event type glob ([retry event:GLOB]) or endpoint "
                "([retry endpoint:NAME]); unset keys come from [retry]. For an inbound event the event override wins "
                "over the partner override, and the longest matching pattern wins. The circuit keys belong in [retry] "
                "and [retry endpoint:NAME] only."},
    {.name = "partner",
     .arg = "NAME",
     .keys = KEYS(partner_keys),
     .list_keys = true,
     .open = open_partner,
     .meaning = "A partner posting webhooks to /v1/inbox/NAME: how its requests are verified, and where an event's "
                "id, type and entity are. NAME: letters, digits, '-', '_', '.', at most 50 characters."},
    {.name = "machine",
     .arg = "NAME",
     .keys = KEYS(machine_keys),
     .list_keys = true,
     .open = open_machine,
     .meaning = "A state machine: the entity table it acts on, and the transitions inbound events propose."},
    {.name = "route",
     .arg = "NAME",
     .keys = KEYS(route_keys),
     .list_keys = true,
     .open = open_route,
     .meaning = "A route: a partner's verified, deduplicated events that match its event types and payload filter "
                "are emitted to the outbox in the transaction that evaluates them, once each, and reach the "
                "endpoints that subscribe to them like any emitted event. An event that routes take and no machine "
                "names ends with outcome routed. NAME: letters, digits, '-', '_', '.', at most 50 characters."},
};
#undef KEYS

const struct config_key *config_key_find(const struct config_section *s, const char *name)
{
    for (size_t i = 0; i < s->nkeys; i++) {
        const struct config_key *k = &s->keys[i];
        size_t n = strlen(k->name);
        if (k->arg ? strncmp(name, k->name, n) == 0 && name[n] == ' ' : strcmp(name, k->name) == 0)
            return k;
    }
    return NULL;
}

const struct config_key *config_key_named(int sec, const char *name)
{
    const struct config_key *k = config_key_find(&config_sections[sec], name);
    HOOKD_ASSERT(k && !k->arg);
    return k;
}

/* ---- the reference ---------------------------------------------------------- */

size_t config_doc_nsections(void)
{
    return CONFIG_NSECTIONS;
}

void config_doc_section(size_t i, struct config_doc_section *out)
{
    const struct config_section *s = &config_sections[i];
    HOOKD_ASSERT(i < CONFIG_NSECTIONS);
    snprintf(out->title, sizeof out->title, "%s%s%s", s->name, s->arg ? " " : "", s->arg ? s->arg : "");
    out->keys_of = s->keys_of;
    out->meaning = s->meaning;
    out->nkeys = s->nkeys;
}

void config_doc_key(size_t section, size_t key, struct config_doc_key *out)
{
    HOOKD_ASSERT(section < CONFIG_NSECTIONS && key < config_sections[section].nkeys);
    const struct config_key *k = &config_sections[section].keys[key];
    snprintf(out->name, sizeof out->name, "%s%s%s", k->name, k->arg ? " " : "", k->arg ? k->arg : "");
    out->type = config_types[k->type].name;
    out->def = k->def_doc ? k->def_doc : k->def;
    out->def_is_value = !k->def_doc && k->def;
    out->required = k->flags & CONFIG_REQUIRED;
    out->restart = k->flags & CONFIG_RESTART;
    out->repeat = k->flags & CONFIG_REPEAT;
    out->hmac_only = k->flags & CONFIG_HMAC;
    config_bounds_text(k, out->bounds, sizeof out->bounds);
    out->meaning = k->meaning;
}

size_t config_doc_ntypes(void)
{
    return CONFIG_TYPE_COUNT;
}

void config_doc_type(size_t i, const char **name, const char **meaning)
{
    HOOKD_ASSERT(i < CONFIG_TYPE_COUNT);
    *name = config_types[i].name;
    *meaning = config_types[i].meaning;
}
