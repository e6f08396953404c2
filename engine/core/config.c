/* The config snapshot (config.h) once loaded: reference counting and
 * freeing, the lookups the roles make (a partner, the machine for an event,
 * the retry policy for an event or an endpoint), and the comparison a
 * reload makes against the snapshot it replaces. Loading is config_load.c,
 * printing config_print.c; the table they share is config_keys.c. */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

/* The strings and secrets of the single sections ([hookd], [portal]), as
 * their keys' types say; named sections free their own fields below. */
static void free_single_sections(struct hookd_config *c)
{
    for (size_t i = 0; i < CONFIG_NSECTIONS; i++) {
        const struct config_section *s = &config_sections[i];
        for (size_t j = 0; !s->arg && j < s->nkeys; j++) {
            void *field = (char *)c + s->offset + s->keys[j].offset;
            if (s->keys[j].type == CONFIG_STRING)
                free(*(char **)field);
            else if (s->keys[j].type == CONFIG_SECRET)
                config_secret_free(field);
        }
    }
}

struct hookd_config *config_ref(struct hookd_config *c)
{
    __atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
    return c;
}

void config_unref(struct hookd_config *c)
{
    if (!c || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    free_single_sections(c);
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
            config_secret_free(&p->secrets[k]);
        for (size_t k = 0; k < p->npublic_keys; k++)
            config_secret_free(&p->public_keys[k]);
        for (size_t k = 0; k < CONFIG_PARTNER_KEYS_MAX; k++)
            sig_key_clear(&p->keys[k]);
        config_secret_free(&p->verify_token);
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
        free(p->event_id.path);
        free(p->event_type.path);
        free(p->entity_id.path);
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
    for (size_t i = 0; i < c->nroutes; i++) {
        struct route_config *r = &c->routes[i];
        free(r->name);
        free(r->partner);
        free(r->events_text);
        for (size_t k = 0; k < r->nevents; k++)
            free(r->events[k]);
        free(r->events);
        free(r->filter_text);
        json_decref(r->filter);
        free(r->tenant);
        free(r->emit_type);
    }
    free(c->routes);
    free(c->path);
    free(c);
}

/* ---- reload ----------------------------------------------------------------- */

static bool key_changed(const struct config_key *k, const struct hookd_config *a, const struct hookd_config *b)
{
    const void *x = (const char *)a + k->offset, *y = (const char *)b + k->offset;
    switch (k->type) {
    case CONFIG_STRING: {
        const char *s = *(char *const *)x, *t = *(char *const *)y;
        return (s == NULL) != (t == NULL) || (s && strcmp(s, t) != 0);
    }
    case CONFIG_SECRET: {
        const char *s = ((const struct config_secret *)x)->text, *t = ((const struct config_secret *)y)->text;
        return (s == NULL) != (t == NULL) || (s && strcmp(s, t) != 0);
    }
    case CONFIG_DURATION:
    case CONFIG_INT:
    case CONFIG_SIZE: return *(const int64_t *)x != *(const int64_t *)y;
    case CONFIG_BOOL: return *(const bool *)x != *(const bool *)y;
    case CONFIG_ROLES: return *(const unsigned *)x != *(const unsigned *)y;
    default: break;
    }
    return false;
}

size_t config_restart_keys(const struct hookd_config *old, const struct hookd_config *new_cfg, char *buf,
                           size_t buflen)
{
    size_t n = 0, used = 0;
    if (buflen > 0)
        buf[0] = '\0';
    const struct config_section *s = &config_sections[CONFIG_SEC_HOOKD];
    for (size_t i = 0; i < s->nkeys; i++) {
        const struct config_key *k = &s->keys[i];
        if (!(k->flags & CONFIG_RESTART) || !key_changed(k, old, new_cfg))
            continue;
        if (used < buflen) {
            int w = snprintf(buf + used, buflen - used, "%s%s", n ? ", " : "", k->name);
            used += w > 0 ? (size_t)w : 0;
        }
        n++;
    }
    return n;
}

/* ---- lookups ---------------------------------------------------------------- */

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

const char *config_admin_listen(const struct hookd_config *c)
{
    const char *al = c->admin_listen;
    if (!al || !al[0] || strcmp(al, "off") == 0)
        return NULL;
    return al;
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

bool config_partner_takes_event(const struct partner_config *p, const char *event_type)
{
    if (p->nevent_types == 0)
        return true;
    for (size_t i = 0; i < p->nevent_types; i++)
        if (config_glob_match(p->event_types[i], event_type))
            return true;
    return false;
}

bool config_route_takes(const struct route_config *r, const char *partner, const char *event_type)
{
    if (strcmp(r->partner, partner) != 0)
        return false;
    if (r->nevents == 0)
        return true;
    for (size_t i = 0; i < r->nevents; i++)
        if (config_glob_match(r->events[i], event_type))
            return true;
    return false;
}

bool config_routes_take(const struct hookd_config *c, const char *partner, const char *event_type)
{
    for (size_t i = 0; i < c->nroutes; i++)
        if (config_route_takes(&c->routes[i], partner, event_type))
            return true;
    return false;
}
