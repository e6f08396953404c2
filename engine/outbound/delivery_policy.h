/* The per-endpoint delivery policies the API stores, enforced on
 * the delivery path:
 *
 * - custom static headers (webhook_endpoints.headers, Svix's `headers`):
 *   added to every request to the endpoint, after hookd's own; a name
 *   hookd sets itself (svix-id, svix-timestamp, svix-signature, webhook-id,
 *   webhook-timestamp, webhook-signature, content-type, user-agent) or the HTTP client owns is never taken from
 *   them. Read with the endpoint on every claim and fan-out pass, so a
 *   change through the API applies to the next delivery.
 * - rateLimit (webhook_endpoints.rate_limit, deliveries per second): paced
 *   across the whole cluster by schedulers/ratelimit.c (one Redis key per
 *   endpoint). A delivery over the limit is rescheduled to the time the
 *   limiter names, without an attempt.
 * - ordered (webhook_endpoints.ordered): a delivery of an aggregate is held
 *   while an earlier event of the same aggregate is unfanned, or its
 *   delivery to the endpoint is open or dead-lettered (sql/0017,
 *   hookd_delivery_blocked_ms); held deliveries are rescheduled without an
 *   attempt.
 *
 * Rate-limited and ordered endpoints get no inline first attempt from the
 * relay: their deliveries go through the claim path, where the policies are
 * checked. Loop thread only. */
#ifndef HOOKD_DELIVERY_POLICY_H
#define HOOKD_DELIVERY_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http_client.h"

struct hookd_ctx;
struct delivery_policy;

struct delivery_policy *delivery_policy_new(struct hookd_ctx *ctx);
/* Accepts NULL. Deliveries still waiting for the limiter or for their
 * reserved slot are handed to drop(arg) (the caller frees them; nothing is
 * recorded: their lease lapses and they are claimed again). */
void delivery_policy_free(struct delivery_policy *p, void (*drop)(void *arg));

/* base[0..nbase) followed by the endpoint's custom headers (headers_json:
 * a JSON object of strings, or NULL); names in base, and reserved ones
 * (endpoint_headers_reserved: hookd's and the client's own) are skipped,
 * a reserved one with a warning naming endpoint_name (NULL: none). *out is allocated (free() it) and its strings point into
 * base and into *hold (json_decref() it after the post, which copies). */
size_t delivery_policy_headers(const char *headers_json, const char *endpoint_name, const struct http_header *base,
                               size_t nbase, struct http_header **out, void **hold);
void delivery_policy_headers_release(struct http_header *out, void *hold);

/* What to do with a claimed delivery of a rate-limited endpoint: go(arg)
 * sends it (now, or after a reserved wait of at most a second); later(arg,
 * due_ms) reschedules it. Exactly one is called, from the loop, possibly
 * before delivery_policy_pace returns. rate <= 0: go at once. */
typedef void (*delivery_policy_go_fn)(void *arg);
typedef void (*delivery_policy_later_fn)(void *arg, int64_t due_ms);
void delivery_policy_pace(struct delivery_policy *p, const char *endpoint_id, int rate, delivery_policy_go_fn go,
                          delivery_policy_later_fn later, void *arg);

/* The relay: whether a row's endpoint may have an inline first attempt. */
static inline bool delivery_policy_inline_ok(int rate_limit, bool ordered)
{
    return rate_limit <= 0 && !ordered;
}

#endif
