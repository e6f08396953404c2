/*
 * fuzz_jsonpath.c — libFuzzer target for engine/base/jsonpath.h, the code that
 * pulls a partner's event id, event type and entity id out of an inbound
 * JSON body. The input is "PATH\nJSON": everything before the first newline
 * is the path (as a config file would give it after `json:`), the rest is
 * the document, parsed with json_loadb() the way the ingest handler parses
 * request bodies (flags 0) and a second time with JSON_DECODE_ANY |
 * JSON_ALLOW_NUL so that scalar roots and strings with embedded NUL bytes
 * reach the walker too. Properties checked besides memory safety: an
 * invalid path never finds anything; jsonpath_get_text() refuses exactly
 * the values its header lists and otherwise writes the text computed here
 * independently (strings as they are, integers and integral reals in
 * decimal, true/false); a successful jsonpath_get_text() leaves
 * a NUL-terminated text shorter than the buffer, which is an exact-size heap
 * allocation (a one-byte overrun is an ASan report); the text of a value
 * does not depend on the buffer size as long as it fits; a failure leaves
 * "" behind.
 */
/* fuzz.sh links: engine/base/jsonpath.c engine/base/xmalloc.c */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz_check.h"
#include "jsonpath.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Buffer sizes tried for jsonpath_get_text(): the ingest handler's (1001),
 * a small one, and the edge cases 1 and 2. */
static const size_t buf_sizes[] = {1001, 17, 2, 1};

/* The text jsonpath.h promises for v, computed independently; NULL when
 * it promises a refusal. Caller frees. */
static char *expected_text(json_t *v)
{
    char tmp[64];
    double d;

    switch (json_typeof(v)) {
    case JSON_STRING:
        if (memchr(json_string_value(v), '\0', json_string_length(v)) != NULL)
            return NULL;
        return strdup(json_string_value(v));
    case JSON_INTEGER: snprintf(tmp, sizeof tmp, "%lld", (long long)json_integer_value(v)); return strdup(tmp);
    case JSON_REAL:
        d = json_real_value(v);
        if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != (double)(long long)d)
            return NULL;
        snprintf(tmp, sizeof tmp, "%.0f", d);
        return strdup(strcmp(tmp, "-0") == 0 ? "0" : tmp);
    case JSON_TRUE: return strdup("true");
    case JSON_FALSE: return strdup("false");
    default: return NULL;
    }
}

static void walk(json_t *root, const char *path)
{
    char *first = NULL;
    size_t first_len = 0;
    int valid = jsonpath_valid(path);
    json_t *v = jsonpath_get(root, path);

    if (!valid)
        CHECK(v == NULL);
    for (size_t i = 0; i < sizeof buf_sizes / sizeof buf_sizes[0]; i++) {
        size_t n = buf_sizes[i];
        char *buf = malloc(n);

        if (buf == NULL)
            abort();
        memset(buf, 'x', n);
        if (jsonpath_get_text(root, path, buf, n) == 0) {
            size_t len = strnlen(buf, n);

            CHECK(v != NULL);
            CHECK(len < n);
            if (first == NULL) {
                first = strdup(buf);
                first_len = len;
            } else {
                /* A shorter buffer either fits the same text or fails. */
                CHECK(len == first_len && memcmp(first, buf, len) == 0);
            }
        } else {
            CHECK(buf[0] == '\0');
        }
        free(buf);
    }
    if (v != NULL) {
        char *want = expected_text(v);

        /* Refused exactly when the header says so, and the same text. The
         * 1001-byte buffer holds any text but long strings. */
        if (want == NULL)
            CHECK(first == NULL);
        else if (strlen(want) < buf_sizes[0])
            CHECK(first != NULL && strcmp(first, want) == 0);
        free(want);
    }
    free(first);
    /* The NULL/zero-size contract. */
    CHECK(jsonpath_get_text(root, path, NULL, 0) == -1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t plen = nl != NULL ? (size_t)(nl - data) : size;
    const char *doc = nl != NULL ? (const char *)nl + 1 : "";
    size_t dlen = nl != NULL ? size - plen - 1 : 0;
    char *path = malloc(plen + 1);
    json_error_t jerr;
    json_t *root;

    if (path == NULL)
        abort();
    memcpy(path, data, plen);
    path[plen] = '\0';

    CHECK(jsonpath_get(NULL, path) == NULL);
    root = json_loadb(doc, dlen, 0, &jerr);
    walk(root, path);
    json_decref(root);
    root = json_loadb(doc, dlen, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    walk(root, path);
    json_decref(root);
    root = jsonpath_load_body(doc, dlen, &jerr); /* the ingest handler's parse */
    walk(root, path);
    json_decref(root);
    free(path);
    return 0;
}
