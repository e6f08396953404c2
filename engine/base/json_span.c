/* Spans of JSON values in their text (json_span.h). A cursor moves over
 * the text; each skip_* function advances it past one token or value and
 * returns -1 when the text ends or does not have the expected shape. Depth
 * is bounded (JSON_SPAN_DEPTH_MAX) with a counter, not recursion. */
#include "json_span.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

/* Deeper than any parser hookd uses accepts (jansson: 2048). */
#define JSON_SPAN_DEPTH_MAX 4096

struct cur {
    const char *s;
    size_t len, i;
};

static void skip_ws(struct cur *c)
{
    while (c->i < c->len && (c->s[c->i] == ' ' || c->s[c->i] == '\t' || c->s[c->i] == '\n' || c->s[c->i] == '\r'))
        c->i++;
}

/* Past a string starting at its opening quote; *escaped: it holds a '\'. */
static int skip_string(struct cur *c, bool *escaped)
{
    if (c->i >= c->len || c->s[c->i] != '"')
        return -1;
    for (c->i++; c->i < c->len; c->i++) {
        if (c->s[c->i] == '\\') {
            *escaped = true;
            c->i++; /* the escaped character: never the closing quote */
        } else if (c->s[c->i] == '"') {
            c->i++;
            return 0;
        }
    }
    return -1;
}

/* Past a number, true, false or null: up to the next delimiter. */
static int skip_scalar(struct cur *c)
{
    size_t start = c->i;
    while (c->i < c->len && !strchr(",:]}[{\" \t\n\r", c->s[c->i]))
        c->i++;
    return c->i > start ? 0 : -1;
}

/* Past an object or array: brackets counted, strings skipped whole. */
static int skip_nested(struct cur *c)
{
    int depth = 0;
    bool esc;
    do {
        if (c->i >= c->len)
            return -1;
        char ch = c->s[c->i];
        if (ch == '"') {
            if (skip_string(c, &esc) != 0)
                return -1;
            continue;
        }
        if (ch == '{' || ch == '[') {
            if (++depth > JSON_SPAN_DEPTH_MAX)
                return -1;
        } else if (ch == '}' || ch == ']') {
            depth--;
        }
        c->i++;
    } while (depth > 0);
    return depth == 0 ? 0 : -1;
}

static int skip_value(struct cur *c)
{
    bool esc = false;
    if (c->i >= c->len)
        return -1;
    switch (c->s[c->i]) {
    case '"': return skip_string(c, &esc);
    case '{':
    case '[': return skip_nested(c);
    default: return skip_scalar(c);
    }
}

/* Whether the key text[off..off+n) (quotes included) is key once decoded. */
static bool key_is(const char *text, size_t off, size_t n, bool escaped, const char *key)
{
    if (!escaped)
        return n - 2 == strlen(key) && memcmp(text + off + 1, key, n - 2) == 0;
    json_t *k = json_loadb(text + off, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    bool same = json_is_string(k) && json_string_length(k) == strlen(key) &&
                memcmp(json_string_value(k), key, strlen(key)) == 0;
    json_decref(k);
    return same;
}

int json_span_member(const char *text, size_t len, const char *key, size_t *off, size_t *n)
{
    struct cur c = {text, len, 0};
    bool found = false;
    skip_ws(&c);
    if (c.i >= c.len || text[c.i] != '{')
        return -1;
    c.i++;
    skip_ws(&c);
    if (c.i < c.len && text[c.i] == '}')
        return -1; /* empty */
    for (;;) {
        size_t k = c.i;
        bool escaped = false;
        if (skip_string(&c, &escaped) != 0)
            return -1;
        bool match = key_is(text, k, c.i - k, escaped, key);
        skip_ws(&c);
        if (c.i >= c.len || text[c.i] != ':')
            return -1;
        c.i++;
        skip_ws(&c);
        size_t v = c.i;
        if (skip_value(&c) != 0)
            return -1;
        if (match) {
            *off = v;
            *n = c.i - v;
            found = true;
        }
        skip_ws(&c);
        if (c.i >= c.len)
            return -1;
        if (text[c.i] == '}')
            break;
        if (text[c.i] != ',')
            return -1;
        c.i++;
        skip_ws(&c);
    }
    return found ? 0 : -1;
}
