/*
 * endpoint_headers.h — the rules for an endpoint's custom static headers
 * (Svix's `headers`; `--headers` on the command line), shared by the API
 * and the CLI so that both refuse the same things: at most
 * ENDPOINT_HEADERS_MAX of them, names of 1 to 128 characters of
 * [A-Za-z0-9_-] that are not ones hookd or the HTTP client sets
 * (svix-id, webhook-id and their -timestamp and -signature, content-type,
 * host, …), values of at most 4096 characters
 * without control characters. Sensitive names (authorization, cookies,
 * anything with secret, token or key) are stored and sent, but the API lists
 * them without their values. Pure functions.
 */
#ifndef HOOKD_ENDPOINT_HEADERS_H
#define HOOKD_ENDPOINT_HEADERS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define ENDPOINT_HEADERS_MAX 32

/* 0 when headers is an object of valid headers (nulls_ok: a null value, a
 * removal in a patch, is accepted too); -1 with a message in err. */
__attribute__((warn_unused_result)) int endpoint_headers_check(const json_t *headers, bool nulls_ok, char *err,
                                                               size_t errlen);

/* Whether name (any case) is one the HTTP client owns or hookd sets, so that
 * an endpoint's headers may not name it: the one list, checked when the
 * headers are stored and again when a delivery sends them. */
bool endpoint_headers_reserved(const char *name);

/* Whether a header's value is kept from the API's listing. */
bool endpoint_headers_sensitive(const char *name);

#endif
