/* The relay role's second half: sending deliveries. Claimed delivery ids
 * (from `<prefix>:{delivery}:due`) are loaded with their event and endpoint,
 * POSTed from the event loop through http_client (keep-alive per endpoint,
 * bounded in flight per endpoint and in total), signed the Standard
 * Webhooks way under svix-* and/or webhook-* names as the delivery's
 * signature_headers setting says (the id = the outbox event id, stable
 * across retries; during a secret rotation both signatures are sent), and their
 * outcomes are recorded in batches: 2xx succeeded; 410 disables the endpoint
 * and dead-letters; anything else retries per [retry] and its
 * `endpoint:NAME` override, honouring Retry-After within bounds; the last
 * failure dead-letters. Every attempt is a row in `attempts` with status,
 * duration, error and the first bytes of the response. An event is
 * processed when all of its deliveries succeeded or died. */
#ifndef HOOKD_DELIVERY_H
#define HOOKD_DELIVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "outbound.h"
#include "delivery_sign.h"

struct hookd_ctx;
struct alerter;
struct delivery;
struct http_client_stats;


/* Whether the endpoint's circuit is open (circuit.h): send nothing to it
 * inline. */
bool delivery_endpoint_circuit_open(const struct delivery *d, const char *endpoint_name);
/* New deliveries just scheduled (sched_seed) by a fan-out, unsent: those
 * of an endpoint whose circuit is open are parked at once rather than
 * claimed, loaded and parked one by one. ids and endpoint_names borrowed. */
void delivery_park_fanned_out(struct delivery *d, char **ids, char **endpoint_names, size_t n);
/* Requests to one endpoint on the wire or waiting for a connection. */
size_t delivery_endpoint_backlog(const struct delivery *d, const char *endpoint_name);

/* ---- first attempts: the relay's fan-out (relay.c) ---------------------------
 * A fan-out pass sends each new delivery once while its transaction still
 * holds the claimed events, then inserts the delivery rows in that same
 * transaction: a delivery whose first attempt succeeded is inserted
 * SUCCEEDED (with its attempt row) and never touches Redis; one whose first
 * attempt failed plainly is inserted RETRYING with its attempt row and
 * scheduled at its retry's due time. One that failed otherwise (410, a bad
 * URL), or is still on the wire when the pass stops waiting, is inserted
 * PENDING and, after the commit, joins the regular path above as if
 * claimed. */

struct delivery_item;

/* What to send: strings are copied. */
struct delivery_target {
    const char *id;                                                   /* the new outbox_deliveries row's id */
    const char *event_id;                                             /* webhook-id */
    const char *payload, *endpoint_name, *url, *secret, *prev_secret; /* prev_secret may be NULL */
    const char *headers;                    /* the endpoint's custom headers (a JSON object), NULL: none */
    const char *webhook_id;                 /* a tenant's message: its msg_ id; NULL: event_id */
    const char *settings, *tenant_settings; /* the endpoint's and its tenant's settings (JSON), NULL: none */
    int timeout_ms, max_inflight;
    const char *signature; /* from delivery_sign(), made off the loop; NULL: signed when sent */
    int64_t signed_at;     /* the timestamp it signed */
};

/* Called once per item, from the loop, when its outcome is known (possibly
 * before delivery_send_first returns, for errors found at once) - unless
 * delivery_first_close() ran first. */
typedef void (*delivery_answered_fn)(struct delivery_item *it, void *arg);

struct delivery_item *delivery_send_first(struct delivery *d, const struct delivery_target *t, delivery_answered_fn fn,
                                          void *arg);

/* An item's outcome as the fan-out writes it (strings borrowed from the
 * item); the rest is meaningful only when succeeded. */
struct delivery_outcome {
    bool succeeded; /* answered 2xx; false also while still on the wire */
    int status;     /* HTTP status, 0 for none */
    int64_t answered_ms;
    double duration_ms;
    const char *excerpt;   /* may be NULL */
    const char *error;     /* a failure's error text */
    int64_t retry_wait_ms; /* a plain failure that is retried (not 410, not the last attempt, no open
                              circuit decision needed): the wait before attempt 2; -1 otherwise */
};
void delivery_item_outcome(const struct delivery_item *it, struct delivery_outcome *out);

/* The pass stops waiting: fn is not called any more for it. */
void delivery_first_close(struct delivery_item *it);

enum delivery_fate {
    DELIVERY_RECORDED, /* inserted SUCCEEDED: counted and freed */
    DELIVERY_ADOPT,    /* inserted PENDING: leased in Redis, outcome recorded by the regular path */
    DELIVERY_RETRY,    /* inserted RETRYING with its failed attempt (retry_wait_ms): scheduled, freed */
    DELIVERY_FORGET,   /* no row (the pass rolled back, or the row already existed): dropped */
};
/* After the pass's transaction ended: each item's fate. Takes ownership of
 * the items (not of the array). */
void delivery_first_settle(struct delivery *d, struct delivery_item **items, const enum delivery_fate *fates,
                           size_t n);

#endif
