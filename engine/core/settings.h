/* Delivery settings and how a delivery resolves them. A setting is a named
 * word (signature_headers = both | svix | webhook) that an endpoint, its
 * tenant and the [hookd] config section may each give: a delivery takes
 * the endpoint's, else its tenant's, else the config's, which always has
 * one (its default). Endpoints and tenants keep theirs as a JSON object of
 * name -> word (the `settings` columns, sql/0029); the API, the CLI and the
 * portal refuse an unknown name or word with settings_check(), and a word
 * stored otherwise (by hand, or by a later hookd) is passed over when
 * resolving, with a warning. The table of settings is settings.c's:
 * adding a setting is a value of enum settings_id, its row there, and its
 * [hookd] key in config_keys.c. Pure functions, thread-safe. */
#ifndef HOOKD_SETTINGS_H
#define HOOKD_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

struct hookd_config;

enum settings_id {
    SETTINGS_SIGNATURE_HEADERS, /* which signature headers a delivery carries */
    SETTINGS_COUNT
};

/* signature_headers: svix-id/-timestamp/-signature (Svix's names), the
 * Standard Webhooks names webhook-id/-timestamp/-signature, or both sets
 * with the same values. */
enum settings_signature_headers {
    SETTINGS_SIG_BOTH,
    SETTINGS_SIG_SVIX,
    SETTINGS_SIG_WEBHOOK,
};

/* Where a resolved value came from. */
enum settings_layer { SETTINGS_FROM_ENDPOINT, SETTINGS_FROM_TENANT, SETTINGS_FROM_CONFIG };

/* The setting's name as the API, the CLI and the config spell it. */
const char *settings_name(enum settings_id id);

/* The setting named name (its [hookd] key has the same name), -1 for none. */
int settings_find(const char *name);

/* "both, svix or webhook": the words the setting takes, for messages and
 * the reference (static storage). */
const char *settings_words(enum settings_id id);

/* The word's value (any letter case), or -1 with a message in err. */
__attribute__((warn_unused_result)) int settings_parse(enum settings_id id, const char *word, char *err,
                                                       size_t errlen);

/* The word of a value (static storage), NULL for none. */
const char *settings_word(enum settings_id id, int value);

/* 0 when obj is an object of known settings names, each with one of its
 * words (nulls_ok: a null too, a removal in a patch); -1 with a message
 * naming the setting in err. */
__attribute__((warn_unused_result)) int settings_check(const json_t *obj, bool nulls_ok, char *err, size_t errlen);

/* The value of setting id for a delivery: endpoint's, else tenant's, else
 * the config's. endpoint and tenant are the stored JSON objects as text
 * (NULL or "" or "{}": none given); from, when not NULL, receives the layer
 * the value came from. */
int settings_resolve(const struct hookd_config *cfg, enum settings_id id, const char *endpoint, const char *tenant,
                     enum settings_layer *from);

#endif
