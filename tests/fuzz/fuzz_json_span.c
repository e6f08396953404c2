/*
 * fuzz_json_span.c — libFuzzer target for engine/base/json_span.h, which
 * finds the text of a request body's top-level "payload" member so that a
 * message is delivered as the bytes its application sent. The input is the
 * body, copied into an exact-size heap buffer without a terminating NUL (a
 * read past its end is an ASan report). Properties checked besides memory
 * safety: a span found lies inside the input; when jansson parses the input
 * (JSON_DECODE_ANY | JSON_ALLOW_NUL, duplicated keys allowed: the last one
 * wins) into an object (an input with a NUL byte aside: the API refuses
 * it first), the scanner finds "payload" exactly when the object
 * has that member, and the span parses on its own to a value equal to it.
 */
/* fuzz.sh links: engine/base/json_span.c */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz_check.h"
#include "json_span.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size ? size : 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    size_t off = 0, n = 0;
    int found = json_span_member(text, size, "payload", &off, &n) == 0;
    if (found)
        CHECK(off <= size && n <= size - off && n > 0);
    /* a NUL byte: refused before the scan (api_body.c), as jansson skips one between tokens */
    json_t *doc = memchr(text, '\0', size) ? NULL : json_loadb(text, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (json_is_object(doc)) {
        json_t *member = json_object_get(doc, "payload");
        CHECK(found == (member != NULL));
        if (found) {
            json_t *span = json_loadb(text + off, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
            CHECK(span != NULL && json_equal(span, member));
            json_decref(span);
        }
    }
    json_decref(doc);
    free(text);
    return 0;
}
