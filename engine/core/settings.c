/* The table of delivery settings and their resolution; see settings.h. */
#include "settings.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "errbuf.h"
#include "log.h"

/* One setting: its name, its words (the value of a word is its index),
 * and where the [hookd] section's value is (an int field of struct
 * hookd_config, set by its key in config_keys.c). */
struct setting {
    const char *name;
    const char *const *words;
    const char *words_text;
    size_t config_offset;
};

static const char *const signature_headers_words[] =
    {[SETTINGS_SIG_BOTH] = "both", [SETTINGS_SIG_SVIX] = "svix", [SETTINGS_SIG_WEBHOOK] = "webhook", NULL};

static const struct setting settings[SETTINGS_COUNT] = {
    [SETTINGS_SIGNATURE_HEADERS] = {"signature_headers", signature_headers_words, "both, svix or webhook",
                                    offsetof(struct hookd_config, signature_headers)},
};

const char *settings_name(enum settings_id id)
{
    return (unsigned)id < SETTINGS_COUNT ? settings[id].name : NULL;
}

const char *settings_words(enum settings_id id)
{
    return (unsigned)id < SETTINGS_COUNT ? settings[id].words_text : "";
}

const char *settings_word(enum settings_id id, int value)
{
    if ((unsigned)id >= SETTINGS_COUNT || value < 0)
        return NULL;
    for (int i = 0; settings[id].words[i]; i++)
        if (i == value)
            return settings[id].words[i];
    return NULL;
}

/* The value of word, -1 if it is not one of the setting's. */
static int word_value(const struct setting *s, const char *word)
{
    for (int i = 0; word && s->words[i]; i++)
        if (strcasecmp(word, s->words[i]) == 0)
            return i;
    return -1;
}

int settings_parse(enum settings_id id, const char *word, char *err, size_t errlen)
{
    if ((unsigned)id >= SETTINGS_COUNT)
        return err_set(err, errlen, "no such setting");
    int v = word_value(&settings[id], word);
    if (v < 0)
        return err_set(err, errlen, "%s must be %s, not '%.64s'", settings[id].name, settings[id].words_text,
                       word ? word : "");
    return v;
}

int settings_find(const char *name)
{
    for (int i = 0; name && i < SETTINGS_COUNT; i++)
        if (strcmp(name, settings[i].name) == 0)
            return i;
    return -1;
}

/* The setting named name, NULL for none. */
static const struct setting *find(const char *name)
{
    int id = settings_find(name);
    return id >= 0 ? &settings[id] : NULL;
}

/* "signature_headers" (every known name), for the message about an unknown one. */
static void names_text(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < SETTINGS_COUNT && used < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", settings[i].name);
        used += n > 0 ? (size_t)n : 0;
    }
}

int settings_check(const json_t *obj, bool nulls_ok, char *err, size_t errlen)
{
    if (!json_is_object(obj))
        return err_set(err, errlen, "the settings must be an object of names and words");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        const struct setting *s = find(k);
        if (!s) {
            char names[128];
            names_text(names, sizeof names);
            return err_set(err, errlen, "no setting is named '%.64s' (the settings are: %s)", k, names);
        }
        if (json_is_null(v) && nulls_ok)
            continue;
        if (!json_is_string(v) || word_value(s, json_string_value(v)) < 0)
            return err_set(err, errlen, "%s must be %s", s->name, s->words_text);
    }
    return 0;
}

/* The layer's value of s, -1 if it gives none; a word it stores that is
 * not the setting's is passed over with a warning. */
static int layer_value(const struct setting *s, const char *text, const char *layer)
{
    if (!text || !*text || strcmp(text, "{}") == 0)
        return -1;
    json_t *obj = json_loads(text, 0, NULL);
    json_t *v = json_object_get(obj, s->name);
    int value = -1;
    if (v) {
        value = word_value(s, json_string_value(v));
        if (value < 0)
            log_warn("settings.invalid", "setting=%s layer=%s: not one of %s, passed over", s->name, layer,
                     s->words_text);
    }
    json_decref(obj);
    return value;
}

int settings_resolve(const struct hookd_config *cfg, enum settings_id id, const char *endpoint, const char *tenant,
                     enum settings_layer *from)
{
    const struct setting *s = &settings[id];
    enum settings_layer layer = SETTINGS_FROM_ENDPOINT;
    int v = layer_value(s, endpoint, "endpoint");
    if (v < 0) {
        layer = SETTINGS_FROM_TENANT;
        v = layer_value(s, tenant, "tenant");
    }
    if (v < 0) {
        layer = SETTINGS_FROM_CONFIG;
        memcpy(&v, (const char *)cfg + s->config_offset, sizeof v);
    }
    if (from)
        *from = layer;
    return v;
}
