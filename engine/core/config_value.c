/* The typed values of the config (config_internal.h): how each type's text
 * is read into its field, and how a key's bounds are checked and said. The
 * parser applies every key through config_apply(); the loader checks the
 * bounds that depend on the whole file through config_within_bounds(); the
 * reference states them with config_bounds_text(). A bound is written as a
 * value of the key's own type ("10ms", "1KiB", "100"), so the message, the
 * reference and the check read the same text. */
#include <ctype.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_internal.h"
#include "errbuf.h"
#include "jsonpath.h"
#include "xmalloc.h"

char *config_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

int config_parse_size(const char *text, int64_t *out, char *err, size_t errlen)
{
    static const struct {
        const char *unit;
        int64_t mult;
    } units[] = {{"", 1},      {"B", 1},           {"KiB", 1024}, {"MiB", 1024 * 1024}, {"GiB", 1024LL * 1024 * 1024},
                 {"KB", 1000}, {"MB", 1000 * 1000}};
    while (isspace((unsigned char)*text))
        text++;
    if (!isdigit((unsigned char)*text))
        return err_set(err, errlen, "bad size '%s': expected a whole number with an optional unit (B, KiB, MiB, GiB)",
                       text);
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
            if (errno || v > INT64_MAX / units[i].mult)
                return err_set(err, errlen, "bad size '%s': too large", text);
            *out = v * units[i].mult;
            return 0;
        }
    }
    return err_set(err, errlen, "bad size '%s': unknown unit '%s' (use B, KiB, MiB, GiB)", text, u);
}

int config_read_bool(const char *v, bool *out)
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

/* A whole number >= 0. */
int config_read_int(const char *v, int64_t *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *config_trim(end) || x < 0)
        return -1;
    *out = x;
    return 0;
}

static int read_roles(const char *v, unsigned *out, char *err, size_t errlen)
{
    char *copy = xstrdup(v), *save = NULL;
    unsigned roles = 0;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        char *t = config_trim(tok);
        if (strcmp(t, "ingest") == 0)
            roles |= ROLE_INGEST;
        else if (strcmp(t, "inbox") == 0)
            roles |= ROLE_INBOX;
        else if (strcmp(t, "relay") == 0)
            roles |= ROLE_RELAY;
        else
            rc = err_set(err, errlen, "unknown role '%s' (use ingest, inbox, relay)", t);
    }
    free(copy);
    if (rc == 0 && roles == 0)
        rc = err_set(err, errlen, "roles is empty (use ingest, inbox, relay)");
    if (rc == 0)
        *out = roles;
    return rc;
}

/* `env:NAME` takes the value from the environment; anything else is literal. */
int config_read_secret(const char *v, struct config_secret *out, char *err, size_t errlen)
{
    if (strncmp(v, "env:", 4) == 0) {
        const char *name = v + 4;
        const char *val = getenv(name);
        if (!*name)
            return err_set(err, errlen, "'env:' needs a variable name");
        if (!val || !*val)
            return err_set(err, errlen, "environment variable %s is not set or empty", name);
        out->text = xstrdup(val);
        out->env = xstrdup(name);
        return 0;
    }
    out->text = xstrdup(v);
    out->env = NULL;
    return 0;
}

void config_secret_free(struct config_secret *s)
{
    if (s->text) {
        OPENSSL_cleanse(s->text, strlen(s->text));
        free(s->text);
    }
    free(s->env);
    s->text = s->env = NULL;
}

int config_read_source(const char *v, struct field_source *out, char *err, size_t errlen)
{
    if (strncmp(v, "json:", 5) == 0) {
        if (!jsonpath_valid(v + 5))
            return err_set(err, errlen, "bad JSON path '%s' (use dotted names, e.g. json:data.object.id)", v + 5);
        out->kind = FIELD_JSON;
    } else if (strncmp(v, "header:", 7) == 0 && v[7]) {
        out->kind = FIELD_HEADER;
    } else if (strcmp(v, "digest") == 0) {
        free(out->path);
        out->path = NULL;
        out->kind = FIELD_DIGEST;
        return 0;
    } else {
        return err_set(err, errlen, "bad source '%s': use json:PATH, header:NAME or digest", v);
    }
    free(out->path);
    out->path = xstrdup(strchr(v, ':') + 1);
    return 0;
}

void config_set_string(char **dst, const char *v)
{
    free(*dst);
    *dst = xstrdup(v);
}

/* Table and column names, quoted by libpq later but held to a plain shape. */
static bool valid_identifier(const char *s)
{
    if (!*s || strlen(s) > 63)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.')
            return false;
    return true;
}

/* ---- bounds ------------------------------------------------------------- */

/* A bound's text as a number of the key's type; the table's bounds always read. */
static int64_t bound_value(const struct config_key *k, const char *text)
{
    char err[128];
    int64_t v = 0;
    int rc = -1;
    switch (k->type) {
    case CONFIG_DURATION: rc = backoff_parse_duration(text, &v, err, sizeof err); break;
    case CONFIG_SIZE: rc = config_parse_size(text, &v, err, sizeof err); break;
    case CONFIG_INT:
    case CONFIG_COUNT: rc = config_read_int(text, &v); break;
    default: break;
    }
    HOOKD_ASSERT(rc == 0);
    return v;
}

/* How a bound reads in a message: a size without a unit counts bytes. */
static const char *bound_shown(const struct config_key *k, const char *text, char *buf, size_t len)
{
    if (k->type != CONFIG_SIZE || text[strspn(text, "0123456789")] != '\0')
        return text;
    snprintf(buf, len, "%s byte%s", text, strcmp(text, "1") == 0 ? "" : "s");
    return buf;
}

static bool out_of_bounds(const struct config_key *k, int64_t x)
{
    return (k->min && x < bound_value(k, k->min)) || (k->max && x > bound_value(k, k->max));
}

static int64_t field_number(const struct config_key *k, const void *obj)
{
    const void *field = (const char *)obj + k->offset;
    if (k->type == CONFIG_COUNT || k->type == CONFIG_PERCENT)
        return *(const int *)field;
    return *(const int64_t *)field;
}

/* "at least 1s", "at most 10000", "between 1KiB and 1MiB" (or with style
 * `to`: "2 to 100"). */
static void range_text(const struct config_key *k, bool to, char *buf, size_t len)
{
    char a[48], b[48];
    const char *lo = k->min ? bound_shown(k, k->min, a, sizeof a) : NULL;
    const char *hi = k->max ? bound_shown(k, k->max, b, sizeof b) : NULL;
    if (lo && hi)
        snprintf(buf, len, to ? "%s to %s" : "between %s and %s", lo, hi);
    else if (lo)
        snprintf(buf, len, "at least %s", lo);
    else if (hi)
        snprintf(buf, len, "at most %s", hi);
    else
        buf[0] = '\0';
}

static int bounds_error(const struct config_section *s, const struct config_key *k, const char *v, char *err,
                        size_t errlen)
{
    char range[128];
    if (s->bound_style == CONFIG_BOUND_EXPECTED) {
        range_text(k, true, range, sizeof range);
        return err_set(err, errlen, "bad %s '%s': expected %s%s%s", k->name, v,
                       k->type == CONFIG_COUNT ? "a whole number from " : "", range,
                       k->flags & CONFIG_OFF ? ", or off" : "");
    }
    range_text(k, false, range, sizeof range);
    return err_set(err, errlen, "%s %s must be %s%s%s%s", s->where, k->name, range, k->bound_note ? " (" : "",
                   k->bound_note ? k->bound_note : "", k->bound_note ? ")" : "");
}

bool config_within_bounds(const struct config_section *s, const struct config_key *k, const void *obj, char *err,
                          size_t errlen)
{
    if (!out_of_bounds(k, field_number(k, obj)))
        return true;
    bounds_error(s, k, "", err, errlen);
    return false;
}

/* "sha1, sha256, sha512": the words of an enum key. */
static void words_text(const struct config_key *k, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const struct config_word *w = k->words; w && w->word && used < len; w++) {
        int n = snprintf(buf + used, len - used, "%s%s", w == k->words ? "" : ", ", w->word);
        used += n > 0 ? (size_t)n : 0;
    }
}

static int read_word(const struct config_key *k, int *field, const char *v, char *err, size_t errlen)
{
    char list[128];
    for (const struct config_word *w = k->words; w->word; w++)
        if (strcasecmp(v, w->word) == 0)
            return *field = w->value, 0;
    words_text(k, list, sizeof list);
    return err_set(err, errlen, "bad %s '%s' (use %s)", k->name, v, list);
}

void config_bounds_text(const struct config_key *k, char *buf, size_t buflen)
{
    if (k->words)
        return words_text(k, buf, buflen);
    range_text(k, true, buf, buflen);
    if (k->flags & CONFIG_OFF) {
        size_t n = strlen(buf);
        snprintf(buf + n, buflen - n, "%s", n ? ", or off" : "or off");
    }
}

/* ---- reading a value into its field ------------------------------------- */

static int read_typed(const struct config_section *s, const struct config_key *k, void *field, const char *v,
                      char *err, size_t errlen)
{
    int64_t n;
    switch (k->type) {
    case CONFIG_STRING: config_set_string(field, v); return 0;
    case CONFIG_SECRET: config_secret_free(field); return config_read_secret(v, field, err, errlen);
    case CONFIG_DURATION: return backoff_parse_duration(v, field, err, errlen);
    case CONFIG_INT:
        if (config_read_int(v, field) == 0 && *(int64_t *)field > 0)
            return 0;
        return err_set(err, errlen, "bad number '%s': expected a positive whole number", v);
    case CONFIG_COUNT: /* out of range or not a number: the same message */
        if (config_read_int(v, &n) != 0 || out_of_bounds(k, n))
            return bounds_error(s, k, v, err, errlen);
        *(int *)field = (int)n;
        return 0;
    case CONFIG_BOOL:
        if (config_read_bool(v, field) == 0)
            return 0;
        return err_set(err, errlen, "bad boolean '%s': use true or false", v);
    case CONFIG_ONOFF:
        if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
            return err_set(err, errlen, "bad %s '%s': expected on or off", k->name, v);
        *(bool *)field = strcmp(v, "on") == 0;
        return 0;
    case CONFIG_SIZE: return config_parse_size(v, field, err, errlen);
    case CONFIG_PERCENT: return backoff_parse_percent(v, field, err, errlen);
    case CONFIG_ROLES: return read_roles(v, field, err, errlen);
    case CONFIG_SOURCE: return config_read_source(v, field, err, errlen);
    case CONFIG_ENUM:
        if (k->words)
            return read_word(k, field, v, err, errlen);
        break;
    case CONFIG_IDENTIFIER:
        if (!valid_identifier(v))
            return err_set(err, errlen, "bad %s '%s': use letters, digits, '_' (and '.' for schema.table)", k->name,
                           v);
        config_set_string(field, v);
        return 0;
    default: break;
    }
    HOOKD_ASSERT(!"a key of this type needs a setter");
    return -1;
}

int config_apply(const struct config_section *s, const struct config_key *k, void *obj, const char *arg, const char *v,
                 char *err, size_t errlen)
{
    void *field = (char *)obj + k->offset;
    if ((k->flags & CONFIG_OFF) && strcmp(v, "off") == 0) {
        *(int64_t *)field = 0;
        return 0;
    }
    int rc = k->set ? k->set(obj, k, arg, v, err, errlen) : read_typed(s, k, field, v, err, errlen);
    if (rc != 0 || (k->flags & CONFIG_LATE) || k->type == CONFIG_COUNT || (!k->min && !k->max))
        return rc;
    return out_of_bounds(k, field_number(k, obj)) ? bounds_error(s, k, v, err, errlen) : 0;
}
