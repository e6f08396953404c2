/*
 * payload_filter.h — the per-endpoint condition on an event's payload
 * (`payloadFilter` in the API, `--filter` on the command line), evaluated at
 * fan-out: an event goes to an endpoint only when its payload matches.
 *
 * A filter is a JSON object. Each key is either a dotted path into the
 * payload (jsonpath.h: "data.customer.tier", "items.0.sku") or one of the
 * combinators "$and" / "$or" (an array of filters). The value under a path
 * is a condition: an object of operators, all of which must hold, or any
 * other JSON value, meaning "$eq" that value. Operators:
 *   $eq v, $neq v      equal / not equal (JSON equality; numbers compare as
 *                      numbers, 1 == 1.0)
 *   $in [v, ...]       equal to one of them
 *   $gt n, $lt n       a number greater / less than n (a missing value or
 *                      a non-number never matches)
 *   $exists true|false the path is present (null counts as present)
 * Several keys in one object must all hold. The empty object matches
 * everything. Pure functions; thread-safe on unmodified documents.
 */
#ifndef HOOKD_PAYLOAD_FILTER_H
#define HOOKD_PAYLOAD_FILTER_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* Nesting accepted in a filter ($and/$or inside each other). */
#define PAYLOAD_FILTER_MAX_DEPTH 16

/* 0 when filter is a valid filter; -1 with a message naming the offending
 * part in err otherwise. */
__attribute__((warn_unused_result)) int payload_filter_check(const json_t *filter, char *err, size_t errlen);

/* Whether payload matches filter (which payload_filter_check accepted; an
 * invalid part never matches). payload may be NULL (matches only filters
 * that need nothing: {} or $exists false). */
bool payload_filter_match(const json_t *filter, json_t *payload);

#endif
