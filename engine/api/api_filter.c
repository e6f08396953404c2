/* The query parameters that filter Svix's lists, read and checked as
 * Svix's server reads them: `event_types` (repeated, `event_types[]`,
 * `event_types[N]`, each comma-separated), `channel` and `tag` (names of
 * Svix's character sets), `before` and `after` (RFC 3339), and booleans
 * (`with_content`, `with_msg`, `include_archived`). A bad value is answered
 * through api_invalid with the parameter named. See api_internal.h. */
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "xmalloc.h"

/* Whether key (as sent: libevent decodes values, not keys) names the
 * event-type list: `event_types`, `event_types[]` or `event_types[N]` (what
 * the SDKs and form encoders send). */
static bool event_types_key(const char *raw_key)
{
    static const char name[] = "event_types";
    size_t n = sizeof name - 1;
    if (strncmp(raw_key, name, n) != 0)
        return false;
    char *key = evhttp_uridecode(raw_key, 0, NULL);
    size_t len = key ? strlen(key) : 0;
    bool ok = key && (key[n] == '\0' || (key[n] == '[' && key[len - 1] == ']'));
    free(key);
    return ok;
}

/* Appends each comma-separated name of value to set (text "a,b,…", each
 * once); false when one is not an event type's name. */
static bool add_names(char **set, size_t *len, const char *value)
{
    const char *s = value;
    for (;;) {
        size_t n = strcspn(s, ",");
        if (n == 0 || n > API_NAME_LONG_MAX || strspn(s, API_NAME_CHARS "-_.") < n)
            return false;
        bool seen = false;
        for (const char *x = *set; x && *x && !seen; x += strcspn(x, ","), x += *x == ',')
            seen = strcspn(x, ",") == n && strncmp(x, s, n) == 0;
        if (!seen) {
            *set = xrealloc(*set, *len + n + 2);
            if (*len)
                (*set)[(*len)++] = ',';
            memcpy(*set + *len, s, n);
            *len += n;
            (*set)[*len] = '\0';
        }
        if (s[n] != ',')
            return true;
        s += n + 1;
    }
}

bool api_event_types_query(struct api_req *r, char **out)
{
    struct evkeyval *kv;
    size_t len = 0;
    *out = NULL;
    for (kv = r->query.tqh_first; kv; kv = kv->next.tqe_next) {
        if (!event_types_key(kv->key))
            continue;
        if (!add_names(out, &len, kv->value)) {
            api_invalid(r, "query", "event_types",
                        "every event type must be 1 to " API_STR(
                            API_NAME_LONG_MAX) " characters of a-z, A-Z, 0-9, '-', '_' and '.'",
                        "value_error.str.regex");
            free(*out);
            *out = NULL;
            return false;
        }
    }
    return true;
}

bool api_name_query(struct api_req *r, const char *field, const char *extra, const char **out)
{
    *out = api_query(r, field);
    if (!*out)
        return true;
    size_t n = strlen(*out), ok = strspn(*out, API_NAME_CHARS);
    while (ok < n && strchr(extra, (*out)[ok]))
        ok += 1 + strspn(*out + ok + 1, API_NAME_CHARS);
    if (n >= 1 && n <= API_NAME_MAX && ok == n)
        return true;
    char msg[160];
    snprintf(msg, sizeof msg, "must be 1 to %d characters of a-z, A-Z, 0-9 and '%s'", API_NAME_MAX, extra);
    api_invalid(r, "query", field, msg, "value_error.str.regex");
    return false;
}

bool api_bool_query(struct api_req *r, const char *field, bool dflt, bool *out)
{
    const char *v = api_query(r, field);
    *out = dflt;
    if (!v)
        return true;
    if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0) {
        *out = v[0] == 't';
        return true;
    }
    api_invalid(r, "query", field, "value could not be parsed to a boolean", "type_error.bool");
    return false;
}

bool api_time_query(struct api_req *r, const char **before, const char **after)
{
    *before = api_query(r, "before");
    *after = api_query(r, "after");
    return (!*before || api_check_time(r, "query", "before", *before)) &&
           (!*after || api_check_time(r, "query", "after", *after));
}

bool api_message_filters(struct api_req *r, struct api_msg_filter *f)
{
    memset(f, 0, sizeof *f);
    return api_name_query(r, "channel", API_CHANNEL_EXTRA, &f->channel) &&
           api_name_query(r, "tag", API_TAG_EXTRA, &f->tag) && api_time_query(r, &f->before, &f->after) &&
           api_event_types_query(r, &f->event_types);
}
