/* A request's JSON body as the operations read it: parsed by jansson (an
 * object, no duplicated keys), and, when it has a top-level "payload", the
 * exact text of that member's value. A message keeps and delivers that text
 * byte for byte, as Svix does (its spacing, key order, escapes and number
 * spellings), while the checks and the payload filters read the parsed value.
 *
 * jansson refuses an integer beyond 64 bits (12345678901234567890); Svix
 * accepts any JSON number in a payload. Such a payload is parsed on its own
 * with its integers as reals (for the checks only: the text is what is
 * stored, and Postgres's jsonb keeps the number exact), and the rest of the
 * body with the payload as null, so that every other field keeps its type
 * and a number too big elsewhere is still refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "json_span.h"
#include "xmalloc.h"

/* The body when only its "payload" member holds integers too big for
 * jansson; NULL (jerr set) otherwise. */
static json_t *parse_big_payload(const char *text, size_t len, size_t off, size_t n, json_error_t *jerr)
{
    json_t *payload = json_loadb(text + off, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL,
                                 jerr);
    if (!payload)
        return NULL;
    size_t rest_len = len - n + 4;
    char *rest = xmalloc(rest_len);
    memcpy(rest, text, off);
    memcpy(rest + off, "null", 4);
    memcpy(rest + off + 4, text + off + n, len - off - n);
    json_t *body = json_loadb(rest, rest_len, JSON_REJECT_DUPLICATES, jerr);
    free(rest);
    if (!body || json_object_set_new(body, "payload", payload) != 0) {
        json_decref(body);
        return NULL;
    }
    return body;
}

json_t *api_body_parse(const char *text, size_t len, char **payload_raw, json_error_t *jerr)
{
    *payload_raw = NULL;
    size_t off = 0, n = 0;
    /* JSON has no place for a NUL byte (inside a string it must be
     * escaped); jansson skips one between tokens, which would make the
     * body's parsed value and its text disagree */
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        snprintf(jerr->text, sizeof jerr->text, "a NUL byte at offset %zu", (size_t)(nul - text));
        return NULL;
    }
    json_t *body = json_loadb(text, len, JSON_REJECT_DUPLICATES, jerr);
    if (!body && json_error_code(jerr) == json_error_numeric_overflow &&
        json_span_member(text, len, "payload", &off, &n) == 0)
        body = parse_big_payload(text, len, off, n, jerr);
    if (!json_is_object(body) || !json_object_get(body, "payload"))
        return body;
    if (n == 0 && json_span_member(text, len, "payload", &off, &n) != 0)
        return body; /* cannot happen: jansson found the member */
    *payload_raw = xmalloc(n + 1);
    memcpy(*payload_raw, text + off, n);
    (*payload_raw)[n] = '\0';
    return body;
}
