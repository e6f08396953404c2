/* Reading the INI file through the config's table (config_internal.h).
 * libinih splits the file into key/value pairs; we feed it through our own
 * line reader, which counts lines (so every error names file:line) and sees
 * each `[section]` header (so a duplicate section or an unknown section
 * kind is caught where it stands). A header picks its row of the section
 * table: a single section's object is a part of the config, a named
 * section's object is made by the row's open function. Every key is then
 * looked up in that section's keys and applied with config_apply(); only
 * the first error is kept. */
#include <ini.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_internal.h"
#include "errbuf.h"
#include "xmalloc.h"

void config_fail(struct config_parse *st, int line, const char *fmt, ...)
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

static size_t section_index(const struct config_section *s)
{
    return (size_t)(s - config_sections);
}

/* "hookd, retry, ..., partner NAME, machine NAME": what a header may say. */
static void unknown_section(struct config_parse *st, const char *name)
{
    char kinds[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < CONFIG_NSECTIONS && used < sizeof kinds; i++) {
        const struct config_section *s = &config_sections[i];
        int n = snprintf(kinds + used, sizeof kinds - used, "%s%s%s%s", i ? ", " : "", s->name, s->arg ? " " : "",
                         s->arg ? s->arg : "");
        used += n > 0 ? (size_t)n : 0;
    }
    config_fail(st, st->line, "unknown section [%s] (expected %s)", name, kinds);
}

/* A section's defaults, into its object: the single sections' when the
 * config is created, a named section's when its header opens it. */
static void apply_defaults(const struct config_section *s, void *obj)
{
    char err[256];
    for (size_t i = 0; i < s->nkeys; i++)
        if (s->keys[i].def && config_apply(s, &s->keys[i], obj, NULL, s->keys[i].def, err, sizeof err) != 0)
            HOOKD_ASSERT(!"built-in default does not parse");
}

/* A single section: the first header of its name opens it, a second is refused. */
static int open_single(struct config_parse *st, const struct config_section *s, const char *name)
{
    int *first = &st->section_line[section_index(s)];
    if (*first)
        return config_fail(st, st->line, "duplicate section [%s] (first at line %d)", name, *first), -1;
    *first = st->line;
    st->scratch_mask = 0;
    st->target = (struct config_target){(char *)st->cfg + s->offset, &st->scratch_mask, NULL};
    st->sec = s;
    return 0;
}

static int open_section(struct config_parse *st, const char *name)
{
    for (size_t i = 0; i < st->nseen; i++)
        free(st->seen[i]);
    st->nseen = 0;
    st->sec = NULL;
    const char *sp = strchr(name, ' ');
    char kind[32] = "";
    snprintf(kind, sizeof kind, "%.*s", sp ? (int)(sp - name) : (int)strlen(name), name);
    const char *arg = sp ? sp + 1 : "";
    while (*arg == ' ')
        arg++;

    for (size_t i = 0; i < CONFIG_NSECTIONS; i++)
        if (!config_sections[i].arg && strcmp(name, config_sections[i].name) == 0)
            return open_single(st, &config_sections[i], name);
    for (size_t i = 0; *arg && i < CONFIG_NSECTIONS; i++) {
        const struct config_section *s = &config_sections[i];
        if (!s->arg || strcmp(kind, s->name) != 0)
            continue;
        char err[256];
        if (s->open(st->cfg, name, arg, st->line, &st->target, err, sizeof err) != 0)
            return config_fail(st, st->line, "%s", err), -1;
        if (!s->keys_of) /* an override's unset keys come from the section it overrides */
            apply_defaults(s, st->target.obj);
        st->sec = s;
        return 0;
    }
    unknown_section(st, name);
    return -1;
}

/* Reader for ini_parse_stream: fgets with line counting and section
 * detection. Returning NULL ends the parse (at EOF or on our error). */
static char *config_reader(char *str, int num, void *stream)
{
    struct config_parse *st = stream;
    if (st->err[0] || !fgets(str, num, st->fp))
        return NULL;
    st->line++;
    size_t len = strlen(str);
    if (len == (size_t)num - 1 && str[len - 1] != '\n' && !feof(st->fp)) {
        config_fail(st, st->line, "line is longer than %d characters", num - 2);
        return NULL;
    }
    char buf[512];
    snprintf(buf, sizeof buf, "%s", str);
    char *t = config_trim(buf);
    if (*t == '[') {
        char *end = strchr(t, ']');
        if (!end) {
            config_fail(st, st->line, "section header without ']'");
            return NULL;
        }
        *end = '\0';
        char *rest = config_trim(end + 1);
        if (*rest && *rest != ';' && *rest != '#') {
            config_fail(st, st->line, "unexpected text after section header");
            return NULL;
        }
        if (open_section(st, config_trim(t + 1)) != 0)
            return NULL;
    }
    return str;
}

static bool seen_key(struct config_parse *st, const char *name)
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

/* "unknown key 'x' in [retention] (expected inbox, outbox, ...)": a
 * section's keys, those of `scheme = hmac` after the others. */
static int unknown_key(const struct config_parse *st, const char *name, char *err, size_t errlen)
{
    const struct config_section *s = st->sec;
    char where[96], list[1024] = "";
    size_t used = 0;
    if (s->where)
        snprintf(where, sizeof where, "%s", s->where);
    else
        snprintf(where, sizeof where, "[%s %s]", s->name, st->target.name);
    if (!s->list_keys)
        return err_set(err, errlen, "unknown key '%s' in %s", name, where);
    for (int hmac = 0; hmac < 2; hmac++) {
        size_t n = 0;
        for (size_t i = 0; i < s->nkeys && used < sizeof list; i++) {
            const struct config_key *k = &s->keys[i];
            if (!(k->flags & CONFIG_HMAC) != !hmac)
                continue;
            int w = snprintf(list + used, sizeof list - used, "%s%s%s%s",
                             n      ? ", "
                             : hmac ? "; with scheme = hmac also "
                                    : "",
                             k->name, k->arg ? " " : "", k->arg ? k->arg : "");
            used += w > 0 ? (size_t)w : 0;
            n++;
        }
    }
    return err_set(err, errlen, "unknown key '%s' in %s (expected %s)", name, where, list);
}

/* Applies one key of the current section to its object. */
static int apply_key(struct config_parse *st, const struct config_key *k, const char *name, const char *v, char *err,
                     size_t errlen)
{
    const struct config_section *s = st->sec;
    char *arg = NULL;
    if (!s->arg)
        st->key_line[section_index(s)][k - s->keys] = st->line;
    if (k->arg)
        arg = xstrdup(name + strlen(k->name) + 1);
    int rc = config_apply(s, k, st->target.obj, arg ? config_trim(arg) : NULL, v, err, errlen);
    if (rc == 0 && st->target.mask)
        *st->target.mask |= k->bit;
    free(arg);
    return rc;
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
    (void)section; /* the reader already opened it */
    struct config_parse *st = user;
    char err[384] = "";
    int rc = -1;
    char *v = xstrdup(value);
    char *val = config_trim(v);
    const struct config_key *k = st->sec ? config_key_find(st->sec, name) : NULL;

    if (!st->sec)
        config_fail(st, st->line, "key '%s' outside any section", name);
    else if (!(k && (k->flags & CONFIG_REPEAT)) && seen_key(st, name))
        config_fail(st, st->line, "duplicate key '%s'", name);
    else if (!*val)
        config_fail(st, st->line, "key '%s' has an empty value", name);
    else if ((rc = k ? apply_key(st, k, name, val, err, sizeof err) : unknown_key(st, name, err, sizeof err)) != 0)
        config_fail(st, st->line, "%s", err[0] ? err : "bad value");
    free(v);
    return st->err[0] ? 0 : 1;
}

void config_set_defaults(struct hookd_config *c)
{
    for (size_t i = 0; i < CONFIG_NSECTIONS; i++)
        if (!config_sections[i].arg)
            apply_defaults(&config_sections[i], (char *)c + config_sections[i].offset);
}

void config_parse_file(struct config_parse *st)
{
    int rc = ini_parse_stream(config_reader, st, on_key, st);
    if (ferror(st->fp))
        config_fail(st, st->line, "read error");
    if (rc > 0 && (!st->err[0] || rc < st->err_line)) {
        st->err[0] = '\0'; /* an earlier line had bad syntax: that is the first error */
        config_fail(st, rc, "syntax error (expected [section], key = value, or a ; comment)");
    }
    for (size_t i = 0; i < st->nseen; i++)
        free(st->seen[i]);
    free(st->seen);
    st->seen = NULL;
    st->nseen = st->cap_seen = 0;
}

int config_key_line(const struct config_parse *st, int sec, const char *name)
{
    const struct config_key *k = config_key_named(sec, name);
    int line = st->key_line[sec][k - config_sections[sec].keys];
    if (!line)
        line = st->section_line[sec];
    return line ? line : 1;
}
