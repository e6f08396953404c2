/* The relay role's second half: sending deliveries. Claimed delivery ids
 * (from `<prefix>:{delivery}:due`) are loaded with their event and endpoint,
 * POSTed from the event loop through http_client (keep-alive per endpoint,
 * bounded in flight per endpoint and in total), signed with Standard
 * Webhooks headers (webhook-id = the outbox event id, stable across
 * retries; during a secret rotation both signatures are sent), and their
 * outcomes are recorded in batches: 2xx succeeded; 410 disables the endpoint
 * and dead-letters; anything else retries per [retry] and its
 * `endpoint:NAME` override, honouring Retry-After within bounds; the last
 * failure dead-letters. Every attempt is a row in `attempts` with status,
 * duration, error and the first bytes of the response. An event is
 * processed when all of its deliveries succeeded or died. */
#ifndef HOOKD_DELIVERY_H
#define HOOKD_DELIVERY_H

#include <stddef.h>
#include <stdint.h>

struct worker;
struct sched;
struct delivery;

/* NULL with err when the HTTP client cannot start (e.g. unreadable ca_file). */
struct delivery *delivery_new(struct worker *w, char *err, size_t errlen);
/* Cancels requests on the wire (their deliveries are retried after their
 * lease) and frees. Call after the scheduler stopped. Accepts NULL. */
void delivery_free(struct delivery *d);
/* sched_process_fn for the delivery queue; arg is the struct delivery. */
void delivery_process(void *arg, struct sched *s, char **ids, const int64_t *due_ms, size_t n);
/* Requests on the wire plus outcomes not yet recorded. */
size_t delivery_pending(const struct delivery *d);

#endif
