/* The signature of a delivery, Standard Webhooks' way (the relay signs off
 * the loop, the sender when a signature is stale), and the headers that
 * carry it: svix-id, svix-timestamp and svix-signature (Svix's names),
 * webhook-id, webhook-timestamp and webhook-signature (Standard Webhooks'),
 * or both sets with the same values, as the delivery's signature_headers
 * setting says (settings.h). Thread-safe. */
#ifndef HOOKD_DELIVERY_SIGN_H
#define HOOKD_DELIVERY_SIGN_H

#include <stdint.h>

#include "http_client.h"
#include "settings.h"
#include "signature.h"

/* The webhook-signature header for a delivery: "v1,<base64>" with the
 * endpoint's secret and, while a rotation's grace runs, a second one with
 * the previous secret (NULL: none). Returns -1 for a secret that is not a
 * valid whsec_ secret. */
#define DELIVERY_SIGNATURE_MAX (2 * SIG_STANDARD_SIGNATURE_SIZE + 2)
int delivery_sign(const char *secret, const char *prev_secret, const char *event_id, int64_t ts, const char *payload,
                  char out[DELIVERY_SIGNATURE_MAX]);

/* The id headers of a delivery (sent with the request): out[] gets 1 or 2
 * headers whose values point to id; returns their number. which: enum
 * settings_signature_headers. */
#define DELIVERY_SIGN_ID_HEADERS_MAX 2
size_t delivery_sign_id_headers(int which, const char *id, struct http_header out[DELIVERY_SIGN_ID_HEADERS_MAX]);

/* The timestamp and signature headers (added as the request is written):
 * out[] gets 2 or 4 headers pointing to ts and sig; returns their number. */
#define DELIVERY_SIGN_LATE_HEADERS_MAX 4
size_t delivery_sign_late_headers(int which, const char *ts, const char *sig,
                                  struct http_header out[DELIVERY_SIGN_LATE_HEADERS_MAX]);

#endif
