/* Loading a config (config.h): the file is read through the table
 * (config_parse.c) into a new snapshot with every default filled in, then
 * checked whole: what one key cannot say alone (a partner's scheme and its
 * keys, a machine's graph, retry overrides inheriting from [retry], the
 * listener's limits against every body limit, the bounds checked with the
 * whole file). The first error wins and names file:line; on any error the
 * snapshot is freed and NULL returned, so a reload keeps the old one. */
#include <ctype.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <string.h>

#include "config.h"
#include "config_internal.h"
#include "errbuf.h"
#include "log.h"
#include "redis_conn.h"
#include "xmalloc.h"

/* A bound of a single section's key (config_keys.c), checked on the value
 * the file left; the error names the key's line. */
static int check_bound(struct config_parse *st, int sec, const char *name)
{
    const struct config_section *s = &config_sections[sec];
    char msg[256];
    if (config_within_bounds(s, config_key_named(sec, name), (char *)st->cfg + s->offset, msg, sizeof msg))
        return 0;
    config_fail(st, config_key_line(st, sec, name), "%s", msg);
    return -1;
}

/* A preset's default ("json:id", "header:X", "digest") for a field the
 * partner did not set. The table's values always parse. */
static void default_source(struct field_source *f, const char *def)
{
    char err[160];
    if (f->kind == FIELD_NONE && def) {
        int rc = config_read_source(def, f, err, sizeof err);
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
static int build_hmac_spec(struct config_parse *st, struct partner_config *p)
{
    struct sig_spec *s = &p->spec;
    if (!p->hmac_signature_header)
        return config_fail(st, p->line, "[partner %s] uses scheme hmac and needs 'signature_header'", p->name), -1;
    s->key_format = SIG_KEY_RAW;
    s->signed_template = p->hmac_signed; /* the table's default when not given */
    s->signature_header = p->hmac_signature_header;
    s->signature_prefix = p->hmac_signature_prefix;
    s->timestamp_header = p->hmac_timestamp_header;
    s->timestamp_prefix = p->hmac_timestamp_prefix;
    s->separators = p->hmac_separators;
    if (p->hmac_timestamp_prefix && !p->hmac_timestamp_header)
        s->timestamp_header = p->hmac_signature_header; /* t= inside the signature header */
    bool has_ts = s->timestamp_header != NULL;
    bool signs_ts = strstr(s->signed_template, "{timestamp}") != NULL;
    if (signs_ts && !has_ts)
        return config_fail(st, p->line, "[partner %s] signs {timestamp} but has no timestamp_header", p->name), -1;
    if (has_ts && !signs_ts)
        return config_fail(st, p->line,
                           "[partner %s] has a timestamp_header that the signed template does not contain: an "
                           "unsigned "
                           "timestamp proves nothing (add {timestamp} to 'signed')",
                           p->name),
               -1;
    return 0;
}

static int decode_partner_keys(struct config_parse *st, struct partner_config *p)
{
    char err[256];
    bool public = p->spec.alg == SIG_ALG_PUBLIC_KEY;
    const struct config_secret *texts = public ? p->public_keys : p->secrets;
    size_t n = public ? p->npublic_keys : p->nsecrets;
    const char *what = public ? "public_key" : "secret";

    if (public && p->nsecrets)
        return config_fail(st, p->line,
                           "[partner %s] scheme %s verifies with a public key: use public_key, not secret", p->name,
                           p->preset->name),
               -1;
    if (!public && p->npublic_keys)
        return config_fail(st, p->line,
                           "[partner %s] scheme %s verifies with a shared secret: use secret, not public_key", p->name,
                           p->preset->name),
               -1;
    if (n == 0)
        return config_fail(st, p->line, "[partner %s] has no %s", p->name, what), -1;
    for (size_t i = 0; i < n; i++) {
        int rc = public ? sig_public_key_decode(p->scheme, texts[i].text, &p->keys[i], err, sizeof err)
                        : sig_key_decode(p->scheme, texts[i].text, &p->keys[i], err, sizeof err);
        if (rc != 0)
            return config_fail(st, p->line, "[partner %s] %s %zu: %s", p->name, what, i + 1, err), -1;
        p->nkeys = i + 1;
        /* A short key can be guessed offline from one captured request. */
        if (!public && p->keys[i].len < CONFIG_PARTNER_SECRET_MIN)
            return config_fail(st, p->line, "[partner %s] secret %zu is %zu bytes%s; at least %d are required",
                               p->name, i + 1, p->keys[i].len,
                               p->spec.key_format == SIG_KEY_WHSEC_BASE64 ? " after base64 decoding" : "",
                               CONFIG_PARTNER_SECRET_MIN),
                   -1;
    }
    return 0;
}

/* A preset whose handshake signs what anyone asks for (x's CRC) is only
 * safe behind allow_ips that name ranges. */
static int check_required_allow_ips(struct config_parse *st, const struct partner_config *p)
{
    const char *why = p->preset->requires_allow_ips;

    if (!why)
        return 0;
    if (p->allow_ips.n == 0)
        return config_fail(st, p->line, "[partner %s] scheme %s needs allow_ips: %s", p->name, p->preset->name, why),
               -1;
    for (size_t i = 0; i < p->allow_ips.n; i++)
        if (p->allow_ips.v[i].prefix == 0)
            return config_fail(st, p->line, "[partner %s] scheme %s needs allow_ips narrower than every address: %s",
                               p->name, p->preset->name, why),
                   -1;
    return 0;
}

static int validate_partner(struct config_parse *st, struct partner_config *p)
{
    if ((int)p->scheme == -1)
        return config_fail(st, p->line, "[partner %s] has no scheme", p->name), -1;
    p->preset = sig_preset_get(p->scheme);
    if (p->scheme == SIG_HMAC) {
        if (build_hmac_spec(st, p) != 0)
            return -1;
    } else {
        if (p->hmac_keys)
            return config_fail(st, p->line,
                               "[partner %s] sets keys of scheme = hmac (algorithm, signed, signature_header, …) but "
                               "uses "
                               "scheme %s",
                               p->name, p->preset->name),
                   -1;
        p->spec = p->preset->spec;
    }
    if (p->scheme == SIG_HMAC_SHA256) {
        if (!p->header)
            return config_fail(st, p->line,
                               "[partner %s] uses scheme hmac-sha256 and needs 'header' (the header holding the "
                               "signature)",
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
        return config_fail(st, p->line, "[partner %s] needs 'event_id' (json:PATH, header:NAME or digest)", p->name),
               -1;
    if (p->event_type.kind == FIELD_NONE)
        return config_fail(st, p->line,
                           "[partner %s] needs 'event_type' (json:PATH or header:NAME): scheme %s has no event type "
                           "of its "
                           "own",
                           p->name, p->preset->name),
               -1;
    if (p->event_type.kind == FIELD_DIGEST || p->entity_id.kind == FIELD_DIGEST)
        return config_fail(st, p->line, "[partner %s] 'digest' is a source for event_id only", p->name), -1;
    p->content_dedup = !sig_spec_signs_timestamp(&p->spec) || !field_signed(&p->spec, &p->event_id) ||
                       !field_signed(&p->spec, &p->event_type) || !field_signed(&p->spec, &p->entity_id);
    if (p->entity_type && !config_machine(st->cfg, p->entity_type))
        return config_fail(st, p->line, "[partner %s] names entity_type '%s', but there is no [machine %s]", p->name,
                           p->entity_type, p->entity_type),
               -1;
    return 0;
}

static int validate_retry(struct config_parse *st, const struct backoff_policy *p, const char *what, int line)
{
    char err[256];
    if (backoff_policy_validate(p, err, sizeof err) != 0)
        return config_fail(st, line, "%s: %s", what, err), -1;
    if (p->nsteps > p->max_attempts - 1)
        return config_fail(st, line, "%s: schedule has %d steps but max_attempts = %d allows only %d waits", what,
                           p->nsteps, p->max_attempts, p->max_attempts - 1),
               -1;
    return 0;
}

static int validate_machine(struct config_parse *st, struct machine_config *m)
{
    char err[256];
    if (machine_finalize(m->machine, err, sizeof err) != 0)
        return config_fail(st, m->line, "[machine %s]: %s", m->name, err), -1;
    m->builtin = !m->table;
    if (m->create < 0)
        m->create = m->builtin;
    if (m->builtin) {
        if (m->id_column || m->state_column || m->version_column)
            return config_fail(st, m->line, "[machine %s]: id_column, state_column and version_column need 'table'",
                               m->name),
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
            return config_fail(st, m->line, "[machine %s]: 'emit %s' names no transition of this machine", m->name,
                               m->emits[i].event),
                   -1;
    /* An event type must lead to one machine, or routing is ambiguous. */
    for (size_t j = 0; j < (size_t)(m - st->cfg->machines); j++) {
        const struct machine_config *o = &st->cfg->machines[j];
        for (size_t t = 0; t < machine_ntransitions(m->machine); t++) {
            struct machine_transition_info ti;
            machine_transition(m->machine, t, &ti);
            if (machine_has_event(o->machine, ti.event))
                return config_fail(st, m->line, "event type '%s' is named by [machine %s] and [machine %s]", ti.event,
                                   o->name, m->name),
                       -1;
        }
    }
    return 0;
}

/* [route NAME]: its partner must exist, or the route could never take
 * anything. */
static int validate_route(struct config_parse *st, const struct route_config *r)
{
    if (!r->partner)
        return config_fail(st, r->line, "[route %s] needs 'partner' (the name of a [partner NAME] section)", r->name),
               -1;
    const struct partner_config *p = config_partner(st->cfg, r->partner);
    if (!p)
        return config_fail(st, r->line, "[route %s] names partner '%s', but there is no [partner %s]", r->name,
                           r->partner, r->partner),
               -1;
    return 0;
}

/* The public listener's limits (struct http_limits): a head must fit a
 * request line and a few headers, and a body of max_body must fit the
 * total, or every large request would be refused. */
static int validate_listener(struct config_parse *st)
{
    const struct hookd_config *c = st->cfg;
    if (check_bound(st, CONFIG_SEC_HOOKD, "max_header_size") != 0 ||
        check_bound(st, CONFIG_SEC_HOOKD, "max_headers") != 0 ||
        check_bound(st, CONFIG_SEC_HOOKD, "request_timeout") != 0 ||
        check_bound(st, CONFIG_SEC_HOOKD, "max_connections") != 0)
        return -1;
    for (size_t i = 0; i < c->npartners; i++) {
        int64_t body = c->partners[i].max_body ? c->partners[i].max_body : c->max_body;
        if (c->max_buffered_body < body)
            return config_fail(st, config_key_line(st, CONFIG_SEC_HOOKD, "max_buffered_body"),
                               "[hookd] max_buffered_body (%lld) is smaller than the max_body of [partner %s] (%lld): "
                               "such "
                               "a request could never be received",
                               (long long)c->max_buffered_body, c->partners[i].name, (long long)body),
                   -1;
    }
    if (c->max_buffered_body < c->max_body)
        return config_fail(st, config_key_line(st, CONFIG_SEC_HOOKD, "max_buffered_body"),
                           "[hookd] max_buffered_body (%lld) is smaller than max_body (%lld)",
                           (long long)c->max_buffered_body, (long long)c->max_body),
               -1;
    return 0;
}

/* [portal]: the accent colour goes into a style sheet and the URLs into
 * pages and links, so they are held to shapes that need no escaping. */
static int validate_portal(struct config_parse *st)
{
    const struct portal_config *p = &st->cfg->portal;
    int line = st->section_line[CONFIG_SEC_PORTAL] ? st->section_line[CONFIG_SEC_PORTAL] : 1;
    const char *a = p->accent_color;
    size_t n = strlen(a);
    if (a[0] != '#' || (n != 4 && n != 7) || strspn(a + 1, "0123456789abcdefABCDEF") != n - 1)
        return config_fail(st, line, "[portal] accent_color must be #rgb or #rrggbb"), -1;
    if (p->base_url && strncmp(p->base_url, "http://", 7) != 0 && strncmp(p->base_url, "https://", 8) != 0)
        return config_fail(st, line, "[portal] base_url must start with http:// or https://"), -1;
    if (p->logo_url && strncmp(p->logo_url, "https://", 8) != 0 && p->logo_url[0] != '/')
        return config_fail(st, line, "[portal] logo_url must be an https:// URL or a path"), -1;
    if (p->logo_url && strncmp(p->logo_url, "//", 2) == 0) /* a browser loads it from that host */
        return config_fail(st, line, "[portal] logo_url must not start with // (write https://host/… or a path)"), -1;
    if (strlen(p->title) > 80)
        return config_fail(st, line, "[portal] title must be at most 80 characters"), -1;
    const struct config_section *s = &config_sections[CONFIG_SEC_PORTAL];
    const struct config_key *link = config_key_named(CONFIG_SEC_PORTAL, "link_ttl");
    if (!config_within_bounds(s, link, p, NULL, 0) ||
        !config_within_bounds(s, config_key_named(CONFIG_SEC_PORTAL, "session_ttl"), p, NULL, 0))
        return config_fail(st, line, "[portal] link_ttl and session_ttl must be at least %s", link->min), -1;
    for (const char *c = p->base_url ? p->base_url : ""; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == '"' || *c == '<' || *c == '>' || *c == '\\')
            return config_fail(st, line, "[portal] base_url must not hold spaces, quotes or angle brackets"), -1;
    for (const char *c = p->logo_url ? p->logo_url : ""; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == '"' || *c == '<' || *c == '>' || *c == '\\')
            return config_fail(st, line, "[portal] logo_url must not hold spaces, quotes or angle brackets"), -1;
    return 0;
}

/* The admin listener and its token: a token an attacker can guess in a day
 * of throttled tries is no token (24 characters of `openssl rand -hex 12`
 * are 96 bits). The length is never printed with the token. */
static int validate_admin(struct config_parse *st)
{
    const struct hookd_config *c = st->cfg;
    const char *tok = c->admin_token.text;
    if (tok && strlen(tok) < HOOKD_ADMIN_TOKEN_MIN)
        return config_fail(st, config_key_line(st, CONFIG_SEC_HOOKD, "admin_token"),
                           "[hookd] admin_token must be at least %d characters (it has %zu); generate one with "
                           "`openssl rand -hex 24`",
                           HOOKD_ADMIN_TOKEN_MIN, strlen(tok)),
               -1;
    const char *al = config_admin_listen(c);
    if (al && !strchr(al, ':'))
        return config_fail(st, config_key_line(st, CONFIG_SEC_HOOKD, "admin_listen"),
                           "[hookd] admin_listen '%s' must be HOST:PORT or off", al),
               -1;
    if (al && strcmp(al, c->listen) == 0)
        return config_fail(st, config_key_line(st, CONFIG_SEC_HOOKD, "admin_listen"),
                           "[hookd] admin_listen must differ from listen (%s): /admin and /metrics stay off the "
                           "public "
                           "listener",
                           c->listen),
               -1;
    return check_bound(st, CONFIG_SEC_HOOKD, "admin_session_timeout");
}

/* The URL through redis_conn's parser (scheme, host list, service, db),
 * and the TLS files that only make sense together. */
static int validate_redis(struct config_parse *st)
{
    struct hookd_config *c = st->cfg;
    struct redis_url u;
    char err[256];
    int rc = redis_url_parse(c->redis.text, &u, err, sizeof err);
    bool tls = u.tls;
    OPENSSL_cleanse(&u, sizeof u);
    if (rc != 0)
        return config_fail(st, config_key_line(st, CONFIG_SEC_HOOKD, "redis"), "[hookd] redis: %s", err), -1;
    if (!c->redis_cert_file != !c->redis_key_file)
        return config_fail(st,
                           config_key_line(st, CONFIG_SEC_HOOKD,
                                           c->redis_cert_file ? "redis_cert_file" : "redis_key_file"),
                           "[hookd] redis_cert_file and redis_key_file go together"),
               -1;
    if (!tls && (c->redis_ca_file || c->redis_cert_file))
        return config_fail(st,
                           config_key_line(st, CONFIG_SEC_HOOKD,
                                           c->redis_ca_file ? "redis_ca_file" : "redis_cert_file"),
                           "[hookd] redis_ca_file, redis_cert_file and redis_key_file need a rediss:// URL"),
               -1;
    return 0;
}

/* redact_headers: a comma-separated list of globs over header names. */
static int parse_redact_headers(struct config_parse *st)
{
    struct hookd_config *c = st->cfg;
    char *copy = xstrdup(c->redact_headers), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *t = config_trim(tok);
        if (!*t)
            continue;
        for (char *q = t; *q; q++) {
            *q = (char)tolower((unsigned char)*q);
            /* RFC 9110 token characters, and '*' */
            if (!isalnum((unsigned char)*q) && !strchr("!#$%&'*+-.^_`|~", *q)) {
                config_fail(st, config_key_line(st, CONFIG_SEC_HOOKD, "redact_headers"),
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

/* A duplicate is refused only while its key is remembered: the key must
 * outlive the inbox rows (or a partner's retry of a stored event would be
 * stored again) and every retry a partner can still send that hookd knows
 * of (an event deferred until [defer] max_age may be sent again meanwhile). */
static int validate_retention(struct config_parse *st)
{
    struct retention_config *r = &st->cfg->retention;
    int dedup_line = st->key_line[CONFIG_SEC_RETENTION][config_key_named(CONFIG_SEC_RETENTION, "dedup") -
                                                        config_sections[CONFIG_SEC_RETENTION].keys];
    if (!dedup_line) { /* unset: at least as long as what it must outlive */
        if (r->dedup < r->inbox)
            r->dedup = r->inbox;
        if (r->dedup < st->cfg->defer.max_age_ms)
            r->dedup = st->cfg->defer.max_age_ms;
    }
    int line = config_key_line(st, CONFIG_SEC_RETENTION, "dedup");
    char a[BACKOFF_DURATION_BUFLEN], b[BACKOFF_DURATION_BUFLEN];
    backoff_format_duration(r->dedup, a, sizeof a);
    if (r->dedup < r->inbox) {
        backoff_format_duration(r->inbox, b, sizeof b);
        return config_fail(st, line,
                           "[retention] dedup (%s) is shorter than [retention] inbox (%s): a partner's retry of an "
                           "event "
                           "still stored would be stored again; make dedup at least as long",
                           a, b),
               -1;
    }
    if (r->dedup < st->cfg->defer.max_age_ms) {
        backoff_format_duration(st->cfg->defer.max_age_ms, b, sizeof b);
        return config_fail(
                   st, line,
                   "[retention] dedup (%s) is shorter than [defer] max_age (%s), the longest a partner's event "
                   "is known to be retried: a retry after dedup would be stored twice; make dedup at least as long",
                   a, b),
               -1;
    }
    return 0;
}

static int validate(struct config_parse *st)
{
    struct hookd_config *c = st->cfg;
    char err[256];
    enum log_level lvl;
    if (!c->database.text)
        return config_fail(st, config_key_line(st, CONFIG_SEC_HOOKD, "database"),
                           "[hookd] database is required (a postgresql:// URL)"),
               -1;
    if (!c->redis.text)
        return config_fail(st, config_key_line(st, CONFIG_SEC_HOOKD, "redis"),
                           "[hookd] redis is required (a redis:// URL)"),
               -1;
    if (validate_redis(st) != 0)
        return -1;
    if (!strchr(c->listen, ':'))
        return config_fail(st, config_key_line(st, CONFIG_SEC_HOOKD, "listen"),
                           "[hookd] listen '%s' must be HOST:PORT", c->listen),
               -1;
    if (validate_admin(st) != 0)
        return -1;
    if (log_level_parse(c->log_level, &lvl) != 0)
        return config_fail(st, config_key_line(st, CONFIG_SEC_HOOKD, "log_level"),
                           "[hookd] log_level '%s' is not one of debug, info, warn, error", c->log_level),
               -1;
    if (check_bound(st, CONFIG_SEC_HOOKD, "max_body") != 0)
        return -1;
    if (validate_listener(st) != 0 || parse_redact_headers(st) != 0 || validate_portal(st) != 0)
        return -1;
    if (c->trusted_proxies && cidr_list_parse(c->trusted_proxies, &c->trusted, err, sizeof err) != 0)
        return config_fail(st, config_key_line(st, CONFIG_SEC_HOOKD, "trusted_proxies"), "[hookd] trusted_proxies: %s",
                           err),
               -1;
    if (validate_retry(st, &c->retry, "[retry]",
                       st->section_line[CONFIG_SEC_RETRY] ? st->section_line[CONFIG_SEC_RETRY] : 1) != 0)
        return -1;
    if (defer_policy_validate(&c->defer, err, sizeof err) != 0)
        return config_fail(st, st->section_line[CONFIG_SEC_DEFER] ? st->section_line[CONFIG_SEC_DEFER] : 1,
                           "[defer]: %s", err),
               -1;
    if (validate_retention(st) != 0)
        return -1;
    for (size_t i = 0; i < c->noverrides; i++) {
        struct retry_override *o = &c->overrides[i];
        if (!(o->set & CONFIG_SET_SCHEDULE))
            memcpy(o->policy.schedule_ms, c->retry.schedule_ms, sizeof o->policy.schedule_ms),
                o->policy.nsteps = c->retry.nsteps;
        if (!(o->set & CONFIG_SET_MAX_ATTEMPTS))
            o->policy.max_attempts = c->retry.max_attempts;
        if (!(o->set & CONFIG_SET_JITTER))
            o->policy.jitter_pct = c->retry.jitter_pct;
        if (!(o->set & CONFIG_SET_CIRCUIT))
            o->policy.circuit = c->retry.circuit;
        if (!(o->set & CONFIG_SET_CIRCUIT_FAILURES))
            o->policy.circuit_failures = c->retry.circuit_failures;
        if (!(o->set & CONFIG_SET_CIRCUIT_PROBE))
            o->policy.circuit_probe_ms = c->retry.circuit_probe_ms;
        if (!(o->set & CONFIG_SET_CIRCUIT_DISABLE_AFTER))
            o->policy.circuit_disable_after_ms = c->retry.circuit_disable_after_ms;
        char what[160];
        snprintf(what, sizeof what, "[retry %s:%s]",
                 o->scope == RETRY_PARTNER ? "partner"
                 : o->scope == RETRY_EVENT ? "event"
                                           : "endpoint",
                 o->pattern);
        if (o->scope != RETRY_ENDPOINT && (o->set & (CONFIG_SET_CIRCUIT | CONFIG_SET_CIRCUIT_FAILURES |
                                                     CONFIG_SET_CIRCUIT_PROBE | CONFIG_SET_CIRCUIT_DISABLE_AFTER)))
            return config_fail(st, o->line, "%s: circuit keys belong in [retry] or [retry endpoint:NAME]", what), -1;
        if (validate_retry(st, &o->policy, what, o->line) != 0)
            return -1;
    }
    for (size_t i = 0; i < c->nmachines; i++)
        if (validate_machine(st, &c->machines[i]) != 0)
            return -1;
    for (size_t i = 0; i < c->npartners; i++)
        if (validate_partner(st, &c->partners[i]) != 0)
            return -1;
    for (size_t i = 0; i < c->nroutes; i++)
        if (validate_route(st, &c->routes[i]) != 0)
            return -1;
    return 0;
}

struct hookd_config *config_load(const char *path, char *err, size_t errlen)
{
    struct config_parse st;
    memset(&st, 0, sizeof st);
    st.path = path;
    st.fp = fopen(path, "r");
    if (!st.fp)
        return err_set(err, errlen, "%s: cannot open: %s", path, strerror(errno)), NULL;
    struct hookd_config *c = xcalloc(1, sizeof *c);
    c->refs = 1;
    c->generation = 1;
    c->path = xstrdup(path);
    st.cfg = c;
    config_set_defaults(c);
    config_parse_file(&st);
    fclose(st.fp);
    if (!st.err[0])
        validate(&st);
    if (st.err[0]) {
        err_set(err, errlen, "%s", st.err);
        config_unref(c);
        return NULL;
    }
    return c;
}
