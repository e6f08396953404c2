/* `hookd config check` prints the effective config (config_print(),
 * config.h): every section in INI form with the defaults filled in, so that
 * what prints loads again to the same config. Secrets never print: a value
 * from the environment prints as env:NAME, a literal as <redacted>, and a
 * connection string with each password replaced. [hookd] prints in the key
 * table's order. */
#include <libpq-fe.h>
#include <string.h>

#include "config.h"
#include "config_internal.h"
#include "settings.h"
#include "xmalloc.h"

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
    const struct config_section *s = &config_sections[CONFIG_SEC_HOOKD];
    for (size_t i = 0; i < s->nkeys; i++) {
        const struct config_key *k = &s->keys[i];
        const void *field = (const char *)c + k->offset;
        switch (k->type) {
        case CONFIG_STRING:
            if (*(char *const *)field)
                fprintf(out, "%s = %s\n", k->name, *(char *const *)field);
            break;
        case CONFIG_SECRET:
            if (strcmp(k->name, "database") == 0 || strcmp(k->name, "redis") == 0)
                print_url(out, k->name, field);
            else
                print_secret(out, k->name, field);
            break;
        case CONFIG_DURATION:
            backoff_format_duration(*(const int64_t *)field, buf, sizeof buf);
            fprintf(out, "%s = %s\n", k->name, buf);
            break;
        case CONFIG_INT:
        case CONFIG_SIZE: fprintf(out, "%s = %lld\n", k->name, (long long)*(const int64_t *)field); break;
        case CONFIG_BOOL: fprintf(out, "%s = %s\n", k->name, *(const bool *)field ? "true" : "false"); break;
        case CONFIG_ROLES: {
            unsigned r = *(const unsigned *)field;
            fprintf(out, "%s = %s%s%s%s%s\n", k->name, r & ROLE_INGEST ? "ingest" : "",
                    (r & ROLE_INGEST) && (r & (ROLE_INBOX | ROLE_RELAY)) ? ", " : "", r & ROLE_INBOX ? "inbox" : "",
                    (r & ROLE_INBOX) && (r & ROLE_RELAY) ? ", " : "", r & ROLE_RELAY ? "relay" : "");
            break;
        }
        case CONFIG_ENUM: /* the delivery settings' last layer (settings.h) */
            HOOKD_ASSERT(settings_find(k->name) >= 0);
            fprintf(out, "%s = %s\n", k->name, settings_word(settings_find(k->name), *(const int *)field));
            break;
        default: HOOKD_ASSERT(!"a [hookd] key of a type print_hookd does not know");
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
    for (size_t i = 0; i < c->nroutes; i++) {
        const struct route_config *r = &c->routes[i];
        fprintf(out, "\n[route %s]\npartner = %s\n", r->name, r->partner);
        if (r->events_text)
            fprintf(out, "events = %s\n", r->events_text);
        if (r->filter_text)
            fprintf(out, "filter = %s\n", r->filter_text);
        if (r->tenant)
            fprintf(out, "tenant = %s\n", r->tenant);
        if (r->emit_type)
            fprintf(out, "emit_type = %s\n", r->emit_type);
    }
}
