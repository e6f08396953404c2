/*
 * jsonpath.h — dotted paths into jansson documents. Partner sections of the
 * config say where an inbound payload keeps its event id, type and entity id
 * (`entity_id = json:data.object.metadata.order_id`); the config loader
 * checks each path with jsonpath_valid(), and the inbox role extracts the
 * values with jsonpath_get_text(). A path is one or more non-empty segments
 * separated by '.'; on an object a segment is a key, on an array a segment of
 * decimal digits is an index ("items.0.id"). Keys that themselves contain a
 * '.' cannot be addressed. Pure functions, thread-safe as long as the
 * document is not modified concurrently; only jsonpath_load_body()
 * allocates.
 */
#ifndef HOOKD_JSONPATH_H
#define HOOKD_JSONPATH_H

#include <stddef.h>

#include <jansson.h>

/* Longest accepted path, in bytes. Paths come from the config; real ones
 * are a few dozen bytes, so anything longer is a mistake worth refusing. */
#define JSONPATH_MAX_LEN 512

/* 1 if path is syntactically valid: non-NULL, 1..JSONPATH_MAX_LEN bytes, no
 * empty segment (no leading, trailing or doubled '.'). 0 otherwise. */
__attribute__((warn_unused_result)) int jsonpath_valid(const char *path);

/* The value at path: a borrowed reference into root (valid while root is
 * alive and unmodified; json_incref() it to keep it). NULL when root is
 * NULL, the path is invalid, a key is absent, an index is out of range or
 * not canonical decimal ("01", "+1"), or a segment descends into a scalar. */
__attribute__((warn_unused_result)) json_t *jsonpath_get(json_t *root, const char *path);

/* Writes the value at path as text (NUL-terminated) into buf: strings as
 * they are, integers in decimal, booleans as "true"/"false", and reals that
 * hold an integral value within the int64 range in decimal (jansson reads
 * "12.0" and "1e3" as reals). Returns 0 on success and -1 for a missing
 * value, null, an object, an array, a real with a fraction, a string with
 * an embedded NUL byte, or text that does not fit in buflen - 1 bytes; buf
 * is then "" (when buflen > 0). */
__attribute__((warn_unused_result)) int jsonpath_get_text(json_t *root, const char *path, char *buf, size_t buflen);

/* Parses a request body as Postgres jsonb would accept it, for reading
 * fields with the functions above: any JSON value at the top level, and
 * numbers of any size. jansson refuses integers outside int64 and reals
 * that overflow a double (2^63, 1e400, a 400-digit integer); only when it
 * refuses for that reason is the body parsed again from a copy in which each
 * such number is the JSON string of its exact text ("18446744073709551616"),
 * so an id, type or entity id read from it is what was sent, never a rounded
 * or clamped value. The caller stores the raw bytes, not this document.
 * Returns a new reference (caller json_decref()s) or NULL with err filled
 * in by jansson (for the copy, positions may be off by two characters per
 * number rewritten before the error). Allocation failure aborts. */
__attribute__((warn_unused_result)) json_t *jsonpath_load_body(const char *text, size_t len, json_error_t *err);

#endif
