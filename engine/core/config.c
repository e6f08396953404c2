/* Loading the INI config (see config.h). libinih splits the file into
 * key/value pairs; we feed it through our own line reader, which counts lines
 * (so every error names file:line) and sees each `[section]` header (so a
 * duplicate section or an unknown section kind is caught where it stands).
 * Keys are applied through declarative tables: name, type, target field,
 * default, and whether a reload may change it (PgBouncer's CF_ABS table). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <libpq-fe.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "jsonpath.h"
#include "log.h"
#include "redis_conn.h"
#include "xmalloc.h"

enum key_type { KT_STRING, KT_SECRET, KT_DURATION, KT_INT, KT_BOOL, KT_SIZE, KT_ROLES };

struct key_def {
    const char *name;
    enum key_type type;
    size_t offset;
    const char *def; /* NULL = no default (unset) */
    bool reloadable;
};

#define HK(name, type, def, reload)                                                                                   \
    {                                                                                                                 \
#name, type, offsetof(struct hookd_config, name), def, reload                                                 \
    }
static const struct key_def hookd_keys[] = {
    HK(database, KT_SECRET, NULL, false),
    HK(redis, KT_SECRET, NULL, false),
    HK(roles, KT_ROLES, "ingest, inbox, relay", false),
    HK(listen, KT_STRING, "127.0.0.1:8080", false),
    HK(key_prefix, KT_STRING, "hookd", false),
    HK(log_level, KT_STRING, "info", true),
    HK(reconcile_interval, KT_DURATION, "30s", true),
    HK(reconcile_horizon, KT_DURATION, "1h", true),
    HK(allow_private_networks, KT_BOOL, "false", true),
    HK(admin_token, KT_SECRET, NULL, true),
    HK(admin_listen, KT_STRING, "127.0.0.1:8081", false), /* "off" or empty: no /admin, no /metrics */
    HK(admin_session_timeout, KT_DURATION, "12h", true),
    HK(alert_webhook, KT_SECRET, NULL, true),
    HK(alert_interval, KT_DURATION, "1m", true),
    HK(heartbeat_interval, KT_DURATION, "2s", true),
    HK(lease, KT_DURATION, "30s", true),
    HK(max_sleep, KT_DURATION, "1s", true),
    HK(shutdown_timeout, KT_DURATION, "10s", true),
    HK(db_pool_size, KT_INT, "8", false),
    HK(batch_size, KT_INT, "250", true),
    HK(max_inflight, KT_INT, "1000", true),
    HK(max_inflight_per_origin, KT_INT, "64", true), /* outbound requests to one receiver (http_client.h) */
    HK(max_idle_connections, KT_INT, "1000", true),  /* outbound keep-alive pool */
    HK(max_idle_per_origin, KT_INT, "256", true),
    HK(first_attempt_window, KT_DURATION, "250ms", true),
    HK(ingest_batch_max, KT_INT, "256", true),
    HK(ingest_concurrency, KT_INT, "2", false), /* the ingest pool's threads */
    HK(max_body, KT_SIZE, "1MiB", true),
    HK(ca_file, KT_STRING, NULL, true),
    HK(redact_headers, KT_STRING, CONFIG_REDACT_HEADERS_DEFAULT, true),
    HK(trusted_proxies, KT_STRING, NULL, true), /* CIDR list; X-Forwarded-For is believed only from these */
    HK(redis_ca_file, KT_STRING, NULL, false),  /* rediss: the CA (default: the system store) */
    HK(redis_cert_file, KT_STRING, NULL, false),
    HK(redis_key_file, KT_STRING, NULL, false),
    HK(redis_sentinel_password, KT_SECRET, NULL, false),
    /* the public listener's limits: fixed when the listener starts */
    HK(max_header_size, KT_SIZE, "16KiB", false),
    HK(max_headers, KT_INT, "100", false),
    HK(request_timeout, KT_DURATION, "10s", false),
    HK(max_connections, KT_INT, "4096", false),
    HK(max_buffered_body, KT_SIZE, "64MiB", false),
    /* a tenant's budget: endpoints per application, and the bytes of their
     * event types and payload filters (the API refuses what passes them) */
    HK(tenant_max_endpoints, KT_INT, "100", true),
    HK(tenant_max_filter_bytes, KT_SIZE, "256KiB", true),
};
#undef HK

#define PK(name, type, def)                                                                                           \
    {                                                                                                                 \
#name, type, offsetof(struct hookd_config, portal.name), def, true                                            \
    }
static const struct key_def portal_keys[] = {
    PK(base_url, KT_STRING, NULL),    PK(link_ttl, KT_DURATION, "10m"), PK(session_ttl, KT_DURATION, "7d"),
    PK(title, KT_STRING, "Webhooks"), PK(logo_url, KT_STRING, NULL),    PK(accent_color, KT_STRING, "#2563eb"),
};
#undef PK
#define NPORTAL_KEYS (sizeof portal_keys / sizeof portal_keys[0])

/* Bits of retry_override.set: which keys a `[retry X:Y]` section gave. */
enum {
    SET_SCHEDULE = 1,
    SET_MAX_ATTEMPTS = 2,
    SET_JITTER = 4,
    SET_CIRCUIT = 8,
    SET_CIRCUIT_FAILURES = 16,
    SET_CIRCUIT_PROBE = 32,
    SET_CIRCUIT_DISABLE_AFTER = 64
};

enum section_kind {
    SEC_NONE,
    SEC_HOOKD,
    SEC_PORTAL,
    SEC_RETRY,
    SEC_DEFER,
    SEC_RETENTION,
    SEC_OVERRIDE,
    SEC_PARTNER,
    SEC_MACHINE
};

struct parse_state {
    struct hookd_config *cfg;
    const char *path;
    FILE *fp;
    int line;
    char err[512];
    enum section_kind kind;
    void *section; /* the partner / machine / override being filled */
    int section_line;
    /* keys seen in the current section, to refuse duplicates */
    char **seen;
    size_t nseen, cap_seen;
    int err_line;
    /* where things were, so whole-file checks can name a line */
    int hookd_line, retry_line, defer_line, portal_line, retention_line; /* 0 = section absent */
    int retention_dedup_line;
    int hookd_key_line[sizeof hookd_keys / sizeof hookd_keys[0]];
};

static void fail(struct parse_state *st, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(struct parse_state *st, int line, const char *fmt, ...)
{
    if (st->err[0])
        return; /* keep the first error */
    st->err_line = line;
    int n = snprintf(st->err, sizeof st->err, "%s:%d: ", st->path, line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->err + n, sizeof st->err - (size_t)n, fmt, ap);
    va_end(ap);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* ---- value parsers ---------------------------------------------------- */

int config_parse_size(const char *text, int64_t *out, char *err, size_t errlen)
{
    static const struct {
        const char *unit;
        int64_t mult;
    } units[] = {{"", 1},      {"B", 1},           {"KiB", 1024}, {"MiB", 1024 * 1024}, {"GiB", 1024LL * 1024 * 1024},
                 {"KB", 1000}, {"MB", 1000 * 1000}};
    while (isspace((unsigned char)*text))
        text++;
    if (!isdigit((unsigned char)*text)) {
        snprintf(err, errlen, "bad size '%s': expected a whole number with an optional unit (B, KiB, MiB, GiB)", text);
        return -1;
    }
    errno = 0;
    char *end;
    long long v = strtoll(text, &end, 10);
    while (isspace((unsigned char)*end))
        end++;
    size_t ulen = strlen(end);
    while (ulen > 0 && isspace((unsigned char)end[ulen - 1]))
        ulen--;
    char unit[8] = "";
    if (ulen < sizeof unit)
        snprintf(unit, sizeof unit, "%.*s", (int)ulen, end);
    const char *u = ulen < sizeof unit ? unit : "(too long)";
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(u, units[i].unit) == 0) {
            if (errno || v > INT64_MAX / units[i].mult) {
                snprintf(err, errlen, "bad size '%s': too large", text);
                return -1;
            }
            *out = v * units[i].mult;
            return 0;
        }
    }
    snprintf(err, errlen, "bad size '%s': unknown unit '%s' (use B, KiB, MiB, GiB)", text, u);
    return -1;
}

static int parse_bool(const char *v, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return *out = true, 0;
        if (strcasecmp(v, no[i]) == 0)
            return *out = false, 0;
    }
    return -1;
}

static int parse_int(const char *v, int64_t *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *trim(end) || x < 0)
        return -1;
    *out = x;
    return 0;
}

static int parse_roles(const char *v, unsigned *out, char *err, size_t errlen)
{
    char *copy = xstrdup(v), *save = NULL;
    unsigned roles = 0;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *t = trim(tok);
        if (strcmp(t, "ingest") == 0)
            roles |= ROLE_INGEST;
        else if (strcmp(t, "inbox") == 0)
            roles |= ROLE_INBOX;
        else if (strcmp(t, "relay") == 0)
            roles |= ROLE_RELAY;
        else {
            snprintf(err, errlen, "unknown role '%s' (use ingest, inbox, relay)", t);
            rc = -1;
            break;
        }
    }
    free(copy);
    if (rc == 0 && roles == 0) {
        snprintf(err, errlen, "roles is empty (use ingest, inbox, relay)");
        rc = -1;
    }
    if (rc == 0)
        *out = roles;
    return rc;
}

/* `env:NAME` takes the value from the environment; anything else is literal. */
static int resolve_secret(const char *v, struct config_secret *out, char *err, size_t errlen)
{
    if (strncmp(v, "env:", 4) == 0) {
        const char *name = v + 4;
        const char *val = getenv(name);
        if (!*name) {
            snprintf(err, errlen, "'env:' needs a variable name");
            return -1;
        }
        if (!val || !*val) {
            snprintf(err, errlen, "environment variable %s is not set or empty", name);
            return -1;
        }
        out->text = xstrdup(val);
        out->env = xstrdup(name);
        return 0;
    }
    out->text = xstrdup(v);
    out->env = NULL;
    return 0;
}

static void secret_free(struct config_secret *s)
{
    if (s->text) {
        OPENSSL_cleanse(s->text, strlen(s->text));
        free(s->text);
    }
    free(s->env);
    s->text = s->env = NULL;
}

static int apply_key(const struct key_def *k, void *base, const char *v, char *err, size_t errlen)
{
    void *field = (char *)base + k->offset;
    switch (k->type) {
    case KT_STRING:
        free(*(char **)field);
        *(char **)field = xstrdup(v);
        return 0;
    case KT_SECRET: secret_free(field); return resolve_secret(v, field, err, errlen);
    case KT_DURATION: return backoff_parse_duration(v, field, err, errlen);
    case KT_INT:
        if (parse_int(v, field) == 0 && *(int64_t *)field > 0)
            return 0;
        snprintf(err, errlen, "bad number '%s': expected a positive whole number", v);
        return -1;
    case KT_BOOL:
        if (parse_bool(v, field) == 0)
            return 0;
        snprintf(err, errlen, "bad boolean '%s': use true or false", v);
        return -1;
    case KT_SIZE: return config_parse_size(v, field, err, errlen);
    case KT_ROLES: return parse_roles(v, field, err, errlen);
    }
    return -1;
}

static int parse_field_source(const char *v, struct field_source *out, char *err, size_t errlen)
{
    if (strncmp(v, "json:", 5) == 0) {
        if (!jsonpath_valid(v + 5)) {
            snprintf(err, errlen, "bad JSON path '%s' (use dotted names, e.g. json:data.object.id)", v + 5);
            return -1;
        }
        out->kind = FIELD_JSON;
    } else if (strncmp(v, "header:", 7) == 0 && v[7]) {
        out->kind = FIELD_HEADER;
    } else if (strcmp(v, "digest") == 0) {
        free(out->path);
        out->path = NULL;
        out->kind = FIELD_DIGEST;
        return 0;
    } else {
        snprintf(err, errlen, "bad source '%s': use json:PATH, header:NAME or digest", v);
        return -1;
    }
    free(out->path);
    out->path = xstrdup(strchr(v, ':') + 1);
    return 0;
}

/* ---- sections --------------------------------------------------------- */

static int open_section(struct parse_state *st, const char *name)
{
    struct hookd_config *c = st->cfg;
    for (size_t i = 0; i < st->nseen; i++)
        free(st->seen[i]);
    st->nseen = 0;
    st->section = NULL;
    st->section_line = st->line;
    const char *sp = strchr(name, ' ');
    char kind[32] = "";
    snprintf(kind, sizeof kind, "%.*s", sp ? (int)(sp - name) : (int)strlen(name), name);
    const char *arg = sp ? sp + 1 : "";
    while (*arg == ' ')
        arg++;

    int *once = NULL;
    if (strcmp(name, "hookd") == 0)
        st->kind = SEC_HOOKD, once = &st->hookd_line;
    else if (strcmp(name, "retry") == 0)
        st->kind = SEC_RETRY, once = &st->retry_line;
    else if (strcmp(name, "defer") == 0)
        st->kind = SEC_DEFER, once = &st->defer_line;
    else if (strcmp(name, "portal") == 0)
        st->kind = SEC_PORTAL, once = &st->portal_line;
    else if (strcmp(name, "retention") == 0)
        st->kind = SEC_RETENTION, once = &st->retention_line;
    if (once) {
        if (*once)
            return fail(st, st->line, "duplicate section [%s] (first at line %d)", name, *once), -1;
        *once = st->line;
        return 0;
    }
    if (!*arg) {
        fail(st, st->line,
             "unknown section [%s] (expected hookd, retry, defer, portal, retention, retry SCOPE:NAME, partner NAME, "
             "machine "
             "NAME)",
             name);
        return -1;
    }
    if (strcmp(kind, "retry") == 0) {
        enum retry_scope scope;
        if (strncmp(arg, "partner:", 8) == 0)
            scope = RETRY_PARTNER;
        else if (strncmp(arg, "event:", 6) == 0)
            scope = RETRY_EVENT;
        else if (strncmp(arg, "endpoint:", 9) == 0)
            scope = RETRY_ENDPOINT;
        else
            return fail(st, st->line,
                        "bad section [%s]: use [retry partner:NAME], [retry event:TYPE] or [retry endpoint:NAME]",
                        name),
                   -1;
        const char *pattern = strchr(arg, ':') + 1;
        if (!*pattern)
            return fail(st, st->line, "bad section [%s]: empty name after ':'", name), -1;
        for (size_t i = 0; i < c->noverrides; i++)
            if (c->overrides[i].scope == scope && strcmp(c->overrides[i].pattern, pattern) == 0)
                return fail(st, st->line, "duplicate section [%s] (first at line %d)", name, c->overrides[i].line), -1;
        c->overrides = xrealloc(c->overrides, (c->noverrides + 1) * sizeof *c->overrides);
        struct retry_override *o = &c->overrides[c->noverrides++];
        memset(o, 0, sizeof *o);
        o->scope = scope;
        o->pattern = xstrdup(pattern);
        o->line = st->line;
        st->kind = SEC_OVERRIDE;
        st->section = o;
        return 0;
    }
    if (strcmp(kind, "partner") == 0) {
        for (size_t i = 0; i < c->npartners; i++)
            if (strcmp(c->partners[i].name, arg) == 0)
                return fail(st, st->line, "duplicate section [partner %s] (first at line %d)", arg,
                            c->partners[i].line),
                       -1;
        for (const char *p = arg; *p; p++)
            if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
                return fail(st, st->line, "bad partner name '%s': use letters, digits, '-', '_', '.'", arg), -1;
        if (strlen(arg) > 50)
            return fail(st, st->line, "partner name '%s' is longer than 50 characters", arg), -1;
        c->partners = xrealloc(c->partners, (c->npartners + 1) * sizeof *c->partners);
        struct partner_config *p = &c->partners[c->npartners++];
        memset(p, 0, sizeof *p);
        p->name = xstrdup(arg);
        p->line = st->line;
        p->tolerance = 5 * 60 * 1000;
        p->scheme = (enum sig_scheme) - 1;
        p->spec.alg = SIG_ALG_HMAC_SHA256; /* scheme = hmac's default algorithm */
        st->kind = SEC_PARTNER;
        st->section = p;
        return 0;
    }
    if (strcmp(kind, "machine") == 0) {
        for (size_t i = 0; i < c->nmachines; i++)
            if (strcmp(c->machines[i].name, arg) == 0)
                return fail(st, st->line, "duplicate section [machine %s] (first at line %d)", arg,
                            c->machines[i].line),
                       -1;
        c->machines = xrealloc(c->machines, (c->nmachines + 1) * sizeof *c->machines);
        struct machine_config *m = &c->machines[c->nmachines++];
        memset(m, 0, sizeof *m);
        m->name = xstrdup(arg);
        m->machine = machine_new(arg);
        m->line = st->line;
        m->create = -1; /* unset: true for hookd_entities, false for user tables */
        st->kind = SEC_MACHINE;
        st->section = m;
        return 0;
    }
    fail(st, st->line,
         "unknown section [%s] (expected hookd, retry, defer, portal, retention, retry SCOPE:NAME, partner NAME, "
         "machine NAME)",
         name);
    return -1;
}

/* Reader for ini_parse_stream: fgets with line counting and section
 * detection. Returning NULL ends the parse (at EOF or on our error). */
static char *config_reader(char *str, int num, void *stream)
{
    struct parse_state *st = stream;
    if (st->err[0] || !fgets(str, num, st->fp))
        return NULL;
    st->line++;
    size_t len = strlen(str);
    if (len == (size_t)num - 1 && str[len - 1] != '\n' && !feof(st->fp)) {
        fail(st, st->line, "line is longer than %d characters", num - 2);
        return NULL;
    }
    char buf[512];
    snprintf(buf, sizeof buf, "%s", str);
    char *t = trim(buf);
    if (*t == '[') {
        char *end = strchr(t, ']');
        if (!end) {
            fail(st, st->line, "section header without ']'");
            return NULL;
        }
        *end = '\0';
        char *rest = trim(end + 1);
        if (*rest && *rest != ';' && *rest != '#') {
            fail(st, st->line, "unexpected text after section header");
            return NULL;
        }
        if (open_section(st, trim(t + 1)) != 0)
            return NULL;
    }
    return str;
}

static bool seen_key(struct parse_state *st, const char *name)
{
    for (size_t i = 0; i < st->nseen; i++)
        if (strcmp(st->seen[i], name) == 0)
            return true;
    if (st->nseen == st->cap_seen) {
        st->cap_seen = st->cap_seen ? st->cap_seen * 2 : 32;
        st->seen = xrealloc(st->seen, st->cap_seen * sizeof *st->seen);
    }
    st->seen[st->nseen++] = xstrdup(name);
    return false;
}

/* [retention]: the windows, and how often a worker runs a pass. */
static int retention_key(struct parse_state *st, const char *name, const char *v, char *err, size_t errlen)
{
    static const struct {
        const char *name;
        size_t offset;
    } keys[] = {
        {"inbox", offsetof(struct retention_config, inbox)},
        {"outbox", offsetof(struct retention_config, outbox)},
        {"attempts", offsetof(struct retention_config, attempts)},
        {"dead_letters", offsetof(struct retention_config, dead_letters)},
        {"dedup", offsetof(struct retention_config, dedup)},
        {"interval", offsetof(struct retention_config, interval)},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (strcmp(keys[i].name, name) != 0)
            continue;
        int64_t *field = (int64_t *)((char *)&st->cfg->retention + keys[i].offset);
        if (strcmp(name, "interval") == 0 && strcmp(v, "off") == 0) { /* passes left to `hookd retention run` */
            *field = 0;
            return 0;
        }
        if (backoff_parse_duration(v, field, err, errlen) != 0)
            return -1;
        if (*field < 1000) {
            snprintf(err, errlen, "[retention] %s must be at least 1s", name);
            return -1;
        }
        if (strcmp(name, "dedup") == 0)
            st->retention_dedup_line = st->line;
        return 0;
    }
    snprintf(err, errlen,
             "unknown key '%s' in [retention] (expected inbox, outbox, attempts, dead_letters, dedup, interval)",
             name);
    return -1;
}

static const struct key_def *find_key(const struct key_def *keys, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(keys[i].name, name) == 0)
            return &keys[i];
    return NULL;
}

static int retry_key(struct backoff_policy *p, unsigned *set, const char *name, const char *v, char *err,
                     size_t errlen)
{
    if (strcmp(name, "schedule") == 0) {
        *set |= SET_SCHEDULE;
        return backoff_parse_schedule(v, p->schedule_ms, &p->nsteps, err, errlen);
    }
    if (strcmp(name, "max_attempts") == 0) {
        int64_t n;
        *set |= SET_MAX_ATTEMPTS;
        if (parse_int(v, &n) != 0 || n < 2 || n > 100) {
            snprintf(err, errlen, "bad max_attempts '%s': expected a whole number from 2 to 100", v);
            return -1;
        }
        p->max_attempts = (int)n;
        return 0;
    }
    if (strcmp(name, "jitter") == 0) {
        *set |= SET_JITTER;
        return backoff_parse_percent(v, &p->jitter_pct, err, errlen);
    }
    if (strcmp(name, "circuit") == 0) {
        *set |= SET_CIRCUIT;
        if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0) {
            snprintf(err, errlen, "bad circuit '%s': expected on or off", v);
            return -1;
        }
        p->circuit = strcmp(v, "on") == 0;
        return 0;
    }
    if (strcmp(name, "circuit_failures") == 0) {
        int64_t n;
        *set |= SET_CIRCUIT_FAILURES;
        if (parse_int(v, &n) != 0 || n < 1 || n > 100000) {
            snprintf(err, errlen, "bad circuit_failures '%s': expected a whole number from 1 to 100000", v);
            return -1;
        }
        p->circuit_failures = (int)n;
        return 0;
    }
    if (strcmp(name, "circuit_probe") == 0) {
        *set |= SET_CIRCUIT_PROBE;
        if (backoff_parse_duration(v, &p->circuit_probe_ms, err, errlen) != 0)
            return -1;
        if (p->circuit_probe_ms < 10 || p->circuit_probe_ms > 24LL * 3600 * 1000) {
            snprintf(err, errlen, "bad circuit_probe '%s': expected 10ms to 24h", v);
            return -1;
        }
        return 0;
    }
    if (strcmp(name, "circuit_disable_after") == 0) {
        *set |= SET_CIRCUIT_DISABLE_AFTER;
        if (strcmp(v, "off") == 0) {
            p->circuit_disable_after_ms = 0;
            return 0;
        }
        if (backoff_parse_duration(v, &p->circuit_disable_after_ms, err, errlen) != 0)
            return -1;
        if (p->circuit_disable_after_ms < 1000 || p->circuit_disable_after_ms > 365LL * 24 * 3600 * 1000) {
            snprintf(err, errlen, "bad circuit_disable_after '%s': expected 1s to 365d, or off", v);
            return -1;
        }
        return 0;
    }
    snprintf(err, errlen,
             "unknown key '%s' in a retry section (expected schedule, max_attempts, jitter, circuit, circuit_failures,"
             " circuit_probe, circuit_disable_after)",
             name);
    return -1;
}

/* Bits of partner_config.hmac_keys: the keys of `scheme = hmac`. */
enum {
    HK_ALGORITHM = 1 << 0,
    HK_SIGNED = 1 << 1,
    HK_SIGNATURE_HEADER = 1 << 2,
    HK_SIGNATURE_PREFIX = 1 << 3,
    HK_ENCODING = 1 << 4,
    HK_TIMESTAMP_HEADER = 1 << 5,
    HK_TIMESTAMP_PREFIX = 1 << 6,
    HK_TIMESTAMP_FORMAT = 1 << 7,
    HK_SEVERAL = 1 << 8,
    HK_SEPARATORS = 1 << 9,
};

static void set_string(char **dst, const char *v)
{
    free(*dst);
    *dst = xstrdup(v);
}

/* `separators = comma, semicolon, space` (any of the three): what splits
 * the elements of the signature header, as the characters. */
static int parse_separators(struct partner_config *p, const char *v, char *err, size_t errlen)
{
    static const struct {
        const char *name;
        char c;
    } names[] = {{"comma", ','}, {"semicolon", ';'}, {"space", ' '}};
    char chars[4] = "", *text = xstrdup(v), *save = NULL;
    size_t n = 0;
    int rc = 0;

    for (char *tok = strtok_r(text, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        char *name = trim(tok);
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
        return snprintf(err, errlen, "bad separators '%s' (a list of comma, semicolon, space)", v), -1;
    set_string(&p->hmac_separators, chars);
    p->hmac_keys |= HK_SEPARATORS;
    return 0;
}

/* The keys of `scheme = hmac` (a scheme written in the config). Returns 1
 * if name is not one of them. */
static int partner_hmac_key(struct partner_config *p, const char *name, const char *v, char *err, size_t errlen)
{
    static const struct {
        const char *name;
        unsigned bit;
    } strings[] = {{"signed", HK_SIGNED},
                   {"signature_header", HK_SIGNATURE_HEADER},
                   {"signature_prefix", HK_SIGNATURE_PREFIX},
                   {"timestamp_header", HK_TIMESTAMP_HEADER},
                   {"timestamp_prefix", HK_TIMESTAMP_PREFIX}};
    char **dst[] = {&p->hmac_signed, &p->hmac_signature_header, &p->hmac_signature_prefix, &p->hmac_timestamp_header,
                    &p->hmac_timestamp_prefix};

    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
        if (strcmp(name, strings[i].name) != 0)
            continue;
        if (strings[i].bit == HK_SIGNED && sig_template_check(v, err, errlen) != 0)
            return -1;
        set_string(dst[i], v);
        p->hmac_keys |= strings[i].bit;
        return 0;
    }
    if (strcmp(name, "algorithm") == 0) {
        if (strcasecmp(v, "sha1") == 0)
            p->spec.alg = SIG_ALG_HMAC_SHA1;
        else if (strcasecmp(v, "sha256") == 0)
            p->spec.alg = SIG_ALG_HMAC_SHA256;
        else if (strcasecmp(v, "sha512") == 0)
            p->spec.alg = SIG_ALG_HMAC_SHA512;
        else
            return snprintf(err, errlen, "bad algorithm '%s' (use sha1, sha256, sha512)", v), -1;
        p->hmac_keys |= HK_ALGORITHM;
        return 0;
    }
    if (strcmp(name, "encoding") == 0) {
        if (strcasecmp(v, "hex") == 0)
            p->spec.encoding = SIG_ENC_HEX;
        else if (strcasecmp(v, "base64") == 0)
            p->spec.encoding = SIG_ENC_BASE64;
        else
            return snprintf(err, errlen, "bad encoding '%s' (use hex, base64)", v), -1;
        p->hmac_keys |= HK_ENCODING;
        return 0;
    }
    if (strcmp(name, "timestamp_format") == 0) {
        if (strcasecmp(v, "unix") == 0)
            p->spec.timestamp_format = SIG_TS_UNIX;
        else if (strcasecmp(v, "unix_ms") == 0)
            p->spec.timestamp_format = SIG_TS_UNIX_MS;
        else if (strcasecmp(v, "rfc3339") == 0)
            p->spec.timestamp_format = SIG_TS_RFC3339;
        else
            return snprintf(err, errlen, "bad timestamp_format '%s' (use unix, unix_ms, rfc3339)", v), -1;
        p->hmac_keys |= HK_TIMESTAMP_FORMAT;
        return 0;
    }
    if (strcmp(name, "separators") == 0)
        return parse_separators(p, v, err, errlen);
    if (strcmp(name, "several_signatures") == 0) {
        if (strcasecmp(v, "true") == 0 || strcasecmp(v, "yes") == 0 || strcmp(v, "1") == 0)
            p->spec.multiple = true;
        else if (strcasecmp(v, "false") == 0 || strcasecmp(v, "no") == 0 || strcmp(v, "0") == 0)
            p->spec.multiple = false;
        else
            return snprintf(err, errlen, "bad several_signatures '%s' (use true or false)", v), -1;
        p->hmac_keys |= HK_SEVERAL;
        return 0;
    }
    return 1;
}

/* The inbound policy's partner keys: allow_ips (a CIDR list) and
 * event_types (globs). Returns 1 when name is neither; else 0, or -1 with
 * err set. */
static int partner_policy_key(struct partner_config *p, const char *name, const char *v, char *err, size_t errlen)
{
    if (strcmp(name, "allow_ips") == 0) {
        struct cidr_list l = {NULL, 0};
        if (cidr_list_parse(v, &l, err, errlen) != 0)
            return -1;
        cidr_list_free(&p->allow_ips);
        p->allow_ips = l;
        set_string(&p->allow_ips_text, v);
        return 0;
    }
    if (strcmp(name, "event_types") == 0) {
        char *copy = xstrdup(v), *save = NULL;
        for (size_t i = 0; i < p->nevent_types; i++)
            free(p->event_types[i]);
        p->nevent_types = 0;
        for (char *tok = strtok_r(copy, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
            p->event_types = xrealloc(p->event_types, (p->nevent_types + 1) * sizeof *p->event_types);
            p->event_types[p->nevent_types++] = xstrdup(tok);
        }
        free(copy);
        if (p->nevent_types == 0) {
            snprintf(err, errlen, "event_types is empty (give globs such as order.*, or leave the key out)");
            return -1;
        }
        set_string(&p->event_types_text, v);
        return 0;
    }
    return 1;
}

bool config_partner_takes_event(const struct partner_config *p, const char *event_type)
{
    if (p->nevent_types == 0)
        return true;
    for (size_t i = 0; i < p->nevent_types; i++)
        if (config_glob_match(p->event_types[i], event_type))
            return true;
    return false;
}

/* `secret =` / `public_key =`: appended, for rotation. */
static int add_key_text(struct config_secret *arr, size_t *n, const char *what, const char *v, char *err,
                        size_t errlen)
{
    if (*n == CONFIG_PARTNER_KEYS_MAX) {
        snprintf(err, errlen, "too many %ss (at most %d)", what, CONFIG_PARTNER_KEYS_MAX);
        return -1;
    }
    if (resolve_secret(v, &arr[*n], err, errlen) != 0)
        return -1;
    (*n)++;
    return 0;
}

static int partner_key(struct partner_config *p, const char *name, const char *v, char *err, size_t errlen)
{
    int rc;

    if (strcmp(name, "scheme") == 0) {
        if (sig_scheme_parse(v, &p->scheme) == 0)
            return 0;
        snprintf(err, errlen,
                 "unknown scheme '%s' (use a preset: standard-webhooks, stripe, github, hmac-sha256, shopify, slack, "
                 "twilio, square, paddle, zoom, linear, intercom, mailgun, sendgrid, discord, meta, twitch, typeform, "
                 "hubspot, calendly, gitlab, bitbucket, pagerduty, woocommerce, x; or hmac)",
                 v);
        return -1;
    }
    if (strcmp(name, "secret") == 0)
        return add_key_text(p->secrets, &p->nsecrets, "secret", v, err, errlen);
    if (strcmp(name, "public_key") == 0)
        return add_key_text(p->public_keys, &p->npublic_keys, "public key", v, err, errlen);
    if (strcmp(name, "verify_token") == 0) {
        secret_free(&p->verify_token);
        return resolve_secret(v, &p->verify_token, err, errlen);
    }
    if (strcmp(name, "public_url") == 0) {
        if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0) {
            snprintf(err, errlen, "bad public_url '%s': use the full http:// or https:// URL the provider calls", v);
            return -1;
        }
        set_string(&p->public_url, v);
        return 0;
    }
    if (strcmp(name, "tolerance") == 0) {
        p->tolerance_set = true;
        return backoff_parse_duration(v, &p->tolerance, err, errlen);
    }
    if (strcmp(name, "max_body") == 0)
        return config_parse_size(v, &p->max_body, err, errlen);
    if (strcmp(name, "event_id") == 0)
        return parse_field_source(v, &p->event_id, err, errlen);
    if (strcmp(name, "event_type") == 0)
        return parse_field_source(v, &p->event_type, err, errlen);
    if (strcmp(name, "entity_id") == 0)
        return parse_field_source(v, &p->entity_id, err, errlen);
    if (strcmp(name, "entity_type") == 0 || strcmp(name, "header") == 0) {
        set_string(name[0] == 'e' ? &p->entity_type : &p->header, v);
        return 0;
    }
    if ((rc = partner_policy_key(p, name, v, err, errlen)) <= 0)
        return rc;
    if ((rc = partner_hmac_key(p, name, v, err, errlen)) <= 0)
        return rc;
    snprintf(err, errlen,
             "unknown key '%s' in [partner %s] (expected scheme, secret, public_key, verify_token, public_url, "
             "tolerance, header, event_id, event_type, entity_id, entity_type, max_body, allow_ips, event_types; with "
             "scheme = hmac also "
             "algorithm, signed, signature_header, signature_prefix, encoding, timestamp_header, timestamp_prefix, "
             "timestamp_format, several_signatures, separators)",
             name, p->name);
    return -1;
}

/* Splits "a, b, c" into trimmed items; returns the count (at most max). */
static int split_list(char *s, char **items, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(s, ",", &save); tok && n < max + 1; tok = strtok_r(NULL, ",", &save))
        items[n++] = trim(tok);
    return n;
}

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

static int machine_transition_key(struct machine_config *m, const char *event, const char *v, char *err, size_t errlen)
{
    const char *arrow = strstr(v, "->");
    if (!arrow) {
        snprintf(err, errlen, "bad transition '%s': expected FROM[, FROM...] -> TO", v);
        return -1;
    }
    char *from = xstrndup(v, (size_t)(arrow - v));
    char *to = xstrdup(arrow + 2);
    char *items[MACHINE_MAX_STATES + 1];
    int n = split_list(from, items, MACHINE_MAX_STATES);
    int rc = -1;
    /* Empty names are left to machine_add_transition, which says which one. */
    char *target = trim(to);
    bool names_ok = (!*event || valid_name(event)) && (!*target || valid_name(target));
    for (int i = 0; i < n && i < MACHINE_MAX_STATES; i++)
        names_ok = names_ok && (!*items[i] || valid_name(items[i]));
    if (n == 0 || n > MACHINE_MAX_STATES)
        snprintf(err, errlen, "bad transition '%s': expected FROM[, FROM...] -> TO", v);
    else if (!names_ok)
        snprintf(err, errlen, "bad transition '%s %s': event and state names use letters, digits, '_', '-', '.', ':'",
                 event, v);
    else
        rc = machine_add_transition(m->machine, event, (const char *const *)items, (size_t)n, target, err, errlen);
    free(from);
    free(to);
    return rc;
}

static bool valid_identifier(const char *s)
{
    if (!*s || strlen(s) > 63)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.')
            return false;
    return true;
}

static int machine_key(struct machine_config *m, const char *name, const char *v, char *err, size_t errlen)
{
    if (strncmp(name, "transition ", 11) == 0)
        return machine_transition_key(m, trim((char *)name + 11), v, err, errlen);
    if (strncmp(name, "emit ", 5) == 0) {
        m->emits = xrealloc(m->emits, (m->nemits + 1) * sizeof *m->emits);
        m->emits[m->nemits].event = xstrdup(trim((char *)name + 5));
        m->emits[m->nemits].emit_type = xstrdup(v);
        m->nemits++;
        return 0;
    }
    if (strcmp(name, "initial") == 0)
        return machine_set_initial(m->machine, v, err, errlen);
    if (strcmp(name, "on_conflict") == 0) {
        if (strcmp(v, "dlq") == 0 || strcmp(v, "ignore") == 0) {
            m->on_conflict = v[0] == 'd' ? CONFLICT_DLQ : CONFLICT_IGNORE;
            return 0;
        }
        snprintf(err, errlen, "bad on_conflict '%s': use dlq or ignore", v);
        return -1;
    }
    if (strcmp(name, "create") == 0) {
        bool b;
        if (parse_bool(v, &b) == 0)
            return m->create = b, 0;
        snprintf(err, errlen, "bad boolean '%s': use true or false", v);
        return -1;
    }
    char **dst = strcmp(name, "table") == 0            ? &m->table
                 : strcmp(name, "id_column") == 0      ? &m->id_column
                 : strcmp(name, "state_column") == 0   ? &m->state_column
                 : strcmp(name, "version_column") == 0 ? &m->version_column
                                                       : NULL;
    if (!dst) {
        snprintf(err, errlen,
                 "unknown key '%s' in [machine %s] (expected table, id_column, state_column, version_column, initial, "
                 "create, on_conflict, transition EVENT, emit EVENT)",
                 name, m->name);
        return -1;
    }
    if (!valid_identifier(v)) {
        snprintf(err, errlen, "bad %s '%s': use letters, digits, '_' (and '.' for schema.table)", name, v);
        return -1;
    }
    free(*dst);
    *dst = xstrdup(v);
    return 0;
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
    (void)section; /* the reader already opened it */
    struct parse_state *st = user;
    char err[384] = "";
    int rc = -1;
    char *v = xstrdup(value);
    char *val = trim(v);
    bool repeatable = st->kind == SEC_PARTNER && (strcmp(name, "secret") == 0 || strcmp(name, "public_key") == 0);

    if (st->kind == SEC_NONE) {
        fail(st, st->line, "key '%s' outside any section", name);
        goto done;
    }
    if (!repeatable && seen_key(st, name)) {
        fail(st, st->line, "duplicate key '%s'", name);
        goto done;
    }
    if (!*val) {
        fail(st, st->line, "key '%s' has an empty value", name);
        goto done;
    }
    switch (st->kind) {
    case SEC_HOOKD: {
        const struct key_def *k = find_key(hookd_keys, sizeof hookd_keys / sizeof hookd_keys[0], name);
        if (!k) {
            snprintf(err, sizeof err, "unknown key '%s' in [hookd]", name);
        } else {
            st->hookd_key_line[k - hookd_keys] = st->line;
            rc = apply_key(k, st->cfg, val, err, sizeof err);
        }
        break;
    }
    case SEC_PORTAL: {
        const struct key_def *k = find_key(portal_keys, NPORTAL_KEYS, name);
        if (!k)
            snprintf(err, sizeof err,
                     "unknown key '%s' in [portal] (expected base_url, link_ttl, session_ttl, title, logo_url, "
                     "accent_color)",
                     name);
        else
            rc = apply_key(k, st->cfg, val, err, sizeof err);
        break;
    }
    case SEC_RETRY: {
        unsigned set = 0;
        rc = retry_key(&st->cfg->retry, &set, name, val, err, sizeof err);
        break;
    }
    case SEC_OVERRIDE: {
        struct retry_override *o = st->section;
        rc = retry_key(&o->policy, &o->set, name, val, err, sizeof err);
        break;
    }
    case SEC_DEFER:
        if (strcmp(name, "schedule") == 0)
            rc = backoff_parse_schedule(val, st->cfg->defer.schedule_ms, &st->cfg->defer.nsteps, err, sizeof err);
        else if (strcmp(name, "max_age") == 0)
            rc = backoff_parse_duration(val, &st->cfg->defer.max_age_ms, err, sizeof err);
        else
            snprintf(err, sizeof err, "unknown key '%s' in [defer] (expected schedule, max_age)", name);
        break;
    case SEC_RETENTION: rc = retention_key(st, name, val, err, sizeof err); break;
    case SEC_PARTNER: rc = partner_key(st->section, name, val, err, sizeof err); break;
    case SEC_MACHINE: rc = machine_key(st->section, name, val, err, sizeof err); break;
    case SEC_NONE: break;
    }
    if (rc != 0)
        fail(st, st->line, "%s", err[0] ? err : "bad value");
done:
    free(v);
    return st->err[0] ? 0 : 1;
}

/* ---- defaults and whole-config validation ----------------------------- */

static void set_defaults(struct hookd_config *c)
{
    char err[256];
    for (size_t i = 0; i < sizeof hookd_keys / sizeof hookd_keys[0]; i++)
        if (hookd_keys[i].def && apply_key(&hookd_keys[i], c, hookd_keys[i].def, err, sizeof err) != 0)
            HOOKD_ASSERT(!"built-in default does not parse");
    for (size_t i = 0; i < NPORTAL_KEYS; i++)
        if (portal_keys[i].def && apply_key(&portal_keys[i], c, portal_keys[i].def, err, sizeof err) != 0)
            HOOKD_ASSERT(!"built-in default does not parse");
    backoff_policy_default(&c->retry);
    defer_policy_default(&c->defer);
    int64_t month = 30LL * 24 * 3600 * 1000;
    c->retention = (struct retention_config){month, month, month, month, month, 60 * 1000};
}

/* A preset's default ("json:id", "header:X", "digest") for a field the
 * partner did not set. The table's values always parse. */
static void default_source(struct field_source *f, const char *def)
{
    char err[160];
    if (f->kind == FIELD_NONE && def) {
        int rc = parse_field_source(def, f, err, sizeof err);
        HOOKD_ASSERT(rc == 0);
    }
}

/* Whether a value read from f is covered by the partner's signature. */
static bool field_signed(const struct sig_spec *spec, const struct field_source *f)
{
    return f->kind == FIELD_NONE || f->kind == FIELD_DIGEST || (f->kind == FIELD_JSON && sig_spec_signs_body(spec)) ||
           (f->kind == FIELD_HEADER && sig_spec_signs_header(spec, f->path));
}

/* scheme = hmac: the spec from the partner's keys. */
static int build_hmac_spec(struct parse_state *st, struct partner_config *p)
{
    struct sig_spec *s = &p->spec;
    if (!p->hmac_signature_header)
        return fail(st, p->line, "[partner %s] uses scheme hmac and needs 'signature_header'", p->name), -1;
    s->key_format = SIG_KEY_RAW;
    s->signed_template = p->hmac_signed ? p->hmac_signed : "{body}";
    s->signature_header = p->hmac_signature_header;
    s->signature_prefix = p->hmac_signature_prefix;
    s->timestamp_header = p->hmac_timestamp_header;
    s->timestamp_prefix = p->hmac_timestamp_prefix;
    s->separators = p->hmac_separators;
    if (!(p->hmac_keys & HK_ENCODING))
        s->encoding = SIG_ENC_HEX;
    if (p->hmac_timestamp_prefix && !p->hmac_timestamp_header)
        s->timestamp_header = p->hmac_signature_header; /* t= inside the signature header */
    bool has_ts = s->timestamp_header != NULL;
    bool signs_ts = strstr(s->signed_template, "{timestamp}") != NULL;
    if (signs_ts && !has_ts)
        return fail(st, p->line, "[partner %s] signs {timestamp} but has no timestamp_header", p->name), -1;
    if (has_ts && !signs_ts)
        return fail(st, p->line,
                    "[partner %s] has a timestamp_header that the signed template does not contain: an unsigned "
                    "timestamp proves nothing (add {timestamp} to 'signed')",
                    p->name),
               -1;
    return 0;
}

static int decode_partner_keys(struct parse_state *st, struct partner_config *p)
{
    char err[256];
    bool public = p->spec.alg == SIG_ALG_PUBLIC_KEY;
    const struct config_secret *texts = public ? p->public_keys : p->secrets;
    size_t n = public ? p->npublic_keys : p->nsecrets;
    const char *what = public ? "public_key" : "secret";

    if (public && p->nsecrets)
        return fail(st, p->line, "[partner %s] scheme %s verifies with a public key: use public_key, not secret",
                    p->name, p->preset->name),
               -1;
    if (!public && p->npublic_keys)
        return fail(st, p->line, "[partner %s] scheme %s verifies with a shared secret: use secret, not public_key",
                    p->name, p->preset->name),
               -1;
    if (n == 0)
        return fail(st, p->line, "[partner %s] has no %s", p->name, what), -1;
    for (size_t i = 0; i < n; i++) {
        int rc = public ? sig_public_key_decode(p->scheme, texts[i].text, &p->keys[i], err, sizeof err)
                        : sig_key_decode(p->scheme, texts[i].text, &p->keys[i], err, sizeof err);
        if (rc != 0)
            return fail(st, p->line, "[partner %s] %s %zu: %s", p->name, what, i + 1, err), -1;
        p->nkeys = i + 1;
        /* A short key can be guessed offline from one captured request. */
        if (!public && p->keys[i].len < CONFIG_PARTNER_SECRET_MIN)
            return fail(st, p->line, "[partner %s] secret %zu is %zu bytes%s; at least %d are required", p->name,
                        i + 1, p->keys[i].len,
                        p->spec.key_format == SIG_KEY_WHSEC_BASE64 ? " after base64 decoding" : "",
                        CONFIG_PARTNER_SECRET_MIN),
                   -1;
    }
    return 0;
}

/* A preset whose handshake signs what anyone asks for (x's CRC) is only
 * safe behind allow_ips that name ranges. */
static int check_required_allow_ips(struct parse_state *st, const struct partner_config *p)
{
    const char *why = p->preset->requires_allow_ips;

    if (!why)
        return 0;
    if (p->allow_ips.n == 0)
        return fail(st, p->line, "[partner %s] scheme %s needs allow_ips: %s", p->name, p->preset->name, why), -1;
    for (size_t i = 0; i < p->allow_ips.n; i++)
        if (p->allow_ips.v[i].prefix == 0)
            return fail(st, p->line, "[partner %s] scheme %s needs allow_ips narrower than every address: %s", p->name,
                        p->preset->name, why),
                   -1;
    return 0;
}

static int validate_partner(struct parse_state *st, struct partner_config *p)
{
    if ((int)p->scheme == -1)
        return fail(st, p->line, "[partner %s] has no scheme", p->name), -1;
    p->preset = sig_preset_get(p->scheme);
    if (p->scheme == SIG_HMAC) {
        if (build_hmac_spec(st, p) != 0)
            return -1;
    } else {
        if (p->hmac_keys)
            return fail(st, p->line,
                        "[partner %s] sets keys of scheme = hmac (algorithm, signed, signature_header, …) but uses "
                        "scheme %s",
                        p->name, p->preset->name),
                   -1;
        p->spec = p->preset->spec;
    }
    if (p->scheme == SIG_HMAC_SHA256) {
        if (!p->header)
            return fail(st, p->line,
                        "[partner %s] uses scheme hmac-sha256 and needs 'header' (the header holding the signature)",
                        p->name),
                   -1;
        p->spec.signature_header = p->header;
    }
    if (decode_partner_keys(st, p) != 0 || check_required_allow_ips(st, p) != 0)
        return -1;
    if (!p->tolerance_set && p->preset->tolerance_s > 0)
        p->tolerance = p->preset->tolerance_s * 1000;
    default_source(&p->event_id, p->preset->event_id);
    default_source(&p->event_type, p->preset->event_type);
    default_source(&p->entity_id, p->preset->entity_id);
    if (p->event_id.kind == FIELD_NONE)
        return fail(st, p->line, "[partner %s] needs 'event_id' (json:PATH, header:NAME or digest)", p->name), -1;
    if (p->event_type.kind == FIELD_NONE)
        return fail(st, p->line,
                    "[partner %s] needs 'event_type' (json:PATH or header:NAME): scheme %s has no event type of its "
                    "own",
                    p->name, p->preset->name),
               -1;
    if (p->event_type.kind == FIELD_DIGEST || p->entity_id.kind == FIELD_DIGEST)
        return fail(st, p->line, "[partner %s] 'digest' is a source for event_id only", p->name), -1;
    p->content_dedup = !sig_spec_signs_timestamp(&p->spec) || !field_signed(&p->spec, &p->event_id) ||
                       !field_signed(&p->spec, &p->event_type) || !field_signed(&p->spec, &p->entity_id);
    if (p->entity_type && !config_machine(st->cfg, p->entity_type))
        return fail(st, p->line, "[partner %s] names entity_type '%s', but there is no [machine %s]", p->name,
                    p->entity_type, p->entity_type),
               -1;
    return 0;
}

static int validate_retry(struct parse_state *st, const struct backoff_policy *p, const char *what, int line)
{
    char err[256];
    if (backoff_policy_validate(p, err, sizeof err) != 0)
        return fail(st, line, "%s: %s", what, err), -1;
    if (p->nsteps > p->max_attempts - 1)
        return fail(st, line, "%s: schedule has %d steps but max_attempts = %d allows only %d waits", what, p->nsteps,
                    p->max_attempts, p->max_attempts - 1),
               -1;
    return 0;
}

static int validate_machine(struct parse_state *st, struct machine_config *m)
{
    char err[256];
    if (machine_finalize(m->machine, err, sizeof err) != 0)
        return fail(st, m->line, "[machine %s]: %s", m->name, err), -1;
    m->builtin = !m->table;
    if (m->create < 0)
        m->create = m->builtin;
    if (m->builtin) {
        if (m->id_column || m->state_column || m->version_column)
            return fail(st, m->line, "[machine %s]: id_column, state_column and version_column need 'table'", m->name),
                   -1;
        m->table = xstrdup("hookd_entities");
        m->id_column = xstrdup("entity_id");
        m->state_column = xstrdup("state");
        m->version_column = xstrdup("version");
    } else {
        if (!m->id_column)
            m->id_column = xstrdup("id");
        if (!m->state_column)
            m->state_column = xstrdup("status");
    }
    for (size_t i = 0; i < m->nemits; i++)
        if (!machine_has_event(m->machine, m->emits[i].event))
            return fail(st, m->line, "[machine %s]: 'emit %s' names no transition of this machine", m->name,
                        m->emits[i].event),
                   -1;
    /* An event type must lead to one machine, or routing is ambiguous. */
    for (size_t j = 0; j < (size_t)(m - st->cfg->machines); j++) {
        const struct machine_config *o = &st->cfg->machines[j];
        for (size_t t = 0; t < machine_ntransitions(m->machine); t++) {
            struct machine_transition_info ti;
            machine_transition(m->machine, t, &ti);
            if (machine_has_event(o->machine, ti.event))
                return fail(st, m->line, "event type '%s' is named by [machine %s] and [machine %s]", ti.event,
                            o->name, m->name),
                       -1;
        }
    }
    return 0;
}

/* The line of a [hookd] key, else of the [hookd] header, else 1. */
static int hookd_line(const struct parse_state *st, const char *key)
{
    const struct key_def *k = find_key(hookd_keys, sizeof hookd_keys / sizeof hookd_keys[0], key);
    if (k && st->hookd_key_line[k - hookd_keys])
        return st->hookd_key_line[k - hookd_keys];
    return st->hookd_line ? st->hookd_line : 1;
}

/* The public listener's limits (struct http_limits): a head must fit a
 * request line and a few headers, and a body of max_body must fit the
 * total, or every large request would be refused. */
static int validate_listener(struct parse_state *st)
{
    const struct hookd_config *c = st->cfg;
    if (c->max_header_size < 1024 || c->max_header_size > 1024 * 1024)
        return fail(st, hookd_line(st, "max_header_size"),
                    "[hookd] max_header_size must be between 1KiB and 1MiB (request line and headers together)"),
               -1;
    if (c->max_headers > 10000)
        return fail(st, hookd_line(st, "max_headers"), "[hookd] max_headers must be at most 10000"), -1;
    if (c->request_timeout < 100)
        return fail(st, hookd_line(st, "request_timeout"), "[hookd] request_timeout must be at least 100ms"), -1;
    if (c->max_connections > 1000000)
        return fail(st, hookd_line(st, "max_connections"), "[hookd] max_connections must be at most 1000000"), -1;
    for (size_t i = 0; i < c->npartners; i++) {
        int64_t body = c->partners[i].max_body ? c->partners[i].max_body : c->max_body;
        if (c->max_buffered_body < body)
            return fail(st, hookd_line(st, "max_buffered_body"),
                        "[hookd] max_buffered_body (%lld) is smaller than the max_body of [partner %s] (%lld): such "
                        "a request could never be received",
                        (long long)c->max_buffered_body, c->partners[i].name, (long long)body),
                   -1;
    }
    if (c->max_buffered_body < c->max_body)
        return fail(st, hookd_line(st, "max_buffered_body"),
                    "[hookd] max_buffered_body (%lld) is smaller than max_body (%lld)",
                    (long long)c->max_buffered_body, (long long)c->max_body),
               -1;
    return 0;
}

/* [portal]: the accent colour goes into a style sheet and the URLs into
 * pages and links, so they are held to shapes that need no escaping. */
static int validate_portal(struct parse_state *st)
{
    const struct portal_config *p = &st->cfg->portal;
    int line = st->portal_line ? st->portal_line : 1;
    const char *a = p->accent_color;
    size_t n = strlen(a);
    if (a[0] != '#' || (n != 4 && n != 7) || strspn(a + 1, "0123456789abcdefABCDEF") != n - 1)
        return fail(st, line, "[portal] accent_color must be #rgb or #rrggbb"), -1;
    if (p->base_url && strncmp(p->base_url, "http://", 7) != 0 && strncmp(p->base_url, "https://", 8) != 0)
        return fail(st, line, "[portal] base_url must start with http:// or https://"), -1;
    if (p->logo_url && strncmp(p->logo_url, "https://", 8) != 0 && p->logo_url[0] != '/')
        return fail(st, line, "[portal] logo_url must be an https:// URL or a path"), -1;
    if (p->logo_url && strncmp(p->logo_url, "//", 2) == 0) /* a browser loads it from that host */
        return fail(st, line, "[portal] logo_url must not start with // (write https://host/… or a path)"), -1;
    if (strlen(p->title) > 80)
        return fail(st, line, "[portal] title must be at most 80 characters"), -1;
    if (p->link_ttl < 1000 || p->session_ttl < 1000)
        return fail(st, line, "[portal] link_ttl and session_ttl must be at least 1s"), -1;
    for (const char *c = p->base_url ? p->base_url : ""; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == '"' || *c == '<' || *c == '>' || *c == '\\')
            return fail(st, line, "[portal] base_url must not hold spaces, quotes or angle brackets"), -1;
    for (const char *c = p->logo_url ? p->logo_url : ""; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == '"' || *c == '<' || *c == '>' || *c == '\\')
            return fail(st, line, "[portal] logo_url must not hold spaces, quotes or angle brackets"), -1;
    return 0;
}

/* The admin listener and its token: a token an attacker can guess in a day
 * of throttled tries is no token (24 characters of `openssl rand -hex 12`
 * are 96 bits). The length is never printed with the token. */
static int validate_admin(struct parse_state *st)
{
    const struct hookd_config *c = st->cfg;
    const char *tok = c->admin_token.text;
    if (tok && strlen(tok) < HOOKD_ADMIN_TOKEN_MIN)
        return fail(st, hookd_line(st, "admin_token"),
                    "[hookd] admin_token must be at least %d characters (it has %zu); generate one with "
                    "`openssl rand -hex 24`",
                    HOOKD_ADMIN_TOKEN_MIN, strlen(tok)),
               -1;
    const char *al = config_admin_listen(c);
    if (al && !strchr(al, ':'))
        return fail(st, hookd_line(st, "admin_listen"), "[hookd] admin_listen '%s' must be HOST:PORT or off", al), -1;
    if (al && strcmp(al, c->listen) == 0)
        return fail(st, hookd_line(st, "admin_listen"),
                    "[hookd] admin_listen must differ from listen (%s): /admin and /metrics stay off the public "
                    "listener",
                    c->listen),
               -1;
    if (c->admin_session_timeout < 1000)
        return fail(st, hookd_line(st, "admin_session_timeout"), "[hookd] admin_session_timeout must be at least 1s"),
               -1;
    return 0;
}

/* The URL through redis_conn's parser (scheme, host list, service, db),
 * and the TLS files that only make sense together. */
static int validate_redis(struct parse_state *st)
{
    struct hookd_config *c = st->cfg;
    struct redis_url u;
    char err[256];
    int rc = redis_url_parse(c->redis.text, &u, err, sizeof err);
    bool tls = u.tls;
    OPENSSL_cleanse(&u, sizeof u);
    if (rc != 0)
        return fail(st, hookd_line(st, "redis"), "[hookd] redis: %s", err), -1;
    if (!c->redis_cert_file != !c->redis_key_file)
        return fail(st, hookd_line(st, c->redis_cert_file ? "redis_cert_file" : "redis_key_file"),
                    "[hookd] redis_cert_file and redis_key_file go together"),
               -1;
    if (!tls && (c->redis_ca_file || c->redis_cert_file))
        return fail(st, hookd_line(st, c->redis_ca_file ? "redis_ca_file" : "redis_cert_file"),
                    "[hookd] redis_ca_file, redis_cert_file and redis_key_file need a rediss:// URL"),
               -1;
    return 0;
}

const char *config_admin_listen(const struct hookd_config *c)
{
    const char *al = c->admin_listen;
    if (!al || !al[0] || strcmp(al, "off") == 0)
        return NULL;
    return al;
}

/* redact_headers: a comma-separated list of globs over header names. */
static int parse_redact_headers(struct parse_state *st)
{
    struct hookd_config *c = st->cfg;
    char *copy = xstrdup(c->redact_headers), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *t = trim(tok);
        if (!*t)
            continue;
        for (char *q = t; *q; q++) {
            *q = (char)tolower((unsigned char)*q);
            /* RFC 9110 token characters, and '*' */
            if (!isalnum((unsigned char)*q) && !strchr("!#$%&'*+-.^_`|~", *q)) {
                fail(st, hookd_line(st, "redact_headers"),
                     "[hookd] redact_headers: '%s' is not a header name glob (letters, digits, '-', '*')", t);
                rc = -1;
                goto done;
            }
        }
        c->redact_patterns = xrealloc(c->redact_patterns, (c->nredact + 1) * sizeof *c->redact_patterns);
        c->redact_patterns[c->nredact++] = xstrdup(t);
    }
done:
    free(copy);
    return rc;
}

bool config_header_redacted(const struct hookd_config *c, const char *name)
{
    char lower[256];
    size_t i = 0;
    for (; name[i] && i < sizeof lower - 1; i++)
        lower[i] = (char)tolower((unsigned char)name[i]);
    lower[i] = '\0';
    if (name[i]) /* longer than any header worth a pattern: redact rather than guess */
        return true;
    for (size_t k = 0; k < c->nredact; k++)
        if (config_glob_match(c->redact_patterns[k], lower))
            return true;
    return false;
}

/* A duplicate is refused only while its key is remembered: the key must
 * outlive the inbox rows (or a partner's retry of a stored event would be
 * stored again) and every retry a partner can still send that hookd knows
 * of (an event deferred until [defer] max_age may be sent again meanwhile). */
static int validate_retention(struct parse_state *st)
{
    struct retention_config *r = &st->cfg->retention;
    if (!st->retention_dedup_line) { /* unset: at least as long as what it must outlive */
        if (r->dedup < r->inbox)
            r->dedup = r->inbox;
        if (r->dedup < st->cfg->defer.max_age_ms)
            r->dedup = st->cfg->defer.max_age_ms;
    }
    int line = st->retention_dedup_line ? st->retention_dedup_line : st->retention_line ? st->retention_line : 1;
    char a[BACKOFF_DURATION_BUFLEN], b[BACKOFF_DURATION_BUFLEN];
    backoff_format_duration(r->dedup, a, sizeof a);
    if (r->dedup < r->inbox) {
        backoff_format_duration(r->inbox, b, sizeof b);
        return fail(st, line,
                    "[retention] dedup (%s) is shorter than [retention] inbox (%s): a partner's retry of an event "
                    "still stored would be stored again; make dedup at least as long",
                    a, b),
               -1;
    }
    if (r->dedup < st->cfg->defer.max_age_ms) {
        backoff_format_duration(st->cfg->defer.max_age_ms, b, sizeof b);
        return fail(st, line,
                    "[retention] dedup (%s) is shorter than [defer] max_age (%s), the longest a partner's event "
                    "is known to be retried: a retry after dedup would be stored twice; make dedup at least as long",
                    a, b),
               -1;
    }
    return 0;
}

static int validate(struct parse_state *st)
{
    struct hookd_config *c = st->cfg;
    char err[256];
    enum log_level lvl;
    if (!c->database.text)
        return fail(st, hookd_line(st, "database"), "[hookd] database is required (a postgresql:// URL)"), -1;
    if (!c->redis.text)
        return fail(st, hookd_line(st, "redis"), "[hookd] redis is required (a redis:// URL)"), -1;
    if (validate_redis(st) != 0)
        return -1;
    if (!strchr(c->listen, ':'))
        return fail(st, hookd_line(st, "listen"), "[hookd] listen '%s' must be HOST:PORT", c->listen), -1;
    if (validate_admin(st) != 0)
        return -1;
    if (log_level_parse(c->log_level, &lvl) != 0)
        return fail(st, hookd_line(st, "log_level"), "[hookd] log_level '%s' is not one of debug, info, warn, error",
                    c->log_level),
               -1;
    if (c->max_body < 1)
        return fail(st, hookd_line(st, "max_body"), "[hookd] max_body must be at least 1 byte"), -1;
    if (validate_listener(st) != 0 || parse_redact_headers(st) != 0 || validate_portal(st) != 0)
        return -1;
    if (c->trusted_proxies && cidr_list_parse(c->trusted_proxies, &c->trusted, err, sizeof err) != 0)
        return fail(st, hookd_line(st, "trusted_proxies"), "[hookd] trusted_proxies: %s", err), -1;
    if (validate_retry(st, &c->retry, "[retry]", st->retry_line ? st->retry_line : 1) != 0)
        return -1;
    if (defer_policy_validate(&c->defer, err, sizeof err) != 0)
        return fail(st, st->defer_line ? st->defer_line : 1, "[defer]: %s", err), -1;
    if (validate_retention(st) != 0)
        return -1;
    for (size_t i = 0; i < c->noverrides; i++) {
        struct retry_override *o = &c->overrides[i];
        if (!(o->set & SET_SCHEDULE))
            memcpy(o->policy.schedule_ms, c->retry.schedule_ms, sizeof o->policy.schedule_ms),
                o->policy.nsteps = c->retry.nsteps;
        if (!(o->set & SET_MAX_ATTEMPTS))
            o->policy.max_attempts = c->retry.max_attempts;
        if (!(o->set & SET_JITTER))
            o->policy.jitter_pct = c->retry.jitter_pct;
        if (!(o->set & SET_CIRCUIT))
            o->policy.circuit = c->retry.circuit;
        if (!(o->set & SET_CIRCUIT_FAILURES))
            o->policy.circuit_failures = c->retry.circuit_failures;
        if (!(o->set & SET_CIRCUIT_PROBE))
            o->policy.circuit_probe_ms = c->retry.circuit_probe_ms;
        if (!(o->set & SET_CIRCUIT_DISABLE_AFTER))
            o->policy.circuit_disable_after_ms = c->retry.circuit_disable_after_ms;
        char what[160];
        snprintf(what, sizeof what, "[retry %s:%s]",
                 o->scope == RETRY_PARTNER ? "partner"
                 : o->scope == RETRY_EVENT ? "event"
                                           : "endpoint",
                 o->pattern);
        if (o->scope != RETRY_ENDPOINT &&
            (o->set & (SET_CIRCUIT | SET_CIRCUIT_FAILURES | SET_CIRCUIT_PROBE | SET_CIRCUIT_DISABLE_AFTER)))
            return fail(st, o->line, "%s: circuit keys belong in [retry] or [retry endpoint:NAME]", what), -1;
        if (validate_retry(st, &o->policy, what, o->line) != 0)
            return -1;
    }
    for (size_t i = 0; i < c->nmachines; i++)
        if (validate_machine(st, &c->machines[i]) != 0)
            return -1;
    for (size_t i = 0; i < c->npartners; i++)
        if (validate_partner(st, &c->partners[i]) != 0)
            return -1;
    return 0;
}

struct hookd_config *config_load(const char *path, char *err, size_t errlen)
{
    struct parse_state st;
    memset(&st, 0, sizeof st);
    st.path = path;
    st.fp = fopen(path, "r");
    if (!st.fp) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct hookd_config *c = xcalloc(1, sizeof *c);
    c->refs = 1;
    c->generation = 1;
    c->path = xstrdup(path);
    st.cfg = c;
    set_defaults(c);
    int rc = ini_parse_stream(config_reader, &st, on_key, &st);
    if (ferror(st.fp))
        fail(&st, st.line, "read error");
    fclose(st.fp);
    if (rc > 0 && (!st.err[0] || rc < st.err_line)) {
        st.err[0] = '\0'; /* an earlier line had bad syntax: that is the first error */
        fail(&st, rc, "syntax error (expected [section], key = value, or a ; comment)");
    }
    for (size_t i = 0; i < st.nseen; i++)
        free(st.seen[i]);
    free(st.seen);
    if (!st.err[0])
        validate(&st);
    if (st.err[0]) {
        snprintf(err, errlen, "%s", st.err);
        config_unref(c);
        return NULL;
    }
    return c;
}

struct hookd_config *config_ref(struct hookd_config *c)
{
    __atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
    return c;
}

static void field_free(struct field_source *f)
{
    free(f->path);
}

void config_unref(struct hookd_config *c)
{
    if (!c || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    for (size_t i = 0; i < sizeof hookd_keys / sizeof hookd_keys[0]; i++) {
        void *field = (char *)c + hookd_keys[i].offset;
        if (hookd_keys[i].type == KT_STRING)
            free(*(char **)field);
        else if (hookd_keys[i].type == KT_SECRET)
            secret_free(field);
    }
    for (size_t i = 0; i < NPORTAL_KEYS; i++)
        if (portal_keys[i].type == KT_STRING)
            free(*(char **)((char *)c + portal_keys[i].offset));
    cidr_list_free(&c->trusted);
    for (size_t i = 0; i < c->nredact; i++)
        free(c->redact_patterns[i]);
    free(c->redact_patterns);
    for (size_t i = 0; i < c->noverrides; i++)
        free(c->overrides[i].pattern);
    free(c->overrides);
    for (size_t i = 0; i < c->npartners; i++) {
        struct partner_config *p = &c->partners[i];
        for (size_t k = 0; k < p->nsecrets; k++)
            secret_free(&p->secrets[k]);
        for (size_t k = 0; k < p->npublic_keys; k++)
            secret_free(&p->public_keys[k]);
        for (size_t k = 0; k < CONFIG_PARTNER_KEYS_MAX; k++)
            sig_key_clear(&p->keys[k]);
        secret_free(&p->verify_token);
        cidr_list_free(&p->allow_ips);
        free(p->allow_ips_text);
        for (size_t k = 0; k < p->nevent_types; k++)
            free(p->event_types[k]);
        free(p->event_types);
        free(p->event_types_text);
        free(p->name);
        free(p->header);
        free(p->public_url);
        free(p->hmac_signed);
        free(p->hmac_signature_header);
        free(p->hmac_signature_prefix);
        free(p->hmac_timestamp_header);
        free(p->hmac_timestamp_prefix);
        free(p->hmac_separators);
        free(p->entity_type);
        field_free(&p->event_id);
        field_free(&p->event_type);
        field_free(&p->entity_id);
    }
    free(c->partners);
    for (size_t i = 0; i < c->nmachines; i++) {
        struct machine_config *m = &c->machines[i];
        machine_free(m->machine);
        free(m->name);
        free(m->table);
        free(m->id_column);
        free(m->state_column);
        free(m->version_column);
        for (size_t k = 0; k < m->nemits; k++) {
            free(m->emits[k].event);
            free(m->emits[k].emit_type);
        }
        free(m->emits);
    }
    free(c->machines);
    free(c->path);
    free(c);
}

/* ---- lookups ------------------------------------------------------------ */

bool config_glob_match(const char *pat, const char *s)
{
    const char *star = NULL, *resume = NULL;
    while (*s) {
        if (*pat == '*') {
            star = pat++;
            resume = s;
        } else if (*pat == *s) {
            pat++;
            s++;
        } else if (star) {
            pat = star + 1;
            s = ++resume;
        } else {
            return false;
        }
    }
    while (*pat == '*')
        pat++;
    return *pat == '\0';
}

const struct partner_config *config_partner(const struct hookd_config *c, const char *name)
{
    for (size_t i = 0; i < c->npartners; i++)
        if (strcmp(c->partners[i].name, name) == 0)
            return &c->partners[i];
    return NULL;
}

const struct machine_config *config_machine(const struct hookd_config *c, const char *name)
{
    for (size_t i = 0; i < c->nmachines; i++)
        if (strcmp(c->machines[i].name, name) == 0)
            return &c->machines[i];
    return NULL;
}

const struct machine_config *config_machine_for(const struct hookd_config *c, const char *entity_type,
                                                const char *event_type)
{
    if (entity_type && *entity_type)
        return config_machine(c, entity_type);
    for (size_t i = 0; i < c->nmachines; i++)
        if (event_type && machine_has_event(c->machines[i].machine, event_type))
            return &c->machines[i];
    return NULL;
}

static const struct backoff_policy *find_override(const struct hookd_config *c, enum retry_scope scope,
                                                  const char *name)
{
    if (!name)
        return NULL;
    const struct retry_override *best = NULL;
    for (size_t i = 0; i < c->noverrides; i++) {
        const struct retry_override *o = &c->overrides[i];
        if (o->scope != scope || !config_glob_match(o->pattern, name))
            continue;
        /* the longest pattern is the most specific */
        if (!best || strlen(o->pattern) > strlen(best->pattern))
            best = o;
    }
    return best ? &best->policy : NULL;
}

const struct backoff_policy *config_retry_for_inbox(const struct hookd_config *c, const char *partner,
                                                    const char *event_type)
{
    const struct backoff_policy *p = find_override(c, RETRY_EVENT, event_type);
    if (!p)
        p = find_override(c, RETRY_PARTNER, partner);
    return p ? p : &c->retry;
}

const struct backoff_policy *config_retry_for_endpoint(const struct hookd_config *c, const char *endpoint)
{
    const struct backoff_policy *p = find_override(c, RETRY_ENDPOINT, endpoint);
    return p ? p : &c->retry;
}

/* ---- printing ----------------------------------------------------------- */

static void print_secret(FILE *out, const char *key, const struct config_secret *s)
{
    if (!s->text)
        return;
    if (s->env)
        fprintf(out, "%s = env:%s   ; set, value redacted\n", key, s->env);
    else
        fprintf(out, "%s = <redacted>\n", key);
}

/* Connection strings print with every password replaced, since the rest
 * helps debugging: the `user:PASSWORD@` of a URL, and `password=VALUE` in a
 * URL's query or a libpq key=value string. */
/* A libpq keyword/value connection string, as libpq itself reads it (blanks
 * around '=', quoted values), every password redacted. */
static void print_conninfo(FILE *out, const char *key, const char *conninfo)
{
    char *err = NULL;
    PQconninfoOption *opts = PQconninfoParse(conninfo, &err);
    if (!opts) {
        fprintf(out, "%s = <redacted: not a connection string libpq reads>\n", key);
        PQfreemem(err);
        return;
    }
    fprintf(out, "%s =", key);
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        if (!o->val)
            continue;
        if (strcmp(o->keyword, "password") == 0 || strcmp(o->keyword, "sslpassword") == 0) {
            fprintf(out, " %s=<redacted>", o->keyword);
            continue;
        }
        fprintf(out, " %s='", o->keyword);
        for (const char *v = o->val; *v; v++) {
            if (*v == '\'' || *v == '\\')
                fputc('\\', out);
            fputc(*v, out);
        }
        fputc('\'', out);
    }
    fputc('\n', out);
    PQconninfoFree(opts);
}

static void print_url(FILE *out, const char *key, const struct config_secret *s)
{
    if (s->env) {
        print_secret(out, key, s);
        return;
    }
    const char *t = s->text;
    const char *scheme_end = strstr(t, "://");
    if (!scheme_end) {
        print_conninfo(out, key, t);
        return;
    }
    const char *at = scheme_end ? strchr(scheme_end + 3, '@') : NULL;
    const char *colon = at ? memchr(scheme_end + 3, ':', (size_t)(at - scheme_end - 3)) : NULL;
    fprintf(out, "%s = ", key);
    while (*t) {
        if (colon && t == colon) {
            fputs(":<redacted>", out);
            t = at;
            continue;
        }
        if (strncasecmp(t, "password=", 9) == 0 && (t == s->text || strchr("?& \t", t[-1]))) {
            fputs("password=<redacted>", out);
            t += 9;
            t += strcspn(t, "& \t");
            continue;
        }
        fputc(*t++, out);
    }
    fputc('\n', out);
}

static void print_schedule(FILE *out, const int64_t *ms, int n)
{
    char buf[BACKOFF_DURATION_BUFLEN];
    for (int i = 0; i < n; i++) {
        backoff_format_duration(ms[i], buf, sizeof buf);
        fprintf(out, "%s%s", i ? ", " : "", buf);
    }
    fputc('\n', out);
}

static void print_retry(FILE *out, const struct backoff_policy *p, bool circuit)
{
    fprintf(out, "schedule = ");
    print_schedule(out, p->schedule_ms, p->nsteps);
    fprintf(out, "max_attempts = %d\njitter = %d%%\n", p->max_attempts, p->jitter_pct);
    if (!circuit)
        return;
    char probe[BACKOFF_DURATION_BUFLEN];
    backoff_format_duration(p->circuit_probe_ms, probe, sizeof probe);
    fprintf(out, "circuit = %s\ncircuit_failures = %d\ncircuit_probe = %s\n", p->circuit ? "on" : "off",
            p->circuit_failures, probe);
    char after[BACKOFF_DURATION_BUFLEN] = "off";
    if (p->circuit_disable_after_ms > 0)
        backoff_format_duration(p->circuit_disable_after_ms, after, sizeof after);
    fprintf(out, "circuit_disable_after = %s\n", after);
}

static bool key_changed(const struct key_def *k, const struct hookd_config *a, const struct hookd_config *b)
{
    const void *x = (const char *)a + k->offset, *y = (const char *)b + k->offset;
    switch (k->type) {
    case KT_STRING: {
        const char *s = *(char *const *)x, *t = *(char *const *)y;
        return (s == NULL) != (t == NULL) || (s && strcmp(s, t) != 0);
    }
    case KT_SECRET: {
        const char *s = ((const struct config_secret *)x)->text, *t = ((const struct config_secret *)y)->text;
        return (s == NULL) != (t == NULL) || (s && strcmp(s, t) != 0);
    }
    case KT_DURATION:
    case KT_INT:
    case KT_SIZE: return *(const int64_t *)x != *(const int64_t *)y;
    case KT_BOOL: return *(const bool *)x != *(const bool *)y;
    case KT_ROLES: return *(const unsigned *)x != *(const unsigned *)y;
    }
    return false;
}

size_t config_restart_keys(const struct hookd_config *old, const struct hookd_config *new_cfg, char *buf,
                           size_t buflen)
{
    size_t n = 0, used = 0;
    if (buflen > 0)
        buf[0] = '\0';
    for (size_t i = 0; i < sizeof hookd_keys / sizeof hookd_keys[0]; i++) {
        const struct key_def *k = &hookd_keys[i];
        if (k->reloadable || !key_changed(k, old, new_cfg))
            continue;
        if (used < buflen) {
            int w = snprintf(buf + used, buflen - used, "%s%s", n ? ", " : "", k->name);
            used += w > 0 ? (size_t)w : 0;
        }
        n++;
    }
    return n;
}

static void print_source(FILE *out, const char *key, const struct field_source *f)
{
    if (f->kind == FIELD_DIGEST)
        fprintf(out, "%s = digest\n", key);
    else if (f->kind != FIELD_NONE)
        fprintf(out, "%s = %s:%s\n", key, f->kind == FIELD_JSON ? "json" : "header", f->path);
}

/* scheme = hmac: the spec as keys. */
static void print_hmac(FILE *out, const struct partner_config *p)
{
    static const char *const algs[] =
        {[SIG_ALG_HMAC_SHA1] = "sha1", [SIG_ALG_HMAC_SHA256] = "sha256", [SIG_ALG_HMAC_SHA512] = "sha512"};
    static const char *const formats[] =
        {[SIG_TS_UNIX] = "unix", [SIG_TS_UNIX_MS] = "unix_ms", [SIG_TS_RFC3339] = "rfc3339"};
    const struct sig_spec *s = &p->spec;
    if (p->scheme != SIG_HMAC)
        return;
    fprintf(out, "algorithm = %s\nsigned = %s\nsignature_header = %s\n", algs[s->alg], s->signed_template,
            s->signature_header);
    if (s->signature_prefix)
        fprintf(out, "signature_prefix = %s\n", s->signature_prefix);
    fprintf(out, "encoding = %s\nseveral_signatures = %s\n", s->encoding == SIG_ENC_BASE64 ? "base64" : "hex",
            s->multiple ? "true" : "false");
    if (p->hmac_timestamp_header)
        fprintf(out, "timestamp_header = %s\n", p->hmac_timestamp_header);
    if (s->timestamp_prefix)
        fprintf(out, "timestamp_prefix = %s\n", s->timestamp_prefix);
    if (s->separators) {
        fprintf(out, "separators = ");
        for (const char *c = s->separators; *c; c++)
            fprintf(out, "%s%s", c == s->separators ? "" : ", ",
                    *c == ','   ? "comma"
                    : *c == ';' ? "semicolon"
                                : "space");
        fprintf(out, "\n");
    }
    if (s->timestamp_header)
        fprintf(out, "timestamp_format = %s\n", formats[s->timestamp_format]);
}

static void print_hookd(FILE *out, const struct hookd_config *c)
{
    char buf[BACKOFF_DURATION_BUFLEN];
    fprintf(out, "[hookd]\n");
    for (size_t i = 0; i < sizeof hookd_keys / sizeof hookd_keys[0]; i++) {
        const struct key_def *k = &hookd_keys[i];
        const void *field = (const char *)c + k->offset;
        switch (k->type) {
        case KT_STRING:
            if (*(char *const *)field)
                fprintf(out, "%s = %s\n", k->name, *(char *const *)field);
            break;
        case KT_SECRET:
            if (strcmp(k->name, "database") == 0 || strcmp(k->name, "redis") == 0)
                print_url(out, k->name, field);
            else
                print_secret(out, k->name, field);
            break;
        case KT_DURATION:
            backoff_format_duration(*(const int64_t *)field, buf, sizeof buf);
            fprintf(out, "%s = %s\n", k->name, buf);
            break;
        case KT_INT:
        case KT_SIZE: fprintf(out, "%s = %lld\n", k->name, (long long)*(const int64_t *)field); break;
        case KT_BOOL: fprintf(out, "%s = %s\n", k->name, *(const bool *)field ? "true" : "false"); break;
        case KT_ROLES: {
            unsigned r = *(const unsigned *)field;
            fprintf(out, "%s = %s%s%s%s%s\n", k->name, r & ROLE_INGEST ? "ingest" : "",
                    (r & ROLE_INGEST) && (r & (ROLE_INBOX | ROLE_RELAY)) ? ", " : "", r & ROLE_INBOX ? "inbox" : "",
                    (r & ROLE_INBOX) && (r & ROLE_RELAY) ? ", " : "", r & ROLE_RELAY ? "relay" : "");
            break;
        }
        }
    }
}

static void print_machine(FILE *out, const struct machine_config *m)
{
    fprintf(out, "\n[machine %s]\n", m->name);
    if (!m->builtin)
        fprintf(out, "table = %s\nid_column = %s\nstate_column = %s\n", m->table, m->id_column, m->state_column);
    if (!m->builtin && m->version_column)
        fprintf(out, "version_column = %s\n", m->version_column);
    fprintf(out, "initial = %s\ncreate = %s\non_conflict = %s\n", machine_initial(m->machine),
            m->create ? "true" : "false", m->on_conflict == CONFLICT_DLQ ? "dlq" : "ignore");
    for (size_t t = 0; t < machine_ntransitions(m->machine); t++) {
        struct machine_transition_info ti;
        machine_transition(m->machine, t, &ti);
        fprintf(out, "transition %s = ", ti.event);
        for (size_t f = 0; f < ti.nfrom; f++)
            fprintf(out, "%s%s", f ? ", " : "", ti.from[f]);
        fprintf(out, " -> %s\n", ti.to);
    }
    for (size_t k = 0; k < m->nemits; k++)
        fprintf(out, "emit %s = %s\n", m->emits[k].event, m->emits[k].emit_type);
}

static void print_portal(FILE *out, const struct portal_config *p)
{
    char link[BACKOFF_DURATION_BUFLEN], session[BACKOFF_DURATION_BUFLEN];
    backoff_format_duration(p->link_ttl, link, sizeof link);
    backoff_format_duration(p->session_ttl, session, sizeof session);
    fprintf(out, "\n[portal]\n");
    if (p->base_url)
        fprintf(out, "base_url = %s\n", p->base_url);
    fprintf(out, "link_ttl = %s\nsession_ttl = %s\ntitle = %s\n", link, session, p->title);
    if (p->logo_url)
        fprintf(out, "logo_url = %s\n", p->logo_url);
    fprintf(out, "accent_color = %s\n", p->accent_color);
}

static void print_retention(FILE *out, const struct retention_config *r)
{
    const struct {
        const char *name;
        int64_t v;
    } keys[] = {{"inbox", r->inbox},       {"outbox", r->outbox},
                {"attempts", r->attempts}, {"dead_letters", r->dead_letters},
                {"dedup", r->dedup},       {"interval", r->interval}};
    char buf[BACKOFF_DURATION_BUFLEN];
    fprintf(out, "\n[retention]\n");
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (keys[i].v == 0) { /* only interval can be 0: off */
            fprintf(out, "%s = off\n", keys[i].name);
            continue;
        }
        backoff_format_duration(keys[i].v, buf, sizeof buf);
        fprintf(out, "%s = %s\n", keys[i].name, buf);
    }
}

void config_print(const struct hookd_config *c, FILE *out)
{
    char buf[BACKOFF_DURATION_BUFLEN];
    print_hookd(out, c);
    fprintf(out, "\n[retry]\n");
    print_retry(out, &c->retry, true);
    fprintf(out, "\n[defer]\nschedule = ");
    print_schedule(out, c->defer.schedule_ms, c->defer.nsteps);
    backoff_format_duration(c->defer.max_age_ms, buf, sizeof buf);
    fprintf(out, "max_age = %s\n", buf);
    print_portal(out, &c->portal);
    print_retention(out, &c->retention);
    for (size_t i = 0; i < c->noverrides; i++) {
        const struct retry_override *o = &c->overrides[i];
        fprintf(out, "\n[retry %s:%s]\n",
                o->scope == RETRY_PARTNER ? "partner"
                : o->scope == RETRY_EVENT ? "event"
                                          : "endpoint",
                o->pattern);
        print_retry(out, &o->policy, o->scope == RETRY_ENDPOINT);
    }
    for (size_t i = 0; i < c->npartners; i++) {
        const struct partner_config *p = &c->partners[i];
        fprintf(out, "\n[partner %s]\nscheme = %s\n", p->name, sig_scheme_name(p->scheme));
        for (size_t k = 0; k < p->nsecrets; k++)
            print_secret(out, "secret", &p->secrets[k]);
        for (size_t k = 0; k < p->npublic_keys; k++)
            fprintf(out, "public_key = %s%s\n", p->public_keys[k].env ? "env:" : "",
                    p->public_keys[k].env ? p->public_keys[k].env : p->public_keys[k].text);
        if (p->verify_token.text)
            print_secret(out, "verify_token", &p->verify_token);
        if (p->public_url)
            fprintf(out, "public_url = %s\n", p->public_url);
        if (p->allow_ips_text)
            fprintf(out, "allow_ips = %s\n", p->allow_ips_text);
        if (p->event_types_text)
            fprintf(out, "event_types = %s\n", p->event_types_text);
        backoff_format_duration(p->tolerance, buf, sizeof buf);
        fprintf(out, "tolerance = %s\n", buf);
        if (p->header)
            fprintf(out, "header = %s\n", p->header);
        print_hmac(out, p);
        print_source(out, "event_id", &p->event_id);
        print_source(out, "event_type", &p->event_type);
        print_source(out, "entity_id", &p->entity_id);
        if (p->entity_type)
            fprintf(out, "entity_type = %s\n", p->entity_type);
        if (p->max_body)
            fprintf(out, "max_body = %lld\n", (long long)p->max_body);
    }
    for (size_t i = 0; i < c->nmachines; i++)
        print_machine(out, &c->machines[i]);
}
