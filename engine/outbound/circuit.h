/* The circuit of each delivery endpoint (`[retry endpoint:NAME] circuit`,
 * default on), shared by every worker through Redis (lua/circuit_*.lua):
 *
 *   closed    deliveries are sent; outcomes are reported per batch, and
 *             `circuit_failures` consecutive failures (transport errors,
 *             5xx, 408, 429: anything that says the endpoint, not the
 *             message, is unwell) open it;
 *   open      claimed deliveries of the endpoint are parked, unsent, in
 *             `<prefix>:{delivery}:parked:<endpoint>`: no request, no
 *             attempt, no Postgres write; the fan-out sends nothing inline;
 *   half-open every `circuit_probe` one parked delivery is made due as the
 *             probe; its success closes the circuit (every parked delivery
 *             is due again at once, moved back in chunks of 1,000
 *             (lua/circuit_unpark.lua), so the backlog drains at delivery
 *             throughput), its failure keeps it open another interval;
 *   disabled  open for `circuit_disable_after` (default 5 days, as Svix):
 *             the endpoint is disabled (endpoint.disabled) and its owed
 *             deliveries are dead-lettered ("endpoint disabled").
 *
 * Only the probe spends an attempt while the circuit is open; a parked
 * delivery keeps its attempts and its place in the retry schedule. Redis
 * holds only *when* (invariant 1): a flushed Redis forgets the circuits and
 * the parked sets, and the reconciler schedules the rows again from
 * Postgres. Each worker keeps a copy of the open circuits, refreshed every
 * CIRCUIT_REFRESH_MS, which is what its sending decisions read. A parked
 * delivery is also in `<prefix>:{delivery}:parked_ids` (id -> endpoint),
 * so that one the reconciler schedules again is parked again without being
 * read from Postgres. */
#ifndef HOOKD_CIRCUIT_H
#define HOOKD_CIRCUIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hookd_ctx;
struct circuit;

#define CIRCUIT_REFRESH_MS 250

/* Called on the worker whose report closed (opened false) or opened (true)
 * an endpoint's circuit, once per change cluster-wide: on closing the owner
 * makes the endpoint's waiting deliveries due now; on opening it parks those
 * waiting in Redis (circuit_park_due). endpoint is borrowed during the call. */
typedef void (*circuit_closed_fn)(void *arg, const char *endpoint, bool opened);

/* due_key and inflight_key: the delivery queue's keys (copied). ctx is
 * borrowed and must outlive it. */
struct circuit *circuit_new(struct hookd_ctx *ctx, const char *due_key, const char *inflight_key,
                            circuit_closed_fn on_closed, void *arg);
/* Free the Redis connections first (replies still pending arrive as NULL). Accepts NULL. */
void circuit_free(struct circuit *c);

/* Called when this worker's copy of an endpoint's circuit goes from closed
 * to open (its own report or a refresh; circuit_is_open is already true):
 * the owner takes back what it has queued for the endpoint and not sent.
 * endpoint is borrowed during the call. */
typedef void (*circuit_seen_open_fn)(void *arg, const char *endpoint);
void circuit_on_seen_open(struct circuit *c, circuit_seen_open_fn fn, void *arg);

/* Called on the one worker whose circuit_tick found the endpoint's circuit
 * open for its `circuit_disable_after` (with deliveries parked): the owner
 * disables the endpoint in Postgres and then calls circuit_close, which
 * makes what it owes due (to be dead-lettered as the deliveries of a
 * disabled endpoint). opened_ms: when the circuit opened (Postgres's
 * clock). endpoint is borrowed during the call. */
typedef void (*circuit_disable_fn)(void *arg, const char *endpoint, int64_t opened_ms);
void circuit_on_disable(struct circuit *c, circuit_disable_fn fn, void *arg);
/* Closes the endpoint's circuit as a success would (its parked deliveries
 * due again, in chunks). */
void circuit_close(struct circuit *c, const char *endpoint);

/* Whether this worker believes the endpoint's circuit open (its copy). */
bool circuit_is_open(const struct circuit *c, const char *endpoint);

/* An outcome for the endpoint's circuit: succeeded, or a failure that
 * counts (see above). Reported to Redis once per loop turn. Endpoints whose
 * circuit is off are not noted by the caller. */
void circuit_note(struct circuit *c, const char *endpoint, bool succeeded);

/* The members to send of ids[0..n) (claimed, due at due_ms[i]) of an
 * endpoint believed open: called back with the ids to send (a subset of
 * ids, borrowed during the call; the others are parked and left inflight no
 * more), or with ok false when Redis could not be asked (park nothing, send
 * nothing: the caller retries them later). */
typedef void (*circuit_park_fn)(void *arg, bool ok, char **send, size_t nsend);
void circuit_park(struct circuit *c, const char *endpoint, char **ids, const int64_t *due_ms, size_t n,
                  circuit_park_fn fn, void *arg);

/* The endpoint's circuit opened: of ids (its open deliveries; copied), those
 * in the due set are parked, 1,000 per call, each call sent when the last
 * one answered, so that the worker's other commands are not queued behind
 * a 100,000-delivery backlog's calls. */
void circuit_park_due(struct circuit *c, const char *endpoint, char **ids, size_t n);

/* Whether this worker believes any endpoint's circuit open. */
bool circuit_any_open(const struct circuit *c);

/* Of claimed ids, those that are parked deliveries of an endpoint whose
 * circuit is open (scheduled again by the reconciler): fn gets, per id, its
 * endpoint or "" (strings borrowed during the call), or NULL when Redis
 * could not be asked. */
typedef void (*circuit_filter_fn)(void *arg, const char **endpoints);
void circuit_filter(struct circuit *c, char **ids, size_t n, circuit_filter_fn fn, void *arg);

#endif
