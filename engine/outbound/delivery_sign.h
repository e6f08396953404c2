/* The webhook-signature of a delivery, Standard Webhooks' way (the relay
 * signs off the loop, the sender when a signature is stale). Thread-safe. */
#ifndef HOOKD_DELIVERY_SIGN_H
#define HOOKD_DELIVERY_SIGN_H

#include <stdint.h>

#include "signature.h"

/* The webhook-signature header for a delivery: "v1,<base64>" with the
 * endpoint's secret and, while a rotation's grace runs, a second one with
 * the previous secret (NULL: none). Returns -1 for a secret that is not a
 * valid whsec_ secret. */
#define DELIVERY_SIGNATURE_MAX (2 * SIG_STANDARD_SIGNATURE_SIZE + 2)
int delivery_sign(const char *secret, const char *prev_secret, const char *event_id, int64_t ts, const char *payload,
                  char out[DELIVERY_SIGNATURE_MAX]);

#endif
