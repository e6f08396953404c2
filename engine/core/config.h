/* The hookd configuration: one INI file (DESIGN.md §6) parsed with libinih
 * into a declarative table of typed keys, validated whole, and handed out as
 * an immutable, reference-counted snapshot. A reload parses a new snapshot;
 * work that started under the old one keeps its reference until it is done,
 * so a SIGHUP never pulls a partner or machine out from under a request. */
#ifndef HOOKD_CONFIG_H
#define HOOKD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "backoff.h"
#include "cidr.h"
#include "machine.h"
#include "signature.h"

enum config_role { ROLE_INGEST = 1, ROLE_INBOX = 2, ROLE_RELAY = 4 };
#define ROLE_ALL (ROLE_INGEST | ROLE_INBOX | ROLE_RELAY)

/* Shortest [hookd] admin_token accepted. */
#define HOOKD_ADMIN_TOKEN_MIN 24

/* A config value that may be a secret: `text` is the resolved value, `env`
 * the variable it came from (NULL for a literal). Never logged or printed. */
struct config_secret {
    char *text;
    char *env;
};

/* Where an inbound event's id, type or entity id is found: a JSON path,
 * a header, or (`digest`) the hex SHA-256 of the signed content, for
 * providers that send no id (sig_verify_digest()). */
enum field_kind { FIELD_NONE = 0, FIELD_JSON, FIELD_HEADER, FIELD_DIGEST };
struct field_source {
    enum field_kind kind;
    char *path; /* dotted JSON path or header name; NULL for FIELD_DIGEST */
};

/* The shortest partner secret accepted, in bytes of the HMAC key (after
 * decoding, for standard-webhooks' base64). */
#define CONFIG_PARTNER_SECRET_MIN 16

/* Keys of a partner: secrets, or public keys (rotation: any may match). */
#define CONFIG_PARTNER_KEYS_MAX 8

struct partner_config {
    char *name;
    enum sig_scheme scheme;
    const struct sig_preset *preset; /* sig_preset_get(scheme) */
    /* What sig_verify() checks: the preset's spec, or for `scheme = hmac`
     * (and hmac-sha256's header) one built from the keys below; its strings
     * point into this partner_config. Pass &spec as sig_params.spec. */
    struct sig_spec spec;
    struct config_secret secrets[CONFIG_PARTNER_KEYS_MAX]; /* `secret =` */
    size_t nsecrets;
    struct config_secret public_keys[CONFIG_PARTNER_KEYS_MAX]; /* `public_key =` (sendgrid, discord) */
    size_t npublic_keys;
    struct sig_key keys[CONFIG_PARTNER_KEYS_MAX]; /* decoded secrets[] or public_keys[] */
    size_t nkeys;                                 /* pass as sig_params.nkeys */
    struct config_secret verify_token;            /* meta: hub.verify_token; text NULL when unset */
    char *public_url;  /* the URL the provider calls (Twilio, Square, HubSpot sign it); NULL = from Host */
    int64_t tolerance; /* ms; the preset's default unless set */
    bool tolerance_set;
    char *header; /* hmac-sha256: the header holding the MAC */
    /* scheme = hmac: the spec's strings (owned) */
    char *hmac_signed, *hmac_signature_header, *hmac_signature_prefix, *hmac_timestamp_header, *hmac_timestamp_prefix,
        *hmac_separators;
    unsigned hmac_keys; /* which scheme = hmac keys were given (CONFIG_HMAC_* bits, config_internal.h) */
    struct field_source event_id, event_type, entity_id;
    char *entity_type; /* machine name; NULL = the machine naming the event type */
    int64_t max_body;  /* bytes; 0 = [hookd] max_body */
    /* allow_ips: the CIDR ranges a request may come from (NULL text = any);
     * the client address is the peer, or behind [hookd] trusted_proxies the
     * right-most untrusted X-Forwarded-For entry (cidr.h). */
    char *allow_ips_text;
    struct cidr_list allow_ips;
    /* event_types: globs the event type must match (none = any); other
     * types are refused (422 event_type_not_allowed) and not stored. */
    char *event_types_text;
    char **event_types;
    size_t nevent_types;
    /* Derived, not a key: the signature covers neither a timestamp nor every
     * field the event is read from (id, type, entity id), so a captured body
     * could be sent again under a new id or type. Ingest then also
     * deduplicates on a digest of the body (webhook_inbox.content_digest). */
    bool content_dedup;
    int line;
};

enum retry_scope { RETRY_PARTNER, RETRY_EVENT, RETRY_ENDPOINT };
struct retry_override {
    enum retry_scope scope;
    char *pattern; /* partner name, event type glob (`order.*`), endpoint name */
    struct backoff_policy policy;
    unsigned set; /* which keys the section gave; the rest come from [retry] */
    int line;
};

enum conflict_policy { CONFLICT_DLQ, CONFLICT_IGNORE };

/* Follow-up outbox event written in the transaction that applies `event`. */
struct machine_emit {
    char *event;     /* the inbound event type (a transition of the machine) */
    char *emit_type; /* the outbox event type */
};

struct machine_config {
    char *name;
    struct machine *machine;
    char *table; /* "hookd_entities" when not given */
    char *id_column;
    char *state_column;
    char *version_column; /* optional; incremented per applied transition */
    bool builtin;         /* entities live in hookd_entities */
    int create;           /* 1: a missing entity is created in the initial state; 0: events for it defer */
    enum conflict_policy on_conflict;
    struct machine_emit *emits;
    size_t nemits;
    int line;
};

/* [route NAME]: a partner's verified events handed to the outbox in the
 * inbox's evaluation transaction, so that they reach endpoints like any
 * emitted event. */
struct route_config {
    char *name;
    char *partner; /* a [partner] name */
    /* events: globs the event type must match (none given = any) */
    char *events_text;
    char **events;
    size_t nevents;
    char *filter_text; /* the payload filter as written; NULL = none */
    json_t *filter;    /* parsed (payload_filter.h); NULL = every payload */
    char *tenant;      /* the emitted event's tenant; NULL = none */
    char *emit_type;   /* the emitted event type; NULL = the partner's event type */
    int line;
};

/* [portal]: the tenants' portal (engine/portal/). Every key may
 * change on reload (the portal reads the config per request). */
struct portal_config {
    char *base_url;      /* links' base (NULL: http:// + [hookd] listen) */
    int64_t link_ttl;    /* ms a login link may be opened in (once) */
    int64_t session_ttl; /* ms a portal session lives */
    char *title;
    char *logo_url;     /* NULL: none */
    char *accent_color; /* #rgb or #rrggbb */
};

/* [retention]: how long terminal data is kept, in ms
 * (docs/guides/retention.md). Reloadable: every pass reads the current snapshot. */
struct retention_config {
    int64_t inbox;        /* PROCESSED inbox rows, and quarantined ones without an open dead letter */
    int64_t outbox;       /* events whose deliveries are all terminal, and those deliveries */
    int64_t attempts;     /* the attempt history */
    int64_t dead_letters; /* replayed dead letters (open ones are never removed) */
    int64_t dedup;        /* how long a partner's event id is remembered */
    int64_t interval;     /* between a worker's retention passes; 0 = off (none) */
};

struct hookd_config {
    int refs;
    char *path;
    uint64_t generation; /* 1 for the first load, +1 per successful reload */

    struct portal_config portal;

    /* [hookd] */
    struct config_secret database;
    struct config_secret redis;
    unsigned roles;
    char *listen;
    char *key_prefix;
    char *log_level;
    int64_t reconcile_interval;
    int64_t reconcile_horizon;
    bool allow_private_networks;
    int signature_headers;            /* enum settings_signature_headers: the last layer of settings.h */
    struct config_secret admin_token; /* at least HOOKD_ADMIN_TOKEN_MIN characters */
    char *admin_listen;               /* see config_admin_listen() */
    int64_t admin_session_timeout;    /* ms a signed-in admin session lives */
    struct config_secret alert_webhook;
    int64_t alert_interval;
    int64_t heartbeat_interval;
    int64_t lease;
    int64_t max_sleep;
    int64_t shutdown_timeout;
    int64_t db_pool_size;
    int64_t batch_size;
    int64_t max_inflight;
    int64_t max_inflight_per_origin; /* outbound requests on the wire to one scheme://host:port */
    int64_t max_idle_connections;    /* idle outbound keep-alive connections kept, all receivers */
    int64_t max_idle_per_origin;     /* of them, to one scheme://host:port */
    int64_t first_attempt_window;    /* relay: wait for first attempts this long; 0 = none inline */
    int64_t ingest_batch_max;        /* rows per insert transaction */
    int64_t ingest_concurrency;      /* insert transactions in flight at once */
    int64_t max_body;                /* bytes */
    char *ca_file;
    /* Inbound headers stored as "<redacted>" (config_header_redacted()):
     * the key's text, and the globs it lists, lower-cased. */
    char *redact_headers;
    char **redact_patterns;
    size_t nredact;
    /* Proxies whose X-Forwarded-For is believed for partners' allow_ips:
     * the key's text and its ranges (empty: X-Forwarded-For is ignored). */
    char *trusted_proxies;
    struct cidr_list trusted;
    char *redis_ca_file;   /* rediss: the server's CA; NULL = the system store */
    char *redis_cert_file; /* rediss: a client certificate (with redis_key_file) */
    char *redis_key_file;
    struct config_secret redis_sentinel_password;
    /* the public listener's limits (http_server.h, struct http_limits) */
    int64_t max_header_size;   /* bytes of request line + headers */
    int64_t max_headers;       /* header lines per request */
    int64_t request_timeout;   /* ms, absolute, per request */
    int64_t max_connections;   /* open connections */
    int64_t max_buffered_body; /* bytes of requests being received, all connections */
    /* A tenant's budget (the API refuses what would pass it): its endpoints,
     * and the bytes of their filters as the relay reads them on every pass
     * (event types as a JSON array, payload filter as text). */
    int64_t tenant_max_endpoints;
    int64_t tenant_max_filter_bytes;

    struct backoff_policy retry; /* [retry] */
    struct defer_policy defer;   /* [defer] */
    struct retention_config retention;
    struct retry_override *overrides;
    size_t noverrides;
    struct partner_config *partners;
    size_t npartners;
    struct machine_config *machines;
    size_t nmachines;
    struct route_config *routes;
    size_t nroutes;
};

/* [hookd] admin_listen, or NULL when it is "off" (no /admin and no
 * /metrics on any listener). Borrowed from c. */
const char *config_admin_listen(const struct hookd_config *c);

/* Loads and validates path. On failure returns NULL and writes
 * "file:line: message" into err. Caller releases with config_unref(). */
__attribute__((warn_unused_result)) struct hookd_config *config_load(const char *path, char *err, size_t errlen);
struct hookd_config *config_ref(struct hookd_config *);
void config_unref(struct hookd_config *);

/* Writes the effective config (defaults filled in) in INI form, with every
 * secret redacted, to out. */
void config_print(const struct hookd_config *, FILE *out);

/* The [hookd] keys whose value differs between old and new although the
 * key table marks them as taking effect only on restart: their names,
 * comma-separated, into buf (truncated to buflen); returns how many. */
size_t config_restart_keys(const struct hookd_config *old, const struct hookd_config *new_cfg, char *buf,
                           size_t buflen);

const struct partner_config *config_partner(const struct hookd_config *, const char *name);
/* The machine for an event: the partner's entity_type if given, otherwise
 * the one machine whose transitions name the event type. NULL if none. */
const struct machine_config *config_machine_for(const struct hookd_config *, const char *entity_type,
                                                const char *event_type);
const struct machine_config *config_machine(const struct hookd_config *, const char *name);
/* The retry policy for an inbox event (partner, event type) or a delivery
 * (endpoint name): the most specific override, else [retry]. */
const struct backoff_policy *config_retry_for_inbox(const struct hookd_config *, const char *partner,
                                                    const char *event_type);
const struct backoff_policy *config_retry_for_endpoint(const struct hookd_config *, const char *endpoint);

/* The default of [hookd] redact_headers: credentials, tokens and any
 * provider's signature header. */
#define CONFIG_REDACT_HEADERS_DEFAULT                                                                                 \
    "authorization, proxy-authorization, cookie, set-cookie, *api-key*, *apikey*, *token*, *signature*, "             \
    "x-hub-signature*, *hmac*, *secret*, *password*, *session*"

/* True if an inbound header of this name (any case) is stored as
 * "<redacted>": it matches a glob of [hookd] redact_headers. */
bool config_header_redacted(const struct hookd_config *, const char *name);

/* True if the partner takes this event type: it has no event_types, or
 * the type matches one of its globs. */
bool config_partner_takes_event(const struct partner_config *p, const char *event_type);

/* True if route r selects an event of this partner and type (its partner,
 * its events globs; the payload filter is the caller's to apply). */
bool config_route_takes(const struct route_config *r, const char *partner, const char *event_type);
/* True if any route selects an event of this partner and type. */
bool config_routes_take(const struct hookd_config *, const char *partner, const char *event_type);

/* Glob with `*` (any run of characters) — event-type filters and overrides. */
bool config_glob_match(const char *pattern, const char *text);

/* The reference of every section and key, read from the table the loader
 * uses (`hookd config keys`, docs/reference/configuration.md). Sections
 * come in the reference's order, keys in their section's. */
struct config_doc_section {
    char title[48];      /* "hookd", "retry SCOPE:NAME", "partner NAME" */
    const char *keys_of; /* NULL, or the section whose keys this one takes ("retry") */
    const char *meaning;
    size_t nkeys;
};
struct config_doc_key {
    char name[48];       /* "lease", "transition EVENT" */
    const char *type;    /* a name of config_doc_type() */
    const char *def;     /* the default as the reference says it; NULL: unset */
    bool def_is_value;   /* def is a value as written in a file, not a description */
    bool required;       /* the file must give it */
    bool restart;        /* a reload keeps the old value; else the reload applies it */
    bool repeat;         /* may be given several times */
    bool hmac_only;      /* [partner] with scheme = hmac only */
    char bounds[64];     /* "2 to 100", "at least 1s, or off"; "" when none */
    const char *meaning; /* one line */
};
size_t config_doc_nsections(void);
void config_doc_section(size_t i, struct config_doc_section *out);
void config_doc_key(size_t section, size_t key, struct config_doc_key *out);
/* The value types: name ("duration") and how a value is written. */
size_t config_doc_ntypes(void);
void config_doc_type(size_t i, const char **name, const char **meaning);

/* "1MiB", "512KiB", "4096" -> bytes. */
__attribute__((warn_unused_result)) int config_parse_size(const char *text, int64_t *out, char *err, size_t errlen);

#endif
