/*
 * jsonpath.c — walks a jansson document along a dotted path. The path is
 * validated, then walked segment by segment directly on the caller's string
 * (json_object_getn takes a length, so no copy is needed): objects are
 * indexed by key, arrays by canonical decimal index, and anything else ends
 * the walk with NULL. jsonpath_get_text() turns the scalar it finds into the
 * text that the inbox stores as event id, type or entity id, refusing values
 * whose text form would be ambiguous (null, containers, fractional reals).
 */
#include "jsonpath.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

/* Array indexes have at most this many digits; jansson arrays are far
 * smaller, and the bound keeps the conversion free of overflow. */
#define INDEX_MAX_DIGITS 9

int jsonpath_valid(const char *path)
{
    size_t len;

    if (path == NULL)
        return 0;
    len = strnlen(path, JSONPATH_MAX_LEN + 1);
    if (len == 0 || len > JSONPATH_MAX_LEN)
        return 0;
    if (path[0] == '.' || path[len - 1] == '.' || strstr(path, "..") != NULL)
        return 0;
    return 1;
}

/* Parses a canonical array index ("0", "17", not "01" or "-1"); -1 if the
 * segment is not one. */
static long parse_index(const char *seg, size_t n)
{
    long v = 0;

    if (n == 0 || n > INDEX_MAX_DIGITS || (n > 1 && seg[0] == '0'))
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (seg[i] < '0' || seg[i] > '9')
            return -1;
        v = v * 10 + (seg[i] - '0');
    }
    return v;
}

/* One step of the walk: the child of node named by seg[0..n), or NULL. */
static json_t *step(json_t *node, const char *seg, size_t n)
{
    long idx;

    if (json_is_object(node))
        return json_object_getn(node, seg, n);
    if (json_is_array(node)) {
        idx = parse_index(seg, n);
        if (idx < 0)
            return NULL;
        return json_array_get(node, (size_t)idx);
    }
    return NULL;
}

json_t *jsonpath_get(json_t *root, const char *path)
{
    json_t *node = root;
    const char *seg = path;

    if (root == NULL || !jsonpath_valid(path))
        return NULL;
    while (node != NULL) {
        const char *dot = strchr(seg, '.');
        size_t n = dot != NULL ? (size_t)(dot - seg) : strlen(seg);

        node = step(node, seg, n);
        if (dot == NULL)
            break;
        seg = dot + 1;
    }
    return node;
}

/* Decimal text of a real that holds an integral int64 value; -1 otherwise. */
static int real_as_integer(double v, char *tmp, size_t tmplen)
{
    int64_t i;

    /* Both bounds are exact powers of two, so the comparison is exact and
     * every double inside converts to int64_t without overflow; written as
     * a negated range so that NaN fails it too. */
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
        return -1;
    i = (int64_t)v;
    if ((double)i != v) /* the cast truncated a fraction */
        return -1;
    snprintf(tmp, tmplen, "%" PRId64, i);
    return 0;
}

int jsonpath_get_text(json_t *root, const char *path, char *buf, size_t buflen)
{
    char tmp[32];
    const char *text = NULL;
    size_t len;
    json_t *v;

    if (buf == NULL || buflen == 0)
        return -1;
    buf[0] = '\0';
    v = jsonpath_get(root, path);
    if (v == NULL)
        return -1;
    switch (json_typeof(v)) {
    case JSON_STRING:
        text = json_string_value(v);
        len = json_string_length(v);
        /* An embedded NUL would silently truncate the id. */
        if (memchr(text, '\0', len) != NULL)
            return -1;
        break;
    case JSON_INTEGER:
        snprintf(tmp, sizeof tmp, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        text = tmp;
        break;
    case JSON_REAL:
        if (real_as_integer(json_real_value(v), tmp, sizeof tmp) < 0)
            return -1;
        text = tmp;
        break;
    case JSON_TRUE: text = "true"; break;
    case JSON_FALSE: text = "false"; break;
    case JSON_NULL:
    case JSON_OBJECT:
    case JSON_ARRAY: return -1;
    }
    if (text == NULL)
        return -1;
    len = strlen(text);
    if (len >= buflen)
        return -1;
    memcpy(buf, text, len + 1);
    return 0;
}

/* ---- bodies with numbers jansson cannot hold ------------------------------ */

/* Length of the JSON number at s[0..n), or 0 if none starts there
 * (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?). *real: it has a fraction
 * or an exponent. */
static size_t number_len(const char *s, size_t n, int *real)
{
    size_t i = 0;
    *real = 0;
    if (i < n && s[i] == '-')
        i++;
    if (i >= n || s[i] < '0' || s[i] > '9')
        return 0;
    if (s[i] == '0')
        i++;
    else
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    if (i + 1 < n && s[i] == '.' && s[i + 1] >= '0' && s[i + 1] <= '9') {
        *real = 1;
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            ;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < n && (s[j] == '+' || s[j] == '-'))
            j++;
        if (j < n && s[j] >= '0' && s[j] <= '9') {
            *real = 1;
            for (i = j; i < n && s[i] >= '0' && s[i] <= '9'; i++)
                ;
        }
    }
    return i;
}

/* 1 if jansson refuses the number s[0..n) as out of range: an integer
 * outside int64 (json_int_t is long long here), a real that overflows a
 * double (jansson takes underflow, 1e-400, as 0). */
static int number_out_of_range(const char *s, size_t n, int real)
{
    char small[64];
    char *buf = n < sizeof small ? small : xmalloc(n + 1);
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    int out;
    if (!real) {
        (void)strtoll(buf, NULL, 10);
        out = errno == ERANGE;
    } else {
        double v = strtod(buf, NULL);
        out = errno == ERANGE && isinf(v);
    }
    if (buf != small)
        free(buf);
    return out;
}

/* Copies text with every out-of-range number turned into a string of its
 * text; *changed counts them. Strings are skipped (escapes included), so a
 * digit inside one is never taken for a number. */
static char *quote_big_numbers(const char *text, size_t len, size_t *outlen, size_t *changed)
{
    char *out = xmalloc(len * 3 + 1); /* each number grows by 2 quotes: at most 3x */
    size_t o = 0;
    int in_string = 0;
    *changed = 0;
    for (size_t i = 0; i < len;) {
        char c = text[i];
        if (in_string) {
            out[o++] = c;
            i++;
            if (c == '\\' && i < len)
                out[o++] = text[i++];
            else if (c == '"')
                in_string = 0;
            continue;
        }
        int real;
        size_t n = (c == '-' || (c >= '0' && c <= '9')) ? number_len(text + i, len - i, &real) : 0;
        if (n > 0 && number_out_of_range(text + i, n, real)) {
            out[o++] = '"';
            memcpy(out + o, text + i, n);
            o += n;
            out[o++] = '"';
            (*changed)++;
        } else {
            if (n == 0)
                n = 1;
            memcpy(out + o, text + i, n);
            o += n;
            in_string = c == '"';
        }
        i += n;
    }
    out[o] = '\0';
    *outlen = o;
    return out;
}

json_t *jsonpath_load_body(const char *text, size_t len, json_error_t *err)
{
    json_t *doc = json_loadb(text, len, JSON_DECODE_ANY, err);
    if (doc != NULL || json_error_code(err) != json_error_numeric_overflow)
        return doc;
    size_t n, changed;
    char *copy = quote_big_numbers(text, len, &n, &changed);
    if (changed > 0)
        doc = json_loadb(copy, n, JSON_DECODE_ANY, err);
    free(copy);
    return doc;
}
