/*
 * json_span.h — where a member's value lies in JSON text. jansson parses a
 * document into values and forgets the text; a message's payload must be
 * delivered as the bytes the application sent (spacing, key order, escapes
 * and number spellings kept), so the API finds the span of the body's
 * top-level "payload" member in the request's text with json_span_member().
 * The scanner walks the text without building values: strings with their
 * escapes, nested objects and arrays, whitespace between tokens. Pure,
 * thread-safe, allocates nothing (except a key with escapes, which jansson
 * decodes for the comparison).
 */
#ifndef HOOKD_JSON_SPAN_H
#define HOOKD_JSON_SPAN_H

#include <stddef.h>

/* The span of the value of member key of the object that text[0..len) is
 * (whitespace around it allowed): its first byte at *off, *n bytes long.
 * A key is compared as JSON decodes it ("pay\u006coad" is "payload"); when
 * the key occurs more than once the last occurrence wins, as jansson keeps
 * it. 0 when found; -1 when absent, or when the text is not a well-formed
 * object as far as the scanner reads it (callers validate the text with a
 * parser too: the scanner checks structure, not every token). */
__attribute__((warn_unused_result)) int json_span_member(const char *text, size_t len, const char *key, size_t *off,
                                                         size_t *n);

#endif
